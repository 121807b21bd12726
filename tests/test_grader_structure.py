"""grader/ stays easy to change: laid out by command, its imports going one way, nbgrader's lists as the pipeline.

- One folder per command (grade/, publish/, cluster/, serve/), the sandbox on its own (sandbox/), and at the top only
  what they share (course.py, cells.py) and the entry points (__main__.py, nbgrader_config.py).
- No import cycle between modules (not even inside functions) nor between those folders; the sandbox
  imports nothing of the rest, which reaches it only through its face (grader/sandbox/__init__.py); no
  module over 400 lines; no sys.path edits outside the tests' conftest.
- The steps `nbgrader autograde` runs are the lists `make grade` runs, made and run as they are; each step's
  class lives beside the code that does its job; a notebook's state is one typed record; a failing step
  stops its own notebook, whose row names the step, and nothing else.
"""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import nbformat
import pytest
from nbconvert.preprocessors import Preprocessor

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


MODULES = {_module(p): p for p in GRADER.rglob("*.py") if "student-lab" not in p.parts}
GRAPH = {m: {d for d in _imports(p) if d in MODULES and d != m and not m.startswith(d + ".")}
         for m, p in MODULES.items()}

# Which folder ("room") a module is in, and which rooms each room may import: the commands stand on what
# they share and on the sandbox; the sandbox stands on nothing of the rest.
SHARED = {"grader.course", "grader.cells"}
ENTRY = {"grader", "grader.__main__", "grader.nbgrader_config"}
ROOMS = ("serve", "grade", "publish", "cluster", "sandbox")
MAY_IMPORT = {
    "serve": {"shared", "grade"},
    "grade": {"shared", "sandbox", "cluster"},
    "publish": {"shared"},
    "cluster": {"sandbox"},
    "sandbox": set(),
    "shared": set(),
}


def _room(module: str) -> str:
    if module in SHARED:
        return "shared"
    if module in ENTRY:
        return "entry"
    parts = module.split(".")
    assert len(parts) >= 2 and parts[1] in ROOMS, f"{module}: not in one of grader's rooms {ROOMS}"
    return parts[1]


def test_the_package_is_laid_out_by_command():
    top = {m for m in MODULES if m.count(".") <= 1 and _room(m) not in ROOMS}
    assert top == SHARED | ENTRY, top
    assert {_room(m) for m in MODULES} == set(ROOMS) | {"shared", "entry"}
    for data in ("nbgrader_config.py", "source", "student-lab", "lab-settings", "cluster/slurm", "cluster/kubernetes"):
        assert (GRADER / data).exists(), data     # the course's data where nbgrader and the Makefile find it
    assert not (GRADER / "postgres.py").exists() and (ROOT / "tests" / "postgres_server.py").is_file()


def test_no_import_cycles_in_grader():
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for dep in sorted(GRAPH[module]):
            assert state.get(dep) != "open", " -> ".join(path + [dep])
            if dep not in state:
                visit(dep, path + [dep])
        state[module] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])


def test_each_room_imports_only_the_rooms_below_it():
    wrong = [f"{m} -> {d}" for m, deps in GRAPH.items() for d in deps
             if _room(m) != "entry" and _room(d) != _room(m) and _room(d) not in MAY_IMPORT[_room(m)]]
    assert not wrong, wrong
    inside = [f"{m} -> {d}" for m, deps in GRAPH.items() for d in deps
              if _room(m) not in ("sandbox", "entry") and _room(d) == "sandbox" and d != "grader.sandbox"]
    assert not inside, inside   # the rest of the grader reaches the sandbox through its face only


def test_no_module_over_400_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, long


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


def test_nbgrader_runs_the_lists_make_grade_runs():
    from nbgrader.preprocessors import AssignLatePenalties, CheckCellMetadata
    from traitlets.config.loader import PyFileConfigLoader

    from grader.grade import pipeline
    from grader.grade.feedback import FEEDBACK, WriteFeedback
    from grader.grade.lists import AUTOGRADE, EXECUTE, RECORD, SANITIZE
    from grader.publish.blanks import GENERATE

    assert AUTOGRADE == EXECUTE + RECORD + [AssignLatePenalties, CheckCellMetadata]
    config = PyFileConfigLoader("nbgrader_config.py", path=str(GRADER)).load_config()
    assert config.Autograde.sanitize_preprocessors == SANITIZE
    assert config.Autograde.autograde_preprocessors == AUTOGRADE
    assert config.GenerateAssignment.preprocessors == GENERATE
    assert config.GenerateFeedback.preprocessors == FEEDBACK
    # make grade: the sandbox threads run SANITIZE then EXECUTE, the writer thread RECORD then the feedback page
    assert pipeline.IN_SANDBOX_THREADS == SANITIZE + EXECUTE
    assert pipeline.IN_WRITER_THREAD == RECORD + [WriteFeedback]


