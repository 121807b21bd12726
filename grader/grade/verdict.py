"""The verdict of every test cell, decided outside the student's kernel.

A graded test cell records raw outputs of the student's code (agentrl_ref.checks.probes: the visible
test's observations through run_test, and the hidden tests' probes). Here, in the grader's own
process, those records are compared with the records the reference notebook (the instructor source,
run the same way) left in the same cell. The expected values never enter the sandbox, and nothing the
kernel shows decides the grade: a hook that hides an error, a value whose == is always True, a patched
torch.allclose or a replaced run_test changes what the cell shows, not the records it would need.

judge_notebook(nb, expected) decides every test cell and rewrites its outputs for the people who read
it: what the student's code printed stays (capped, stderr relabelled), its errors become text (the
instructor's copy keeps a failing check's report), its records go, and the verdict is appended (a pass
mark, or an error output naming what went wrong; marks.py records which outputs are the grader's). The
score reaches the gradebook from the returned verdicts (gradebook.py), not from those outputs.
nbgrader's step for it is TrustedVerdict (lists.EXECUTE).
"""
from __future__ import annotations

import builtins
import math
from dataclasses import dataclass, field
from typing import Any

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from agentrl_ref.checks.probes import MIME
from grader.cells import grade_id, is_test as is_test_cell
from grader.grade import explain
from grader.grade.marks import mark, unmark
from grader.grade.redact import NOTHING, Redactor
from grader.grade.state import NotebookState

VISIBLE = "visible:"  # records written by run_test start with this; hidden probes never do
FAILED = "failed:"    # the record run_test writes when a visible test fails (agentrl_ref.checks.FAILED)
REL_TOL, ABS_TOL = 1e-5, 1e-7  # floats: what float32 arithmetic in another order still meets
REDACTED = "含隐藏测试里的内容，不显示"  # in place of a student's value that holds a hidden test's string


def records(cell) -> list[tuple[str, Any]]:
    """The (name, value) records among a cell's outputs, in order; a malformed one is ("<malformed>", None)."""
    found = []
    for output in cell.get("outputs", []):
        data = output.get("data", {}) if output.get("output_type") in ("display_data", "execute_result") else {}
        if MIME not in data:
            continue
        record = data[MIME]
        if isinstance(record, dict) and isinstance(record.get("name"), str) and "value" in record:
            found.append((record["name"], record["value"]))
        else:
            found.append(("<malformed>", None))
    return found


def expected_records(reference: nbformat.NotebookNode) -> dict[str, list[tuple[str, Any]]]:
    """grade_id -> the records the reference notebook's run left in that test cell."""
    return {grade_id(cell): records(cell) for cell in reference.cells if is_test_cell(cell)}


def check_reference(expected: dict[str, list[tuple[str, Any]]], assignment: str) -> None:
    """Every test cell of the reference run must have recorded something hidden, or it could not be judged."""
    for gid, recs in expected.items():
        if not recs:
            raise ValueError(f"{assignment}: test cell {gid} recorded nothing in the reference run "
                             "(does it run without errors? does it call probe()?)")
        if all(name.startswith(VISIBLE) for name, _ in recs):
            raise ValueError(f"{assignment}: test cell {gid} records only visible tests, whose answers are "
                             "public; add a hidden probe so the cell cannot be passed by reproducing them")
        names = [name for name, _ in recs]
        if len(set(names)) != len(names):
            raise ValueError(f"{assignment}: test cell {gid} records a name twice: {names}")


# ---------------------------------------------------------------- comparing encoded values
#
# What a failing verdict may say. For a visible test (public inputs, the student runs it in JupyterLab too)
# it quotes the student's value next to the expected one, unless that value holds something of a hidden
# test's strings (redact.py: a function can remember hidden inputs and return them in a later, visible test).
# For a hidden test it names only the property that differs (a type, a length, a shape, a number, an
# exception), never a value: a student function can make its return value, its exception's message or
# class name quote the hidden inputs it was called with.

_NUMBER = (bool, int, float)
BUILTIN_EXCEPTIONS = {name for name, obj in vars(builtins).items()
                      if isinstance(obj, type) and issubclass(obj, BaseException)}


def _number(x: Any) -> float | None:
    if isinstance(x, _NUMBER):
        return float(x)
    if isinstance(x, dict) and set(x) == {"float"} and x["float"] in ("nan", "inf", "-inf"):
        return float(x["float"])
    return None


