"""One claimed submission, graded by make grade's own steps, recorded, and its feedback delivered.

    place = Place(exchange, run, showing, identity)        # set up once (service.py)
    status, score, max_score = grade_job(place, job, still_mine)  # still_mine(): the lease is still ours

The hand-in is read from the exchange without following links, its folder and files checked to be the
student's (inbound.py, identity.py), and copied into the service's private spool; that copy is what make
grade's intake, SANITIZE and EXECUTE steps (pipeline.start) and its RECORD step (pipeline.finish:
autograded/ and the gradebook) see. The gradebook's submission is timed by its arrival (the queue's
database clock), never by the folder's name; the course's submitted/ folder gets the notebook as `nbgrader
collect` would leave it. Recording happens one job at a time per process (make grade's one writer), under
`place.writing`, and only while the job's lease is still this worker's. The feedback page is rendered
after that, outside the lock, in the worker's own renderer process with a size and a time limit (render.py):
a page too big or too slow to make gets the short page (deliver.short_page) and holds nobody else up. A
submission that could not be graded gets a short page saying why, wherever a secret could be read.
"""
from __future__ import annotations

import datetime
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook

from grader.course import COURSE_ID
from grader.grade.gradebook import scores_of
from grader.grade.pipeline import Run, finish, start
from grader.grade.reference import expected_for, hidden_for
from grader.grade.state import KEY
from grader.grade.submissions import Submission
from grader.serve.deliver import deliver, keep_in_course, not_graded_page, short_page
from grader.serve.identity import Identity, Source
from grader.serve.inbound import Rejected, parse, read_handin
from grader.serve.queue import Job
from grader.serve.render import Renderer
from grader.serve.showing import Showing

NBGRADER_TIME = "%Y-%m-%d %H:%M:%S.%f UTC"   # nbgrader's timestamp_format, in UTC


@dataclass
class Place:
    exchange: Path                 # nbgrader's Exchange.root
    run: Run                       # make grade's settings and steps (course folder, grading folder, gradebook)
    showing: Showing = field(default_factory=Showing)
    identity: Identity = field(default_factory=Identity)
    trusted: frozenset = frozenset()   # uids besides root and this one that may own the exchange's folders
    writing: threading.Lock = field(default_factory=threading.Lock)
    _references: threading.Lock = field(default_factory=threading.Lock)
    _known: tuple = (0.0, frozenset())
    _renderers: threading.local = field(default_factory=threading.local)

    @property
    def course(self) -> Path:
        return self.run.course

    def known(self) -> frozenset:
        """The course's assignments (read again at most once a minute: the scanner asks on every pass)."""
        read_at, names = self._known
        if time.monotonic() - read_at > 60.0:
            from grader.course import assignments

            self._known = (time.monotonic(), frozenset(assignments(self.course)))
        return self._known[1]

    def source_of(self, key: str) -> tuple[Source, str]:
        """The inbound folder and the folder's name of a queued hand-in (per-user keys are user/name)."""
        if "/" in key:
            user, name = key.split("/", 1)
            return Source(self.identity.per_user / user, user), name
        return self.identity.sources(self.exchange)[0], key

    def renderer(self) -> Renderer:
        if getattr(self._renderers, "one", None) is None:
            self._renderers.one = Renderer()
        return self._renderers.one

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


def arrival_time(job: Job) -> datetime.datetime:
    """The hand-in's arrival (the queue's database clock) as nbgrader keeps times: naive UTC."""
    return datetime.datetime.fromtimestamp(job.submitted_at, datetime.timezone.utc).replace(tzinfo=None)


def grade_job(place: Place, job: Job, still_mine, log=lambda line: None) -> tuple[str, float | None, float | None]:
    """(status, score, max_score) of the job's submission, graded, recorded and delivered (module docstring).
    LeaseLost if the job was taken over before it was recorded. log gets why a row says error (the
    instructor's log; the student's page says only that the teacher will look)."""
    source, name = place.source_of(job.folder)
    arrival = parse(name, place.known())
    if arrival is None:   # the queue only holds names that parsed: the course lost the assignment since
        return "invalid", None, None
    try:
        handin = read_handin(source.path, name, job.assignment, place.identity.owner(arrival))
    except (Rejected, OSError):   # no secret read: there is no page to give back; the instructor sees the row
        return "invalid", None, None
    if job.conflict:
        _tell(place, job, handin.secret, job.conflict, still_mine)
        return "conflict", None, None
    if handin.notebook is None:
        _tell(place, job, handin.secret, handin.problem, still_mine)
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
            log(f"the reference of {job.assignment} failed: {exc}")
            _tell(place, job, handin.secret, "参考答案在评分环境里运行失败：老师会处理", still_mine)
            return "error", None, None
        graded = start(sub, place.run)
        with place.writing:
            if not still_mine():
                raise LeaseLost(job.folder)
            finish(graded, place.run)
            recorded = bool(graded.resources) and not graded.stopped
            if recorded:
                score, max_score = _record(place, job, handin.notebook, sub)
        if recorded:
            _page(place, job, handin.secret, graded, (score, max_score), still_mine)
            return sub.status, score, max_score
        reason = "; ".join(sub.notes[:1]) if sub.status == "invalid" else "评分时出错：老师会看到原因"
        if sub.status != "invalid":
            log(f"{job.folder!r}: {sub.status}: {'; '.join(sub.notes)[:500]}")
        _tell(place, job, handin.secret, reason, still_mine)
        return sub.status, None, None
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def _record(place: Place, job: Job, notebook: bytes, sub: Submission) -> tuple[float | None, float | None]:
    run = place.run
    with Gradebook(run.db_url, COURSE_ID) as gb:   # the arrival, as `nbgrader autograde` would set the time
        gb.update_or_create_submission(job.assignment, job.student, timestamp=arrival_time(job))
    submitted = place.course / "submitted" / job.student / job.assignment
    submitted.mkdir(parents=True, exist_ok=True)
    (submitted / f"{job.assignment}.ipynb").write_bytes(notebook)
    (submitted / "timestamp.txt").write_text(arrival_time(job).strftime(NBGRADER_TIME), encoding="utf-8")
    scores, _ = scores_of(run.db_url, COURSE_ID, [sub])
    score, max_score, _ = scores.get((sub.student, sub.assignment), (None, None, None))
    return score, max_score


def _page(place: Place, job: Job, secret: str, graded, score: tuple, still_mine) -> None:
    """The feedback page, outside the writers' lock: rendered (or the short page), kept, delivered."""
    page = place.course / "feedback" / job.student / job.assignment / f"{job.assignment}.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    resources = {"nbgrader": dict(graded.resources["nbgrader"]), KEY: graded.resources[KEY]}
    steps = place.showing.steps(time.time())
    renderer = place.renderer()
    if not renderer.render(graded.nb, resources, page, extra=steps):
        shown = score if score[0] is not None and place.showing.shows_score(time.time()) else None
        page.write_text(short_page(job.assignment, renderer.why, shown), encoding="utf-8")
    if not still_mine():
        return
    keep_in_course(page.parent, arrival_time(job).strftime(NBGRADER_TIME), secret)
    deliver(place.exchange / COURSE_ID, secret, job.assignment, page.read_text(encoding="utf-8"), place.trusted)


def _tell(place: Place, job: Job, secret: str, reason: str, still_mine) -> bool:
    """The not-graded page for a submission whose secret could be read; False if the lease is gone."""
    if not still_mine():
        return False
    deliver(place.exchange / COURSE_ID, secret, job.assignment, not_graded_page(job.assignment, reason), place.trusted)
    return True
