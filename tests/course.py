"""What the tests need to know about the course: assignments, their solutions, hidden tests and mutations."""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat

from grader.course import assignments
from grader.publish.blanks import BLANK, has_blanks, solution_fills

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "grader" / "source"
ASSIGNMENTS = assignments()   # in the course's order: ex1 ... ex9, ex10, ex11

# nbclient gives a cell's outputs 4 s after its reply to be read, then cancels the reading and goes on without
# a word: on a busy machine a test would see a cell with fewer outputs than it made. Tests that read outputs
# wait longer, and if the outputs still do not come the cell fails with "Timeout waiting for IOPub output".
KEEP_OUTPUTS = {"iopub_timeout": 120, "raise_on_iopub_timeout": True}


def source_notebook(assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(SOURCE / assignment / f"{assignment}.ipynb", as_version=4)


def student_notebook(assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / "notebooks" / f"{assignment}.ipynb", as_version=4)


def reference_fills(assignment: str) -> list[str]:
    """The instructor's text for every blank of the assignment, in notebook order."""
    return [fill for cell in source_notebook(assignment).cells
            if cell.cell_type == "code" and has_blanks(cell.source) for fill in solution_fills(cell.source)]


def solution_lines(assignment: str) -> list[str]:
    """Lines of the instructor's answers that the release does not show (what must never come back)."""
    release = "\n".join(c.source for c in student_notebook(assignment).cells)
    lines = [line.strip() for fill in reference_fills(assignment) for line in fill.split("\n")]
    return [line for line in lines if len(line) > 8 and line not in release]


def execution_time(stamp: str) -> float:
    """Seconds since the epoch of a timestamp nbclient writes into metadata.execution."""
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def busy_processes_cell(processes: int, seconds: int) -> str:
    """Notebook code: `processes` busy processes for `seconds`, then what they got against the wall clock, in cores
    (the kernel's accounting of their CPU time, getrusage), printed as "cores used: X". Leaves _os and _t imported."""
    return f"""\
import os as _os, resource as _r, time as _t
_start = _t.monotonic()
_kids = []
for _ in range({processes}):
    _pid = _os.fork()
    if _pid == 0:
        _end = _t.monotonic() + {seconds}
        while _t.monotonic() < _end:
            pass
        _os._exit(0)
    _kids.append(_pid)
for _pid in _kids:
    _os.waitpid(_pid, 0)
_u = _r.getrusage(_r.RUSAGE_CHILDREN)
print("cores used:", round((_u.ru_utime + _u.ru_stime) / (_t.monotonic() - _start), 2))
"""


def visible_failures(select, objects_of) -> dict[str, str]:
    """{test id: message} of every visible test that select(test) picks and that fails when run in this process on
    objects_of(name) for each name the test needs (what check() would say)."""
    from agentrl_ref.checks import _REGISTRY, _load_all, _run_one

    _load_all()
    tests = [t for t in _REGISTRY.values() if select(t)]
    assert tests, "no visible test selected"
    failed = {}
    for test in tests:
        ok, message, _, _ = _run_one(test, [objects_of(name) for name in test.needs])
        if not ok:
            failed[test.test_id] = message
    return failed


def hidden_records(assignment: str, namespace: dict) -> dict[str, list]:
    """What the instructor notebook's hidden tests record (probe_calls) for the objects in namespace, run in this
    process: the hidden part of every test cell, in one namespace as the kernel has; the records collected, not
    displayed."""
    from unittest import mock

    from agentrl_ref.checks import probes

    got: dict[str, list] = {}
    scope = {**namespace, "probe_calls": probes.probe_calls}
    with mock.patch.object(probes, "_emit", lambda name, data: got.setdefault(name, data)):
        for cell in source_notebook(assignment).cells:
            if "### BEGIN HIDDEN TESTS" in cell.source:
                exec(cell.source.split("### BEGIN HIDDEN TESTS", 1)[1].split("### END HIDDEN TESTS", 1)[0], scope)
    return got


def hidden_test_lines(assignment: str) -> list[str]:
    """Every non-trivial line between BEGIN/END HIDDEN TESTS in the instructor notebook."""
    lines, inside = [], False
    for cell in source_notebook(assignment).cells:
        for line in cell.source.split("\n"):
            if "### BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "### END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) > 12:
                lines.append(line.strip())
    return lines


def filled(assignment: str, fills: list[str]) -> str:
    """The student notebook with its blanks filled in order, as a student would submit it."""
    nb = student_notebook(assignment)
    remaining = list(fills)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            while BLANK in cell.source and remaining:
                cell.source = cell.source.replace(BLANK, remaining.pop(0), 1)
    assert not remaining, f"more fills than blanks in {assignment}"
    return nbformat.writes(nb)


def cell_namespace(assignment: str) -> dict:
    """A fresh namespace to run a notebook's cells in, in this process: the dict of a module of its own, in
    sys.modules, as IPython's __main__ is. A @dataclass looks its class's module up there (its methods are compiled
    with that module's dict as their globals); in a bare dict, with no __name__, that module is 'builtins', whose
    dict then keeps a `__builtins__` for the rest of the process (tests/conftest.py checks after every test)."""
    import types

    module = types.ModuleType(f"__cells_of_{assignment}__")
    sys.modules[module.__name__] = module
    return vars(module)


def answer_namespace(assignment: str, nb) -> dict:
    """The answer cells (nbgrader's solution cells) of a notebook of the assignment, run in order in a
    cell_namespace: the objects a filled notebook defines, as its kernel would hold them."""
    namespace = cell_namespace(assignment)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
            exec(cell.source, namespace)
    return namespace


def mutations(assignment: str) -> dict[str, tuple[dict[int, str], str]]:
    """Realistic wrong answers from tests/mutations/<assignment>.py:
    name -> ({blank index: wrong text}, grade_id of the test cell that must lose points)."""
    path = ROOT / "tests" / "mutations" / f"{assignment}.py"
    if not path.is_file():
        return {}
    namespace: dict = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    return namespace["MUTATIONS"]


def mutated_fills(assignment: str, changes: dict[int, str]) -> list[str]:
    fills = reference_fills(assignment)
    for index, text in changes.items():
        fills[index] = text
    return fills


def run_nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """Run one nbgrader command in a course folder, as an instructor would; raise with its output if it fails."""
    from grader.course import nbgrader_env

    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=nbgrader_env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def submit(course: Path, assignment: str, student: str, notebook_json: str) -> Path:
    """Place a student's notebook where nbgrader expects a submission."""
    path = course / "submitted" / student / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook_json, encoding="utf-8")
    return path


