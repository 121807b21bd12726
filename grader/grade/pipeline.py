"""make grade: a whole class, read top to bottom. `python -m grader grade SUBMISSIONS …`

For every hand-in, nbgrader's own lists of the course's steps (lists.py), run as they are, one step after
the other; --jobs notebooks at a time in the sandbox threads, and one more thread that writes while the
next notebooks run:

    intake    submissions.py   only the student's own regular file, read and parsed      -> invalid
    SANITIZE  prepare.py       rebuilt on the release, its own code scanned for what it reaches
    EXECUTE   execute.py       run in its own sandbox, outputs capped as they arrive
              verdict.py       every test cell judged against the reference's records, outside the kernel
              outputs.py       outputs capped and made inert
    --------- the writer thread
    RECORD    gradebook.py     the judged notebook into the course's autograded/ folder (formgrader reads
                               it), the verdicts into the gradebook (one transaction)
    feedback  feedback.py      the student's HTML page (WriteFeedback)

then, once: report (report.py) — grades.csv, cells.csv, report.md. These are the steps `nbgrader
autograde` runs in the course folder. What they find travels in the notebook's NotebookState (state.py)
and ends in its row. Whatever goes wrong in one notebook's steps makes that notebook's row `error` with a
note naming the step; the class goes on and every report is written.

With `shard` (K/N), only the students a stable hash gives to shard K are graded, into the shared
gradebook, with outputs under OUT/shards/K/ and a manifest; `report(out, db_url)` then writes the class's
reports from every shard (cluster/shards.py).
"""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from traitlets.config import Config

from grader.cluster.shards import Shard, read_manifests, shard_folder, write_manifest
from grader.course import COURSE_ID, GRADER, assignments, copy_course, generate_assignments
from grader.grade.execute import GraderFailure, runner_for
from grader.grade.feedback import WriteFeedback
from grader.grade.gradebook import RECORDED_STATUSES, forget, scores_of
from grader.grade.lists import EXECUTE, RECORD, SANITIZE
from grader.grade.outfolder import Out, claim, digest_of, ledger_key, require
from grader.grade.prepare import read_notebook
from grader.grade.progress import Progress
from grader.grade.reference import expected_for, hidden_for
from grader.grade.report import write_reports
from grader.grade.state import NotebookState
from grader.grade.submissions import Submission, SubmissionRejected, collect, read_submission
from grader.sandbox import SandboxUnavailable, choose, level_table, refusal, sweep_stale

IN_SANDBOX_THREADS = SANITIZE + EXECUTE     # --jobs notebooks at a time, each in its own sandbox
IN_WRITER_THREAD = RECORD + [WriteFeedback]  # one thread: the gradebook, autograded/ and feedback/