def difference(got: Any, want: Any, where: str = "", show: bool = True, redact: Redactor = NOTHING) -> str | None:
    """None if got matches want (encoded values, see probes.py), else where and how they first differ.
    show=False (hidden tests): the property that differs, without quoting any value; show=True quotes the
    student's value unless `redact` finds something of a hidden test in it."""
    here = where or "结果"

    def quote(x: Any) -> str:
        text = _short(x)
        return f"{_kind(x)}（{REDACTED}）" if redact.leaks(repr(x)) or redact.leaks(text) else text

    def mismatch(what: str) -> str:
        return f"{here}：期望 {_short(want)}，得到 {quote(got)}" if show else f"{here}：{what}"

    w, g = _number(want), _number(got)
    if w is not None:
        if g is None:
            return f"{here}：期望一个数，得到 {quote(got) if show else _kind(got)}"
        if math.isnan(w) or math.isnan(g):
            return None if math.isnan(w) and math.isnan(g) else mismatch("数值不对")
        if math.isclose(g, w, rel_tol=REL_TOL, abs_tol=ABS_TOL):
            return None
        return mismatch("数值不对")
    if want is None or isinstance(want, str):
        if type(got) is type(want) and got == want:
            return None
        return mismatch("字符串不对" if isinstance(want, str) and isinstance(got, str) else
                        f"期望{_kind(want)}，得到{_kind(got)}")
    if isinstance(want, list):
        if not isinstance(got, list):
            return f"{here}：期望一个列表，得到 {quote(got) if show else _kind(got)}"
        if len(got) != len(want):
            return f"{here}：期望 {len(want)} 项，得到 {len(got)} 项" if show else f"{here}：项数不对"
        for i, (g_item, w_item) in enumerate(zip(got, want)):
            diff = difference(g_item, w_item, f"{here}[{i}]" if show else here, show, redact)
            if diff:
                return diff
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return mismatch(f"期望{_kind(want)}，得到{_kind(got)}")
        if "unsupported" in want:
            return f"{here}：参考结果无法比较"
        if set(got) != set(want):
            return f"{here}：期望{_kind(want)}，得到{_kind(got) if show or 'raised' not in got else '抛出异常'}"
        for key in ("dtype", "shape"):  # tensors and arrays: dtype and shape first, then the values
            if key in want and got[key] != want[key]:
                return f"{here}：{key} 期望 {want[key]}，得到 {got[key]}" if show else \
                    f"{here}：{'数据类型' if key == 'dtype' else '形状'}不对"
        for key in sorted(want, key=lambda k: k in ("tensor", "ndarray")):
            if key in ("dtype", "shape"):
                continue
            if key == "raised":
                if got[key] == want[key]:
                    continue
                return f"{here}：期望抛出 {_exception(want[key])}，得到 {_exception(got[key]) if show else '别的异常'}"
            sub = f"{here}" if key in ("tensor", "ndarray", "dict", "ok") or not show else f"{here}.{key}"
            diff = difference(got[key], want[key], sub, show, redact)
            if diff:
                return diff
        return None
    return f"{here}：无法比较的参考值"


def _exception(name: Any) -> str:
    """An exception class name recorded by a probe, if it is a built-in one (a student's own class
    name is student-controlled text)."""
    return str(name) if name in BUILTIN_EXCEPTIONS else "自定义异常"


def _kind(x: Any) -> str:
    """What kind of value x is, in words chosen here (nothing of x's own text)."""
    if isinstance(x, dict):
        if "raised" in x:
            return "抛出异常"
        if "stuck" in x:
            return "卡住了（等待的条件一直没有满足）"
        if "ok" in x:
            return "正常返回"
        if "unsupported" in x:
            return "无法记录的值"
        if "tensor" in x:
            return "张量"
        if "ndarray" in x:
            return "数组"
        if "fraction" in x:
            return "分数"
        if "dict" in x:
            return "字典"
        if "float" in x:
            return "数"
        return "别的值"
    if x is None:
        return "None"
    return {bool: "布尔值", int: "整数", float: "浮点数", str: "字符串", list: "列表"}.get(type(x), "别的值")


def _short(x: Any, limit: int = 80) -> str:
    if isinstance(x, dict) and ({"raised", "stuck", "unsupported"} & set(x)):
        return f"抛出 {_exception(x['raised'])}" if "raised" in x else _kind(x)
    if isinstance(x, dict) and "tensor" in x:
        x = x["tensor"]
    if isinstance(x, dict) and set(x) == {"dict"}:
        x = x["dict"]
    text = repr(x)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- the verdict of one cell


@dataclass
class Verdict:
    passed: bool
    reason: str = ""       # Chinese, for the report and the instructor (never the hidden inputs themselves)
    forged: bool = False   # records the reference never wrote: something in the kernel wrote them
    lines: list[str] = field(default_factory=list)   # what the student's page says of the cell (check()'s lines)


