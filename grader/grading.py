"""Helpers to drive nbgrader from Python: a scratch course, autograde, and per-test scores."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from release import GRADER, nbgrader_env

COURSE_FILES = ("nbgrader_config.py", "blanks.py", "safety.py", "execute.py", "verdict.py", "sandbox.py",
                "cells.py", "sanitize.py", "source")


def scratch_course(dest: Path, course: Path = GRADER) -> Path:
    """Copy the course definition (config, preprocessor, sources) into dest; return dest."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in COURSE_FILES:
        src = course / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """Run one nbgrader command in the course folder; raise with its output if it fails."""
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=nbgrader_env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def submit(course: Path, assignment: str, student: str, notebook_json: str) -> Path:
    """Place a student's notebook where nbgrader expects a submission."""
    path = course / "submitted" / student / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook_json, encoding="utf-8")
    return path


def cell_scores(course: Path, assignment: str) -> dict[str, dict[str, tuple[float, float]]]:
    """student -> grade_id -> (score, max_score) for every autograded test cell."""
    from nbgrader.api import Gradebook

    out: dict[str, dict[str, tuple[float, float]]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for sub in gb.assignment_submissions(assignment):
            notebook = gb.find_submission_notebook(assignment, assignment, sub.student_id)
            out[sub.student_id] = {g.name: (g.score, g.max_score) for g in notebook.grades}
    return out