@dataclass
class Run:
    """The settings and places of one grading run (one machine, or one shard), and its steps."""
    course: Path                 # the scratch nbgrader course folder: config, source, release, autograded…
    grading: Path                # trusted: package copies, reference records, working folders
    db_url: str
    cell_timeout: int = 60
    notebook_timeout: int = 600
    level: str = "none"          # the isolation level every notebook runs at (grader/sandbox/levels.py)
    limits: object = None
    feedback: bool = True        # write each student's HTML feedback page (WriteFeedback)
    expected: dict = field(default_factory=dict)   # assignment -> reference records
    hidden: dict = field(default_factory=dict)     # assignment -> its hidden tests' strings (never quoted)
    timings: dict = field(default_factory=dict)    # step -> seconds, summed over notebooks
    in_sandbox_threads: list = field(init=False)   # the steps, made once per run (__post_init__)
    in_writer_thread: list = field(init=False)
    _clock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self):
        # the steps, made once per run as nbgrader makes them: each from the settings nbgrader would read
        config = Config()
        config.CourseDirectory.root = str(self.course)
        config.SandboxedExecute.timeout = self.cell_timeout
        config.SandboxedExecute.notebook_timeout = self.notebook_timeout
        config.SandboxedExecute.isolation = self.level
        config.SandboxedExecute.grading_dir = str(self.grading)
        config.SandboxedExecute.limits = self.limits
        self.in_sandbox_threads = [step(config=config) for step in IN_SANDBOX_THREADS]
        self.in_writer_thread = [step(config=config) for step in IN_WRITER_THREAD
                                 if self.feedback or step is not WriteFeedback]

    def add_time(self, step: str, seconds: float) -> None:
        with self._clock:
            self.timings[step] = self.timings.get(step, 0.0) + seconds

    def runner(self, assignment: str):
        """The assignment's sandboxed (or, explicitly, unsafe) runner, with its answer-free package copy."""
        return runner_for(assignment, self.grading, cell_timeout=self.cell_timeout,
                          notebook_timeout=self.notebook_timeout, isolation=self.level, limits=self.limits)

    def kernel_cpu(self) -> float | None:
        """CPU seconds of every sandbox, or None where the level could not count them (`job` on a cgroup v1 host)."""
        counts = [self.runner(name).cpu_seconds for name in self.expected]
        return None if None in counts else sum(counts)

    def resources(self, sub: Submission) -> dict:
        """What nbgrader's converters hand their steps, with the notebook's state: the reference's records."""
        resources = {"nbgrader": {"student": sub.student, "assignment": sub.assignment, "notebook": sub.assignment,
                                  "db_url": self.db_url, "course_id": COURSE_ID}}
        state = NotebookState.of(resources)
        state.expected, state.hidden = self.expected[sub.assignment], self.hidden[sub.assignment]
        return resources


@dataclass
class Job:
    """One hand-in on its way through the lists."""
    sub: Submission
    nb: nbformat.NotebookNode | None = None
    resources: dict = field(default_factory=dict)
    stopped: bool = False      # a step failed: the later ones are not done


def run_steps(job: Job, steps: list, run: Run) -> None:
    """Each step on the job's notebook, in order, timed. The first that fails stops this notebook alone:
    its state becomes `error` with a note naming the step, and no later step runs on it (or `ungraded`, where
    the grader could not run the notebook at all: execute.GraderFailure; nothing of it is recorded)."""
    for step in steps:
        if job.stopped:
            return
        name = type(step).__name__
        began = time.perf_counter()
        try:
            job.nb, job.resources = step.preprocess(job.nb, job.resources)
        except GraderFailure:   # the grader could not run it: `ungraded` (the step said why), nothing recorded
            job.stopped = True
        except Exception as exc:  # noqa: BLE001 - one notebook's fault stays with that notebook
            state, job.stopped = NotebookState.of(job.resources), True
            state.status = "error"
            state.notes.append(f"{getattr(step, 'zh', '处理')}这份 notebook 时出错（{name}：{type(exc).__name__}）："
                               "后面的步骤没有做")
        finally:
            run.add_time(name, time.perf_counter() - began)


def start(sub: Submission, run: Run) -> Job:
    """Intake, then the steps of the sandbox threads (SANITIZE, EXECUTE)."""
    job = Job(sub)
    try:
        job.nb = read_notebook(read_submission(sub))
    except (SubmissionRejected, ValueError) as exc:
        sub.status, sub.notes, job.stopped = "invalid", [str(exc)] + sub.notes, True
        return job
    job.resources = run.resources(sub)
    run_steps(job, run.in_sandbox_threads, run)
    return job


def finish(job: Job, run: Run) -> None:
    """The steps of the writer thread (RECORD, the feedback page), then everything found goes into the
    hand-in's row. Whatever happened ends there (status, notes), never in an exception."""
    if not job.resources:
        return
    run_steps(job, run.in_writer_thread, run)
    state, sub = NotebookState.of(job.resources), job.sub
    sub.status = state.status
    sub.notes = state.notes + sub.notes
    sub.seconds = state.seconds
    sub.passed = state.passed()
    sub.untouched = state.untouched


