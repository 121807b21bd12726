"""Simulated classes: folders of submissions made from the reference, the release and the mutations."""
from __future__ import annotations

import random
from pathlib import Path

import nbformat

from course import ASSIGNMENTS, filled, mutated_fills, mutations, reference_fills, student_notebook


def answer_kinds(assignment: str) -> list[str]:
    return ["reference", "untouched", *sorted(mutations(assignment))]


def submission(assignment: str, kind: str) -> str:
    if kind == "reference":
        return filled(assignment, reference_fills(assignment))
    if kind == "untouched":
        return nbformat.writes(student_notebook(assignment))
    changes, _ = mutations(assignment)[kind]
    return filled(assignment, mutated_fills(assignment, changes))


def write_class(root: Path, students: int, seed: int = 0, assignments=ASSIGNMENTS) -> dict:
    """students × assignments notebooks in nbgrader's layout; student i's answer kinds drawn with a seed."""
    rng = random.Random(seed)
    plan = {}
    for i in range(students):
        student = f"s{i:03d}"
        for assignment in assignments:
            kinds = answer_kinds(assignment)
            kind = kinds[i] if i < len(kinds) else rng.choice(kinds)
            path = root / student / assignment / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(submission(assignment, kind), encoding="utf-8")
            plan[(student, assignment)] = kind
    return plan
