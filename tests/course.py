"""What the tests need to know about the course: assignments, their solutions, hidden tests and mutations."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat

from grader.publish.blanks import BLANK, has_blanks, solution_fills

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "grader" / "source"
ASSIGNMENTS = sorted(p.name for p in SOURCE.iterdir() if (p / f"{p.name}.ipynb").is_file())

# nbclient gives a cell's outputs 4 s after its reply to be read, then cancels the reading and goes on without
# a word: on a busy machine a test would see a cell with fewer outputs than it made. Tests that read outputs
# wait longer, and if the outputs still do not come the cell fails with "Timeout waiting for IOPub output".
KEEP_OUTPUTS = {"iopub_timeout": 120, "raise_on_iopub_timeout": True}


def source_notebook(assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(SOURCE / assignment / f"{assignment}.ipynb", as_version=4)


def student_notebook(assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / "notebooks" / f"{assignment}.ipynb", as_version=4)


def reference_fills(assignment: str) -> list[str]:
    """The instructor's text for every blank of the assignment, in notebook order."""
    return [fill for cell in source_notebook(assignment).cells
            if cell.cell_type == "code" and has_blanks(cell.source) for fill in solution_fills(cell.source)]


def solution_lines(assignment: str) -> list[str]:
    """Lines of the instructor's answers that the release does not show (what must never come back)."""
    release = "\n".join(c.source for c in student_notebook(assignment).cells)
    lines = [line.strip() for fill in reference_fills(assignment) for line in fill.split("\n")]
    return [line for line in lines if len(line) > 8 and line not in release]


def execution_time(stamp: str) -> float:
    """Seconds since the epoch of a timestamp nbclient writes into metadata.execution."""
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def hidden_test_lines(assignment: str) -> list[str]:
    """Every non-trivial line between BEGIN/END HIDDEN TESTS in the instructor notebook."""
    lines, inside = [], False
    for cell in source_notebook(assignment).cells:
        for line in cell.source.split("\n"):
            if "### BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "### END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) > 12:
                lines.append(line.strip())
    return lines


def filled(assignment: str, fills: list[str]) -> str:
    """The student notebook with its blanks filled in order, as a student would submit it."""
    nb = student_notebook(assignment)
    remaining = list(fills)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            while BLANK in cell.source and remaining:
                cell.source = cell.source.replace(BLANK, remaining.pop(0), 1)
    assert not remaining, f"more fills than blanks in {assignment}"
    return nbformat.writes(nb)


def mutations(assignment: str) -> dict[str, tuple[dict[int, str], str]]:
    """Realistic wrong answers from tests/mutations/<assignment>.py:
    name -> ({blank index: wrong text}, grade_id of the test cell that must lose points)."""
    path = ROOT / "tests" / "mutations" / f"{assignment}.py"
    if not path.is_file():
        return {}
    namespace: dict = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    return namespace["MUTATIONS"]


def mutated_fills(assignment: str, changes: dict[int, str]) -> list[str]:
    fills = reference_fills(assignment)
    for index, text in changes.items():
        fills[index] = text
    return fills


def run_nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """Run one nbgrader command in a course folder, as an instructor would; raise with its output if it fails."""
    from grader.course import nbgrader_env

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
    """student -> grade_id -> (score, max_score) for every autograded test cell of a course's gradebook."""
    from nbgrader.api import Gradebook

    out: dict[str, dict[str, tuple[float, float]]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for sub in gb.assignment_submissions(assignment):
            notebook = gb.find_submission_notebook(assignment, assignment, sub.student_id)
            out[sub.student_id] = {g.name: (g.score, g.max_score) for g in notebook.grades}
    return out


def mutation_hints(assignment: str) -> dict[str, str | None]:
    """label -> a piece of the one hint every failing visible test gives for that mistake (HINTS in
    tests/mutations/<assignment>.py); None: its visible tests pass (a hidden test catches it)."""
    path = ROOT / "tests" / "mutations" / f"{assignment}.py"
    namespace: dict = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    return namespace.get("HINTS", {})
