"""`python -m grader serve`: grade each submission as it arrives in nbgrader's exchange.

    serve(Settings(exchange=Path("/srv/nbgrader/exchange"), course=Path("/srv/course"), db_url=URL))

Three kinds of threads in one process, until SIGTERM or SIGINT (then the jobs in hand are finished):
    scanner     every `poll` seconds: inbound's complete submission folders, each enqueued once (queue.py)
    workers     `jobs` of them: claim the oldest job they may grade, grade it (worker.py), mark it done
    heartbeat   renews the leases of the jobs in hand every lease/3 seconds
Several such processes, on one machine or several (sharing the exchange and course folders, e.g. over NFS,
and the PostgreSQL gradebook), share one queue. A process killed at any moment loses nothing: its jobs'
leases run out and another worker (or the same service, restarted) grades them again; every job is
marked done once.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from grader.course import COURSE_ID, assignments, copy_course, generate_assignments
from grader.grade.pipeline import Run, isolation_level, one_writer_at_a_time, quiet_nbgrader
from grader.serve.inbound import scan
from grader.serve.queue import Job, Queue
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
    check_owner: bool = False       # the inbound folder must belong to the student's OS account
    worker: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")


def prepare(settings: Settings) -> tuple[Place, Queue]:
    """The course folder (copied from grader/ if it has no config), its release and gradebook rows, the
    sandbox level said out loud, the queue's table, and the exchange's inbound folder."""
    course = settings.course.resolve()
    if not (course / "nbgrader_config.py").is_file():
        copy_course(course)
    level = isolation_level(settings.isolation, settings.limits)
    quiet_nbgrader()
    names = assignments(course)
    with one_writer_at_a_time(settings.db_url):
        generate_assignments(course, names, settings.db_url)
    state = (settings.state or course / ".grading-service").resolve()
    run = Run(course, state / "grading", settings.db_url, cell_timeout=settings.cell_timeout,
              notebook_timeout=settings.notebook_timeout, level=level, limits=settings.limits, feedback=False)
    place = Place(settings.exchange.resolve(), run, settings.showing, settings.check_owner)
    place.inbound.mkdir(parents=True, exist_ok=True)
    return place, Queue(settings.db_url, COURSE_ID)


class Service:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.place, self.queue = prepare(settings)
        self.stop = threading.Event()
        self.in_hand: dict[int, Job] = {}
        self.lost: set[int] = set()
        self._lock = threading.Lock()

    def log(self, text: str) -> None:
        print(f"[grader serve {self.settings.worker}] {text}", file=sys.stderr, flush=True)

    def scanner(self) -> None:
        seen = self.queue.known()
        while not self.stop.is_set():
            for arrival in scan(self.place.inbound, self.place.known(), skip=seen):
                if self.queue.enqueue(arrival.folder, arrival.student, arrival.assignment, arrival.submitted_at):
                    self.log(f"queued {arrival.folder}")
                seen.add(arrival.folder)
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

    def worker(self) -> None:
        while not self.stop.is_set():
            job = self.queue.claim(self.settings.worker, self.settings.lease, self.settings.min_interval)
            if job is None:
                self.stop.wait(self.settings.poll)
                continue
            with self._lock:
                self.in_hand[job.id] = job
            self.log(f"grading {job.folder} (attempt {job.attempts})")
            try:
                status, score, max_score = grade_job(self.place, job, lambda: self.still_mine(job))
                if self.queue.done(job, status, score, max_score):
                    self.log(f"graded {job.folder}: {status} {score}/{max_score}")
            except LeaseLost:
                self.log(f"lost the lease of {job.folder}: another worker grades it")
            except Exception as exc:  # noqa: BLE001 - the job's lease runs out, it is graded again
                self.log(f"failed on {job.folder} (attempt {job.attempts}): {type(exc).__name__}: {exc}")
                if job.attempts >= MAX_ATTEMPTS:   # not forever: the row says error, the instructor looks
                    self.queue.done(job, "error")
            finally:
                with self._lock:
                    self.in_hand.pop(job.id, None)
                    self.lost.discard(job.id)

    def run(self) -> None:
        threads = [threading.Thread(target=self.scanner, name="scanner", daemon=True),
                   threading.Thread(target=self.heartbeat, name="heartbeat", daemon=True)]
        threads += [threading.Thread(target=self.worker, name=f"worker-{i}", daemon=True)
                    for i in range(self.settings.jobs)]
        for thread in threads:
            thread.start()
        self.log(f"watching {self.place.inbound} ({self.settings.jobs} at a time)")
        while not self.stop.wait(0.5):
            pass
        for thread in threads:
            thread.join()
        self.queue.close()


def serve(settings: Settings) -> None:
    service = Service(settings)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: service.stop.set())
    service.run()
