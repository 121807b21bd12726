"""Execute: one notebook runs in a sandbox, with limits, its outputs capped while they arrive.

    runner = runner_for(assignment, grading_dir)       # one per assignment and settings, per process
    result = runner.run(nb, workdir)                   # nb executed in place; what happened (status, notes)

and the same as nbgrader's step SandboxedExecute (lists.EXECUTE), for `make grade` and `nbgrader autograde`.

Trusted code: it runs in the grader's process. The kernel runs the student's code in a bubblewrap
sandbox (grader/sandbox) that sees only the notebook's empty working folder and a copy of the course
package holding no reference answer for this assignment (package.py). While it runs, outputs are capped as
they arrive (one print of 10 GB must not reach the grader's memory), messages nbclient cannot handle are
dropped, and outputs that never arrive are an error, not a silent loss. Judging is the next step
(verdict.py); nothing here decides a score.
"""
from __future__ import annotations

import asyncio
import copy
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from jupyter_client import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient.exceptions import CellExecutionComplete, CellTimeoutError, DeadKernelError
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Any, Integer, Unicode

from agentrl_ref.checks.probes import GRADING_ENV
from grader.course import course_of
from grader.grade.package import grading_package
from grader.grade.reference import expected_for, hidden_for
from grader.grade.state import NotebookState
from grader.sandbox import Sandbox, SandboxLimits

