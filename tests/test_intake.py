"""The grader's intake, without running anything: which files are taken, how a notebook is rebuilt on the
release, what student text becomes, what a verdict and a report may say. The graded counterparts (real
sandboxes, real classes, next to honest students) are in test_attacks.py."""
from __future__ import annotations

import copy
import csv
import json
import random
import string

import nbformat
import pytest
from hypothesis import example, given, settings, strategies as st

from grader.cells import grade_id, is_answer, is_locked, is_test
from course import (
    ASSIGNMENTS, SOURCE, filled, reference_fills, solution_lines, source_notebook, student_notebook,
)
from file_tricks import make_file_tricks
from notebook_fuzz import ODD_NAMES, make_file, mutate_json
from grader.grade.prepare import read_notebook, repair
from grader.grade.report import csv_text, md_text
from grader.grade.sanitize import clean_html, inert_markdown, inert_output
from grader.grade.submissions import collect, id_problem, printable
from grader.grade.verdict import difference

A = "ex1_format_reward"


def _release(name):
    return student_notebook(name)


# ---------------------------------------------------------------- rebuilding on the release


def _kinds(nb):
    """cell kind -> index of the first cell of that kind in nb."""
    found = {}
    for i, cell in enumerate(nb.cells):
        kind = ("answer" if is_answer(cell) else "test" if is_test(cell) else
                "demo" if "demo" in cell.metadata.get("tags", []) else
                "read-only" if is_locked(cell) else cell.cell_type)
        found.setdefault(kind, i)
    return found


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_every_cell_kind_deleted_in_turn_comes_back_from_the_release(name):
    """A deleted cell comes back as the release has it: an answer cell as the release's blanks (never the
    instructor's answer), a test cell with its hidden tests, read-only and demo cells as released."""
    release, source = _release(name), source_notebook(name)
    reference = nbformat.reads(filled(name, reference_fills(name)), as_version=4)
    hidden = {grade_id(c): c.source for c in source.cells if is_test(c)}
    for kind, index in _kinds(reference).items():
        for base in (reference, _release(name)):
            nb = copy.deepcopy(base)
            gone = nb.cells.pop(index)
            fixed, notes = repair(nb, release, source)
            text = nbformat.writes(fixed)
            if base is not reference:
                assert not [line for line in solution_lines(name) if line in text], (name, kind)
            gid = grade_id(gone)
            if gid is None:
                continue                  # markdown: the student's to delete
            restored = next(c for c in fixed.cells if grade_id(c) == gid)
            expected = hidden[gid] if is_test(gone) else next(c for c in release.cells if grade_id(c) == gid).source
            assert restored.source == expected, (name, kind)
            assert any("被删除" in n for n in notes), notes
            assert [grade_id(c) for c in fixed.cells if grade_id(c)] == \
                [grade_id(c) for c in release.cells if grade_id(c)], (name, kind)


def test_a_deleted_answer_never_brings_the_answer_back():
    nb = nbformat.reads(filled(A, reference_fills(A)), as_version=4)
    nb.cells = [c for c in nb.cells if not is_answer(c)]
    fixed, notes = repair(nb, _release(A), source_notebook(A))
    text = nbformat.writes(fixed)
    assert solution_lines(A) and not [line for line in solution_lines(A) if line in text]
    assert any("答案单元恢复为空白" in n for n in notes)


def _intake(text: str):
    """What prepare does short of writing: read, validate, rebuild, make ready for grading."""
    from grader.grade.prepare import for_grading

    nb = read_notebook(text.encode("utf-8", "surrogatepass"))
    fixed, notes = repair(nb, _release(A), source_notebook(A))
    return for_grading(fixed), notes


