"""nbgrader course for Agent-RL 代码填空. Run nbgrader from this folder (the Makefile does)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # so nbgrader can import the course's preprocessor

from blanks import FillInTheBlanks  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    CheckCellMetadata, ClearHiddenTests, ClearMarkScheme, ClearOutput, ComputeChecksums,
    IncludeHeaderFooter, InstantiateTests, LockCells, SaveCells,
)

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

c.Execute.timeout = 120  # seconds per cell when autograding
