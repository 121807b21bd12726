"""Student self-checks: every exercise's visible tests, run two ways from one definition.

    check("format_reward")
        after a TODO cell: runs every visible test of that part against the notebook's own
        objects and prints a short Chinese report (what passed, the input that failed, a hint).
        Never raises, never shows a traceback.

    run_test("ex1_format_reward.seed_table", format_reward)
        inside an nbgrader test cell: the same test; prints the report when it passes, and when it
        fails raises AssertionError carrying the report (shown once, in red, and in nbgrader's
        Validate dialog), so nbgrader scores the cell 0.

A report starts with the ✓/✗ heading; what the test printed while it ran (its details) follows the
heading, then the failure and its hint.

A visible test may be a coroutine function (exercise 4 tests asyncio code). Inside a Jupyter cell an
event loop is already running, so run_test() and check() then return a coroutine and the cell awaits
it: `await run_test(...)`, `await check(...)` (top-level await). Outside a running loop (a script,
pytest) they run it to completion with asyncio.run. Synchronous tests behave exactly as before.

Hidden tests are not here (this package is public): they live only in the instructor notebooks.

Grading does not trust what a cell shows (the student's kernel controls that). A visible test
returns what it observed (the raw outputs of the student's code it checked); run_test records it
with probe() (probes.py), and hidden tests record their own observations; the grader compares the
records with the reference notebook's outside the kernel (grader/grade/verdict.py).
"""
from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import linecache
import re
import sys
import traceback
import unicodedata
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable

from agentrl_ref.checks.probes import probe, probe_async, probe_calls  # noqa: F401  (test cells import them)

BLANK = "_____"
FAILED = "failed:"   # the record of a visible test that failed: run_test writes it, the grader reads it
EXERCISES = ("ex1_format_reward", "ex2_verifiable_reward", "ex3_loss_mask",
             "ex4_async_rollout", "ex5_composite_reward", "ex6_token_credit", "ex7_agent_grpo", "ex8_token_in_out",
             "ex9_rollout_correction", "ex10_partial_rollout",
             "ex11_dapo_sampling")


class CheckFailure(AssertionError):
    """A visible test failed; the message is the Chinese report line.

    In Jupyter the failure shows as that one message, not as a traceback through this package
    (IPython calls _render_traceback_); the cell still ends in an error, so nbgrader counts the cell as
    failed (test cells are tagged raises-exception: Run All goes on with the cells below).

    `failure` is the same line as data, for the grader to rebuild outside the kernel (grader/grade/verdict.py):
    the template (a string constant of the check module), the values put into it, and the hint."""

    def __init__(self, message: str = "", failure: dict | None = None):
        super().__init__(message)
        self.failure = failure or {}

    def _render_traceback_(self) -> list[str]:
        lines = [piece for line in str(self).split("\n") for piece in _wrap(line)]
        if lines and lines[0].startswith("✗"):  # a whole report (run_test): its heading in red
            return [f"\x1b[0;31m{lines[0]}\x1b[0m", *lines[1:]]
        return [f"\x1b[0;31m✗ 没通过\x1b[0m：{lines[0] if lines else ''}", *lines[1:]]


WRAP = 72  # display columns (a Chinese character takes two): nbgrader's Validate dialog does not wrap lines