@settings(max_examples=150)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 5), base=st.sampled_from(["reference", "release"]))
@example(seed=1_576_533_609, count=3, base="reference")  # a test cell turned "heading" with source null: TypeError
def test_any_structural_damage_is_invalid_or_rebuilt_on_the_release(seed, count, base):
    """Random structural damage (types, cell kinds, keys, attachments, outputs, ids, sources): the intake
    either calls the file invalid (ValueError) or returns a valid notebook with exactly the release's graded
    cells, the release's locked cells, no answer the student did not write, and inert student text."""
    text = filled(A, reference_fills(A)) if base == "reference" else nbformat.writes(_release(A))
    damaged = mutate_json(text, random.Random(seed), count)
    try:
        fixed, _ = _intake(damaged)
    except ValueError:
        return
    nbformat.validate(fixed)
    nbformat.writes(fixed)
    release = _release(A)   # each graded cell exactly once (where the student put it)
    assert sorted(grade_id(c) for c in fixed.cells if grade_id(c)) == \
        sorted(grade_id(c) for c in release.cells if grade_id(c))
    hidden = {grade_id(c): c.source for c in source_notebook(A).cells if is_test(c)}
    for cell in fixed.cells:
        if is_locked(cell) and "demo" not in cell.metadata.get("tags", []):
            want = hidden.get(grade_id(cell)) or next(c.source for c in release.cells if grade_id(c) == grade_id(cell))
            assert cell.source == want
        if cell.cell_type == "markdown":
            assert "<script" not in cell.source.lower() and "onerror" not in cell.source.lower()
    if base == "release":
        assert not [line for line in solution_lines(A) if line in nbformat.writes(fixed)]


# ---------------------------------------------------------------- which files are taken


def _notebook_text():
    return nbformat.writes(_release(A))


def test_only_the_students_own_regular_files_are_taken(tmp_path):
    root = tmp_path / "class"
    make_file(root / "honest" / A / f"{A}.ipynb", _notebook_text(), "file")
    make_file_tricks(root, A, _notebook_text(), honest=root / "honest", instructor=SOURCE / A / f"{A}.ipynb")
    make_file(root / "misplaced" / f"{A}.ipynb", _notebook_text(), "file")
    rows = {(s.student, s.assignment): s
            for s in collect(root, ASSIGNMENTS, forbidden=[SOURCE / A / f"{A}.ipynb"])}
    assert rows[("honest", A)].status == "ok"
    for student in ("link-to-source", "link-to-classmate", "hardlink-to-source", "fifo-notebook",
                    "folder-named-like-notebook", "assignment-folder-link"):
        assert rows[(student, A)].status == "invalid" and rows[(student, A)].path is None, rows[(student, A)]
        assert "没有打开" in rows[(student, A)].notes[0]
    for twin in ("hardlink-twin-a", "hardlink-twin-b"):
        assert rows[(twin, A)].status == "conflict" and "硬链接" in rows[(twin, A)].notes[0]
    assert "讲师答案" in rows[("hardlink-to-source", A)].notes[0]
    folder_link = rows[("student-folder-link", "")]
    assert folder_link.status == "invalid" and "符号链接" in folder_link.notes[0]
    both = rows[("two-files", A)]
    assert both.status == "conflict" and both.path is None
    assert f"two-files/{A}/{A}.ipynb" in both.notes[0] and f"two-files_{A}.ipynb" in both.notes[0]
    assert rows[("misplaced", A)].status == "missing" and "不在规定位置" in " ".join(rows[("misplaced", A)].notes)


@pytest.mark.parametrize("name", ODD_NAMES)
def test_odd_student_names_are_rejected_or_taken_never_crash(tmp_path, name):
    root = tmp_path / "class"
    try:
        make_file(root / name / A / f"{A}.ipynb", _notebook_text(), "file")
    except OSError:
        pytest.skip("the file system refuses this name")
    make_file(root / "honest" / A / f"{A}.ipynb", _notebook_text(), "file")
    rows = collect(root, ASSIGNMENTS)
    assert {s.student for s in rows} == {printable(name), "honest"}
    odd = next(s for s in rows if s.student == printable(name))
    assert (odd.status == "ok") == (id_problem(name) is None)
    assert all(ch.isprintable() for ch in odd.student + "".join(odd.notes))


LOOK_ALIKES = [("alice", "аlice"),            # Cyrillic а
               ("bob", "ｂｏｂ"),              # full-width letters
               ("Zoë", "Zoe\u0308"),           # composed and decomposed ë
               ("Omar", "ΟΜΑR"),              # Greek capitals
               ("paul", "PAUL")]              # only the case


