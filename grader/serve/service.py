"""`python -m grader serve`: grade each submission as it arrives in nbgrader's exchange.

    serve(Settings(exchange=Path("/srv/nbgrader/exchange"), course=Path("/srv/course"), db_url=URL))

It refuses to start on an exchange or course folder a student could read, rename or replace (layout.py:
each problem with the exact chown/chmod that fixes it). Then three kinds of threads in one process, until
SIGTERM or SIGINT (then the jobs in hand are finished), each started again if it ever dies (health.py):
    scanner     every `poll` seconds one pass of the incremental scanner (scanner.py): the new complete
                hand-ins, their owners checked (identity.py), queued in one transaction (queue.py)
    workers     `jobs` of them: claim the job that waited longest of those that may go now, grade it
                (worker.py), mark it done
    heartbeat   renews the leases of the jobs in hand every lease/3 seconds
and every `status_every` seconds a status line in the log (last scan, its work, queue depth, oldest
pending, threads) and the same in <state>/status.json, which `python -m grader doctor` reads. Every name a
student chose reaches the log escaped (submissions.printable), so a folder name cannot forge a log line.
Several such processes, on one machine or several (sharing the exchange and course folders and the
PostgreSQL gradebook), share one queue; a process killed at any moment loses nothing: its jobs' leases run
out and another worker (or the same service, restarted) grades them again; every job is marked done once.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.course import COURSE_ID, PRIVATE_MODE, assignments, copy_course, generate_assignments
from grader.grade.pipeline import Run, isolation_level, one_writer_at_a_time, quiet_nbgrader
from grader.grade.submissions import printable
from grader.serve.health import Supervisor, status, status_line, write_status
from grader.serve.identity import GUARANTEES, Identity
from grader.serve.layout import Layout, refuse_unsafe
from grader.serve.queue import Arriving, Job, Queue
from grader.serve.scanner import Limits, Scanner
from grader.serve.showing import Showing
from grader.serve.worker import LeaseLost, Place, grade_job

MAX_ATTEMPTS = 3   # a job whose grading raised this often is marked done with status error


@dataclass
class Settings:
    exchange: Path                  # nbgrader's Exchange.root (the course's folders are under COURSE_ID)
    course: Path                    # the nbgrader course folder this service grades into (copied if empty)
    db_url: str                     # the gradebook, which also holds the queue
    state: Path | None = None       # the service's private folder (default: <course>/.grading-service)
    jobs: int = 1                   # submissions graded at a time by this process
    lease: float = 30.0             # seconds a claimed job stays this worker's without a heartbeat
    min_interval: float = 0.0       # seconds between the starts of one student's gradings (rate limit)
    poll: float = 0.5               # seconds between looks at inbound (and at the queue when idle)
    isolation: str = "auto"
    limits: object = None
    cell_timeout: int = 60
    notebook_timeout: int = 600
    showing: Showing = field(default_factory=Showing)
    identity: str = "accounts"      # who handed a folder in (identity.py): accounts | per-user | names
    per_user: Path | None = None    # identity per-user: the folder of the hub users' inbound folders
    instructor: str | None = None   # an account besides root and this one that may own the folders
    db_url_file: Path | None = None
    status_every: float = 60.0      # seconds between status lines in the log
    scan_limits: Limits = field(default_factory=Limits)
    worker: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")


def layout_of(settings: Settings) -> Layout:
    return Layout(settings.exchange, settings.course, settings.state, settings.db_url_file, settings.per_user,
                  settings.instructor)


def prepare(settings: Settings) -> tuple[Place, Queue]:
    """The layout checked, the course folder (copied from grader/ if it has no config), its release and
    gradebook rows, the sandbox level said out loud, the queue's table."""
    refuse_unsafe(layout_of(settings), settings.identity)
    course = settings.course.resolve()
    if not (course / "nbgrader_config.py").is_file():
        copy_course(course)
    level = isolation_level(settings.isolation, settings.limits)
    quiet_nbgrader()
    names = assignments(course)
    with one_writer_at_a_time(settings.db_url):
        generate_assignments(course, names, settings.db_url)
    state = (settings.state or course / ".grading-service").resolve()
    state.mkdir(mode=PRIVATE_MODE, parents=True, exist_ok=True)
    run = Run(course, state / "grading", settings.db_url, cell_timeout=settings.cell_timeout,
              notebook_timeout=settings.notebook_timeout, level=level, limits=settings.limits, feedback=False)
    place = Place(settings.exchange.resolve(), run, settings.showing, Identity(settings.identity, settings.per_user),
                  frozenset(layout_of(settings).trusted()))
    return place, Queue(settings.db_url, COURSE_ID, settings.min_interval)