def test_a_run_makes_the_steps_of_the_lists_with_its_settings(tmp_path):
    from grader.grade.execute import SandboxedExecute
    from grader.grade.pipeline import IN_SANDBOX_THREADS, IN_WRITER_THREAD, Run

    run = Run(tmp_path / "course", tmp_path / "grading", "sqlite://", cell_timeout=7, notebook_timeout=70,
              level="none")
    assert [type(s) for s in run.in_sandbox_threads] == IN_SANDBOX_THREADS
    assert [type(s) for s in run.in_writer_thread] == IN_WRITER_THREAD
    execute = next(s for s in run.in_sandbox_threads if isinstance(s, SandboxedExecute))
    assert (execute.timeout, execute.notebook_timeout, execute.isolation, execute.grading_dir) == \
        (7, 70, "none", str(tmp_path / "grading"))
    assert all(s.config.CourseDirectory.root == str(tmp_path / "course") for s in run.in_sandbox_threads)


def test_each_step_lives_beside_the_code_that_does_its_job():
    from grader.grade.execute import SandboxedExecute, runner_for
    from grader.grade.feedback import StudentFacingOutputs, WriteFeedback, student_facing, write_feedback
    from grader.grade.gradebook import SaveVerdicts, save_verdicts
    from grader.grade.outputs import CapOutputs, cap_outputs
    from grader.grade.prepare import RebuildOnRelease, SkipDemoCells, for_grading, repair, suspicious
    from grader.grade.verdict import TrustedVerdict, judge_notebook
    from grader.publish.blanks import FillInTheBlanks, blank_source
    from grader.serve.showing import ShowTotal, ShowVisible, visible_only

    jobs = {RebuildOnRelease: [repair, suspicious], SkipDemoCells: [for_grading], SandboxedExecute: [runner_for],
            TrustedVerdict: [judge_notebook], CapOutputs: [cap_outputs], SaveVerdicts: [save_verdicts],
            WriteFeedback: [write_feedback], StudentFacingOutputs: [student_facing], FillInTheBlanks: [blank_source],
            ShowVisible: [visible_only], ShowTotal: [visible_only]}
    for step, functions in jobs.items():
        assert {f.__module__ for f in functions} == {step.__module__}, step
    import importlib

    steps = {obj for name in MODULES if _room(name) != "entry"
             for obj in vars(importlib.import_module(name)).values()
             if isinstance(obj, type) and issubclass(obj, Preprocessor) and obj.__module__ == name}
    assert {s.__name__ for s in steps - set(jobs)} == {"GuardedExecute"}   # the executor inside SandboxedExecute


def test_a_notebooks_state_is_one_typed_record(tmp_path):
    from grader.grade.pipeline import Run
    from grader.grade.state import NotebookState
    from grader.grade.submissions import Submission

    assert dataclasses.is_dataclass(NotebookState)
    run = Run(tmp_path, tmp_path, "sqlite://", expected={"a": {"t": [("x", 1)]}}, hidden={"a": ["secret"]})
    resources = run.resources(Submission("s", "a", None))
    state = NotebookState.of(resources)
    assert isinstance(state, NotebookState) and NotebookState.of(resources) is state
    assert (state.status, state.notes, state.expected, state.hidden) == ("ok", [], {"t": [("x", 1)]}, ["secret"])
    assert [v for v in resources.values() if isinstance(v, NotebookState)] == [state]   # the one record


class _Fails(Preprocessor):
    zh = "测试"

    def preprocess(self, nb, resources):
        raise KeyError("boom")


class _Counts(Preprocessor):
    def preprocess(self, nb, resources):
        nb.metadata["counted"] = nb.metadata.get("counted", 0) + 1
        return nb, resources


@pytest.mark.parametrize("fails", [False, True])
def test_a_failing_step_stops_its_own_notebook_and_names_the_step(tmp_path, fails):
    from grader.grade.pipeline import Job, Run, finish, run_steps
    from grader.grade.state import NotebookState
    from grader.grade.submissions import Submission

    run = Run(tmp_path, tmp_path, "sqlite://")
    run.in_writer_thread = [_Counts()]
    jobs = [Job(Submission(s, "a", None), nbformat.v4.new_notebook(), {"nbgrader": {}}) for s in ("x", "y")]
    run_steps(jobs[0], [_Counts()] + ([_Fails()] if fails else []) + [_Counts()], run)
    run_steps(jobs[1], [_Counts(), _Counts()], run)
    for job in jobs:
        finish(job, run)
    first, second = jobs
    assert (first.nb.metadata["counted"], first.sub.status) == ((1, "error") if fails else (3, "ok"))
    assert second.nb.metadata["counted"] == 3 and second.sub.status == "ok" and second.sub.notes == []
    if fails:
        assert first.sub.notes == ["测试这份 notebook 时出错（_Fails：KeyError）：后面的步骤没有做"]
        assert NotebookState.of(first.resources).status == "error"
    assert set(run.timings) == {"_Counts"} | ({"_Fails"} if fails else set())