@pytest.mark.parametrize("one, other", LOOK_ALIKES)
def test_ids_a_person_cannot_tell_apart_are_flagged_and_never_graded_twice(tmp_path, one, other):
    """Both ids handed in the same assignment: a conflict, neither graded, each row naming the other; one
    handed in another assignment too: graded, with a note. A different id stays apart."""
    root = tmp_path / "class"
    other_assignment = next(a for a in ASSIGNMENTS if a != A)
    try:
        make_file(root / one / A / f"{A}.ipynb", _notebook_text(), "file")
        make_file(root / other / A / f"{A}.ipynb", _notebook_text(), "file")
        make_file(root / other / other_assignment / f"{other_assignment}.ipynb", _notebook_text(), "file")
    except OSError:
        pytest.skip("the file system refuses this name")
    make_file(root / "carol" / A / f"{A}.ipynb", _notebook_text(), "file")
    rows = {(s.student, s.assignment): s for s in collect(root, ASSIGNMENTS)}
    if (other, A) not in rows:
        pytest.skip("the file system stores both names as one")
    for me, them in ((one, other), (other, one)):
        row = rows[(me, A)]
        assert row.status == "conflict" and row.path is None, row
        assert printable(them) in row.notes[0] and "看起来一样" in row.notes[0]
    extra = rows[(other, other_assignment)]
    assert extra.status == "ok" and extra.path is not None and "看起来一样" in extra.notes[0]
    assert rows[("carol", A)].status == "ok" and not rows[("carol", A)].notes


@given(st.text(min_size=0, max_size=40))
def test_an_accepted_id_is_safe_for_paths_globs_and_the_gradebook(name):
    if id_problem(name) is None:
        assert name == name.strip() and name and not name.startswith(".") and len(name) <= 128
        assert not set(name) & set("/\\*?[]") and name.isprintable()


# ---------------------------------------------------------------- nothing active


ACTIVE = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "[a](javascript:alert(3))",
          '<a href="JaVaScRiPt:alert(4)">b</a>', '<iframe src="javascript:alert(5)"></iframe>',
          "<svg onload=alert(6)></svg>", "![p](https://evil.example/pixel.png)",
          '<img src="https://evil.example/p.png">', "<style>@import url(https://evil.example/x.css)</style>",
          '<div style="background:url(https://evil.example/bg.png)">x</div>', r"$\href{javascript:alert(7)}{x}$",
          '<a href="data:text/html,<script>alert(8)</script>">c</a>', '<meta http-equiv="refresh" content="0">',
          "<base href=https://evil.example/>", "<form action=https://evil.example><button>go</button></form>",
          "```\n[d](javascript:alert(9))\n\n\n```"]


ACTIVE_TAGS = {"script", "iframe", "style", "meta", "base", "form", "object", "embed", "link", "svg", "math"}


