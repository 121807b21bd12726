"""What a student's feedback shows before the deadline: the instructor's choice.

    showing = Showing(before="visible", deadline=parse_utc("2027-01-15 23:59:00 UTC").timestamp())
    steps = showing.steps(time.time())     # extra feedback steps (feedback.write_feedback(..., extra=steps))

    all       nbgrader's page: every test cell's verdict and points, and the total (also after the deadline)
    total     the visible tests' verdicts and the total score; no test cell's own points
    visible   the visible tests' verdicts only: no points; the heading counts the test cells whose
              visible tests passed (5 / 6), not points

A test cell whose hidden tests failed but whose visible tests passed shows "可见测试通过" before the
deadline; one whose visible tests failed shows that verdict (it quotes only visible tests). After the
deadline (or without one, never) every page is nbgrader's full page.
"""
from __future__ import annotations

from dataclasses import dataclass

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from grader.cells import grade_id, is_test
from grader.grade.state import NotebookState
from grader.grade.marks import mark

CHOICES = ("all", "total", "visible")
VISIBLE_LABEL = "可见测试"   # how verdict.py's reasons name a visible test


@dataclass
class Showing:
    before: str = "all"            # one of CHOICES
    deadline: float | None = None  # seconds since the epoch; None: the choice holds all the time

    def __post_init__(self):
        if self.before not in CHOICES:
            raise ValueError(f"before must be one of {CHOICES}, not {self.before!r}")

    def shows_score(self, now: float) -> bool:
        """Whether a page made now shows the total score."""
        return self.before != "visible" or (self.deadline is not None and now >= self.deadline)

    def steps(self, now: float) -> list:
        if self.before == "all" or (self.deadline is not None and now >= self.deadline):
            return []
        return [ShowTotal if self.before == "total" else ShowVisible]


def _early_mark(passed_visible: bool, reason: str):
    if passed_visible:
        text = "评分：可见测试通过；隐藏测试的结果在截止后公布。"
        return nbformat.v4.new_output("display_data", data={"text/plain": text})
    return nbformat.v4.new_output("error", ename="评分未通过", evalue=reason, traceback=[f"评分未通过：{reason}"])


def visible_only(nb, verdicts: dict) -> tuple[int, int]:
    """Each test cell keeps only the visible tests' verdict and loses its points (the template then shows
    none for it). Return (test cells whose visible tests passed, test cells)."""
    cells = passing = 0
    for cell in nb.cells:
        if not is_test(cell):
            continue
        verdict = verdicts.get(grade_id(cell))
        shown_fail = verdict is not None and not verdict.passed and verdict.reason.startswith(VISIBLE_LABEL)
        cell.outputs = [_early_mark(not shown_fail, verdict.reason if shown_fail else "")]
        mark(cell)
        cell.metadata.nbgrader["grade"] = False
        cells, passing = cells + 1, passing + (not shown_fail)
    return passing, cells


class ShowVisible(NbGraderPreprocessor):
    """visible_only; the heading counts the test cells whose visible tests passed, not points."""

    keep_total = False

    def preprocess(self, nb, resources):
        passing, cells = visible_only(nb, NotebookState.of(resources).verdicts)
        info = resources["nbgrader"]
        if self.keep_total:
            info["notebook"] = f"{info['notebook']}（截止前显示可见测试和总分）"
        else:
            info["score"], info["max_score"] = passing, cells
            info["notebook"] = f"{info['notebook']}（截止前只显示可见测试：可见测试通过的单元数）"
        return nb, resources


class ShowTotal(ShowVisible):
    """visible_only, and the total score of every test (hidden ones included) in the heading."""

    keep_total = True
