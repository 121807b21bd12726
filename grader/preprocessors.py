"""Every nbgrader preprocessor of the course, one small class each, and the lists nbgrader runs them in.

The same classes are nbgrader's steps when an instructor runs `nbgrader generate_assignment`,
`nbgrader autograde` or `nbgrader generate_feedback` in the course folder (nbgrader_config.py uses the
lists below) and `make grade`'s steps (pipeline.py runs them per notebook, several at a time):

    GENERATE   release: FillInTheBlanks in place of nbgrader's ClearSolutions
    SANITIZE   prepare: RebuildOnRelease, nbgrader's ClearOutput, SkipDemoCells, CheckCellMetadata
    AUTOGRADE  execute: SandboxedExecute; judge: TrustedVerdict; cap outputs: CapOutputs;
               record: SaveVerdicts (and nbgrader's late penalties and metadata check)
    FEEDBACK   nbgrader's GetGrades and ClearHiddenTests, StudentFacingOutputs, CSS

Each class is a thin shell over a plain function in the module that holds its idea (prepare.py,
execute.py, verdict.py, outputs.py, gradebook.py). What a step finds (a status, notes, the verdicts)
goes into resources["agentrl"]; make grade copies it into the notebook's row, `nbgrader autograde` logs it.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties, CheckCellMetadata, ClearHiddenTests, ClearMarkScheme, ClearOutput, ClearSolutions,
    ComputeChecksums, GetGrades, IncludeHeaderFooter, InstantiateTests, LockCells, NbGraderPreprocessor, SaveCells,
)
from traitlets import Any, Integer, Unicode

from grader.blanks import blank_source, has_blanks
from grader.cells import is_demo
from grader.course import COURSE_ID
from grader.execute import runner_for
from grader.gradebook import save_verdicts
from grader.outputs import OutputCaps, cap_outputs
from grader.prepare import DEMO_PLACEHOLDER, repair
from grader.reference import expected_for, hidden_for
from grader.verdict import REDACTED, judge_notebook, student_facing


def agentrl(resources: dict) -> dict:
    """What the course's steps found so far about this notebook (status, notes, verdicts…)."""
    return resources.setdefault("agentrl", {"status": "ok", "notes": []})


def _course(preprocessor) -> Path:
    """The course folder: the step's own setting, else nbgrader's CourseDirectory.root, else here."""
    root = getattr(preprocessor, "course_dir", "") or preprocessor.config.get("CourseDirectory", {}).get("root")
    return Path(root) if root else Path.cwd()


class FillInTheBlanks(ClearSolutions):
    """Release: ClearSolutions that turns `# BLANK` lines into `_____` and keeps the rest of the cell."""

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and has_blanks(cell.source):
            if self.begin_solution_delimeter in cell.source:
                raise RuntimeError("a cell uses either # BLANK lines or a solution region, not both")
            cell.source = blank_source(cell.source)
            return cell, resources
        return super().preprocess_cell(cell, resources, cell_index)


class RebuildOnRelease(NbGraderPreprocessor):
    """Prepare: the submission rebuilt on the release (prepare.repair): the release's metadata and locked
    cells, hidden tests back in the test cells, deleted cells back as released, student text inert."""

    course_dir = Unicode("", help="course folder (default: nbgrader's CourseDirectory.root)").tag(config=True)

    def preprocess(self, nb, resources):
        name = resources["nbgrader"]["assignment"]
        course = _course(self)
        release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
        source = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
        fixed, notes = repair(nb, release, source)
        agentrl(resources)["notes"].extend(notes)
        for note in notes:
            self.log.warning("%s: %s", resources["nbgrader"].get("student"), note)
        return fixed, resources


class SkipDemoCells(NbGraderPreprocessor):
    """Prepare: cells tagged `demo` teach but grade nothing; they are not run while grading."""

    def preprocess_cell(self, cell, resources, index):
        if is_demo(cell):
            cell.source = DEMO_PLACEHOLDER
        return cell, resources