def _exercise(name: str) -> str:
    return name.split(":", 1)[-1].split(".", 1)[0]


def judge(cell, expected: list[tuple[str, Any]], redact: Redactor = NOTHING, timed_out: int | None = None,
          kernel_error: str | None = None) -> Verdict:
    """The cell's verdict from its records against the reference's, and the lines its feedback shows: every
    visible test (✓ or ✗ with check()'s line and hint, rebuilt from its failure record: explain.py) and what the
    hidden tests found (the property that differs, never a value). timed_out: the cell timeout, if the cell was
    stopped by it; kernel_error: the built-in exception the cell ended in, if any."""
    got = records(cell)
    failed = {name[len(FAILED):]: value for name, value in got if name.startswith(FAILED)}
    got = [(name, value) for name, value in got if not name.startswith(FAILED)]
    want_names = [name for name, _ in expected]
    visible_ids = {name[len(VISIBLE):] for name in want_names if name.startswith(VISIBLE)}
    extra = [name for name, _ in got if name not in want_names] + [t for t in failed if t not in visible_ids]
    if extra or len(got) > len(expected) or len(failed) > 1:
        n = max(len(extra), len(got) - len(expected), len(failed) - 1)
        reason = f"出现了 {n} 条参考答案没有的评分记录：疑似伪造"
        return Verdict(False, reason, True, [f"✗ {reason}（这一格记 0 分）"])
    got_by_name: dict[str, list[Any]] = {}
    for name, value in got:
        got_by_name.setdefault(name, []).append(value)
    reasons, lines, hidden_said = [], [], False
    stopped = _stopped(timed_out, kernel_error)
    for position, (name, want) in enumerate(expected, 1):
        values = got_by_name.get(name, [])
        visible = name.startswith(VISIBLE)
        label = _label(name, position, len(expected))
        if visible:
            test_id = name[len(VISIBLE):]
            heading = explain.title(test_id)
            if test_id in failed:
                message, hint = explain.failure_line(_exercise(test_id), failed[test_id], redact)
                reasons.append(f"{label}没有通过" + (f"：{message}" if message else ""))
                lines += [f"✗ {heading}", f"    {message or '没有通过'}"] + ([f"    提示：{hint}"] if hint else [])
            elif not values:
                reasons.append(f"{label}没有通过或没有跑完")
                earlier = any(other != test_id for other in failed)   # a test above it in the cell failed
                lines += [f"✗ {heading}", "    没有运行：这一格上面的可见测试没有通过，后面的代码没有运行" if earlier
                          else f"    没有跑完：{stopped}"]
            else:
                diff = difference(values[0], want, show=True, redact=redact)
                if diff:
                    reasons.append(f"{label}不通过：{diff}")
                    lines += [f"✗ {heading}", f"    {diff}"]
                else:
                    lines.append(f"✓ {heading}")
            continue
        if hidden_said:
            continue
        if not values:
            reasons.append(f"{label}没有跑完（之前的代码出错或卡住了）")
            ran = any(n.startswith(VISIBLE) for n in want_names) and not failed and not reasons[:-1]
            lines.append("✗ 隐藏测试：没有跑完" + (f"：{stopped}" if ran
                                                  else "（上面的可见测试没有通过，这一格后面的代码没有运行）"))
            hidden_said = True
            continue
        diff = difference(values[0], want, show=False, redact=redact)
        if diff:
            reasons.append(f"{label}不通过：{diff}")
            lines.append(f"✗ {label}不通过：{diff.split('：', 1)[-1]}")
            hidden_said = True
    if not reasons and [name for name, _ in got] != want_names:
        reason = "评分记录的顺序和参考答案不同：疑似伪造"
        return Verdict(False, reason, True, [f"✗ {reason}（这一格记 0 分）"])
    if not hidden_said and any(not n.startswith(VISIBLE) for n in want_names):
        lines.append("✓ 隐藏测试：通过")
    return Verdict(not reasons, reasons[0] if reasons else "", False, lines)


def _stopped(timed_out: int | None, kernel_error: str | None) -> str:
    """Why a cell's tests did not finish, as far as the grader knows it (Chinese)."""
    if timed_out:
        return f"这一格运行超过 {timed_out} 秒，被中断（可能有死循环）"
    if kernel_error == "NameError":
        return "这一格用到的名字还没有定义（NameError）：先让上面的答案格能顺利运行"
    if kernel_error in BUILTIN_EXCEPTIONS:
        return f"这一格运行时出错（{kernel_error}）"
    if kernel_error:
        return "这一格运行时抛出了自定义异常"
    return "这一格的测试没有运行完"