def quiet_nbgrader() -> None:
    log = logging.getLogger("traitlets")  # nbgrader's converters and preprocessors log there
    if not log.handlers:
        log.addHandler(logging.StreamHandler())
    log.setLevel(logging.ERROR)
    # nbgrader's own gradebook code trips SQLAlchemy's autoflush warnings; they say nothing about the class
    warnings.filterwarnings("ignore", module=r"nbgrader\.api")


def isolation_level(request: str, limits) -> str:
    """The level this run grades at, said out loud (the doctor's table for it); SystemExit if the machine
    cannot give what was asked for, with the ways forward."""
    try:
        level = choose(request)
    except SandboxUnavailable as exc:
        raise SystemExit(refusal(exc)) from None
    print(level_table(level, limits), file=sys.stderr)
    if level != "none":
        sweep_stale(level)
    return level


@contextlib.contextmanager
def one_writer_at_a_time(db_url: str):
    """While nbgrader writes the assignments' rows: one shard at a time (a PostgreSQL advisory lock)."""
    if not db_url.startswith("postgresql"):
        yield
        return
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(7464207)"))   # any fixed key the course's graders share
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(7464207)"))
    engine.dispose()


def _setup(submissions: Path, out: Out, shard: Shard | None, db_url: str | None,
           **settings) -> tuple[Run, list, set, dict]:
    """The output folder (of the shard) with a scratch course in it, the class's rows, the keys of the rows
    to grade now, the sha256 of every hand-in's file, and the gradebook ready for them: the assignments'
    rows (nbgrader), a shard's earlier rows removed. Graded again into an earlier output (out.previous),
    the rows whose file is unchanged, or that are not in SUBMISSIONS this time, are kept as they were."""
    base = out.path if shard is None else shard_folder(out.path, shard)
    if shard is not None and base.exists():
        shutil.rmtree(base)   # the shard's own folder, under the output's marker: the grader made it
    course = base / "course"
    if not (course / "nbgrader_config.py").is_file():
        copy_course(course)
    run = Run(course, base / "grading", db_url or f"sqlite:///{course / 'gradebook.db'}", **settings)
    known = assignments(course)
    subs = collect(submissions, known, forbidden=[folder / "source" / name / f"{name}.ipynb"
                                                  for name in known for folder in (GRADER, course)])
    if not subs and not out.previous:
        raise SystemExit(f"no submissions found in {submissions}")
    digests = _digests(subs)
    subs, todo = carry_over(out.previous, subs, digests)
    released = {name for name in known if (course / "release" / name / f"{name}.ipynb").is_file()}
    with one_writer_at_a_time(run.db_url):   # every shard knows every assignment
        generate_assignments(course, sorted({s.assignment for s in subs if s.assignment} - released), run.db_url)
    if shard is not None:
        forget(run.db_url, COURSE_ID, [(s.assignment, s.student) for s in subs
                                       if s.assignment and shard.takes(s.student)])
    return run, subs, todo, digests


def _digests(subs: list[Submission]) -> dict[tuple[str, str], str]:
    """(student, assignment) -> sha256 of the hand-in's file, for every file that can be read safely."""
    found = {}
    for sub in subs:
        if sub.path is not None and sub.status == "ok":
            try:
                found[(sub.student, sub.assignment)] = digest_of(read_submission(sub))
            except SubmissionRejected:
                pass
    return found


def carry_over(previous: dict, subs: list[Submission], digests: dict) -> tuple[list[Submission], set]:
    """The class's rows after grading again into an earlier output, and the keys to grade now. A hand-in
    whose file is the one graded last time keeps its row; one that is new or changed is graded (a changed
    one says so); a row of the earlier run that SUBMISSIONS no longer speaks of, or only as missing, is
    kept as it was. Without an earlier run: every row, every hand-in to grade."""
    rows = {(s.student, s.assignment): s for s in subs}
    todo = {key for key, s in rows.items() if s.path is not None and s.status == "ok"}
    for entry in previous.values():
        old = Submission.from_row(entry["row"])
        key = (old.student, old.assignment)
        new = rows.get(key)
        if new is None or (new.path is None and old.status in RECORDED_STATUSES):
            rows[key] = old
            if new is not None:
                old.notes.append("这次的 SUBMISSIONS 里没有这份（" + "；".join(new.notes) + "）：沿用上次的评分")
            todo.discard(key)
        elif key in todo and entry.get("sha256") == digests.get(key) and old.status in RECORDED_STATUSES:
            rows[key] = old
            todo.discard(key)
        elif key in todo and old.status in RECORDED_STATUSES:
            new.notes.append("文件和上次评分时不同：重新评分")
    return [rows[key] for key in sorted(rows)], todo


