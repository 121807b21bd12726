"""make grade on a class that does everything a real class does: each fault ends as a clear row.

One folder of submissions (both layouts) is graded twice, concurrently, into two output
folders; the two grades.csv must be identical and the submissions untouched.
"""
import copy
import csv
import json
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest

from course import filled, reference_fills, student_notebook
from fingerprint import fingerprint
from grader.grade.pipeline import grade

A = "ex1_format_reward"


def _answer_cell(nb):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _with_answer(transform):
    nb = nbformat.reads(filled(A, reference_fills(A)), as_version=4)
    cell = _answer_cell(nb)
    cell.source = transform(cell.source)
    return nb


def _class_folder(root):
    """student -> what they did; written as nbgrader's nested layout or as flat files."""
    reference = nbformat.reads(filled(A, reference_fills(A)), as_version=4)
    subs = {
        "alice": reference,
        "bob": student_notebook(A),
        "carol": _with_answer(lambda s: s.replace("    return 1.0 if match else 0.0",
                                                  "    while True:\n        pass")),
        "dave": _with_answer(lambda s: s.replace("    return 1.0 if match else 0.0",
                                                 "    raise RuntimeError('oops')")),
        "erin": _with_answer(lambda s: s.replace(
            "    return 1.0 if match else 0.0",
            "    import warnings\n    warnings.warn('a UserWarning on stderr', UserWarning)\n"
            "    return 1.0 if match else 0.0")),
        "judy": _with_answer(lambda s: s + "\nprint('x' * 5_000_000)\n"),
        "oscar": _with_answer(lambda s: "import agentrl_ref.checks as _c\n_c.run_test = lambda *a, **k: None\n"
                                        "import builtins\nbuiltins.AssertionError = Warning\n"
                                        + s.replace("    return 1.0 if match else 0.0", "    return 1.0")),
    }
    frank = copy.deepcopy(reference)
    frank.cells = [c for c in frank.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "test_multiline"]
    subs["frank"] = frank
    grace = copy.deepcopy(student_notebook(A))  # pasted the answer cell, filled the copy
    answer = _answer_cell(grace)
    grace.cells.insert(grace.cells.index(answer) + 1, copy.deepcopy(_answer_cell(reference)))
    subs["grace"] = grace
    heidi = copy.deepcopy(reference)
    retyped = _answer_cell(heidi)
    heidi.cells[heidi.cells.index(retyped)] = nbformat.v4.new_markdown_cell(retyped.source, metadata=retyped.metadata)
    subs["heidi"] = heidi
    ivan = copy.deepcopy(reference)
    _cell(ivan, "test_repeated_nested").source = "pass"
    _cell(ivan, "test_anchored_both_ends").source = "pass"
    subs["ivan"] = ivan

    for i, (student, nb) in enumerate(sorted(subs.items())):
        if i % 2:  # flat layout
            path = root / f"{student}_{A}.ipynb"
        else:
            path = root / student / A / f"{A}.ipynb"
            path.parent.mkdir(parents=True)
        path.write_text(json.dumps(nb, indent=1), encoding="utf-8")  # as saved, duplicate cell ids included
    (root / f"mallory_{A}.ipynb").write_text('{"cells": [', encoding="utf-8")  # not JSON
    (root / "niaj" / A).mkdir(parents=True)  # handed in nothing
    return root


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = _class_folder(tmp_path_factory.mktemp("class"))
    before = fingerprint(root)
    outs = [tmp_path_factory.mktemp(f"run{i}") / "out" for i in range(2)]
    with ThreadPoolExecutor(2) as pool:
        # the second run writes no feedback pages (make grade --no-feedback): the same grades all the same
        runs = list(pool.map(lambda i: grade(root, outs[i], cell_timeout=10, notebook_timeout=40, feedback=i == 0),
                             range(2)))
    rows = {}
    with open(outs[0] / "grades.csv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            rows[row["student_id"]] = row
    cells = {}
    with open(outs[0] / "cells.csv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            cells.setdefault(row["student_id"], {})[row["grade_id"]] = float(row["score"])
    return dict(root=root, before=before, outs=outs, rows=rows, cells=cells, runs=runs)


def _score(row):
    return float(row["score"]), float(row["max_score"])


def test_submissions_untouched_and_two_runs_agree(graded):
    assert fingerprint(graded["root"]) == graded["before"]
    first, second = ((out / "grades.csv").read_bytes() for out in graded["outs"])
    assert first == second
    with_pages, without = (sorted(p.name for p in (out / "feedback").rglob("*.html")) for out in graded["outs"])
    assert len(with_pages) >= 10 and without == []   # the second run: --no-feedback


def test_every_student_has_a_row(graded):
    assert set(graded["rows"]) == {"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
                                   "ivan", "judy", "mallory", "niaj", "oscar"}


@pytest.mark.parametrize("student", ["alice", "erin", "frank", "grace", "heidi", "ivan", "judy"])
def test_correct_answers_get_full_marks_whatever_else_happened(graded, student):
    score, top = _score(graded["rows"][student])
    assert score == top > 0, graded["rows"][student]
    assert graded["rows"][student]["status"] == "ok"


@pytest.mark.parametrize("student, note", [
    ("frank", "被删除"), ("grace", "重复的答案单元"), ("heidi", "类型被改成"), ("ivan", "疑似篡改"),
])
def test_structural_faults_are_reported(graded, student, note):
    assert note in graded["rows"][student]["notes"]


@pytest.mark.parametrize("student, status", [
    ("bob", "ok"), ("carol", "timeout"), ("dave", "ok"), ("mallory", "invalid"), ("niaj", "missing"),
])
def test_failures_score_zero_with_a_clear_status(graded, student, status):
    row = graded["rows"][student]
    assert row["status"] == status and float(row["score"]) == 0, row


def test_monkeypatching_student_is_caught_and_flagged(graded):
    row = graded["rows"]["oscar"]
    score, top = _score(row)
    assert score < top / 2, row
    assert "可疑代码" in row["notes"]
    hidden_only = ["test_anchored_both_ends", "test_robust_inputs", "test_matches_reference"]
    assert all(graded["cells"]["oscar"][gid] == 0 for gid in hidden_only)


def test_huge_output_is_capped_in_feedback(graded):
    page = graded["outs"][0] / "feedback" / "judy" / A / f"{A}.html"
    assert page.is_file() and page.stat().st_size < 2_000_000


def test_report_names_failing_cells(graded):
    report = (graded["outs"][0] / "report.md").read_text(encoding="utf-8")
    assert "失分最多的测试单元" in report and "timeout 1" in report and "invalid 1" in report