def _label(name: str, position: int, total: int) -> str:
    if name.startswith(VISIBLE):
        return f"可见测试 {name[len(VISIBLE):].split('.', 1)[-1]} "
    return f"隐藏测试（第 {position}/{total} 组用例）"


# ---------------------------------------------------------------- a whole notebook


def error_summary(cell) -> str | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            text = f"{output.get('ename', '')}: {output.get('evalue', '')}".strip(": ")
            return text[:200] if text else None
    return None


def rewrite_test_cell(cell, verdict: Verdict) -> None:
    """Keep what the code printed (stdout; stderr relabelled) and the kernel's error as text (for the
    instructor; the feedback shows neither), drop records and rich outputs, then append the verdict: the
    cell's lines (verdict.lines, written by the grader) under a pass mark, or as one error output on a failure."""
    kept = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":   # kept as text for the instructor (the feedback drops it)
            text = f"[内核里的报错] {output.get('ename', '')}: {output.get('evalue', '')}\n"
            output = nbformat.v4.new_output("stream", name="stdout", text=text)
        elif output.get("output_type") != "stream":
            continue
        elif output.get("name") == "stderr":
            output = nbformat.from_dict({**output, "name": "stdout", "text": "[stderr] " + output.get("text", "")})
        kept.append(output)
    cell["outputs"] = kept + [verdict_output(verdict)]
    mark(cell)


def verdict_output(verdict: Verdict):
    """The output a test cell's verdict becomes: a pass mark, or an error output (nbgrader's 0), with its lines."""
    if verdict.passed:
        text = "\n".join(["评分：本单元通过。", *verdict.lines])
        return nbformat.v4.new_output("display_data", data={"text/plain": text})
    lines = verdict.lines or [f"✗ {verdict.reason}"]
    head = "评分未通过：这一格记 0 分"
    return nbformat.v4.new_output("error", ename="评分未通过", evalue=verdict.reason,
                                  traceback=[head, *(_red(line) if line.startswith("✗") else line for line in lines)])


def _red(line: str) -> str:
    return f"\x1b[0;31m{line}\x1b[0m"


def timed_out_output(seconds: int):
    """The mark on a cell (not a test cell) that the cell timeout stopped: what its page says of it."""
    text = (f"评分时这一格运行超过 {seconds} 秒，被中断（可能有死循环）：这一格之后、用到它的测试都没有通过。"
            "在自己的 JupyterLab 里运行它，看看它为什么停不下来。")
    return nbformat.v4.new_output("error", ename="超时", evalue=text, traceback=[_red("✗ " + text)])


def judge_notebook(nb: nbformat.NotebookNode, expected: dict[str, list[tuple[str, Any]]],
                   hidden: list[str] = (), timed_out: dict[int, int] | None = None) -> dict[str, Verdict]:
    """Judge every test cell against expected (grade_id -> the reference's records) and rewrite it (see
    rewrite_test_cell); hidden: the assignment's hidden-test strings, never quoted; timed_out: cell index ->
    the cell timeout that stopped it (such a cell that is no test cell gets a mark saying so).
    Return grade_id -> Verdict."""
    found = {}
    redact = Redactor(hidden)
    timed_out = timed_out or {}
    unmark(nb)
    for index, cell in enumerate(nb.cells):
        if is_test_cell(cell):
            gid = grade_id(cell)
            kernel_error = next((o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"),
                                None)
            verdict = (judge(cell, expected[gid], redact, timed_out.get(index), kernel_error) if gid in expected
                       else Verdict(False, f"参考答案里没有测试单元 {gid}"))
            found[gid] = verdict
            rewrite_test_cell(cell, verdict)
        elif index in timed_out and cell.get("cell_type") == "code":
            cell.setdefault("outputs", []).append(timed_out_output(timed_out[index]))
            mark(cell)
    return found


class TrustedVerdict(NbGraderPreprocessor):
    """Every test cell judged against the reference's records, outside the kernel (judge_notebook); the
    verdicts and what an instructor should know of them go into the notebook's state."""

    zh = "判分"   # what the step does, for a note if it fails

    def preprocess(self, nb, resources):
        state = NotebookState.of(resources)
        state.verdicts = verdicts = judge_notebook(nb, state.expected, state.hidden, state.timed_out)
        if any(REDACTED in v.reason for v in verdicts.values()):
            state.notes.append("可见测试的返回值里有隐藏测试的字符串：反馈里没有显示这些值")
        forged = sorted(gid for gid, v in verdicts.items() if v.forged)
        if forged:
            state.notes.append(f"测试单元里出现了参考答案没有的评分记录（{', '.join(forged)}）：疑似伪造，已判 0 分")
        return nb, resources
