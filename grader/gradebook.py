"""The gradebook: each judged notebook's verdicts are written into nbgrader's database, and read back.

    record_assignment(db_url, course_id, course, assignment, subs)   # one transaction per notebook
    scores, maxima = scores_of(db_url, course_id, subs)

The verdicts reach the gradebook by one channel: the Submission's `passed` (grade_id -> verdict of the
trusted judge, verdict.py) becomes each test cell's auto_score (full points or 0). The executed notebook is
already in the course's autograded/ folder, where formgrader and the feedback read it. A notebook whose
recording fails is rolled back and gets status `error`; the others are recorded.
"""
from __future__ import annotations

from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from submissions import Submission

RECORDED_STATUSES = ("ok", "timeout", "killed", "error")   # the others never reach a kernel


def record_assignment(db_url: str, course_id: str, course: Path, assignment: str, subs: list[Submission]) -> None:
    """Save the verdicts of the assignment's judged notebooks (those in course/autograded)."""
    with Gradebook(db_url, course_id) as gb:
        for sub in subs:
            if not (course / "autograded" / sub.student / assignment / f"{assignment}.ipynb").is_file():
                continue
            try:
                gb.update_or_create_student(sub.student)
                gb.update_or_create_submission(assignment, sub.student)
                notebook = gb.find_submission_notebook(assignment, assignment, sub.student)
                for grade in notebook.grades:
                    grade.auto_score = grade.max_score if sub.passed.get(grade.name) else 0.0
                    # as nbgrader's SaveAutoGrades: a grader's earlier manual score is kept, and flagged
                    grade.needs_manual_grade = grade.manual_score is not None
                gb.db.commit()
            except Exception as exc:  # noqa: BLE001 - this notebook is not recorded; the others are
                gb.db.rollback()
                sub.status = "error"
                sub.notes.append(f"写入成绩册时出错（{type(exc).__name__}）：没有记分")


def scores_of(db_url: str, course_id: str, subs: list[Submission]):
    """(student, assignment) -> (score, max, {grade_id: (score, max)}), and assignment -> max score."""
    scores, maxima = {}, {}
    with Gradebook(db_url, course_id) as gb:
        for name in sorted({s.assignment for s in subs if s.assignment}):
            maxima[name] = gb.find_assignment(name).max_score
        for sub in subs:
            if sub.status not in RECORDED_STATUSES or not sub.assignment:
                continue
            try:
                nb = gb.find_submission_notebook(sub.assignment, sub.assignment, sub.student)
            except MissingEntry:
                if sub.status != "error":
                    sub.status = "error"
                    sub.notes.append("成绩册里没有这份提交")
                continue
            cells = {g.name: (g.score, g.max_score) for g in nb.grades}
            scores[(sub.student, sub.assignment)] = (nb.score, nb.max_score, cells)
    return scores, maxima