class Service:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.place, self.queue = prepare(settings)
        self.state = (settings.state or self.place.course / ".grading-service").resolve()
        self.stop = threading.Event()
        self.in_hand: dict[int, Job] = {}
        self.lost: set[int] = set()
        self._lock = threading.Lock()
        self.threads = Supervisor(self.log, self.stop)
        self.scanner = Scanner(self.place.identity, self.place.exchange, self.place.known, settings.scan_limits,
                               skip=self.queue.known())

    def log(self, text: str) -> None:
        print(printable(f"[grader serve {self.settings.worker}] {text}"), file=sys.stderr, flush=True)

    def scan_loop(self) -> None:
        while not self.stop.is_set():
            found = self.scanner.scan()
            for note in self.scanner.notes:
                self.log(note)
            if found:
                found.sort(key=lambda f: (f.st.st_ctime_ns, f.key))   # of one student's, the last changed is newest
                queued = self.queue.enqueue_batch(
                    [Arriving(f.key, f.arrival.student, f.arrival.assignment, f.arrival.claim) for f in found])
                for key in queued:
                    self.log(f"queued {key!r}")
            self.stop.wait(self.settings.poll)

    def heartbeat(self) -> None:
        while not self.stop.wait(self.settings.lease / 3):
            with self._lock:
                jobs = list(self.in_hand.values())
            for job in jobs:
                if not self.queue.renew(job, self.settings.lease):
                    with self._lock:
                        self.lost.add(job.id)

    def still_mine(self, job: Job) -> bool:
        with self._lock:
            if job.id in self.lost:
                return False
        return self.queue.renew(job, self.settings.lease)

    def work_loop(self) -> None:
        self.place.renderer()            # this worker's renderer process, started before its first page
        while not self.stop.is_set():
            job = self.queue.claim(self.settings.worker, self.settings.lease)
            if job is None:
                self.stop.wait(self.settings.poll)
                continue
            with self._lock:
                self.in_hand[job.id] = job
            self.log(f"grading {job.folder!r} (attempt {job.attempts})")
            try:
                status_, score, max_score = grade_job(self.place, job, lambda: self.still_mine(job), self.log)
                if self.queue.done(job, status_, score, max_score):
                    self.log(f"graded {job.folder!r}: {status_} {score}/{max_score}")
            except LeaseLost:
                self.log(f"lost the lease of {job.folder!r}: another worker grades it")
            except Exception as exc:  # noqa: BLE001 - the job's lease runs out, it is graded again
                self.log(f"failed on {job.folder!r} (attempt {job.attempts}): {type(exc).__name__}: {exc}")
                if job.attempts >= MAX_ATTEMPTS:   # not forever: the row says error, the instructor looks
                    self.queue.done(job, "error")
            finally:
                with self._lock:
                    self.in_hand.pop(job.id, None)
                    self.lost.discard(job.id)

    def report(self) -> None:
        try:
            info = status(self.scanner.counts, self.queue.depth(), self.threads)
        except Exception as exc:  # noqa: BLE001 - the status line must never stop the service
            self.log(f"status: the queue could not be read ({type(exc).__name__})")
            return
        self.log(status_line(info))
        try:
            write_status(self.state, info)
        except OSError:
            pass

    def run(self) -> None:
        self.threads.add("scanner", self.scan_loop)
        self.threads.add("heartbeat", self.heartbeat)
        for i in range(self.settings.jobs):
            self.threads.add(f"worker-{i}", self.work_loop)
        self.queue.reset_waits()
        self.threads.start()
        identity = self.place.identity
        self.log(f"watching {self.place.exchange / COURSE_ID} ({self.settings.jobs} at a time; identity "
                 f"{identity.mode}: {GUARANTEES[identity.mode]})")
        next_report = time.monotonic() + min(5.0, self.settings.status_every)
        while not self.stop.wait(0.5):
            self.threads.check()
            if time.monotonic() >= next_report:
                self.report()
                next_report = time.monotonic() + self.settings.status_every
        self.threads.join()
        self.report()
        self.queue.close()


def serve(settings: Settings) -> None:
    service = Service(settings)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: service.stop.set())
    service.run()
