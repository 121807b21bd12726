"""nbgrader end to end on real files: release, submit, autograde, feedback, export.

The reference answer scores full marks, the untouched release scores 0, and every
realistic wrong answer loses points on the test cell written to catch it.
"""
import csv

import pytest

from course import ASSIGNMENTS, filled, mutated_fills, mutations, reference_fills, student_notebook
from grading import cell_scores, nbgrader, scratch_course, submit

import nbformat

MUTATION_TABLE: list[str] = []  # printed at the end of the run by conftest.pytest_terminal_summary


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")[:40]


@pytest.fixture(scope="module", params=ASSIGNMENTS)
def graded(request, tmp_path_factory):
    """One scratch course per assignment with every submission autograded; yields (name, course, scores)."""
    name = request.param
    course = scratch_course(tmp_path_factory.mktemp(name))
    nbgrader(course, "generate_assignment", name, "--force")
    submit(course, name, "reference", filled(name, reference_fills(name)))
    submit(course, name, "untouched", nbformat.writes(student_notebook(name)))
    for label, (changes, _) in mutations(name).items():
        submit(course, name, "mut-" + _slug(label), filled(name, mutated_fills(name, changes)))
    nbgrader(course, "autograde", name, "--force")
    nbgrader(course, "generate_feedback", name, "--force")
    nbgrader(course, "export")
    yield name, course, cell_scores(course, name)


def test_reference_scores_full_marks(graded):
    name, _, scores = graded
    ref = scores["reference"]
    assert ref, "no test cells graded"
    lost = {cell: s for cell, s in ref.items() if s[0] != s[1]}
    assert not lost, f"the reference answer loses points in {name}: {lost}"


def test_untouched_release_scores_zero(graded):
    _, _, scores = graded
    assert sum(score for score, _ in scores["untouched"].values()) == 0


def test_each_mutation_loses_points_on_its_test(graded):
    name, _, scores = graded
    cases = mutations(name)
    assert len(cases) >= 3, f"{name} needs at least three realistic wrong answers"
    rows = []
    for label, (_, target) in cases.items():
        got = scores["mut-" + _slug(label)]
        score, max_score = got[target]
        total = sum(s for s, _ in got.values()), sum(m for _, m in got.values())
        verdict = "caught" if score < max_score else "MISSED"
        rows.append(f"| {name} | {label} | {target} | {score:g}/{max_score:g} | {total[0]:g}/{total[1]:g} "
                    f"| {verdict} |")
    MUTATION_TABLE.extend(rows)
    missed = [r for r in rows if r.endswith("MISSED |")]
    assert not missed, "mutations that lose no points on their test:\n" + "\n".join(missed)


def test_feedback_and_csv_export(graded):
    name, course, scores = graded
    for student in scores:
        assert (course / "feedback" / student / name / f"{name}.html").is_file()
    with open(course / "grades.csv", newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["assignment"] == name]
    by_student = {r["student_id"]: float(r["score"]) for r in rows}
    assert by_student["reference"] == float(rows[0]["max_score"]) > 0
    assert by_student["untouched"] == 0
