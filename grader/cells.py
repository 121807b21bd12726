"""What an nbgrader cell is, asked once: a thin layer over nbgrader.utils that never trusts the metadata.

nbgrader's own tests (`nbgrader.utils.is_grade`, `is_solution`, `is_locked`) assume `metadata.nbgrader` is
a dict; in a submission it can be anything (a string, a list, null). Here a malformed value counts as no
nbgrader metadata at all, and the tests are nbgrader's own.

    grade_id(cell)     the cell's grade_id (a str) or None
    is_test(cell)      an autograded test cell: grade, not solution, code
    is_answer(cell)    a solution cell (where the student writes)
    is_locked(cell)    a locked cell that is not an answer (tests, read-only code)
"""
from __future__ import annotations

from nbformat import NotebookNode
from nbgrader import utils

DEMO_TAG = "demo"   # read-only cells that only teach: not run while grading


def nbgrader_metadata(cell) -> dict:
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    value = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return value if isinstance(value, dict) else {}


def tags(cell) -> list[str]:
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    value = metadata.get("tags") if isinstance(metadata, dict) else None
    return [t for t in value if isinstance(t, str)] if isinstance(value, list) else []


def _sane(cell) -> dict:
    """A stand-in with only the nbgrader metadata (or none), for nbgrader.utils to look at."""
    meta = nbgrader_metadata(cell)
    return NotebookNode({"cell_type": cell.get("cell_type"),
                               "metadata": NotebookNode({"nbgrader": NotebookNode(meta)} if meta else {})})


def grade_id(cell) -> str | None:
    value = nbgrader_metadata(cell).get("grade_id")
    return value if isinstance(value, str) else None


def is_grade(cell) -> bool:
    return bool(utils.is_grade(_sane(cell)))


def is_answer(cell) -> bool:
    return bool(utils.is_solution(_sane(cell)))


def is_locked(cell) -> bool:
    return bool(utils.is_locked(_sane(cell))) and not is_answer(cell)


def is_test(cell) -> bool:
    return cell.get("cell_type") == "code" and is_grade(cell) and not is_answer(cell)


def is_demo(cell) -> bool:
    return cell.get("cell_type") == "code" and DEMO_TAG in tags(cell) and not (is_grade(cell) or is_answer(cell))
