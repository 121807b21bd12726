"""A notebook the grader could not run is run again; a row says `error` only when the notebook's own code failed.

Real kernels in the real sandbox (grader/grade/execute.py, Runner). The grader's failure is the one sharded
grading met (grader/sandbox/job.py: another shard's clean-up killed a kernel that had just started): the kernel's
processes are killed as soon as it is launched, and jupyter_client says "Kernel died before replying to kernel_info"
(a RuntimeError) before any cell reaches it.
"""
from __future__ import annotations

import nbformat
import pytest

from grader.grade.execute import ATTEMPTS, GraderFailure, GuardedExecute, Runner, runner_for
from grader.grade.pipeline import Job, run_steps
from grader.grade.state import NotebookState

A = "ex1_format_reward"


class KilledAtStart(GuardedExecute):
    def start_new_kernel(self, **kwargs):
        super().start_new_kernel(**kwargs)
        self.km._sbx_session.kill()   # every process of the sandbox, as the other shard's clean-up did


class Flaky(Runner):
    """The course's runner whose first `failing` kernels are killed as they start."""

    def __init__(self, base: Runner, failing: int):
        self.__dict__.update(base.__dict__)
        self.failing, self.executors = failing, 0

    def _executor(self) -> GuardedExecute:
        self.executors += 1
        if self.executors <= self.failing:
            return KilledAtStart(timeout=self.cell_timeout, startup_timeout=60, kernel_name="python3",
                                 shutdown_kernel="immediate")
        return super()._executor()


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return runner_for(A, tmp_path_factory.mktemp("retry"))


def _notebook(*sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 标题")] + [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


def _stdout(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


def test_a_kernel_that_did_not_start_is_started_again_and_the_notebook_graded_as_usual(base, tmp_path):
    runner = Flaky(base, failing=1)
    nb = _notebook("print(6 * 7)")
    result = runner.run(nb, tmp_path / "work")
    assert runner.executors == 2
    assert result.status == "ok" and result.notes == []   # a grade never depends on the machine's load
    assert _stdout(nb.cells[1]) == "42\n" and len(nb.cells[1].outputs) == 1


def test_a_notebook_the_grader_never_could_run_is_ungraded_not_an_error_and_nothing_is_judged(base, tmp_path):
    runner = Flaky(base, failing=ATTEMPTS)
    nb = _notebook("print(6 * 7)")
    result = runner.run(nb, tmp_path / "work")
    assert runner.executors == ATTEMPTS
    assert result.status == "ungraded" and "试了 3 次" in result.notes[0] and "RuntimeError" in result.notes[0]
    assert nb.cells[1].outputs == []

    class Execute:   # the execute step as nbgrader's list calls it, on that runner's result
        def preprocess(self, nb, resources):
            state = NotebookState.of(resources)
            state.status, state.notes = result.status, list(result.notes)
            raise GraderFailure(result.notes[0])

    class Judge:
        def preprocess(self, nb, resources):   # never reached
            raise AssertionError("judged a notebook that never ran")

    class Run:
        def add_time(self, name, seconds):
            pass

    job = Job(sub=None, nb=nb, resources={})
    run_steps(job, [Execute(), Judge()], Run())
    assert job.stopped and NotebookState.of(job.resources).status == "ungraded"


@pytest.mark.parametrize("code, status", [("import os\nos._exit(3)", "killed"),
                                          ("raise RuntimeError('学生的错')", "ok")])
def test_a_failure_of_the_notebooks_own_code_is_never_run_again(base, tmp_path, code, status):
    """Its kernel started and ran its cells: what happened is the notebook's, once."""
    runner = Flaky(base, failing=0)
    nb = _notebook(code, "print('后面')")
    result = runner.run(nb, tmp_path / "work")
    assert runner.executors == 1 and result.status == status
    assert any(o.output_type == "error" for o in nb.cells[1].outputs) == (status == "ok")