class SandboxedExecute(NbGraderPreprocessor):
    """Execute: the notebook runs in the grading sandbox (execute.py). The reference records the next step
    judges against come from the instructor notebook run the same way (reference.py, cached)."""

    timeout = Integer(60, help="seconds per cell").tag(config=True)
    notebook_timeout = Integer(600, help="seconds per notebook").tag(config=True)
    isolation = Unicode("auto", help="auto | cgroup | job | none (grader/sandbox/levels.py)").tag(config=True)
    grading_dir = Unicode("", help="trusted working folder (default: <course>/.grading)").tag(config=True)
    course_dir = Unicode("", help="course folder (default: nbgrader's CourseDirectory.root)").tag(config=True)
    limits = Any(None, help="sandbox.SandboxLimits (default limits when None)")

    def preprocess(self, nb, resources):
        info, found = resources["nbgrader"], agentrl(resources)
        grading = Path(self.grading_dir) if self.grading_dir else _course(self) / ".grading"
        runner = runner_for(info["assignment"], grading, cell_timeout=self.timeout,
                            notebook_timeout=self.notebook_timeout, isolation=self.isolation, limits=self.limits)
        if "expected" not in found:
            found["expected"] = expected_for(info["assignment"], _course(self) / "source", runner, grading)
            found["hidden"] = hidden_for(info["assignment"], _course(self) / "source")
        result = runner.run(nb, grading / "work" / f"{info['student']}-{info['assignment']}-{id(nb):x}")
        if result.status != "ok":
            found["status"] = result.status
        found["notes"].extend(result.notes)
        found["seconds"] = result.seconds
        return result.nb, resources


class TrustedVerdict(NbGraderPreprocessor):
    """Judge: every test cell against the reference's records, outside the kernel (verdict.py)."""

    def preprocess(self, nb, resources):
        found = agentrl(resources)
        found["verdicts"] = verdicts = judge_notebook(nb, found["expected"], found.get("hidden", []))
        if any(REDACTED in v.reason for v in verdicts.values()):
            found["notes"].append("可见测试的返回值里有隐藏测试的字符串：反馈里没有显示这些值")
        forged = sorted(gid for gid, v in verdicts.items() if v.forged)
        if forged:
            found["notes"].append(f"测试单元里出现了参考答案没有的评分记录（{', '.join(forged)}）：疑似伪造，已判 0 分")
        return nb, resources


class CapOutputs(NbGraderPreprocessor):
    """Cap outputs: every output capped and made inert (outputs.py)."""

    max_chars = Integer(OutputCaps.max_chars, help="longest text kept per output").tag(config=True)
    max_rich_bytes = Integer(OutputCaps.max_rich_bytes, help="largest image / HTML / JSON output kept").tag(
        config=True)
    max_notebook_bytes = Integer(OutputCaps.max_notebook_bytes, help="all outputs of the notebook").tag(config=True)

    def preprocess(self, nb, resources):
        cap_outputs(nb, OutputCaps(self.max_chars, self.max_rich_bytes, self.max_notebook_bytes))
        return nb, resources


class SaveVerdicts(NbGraderPreprocessor):
    """Record: each test cell's score from the judge's verdict (gradebook.py), in place of nbgrader's
    SaveAutoGrades, which reads scores back from error outputs."""

    def preprocess(self, nb, resources):
        info, found = resources["nbgrader"], agentrl(resources)
        passed = {gid: v.passed for gid, v in found.get("verdicts", {}).items()}
        save_verdicts(info["db_url"], info.get("course_id") or COURSE_ID, info["assignment"], info["student"],
                      passed)
        return nb, resources


class StudentFacingOutputs(NbGraderPreprocessor):
    """Feedback: code cells without the kernel's outputs, except the verdicts (verdict.student_facing)."""

    def preprocess_cell(self, cell, resources, index):
        student_facing(cell)
        return cell, resources


# nbgrader's own lists with the course's steps. The order matters: hidden tests are cleared after the
# checksums are saved; the verdicts are judged before outputs are capped and recorded after.
GENERATE = [IncludeHeaderFooter, InstantiateTests, LockCells, FillInTheBlanks, ClearOutput, CheckCellMetadata,
            ComputeChecksums, SaveCells, ClearHiddenTests, ClearMarkScheme, ComputeChecksums, CheckCellMetadata]
SANITIZE = [RebuildOnRelease, ClearOutput, SkipDemoCells, CheckCellMetadata]
AUTOGRADE = [SandboxedExecute, TrustedVerdict, CapOutputs, SaveVerdicts, AssignLatePenalties, CheckCellMetadata]
FEEDBACK = [GetGrades, ClearHiddenTests, StudentFacingOutputs, CSSHTMLHeaderPreprocessor]
