"""The student self-check helper: kind messages, and the same tests as the nbgrader cells."""
import re

import nbformat
import pytest

import agentrl_ref
from agentrl_ref.agent import clipped_pg_loss
from agentrl_ref.checks import _REGISTRY, _load_all, check, run_test
from course import ASSIGNMENTS, SOURCE, student_notebook


def _token_advantages(rewards, group_size, loss_mask):
    """Exercise 7's wiring of exercise 6's two functions (the answer has no module of its own)."""
    return agentrl_ref.broadcast_to_tokens(agentrl_ref.group_normalize(rewards, group_size), loss_mask)


# part -> the reference object(s) the visible tests of that part need, by notebook name
REFERENCE_NAMESPACE = {
    "format_reward": agentrl_ref.format_reward,
    "clipped_pg_loss": clipped_pg_loss,  # exercise 7: agentrl_ref.agent.loss
    "token_advantages": _token_advantages,
}


def test_reference_passes_every_visible_test(capsys):
    _load_all()
    for test in _REGISTRY.values():
        objects = [REFERENCE_NAMESPACE.get(name) or getattr(agentrl_ref, name) for name in test.needs]
        run_test(test.test_id, *objects)
    assert "✗" not in capsys.readouterr().out


def test_check_reports_the_failing_input_and_a_hint(capsys):
    def format_reward(text):  # accepts repeated groups, like the seed page's answer
        return 1.0 if text.strip().startswith("<think>") and text.strip().endswith("</answer>") else 0.0

    check("format_reward", {"format_reward": format_reward})
    out = capsys.readouterr().out
    assert "✗ 重复输出两组标签" in out and "<think>a</think><answer>1</answer><think>b" in out
    assert "提示" in out and "5/7 项通过" in out and "Traceback" not in out


def test_check_names_the_line_with_an_unfilled_blank(tmp_path, capsys):
    cell = tmp_path / "cell.py"
    cell.write_text("import re\n\ndef format_reward(completion):\n    pattern = _____\n    return 0.0\n")
    namespace = {}
    exec(compile(cell.read_text(), str(cell), "exec"), namespace)
    check("format_reward", namespace)
    out = capsys.readouterr().out
    assert "第 4 行" in out and "还有空没填" in out and "pattern = _____" in out


def test_check_before_the_cell_ran(capsys):
    check("format_reward", {})
    assert "先运行上面的填空格" in capsys.readouterr().out


def test_run_test_raises_for_nbgrader_with_the_report_once_heading_first(capsys):
    with pytest.raises(AssertionError) as failure:
        run_test("ex1_format_reward.multi_line", lambda text: 0.0)
    assert capsys.readouterr().out == ""  # not printed and raised: the cell shows the report once, as its error
    report = str(failure.value)
    assert report.startswith("✗ ") and "re.DOTALL" in report
    rendered = failure.value._render_traceback_()
    assert rendered[0].startswith("\x1b[0;31m✗ ") and "re.DOTALL" in "".join(rendered)


def test_details_a_test_prints_follow_its_heading(capsys):
    from agentrl_ref.checks import VisibleTest, _report, _run_one

    def noisy(value):
        print("  observed:", value)
        return value

    test = VisibleTest("demo.noisy", "noisy", "有细节的测试", ("value",), noisy)
    ok, message, observed, details = _run_one(test, [3])
    assert capsys.readouterr().out == ""  # captured while the test ran
    assert _report(test, ok, message, details) == "✓ 有细节的测试\n  observed: 3"


def test_long_report_lines_are_wrapped_for_the_validate_dialog():
    from agentrl_ref.checks import WRAP, CheckFailure, _wrap

    line = "    提示：" + "很长的提示" * 30
    pieces = _wrap(line)
    assert len(pieces) > 1 and "".join(p.strip() for p in pieces) == line.strip()
    assert all(p.startswith("    ") for p in pieces) and all(p.startswith("      ") for p in pieces[1:])
    assert max(sum(2 if ord(ch) > 0x2E80 else 1 for ch in p) for p in pieces) <= WRAP
    assert len(CheckFailure("✗ 标题\n" + line)._render_traceback_()) == 1 + len(pieces)


def test_unknown_part_is_a_clear_error():
    with pytest.raises(ValueError, match="format_reward"):
        check("no_such_part", {})


RUN_TEST = re.compile(r'run_test\("([\w.]+)"')
CHECK = re.compile(r'check\("(\w+)"\)')


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_notebook_cells_and_checks_use_the_same_tests(name):
    """Every registered visible test is graded by a test cell, and every TODO cell is followed by check()."""
    _load_all()
    nb = nbformat.read(SOURCE / name / f"{name}.ipynb", as_version=4)
    graded = {m for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") for m in RUN_TEST.findall(c.source)}
    registered = {t for t in _REGISTRY if t.startswith(name + ".")}
    assert graded == registered, f"test cells run {sorted(graded)}, registry has {sorted(registered)}"

    cells = student_notebook(name).cells
    for i, cell in enumerate(cells):
        if cell.metadata.get("nbgrader", {}).get("solution"):
            following = next(c for c in cells[i + 1:] if c.cell_type == "code")
            parts = CHECK.findall(following.source)
            assert parts, f"no check() after the TODO cell {cell.metadata.nbgrader.grade_id}"
            assert all(any(t.part == p for t in _REGISTRY.values()) for p in parts)