# The grading kernel's environment: probes write records; one thread per math library, since two kernels
# share the two cores (and the same settings in the reference run keep the records comparable).
GRADING_KERNEL_ENV = {GRADING_ENV: "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def well_formed(nb: nbformat.NotebookNode) -> int:
    """Drop every output nbformat would refuse (a kernel can send anything) and execution counts that are
    not numbers, so that the executed notebook can always be written; return how many were dropped."""
    from nbformat.v4.nbbase import validate

    dropped = 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        count = cell.get("execution_count")
        if not (count is None or (isinstance(count, int) and not isinstance(count, bool) and count >= 0)):
            cell["execution_count"] = None
        kept = []
        for output in cell.get("outputs", []):
            try:
                validate(output, output.get("output_type"))
                kept.append(output)
            except Exception:  # noqa: BLE001 - any output nbformat refuses
                dropped += 1
        cell["outputs"] = kept
    return dropped


_RUNNERS: dict[tuple, "Runner"] = {}
_RUNNERS_LOCK = threading.Lock()


def runner_for(assignment: str, grading: Path, *, cell_timeout: int = 60, notebook_timeout: int = 600,
               isolation: str = "auto", limits=None) -> "Runner":
    """The Runner of an assignment, with its package copy in grading/packages/<assignment> (one per process)."""
    key = (assignment, str(grading), cell_timeout, notebook_timeout, isolation, limits)
    with _RUNNERS_LOCK:
        if key not in _RUNNERS:
            package = grading_package(assignment, grading / "packages" / assignment)
            _RUNNERS[key] = Runner(package, cell_timeout=cell_timeout, notebook_timeout=notebook_timeout,
                                   isolation=isolation, limits=limits)
        return _RUNNERS[key]


IOPUB_SECONDS = 30  # after a cell's reply, how long its remaining outputs may take to arrive
ATTEMPTS = 3        # a notebook the grader could not run (its kernel never started) is run this many times at most


class GraderFailure(RuntimeError):
    """The grading environment could not run a notebook (its kernel did not start, the sandbox could not be
    set up, ATTEMPTS times): nothing of the student's ran, so nothing is scored; status `ungraded`."""


class GuardedExecute(Execute):
    """nbgrader's Execute, with outputs capped while they arrive (per cell and per notebook), messages it
    cannot handle dropped instead of ending the run, and outputs that never arrive made loud: after a
    cell's reply the kernel has IOPUB_SECONDS for the rest of its outputs, then the run stops with an
    error (nbclient's default is 4 s, after which it goes on without them and without a word)."""

    max_cell_bytes = Integer(1_000_000, help="output kept per cell").tag(config=True)
    max_notebook_bytes = Integer(5_000_000, help="output kept per notebook").tag(config=True)

    def __init__(self, **kw):
        kw.setdefault("iopub_timeout", IOPUB_SECONDS)
        kw.setdefault("raise_on_iopub_timeout", True)
        super().__init__(**kw)

    def preprocess(self, nb, resources=None, km=None):
        self._cell_bytes: dict[int, int] = {}
        self._total = 0
        self.truncated: set[int] = set()
        self.malformed = 0
        self.timed_out = False   # a cell ran past the cell timeout (its outputs then cannot end normally)
        self.timed_out_cells: list[int] = []   # which cells (indices in the notebook)
        self.reached = False      # a code cell was sent to the kernel: from then on a failure may be the notebook's
        self._nb = nb
        return super().preprocess(nb, resources, km=km)

    def preprocess_cell(self, cell, resources, index):
        if cell.get("cell_type") == "code":
            self.reached = True
        return super().preprocess_cell(cell, resources, index)

    async def _async_handle_timeout(self, timeout, cell=None):
        """A cell ran too long: it is interrupted; if the interrupt works its error arrives at once, if not
        there is nothing left to wait for (nbclient's 4 s, not IOPUB_SECONDS)."""
        self.timed_out = True
        index = next((i for i, c in enumerate(self._nb.cells) if c is cell), None)
        if index is not None and index not in self.timed_out_cells:
            self.timed_out_cells.append(index)
        self.iopub_timeout = min(self.iopub_timeout, 4)
        return await super()._async_handle_timeout(timeout, cell)

    def process_message(self, msg, cell, cell_index):
        """A message nbclient cannot handle (a missing key, a display id that is a list, data that is not
        a dict…: the kernel is the student's) is dropped and counted."""
        try:
            return super().process_message(msg, cell, cell_index)
        except CellExecutionComplete:
            raise
        except Exception:  # noqa: BLE001 - any malformed message
            self.malformed += 1
            return None

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        size = len(content.get("text", "")) + sum(len(v) if isinstance(v, str) else len(json.dumps(v))
                                                  for v in content.get("data", {}).values())
        used = self._cell_bytes.get(cell_index, 0)
        if used + size > self.max_cell_bytes or self._total + size > self.max_notebook_bytes:
            self.truncated.add(cell_index)
            return None
        self._cell_bytes[cell_index] = used + size
        self._total += size
        return super().output(outs, msg, display_id, cell_index)


@dataclass
class RunResult:
    nb: nbformat.NotebookNode
    status: str = "ok"                  # ok | timeout | killed | error | ungraded (GraderFailure)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float | None = 0.0     # every process of the kernel's sandbox (its group's CPU counter); None: unknown
    timed_out: dict[int, int] = field(default_factory=dict)   # cell index -> the cell timeout that stopped it


class Runner:
    """Executes notebooks for one assignment: sandboxed at an isolation level (default: the best one here,
    grader/sandbox/levels.py) or, explicitly (isolation "none"), not."""

    def __init__(self, package_root: Path, *, cell_timeout: int = 60, notebook_timeout: int = 600,
                 isolation: str = "auto", limits=None):
        self.package_root = Path(package_root)
        self.cell_timeout = cell_timeout
        self.notebook_timeout = notebook_timeout
        self.sandbox = None
        self.level = "none"
        if isolation != "none":
            self.sandbox = Sandbox(self.package_root, limits or SandboxLimits(), extra_env=GRADING_KERNEL_ENV,
                                   isolation=isolation)
            self.level = self.sandbox.level
        self.cpu_seconds: float | None = 0.0   # of every sandbox this runner ran (core-seconds); None: not counted
        self._count = threading.Lock()

    def _executor(self) -> GuardedExecute:
        # a kernel may take as long to start as a cell may take to run (a loaded or emulated machine)
        return GuardedExecute(timeout=self.cell_timeout, startup_timeout=max(60, self.cell_timeout),
                              interrupt_on_timeout=True, kernel_name="python3", shutdown_kernel="immediate")

    def run(self, nb: nbformat.NotebookNode, workdir: Path) -> RunResult:
        """Execute nb (in place) with workdir as the kernel's folder. Whatever the kernel does, this returns
        (an unexpected failure is status "error" with a note). A run that failed before any code cell reached
        the kernel (the kernel did not start or answer, the sandbox could not be set up: the grader's fault,
        never the notebook's) is run again, from the notebook as it came, up to ATTEMPTS times; if it never
        gets that far, the status is `ungraded`, with the reason."""
        started = time.perf_counter()
        pristine = copy.deepcopy(nb)
        for attempt in range(1, ATTEMPTS + 1):
            result, executor, fault = self._attempt(nb, workdir)
            if fault is None:
                break
            if attempt == ATTEMPTS:
                result.status = "ungraded"
                result.notes = [f"评分环境没能运行这份 notebook（{fault}；试了 {ATTEMPTS} 次）：学生的代码一行也没有"
                                "运行，不是它的问题；这份没有评分，再评一次即可"]
                break
            print(f"评分环境出错（{fault}）：第 {attempt + 1} 次运行这份 notebook", file=sys.stderr)
            nb.cells, nb.metadata = copy.deepcopy(pristine.cells), copy.deepcopy(pristine.metadata)
        self._cell_timeouts(executor, nb, result)
        if getattr(executor, "malformed", 0):
            result.notes.append(f"内核发来 {executor.malformed} 条无法处理的消息：已丢弃")
        dropped = well_formed(nb)
        if dropped:
            result.notes.append(f"{dropped} 个输出格式不对：已丢弃")
        if getattr(executor, "truncated", None):
            result.notes.append(f"输出过大，已截断（{len(executor.truncated)} 个单元）")
            for index in executor.truncated:
                nb.cells[index].setdefault("outputs", []).append(nbformat.v4.new_output(
                    "stream", name="stdout", text="\n… [输出过大，之后的输出没有保留]\n"))
        result.seconds = time.perf_counter() - started
        return result

    def _attempt(self, nb, workdir: Path) -> tuple[RunResult, "GuardedExecute", str | None]:
        """One run of nb: what happened, its executor, and the grader's fault if it failed before any code
        cell reached the kernel (else None)."""
        result = RunResult(nb)
        workdir.mkdir(parents=True, exist_ok=True)
        executor = self._executor()
        resources = {"metadata": {"path": str(workdir)}}
        fault = None
        try:
            if self.sandbox is not None:
                with self.sandbox.session(workdir, wall_seconds=self.notebook_timeout) as session:
                    self._execute(executor, nb, resources, session.kernel_manager(), result)
                result.cpu_seconds = session.report.cpu_seconds
                with self._count:
                    known = None not in (self.cpu_seconds, result.cpu_seconds)
                    self.cpu_seconds = self.cpu_seconds + result.cpu_seconds if known else None
                cause = session.report.cause_zh()
                if session.report.wall_limit_hit:
                    result.status = "timeout"
                    result.notes.append(self._timeout_note())
                elif cause:
                    result.status = "killed"
                    result.notes.append(f"{cause}：没跑完的测试记 0 分")
                if session.report.full_zh():
                    result.notes.append(session.report.full_zh())
                if session.report.leftover_processes_killed:
                    result.notes.append(f"运行结束时还有 {session.report.leftover_processes_killed} 个进程没退出，"
                                        "已全部终止")
            else:
                self._execute_unsafe(executor, nb, resources, result)
            if result.status == "killed" and not getattr(executor, "reached", False):
                fault = "内核还没运行任何单元就退出了"
        except Exception as exc:  # noqa: BLE001 - the sandbox or nbclient failed on this notebook
            result.status = "error"
            result.notes.append(f"执行时出错（{type(exc).__name__}）：没跑完的测试记 0 分")
            if not getattr(executor, "reached", False):
                fault = f"{type(exc).__name__}: {str(exc)[:160]}"
        finally:
            shutil.rmtree(workdir, ignore_errors=True)  # files the notebook wrote stay nowhere
            _close_thread_loop()
        return result, executor, fault

    def _cell_timeouts(self, executor, nb, result: RunResult) -> None:
        """Cells the cell timeout stopped (and the interrupt ended): the notebook's status is timeout, its note
        names them, and the verdict marks them on the student's page."""
        cells = getattr(executor, "timed_out_cells", [])
        if not cells:
            return
        result.timed_out = {index: self.cell_timeout for index in cells}
        if result.status in ("ok", "error"):
            result.status = "timeout"
        names = "、".join(_cell_name(nb, i) for i in cells)
        note = f"{names}运行超过 {self.cell_timeout} 秒（可能有死循环），被中断：用到它的测试记 0 分"
        if note not in result.notes:
            result.notes.append(note)

    def _timeout_note(self) -> str:
        return f"整本运行超过 {self.notebook_timeout} 秒（可能有死循环），被终止：没跑完的测试记 0 分"

    def _execute(self, executor, nb, resources, km, result: RunResult) -> None:
        try:
            executor.preprocess(nb, resources, km=km)
        except DeadKernelError:
            result.status = "killed"  # the session report (read after the session ends) names the cause
        except CellTimeoutError as exc:
            if "IOPub" in str(exc) and not executor.timed_out:
                result.status = "error"
                result.notes.append(f"有单元运行结束后 {IOPUB_SECONDS} 秒内输出仍没有收全：这份 notebook 的结果"
                                    "可能不全，之后的单元没有运行，请检查后重评")
                return
            result.status = "timeout"
            result.notes.append(f"有单元运行超过 {self.cell_timeout} 秒仍不结束（中断也停不下来），被终止："
                                "没跑完的测试记 0 分")

    def _execute_unsafe(self, executor, nb, resources, result: RunResult) -> None:
        """--unsafe-no-sandbox: a plain kernel with the package copy first on its path; a watchdog
        stops a notebook that runs too long. Nothing else is isolated."""
        # IPC sockets in a private folder: kernels started at the same time over TCP can race for a port
        conn = Path(tempfile.mkdtemp(prefix="agentrl-kernel-"))
        km = _PlainKernelManager(kernel_name="python3", transport="ipc")
        km.connection_file = str(conn / "kernel.json")
        km.ip = str(conn / "kernel-ipc")
        km.grading_env = {**os.environ, **GRADING_KERNEL_ENV, "PYTHONPATH": str(self.package_root)}
        timer = threading.Timer(self.notebook_timeout, km.kill_now)
        timer.daemon = True
        timer.start()
        try:
            self._execute(executor, nb, resources, km, result)
        finally:
            timer.cancel()
            km.kill_now(watchdog=False)  # nbclient leaves a kernel it did not start running
            if km.has_kernel:
                run_sync(km.shutdown_kernel)(now=True)
            shutil.rmtree(conn, ignore_errors=True)
        if timer.finished.is_set() and km.killed_by_watchdog:
            result.status = "timeout"
            result.notes.append(self._timeout_note())


def _cell_name(nb, index: int) -> str:
    """How a note names a cell: its grade id if it has one, else its position."""
    meta = nb.cells[index].get("metadata", {}).get("nbgrader", {}) if index < len(nb.cells) else {}
    gid = meta.get("grade_id") if isinstance(meta, dict) else None
    return f"单元 {gid}" if isinstance(gid, str) and gid.isidentifier() else f"第 {index + 1} 个单元"


def _close_thread_loop() -> None:
    """Close the event loop nbclient made for this thread (jupyter_core keeps one per thread and never
    closes it; a worker thread that ends leaves it to the garbage collector, which then warns about its
    unclosed sockets in whatever code happens to run). The next notebook in this thread gets a new one."""
    from jupyter_core.utils import _loop

    loop = _loop.get()
    if loop is not None and not loop.is_closed() and not loop.is_running():
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    try:
        asyncio.set_event_loop(None)
    except RuntimeError:
        pass


class _PlainKernelManager(AsyncKernelManager):
    """An unsandboxed kernel with the grading environment (for --unsafe-no-sandbox only)."""

    grading_env: dict = {}
    killed_by_watchdog = False

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        kw["env"] = {k: v for k, v in self.grading_env.items() if k != "JPY_PARENT_PID"}
        return await super()._async_launch_kernel(kernel_cmd, **kw)

    def kill_now(self, watchdog: bool = True):
        process = getattr(self.provisioner, "process", None) if self.provisioner else None
        if process is not None and process.poll() is None:
            self.killed_by_watchdog = self.killed_by_watchdog or watchdog
            process.kill()


class SandboxedExecute(NbGraderPreprocessor):
    """The notebook runs in the grading sandbox (Runner), what happened goes into its state. The reference
    records the next step judges against are the state's (make grade finds them once per assignment), else
    found here: the instructor notebook run the same way (reference.py, cached)."""

    zh = "执行"   # what the step does, for a note if it fails
    timeout = Integer(60, help="seconds per cell").tag(config=True)
    notebook_timeout = Integer(600, help="seconds per notebook").tag(config=True)
    isolation = Unicode("auto", help="auto | cgroup | job | none (grader/sandbox/levels.py)").tag(config=True)
    grading_dir = Unicode("", help="trusted working folder (default: <course>/.grading)").tag(config=True)
    limits = Any(None, help="sandbox.SandboxLimits (default limits when None)").tag(config=True)

    def preprocess(self, nb, resources):
        info, state = resources["nbgrader"], NotebookState.of(resources)
        course = course_of(self)
        grading = Path(self.grading_dir) if self.grading_dir else course / ".grading"
        runner = runner_for(info["assignment"], grading, cell_timeout=self.timeout,
                            notebook_timeout=self.notebook_timeout, isolation=self.isolation, limits=self.limits)
        if state.expected is None:
            state.expected = expected_for(info["assignment"], course / "source", runner, grading)
            state.hidden = hidden_for(info["assignment"], course / "source")
        result = runner.run(nb, grading / "work" / f"{info['student']}-{info['assignment']}-{id(nb):x}")
        if result.status != "ok":
            state.status = result.status
        state.notes.extend(result.notes)
        state.seconds = result.seconds
        state.timed_out = result.timed_out
        if result.status == "ungraded":   # nothing of the student's ran: no verdict, no score, no page
            raise GraderFailure(result.notes[0])
        return result.nb, resources
