"""What check() told the student, written again outside the kernel from the records alone.

A visible test that fails in a graded test cell leaves one record (agentrl_ref.checks, run_test): the failure as
data, never as text. Either the line of an `expect` (a template, which must be a string constant of the
exercise's check module, the values put into it, encoded by probes.encode, and its hint, also one of the module's
constants), or an exception the student's code raised (its class and the TODO its line is under), or an unfilled
blank. Here the grader rebuilds the line check() printed:

    line = failure_line("ex1_format_reward", value, redactor)   # (message, hint), Chinese
    title("ex1_format_reward.seed_table")                       # the visible test's title

Nothing the kernel wrote is shown as text of its own: a template or a hint that is not the module's constant is
dropped, a value is formatted here from plain JSON (the student's objects never run), quoted only when it holds
nothing of a hidden test (redact.py) or is the check module's own public text (a visible input), cut to MAX_VALUE
characters, and an exception is named only when it is a
built-in one. A student who forges the record can change only their own page, and only into the course's words.
"""
from __future__ import annotations

import ast
import builtins
import functools
import importlib.util
import re
import string
from fractions import Fraction
from pathlib import Path
from typing import Any

from grader.grade.redact import NOTHING, Redactor

MAX_VALUE = 240   # characters of one value shown in a line
REDACTED_VALUE = "（含隐藏测试里的内容，不显示）"
TODO_LABEL = re.compile(r"\ATODO \d+[a-z]?\Z")
BUILTIN_EXCEPTIONS = {name for name, obj in vars(builtins).items()
                      if isinstance(obj, type) and issubclass(obj, BaseException)}


