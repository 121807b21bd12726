"""`make grade` never deletes or overwrites what it did not make: every case with real files, through the real
command line (`python -m grader grade`, as `make grade` runs it).

Refused before anything is written: an OUT that is, holds or is inside SUBMISSIONS; one that holds or is inside the
course folder; a file; a non-empty folder that is no grading output; a folder whose marker is not the grader's.
Graded again into an earlier output: a late hand-in and a changed one are graded, every other row, feedback page
and autograded notebook stays byte for byte, and the instructor's own file in OUT is kept. --new, or another
course: a new dated folder beside OUT, the old one untouched.
"""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import pytest

from class_builder import submission
from course import ROOT
from fingerprint import fingerprint
from grader.grade.outfolder import MARKER

A = "ex1_format_reward"
WRONG = "re.search instead of re.match"


def _grade(submissions, out, *extra):
    return subprocess.run([sys.executable, "-m", "grader", "grade", str(submissions), "--out", str(out),
                           "--jobs", "2", *extra], capture_output=True, text=True, cwd=ROOT)


def _hand_in(root, student, kind):
    path = root / student / A / f"{A}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(submission(A, kind), encoding="utf-8")
    return path


def _rows(out):
    with open(out / "grades.csv", encoding="utf-8", newline="") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


def _refused(proc, *words):
    assert proc.returncode != 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    for word in words:
        assert word in proc.stderr, proc.stderr[-2000:]


def test_out_holding_the_submissions_is_refused_and_nothing_is_deleted(tmp_path):
    """The issue's case: SUBMISSIONS=danger/returned OUT=danger deleted the students' notebooks."""
    danger = tmp_path / "danger"
    _hand_in(danger / "returned", "alice", "reference")
    (danger / "notes.txt").write_text("my notes", encoding="utf-8")
    before = fingerprint(danger)
    for out in (danger, danger / "returned"):
        _refused(_grade(danger / "returned", out), "SUBMISSIONS", "换一个 OUT")
    _refused(_grade(danger / "returned", danger / "returned" / "alice" / "out"), "在 SUBMISSIONS", "里面")
    assert fingerprint(danger) == before
    assert sorted(p.name for p in danger.rglob("*")) == sorted(["returned", "alice", A, f"{A}.ipynb", "notes.txt"])


@pytest.mark.parametrize("where", ["the repository", "the course folder", "inside the course folder"])
def test_out_overlapping_the_course_is_refused(tmp_path, where):
    _hand_in(tmp_path / "returned", "alice", "reference")
    out = {"the repository": ROOT, "the course folder": ROOT / "grader",
           "inside the course folder": ROOT / "grader" / "grading-output"}[where]
    before = fingerprint(ROOT / "grader" / "source")
    _refused(_grade(tmp_path / "returned", out), "课程目录")
    assert not (ROOT / "grader" / "grading-output").exists()
    assert fingerprint(ROOT / "grader" / "source") == before


def test_a_non_empty_folder_that_is_no_grading_output_is_refused(tmp_path):
    _hand_in(tmp_path / "returned", "alice", "reference")
    out = tmp_path / "thesis"
    (out / "chapter1").mkdir(parents=True)
    (out / "chapter1" / "draft.tex").write_text("\\section{x}", encoding="utf-8")
    (out / "grades.csv").write_text("my own spreadsheet", encoding="utf-8")
    before = fingerprint(out)
    _refused(_grade(tmp_path / "returned", out), "不是空文件夹", MARKER)
    assert fingerprint(out) == before and not (out / MARKER).exists()
    # a marker someone else wrote, or a broken one, is no grader's marker either
    for text in ('{"made_by": "someone else", "kind": "one-machine"}', "{not json"):
        (out / MARKER).write_text(text, encoding="utf-8")
        _refused(_grade(tmp_path / "returned", out), MARKER)
        assert (out / "grades.csv").read_text(encoding="utf-8") == "my own spreadsheet"
    # and a file is not a folder
    _refused(_grade(tmp_path / "returned", out / "grades.csv"), "是一个文件")


