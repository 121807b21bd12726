"""Student notebooks and book pages are generated from grader/source and never drift from it."""
import json

import pytest

from grader.publish import release
from grader.publish.blanks import BLANK
from course import ASSIGNMENTS, ROOT, hidden_test_lines, reference_fills, source_notebook, student_notebook


@pytest.fixture(scope="module")
def regenerated():
    return release.render(ASSIGNMENTS)


def test_every_assignment_has_a_student_notebook_and_a_page():
    assert ASSIGNMENTS, "no assignment in grader/source"
    for name in ASSIGNMENTS:
        assert (ROOT / "notebooks" / f"{name}.ipynb").is_file()
        assert (ROOT / "book" / f"{name}.ipynb").is_file()


def test_committed_files_match_a_fresh_release(regenerated):
    drifted = [str(rel) for rel, text in regenerated.items() if (ROOT / rel).read_text(encoding="utf-8") != text]
    assert not drifted, f"run `make release` and commit: {drifted} differ from grader/source"


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_student_notebook_keeps_the_seed_blank_style(name):
    nb = student_notebook(name)
    solution_cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert solution_cells
    text = "\n".join(c.source for c in solution_cells)
    assert text.count(BLANK) == len(reference_fills(name))
    assert "NotImplementedError" not in text and "# BLANK" not in text and "TODO" in text


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_release_has_no_solution_or_hidden_tests(name, regenerated):
    student = (ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8")
    page = (ROOT / "book" / f"{name}.ipynb").read_text(encoding="utf-8")
    for fill in reference_fills(name):
        assert json.dumps(fill)[1:-1] not in student, f"solution {fill!r} leaks into the student notebook"
    for line in hidden_test_lines(name):
        escaped = json.dumps(line)[1:-1]
        assert escaped not in student and escaped not in page, f"hidden test line leaks: {line!r}"
    assert "BEGIN SOLUTION" not in student and "HIDDEN TESTS" not in student


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_book_page_runs_no_blank_or_test_cell(name):
    import nbformat

    page = nbformat.read(ROOT / "book" / f"{name}.ipynb", as_version=4)
    for cell in page.cells:
        meta = cell.metadata.get("nbgrader", {})
        needs_answers = meta.get("solution") or meta.get("grade") or release.SELF_CHECK.search(cell.source)
        if cell.cell_type == "code" and needs_answers:
            assert "skip-execution" in cell.metadata.get("tags", []), cell.source[:60]
    answers = [c for c in page.cells if "answer" in c.metadata.get("tags", [])]
    assert answers and all("<details>" in c.source for c in answers), "the page shows the collapsed 答案"
    assert not [c for c in student_notebook(name).cells if "answer" in c.metadata.get("tags", [])]
    assert len(source_notebook(name).cells) == len(page.cells)
