"""Record: the trusted verdicts become scores in nbgrader's gradebook, and are read back.

    save_verdicts(db_url, course_id, assignment, student, passed)   # grade_id -> passed
    scores, maxima = scores_of(db_url, course_id, subs)
    forget(db_url, course_id, pairs)                                  # before a shard grades again

nbgrader's step for it is SaveVerdicts (lists.RECORD): the judged notebook into the course's autograded/
folder (formgrader reads it there), then its verdicts into the gradebook.

One channel: a test cell's auto_score is its full points if the judge (verdict.py) passed it, else 0; no
output of the notebook is read back. Each notebook is one transaction, so a notebook whose recording fails
changes nothing, and two graders (shards) writing at once never mix their rows (PostgreSQL). SQLite has
one writer: writes from the threads of one process take turns.
"""
from __future__ import annotations

import contextlib
import functools
import threading

import nbformat
import nbgrader.api
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor

from grader.course import COURSE_ID, course_of
from grader.grade.state import NotebookState

RECORDED_STATUSES = ("ok", "timeout", "killed", "error")   # the others never reach a kernel


@functools.cache
def alembic_head() -> str:
    """The head revision of nbgrader's gradebook migrations, read in this process. nbgrader asks for it by
    starting `alembic heads` in a subprocess (a whole Python start-up) each time it creates a gradebook:
    1-2 s of every grading run, a minute under software emulation. The answer is a constant of the
    installed nbgrader; tests/test_nbgrader.py compares it with the subprocess's."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = Config()
    config.set_main_option("script_location", ALEMBIC_DIR)
    return ScriptDirectory.from_config(config).get_current_head()


nbgrader.api.get_alembic_version = alembic_head
_SQLITE_WRITER = threading.Lock()


def _writer(db_url: str):
    return _SQLITE_WRITER if db_url.startswith("sqlite") else contextlib.nullcontext()


def save_verdicts(db_url: str, course_id: str, assignment: str, student: str, passed: dict[str, bool]) -> None:
    """The submission (created if needed) gets a score per test cell from the verdicts; one transaction."""
    with _writer(db_url), Gradebook(db_url, course_id) as gb:
        try:
            gb.update_or_create_student(student)
            gb.update_or_create_submission(assignment, student)
            notebook = gb.find_submission_notebook(assignment, assignment, student)
            for grade in notebook.grades:
                grade.auto_score = grade.max_score if passed.get(grade.name) else 0.0
                # as nbgrader's SaveAutoGrades: a grader's earlier manual score is kept, and flagged
                grade.needs_manual_grade = grade.manual_score is not None
            gb.db.commit()
        except BaseException:
            gb.db.rollback()
            raise


def forget(db_url: str, course_id: str, pairs: list[tuple[str, str]]) -> None:
    """Remove the submissions (assignment, student) from the gradebook: a shard graded again replaces its
    rows, it never adds to them."""
    with _writer(db_url), Gradebook(db_url, course_id) as gb:
        for assignment, student in pairs:
            try:
                gb.remove_submission(assignment, student)
            except MissingEntry:
                pass


def scores_of(db_url: str, course_id: str, subs):
    """(student, assignment) -> (score, max, {grade_id: (score, max)}), and assignment -> max score."""
    scores, maxima = {}, {}
    with Gradebook(db_url, course_id) as gb:
        for name in sorted({s.assignment for s in subs if s.assignment}):
            try:
                maxima[name] = gb.find_assignment(name).max_score
            except MissingEntry:
                pass
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


class SaveVerdicts(NbGraderPreprocessor):
    """The judged notebook into the course's autograded/ folder, then each test cell's score from its
    trusted verdict (save_verdicts), in place of nbgrader's SaveAutoGrades, which reads scores back from
    error outputs. (Under `nbgrader autograde`, nbgrader then writes the same notebook there itself.)"""

    zh = "记分"   # what the step does, for a note if it fails

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        student, name = info["student"], info["assignment"]
        dest = course_of(self) / "autograded" / student / name / f"{info['notebook']}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, dest)
        save_verdicts(info["db_url"], info.get("course_id") or COURSE_ID, name, student,
                      NotebookState.of(resources).passed())
        return nb, resources
