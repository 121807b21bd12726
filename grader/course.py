"""The nbgrader course: where it is, which assignments it has, and running nbgrader's converters in it.

    assignments()                        every assignment in grader/source, in the course's order (ex1 ... ex11)
    copy_course(dest)                    a scratch course folder (config + instructor notebooks)
    generate_assignments(course, names, db_url)   release notebooks + gradebook rows (nbgrader)
    run_converter(Converter, course, config, assignment, student)   one nbgrader converter, safely
    course_of(step)                      the course folder an nbgrader step works in
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

GRADER = Path(__file__).resolve().parent
ROOT = GRADER.parent
COURSE_ID = "agentrl-cloze"                      # as in nbgrader_config.py
COURSE_FILES = ("nbgrader_config.py", "source")  # a course folder: the config and the instructor notebooks
# nbgrader's exchange on a hub, as the grading service needs it ({folder under Exchange.root: mode}): made by
# `make release EXCHANGE=…` (publish/exchange.py), checked before the service starts (serve/layout.py)
EXCHANGE_MODES = {".": 0o1777, COURSE_ID: 0o755, f"{COURSE_ID}/outbound": 0o755, f"{COURSE_ID}/inbound": 0o3733,
                  f"{COURSE_ID}/feedback": 0o711}
PRIVATE_MODE = 0o700   # the course folder on a hub: solutions, hidden tests, hand-ins, graded copies, gradebook


def exercise_order(name: str) -> tuple[int, str]:
    """Sort key of an assignment: by its exercise's number (ex2 before ex10), then by name."""
    digits = name[2:].split("_", 1)[0] if name.startswith("ex") else ""
    return (int(digits) if digits.isdigit() else 10**6, name)


def assignments(course: Path = GRADER) -> list[str]:
    return sorted((p.name for p in (course / "source").iterdir() if (p / f"{p.name}.ipynb").is_file()),
                  key=exercise_order)


def course_of(step) -> Path:
    """The course folder of an nbgrader step (a preprocessor): nbgrader's CourseDirectory.root, as the
    course's nbgrader_config.py or `make grade` sets it, else the working folder."""
    root = step.config.get("CourseDirectory", {}).get("root")
    return Path(root) if root else Path.cwd()


def nbgrader_env() -> dict[str, str]:
    """The environment for nbgrader: it runs `alembic` from PATH, so the venv's bin comes first."""
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}


def copy_course(dest: Path, course: Path = GRADER) -> Path:
    """Copy the course definition (config, instructor notebooks) into dest; return dest."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in COURSE_FILES:
        src = course / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def nbgrader_config(course: Path, db_url: str):
    """The course's nbgrader_config.py, pointed at this course folder and gradebook."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = db_url
    config.CourseDirectory.course_id = COURSE_ID
    return config


# nbgrader's converters change the process's working folder and environment while they run: one at a
# time per process, even when two gradings share a process.
_CONVERTING = threading.Lock()


def run_converter(kind, course: Path, config, assignment: str, student: str = "*", **options) -> None:
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id, coursedir.student_id = assignment, student
    app = kind(coursedir=coursedir, config=config)
    for key, value in options.items():
        setattr(app, key, value)
    with _CONVERTING:
        cwd = os.getcwd()
        try:
            app.start()
        finally:
            os.chdir(cwd)


def generate_assignments(course: Path, names: list[str], db_url: str) -> None:
    """nbgrader generate_assignment: course/release/<a>/<a>.ipynb and the assignment's rows in the gradebook.

    nbgrader's `force` deletes the release folder before it writes it again; a grading service that starts
    beside another (two workers of one course) would pull it from under the other's grading. So nbgrader
    writes into a scratch course next to this one, and each released file then replaces its old copy with
    os.replace: a reader sees the old file or the new one, never none."""
    from nbgrader.converters import GenerateAssignment

    os.environ["PATH"] = nbgrader_env()["PATH"]   # nbgrader runs `alembic` from PATH: the venv's
    scratch = Path(tempfile.mkdtemp(prefix=".release-", dir=course))
    try:
        config = nbgrader_config(copy_course(scratch, course), db_url)
        for name in names:
            run_converter(GenerateAssignment, scratch, config, name, student=".", force=True)
            made = scratch / "release" / name
            for path in sorted(made.rglob("*")):
                target = course / "release" / name / path.relative_to(made)
                if path.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(path, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