def _active(html: str) -> list[str]:
    """What in an HTML fragment could run, load or navigate: active tags, event handlers, style, URLs that
    are scripts or leave the page (an <a href> to http is fine: nothing happens until it is clicked)."""
    from html.parser import HTMLParser

    found = []

    class Finder(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag in ACTIVE_TAGS:
                found.append(f"<{tag}>")
            for name, value in attrs:
                value = (value or "").strip().lower()
                if name.startswith("on") or name in ("style", "action", "formaction", "srcset"):
                    found.append(f"{tag}[{name}]")
                elif name in ("href", "src") and (value.startswith(("javascript:", "vbscript:", "data:text"))
                                                  or (name == "src" and not value.startswith("data:image/"))):
                    found.append(f"{tag}[{name}={value[:30]}]")

        def handle_data(self, data):
            if "\\href" in data or "\\require" in data:
                found.append("mathjax command")

    Finder().feed(html)
    return found


@pytest.mark.parametrize("payload", ACTIVE)
def test_student_markdown_becomes_inert(payload):
    html, _ = inert_markdown(f"# 标题\n\n{payload}\n\n正文")
    assert not _active(html), (payload, html)
    assert "\n" not in html and html.startswith("<div")


@given(st.text(alphabet=string.printable + "<>\"'=/:\u200b", max_size=200))
def test_no_markup_survives_as_active_content(text):
    assert not _active(clean_html(text))


def test_outputs_keep_only_inert_types():
    out = inert_output({"output_type": "display_data", "metadata": {"image/png": {"width": "1 onload=alert(1)"}},
                        "data": {"text/html": ACTIVE[0] + "<b>ok</b>", "application/javascript": "alert(1)",
                                 "image/svg+xml": "<svg onload=alert(1)/>", "text/markdown": ACTIVE[2],
                                 "application/vnd.jupyter.widget-view+json": {"model_id": "x"}}})
    assert set(out["data"]) == {"text/html"} and out["metadata"] == {}
    assert "<b>ok</b>" in out["data"]["text/html"] and not _active(out["data"]["text/html"])


# ---------------------------------------------------------------- what a verdict and a report may say


@given(got=st.recursive(st.one_of(st.text(min_size=6), st.floats(allow_nan=False), st.integers()),
                        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                            st.sampled_from(["ok", "raised", "tensor", "dict", "unsupported"]), inner, max_size=2),
                        max_leaves=8),
       want=st.sampled_from([1.0, "x", [1.0, 2.0], {"ok": 1.0}, {"raised": "ValueError"},
                             {"tensor": [1.0], "dtype": "float32", "shape": [1]}]))
def test_a_hidden_verdict_never_quotes_the_students_values(got, want):
    said = difference(got, want, show=False) or ""
    strings = [got] if isinstance(got, str) else []
    stack = [got]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack += list(x.values())
            strings += [v for v in x.values() if isinstance(v, str)]
        elif isinstance(x, list):
            stack += x
            strings += [v for v in x if isinstance(v, str)]
    assert not [s for s in strings if s in said and len(s) >= 6 and s not in ("ValueError",)], said


@given(value=st.one_of(st.text(max_size=30), st.lists(st.text(max_size=12), max_size=3)),
       which=st.integers(0, 10**6), start=st.integers(0, 40))
def test_a_visible_verdict_never_quotes_a_hidden_string_or_eight_characters_of_one(value, which, start):
    """A student's value that carries a hidden test's string (whole, or any eight characters of it in a row,
    anywhere in the value) is named by its kind, never quoted; the expected value still is."""
    from course import source_notebook
    from grader.grade.redact import Redactor, hidden_strings

    hidden = hidden_strings(source_notebook(A))
    long = [h for h in hidden if len(h) >= 8]
    piece = long[which % len(long)]
    piece = piece[start % (len(piece) - 7):][:8 + start % 5]
    got = value + piece if isinstance(value, str) else value + [piece]
    said = difference(got, 1.0, show=True, redact=Redactor(hidden)) or ""
    assert "含隐藏测试里的内容，不显示" in said and piece not in said and said.startswith("结果：期望"), said
    assert not Redactor(hidden).leaks(said.split("得到")[-1]), said


def test_csv_cells_cannot_be_formulas_and_markdown_cannot_be_active(tmp_path):
    for text in ["=HYPERLINK(\"http://evil\")", "+1", "-2", "@SUM(A1)", "\tx", "\rx"]:
        path = tmp_path / "x.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerow([csv_text(text)])
        cell = next(csv.reader(open(path, encoding="utf-8", newline="")))[0]
        assert cell.startswith("'"), cell
    assert csv_text("张三") == "张三"
    shown = md_text("x|y [a](javascript:1) <img src=x onerror=1> ![i](http://e/p.png)\nnext")
    assert "|" not in shown.replace("\\|", "") and "<img" not in shown and "](" not in shown.replace("\\](", "")
    assert "\n" not in shown


def test_an_id_that_looks_like_a_file_name_still_reads_back(tmp_path):
    """JSON round trip of printable(): a rejected id's rendering is one line of plain text."""
    assert json.loads(json.dumps(printable("a\x00b\nc"))) == "a\\x00b\\nc"
