"""Every realistic mistake of every exercise (tests/mutations/) gets exactly one hint, about its own line.

The answer cells are run as a student fills them (each under a cell file name, as IPython names cells, so that
an exception is traced to its TODO); then every visible test of the whole notebook runs, as check() and run_test
run them. For each mistake, every visible test that fails gives one hint, and it is the mistake's (HINTS in
tests/mutations/<exercise>.py) or says which other part to fix first ("先修好"); an exception of the student's
code names the TODO it came from. Cheap: no kernel, no sandbox.

And the data the grader rebuilds those lines from (grader/grade/explain.py): every `expect` of the check modules has
a string constant as its template, whose fields are the values it is given.
"""
from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import linecache
import string
import warnings
from pathlib import Path

import nbformat
import pytest

from agentrl_ref.checks import _REGISTRY, _is_async, _load_all, _run_one, _run_one_async
from course import ASSIGNMENTS, ROOT, cell_namespace, filled, mutated_fills, mutation_hints, mutations, reference_fills


def _namespace(assignment: str, fills: list[str]) -> dict:
    """The notebook's own code cells (answers and read-only code; no setup, checks, tests or demos), filled and run,
    each compiled under a file name linecache knows, like a cell of an IPython kernel."""
    nb = nbformat.reads(filled(assignment, fills), as_version=4)
    namespace = cell_namespace(assignment)
    for i, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        if (cell.cell_type != "code" or meta.get("grade") or meta.get("grade_id") == "setup"
                or "demo" in cell.metadata.get("tags", []) or "check(" in cell.source):
            continue
        name = f"<cell-{assignment}-{i}>"
        linecache.cache[name] = (len(cell.source), None, cell.source.splitlines(True), name)
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")    # exercise 3's `is` mistakes: a SyntaxWarning at compile time
            exec(compile(cell.source, name, "exec"), namespace)
    return namespace


def failures(assignment: str, namespace: dict) -> dict[str, str]:
    """test name -> check()'s failure line (with its hint), for every visible test of the notebook that fails."""
    _load_all()
    failed = {}
    for test in (t for t in _REGISTRY.values() if t.test_id.startswith(assignment + ".")):
        objects = [namespace[name] for name in test.needs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ok, message, _, _ = (asyncio.run(_run_one_async(test, objects)) if _is_async(test)
                                 else _run_one(test, objects))
        if not ok:
            failed[test.test_id.split(".", 1)[1]] = message
    return failed


def hints_of(message: str) -> list[str]:
    return [line.split("提示：", 1)[1] for line in message.split("\n") if "提示：" in line]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_mistake_has_its_expected_hint(assignment):
    assert set(mutation_hints(assignment)) == set(mutations(assignment)), "tests/mutations: HINTS for every mistake"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_reference_fails_no_visible_test(assignment):
    assert failures(assignment, _namespace(assignment, reference_fills(assignment))) == {}


@pytest.mark.parametrize("assignment,label", [(a, label) for a in ASSIGNMENTS for label in sorted(mutations(a))])
def test_each_failing_test_gives_the_one_hint_of_the_mistake(assignment, label):
    changes, _ = mutations(assignment)[label]
    want = mutation_hints(assignment)[label]
    failed = failures(assignment, _namespace(assignment, mutated_fills(assignment, changes)))
    if want is None:
        assert failed == {}, failed
        return
    assert failed, f"{label}: no visible test fails"
    report = "\n".join(f"{name}: {message}" for name, message in failed.items())
    for name, message in failed.items():
        said = hints_of(message)
        assert len(said) == 1, f"{label}: {name} gives {len(said)} hints\n{report}"
        assert want in said[0] or "先修好" in said[0], f"{label}: {name} blames another line\n{report}"
        if "运行时抛出" in message:
            assert "出自 TODO" in message, f"{label}: {name} does not say which TODO raised\n{report}"
    assert any(want in hints_of(m)[0] for m in failed.values()), f"{label}: no test names the mistake\n{report}"


CHECKS = ROOT / "agentrl_ref" / "checks"


@pytest.mark.parametrize("path", sorted(CHECKS.glob("ex*.py")), ids=lambda p: p.name)
def test_every_failure_line_is_a_template_of_the_module_filled_with_named_values(path):
    """expect(ok, "…{got!r}…", got=…) and fail(…): the template is a string constant (the grader accepts no other
    text from a kernel), and every field it names is one of the call's keywords."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) in ("expect", "fail")]
    for call in calls:
        what = call.args[1] if getattr(call.func, "id") == "expect" else call.args[0]
        where = f"{path.name}:{call.lineno}"
        assert isinstance(what, ast.Constant) and isinstance(what.value, str), f"{where}: not a constant template"
        fields = {name for _, name, _, _ in string.Formatter().parse(what.value) if name is not None}
        given = {k.arg for k in call.keywords} - {"hint"}
        assert fields <= given, f"{where}: the template names {fields - given}, not given"
        assert all(f.isidentifier() for f in fields), f"{where}: fields must be plain names: {fields}"


def test_a_student_frame_is_traced_to_its_todo():
    from agentrl_ref.checks import todo_of

    source = "def f(x):\n    y = 1\n    # TODO 2: the second part\n    return x[0]\n"
    name = "<cell-todo-demo>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    namespace: dict = {}
    exec(compile(source, name, "exec"), namespace)
    with pytest.raises(TypeError) as raised:
        namespace["f"](3)
    assert todo_of(raised.value) == "TODO 2"
    assert todo_of(ValueError("not from a cell")) is None


def test_hints_name_only_the_course_text():
    """What the grader may show as a hint or a template is a string constant of the checks themselves."""
    from grader.grade.explain import constants

    allowed = constants("ex1_format_reward")
    assert "TODO 2：默认情况下 . 不匹配换行，推理内容一跨行就匹配不上：re.match 的第三个参数写 re.DOTALL。" in allowed
    assert "输入 {text} 得到 {got!r}，期望 {expected}" in allowed
    assert Path(CHECKS / "ex1_format_reward.py").is_file()


def test_the_grader_reads_a_check_module_whatever_this_process_ran_before(monkeypatch):
    """The visible inputs the grader may quote (explain.public_values) are read from the check module's own names:
    a name that holds itself, or a builtins dict that holds itself (what a @dataclass run in a namespace without
    __name__ leaves), is skipped, not followed until RecursionError stops every feedback page."""
    import builtins
    from importlib import import_module

    from grader.grade import explain

    name = ASSIGNMENTS[1]
    module = import_module(f"agentrl_ref.checks.{name}")
    loop: list = []
    loop.append(loop)
    nest: dict = {}
    nest["itself"] = [nest]
    monkeypatch.setattr(module, "A_LOOP", loop, raising=False)
    monkeypatch.setattr(module, "A_NEST", nest, raising=False)
    monkeypatch.setitem(vars(builtins), "__builtins__", vars(builtins))
    explain.public_values.cache_clear()
    try:
        found = explain.public_values(name)
    finally:
        explain.public_values.cache_clear()
        monkeypatch.undo()
    assert explain.constants(name) <= found