@pytest.fixture(scope="module")
def graded_twice(tmp_path_factory):
    """A class of two graded into OUT; then a late hand-in (erin) and a changed one (bob fixed his answer) from
    another folder graded into the same OUT; then the first folder again with --new."""
    tmp = tmp_path_factory.mktemp("regrade")
    first, late, out = tmp / "returned", tmp / "late", tmp / "grading-output"
    _hand_in(first, "alice", "reference")
    _hand_in(first, "bob", WRONG)
    runs = [_grade(first, out)]
    (out / "notes.txt").write_text("instructor's notes", encoding="utf-8")
    before = {"rows": _rows(out), "pages": fingerprint(out / "feedback"), "autograded": fingerprint(
        out / "course" / "autograded"), "marker": json.loads((out / MARKER).read_text(encoding="utf-8"))}
    _hand_in(late, "erin", "reference")
    _hand_in(late, "bob", "reference")
    runs.append(_grade(late, out))
    after = {"rows": _rows(out), "pages": fingerprint(out / "feedback"),
             "autograded": fingerprint(out / "course" / "autograded")}
    snapshot = fingerprint(out)
    runs.append(_grade(first, out, "--new"))
    return dict(tmp=tmp, out=out, runs=runs, before=before, after=after, snapshot=snapshot)


def test_a_late_hand_in_is_graded_and_every_other_row_and_page_is_kept(graded_twice):
    first, second, _ = graded_twice["runs"]
    assert first.returncode == 0 and second.returncode == 0, second.stderr[-3000:]
    before, after, out = graded_twice["before"], graded_twice["after"], graded_twice["out"]
    assert before["rows"]["alice"]["score"] == "8" and before["rows"]["bob"]["score"] != "8"
    assert set(after["rows"]) == {"alice", "bob", "erin"}
    assert after["rows"]["alice"] == before["rows"]["alice"]
    assert after["rows"]["erin"]["score"] == "8" and after["rows"]["erin"]["status"] == "ok"
    alice = [p for p in before["pages"] if "/alice/" in p]
    assert alice and all(after["pages"][p] == before["pages"][p] for p in alice)
    assert all(after["autograded"][p] == before["autograded"][p] for p in before["autograded"] if "/alice/" in p)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "instructor's notes"
    assert "1 rows kept" in second.stderr and "2 new or changed hand-ins" in second.stderr
    assert "沿用上次的评分" in (out / "report.md").read_text(encoding="utf-8")


def test_a_changed_hand_in_is_graded_again_and_says_so(graded_twice):
    bob = graded_twice["after"]["rows"]["bob"]
    assert bob["score"] == "8" and "文件和上次评分时不同" in bob["notes"]
    page = next(p for p in graded_twice["after"]["pages"] if "/bob/" in p)
    assert graded_twice["after"]["pages"][page] != graded_twice["before"]["pages"][page]


def test_new_writes_a_dated_folder_and_leaves_the_output_alone(graded_twice):
    third = graded_twice["runs"][2]
    out, tmp = graded_twice["out"], graded_twice["tmp"]
    assert third.returncode == 0, third.stderr[-3000:]
    dated = [p for p in tmp.iterdir() if p.name.startswith("grading-output-")]
    assert len(dated) == 1 and str(dated[0]) in third.stderr
    assert fingerprint(out) == graded_twice["snapshot"]
    assert set(_rows(dated[0])) == {"alice", "bob"} and _rows(dated[0])["bob"]["score"] != "8"


def test_an_output_of_another_course_is_not_mixed_with_this_one(graded_twice, tmp_path):
    """Graded again with other tests (the marker's course digest differs): a new folder, never a mixture."""
    out = tmp_path / "old-output"
    shutil.copytree(graded_twice["out"], out)
    marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
    marker["course"] = "0" * 16
    (out / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    before = fingerprint(out)
    late = graded_twice["tmp"] / "late"
    proc = _grade(late, out, "--no-feedback")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert fingerprint(out) == before
    dated = [p for p in tmp_path.iterdir() if p.name.startswith("old-output-")]
    assert len(dated) == 1 and set(_rows(dated[0])) == {"bob", "erin"}
