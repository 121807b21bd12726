"""What a student reads on the feedback page, in a real headless Chromium: what check() told them.

One class of exercises 1 and 3 (no torch), graded once through the command line as `make grade` runs it, in the
sandbox: right answers, realistic mistakes, an untouched notebook, and a notebook whose answer cell never ends.

- each mistake's page shows, in its failing test cell, the visible test's input, the student's value, the expected
  value and the mistake's one hint (tests/mutations/ HINTS), rebuilt outside the kernel;
- the hanging notebook is `timeout` in grades.csv and report.md, and its page says which cell ran too long;
- the page is nbgrader's frame in Chinese (no Score, Test cell, Student's answer), hidden tests name only the
  property that was wrong (no internal index such as 结果[2028]), and no hidden test's string is on any page;
- no page asks for anything off the host: MathJax comes from the feedback folder itself, and renders;
- report.md has a row per student and flags the untouched notebook.
"""
from __future__ import annotations

import csv
import subprocess
import sys

import nbformat
import pytest

from class_builder import submission
from course import ROOT, mutation_hints, source_notebook
from grader.grade.redact import Redactor, hidden_strings
from grader.grade.marks import verdict_outputs

EX1, EX3 = "ex1_format_reward", "ex3_loss_mask"
MISTAKES = {   # student -> (assignment, mutation label, the test cell that fails)
    "bob": (EX1, "re.search instead of re.match", "test_anchored_both_ends"),
    "carol": (EX1, "no re.DOTALL", "test_multiline"),
    "dave": (EX3, "mask[:-1]: shifted the wrong way", "test_shift"),
    "erin": (EX3, "tool output trained too", "test_raw_mask"),
}
CELL_TIMEOUT = 5


def _hanging(assignment: str) -> str:
    """The reference answer with `while True: pass` before the function is defined, and a markdown cell of the
    student's own with a formula (MathJax must render it from the page's folder)."""
    nb = nbformat.reads(submission(assignment, "reference"), as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    answer.source = "while True:\n    pass\n\n" + answer.source
    nb.cells.insert(nb.cells.index(answer), nbformat.v4.new_markdown_cell("我的笔记：$x^2 + 1$"))
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("feedback") / "returned"
    hand_ins = {("alice", EX1): submission(EX1, "reference"), ("alice", EX3): submission(EX3, "reference"),
                ("frank", EX3): submission(EX3, "untouched"), ("grace", EX1): _hanging(EX1)}
    for student, (assignment, label, _) in MISTAKES.items():
        hand_ins[(student, assignment)] = submission(assignment, label)
    for (student, assignment), text in hand_ins.items():
        path = root / student / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
    out = root.parent / "grading-output"
    proc = subprocess.run([sys.executable, "-m", "grader", "grade", str(root), "--out", str(out), "--jobs", "2",
                           "--cell-timeout", str(CELL_TIMEOUT), "--notebook-timeout", "200"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(out / "grades.csv", encoding="utf-8", newline="") as f:
        rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}
    return dict(out=out, rows=rows, report=(out / "report.md").read_text(encoding="utf-8"))


def _page(graded, student: str, assignment: str):
    return graded["out"] / "feedback" / student / assignment / f"{assignment}.html"


@pytest.fixture(scope="module")
def feedback_tabs(browser, graded):
    """The module's pages, opened from disk in one context (the feedback folder's listing keeps its renderer)."""
    from browser_tabs import SharedTabs

    tabs = SharedTabs(browser, (graded["out"] / "feedback").as_uri())
    yield tabs
    tabs.close()


def _open(tabs, path):
    """The page in Chromium, opened from disk as a student opens it: its text, every request it made, and how many
    formulas MathJax rendered."""
    page = tabs.new_page(viewport={"width": 1200, "height": 900})
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri(), wait_until="load")
    page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise"
                  " ? MathJax.startup.promise.then(() => true) : false")   # MathJax typesets after load
    return {"text": page.inner_text("body"), "requests": requests, "page": page,
            "formulas": page.evaluate("() => document.querySelectorAll('mjx-container').length"),
            "outputs": page.evaluate("() => [...document.querySelectorAll('.output_area')].map(e => e.innerText)")}


def _cell_text(browser_page, grade_id: str) -> str:
    """The text of one test cell's panel and its verdict below it."""
    return browser_page.evaluate("""(gid) => {
        const anchor = document.querySelector(`a[name="${gid}"]`);
        let cell = anchor.closest('.cell');
        return cell ? cell.innerText : '';
    }""", grade_id)