def _module_path(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    return Path(spec.origin) if spec is not None and spec.origin else None


@functools.cache
def constants(exercise: str) -> frozenset[str]:
    """Every string constant of the exercise's check module and of the checks package itself: the only text a
    failure record may name as its template or hint."""
    found = set()
    for module in ("agentrl_ref.checks", f"agentrl_ref.checks.{exercise}"):
        path = _module_path(module)
        if path is None or not path.is_file():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(node.value)
    return frozenset(found)


MAX_DEPTH = 32   # a constant nested deeper than this (or holding itself) is no visible input


def _plain(value: Any, depth: int = 0) -> Any:
    """A value as the grader decodes a recorded one: tuples as lists, for comparing with decoded values.
    ValueError for one nested past MAX_DEPTH (a structure that holds itself)."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deep")
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    return value


@functools.cache
def public_values(exercise: str) -> frozenset[str]:
    """The texts of every value the exercise's check module holds (its constants, their elements, their repr()):
    a visible test's input. A recorded value equal to one of them is the course's own public text, quoted even
    where it happens to look like a hidden test's string (a hidden test may reuse a visible input)."""
    import json
    from importlib import import_module

    found: set[str] = set(constants(exercise)) | {repr(c) for c in constants(exercise)}
    try:
        module = import_module(f"agentrl_ref.checks.{exercise}")
    except ImportError:
        return frozenset(found)
    # the module's own names only: its __builtins__ is the interpreter's, whatever else ran in this process put there
    # (a dict that can hold itself)
    stack = [v for k, v in vars(module).items()
             if not k.startswith("__") and isinstance(v, (str, list, tuple, dict, int, float))]
    walked: set[int] = set()
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found.update((value, repr(value)))
            continue
        if id(value) in walked:
            continue
        walked.add(id(value))
        try:
            found.add(json.dumps(_plain(value), ensure_ascii=False, sort_keys=True))
        except (TypeError, ValueError):
            pass
        if isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return frozenset(found)


def _is_public(value: Any, public: frozenset[str]) -> bool:
    import json

    if isinstance(value, str):
        return value in public
    if isinstance(value, (list, dict)):
        try:
            return json.dumps(value, ensure_ascii=False, sort_keys=True) in public
        except (TypeError, ValueError):
            return False
    return False


@functools.cache
def exception_hints(exercise: str) -> dict:
    from importlib import import_module

    try:
        return dict(getattr(import_module(f"agentrl_ref.checks.{exercise}"), "EXCEPTION_HINTS", {}))
    except ImportError:
        return {}


@functools.cache
def _registry(exercise: str) -> dict:
    """The visible tests registered once `exercise`'s are (only its module: another's may need what this machine
    lacks, as exercise 9's torch in a grading environment without it)."""
    from agentrl_ref.checks import _REGISTRY, _load

    _load(exercise)
    return _REGISTRY


def title(test_id: str) -> str:
    test = _registry(test_id.split(".")[0]).get(test_id)
    return test.title if test is not None else "可见测试"


class _Unrecorded:
    def __format__(self, spec: str) -> str:
        return "（无法记录的值）"

    __repr__ = __str__ = lambda self: "（无法记录的值）"


class _Hidden:
    def __format__(self, spec: str) -> str:
        return REDACTED_VALUE

    __repr__ = __str__ = lambda self: REDACTED_VALUE


class _Exception:
    """A {"raised": name} or {"stuck": n} outcome, shown as the kernel's repr of it would be, roughly."""

    def __init__(self, text: str):
        self.text = text

    def __format__(self, spec: str) -> str:
        return self.text

    __repr__ = __str__ = lambda self: self.text


def decode(value: Any) -> Any:
    """An encoded value (probes.encode) as plain Python data to format: tensors and arrays as nested lists,
    Fractions as Fractions, NaN and infinities as floats; anything unrecorded as a placeholder."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"float"} and value["float"] in ("nan", "inf", "-inf"):
        return float(value["float"])
    if set(value) == {"fraction"} and isinstance(value["fraction"], list) and len(value["fraction"]) == 2:
        try:
            return Fraction(int(value["fraction"][0]), int(value["fraction"][1]))
        except (TypeError, ValueError, ZeroDivisionError):
            return _Unrecorded()
    if "tensor" in value or "ndarray" in value:
        return decode(value.get("tensor", value.get("ndarray")))
    if set(value) == {"dict"} and isinstance(value["dict"], dict):
        return {str(k): decode(v) for k, v in value["dict"].items()}
    if "raised" in value:
        name = value["raised"]
        return _Exception(f"抛出 {name if name in BUILTIN_EXCEPTIONS else '自定义异常'}")
    if "stuck" in value:
        return _Exception("卡住了")
    return _Unrecorded()


def _unwrap(value: Any) -> Any:
    """A recorded dict as plain data: {"dict": {...}} -> {...} (what probes.encode made of a dict)."""
    if isinstance(value, dict) and set(value) == {"dict"} and isinstance(value["dict"], dict):
        return value["dict"]
    return value


class _LineFormatter(string.Formatter):
    """str.format for a template of the course: fields are plain names of the given values (no attribute, no
    index), each value is formatted here, shown only if it holds nothing hidden, and cut to MAX_VALUE."""

    def __init__(self, redact: Redactor, public: frozenset[str] = frozenset()):
        self.redact, self.public = redact, public

    def get_field(self, field_name, args, kwargs):
        if not field_name.isidentifier():
            raise KeyError(field_name)
        return kwargs[field_name], field_name

    def format_field(self, value, format_spec):
        try:
            text = format(value, format_spec)
        except (TypeError, ValueError):
            text = repr(value)
        if not _is_public(value, self.public) and (self.redact.leaks(text) or self.redact.leaks(repr(value))):
            return REDACTED_VALUE
        return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 1] + "…"

    def convert_field(self, value, conversion):
        if conversion == "r":
            return _Shown(repr(value))
        return super().convert_field(value, conversion)


class _Shown(str):
    """A value already turned into text by !r: formatted as that text."""


def _format(template: str, values: dict, redact: Redactor, public: frozenset[str] = frozenset()) -> str | None:
    decoded = {str(k): decode(v) for k, v in values.items()} if isinstance(values, dict) else {}
    try:
        return _LineFormatter(redact, public).vformat(template, (), decoded)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError):
        return None


def failure_line(exercise: str, record: Any, redact: Redactor = NOTHING) -> tuple[str, str]:
    """(message, hint) of a visible test's failure record, as check() printed them; ('', '') for a record that
    says nothing the course wrote."""
    record = _unwrap(record)
    if not isinstance(record, dict):
        return "", ""
    allowed = constants(exercise)
    todo = record.get("todo") if isinstance(record.get("todo"), str) and TODO_LABEL.match(record["todo"]) else None
    if record.get("blank"):
        return (f"{todo} 还有空没填（`_____`）" if todo else "还有空没填（`_____`）"), ""
    if "raised" in record:
        name = record["raised"] if isinstance(record["raised"], str) else ""
        shown = name if name in BUILTIN_EXCEPTIONS else "自定义异常"
        hints = exception_hints(exercise)
        hint = hints.get((todo, name)) or hints.get((todo, None)) or ""
        return f"运行时抛出 {shown}" + (f"（出自 {todo} 那一行）" if todo else ""), hint
    template, hint = record.get("template"), record.get("hint")
    hint = hint if isinstance(hint, str) and hint in allowed else ""
    if not (isinstance(template, str) and template in allowed):
        return "", hint
    message = _format(template, _unwrap(record.get("values") or {}), redact, public_values(exercise))
    return (message or ""), hint

