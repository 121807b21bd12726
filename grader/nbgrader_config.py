"""nbgrader course for Agent-RL 代码填空. Run nbgrader from this folder (the Makefile does)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # so nbgrader can import the course's preprocessor

from blanks import FillInTheBlanks  # noqa: E402
from nbconvert.preprocessors import ClearMetadataPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties, CheckCellMetadata, ClearHiddenTests, ClearMarkScheme, ClearOutput, ComputeChecksums,
    DeduplicateIds, Execute, IgnorePattern, IncludeHeaderFooter, InstantiateTests, LimitOutput, LockCells,
    OverwriteCells, OverwriteKernelspec, SaveAutoGrades, SaveCells,
)
from safety import CapOutputs, FreshTestCode, SkipDemoCells, StderrIsNotAFailure  # noqa: E402

c = get_config()  # noqa: F821
c.CourseDirectory.root = HERE
c.CourseDirectory.course_id = "agentrl-cloze"

# nbgrader's own list with ClearSolutions swapped for the fill-in-the-blank version.
# The order matters: hidden tests are cleared after the checksums are saved.
c.GenerateAssignment.preprocessors = [
    IncludeHeaderFooter, InstantiateTests, LockCells, FillInTheBlanks, ClearOutput,
    CheckCellMetadata, ComputeChecksums, SaveCells, ClearHiddenTests, ClearMarkScheme,
    ComputeChecksums, CheckCellMetadata,
]

# nbgrader's autograde lists with the course's safety steps added (see safety.py).
c.Autograde.sanitize_preprocessors = [
    ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata, FreshTestCode,
    SkipDemoCells,
]
c.Autograde.autograde_preprocessors = [
    Execute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput, StderrIsNotAFailure, CapOutputs,
    SaveAutoGrades, AssignLatePenalties, CheckCellMetadata,
]

c.Execute.timeout = 120  # seconds per cell when autograding (make grade sets its own)
