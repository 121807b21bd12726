"""Real grading of real submissions, end to end: `make grade`'s pipeline (sandboxed kernels, trusted
verdicts, nbgrader's gradebook and feedback) on one class holding, for every assignment, the reference
answer, the untouched student notebook, the untouched web page notebook (what the site offers for
download), and every realistic wrong answer of tests/mutations/.

The reference scores full marks, both untouched notebooks score 0, and every wrong answer loses points
on the test cell written to catch it (the mutation table is printed at the end of the run).
"""
import csv
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course import (ASSIGNMENTS, ROOT, filled, mutated_fills, mutation_hints, mutations, reference_fills,
                    student_notebook)
from grader.grade.pipeline import grade

MUTATION_TABLE: list[str] = []  # printed at the end of the run by conftest.pytest_terminal_summary


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")[:40]


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory):
    """Every assignment's submissions, graded once: (out folder, {(student, assignment): {grade_id: (score, max)}},
    {(student, assignment): Submission})."""
    root = tmp_path_factory.mktemp("class")

    def submit(student: str, assignment: str, text: str) -> None:
        path = root / student / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    for name in ASSIGNMENTS:
        submit("reference", name, filled(name, reference_fills(name)))
        submit("untouched", name, nbformat.writes(student_notebook(name)))
        submit("web-page", name, (ROOT / "book" / f"{name}.ipynb").read_text(encoding="utf-8"))
        for label, (changes, _) in mutations(name).items():
            submit("mut-" + _slug(label), name, filled(name, mutated_fills(name, changes)))
    out = tmp_path_factory.mktemp("graded") / "out"
    subs = grade(root, out, cell_timeout=60, notebook_timeout=300)
    cells: dict = {}
    with open(out / "cells.csv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            cells.setdefault((row["student_id"], row["assignment"]), {})[row["grade_id"]] = (
                float(row["score"]), float(row["max_score"]))
    return out, cells, {(s.student, s.assignment): s for s in subs}


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_reference_scores_full_marks(graded_class, name):
    _, cells, subs = graded_class
    ref = cells[("reference", name)]
    assert ref, "no test cells graded"
    lost = {cell: s for cell, s in ref.items() if s[0] != s[1]}
    assert not lost, f"the reference answer loses points in {name}: {lost}; {subs[('reference', name)].notes}"
    assert subs[("reference", name)].status == "ok"


@pytest.mark.parametrize("student", ["untouched", "web-page"])
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_untouched_notebooks_score_zero(graded_class, name, student):
    """The student notebook as released, and the site's own page notebook handed in as it was downloaded."""
    _, cells, _ = graded_class
    got = cells[(student, name)]
    assert got and sum(score for score, _ in got.values()) == 0, got


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_each_mutation_loses_points_on_its_test(graded_class, name):
    _, cells, _ = graded_class
    cases = mutations(name)
    assert len(cases) >= 3, f"{name} needs at least three realistic wrong answers"
    rows = []
    for label, (_, target) in cases.items():
        got = cells[("mut-" + _slug(label), name)]
        score, max_score = got[target]
        total = sum(s for s, _ in got.values()), sum(m for _, m in got.values())
        verdict = "caught" if score < max_score else "MISSED"
        rows.append(f"| {name} | {label} | {target} | {score:g}/{max_score:g} | {total[0]:g}/{total[1]:g} "
                    f"| {verdict} |")
    MUTATION_TABLE.extend(rows)
    missed = [r for r in rows if r.endswith("MISSED |")]
    assert not missed, "mutations that lose no points on their test:\n" + "\n".join(missed)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_feedback_for_every_graded_notebook(graded_class, name):
    out, cells, _ = graded_class
    for student, assignment in cells:
        if assignment == name:
            page = out / "feedback" / student / name / f"{name}.html"
            assert page.is_file(), page


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_each_mistakes_feedback_page_gives_its_hint_and_the_students_value(graded_class, name):
    """The page of every realistic mistake says what check() said: a ✗ line with the value the student's code
    gave ("得到 …"; or that it hung, or what it raised) and the mistake's one hint (tests/mutations/ HINTS), written
    by the grader from the records."""
    import html

    out, _, _ = graded_class
    missing = []
    for label in mutations(name):
        want = mutation_hints(name)[label]
        if want is None:
            continue
        page = html.unescape((out / "feedback" / ("mut-" + _slug(label)) / name / f"{name}.html")
                             .read_text(encoding="utf-8"))
        shown = any(word in page for word in ("得到", "程序卡住了", "抛出"))   # the value, a hang, an exception
        if want not in page or not shown:
            missing.append(label)
    assert not missing, f"{name}: pages without their hint or the student's value: {missing}"


def test_plain_nbgrader_autograde_in_the_course_folder_is_sandboxed_and_judged_outside(tmp_path, graded_class):
    """An instructor who runs `nbgrader autograde` in the course folder (no `make grade`) gets the same
    scores: the course's nbgrader_config.py executes in the sandbox and judges outside the kernel."""
    from course import cell_scores, run_nbgrader, submit
    from grader.course import copy_course

    _, cells, _ = graded_class
    name = ASSIGNMENTS[0]
    label, (changes, _) = next(iter(mutations(name).items()))
    course = copy_course(tmp_path / "course")
    run_nbgrader(course, "generate_assignment", name, "--force")
    submit(course, name, "reference", filled(name, reference_fills(name)))
    submit(course, name, "wrong", filled(name, mutated_fills(name, changes)))
    run_nbgrader(course, "autograde", name, "--force")
    scores = cell_scores(course, name)
    assert scores["reference"] == cells[("reference", name)]
    assert scores["wrong"] == cells[("mut-" + _slug(label), name)]


def test_the_gradebooks_alembic_revision_is_what_nbgrader_asks_alembic_for():
    """grader.grade.gradebook answers nbgrader's get_alembic_version in-process (it would start `alembic heads` for
    every new gradebook): the same revision the alembic command gives."""
    import nbgrader.api
    import nbgrader.dbutil
    from grader.grade.gradebook import alembic_head

    assert nbgrader.api.get_alembic_version is alembic_head
    alembic = Path(sys.executable).parent / "alembic"
    with nbgrader.dbutil._temp_alembic_ini("sqlite:////nonexistent/gradebook.db") as ini:
        heads = subprocess.run([str(alembic), "-c", ini, "heads"], capture_output=True, text=True, check=True).stdout
    assert heads.split()[0] == alembic_head()
