"""make grade SUBMISSIONS=<folder>: autograde a whole class in sandboxes and say what happened to every notebook.

    python grader/grade.py SUBMISSIONS [--out DIR] [--jobs N] [--cell-timeout S] [--notebook-timeout S]
                                       [--db-url URL] [--unsafe-no-sandbox]

SUBMISSIONS holds `<student>/<assignment>/<assignment>.ipynb` (nbgrader's layout) or flat
`<student>_<assignment>.ipynb` files. Nothing in it is modified. The steps:

1. prepare  every notebook is read, validated and rebuilt on the release: each cell the release has gets
            the release's metadata back (type, tags, nbgrader fields) and each locked cell its source
            (with the hidden tests); cells the student added keep their code but lose every tag and
            grading field. Deleted, duplicated and retyped cells are repaired; all of it is noted.
2. expect   each assignment's instructor notebook runs like a submission; what its test cells
            record (agentrl_ref.checks.probes) is the expected result. It never enters a sandbox.
3. execute  every notebook runs in its own sandbox (grader/sandbox.py: bubblewrap, cgroups, no network,
            only an empty working folder and the course package without this assignment's answers),
            --jobs at a time. Its test cells are judged against the expected records by trusted code
            (grader/verdict.py), outputs are capped, and the kernel's fate (timeout, memory, processes)
            is noted in Chinese.
4. record   after every sandbox is gone, nbgrader (in this process, one writer) saves the scores into
            the gradebook (SQLite by default; --db-url for another) and writes the feedback.
5. report   grades.csv, cells.csv, feedback/ and report.md in --out (default grading-output/).

--unsafe-no-sandbox runs kernels without the sandbox (for machines without user namespaces); the
report says so on its first line. The verdict is still decided outside the kernel.
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import threading
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

import execute
from gradebook import record_assignment, scores_of
from grading import scratch_course
from prepare import prepare
from release import GRADER, assignments as course_assignments, nbgrader_env
from report import write_reports
from sanitize import inert_outputs
from submissions import Submission, collect
from verdict import VERDICT_MARK

COURSE_ID = "agentrl-cloze"  # as in nbgrader_config.py


# ---------------------------------------------------------------- nbgrader in this process


def _nbgrader_config(course: Path, db_url: str):
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = db_url
    config.CourseDirectory.course_id = COURSE_ID
    return config


# nbgrader's converters change the process's working folder and environment while they run: one at a
# time per process, even when two gradings share a process.
_NBGRADER = threading.Lock()


def _run_converter(kind, course: Path, config, assignment: str, student: str = "*", **options) -> None:
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id, coursedir.student_id = assignment, student
    app = kind(coursedir=coursedir, config=config)
    for key, value in options.items():
        setattr(app, key, value)
    with _NBGRADER:
        cwd = os.getcwd()
        try:
            app.start()
        finally:
            os.chdir(cwd)


def generate_assignments(course: Path, names: list[str], db_url: str) -> None:
    from nbgrader.converters import GenerateAssignment

    config = _nbgrader_config(course, db_url)
    for name in names:
        _run_converter(GenerateAssignment, course, config, name, student=".", force=True)


def feedback(course: Path, name: str, subs: list[Submission], db_url: str) -> None:
    """nbgrader writes the feedback pages of one assignment (course/autograded -> course/feedback). A
    notebook nbconvert cannot render loses its page, not the others': its row says so."""
    from nbgrader.converters import GenerateFeedback

    config = _nbgrader_config(course, db_url)  # its GenerateFeedback steps: see nbgrader_config.py
    recorded = [s for s in subs if (course / "autograded" / s.student / name / f"{name}.ipynb").is_file()]
    if not recorded:
        return
    try:
        _run_converter(GenerateFeedback, course, config, name, force=True)
    except Exception:  # noqa: BLE001 - nbgrader goes on after a failed notebook, then raises once
        pass
    for sub in recorded:
        if not (course / "feedback" / sub.student / name / f"{name}.html").is_file():
            sub.status = "error"
            sub.notes.append("没能生成反馈页面（分数已记录）")


# ---------------------------------------------------------------- 2.-3. expect and execute


def execute_one(sub: Submission, course: Path, runner: execute.Runner, expected: dict, work: Path) -> None:
    """Run, judge, cap and make inert one prepared notebook into course/autograded; never raises."""
    from safety import CapOutputs

    try:
        src = course / "submitted" / sub.student / sub.assignment / f"{sub.assignment}.ipynb"
        result = runner.run(nbformat.read(src, as_version=4), work / uuid.uuid4().hex, expected)
        sub.seconds = result.seconds
        if result.status != "ok":
            sub.status = result.status
        sub.notes += result.notes
        sub.passed = {gid: v.passed for gid, v in result.verdicts.items()}
        forged = sorted(gid for gid, v in result.verdicts.items() if v.forged)
        if forged:
            sub.notes.append(f"测试单元里出现了参考答案没有的评分记录（{', '.join(forged)}）：疑似伪造，已判 0 分")
        CapOutputs().preprocess(result.nb, {})
        for cell in result.nb.cells:
            inert_outputs(cell, keep_metadata=(VERDICT_MARK,))
        dest = course / "autograded" / sub.student / sub.assignment / f"{sub.assignment}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(result.nb, dest)
    except Exception as exc:  # noqa: BLE001 - one notebook's fault stays with that notebook
        sub.status, sub.passed = "error", {}
        sub.notes.append(f"评分这份 notebook 时出错（{type(exc).__name__}）：没有评分")


# ---------------------------------------------------------------- 4.-5. record and report


