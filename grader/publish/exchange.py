"""make release EXCHANGE=DIR: the assignments also published to nbgrader's exchange, as an instructor's
`nbgrader release_assignment` does, for the students' Assignment List on a JupyterHub.

    publish(exchange, course, names, db_url)   # course: the instructor's nbgrader course folder

The course folder (copied from grader/ if it has no nbgrader_config.py) gets the release notebooks and the
assignments' rows in its gradebook (nbgrader generate_assignment); then nbgrader's own release_assignment
copies each into <exchange>/<course id>/outbound/. The folders get the modes the grading service checks
before it starts (course.EXCHANGE_MODES; grader/serve/layout.py says what a student could do otherwise):
the exchange root 1777 (every student writes it, nobody renames another's folder in it), the course's
exchange folder and outbound 0755, inbound 3733 (nobody lists it; the sticky bit keeps each folder its
owner's), feedback 0711 (each student opens only their own page), and the course folder private, 0700
(solutions, hidden tests, hand-ins, the gradebook). Each mode it changes on a folder that was already there
is printed; a folder of another account is left alone and the fix printed instead.
"""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from grader.course import (COURSE_ID, EXCHANGE_MODES, PRIVATE_MODE, copy_course, generate_assignments,
                           nbgrader_env)


def _make(folder: Path, mode: int, quiet: bool = False) -> None:
    """folder exists with mode (created, or changed if this account owns it); said out loud if it changed
    (quiet: not for a folder nbgrader has just made)."""
    if not folder.is_dir():
        folder.mkdir(parents=True)
        os.chmod(folder, mode)
        return
    st = os.stat(folder)
    if stat.S_IMODE(st.st_mode) == mode:
        return
    if st.st_uid != os.geteuid() and os.geteuid() != 0:
        print(f"{folder}: mode {stat.S_IMODE(st.st_mode):04o} should be {mode:04o}; it is another account's: "
              f"sudo chmod {mode:04o} {folder}", file=sys.stderr)
        return
    os.chmod(folder, mode)
    if not quiet:
        print(f"{folder}: mode {stat.S_IMODE(st.st_mode):04o} -> {mode:04o} (what the grading service needs on a "
              "hub)", file=sys.stderr)


def publish(exchange: Path, course: Path, names: list[str], db_url: str | None = None) -> list[Path]:
    """Release names into the exchange for COURSE_ID; return the outbound folders."""
    course, exchange = course.resolve(), exchange.resolve()
    _make(course, PRIVATE_MODE)
    if not (course / "nbgrader_config.py").is_file():
        copy_course(course)
    _make(exchange, EXCHANGE_MODES["."])
    existed = {rel: (exchange / rel).exists() for rel in EXCHANGE_MODES}
    generate_assignments(course, names, db_url or f"sqlite:///{course / 'gradebook.db'}")
    released = []   # release_assignment copies files only: it never opens the gradebook
    for name in names:
        args = [sys.executable, "-m", "nbgrader", "release_assignment", name, "--force", "--course", COURSE_ID,
                f"--Exchange.root={exchange}"]
        proc = subprocess.run(args, cwd=course, env=nbgrader_env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"nbgrader release_assignment {name} failed:\n{proc.stderr[-3000:]}")
        released.append(exchange / COURSE_ID / "outbound" / name)
    for rel, mode in EXCHANGE_MODES.items():   # nbgrader makes the root 0777 and inbound 2733: not enough
        _make(exchange / rel, mode, quiet=not existed[rel] or rel == ".")
    return released
