"""make release EXCHANGE=DIR: the assignments also published to nbgrader's exchange, as an instructor's
`nbgrader release_assignment` does, for the students' Assignment List on a JupyterHub.

    publish(exchange, course, names, db_url)   # course: the instructor's nbgrader course folder

The course folder (copied from grader/ if it has no nbgrader_config.py) gets the release notebooks and the
assignments' rows in its gradebook (nbgrader generate_assignment); then nbgrader's own release_assignment
copies each into <exchange>/<course id>/outbound/. The exchange folder is created world-writable if it is
missing (nbgrader's exchange needs it so: each student writes their own submission folders).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from grader.course import COURSE_ID, copy_course, generate_assignments, nbgrader_env


def publish(exchange: Path, course: Path, names: list[str], db_url: str | None = None) -> list[Path]:
    """Release names into the exchange for COURSE_ID; return the outbound folders."""
    course, exchange = course.resolve(), exchange.resolve()
    if not (course / "nbgrader_config.py").is_file():
        copy_course(course)
    if not exchange.is_dir():
        exchange.mkdir(parents=True)
        os.chmod(exchange, 0o777)   # nbgrader's exchange: every user creates their own folders in it
    generate_assignments(course, names, db_url or f"sqlite:///{course / 'gradebook.db'}")
    released = []   # release_assignment copies files only: it never opens the gradebook
    for name in names:
        args = [sys.executable, "-m", "nbgrader", "release_assignment", name, "--force", "--course", COURSE_ID,
                f"--Exchange.root={exchange}"]
        proc = subprocess.run(args, cwd=course, env=nbgrader_env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"nbgrader release_assignment {name} failed:\n{proc.stderr[-3000:]}")
        released.append(exchange / COURSE_ID / "outbound" / name)
    return released
