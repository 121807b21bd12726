"""A real nbgrader exchange on a local folder, an instructor who releases into it, students who fetch,
submit and fetch feedback with nbgrader's own commands, and the grading service as a real process.

    ex = Exchange.create(tmp, db_url)                  # course (exercise 1 only) released as make release does
    ex.fetch("alice"); ex.submit("alice", notebook_json)
    with ex.service(lease=4) as svc: ex.wait(lambda rows: ...)
    ex.fetch_feedback("alice")                         # {timestamp: html} in alice's own assignment folder

The first submission of a test goes through nbgrader's commands (`cli=True`); the rest call the same exchange
classes those commands run (ExchangeSubmit, ExchangeFetchAssignment, ExchangeFetchFeedback), in this process:
each command is a 3.5 s Python start-up, the exchange's own work a few milliseconds.
The student's id reaches nbgrader as `--student` (nbgrader's own option, as a JupyterHub user's lab gives
it under the jovyan convention): as root, OS accounts of their own cannot run this venv's interpreter
(it lives under /root). Each student has a home folder of their own (nbgrader's submission cache is there).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from grader.course import COURSE_ID, copy_course, nbgrader_env
from grader.publish.exchange import publish
from grader.serve.queue import Queue

EX1 = "ex1_format_reward"


def _nbgrader(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**nbgrader_env(), "HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def as_account(account: str, fn, *args) -> None:
    """fn(*args) in a child process that runs as the OS account, with its home as HOME and working folder.
    The child is forked after this process has imported what fn needs (call fn once as root first): other
    accounts cannot start this venv's interpreter (it lives under /root, mode 0700), but a forked child runs
    the code already in memory. An exception in the child is raised here, with its traceback."""
    import pwd
    import traceback

    pw = pwd.getpwnam(account)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: never returns
        code = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
            os.environ.update(HOME=pw.pw_dir, USER=account, LOGNAME=account)
            os.chdir(pw.pw_dir)
            os.umask(0o022)
            fn(*args)
            code = 0
        except BaseException:  # noqa: BLE001 - reported to the parent
            os.write(write, traceback.format_exc().encode()[-6000:])
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        report = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise RuntimeError(f"as {account}: {report}")


def _in_process(kind: str, root: Path, home: Path, assignment: str, student: str) -> None:
    """What `nbgrader <kind> ASSIGNMENT --course C --student S` runs, with the student's home as its folders
    (student "*": nbgrader names the student after the OS account, as on a hub with one account each)."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import default
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.course_id = COURSE_ID
    config.Exchange.root = str(root)
    config.Exchange.cache = str(home / ".local" / "share" / "jupyter" / "nbgrader_cache")
    config.Exchange.assignment_dir = str(home)
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id, coursedir.student_id = assignment, student
    step = {"fetch_assignment": default.ExchangeFetchAssignment, "submit": default.ExchangeSubmit,
            "fetch_feedback": default.ExchangeFetchFeedback}[kind]
    step(coursedir=coursedir, authenticator=Authenticator(config=config), config=config).start()


@dataclass
class Exchange:
    root: Path        # the exchange (Exchange.root)
    course: Path      # the instructor's course folder (the service grades into it)
    homes: Path
    db_url: str
    assignment: str = EX1
    accounts: bool = False    # students are OS accounts (their homes under homes/): nbgrader runs as each

    @classmethod
    def create(cls, tmp: Path, db_url: str, assignment: str = EX1, course: Path | None = None) -> "Exchange":
        """course: the instructor's course folder (default tmp/course)."""
        course = copy_course(course or tmp / "course")
        for other in (course / "source").iterdir():   # the cheapest notebook only
            if other.name != assignment:
                shutil.rmtree(other)
        root = tmp / "exchange"
        assert publish(root, course, [assignment], db_url) == [root / COURSE_ID / "outbound" / assignment]
        return cls(root, course, tmp / "homes", db_url, assignment)

    def _flags(self, student: str | None = None) -> list[str]:
        flags = ["--course", COURSE_ID, f"--Exchange.root={self.root}"]
        return flags + ([f"--student={student}"] if student else [])

    def home(self, student: str) -> Path:
        home = self.homes / student
        home.mkdir(parents=True, exist_ok=True)
        return home

    def _run(self, kind: str, student: str, cli: bool) -> None:
        home = self.home(student)
        if self.accounts:
            as_account(student, _in_process, kind, self.root, home, self.assignment, "*")
        elif cli:
            _nbgrader(home, home, kind, self.assignment, *self._flags(student))
        else:
            _in_process(kind, self.root, home, self.assignment, student)

    def fetch(self, student: str, cli: bool = False) -> Path:
        if not (self.home(student) / self.assignment).is_dir():
            self._run("fetch_assignment", student, cli)
        return self.home(student) / self.assignment / f"{self.assignment}.ipynb"

    def submit(self, student: str, notebook_json: str, cli: bool = False) -> str:
        """The student's notebook saved and submitted; return the inbound folder's name."""
        self.fetch(student, cli).write_text(notebook_json, encoding="utf-8")
        before = set(os.listdir(self.inbound))
        self._run("submit", student, cli)
        (new,) = set(os.listdir(self.inbound)) - before
        return new

    def fetch_feedback(self, student: str, cli: bool = False) -> dict[str, str]:
        """nbgrader fetch_feedback as the student: {submission timestamp: feedback html} they now have."""
        self._run("fetch_feedback", student, cli)
        home = self.home(student)
        folder = home / self.assignment / "feedback"
        return {p.parent.name: p.read_text(encoding="utf-8") for p in folder.glob(f"*/{self.assignment}.html")}

    @property
    def inbound(self) -> Path:
        return self.root / COURSE_ID / "inbound"

    def rows(self, students=None) -> list[dict]:
        queue = Queue(self.db_url, COURSE_ID)
        try:
            return queue.rows(None if students is None else list(students))
        finally:
            queue.close()

    def wait(self, ready, students, timeout: float = 240.0, what: str = "") -> list[dict]:
        """Poll the queue until ready(rows of these students) holds; AssertionError after timeout (a hang,
        not a timing check: the timeout is far above what the step takes on a loaded machine)."""
        deadline = time.monotonic() + timeout
        while True:
            rows = self.rows(students)
            if ready(rows):
                return rows
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout} s for {what or ready}: {rows}")
            time.sleep(0.3)

    @contextlib.contextmanager
    def service(self, log: Path, *options: str, state: Path | None = None, identity: str = "names"):
        """`python -m grader serve` as a real process (its own process group); SIGTERM at the end. The students
        here are ids, not OS accounts (every folder is this process's): identity names, unless told otherwise."""
        args = [sys.executable, "-m", "grader", "serve", "--exchange", str(self.root), "--course",
                str(self.course), "--poll", "0.2", *options]
        if "--check-owner" not in options and "--identity" not in options:
            args += ["--identity", identity]
        if state is not None:
            args += ["--state", str(state)]
        env = {**nbgrader_env(), "AGENTRL_DB_URL": self.db_url}
        with open(log, "ab") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL the service and everything in its process group, as a machine that dies would; then what its
    sandboxes left on this machine (capped mounts, groups) is swept, as its restart would sweep it."""
    from grader.sandbox import probe, sweep_stale

    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    sweep_stale(probe().best)
