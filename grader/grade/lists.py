"""nbgrader's lists of the course's grading steps: what `nbgrader autograde` runs in the course folder
(nbgrader_config.py registers them, as nbgrader's Autograde registers its own) and what `make grade` runs.

    SANITIZE   rebuilt on the release: RebuildOnRelease, nbgrader's ClearOutput, SkipDemoCells and
               CheckCellMetadata                                              (prepare.py)
    EXECUTE    run in its sandbox: SandboxedExecute (execute.py); judged outside the kernel: TrustedVerdict
               (verdict.py); outputs capped and made inert: CapOutputs (outputs.py)
    RECORD     the judged notebook into autograded/, its verdicts into the gradebook: SaveVerdicts
               (gradebook.py)
    AUTOGRADE  EXECUTE + RECORD + nbgrader's own late penalties and metadata check

`make grade` (pipeline.py) runs SANITIZE and EXECUTE in its sandbox threads, several notebooks at a time,
and RECORD (then the feedback page) in its one writer thread. Each step is a class beside the code that
does its job; what the steps find travels in the notebook's NotebookState (state.py). The order matters:
verdicts are judged before outputs are capped, and recorded after.
"""
from __future__ import annotations

from nbgrader.preprocessors import AssignLatePenalties, CheckCellMetadata, ClearOutput

from grader.grade.execute import SandboxedExecute
from grader.grade.gradebook import SaveVerdicts
from grader.grade.outputs import CapOutputs
from grader.grade.prepare import RebuildOnRelease, SkipDemoCells
from grader.grade.verdict import TrustedVerdict

SANITIZE = [RebuildOnRelease, ClearOutput, SkipDemoCells, CheckCellMetadata]
EXECUTE = [SandboxedExecute, TrustedVerdict, CapOutputs]
RECORD = [SaveVerdicts]
AUTOGRADE = EXECUTE + RECORD + [AssignLatePenalties, CheckCellMetadata]