@pytest.mark.parametrize("student", sorted(MISTAKES))
def test_each_mistake_page_shows_input_value_expected_and_its_hint(graded, feedback_tabs, student, artifacts):
    assignment, label, cell = MISTAKES[student]
    seen = _open(feedback_tabs, _page(graded, student, assignment))
    text = _cell_text(seen["page"], cell)
    seen["page"].screenshot(path=str(artifacts / f"feedback-{student}.png"), full_page=False)
    seen["page"].close()
    assert "✗" in text and "得到" in text and "期望" in text, text
    assert "提示：" in text and mutation_hints(assignment)[label] in text, text
    assert "没有通过或没有跑完" not in text


def test_the_hint_is_written_by_the_grader_not_taken_from_the_kernel(graded):
    """The kernel's own report (its error output) is in the instructor's autograded copy only; the page's lines are
    the verdict's."""
    assignment, label, cell = MISTAKES["dave"]
    kept = nbformat.read(graded["out"] / "course" / "autograded" / "dave" / assignment / f"{assignment}.ipynb", 4)
    test = next(c for c in kept.cells if c.metadata.get("nbgrader", {}).get("grade_id") == cell)
    verdict = verdict_outputs(test)[-1]
    assert any(mutation_hints(assignment)[label] in line for line in verdict["traceback"])
    assert any("[内核里的报错]" in o.get("text", "") for o in test.outputs if o.get("output_type") == "stream")


def test_a_hanging_cell_is_a_timeout_in_grades_report_and_page(graded, feedback_tabs):
    row = graded["rows"][("grace", EX1)]
    assert row["status"] == "timeout" and float(row["score"]) == 0, row
    assert f"运行超过 {CELL_TIMEOUT} 秒" in row["notes"], row
    flagged = [line for line in graded["report"].splitlines() if line.startswith("| grace | ex1_format_reward |")]
    assert flagged and "timeout" in flagged[0] and f"运行超过 {CELL_TIMEOUT} 秒" in flagged[0], flagged
    seen = _open(feedback_tabs, _page(graded, "grace", EX1))
    seen["page"].close()
    assert f"评分时这一格运行超过 {CELL_TIMEOUT} 秒，被中断" in seen["text"]
    assert "用到的名字还没有定义" in seen["text"]        # the test cells below it: why they did not run


def test_every_page_is_in_chinese_local_and_quotes_nothing_hidden(graded, feedback_tabs):
    """Every page, opened from disk: nbgrader's frame in Chinese, hidden verdicts without internal ids, no request
    off the host (nor outside the feedback folder: MathJax is its own copy), and no hidden test's string in a
    student's value the verdicts quote."""
    feedback = graded["out"] / "feedback"
    assert (feedback / ".mathjax" / "tex-mml-svg.js").is_file()
    pages = sorted(feedback.rglob("*.html"))
    assert len(pages) == 8
    for path in pages:
        seen = _open(feedback_tabs, path)
        seen["page"].close()
        text = seen["text"]
        for english in ("Score", "Test cell", "Student's answer", "(Top)", "Comments", "demo cell"):
            assert english not in text, (path, english)
        assert "得分：" in text and "回到顶部" in text, path
        assert "结果[" not in text and "结果.ok" not in text, path
        off_host = [u for u in seen["requests"] if not u.startswith(feedback.as_uri())]
        assert off_host == [], (path, off_host)
        assert any(u.endswith("/.mathjax/tex-mml-svg.js") for u in seen["requests"]), path
        assert "BEGIN HIDDEN TESTS" not in path.read_text(encoding="utf-8")
        redactor = Redactor(hidden_strings(source_notebook(path.parent.name)))
        quoted = [line.split("得到", 1)[1] for o in seen["outputs"] for line in o.splitlines() if "得到" in line]
        leaks = [q for q in quoted if redactor.leaks(q)]     # the student's values a verdict quotes
        assert leaks == [], (path, leaks)


def test_mathjax_renders_from_the_feedback_folder(graded, feedback_tabs):
    seen = _open(feedback_tabs, _page(graded, "grace", EX1))
    seen["page"].close()
    assert seen["formulas"] >= 1


def test_report_has_a_row_per_student_and_flags_the_untouched_notebook(graded):
    report = graded["report"]
    table = report[report.index("## 每名学生"):]
    for student in ("alice", "bob", "carol", "dave", "erin", "frank", "grace"):
        assert f"| {student} |" in table, student
    frank = next(line for line in table.splitlines() if line.startswith("| frank |"))
    assert "未改动" in frank and "未改动：1 份" in table
    assert graded["rows"][("frank", EX3)]["notes"].startswith("交上来时和发布版一样")