def cell_scores(course: Path, assignment: str) -> dict[str, dict[str, tuple[float, float]]]:
    """student -> grade_id -> (score, max_score) for every autograded test cell of a course's gradebook."""
    from nbgrader.api import Gradebook

    out: dict[str, dict[str, tuple[float, float]]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for sub in gb.assignment_submissions(assignment):
            notebook = gb.find_submission_notebook(assignment, assignment, sub.student_id)
            out[sub.student_id] = {g.name: (g.score, g.max_score) for g in notebook.grades}
    return out


def mutation_hints(assignment: str) -> dict[str, str | None]:
    """label -> a piece of the one hint every failing visible test gives for that mistake (HINTS in
    tests/mutations/<assignment>.py); None: its visible tests pass (a hidden test catches it)."""
    path = ROOT / "tests" / "mutations" / f"{assignment}.py"
    namespace: dict = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    return namespace.get("HINTS", {})


def reference_record(assignment: str) -> Path:
    """The session's file of the assignment's reference records (AGENTRL_REFERENCE_STORE, tests/conftest.py), run
    now from the instructor notebook in grader/source if no grading has needed it yet; for a grading run that cannot
    see the store (the cgroup v2 guest) to get a copy."""
    from grader.grade.execute import runner_for
    from grader.grade.reference import STORE, expected_for, reference_key

    store = Path(os.environ[STORE])
    grading = store.parent / f"{store.name}-runs"
    runner = runner_for(assignment, grading)
    expected_for(assignment, SOURCE, runner, grading)
    key = reference_key(SOURCE / assignment / f"{assignment}.ipynb", runner.package_root)
    return store / f"{assignment}-{key}.json"


class ReferenceStore:
    """The session's folder of reference records (grader/grade/reference.py): the grader writes each record once,
    from the course's instructor notebook; this remembers every record's digest the first time it sees it and,
    after every test, that none changed (a test that rewrote one fails, and the record is removed so the next
    grading runs it again)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.seen: dict[str, str] = {}

    def records(self) -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(self.folder.glob("*.json"))}

    def check(self) -> list[str]:
        changed = []
        for name, digest in self.records().items():
            if self.seen.setdefault(name, digest) != digest:
                changed.append(name)
                (self.folder / name).unlink(missing_ok=True)
                del self.seen[name]
        changed += [name for name in list(self.seen) if not (self.folder / name).exists() and self.seen.pop(name)]
        return changed


# ---------------------------------------------------------------- notebooks run in a real kernel, watched
#
# Why not plain nbclient: two things on this machine made kernel runs stall or fail for reasons that are not the
# notebook's.
# - A reply that never wakes its reader: nbclient's one long poll of the shell socket, and the Output widget's
#   send-back on that socket (book/_ext/kernel_polls.py, measured there). That was test_rollout_playground's "119 s
#   before cell 1" (cell timeout 120 s). Here the channels poll in slices: such a reply is read within half a second.
# - A port taken between nbclient choosing it and the kernel binding it (TCP; other programs on the machine start
#   kernels too): the kernel dies at its start. Here kernels talk over IPC files in a private folder.
# And a watchdog: a phase (kernel start, a cell, what follows a cell: after the last one the kernel's shutdown) that
# waits longer than its limit fails the run with the phase named and what the kernel was doing, not a silent minute.

class KernelStall(RuntimeError):
    """A phase of a watched kernel run waited longer than its limit."""


class _Watch:
    """The phase a watched run is in, since when (monotonic), and the phases before it."""

    def __init__(self, limit: float):
        self.limit, self.phase, self.since, self.log = limit, "kernel start", time.monotonic(), []
        self.kernel_pid: int | None = None
        self.stall: str | None = None

    def enter(self, phase: str) -> None:
        now = time.monotonic()
        self.log.append((self.phase, now - self.since))
        self.phase, self.since = phase, now

    def over(self, channel: str) -> bool:
        """True once the phase has waited past the limit (the first time: what to say, in self.stall)."""
        waited = time.monotonic() - self.since
        if waited > self.limit and self.stall is None:
            self.stall = (f"{self.phase}: still waiting for the kernel on the {channel} channel after {waited:.0f} s "
                          f"(limit {self.limit:.0f} s); the kernel: {_process_state(self.kernel_pid)}; the phases "
                          f"before: {self.phases()}")
        return self.stall is not None

    def phases(self) -> str:
        return ", ".join(f"{phase} {seconds:.1f} s" for phase, seconds in self.log) or "none"


def _process_state(pid: int | None) -> str:
    if pid is None:
        return "not started"
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return f"pid {pid} gone"
    return f"pid {pid} state {fields[0]}, cpu {(int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK'):.1f} s"


def _watched_client_class():
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.channels import AsyncZMQSocketChannel
    from traitlets import Type

    from kernel_polls import get_msg_in_slices  # book/_ext (tests/conftest.py puts it on the path)

    class WatchedChannel(AsyncZMQSocketChannel):
        watch: _Watch | None = None
        name = "kernel"
        get_msg = get_msg_in_slices

    class WatchedKernelClient(AsyncKernelClient):
        shell_channel_class = Type(WatchedChannel)
        iopub_channel_class = Type(WatchedChannel)

    return WatchedKernelClient


def signal_state() -> tuple:
    """This process's SIGINT and SIGTERM handlers and its signal wake-up fd (-1: none), read without changing them."""
    wakeup = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(wakeup)
    return signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), wakeup


