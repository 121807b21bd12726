"""One claimed submission, graded by make grade's own steps, recorded, and its feedback delivered.

    place = Place(exchange, course, run, showing, check_owner)   # set up once (service.py)
    status, score, max_score = grade_job(place, job, still_mine)  # still_mine(): the lease is still ours

The hand-in is read from the exchange without following links (inbound.py) and copied into the service's
private spool; that copy is what make grade's intake, SANITIZE and EXECUTE steps (pipeline.start) and its
RECORD step (pipeline.finish: autograded/ and the gradebook) see. The gradebook's submission gets nbgrader's
timestamp, the course's submitted/ folder the notebook as `nbgrader collect` would leave it. Then the
feedback page (feedback.py, with the instructor's choice of what shows before the deadline, showing.py)
goes into the course's feedback/ folder and the exchange (deliver.py). A submission that could not be
graded gets a short page saying so. Recording and delivering happen one job at a time per process (as in
make grade's one writer thread), and only while the job's lease is still this worker's.
"""
from __future__ import annotations

import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.utils import parse_utc

from grader.course import COURSE_ID
from grader.grade.feedback import write_feedback
from grader.grade.gradebook import scores_of
from grader.grade.pipeline import Run, finish, start
from grader.grade.reference import expected_for, hidden_for
from grader.grade.submissions import Submission
from grader.serve.deliver import deliver, keep_in_course, not_graded_page
from grader.serve.inbound import Rejected, parse, read_handin
from grader.serve.queue import Job
from grader.serve.showing import Showing


@dataclass
class Place:
    exchange: Path                 # nbgrader's Exchange.root
    run: Run                       # make grade's settings and steps (course folder, grading folder, gradebook)
    showing: Showing = field(default_factory=Showing)
    check_owner: bool = False
    writing: threading.Lock = field(default_factory=threading.Lock)
    _references: threading.Lock = field(default_factory=threading.Lock)

    @property
    def course(self) -> Path:
        return self.run.course

    @property
    def inbound(self) -> Path:
        return self.exchange / COURSE_ID / "inbound"

    def known(self) -> list[str]:
        from grader.course import assignments

        return assignments(self.course)

    def reference(self, assignment: str) -> None:
        """The assignment's reference records, run once per service (and cached on disk across restarts)."""
        with self._references:
            if assignment not in self.run.expected:
                run = self.run
                run.expected[assignment] = expected_for(assignment, run.course / "source", run.runner(assignment),
                                                        run.grading)
                run.hidden[assignment] = hidden_for(assignment, run.course / "source")


class LeaseLost(Exception):
    """Another worker holds the job now: this one records nothing."""


def grade_job(place: Place, job: Job, still_mine) -> tuple[str, float | None, float | None]:
    """(status, score, max_score) of the job's submission, graded, recorded and delivered (module docstring).
    LeaseLost if the job was taken over before it was recorded."""
    arrival = parse(job.folder, place.known())
    if arrival is None:   # the queue only holds names that parsed: the course lost the assignment since
        return "invalid", None, None
    try:
        handin = read_handin(place.inbound, arrival, place.check_owner)
    except Rejected:   # no secret read: there is no page to give back; the instructor sees the row
        return "invalid", None, None
    spool = place.run.grading / "spool" / f"{job.id}-{job.attempts}"
    try:
        spool.mkdir(parents=True, exist_ok=True)
        path = spool / f"{job.assignment}.ipynb"
        path.write_bytes(handin.notebook)
        st = os.lstat(path)
        sub = Submission(job.student, job.assignment, path, identity=(st.st_dev, st.st_ino))
        try:
            place.reference(job.assignment)
        except ValueError as exc:
            sub.status, sub.notes = "error", [str(exc)]
            _tell(place, job, handin, "参考答案在评分环境里运行失败：老师会处理", still_mine)
            return "error", None, None
        graded = start(sub, place.run)
        with place.writing:
            if not still_mine():
                raise LeaseLost(job.folder)
            finish(graded, place.run)
            if graded.resources and not graded.stopped:
                return _record(place, job, handin, graded, sub, still_mine)
        reason = "; ".join(sub.notes[:1]) if sub.status == "invalid" else "评分时出错：老师会看到原因"
        _tell(place, job, handin, reason, still_mine)
        return sub.status, None, None
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def _record(place: Place, job: Job, handin, graded, sub: Submission, still_mine):
    run = place.run
    with Gradebook(run.db_url, COURSE_ID) as gb:   # nbgrader's submission time, as `nbgrader autograde` sets it
        gb.update_or_create_submission(job.assignment, job.student, timestamp=parse_utc(handin.timestamp))
    submitted = place.course / "submitted" / job.student / job.assignment
    submitted.mkdir(parents=True, exist_ok=True)
    (submitted / f"{job.assignment}.ipynb").write_bytes(handin.notebook)
    (submitted / "timestamp.txt").write_text(handin.timestamp, encoding="utf-8")
    page = place.course / "feedback" / job.student / job.assignment / f"{job.assignment}.html"
    write_feedback(graded.nb, graded.resources, page, extra=place.showing.steps(time.time()))
    keep_in_course(page.parent, handin.timestamp, handin.secret)
    deliver(place.exchange / COURSE_ID, handin.secret, job.assignment, page.read_text(encoding="utf-8"))
    scores, _ = scores_of(run.db_url, COURSE_ID, [sub])
    score, max_score, _ = scores.get((sub.student, sub.assignment), (None, None, None))
    return sub.status, score, max_score


def _tell(place: Place, job: Job, handin, reason: str, still_mine) -> bool:
    """The not-graded page for a submission whose secret could be read; False if there is none to tell."""
    if handin is None or not still_mine():
        return False
    deliver(place.exchange / COURSE_ID, handin.secret, job.assignment, not_graded_page(job.assignment, reason))
    return True
