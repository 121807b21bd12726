"""grader/ stays one readable package: no import cycles (not even inside functions), no sys.path edits
outside tests' conftest, every nbgrader preprocessor of the course in preprocessors.py, and the pipeline
`make grade` runs is the list nbgrader runs."""
from __future__ import annotations

import ast
from pathlib import Path

from grader.course import GRADER, ROOT


def _module(path: Path) -> str:
    parts = path.relative_to(GRADER).with_suffix("").parts
    return ".".join(("grader",) + tuple(p for p in parts if p != "__init__"))


def _imports(path: Path) -> set[str]:
    """Every grader module path imports, at the top or inside a function."""
    name, found = _module(path), set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.startswith("grader")}


MODULES = {_module(p): p for p in GRADER.rglob("*.py") if "cluster" not in p.parts}


def test_no_import_cycles_in_grader():
    graph = {m: {d for d in _imports(p) if d in MODULES and d != m and not m.startswith(d + ".")}
             for m, p in MODULES.items()}
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for dep in sorted(graph[module]):
            assert state.get(dep) != "open", " -> ".join(path + [dep])
            if dep not in state:
                visit(dep, path + [dep])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def _is_sys_path(node) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", "") == "sys"


def test_no_sys_path_edits_outside_the_tests_conftest():
    edits = []
    for path in [*(ROOT / "grader").rglob("*.py"), *(ROOT / "tests").rglob("*.py"), ROOT / "bench" / "grading.py"]:
        if path.name == "conftest.py" or "__pycache__" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            mutates = isinstance(node, ast.Attribute) and node.attr in ("insert", "append", "extend") and \
                _is_sys_path(node.value)
            assigns = isinstance(node, ast.Subscript) and _is_sys_path(node.value) and isinstance(node.ctx, ast.Store)
            if mutates or assigns:
                edits.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not edits, edits


def test_every_course_preprocessor_is_in_preprocessors_py():
    import importlib

    from nbconvert.preprocessors import Preprocessor

    found = {}
    for name in MODULES:
        if name.endswith(("__main__", "nbgrader_config")):
            continue
        for obj in vars(importlib.import_module(name)).values():
            if isinstance(obj, type) and issubclass(obj, Preprocessor) and obj.__module__ == name:
                found[obj.__name__] = name
    outside = {cls: module for cls, module in found.items() if module != "grader.preprocessors"}
    assert outside == {"GuardedExecute": "grader.execute"}, outside   # the executor inside the execute step
    assert {"RebuildOnRelease", "SandboxedExecute", "TrustedVerdict", "CapOutputs", "SaveVerdicts"} <= set(found)


def test_make_grade_runs_the_steps_nbgrader_runs():
    from grader import pipeline, preprocessors

    source = Path(pipeline.__file__).read_text(encoding="utf-8")
    assert pipeline.SANITIZE is preprocessors.SANITIZE   # prepare runs nbgrader's sanitising list itself
    for cls in [c for c in preprocessors.AUTOGRADE if c.__module__ == "grader.preprocessors"]:
        assert cls.__name__ in source, cls                 # and every step of ours in AUTOGRADE
    assert [name for name, _, _ in pipeline.STEPS] == ["prepare", "execute", "judge", "cap", "record", "feedback"]