@contextlib.contextmanager
def signals_kept():
    """This process's SIGINT and SIGTERM handlers and its signal wake-up socket, as they were, after the block (in
    the main thread; elsewhere nothing can change them). nbclient puts its own on its event loop for a run and takes
    them back only if the kernel started: a run whose kernel did not start (a test of that, a loaded machine) leaves
    them, and a signal that comes later (one a forked child writes into that socket) then stops the next kernel this
    process starts, at once. Seen in a full run: test_rollout_playground's kernel cancelled 0.3 s after its start."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    on_int, on_term, wakeup = signal_state()
    try:
        yield
    finally:
        try:
            signal.set_wakeup_fd(wakeup)
        except (ValueError, OSError):   # its socket is gone: no loop to wake
            signal.set_wakeup_fd(-1)
        for sig, handler in ((signal.SIGINT, on_int), (signal.SIGTERM, on_term)):
            if handler is not None and signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)


def run_notebook(nb: nbformat.NotebookNode, *, cwd: Path | None = None, timeout: int = 300,
                 phase_limit: float | None = None, kernel_name: str = "python3", kernel_stderr: Path | None = None,
                 **options) -> nbformat.NotebookNode:
    """Execute nb in place in a fresh kernel, as nbclient does (any cell error raises CellExecutionError), with the
    kernel's channels polled in short slices, over IPC, and a watchdog (see above): a phase (kernel start, a cell,
    what follows a cell: the last one's is the kernel's shutdown) longer than phase_limit seconds (default: timeout)
    raises KernelStall naming it. kernel_stderr: a file for what the kernel process writes to its stderr: its own log
    (start, shutdown) and whatever is written to that file descriptor, which ipykernel also forwards as output of the
    cell that runs (its "IOStream.flush timed out" is in the file every time; in a cell's output only when it reached
    the client before the cell's end: held 12 s, the output thread delivered it once in the cell, once not at all).
    Returns nb; options go to nbclient.NotebookClient."""
    import shutil
    import tempfile

    import nbclient
    from jupyter_client import AsyncKernelManager

    watch = _Watch(phase_limit or timeout)
    folder = Path(tempfile.mkdtemp(prefix="agentrl-k-"))   # the kernel's IPC files (short: a socket path's limit)
    client_class = _watched_client_class()

    class WatchedKernelManager(AsyncKernelManager):
        def __init__(self, **kw):
            super().__init__(transport="ipc", ip=str(folder / "k"), **kw)
            self.client_factory = client_class

        async def _async_post_start_kernel(self, **kw):
            await super()._async_post_start_kernel(**kw)
            watch.kernel_pid = getattr(getattr(self.provisioner, "process", None), "pid", None)

        def client(self, **kw):
            kc = super().client(**kw)
            # the shell channel carries every wait for the kernel (its start, each cell's reply); after a reply,
            # nbclient's iopub_timeout bounds the wait for the cell's outputs and names it ("Timeout waiting for IOPub")
            kc.shell_channel.watch, kc.shell_channel.name = watch, "shell"
            return kc

    def enter(phase):
        return lambda cell=None, cell_index=None, **_: watch.enter(phase.format(i=cell_index))

    options.setdefault("iopub_timeout", KEEP_OUTPUTS["iopub_timeout"])
    options.setdefault("raise_on_iopub_timeout", KEEP_OUTPUTS["raise_on_iopub_timeout"])
    client = nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name=kernel_name, kernel_manager_class=WatchedKernelManager,
        resources={"metadata": {"path": str(cwd)}} if cwd else {},
        on_cell_execute=enter("cell {i}"), on_cell_executed=enter("after cell {i}"),
        on_notebook_complete=enter("done"), **options)
    try:
        with signals_kept(), (open(kernel_stderr, "ab") if kernel_stderr else contextlib.nullcontext()) as stderr:
            client.execute(**({"stderr": stderr} if stderr else {}))
    except asyncio.CancelledError as exc:
        # nbclient stops its kernel (and so cancels what waits for it) when its event loop gets SIGINT or SIGTERM:
        # one sent to this process, or one a forked child wrote into the loop's wake-up socket
        raise KernelStall(f"{watch.phase}: cancelled after {time.monotonic() - watch.since:.1f} s, as nbclient cancels "
                          f"a run when its event loop gets SIGINT or SIGTERM; the phases before: {watch.phases()}") \
            from exc
    except Exception as exc:
        if watch.stall:   # nbclient stopped the run as if a timeout had passed: say which phase waited
            raise KernelStall(watch.stall) from exc
        raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    slow = [(phase, seconds) for phase, seconds in watch.log if seconds > watch.limit]
    if slow:
        raise KernelStall(f"{slow[0][0]} took {slow[0][1]:.0f} s (limit {watch.limit:.0f} s); phases: {watch.phases()}")
    return nb
