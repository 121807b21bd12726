"""nbgrader course for Agent-RL 代码填空. Run nbgrader from this folder (the Makefile does)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # so nbgrader can import the course's preprocessor (this file may be loaded many times)
    sys.path.insert(0, HERE)

from blanks import FillInTheBlanks  # noqa: E402
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties, CheckCellMetadata, ClearHiddenTests, ClearMarkScheme, ClearOutput, ComputeChecksums,
    DeduplicateIds, GetGrades, IgnorePattern, IncludeHeaderFooter, InstantiateTests, LockCells,
    OverwriteCells, OverwriteKernelspec, SaveAutoGrades, SaveCells,
)
from safety import CapOutputs, InertOutputs, InertStudentText, SandboxedExecute, SkipDemoCells  # noqa: E402
from verdict import StudentFacingOutputs  # noqa: E402

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

# nbgrader's autograde lists with the course's steps (safety.py): `nbgrader autograde` run in this
# folder executes each notebook in the grading sandbox and judges its test cells outside the kernel,
# as `make grade` does (which also runs notebooks in parallel and repairs their structure first).
c.Autograde.sanitize_preprocessors = [
    ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata, SkipDemoCells,
    InertStudentText,
]
c.Autograde.autograde_preprocessors = [
    SandboxedExecute, IgnorePattern, ClearMetadataPreprocessor, CapOutputs, InertOutputs,
    SaveAutoGrades, AssignLatePenalties, CheckCellMetadata,
]

c.SandboxedExecute.timeout = 60  # seconds per cell when autograding

# The feedback goes back to students: their code and each test cell's verdict; never the hidden test code,
# nor what the kernel printed while the hidden tests ran (verdict.StudentFacingOutputs).
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, StudentFacingOutputs, CSSHTMLHeaderPreprocessor]
