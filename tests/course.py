"""What the tests need to know about the course: assignments, their solutions, hidden tests and mutations."""
from __future__ import annotations

from pathlib import Path

import nbformat

from blanks import BLANK, has_blanks, solution_fills

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