def _reference_runs(run: Run, todo: list[Submission], pool, shared: Path | None) -> list[Submission]:
    """Every needed assignment's instructor notebook, run like a submission (in parallel); the hand-ins of
    an assignment whose reference fails are `error`, with the reason. Return the hand-ins left to grade."""
    runners = {name: run.runner(name) for name in sorted({s.assignment for s in todo})}
    futures = {pool.submit(expected_for, name, run.course / "source", runner, run.grading, shared): name
               for name, runner in runners.items()}
    for future in as_completed(futures):
        name = futures[future]
        try:
            run.expected[name] = future.result()
            run.hidden[name] = hidden_for(name, run.course / "source")
        except ValueError as exc:   # the instructor notebook itself fails: grade nothing of it, say why
            print(f"cannot grade {name}: {exc}", file=sys.stderr)
            for sub in todo:
                if sub.assignment == name:
                    sub.status = "error"
                    sub.notes.append(f"参考答案在评分环境里运行失败，这份作业没有评分：{exc}")
    return [s for s in todo if s.assignment in run.expected]


def grade(submissions: Path, out: Path, cell_timeout: int = 60, notebook_timeout: int = 600,
          db_url: str | None = None, jobs: int | None = None, isolation: str = "auto", limits=None,
          timings: dict | None = None, shard: Shard | None = None, feedback: bool = True,
          new: bool = False) -> list[Submission]:
    """Grade the folder's hand-ins into out (see the module docstring); return every row of the class
    (with shard: every row, this shard's graded). out is claimed first (outfolder.py: refused if it holds
    or is inside SUBMISSIONS or the course, or is a non-empty folder that is no grading output; graded
    again into an earlier output, only new or changed hand-ins are graded; new=True or another course:
    a new dated folder beside it). feedback=False writes no feedback pages (the same grades, reports and
    autograded/ notebooks). timings, if given, gets seconds per step (summed over notebooks); of the
    phases setup, grading, report and total; CPU seconds of this process (grader_cpu) and of every
    sandbox (kernel_cpu); and when it started and finished."""
    timings = {} if timings is None else timings
    started, cpu_started, timings["started"] = time.perf_counter(), time.process_time(), time.time()
    if shard is not None and not (db_url or "").startswith("postgresql"):
        raise SystemExit("SHARD needs a shared PostgreSQL gradebook: DB_URL=postgresql://… (or AGENTRL_DB_URL)")
    place = claim(out, submissions, kind="one-machine" if shard is None else "shards", db_url=db_url, new=new)
    if place.moved_from is not None:
        print(f"{place.moved_from} holds a grading output of another course or gradebook (or --new was given): "
              f"this run writes a new folder, {place.path} / 这次评分写进新的文件夹 {place.path}，原来的没有动",
              file=sys.stderr)
    level = isolation_level(isolation, limits)
    quiet_nbgrader()
    jobs = jobs or max(1, min(2, os.cpu_count() or 1))
    if level == "job" and jobs != 1:   # the job's own limits are one notebook's: one at a time
        print(f"isolation level job: one notebook at a time (not {jobs}) / 作业级隔离：一次只评一份", file=sys.stderr)
        jobs = 1
    run, subs, todo_keys, digests = _setup(submissions.resolve(), place, shard, db_url, cell_timeout=cell_timeout,
                                           notebook_timeout=notebook_timeout, level=level, limits=limits,
                                           timings=timings, feedback=feedback)
    mine = [s for s in subs if shard is None or shard.takes(s.student)]
    todo = [s for s in mine if (s.student, s.assignment) in todo_keys]
    if place.previous:
        print(f"graded again into {place.path}: {len(todo)} new or changed hand-ins are graded, "
              f"{len(mine) - len(todo)} rows kept from the earlier run / 只评新交或改过的 {len(todo)} 份，"
              f"其余 {len(mine) - len(todo)} 行沿用上次", file=sys.stderr)
    timings["setup"] = time.perf_counter() - started
    # --jobs threads run the sandboxed steps; one more writes (gradebook, feedback) while they go on
    with ThreadPoolExecutor(jobs) as pool, ThreadPoolExecutor(1) as writer:
        todo = _reference_runs(run, todo, pool, shared=None if shard is None else place.path / "references")
        with Progress(len(todo), "评分" if shard is None else f"评分 第 {shard} 片") as progress:
            written = []
            for future in as_completed([pool.submit(start, s, run) for s in todo]):
                written.append(writer.submit(finish, future.result(), run))
                written[-1].add_done_callback(lambda _: progress.advance())
            for future in written:
                future.result()
    if level != "none":
        sweep_stale(level)
    timings["grading"] = time.perf_counter() - started - timings["setup"]
    timings["kernel_cpu"] = run.kernel_cpu()                          # every sandbox, references included
    timings["grader_cpu"] = time.process_time() - cpu_started         # this process, every thread
    if shard is None:
        kept = sum(ledger_key(s.student, s.assignment) in place.previous and (s.student, s.assignment)
                   not in todo_keys and s.status in RECORDED_STATUSES for s in subs)
        _finish(place.path, subs, run.db_url, level, kept=kept)
        place.record([s.row() for s in subs], {**{(s.student, s.assignment): place.previous.get(
            ledger_key(s.student, s.assignment), {}).get("sha256") for s in subs}, **digests})
    else:
        timings["finished"] = time.time()
        write_manifest(shard_folder(place.path, shard), shard, [s.row() for s in subs], level, timings)
    timings["total"] = time.perf_counter() - started
    timings["report"] = timings["total"] - timings["setup"] - timings["grading"]
    graded = sum(s.status not in ("missing", "invalid", "conflict") and (s.student, s.assignment) in todo_keys
                 for s in mine)
    steps = ", ".join(f"{k} {v:.1f} s" if v is not None else f"{k} not counted here"
                      for k, v in timings.items() if k not in ("total", "started", "finished"))
    print(f"graded {graded} notebooks of {len(mine)} in {timings['total']:.1f} s ({steps}; {jobs} at a time, "
          f"isolation {level}); results in {run.course.parent}", file=sys.stderr)
    return subs


def _finish(out: Path, subs: list[Submission], db_url: str, level: str, kept: int = 0) -> str:
    scores, maxima = scores_of(db_url, COURSE_ID, subs)
    if (out / "course" / "feedback").is_dir():
        shutil.copytree(out / "course" / "feedback", out / "feedback", dirs_exist_ok=True)
    report = write_reports(out, subs, scores, maxima, level, kept=kept)
    print(report)
    return report


def report(out: Path, db_url: str) -> list[Submission]:
    """After the shards: the class's grades.csv, cells.csv, report.md and feedback in out, from every
    shard's manifest and outputs and the shared gradebook. A shard that never finished is named."""
    out = out.resolve()
    require(out, "shards")
    rows, missing, level = read_manifests(out)
    subs = [Submission.from_row(row) for row in rows]
    for shard_dir in sorted((out / "shards").iterdir()):
        for part in ("autograded", "feedback"):
            if (shard_dir / "course" / part).is_dir():
                shutil.copytree(shard_dir / "course" / part, out / "course" / part, dirs_exist_ok=True)
    if missing:
        print(f"shards that never finished: {', '.join(map(str, missing))}", file=sys.stderr)
    _finish(out, subs, db_url, level)
    return subs
