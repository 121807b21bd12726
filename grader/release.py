"""make release: instructor notebooks -> student notebooks and book pages.

    grader/source/<a>/<a>.ipynb  --nbgrader generate_assignment-->  release notebook
        -> notebooks/<a>.ipynb   the student version: blanks, visible tests, no cells tagged "answer"
        -> book/<a>.ipynb        the web page: the same plus the collapsed 答案, and the blank
                                 and test cells tagged skip-execution so the site never shows a
                                 NameError from `_____`

nbgrader runs in a temporary copy of the course, so releasing never touches the
instructor's gradebook. Usage: python grader/release.py [--out DIR] [assignment ...]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

GRADER = Path(__file__).resolve().parent
ROOT = GRADER.parent
ANSWER_TAG = "answer"
SKIP_TAG = "skip-execution"


def assignments(course: Path = GRADER) -> list[str]:
    return sorted(p.name for p in (course / "source").iterdir() if (p / f"{p.name}.ipynb").is_file())


def nbgrader_env() -> dict[str, str]:
    """The environment for nbgrader: it runs `alembic` from PATH, so the venv's bin comes first."""
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}


def nbgrader_release(names: list[str], course: Path = GRADER) -> dict[str, nbformat.NotebookNode]:
    """Run `nbgrader generate_assignment` in a scratch copy of the course; return the release notebooks."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "course"
        shutil.copytree(course, work, ignore=shutil.ignore_patterns(
            "release", "submitted", "autograded", "feedback", "gradebook.db", "__pycache__", "*.csv"))
        for name in names:
            subprocess.run(
                [sys.executable, "-m", "nbgrader", "generate_assignment", name, "--force", "--log-level=WARN"],
                cwd=work, env=nbgrader_env(), check=True)
        return {name: nbformat.read(work / "release" / name / f"{name}.ipynb", as_version=4) for name in names}


def _tags(cell) -> list[str]:
    return list(cell.metadata.get("tags", []))


def student_notebook(release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(release)
    nb.cells = [cell for cell in nb.cells if ANSWER_TAG not in _tags(cell)]
    return nb


def book_page(release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(release)
    for cell in nb.cells:
        grading = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and (grading.get("solution") or grading.get("grade")):
            if SKIP_TAG not in _tags(cell):
                cell.metadata["tags"] = _tags(cell) + [SKIP_TAG]
    return nb


def render(names: list[str], course: Path = GRADER) -> dict[Path, str]:
    """Relative output path -> notebook JSON text, for every assignment in names."""
    out = {}
    for name, release in nbgrader_release(names, course).items():
        out[Path("notebooks") / f"{name}.ipynb"] = nbformat.writes(student_notebook(release)) + "\n"
        out[Path("book") / f"{name}.ipynb"] = nbformat.writes(book_page(release)) + "\n"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="assignments (default: all in grader/source)")
    parser.add_argument("--out", type=Path, default=ROOT, help="where notebooks/ and book/ go")
    args = parser.parse_args()
    for rel, text in render(args.names or assignments()).items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