def _wrap(line: str, width: int = WRAP) -> list[str]:
    """line cut into pieces of at most `width` display columns; continuation pieces keep its indent plus two."""
    def columns(text: str) -> int:
        return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)

    if columns(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
    pieces, current = [], ""
    for ch in line:
        if current and columns(current + ch) > width:
            pieces.append(current)
            current = indent
        current += ch
    return pieces + [current]


@dataclass(frozen=True)
class VisibleTest:
    test_id: str                 # "<exercise>.<name>", as named in the notebook's run_test call
    part: str                    # what check() is called with: usually the function the TODO defines
    title: str                   # Chinese, shown in the report
    needs: tuple[str, ...]       # notebook names passed to func, in order
    func: Callable[..., Any]


_REGISTRY: dict[str, VisibleTest] = {}


def visible_test(exercise: str, part: str, title: str, needs: tuple[str, ...] | None = None):
    """Register a visible test function of `exercise`; its parameters name the notebook objects it needs."""
    def register(func):
        names = needs or tuple(func.__code__.co_varnames[: func.__code__.co_argcount])
        test = VisibleTest(f"{exercise}.{func.__name__}", part, title, names, func)
        _REGISTRY[test.test_id] = test
        return func
    return register


def expect(ok: bool, what: str, /, *, hint: str = "", **values: Any) -> None:
    """Fail the current visible test with a one-line Chinese explanation unless ok.

    `what` is a template (a string constant: str.format fields name the values given as keywords), so that the
    grader can write the same line outside the kernel from the recorded values (never from the kernel's text):
        expect(got == want, "输入 {text!r} 得到 {got!r}，期望 {want}", hint=HINT, text=text, got=got, want=want)
    `hint` is one of the check module's string constants."""
    if not ok:
        fail(what, hint=hint, **values)


def fail(what: str, /, *, hint: str = "", **values: Any) -> None:
    """Fail the current visible test (expect's failing branch): raise CheckFailure."""
    message = what.format(**values)
    raise CheckFailure(message + (f"\n    提示：{hint}" if hint else ""),
                       {"template": what, "values": values, "hint": hint})


def _load(exercise: str) -> None:
    """Import one exercise's visible tests (registering them). Only the exercise a cell needs is imported: at
    grading time the student's code has run before this, and an import it can break (patched builtins break
    typing, and through it torch) must not be one another exercise needs."""
    try:
        import_module(f"agentrl_ref.checks.{exercise}")
    except ModuleNotFoundError as exc:
        if exc.name != f"agentrl_ref.checks.{exercise}":
            raise


def _load_all() -> None:
    """Every exercise's visible tests (the grader, outside the kernel, and the tests of this package)."""
    for exercise in EXERCISES:
        _load(exercise)


def _load_part(part: str) -> None:
    """Import exercises in order until one registers tests of `part` (a part belongs to one exercise)."""
    for exercise in EXERCISES:
        if any(t.part == part for t in _REGISTRY.values()):
            return
        _load(exercise)


def _is_blank(exc: BaseException) -> bool:
    """exc is the NameError an unfilled `_____` raises."""
    return isinstance(exc, NameError) and getattr(exc, "name", None) == BLANK


def _unfilled_blank(exc: BaseException) -> str | None:
    """'第 N 行还有空没填' when exc is the NameError an unfilled `_____` raises."""
    if not _is_blank(exc):
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    frame = next((f for f in reversed(frames) if f.line and BLANK in f.line), frames[-1] if frames else None)
    if frame is None:
        return "还有空没填（`_____`）"
    where = f"（函数 {frame.name}）" if frame.name != "<module>" else ""
    return f"单元格第 {frame.lineno} 行{where}还有空没填：{(frame.line or '').strip()}"


TODO = re.compile(r"#\s*(TODO\s*\d+[a-z]?)\b")
TODO_LABEL = re.compile(r"\ATODO \d+[a-z]?\Z")   # what the grader accepts as a recorded TODO label


def _student_frame(exc: BaseException):
    """The innermost frame of the traceback that runs a notebook cell's code (not this package, not a library)."""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        name = frame.filename or ""
        if name.startswith("<ipython-input") or "/ipykernel_" in name or name.startswith("<cell"):
            return frame
    return None


def todo_of(exc: BaseException) -> str | None:
    """'TODO 2' if the student's code that raised exc is under that TODO comment of its cell (the nearest one above
    the failing line, in the same function), else None."""
    frame = _student_frame(exc)
    if frame is None or not frame.lineno:
        return None
    lines = linecache.getlines(frame.filename)
    for line in reversed(lines[:frame.lineno]):
        found = TODO.search(line)
        if found:
            return " ".join(found.group(1).split())
        if line.lstrip().startswith(("def ", "class ", "async def ")):
            return None
    return None


def exception_hint(exercise: str, todo: str | None, raised: str) -> str:
    """The exercise's hint for this exception from the code of this TODO (its module's EXCEPTION_HINTS), or ''."""
    try:
        hints = getattr(import_module(f"agentrl_ref.checks.{exercise}"), "EXCEPTION_HINTS", {})
    except ImportError:
        return ""
    return hints.get((todo, raised)) or hints.get((todo, None)) or ""


def _failure(exc: Exception, exercise: str = "") -> tuple[str, dict]:
    """One line for a failed visible test (its own message, an unfilled blank, or what the student's code raised,
    and from which TODO), and the same as data for the grader (CheckFailure.failure)."""
    if isinstance(exc, CheckFailure):
        return str(exc), exc.failure
    blank = _unfilled_blank(exc)
    todo = todo_of(exc)
    if blank:
        return blank, {"blank": True, "todo": todo}
    where = f"（出自 {todo} 那一行）" if todo else ""
    hint = exception_hint(exercise, todo, type(exc).__name__)
    message = f"运行时抛出 {type(exc).__name__}{where}: {exc}" + (f"\n    提示：{hint}" if hint else "")
    return message, {"raised": type(exc).__name__, "todo": todo}


def _run_one(test: VisibleTest, objects: list[Any]) -> tuple[bool, str, Any, str]:
    """(passed, failure message, what the test observed: the raw outputs of the student's code it checked; on a
    failure, the failure as data (CheckFailure.failure), what the test printed: its details, shown under the
    report's heading)."""
    details = io.StringIO()
    try:
        with contextlib.redirect_stdout(details):
            observed = test.func(*objects)
    except Exception as exc:
        message, failure = _failure(exc, test.test_id.split(".")[0])
        return False, message, failure, details.getvalue()
    return True, "", observed, details.getvalue()


def _report(test: VisibleTest, ok: bool, message: str, details: str = "") -> str:
    """The ✓/✗ heading first, then the test's details, then (failed) the failure and its hint."""
    lines = [f"{'✓' if ok else '✗'} {test.title}"]
    if details.strip():
        lines.append(details.rstrip("\n"))
    if not ok:
        lines.append(f"    {message}")
    return "\n".join(lines)


def _is_async(test: VisibleTest) -> bool:
    return inspect.iscoroutinefunction(test.func)


async def _run_one_async(test: VisibleTest, objects: list[Any]) -> tuple[bool, str, Any, str]:
    """_run_one for a coroutine test function (same messages)."""
    details = io.StringIO()
    try:
        with contextlib.redirect_stdout(details):
            observed = await test.func(*objects)
    except Exception as exc:
        message, failure = _failure(exc, test.test_id.split(".")[0])
        return False, message, failure, details.getvalue()
    return True, "", observed, details.getvalue()


def _run_or_hand_back(coro):
    """Inside a running event loop (a notebook cell) return the coroutine for the caller to await; else run it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    return coro


GO_ON = "（这一格记 0 分。下面的格照常运行；改好答案以后，重新运行答案格和这一格。）"


def _finish(test: VisibleTest, ok: bool, message: str, observed: Any, details: str) -> None:
    """run_test's ending: passed, the report and the observations as a grading record; failed, the failure as a
    grading record (FAILED; the grader writes the student's feedback from it) and CheckFailure carrying the report
    (printed once: as the cell's error, which is also what nbgrader's Validate shows)."""
    if not ok:
        probe(f"{FAILED}{test.test_id}", observed or {})
        raise CheckFailure(_report(test, ok, message, details) + "\n" + GO_ON, observed)
    print(_report(test, ok, message, details))
    probe(f"visible:{test.test_id}", observed)


async def _run_test_async(test: VisibleTest, objects: list[Any]) -> None:
    _finish(test, *await _run_one_async(test, objects))


def run_test(test_id: str, *objects: Any):
    """Run one visible test in an nbgrader test cell: print the report; AssertionError if it fails.

    For a coroutine test inside a running event loop this returns a coroutine: `await run_test(...)`."""
    _load(test_id.split(".")[0])
    test = _REGISTRY[test_id]
    if _is_async(test):
        return _run_or_hand_back(_run_test_async(test, list(objects)))
    _finish(test, *_run_one(test, list(objects)))


def _not_defined_yet(tests: list[VisibleTest], namespace: dict[str, Any]) -> bool:
    missing = sorted({name for t in tests for name in t.needs if name not in namespace})
    if missing:
        print(f"✗ 还没有定义 {', '.join(missing)}：先运行上面的填空格。")
    return bool(missing)


def _print_summary(passed: int, total: int) -> None:
    verdict = "全部通过！" if passed == total else "还有没通过的，改完再运行一次。"
    print(f"{passed}/{total} 项通过。{verdict}")


async def _check_async(tests: list[VisibleTest], namespace: dict[str, Any]) -> None:
    """check() for a part with coroutine tests: the same report, awaited test by test."""
    if _not_defined_yet(tests, namespace):
        return
    passed = 0
    for test in tests:
        objects = [namespace[name] for name in test.needs]
        ok, message, _, details = await _run_one_async(test, objects) if _is_async(test) else _run_one(test, objects)
        print(_report(test, ok, message, details))
        passed += ok
    _print_summary(passed, len(tests))


def check(part: str, namespace: dict[str, Any] | None = None):
    """Run every visible test of `part` against the caller's objects and print a report (never raises).

    When the part has coroutine tests and an event loop is running (a notebook cell) this returns a
    coroutine: `await check(...)`."""
    _load_part(part)
    namespace = namespace if namespace is not None else sys._getframe(1).f_globals
    tests = [t for t in _REGISTRY.values() if t.part == part]
    if not tests:
        raise ValueError(f"没有名为 {part!r} 的检查；可用的有：{sorted({t.part for t in _REGISTRY.values()})}")
    if any(_is_async(t) for t in tests):
        return _run_or_hand_back(_check_async(tests, namespace))
    if _not_defined_yet(tests, namespace):
        return
    passed = 0
    for test in tests:
        ok, message, _, details = _run_one(test, [namespace[name] for name in test.needs])
        print(_report(test, ok, message, details))
        passed += ok
    _print_summary(passed, len(tests))