def grade(submissions: Path, out: Path, cell_timeout: int = 60, notebook_timeout: int = 600,
          db_url: str | None = None, jobs: int | None = None, sandbox: bool = True,
          limits=None, timings: dict | None = None) -> list[Submission]:
    """Grade every submission in the folder into out; see the module docstring. timings (if given) gets the
    seconds each step took: prepare, execute (reference runs included; recording and feedback of finished
    assignments run alongside, and their own seconds are in record and feedback), report, total."""
    started = time.perf_counter()
    timings = {} if timings is None else timings
    mark = [started]

    def lap(step: str) -> None:
        now = time.perf_counter()
        timings[step] = now - mark[0]
        mark[0] = now

    if sandbox:
        from sandbox import SandboxUnavailable, check_available, sweep_stale_cgroups

        try:
            check_available()
        except SandboxUnavailable as exc:
            raise SystemExit(f"无法启动评分沙箱，没有评分 / cannot start the grading sandbox, nothing graded:\n{exc}\n"
                             "（在不支持的机器上可以显式加 --unsafe-no-sandbox：学生代码将不受隔离，报告里会写明）")
        sweep_stale_cgroups()
    log = logging.getLogger("traitlets")  # nbgrader's converters log there
    if not log.handlers:
        log.addHandler(logging.StreamHandler())
    log.setLevel(logging.ERROR)
    os.environ["PATH"] = nbgrader_env()["PATH"]  # nbgrader runs `alembic` from PATH: the venv's
    # nbgrader's own gradebook code trips SQLAlchemy's autoflush warnings; they say nothing about the class
    warnings.filterwarnings("ignore", module=r"nbgrader\.api")
    jobs = jobs or max(1, min(2, os.cpu_count() or 1))
    submissions = submissions.resolve()
    out = out.resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    course = scratch_course(out / "course")
    db_url = db_url or f"sqlite:///{course / 'gradebook.db'}"
    known = course_assignments(course)
    subs = collect(submissions, known, forbidden=[p for name in known for p in (
        GRADER / "source" / name / f"{name}.ipynb", course / "source" / name / f"{name}.ipynb")])
    if not subs:
        raise SystemExit(f"no submissions found in {submissions}")
    names = sorted({s.assignment for s in subs if s.assignment})
    generate_assignments(course, names, db_url)
    grading = out / "grading"   # trusted: package copies, expected records, working folders
    runners, expected = {}, {}
    for name in names:
        release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
        source = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
        for sub in subs:
            if sub.assignment == name:
                prepare(sub, course, release, source)
        runners[name] = execute.runner_for(name, grading, cell_timeout=cell_timeout,
                                           notebook_timeout=notebook_timeout, sandbox=sandbox, limits=limits)
    lap("prepare")

    def reference(name: str):
        try:
            return execute.expected_for(name, course / "source", runners[name], grading)
        except ValueError as exc:  # the instructor notebook itself fails: grade nothing of it, say why
            return exc

    with ThreadPoolExecutor(jobs) as pool:  # the reference runs, then every submission
        for name, exp in zip(names, pool.map(reference, names)):
            if isinstance(exp, ValueError):
                print(f"cannot grade {name}: {exp}", file=sys.stderr)
                for sub in subs:
                    if sub.assignment == name and sub.status == "ok":
                        sub.status = "error"
                        sub.notes.append(f"参考答案在评分环境里运行失败，这份作业没有评分：{exp}")
            else:
                expected[name] = exp
        running = {name: [pool.submit(execute_one, s, course, runners[name], expected[name], grading / "work")
                          for s in subs if s.assignment == name and s.status == "ok"] for name in names}
        # While the pool works through the later assignments, this thread (the gradebook's one writer)
        # records each assignment whose notebooks are all judged, and nbgrader writes its feedback.
        timings["record"] = timings["feedback"] = 0.0
        for name in names:
            for future in running[name]:
                future.result()
            done = [s for s in subs if s.assignment == name and s.path is not None]
            for step, write in (("record", lambda: record_assignment(db_url, COURSE_ID, course, name, done)),
                                ("feedback", lambda: feedback(course, name, done, db_url))):
                began = time.perf_counter()
                write()
                timings[step] += time.perf_counter() - began
    if sandbox:
        sweep_stale_cgroups()
    lap("execute")  # the sandboxes, with recording and feedback of finished assignments alongside
    if (course / "feedback").is_dir():  # copied out once every sandbox is gone
        shutil.copytree(course / "feedback", out / "feedback")
    scores, maxima = scores_of(db_url, COURSE_ID, subs)
    report = write_reports(out, subs, scores, maxima, sandbox)
    lap("report")
    timings["total"] = time.perf_counter() - started
    print(report)
    graded = sum(s.status not in ("missing", "invalid") for s in subs)
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in timings.items() if k != "total")
    print(f"graded {graded} notebooks of {len(subs)} in {timings['total']:.1f} s ({steps}; {jobs} at a time, "
          f"sandbox {'on' if sandbox else 'OFF'}); results in {out}/grades.csv", file=sys.stderr)
    return subs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path)
    parser.add_argument("--out", type=Path, default=Path("grading-output"))
    parser.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell")
    parser.add_argument("--notebook-timeout", type=int, default=600, help="seconds per notebook")
    parser.add_argument("--db-url", default=os.environ.get("AGENTRL_DB_URL"),
                        help="gradebook URL (default: SQLite in the output folder; or set AGENTRL_DB_URL)")
    parser.add_argument("--jobs", type=int, default=None, help="notebooks executed at a time (default: 2)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="run student code without the sandbox (machines without namespaces); say so in the report")
    args = parser.parse_args()
    grade(args.submissions, args.out, args.cell_timeout, args.notebook_timeout, args.db_url, args.jobs,
          sandbox=not args.unsafe_no_sandbox)


if __name__ == "__main__":
    main()
