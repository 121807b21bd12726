"""grader/sandbox/: real kernels in a real bubblewrap sandbox, at every isolation level this machine gives.

Every test executes small notebooks through nbclient with `km=session.kernel_manager()`. Timeouts are
hang guards only (large margins); nothing here asserts on timing. The tests whose outcome depends on the
level's resource control (limits, survivors, clean-up, the writable mounts) run at each level available
here (`LEVEL_HERE`: on a cgroup v1 machine as root, cgroup1 and job); the rest at the best one. Skipped as a
whole, with the reason, when no sandbox runs here (no bwrap, no namespaces, no capped mounts).
tests/test_cgroup_v2.py runs the same class of checks on a real cgroup v2 kernel.
"""
from __future__ import annotations

import os
import secrets
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

import grader.sandbox as sbx
from grader.sandbox import levels

_FOUND = sbx.probe()
_UNAVAILABLE = None if _FOUND.best != "none" else str(_FOUND.why_not)
LEVELS_HERE = [level for level in ("cgroup2", "cgroup1", "job") if level not in _FOUND.why_not]

pytestmark = pytest.mark.skipif(_UNAVAILABLE is not None, reason=f"sandbox unavailable: {_UNAVAILABLE}")

REPO = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

def notebook(*sources: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


def execute(session: sbx.Session, nb, timeout: int = 30, **kw):
    """Run nb in the session's kernel; returns the exception that ended it early (or None)."""
    client = NotebookClient(nb, km=session.kernel_manager(), timeout=timeout, allow_errors=True,
                            startup_timeout=60, **kw)
    try:
        client.execute()
    except (CellTimeoutError, DeadKernelError) as e:
        return e
    return None


def stream(cell, name: str = "stdout") -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == name)


def error_text(cell) -> str:
    return "\n".join(f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error")


def all_stderr(nb) -> str:
    return "".join(stream(c, "stderr") for c in nb.cells)


def host_pids_with(tag: str) -> list[int]:
    """Host processes whose command line contains tag (excluding this test process)."""
    found = []
    needle = tag.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if needle in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


def running(tag: str, within: float = 10.0) -> bool:
    """True once a host process with tag in its command line shows up. A process that has just been
    exec'd can show an empty /proc/PID/cmdline for a moment (Popen returns when the exec closes its
    error pipe, slightly before the new arguments are in place), so look again until `within`."""
    end = time.monotonic() + within
    while not host_pids_with(tag):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def unique_sleep_arg() -> str:
    """An argument for `sleep` that is unique to this test run: 1000.<digits> seconds."""
    return f"1000.{secrets.randbelow(10**8):08d}7"


def session_traces_gone(session: sbx.Session) -> None:
    assert not session.group.exists(), "the session's group left behind"
    assert not session._dir.exists(), "private connection folder left behind"
    mounted = {label.split(".", 1)[0] for label, _ in sbx.capped_mounts()}
    assert session.name not in mounted, "working folder or scratch space still mounted"
    assert not any(session.workdir.iterdir()), "files left in the working folder"


@pytest.fixture(scope="module")
def package_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pkgroot")
    (root / "agentrl_ref").mkdir()
    (root / "agentrl_ref" / "__init__.py").write_text("MARK = 'fake agentrl_ref from the bound package root'\n")
    return root


@pytest.fixture(scope="module")
def sandbox(package_root) -> sbx.Sandbox:
    """At the best level here."""
    return sbx.Sandbox(package_root)


@pytest.fixture(scope="module", params=LEVELS_HERE)
def level(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def each(package_root, level) -> sbx.Sandbox:
    """At each level here."""
    return sbx.Sandbox(package_root, isolation=level)


SMALL = sbx.SandboxLimits(memory_mb=256, file_size_mb=16, tmp_mb=32)


@pytest.fixture(scope="module")
def small(package_root) -> sbx.Sandbox:
    """Small limits for the limit tests that every level enforces the same way (rlimits, the tmpfs)."""
    return sbx.Sandbox(package_root, SMALL)


@pytest.fixture(scope="module")
def small_each(package_root, level) -> sbx.Sandbox:
    """Small limits, at each level here."""
    return sbx.Sandbox(package_root, SMALL, isolation=level)


@pytest.fixture
def workdir(tmp_path) -> Path:
    d = tmp_path / "submitted" / "alice" / "ex1"
    d.mkdir(parents=True)
    return d


# ----------------------------------------------------------------------------------------------
# ordinary work
# ----------------------------------------------------------------------------------------------

def test_normal_cells_torch_matplotlib_nothing_on_stderr(sandbox, workdir):
    nb = notebook(
        "print('hello', 6 * 7)",
        "import torch\nprint(float(torch.ones(3).sum()))",
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots(); ax.plot([1, 2, 3]); fig.savefig('fig.png'); print('plotted')",
    )
    with sandbox.session(workdir) as s:
        assert execute(s, nb, timeout=120) is None
        assert (workdir / "fig.png").stat().st_size > 0       # the host sees the folder while the session runs
    assert stream(nb.cells[0]) == "hello 42\n"
    assert stream(nb.cells[1]) == "3.0\n"
    assert stream(nb.cells[2]) == "plotted\n"
    assert all_stderr(nb) == ""
    assert not any(error_text(c) for c in nb.cells)
    assert s.report.cause_zh() is None and s.report.full_zh() is None
    session_traces_gone(s)


def test_package_root_bound_and_host_hidden(sandbox, workdir, tmp_path):
    marker = Path("/tmp") / f"sandbox-test-marker-{secrets.token_hex(6)}"
    marker.write_text("host /tmp must not be visible")
    other = tmp_path / "submitted" / "bob" / "ex1"
    other.mkdir(parents=True)
    (other / "answer.txt").write_text("bob's work")
    host_root = set(os.listdir("/root")) if os.access("/root", os.R_OK) else set()
    try:
        nb = notebook(
            "import agentrl_ref; print(agentrl_ref.MARK); print(agentrl_ref.__file__)",
            "import os, json\n"
            f"print(json.dumps({{'marker': os.path.exists({str(marker)!r}),"
            f" 'other': os.path.exists({str(other)!r}), 'tmp_path': os.path.exists({str(tmp_path)!r}),"
            f" 'repo': sorted(os.listdir({str(REPO)!r})) if os.path.isdir({str(REPO)!r}) else None,"
            " 'work': sorted(os.listdir('/work')) if os.path.isdir('/work') else None,"
            " 'root': sorted(os.listdir('/root')) if os.path.isdir('/root') else None,"
            " 'tmp': sorted(os.listdir('/tmp')), 'cwd': os.getcwd()}))",
        )
        with sandbox.session(workdir) as s:
            assert execute(s, nb) is None
    finally:
        marker.unlink()
    assert stream(nb.cells[0]).splitlines() == [
        "fake agentrl_ref from the bound package root", f"{sbx.INNER_PACKAGE_ROOT}/agentrl_ref/__init__.py"]
    import json
    seen = json.loads(stream(nb.cells[1]))
    assert seen["marker"] is False and seen["other"] is False and seen["tmp_path"] is False
    assert seen["cwd"] == sbx.INNER_WORKDIR
    # Only the interpreter's own folders are bound: the venv (inside the repo here) and the pyenv
    # install (inside /root here). Nothing else of the repo or of /root is visible.
    venv = os.path.realpath(sys.prefix)
    if venv.startswith(str(REPO) + "/"):
        assert seen["repo"] == [venv[len(str(REPO)) + 1:].split("/")[0]]
    else:
        assert seen["repo"] is None
    for name in ("grader", "agentrl_ref", "tests", "README.md", "Makefile"):
        assert name not in (seen["repo"] or [])
    assert set(seen["root"] or []) <= {".pyenv"}
    assert not (host_root - {".pyenv"}) & set(seen["root"] or [])
    # the sandbox's own /tmp: the kernel's files, and the path down to the venv when it lives under /tmp
    under_tmp = [venv.split("/")[2]] if venv.startswith("/tmp/") else []
    assert all(n.startswith("ipykernel_") or n in under_tmp for n in seen["tmp"]), seen["tmp"]


def test_network_only_loopback_and_host_server_unreachable(sandbox, workdir):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    port = server.getsockname()[1]
    try:
        nb = notebook(
            "import socket\nprint(sorted(n for _, n in socket.if_nameindex()))",
            "s = socket.socket(); s.settimeout(5)\n"
            f"try:\n    s.connect(('127.0.0.1', {port})); print('CONNECTED')\n"
            "except OSError as e:\n    print('failed', type(e).__name__)",
            "s = socket.socket(); s.settimeout(5)\n"
            "try:\n    s.connect(('1.1.1.1', 53)); print('CONNECTED')\n"
            "except OSError as e:\n    print('failed', type(e).__name__)",
        )
        with sandbox.session(workdir) as s:
            assert execute(s, nb) is None
        server.settimeout(0.2)
        with pytest.raises(OSError):
            server.accept()[0].close()      # nobody got through to the host's server
    finally:
        server.close()
    assert stream(nb.cells[0]) == "['lo']\n"
    assert stream(nb.cells[1]).startswith("failed")
    assert stream(nb.cells[2]).startswith("failed")


def test_no_capabilities_and_no_nested_user_namespaces(sandbox, workdir):
    nb = notebook(
        "import subprocess\nst = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())\n"
        "print(st['CapEff'].strip(), st['CapBnd'].strip(), st['NoNewPrivs'].strip())\n"
        "print(subprocess.run(['unshare', '-U', 'true'], capture_output=True).returncode != 0)\n"
        "print(len([p for p in __import__('os').listdir('/proc') if p.isdigit()]))",
    )
    with sandbox.session(workdir) as s:
        assert execute(s, nb) is None
    caps, refused, nprocs = stream(nb.cells[0]).splitlines()
    assert caps == "0000000000000000 0000000000000000 1"
    assert refused == "True"
    assert int(nprocs) <= 3          # bwrap's PID 1, the kernel, the cell's own child at most


def test_writes_outside_workdir_fail_and_workdir_is_the_notebooks(sandbox, workdir):
    venv_site = next(p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix))
    targets = [f"{venv_site}/evil.py", f"{sbx.INNER_PACKAGE_ROOT}/agentrl_ref/evil.py", "/usr/evil",
               "/etc/evil", "/evil", f"{os.path.realpath(sys.base_prefix)}/evil"]
    nb = notebook(
        f"for t in {targets!r}:\n"
        "    try:\n        open(t, 'w').write('x'); print('WROTE', t)\n"
        "    except OSError as e:\n        print('denied', t, e.errno)",
        "open('/submission/out.txt', 'w').write('kept'); open('rel.txt', 'w').write('also kept')",
    )
    with sandbox.session(workdir) as s:
        assert execute(s, nb) is None
        assert (workdir / "out.txt").read_text() == "kept"
        assert (workdir / "rel.txt").read_text() == "also kept"
    out = stream(nb.cells[0])
    assert "WROTE" not in out and out.count("denied") == len(targets), out
    assert not Path(venv_site, "evil.py").exists()
    assert s.report.workdir_files == 2
    session_traces_gone(s)


WRITABLE_MOUNTS = r"""
import json, os
found = []
for line in open('/proc/self/mountinfo'):
    left, _, right = line.partition(' - ')
    point = left.split()[4].replace('\\040', ' ')
    fstype, options = right.split()[0], (right.split() + ['', '', ''])[2]
    probe = os.path.join(point, '.write-probe')
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600))
        os.unlink(probe)
        found.append([point, fstype, options])
    except OSError:
        pass
print(json.dumps(found))
"""


def test_every_writable_place_is_a_capped_tmpfs(each, workdir):
    """The sandbox's mounts, listed from inside: each one a new file can be made in is a tmpfs capped in
    bytes and inodes, and they are exactly the working folder and the scratch space's four folders (the
    connection files included: nothing writable is disk-backed); /dev itself is read-only."""
    import json

    with each.session(workdir) as s:
        nb = notebook(WRITABLE_MOUNTS)
        assert execute(s, nb) is None, error_text(nb.cells[0])
        conn = str(s._conn_dir)
    writable = {point: (fstype, options) for point, fstype, options in json.loads(stream(nb.cells[0]))}
    assert set(writable) == {sbx.INNER_WORKDIR, "/tmp", "/dev/shm", sbx.INNER_HOME, conn}, writable
    for point, (fstype, options) in writable.items():
        assert fstype == "tmpfs" and "size=" in options and "nr_inodes=" in options, (point, fstype, options)
    assert f"nr_inodes={each.limits.workdir_inodes}" in writable[sbx.INNER_WORKDIR][1]
    assert f"nr_inodes={each.limits.tmp_inodes}" in writable["/tmp"][1]


def test_home_and_ipythondir_private_and_fresh_each_session(sandbox, tmp_path):
    listing = ("import os\n"
               "print(sorted(os.path.relpath(os.path.join(d, f), os.environ['HOME'])"
               " for d, _, fs in os.walk(os.environ['HOME']) for f in fs))\n"
               "print(os.environ['HOME'], os.environ['IPYTHONDIR'])")
    plant = ("import os\np = os.path.join(os.environ['IPYTHONDIR'], 'profile_default', 'startup')\n"
             "os.makedirs(p, exist_ok=True)\n"
             "open(os.path.join(p, 'x.py'), 'w').write('print(\"PLANTED STARTUP FILE RAN\")')\n"
             "open(os.path.expanduser('~/.bashrc'), 'w').write('echo hi')\nprint('planted')")
    outs = []
    for i in range(2):
        wd = tmp_path / f"w{i}"
        wd.mkdir()
        nb = notebook(listing, plant)
        with sandbox.session(wd) as s:
            assert execute(s, nb) is None
        outs.append(nb)
    for nb in outs:
        files, envline = stream(nb.cells[0]).splitlines()
        assert envline == f"{sbx.INNER_HOME} {sbx.INNER_IPYTHONDIR}"
        # at start: only the prebuilt matplotlib font list (read-only) and the README IPython writes
        # into a new profile; nothing planted by the previous session (x.py, .bashrc)
        files = eval(files)
        assert all(f.startswith(".config/matplotlib/fontlist") or f == ".ipython/profile_default/startup/README"
                   for f in files), files
        assert any(f.startswith(".config/matplotlib/fontlist") for f in files)
        assert "PLANTED" not in stream(nb.cells[0]) + stream(nb.cells[1])
        assert stream(nb.cells[1]) == "planted\n"


# ----------------------------------------------------------------------------------------------
# limits
# ----------------------------------------------------------------------------------------------

def test_memory_beyond_the_limit_kills_the_kernel_or_fails_and_is_reported(small_each, workdir):
    """At a cgroup level the group's memory limit (256 MB here) kills the kernel; at the job level the
    address-space limit (256 + 1536 MB) makes the allocation fail (the job's own memory.max is above it)."""
    size = 1024 if small_each.level != "job" else 4096
    nb = notebook(f"x = b'x' * ({size} << 20)\nprint('survived', len(x))", "print('after')")
    with small_each.session(workdir) as s:
        err = execute(s, nb, timeout=60)
    if err is None:        # an allocator could also refuse cleanly: that is fine too (and the job level's way)
        assert "MemoryError" in error_text(nb.cells[0])
        assert stream(nb.cells[1]) == "after\n"
    else:
        assert small_each.level != "job"
        assert isinstance(err, DeadKernelError)
        assert s.report.oom_killed
        assert "内存" in s.report.cause_zh() and "256" in s.report.cause_zh()
        assert s.report.peak_memory_mb > 200
    session_traces_gone(s)


def test_allocation_beyond_address_space_is_a_clean_memoryerror(small, workdir):
    nb = notebook("try:\n    x = bytearray(8 << 30)\nexcept MemoryError:\n    print('MemoryError')",
                  "print('alive')")
    with small.session(workdir) as s:
        assert execute(s, nb) is None
    assert stream(nb.cells[0]) == "MemoryError\n"
    assert stream(nb.cells[1]) == "alive\n"
    assert not s.report.oom_killed


def test_pids_limit(each, workdir):
    if each.level == "job" and levels.real_root():
        pytest.skip("job level as real root: RLIMIT_NPROC does not bind root (the doctor says so); "
                    "tests/test_cgroup_v2.py checks it as a normal user")
    tag = unique_sleep_arg()
    nb = notebook(
        "import subprocess\nprocs = []\ntry:\n    for i in range(100):\n"
        f"        procs.append(subprocess.Popen(['sleep', {tag!r}]))\n"
        "except OSError as e:\n    print('refused', type(e).__name__, e.errno)\n"
        "print('started', len(procs))\nfor p in procs:\n    p.kill(); p.wait()",
        "print('kernel alive')",
    )
    with each.session(workdir) as s:
        assert execute(s, nb) is None
    out = stream(nb.cells[0])
    assert "refused BlockingIOError 11" in out, out
    assert int(out.split("started ")[1]) < 100
    assert stream(nb.cells[1]) == "kernel alive\n"
    if each.level != "job":     # the job level has no counter that says so
        assert s.report.pids_limit_hit
        assert "进程数" in s.report.cause_zh()
    assert host_pids_with(tag) == []


def test_file_size_limit(small, workdir):
    nb = notebook("with open('big.bin', 'wb') as f:\n    for _ in range(200):\n        f.write(b'\\0' * (1 << 20))",
                  "print('alive')")
    with small.session(workdir) as s:
        assert execute(s, nb) is None
        assert (workdir / "big.bin").stat().st_size <= 16 << 20
    assert "File too large" in error_text(nb.cells[0])
    assert stream(nb.cells[1]) == "alive\n"
    assert 15 <= s.report.workdir_mb <= 16
    assert s.report.file_size_limit_hit and "文件" in s.report.cause_zh()


def test_tmp_and_shm_are_capped(small, workdir):
    fill = ("import os\nn = 0\ntry:\n    for i in range(20):\n"
            "        with open(os.path.join({d!r}, f'f{{i}}'), 'wb') as f:\n"
            "            f.write(b'\\1' * (8 << 20)); n += 8\n"
            "except OSError as e:\n    print('full', e.errno, n)\n"
            "for i in range(20):\n    p = os.path.join({d!r}, f'f{{i}}')\n"
            "    if os.path.exists(p): os.remove(p)")
    nb = notebook(fill.format(d="/tmp"), fill.format(d="/dev/shm"), fill.format(d=sbx.INNER_HOME))
    with small.session(workdir) as s:
        assert execute(s, nb) is None
    for cell in nb.cells:
        out = stream(cell)
        assert out.startswith("full 28 "), (cell.source, out, error_text(cell))   # ENOSPC
        assert int(out.split()[-1]) <= 32


def test_cpu_limit_kills_and_is_reported(package_root, workdir):
    sb = sbx.Sandbox(package_root, sbx.SandboxLimits(cpu_seconds=3))
    nb = notebook("while True:\n    pass")
    with sb.session(workdir) as s:
        err = execute(s, nb, timeout=60)
    assert isinstance(err, DeadKernelError)
    assert s.report.cpu_limit_hit and "CPU" in s.report.cause_zh()
    assert s.report.cpu_seconds >= 2.5


def test_the_cpu_a_session_used_is_counted_or_said_to_be_unknown(each, workdir):
    """Two seconds of busy work: a level with a counter reports at least that; the job level without a cgroup v2
    group of its own (a v1 host like this one) has nothing to read and says so (None), never a made-up 0."""
    nb = notebook("import time\nend = time.process_time() + 2\nwhile time.process_time() < end:\n    pass")
    with each.session(workdir) as s:
        assert execute(s, nb) is None
    if each.level == "job" and each.control.counters is None:
        assert s.report.cpu_seconds is None
    else:
        assert s.report.cpu_seconds >= 1.9


def test_wall_watchdog(each, workdir):
    nb = notebook("import time\ntime.sleep(100)")
    with each.session(workdir, wall_seconds=3) as s:
        err = execute(s, nb, timeout=60)
    assert isinstance(err, DeadKernelError)
    assert s.report.wall_limit_hit and "运行时间" in s.report.cause_zh()


# ----------------------------------------------------------------------------------------------
# processes: survivors, SIGINT, pipes
# ----------------------------------------------------------------------------------------------

def test_no_survivors_after_exit(each, workdir):
    t1, t2 = unique_sleep_arg(), unique_sleep_arg()
    nb = notebook(
        "import os, subprocess\n"
        f"p = subprocess.Popen(['sleep', {t1!r}], start_new_session=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        f"        os.execvp('sleep', ['sleep', {t2!r}])\n    os._exit(0)\n"
        "os.waitpid(pid, 0)\nprint('spawned')",
    )
    with each.session(workdir) as s:
        assert execute(s, nb) is None
        assert stream(nb.cells[0]) == "spawned\n"
        assert running(t1) and running(t2)          # the test means something
    assert host_pids_with(t1) == [] and host_pids_with(t2) == []
    assert s.report.leftover_processes_killed >= 2
    session_traces_gone(s)


@pytest.mark.skipif("job" not in LEVELS_HERE, reason="no `job` level here")
def test_a_job_level_group_never_names_the_next_sandbox_that_gets_its_namespace_number():
    """The `job` level knows a sandbox's processes by their PID namespace. Linux gives a dead namespace's inode
    number to the next one made (another shard's sandbox on the same machine): compared by number alone, an
    ended session's clean-up then killed that shard's starting kernel (RuntimeError, an honest notebook 0)."""
    import subprocess

    from grader.sandbox.job import JobControl, _descendants

    bwrap = [sbx.host.BWRAP, "--unshare-pid", "--die-with-parent", "--dev-bind", "/", "/", "--proc", "/proc", "--"]
    for _ in range(2):
        group = JobControl().group("ended", sbx.SandboxLimits(), [0])
        group.create()
        ended = subprocess.Popen(["/bin/sh", "-c", 'exec "$@"', "launcher", *bwrap, "sleep", unique_sleep_arg()])
        group.launcher_pid = ended.pid
        deadline = time.monotonic() + 30
        while len(group.pids()) < 2 and time.monotonic() < deadline:   # the launcher and its namespace's PID 1
            time.sleep(0.02)
        assert len(group.pids()) >= 2
        group.kill()
        ended.wait()
        time.sleep(0.2)                                  # the dead namespace's number is free again
        others = [subprocess.Popen([*bwrap, "sleep", unique_sleep_arg()]) for _ in range(8)]
        try:
            theirs: set[int] = set()
            while len(theirs) < 3 * len(others) and time.monotonic() < deadline:   # each: bwrap, PID 1, sleep
                theirs = set().union(*(_descendants(o.pid) for o in others))
                time.sleep(0.02)
            assert not group.pids() & theirs
            group.remove()
            assert all(o.poll() is None for o in others)     # remove() killed nothing of theirs
        finally:
            for o in others:
                o.kill()
                o.wait()


@pytest.fixture
def own_state_root(monkeypatch):
    """A state folder of this test's own in place of the user's (grader/sandbox/host.py state_root): its sandbox
    kernels are the only ones it counts, whatever else grades on the machine (make test's other workers do)."""
    import shutil

    from grader.sandbox import host, job, session, sweep

    root = Path("/var/tmp") / f"agentrl-grader-pinning-{os.getpid()}-{secrets.token_hex(4)}"
    root.mkdir(mode=0o700)
    for module in (host, job, session, sweep, levels):
        monkeypatch.setattr(module, "state_root", lambda: root)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif("job" not in LEVELS_HERE or len(os.sched_getaffinity(0)) < 2, reason="no `job` level or one core")
def test_job_level_sandboxes_of_two_graders_are_pinned_to_different_cores(package_root, tmp_path, own_state_root):
    """Two graders (shards) at the `job` level on one machine: the second kernel goes to a core the first
    does not use (each grader counts the running sandbox kernels under the user's state folder, not only its own)."""
    from grader.sandbox.job import sandbox_cpu_users

    sandbox = sbx.Sandbox(package_root, isolation="job")
    cores = sorted(os.sched_getaffinity(0))
    (tmp_path / "a").mkdir()
    with sandbox.session(tmp_path / "a") as first:
        nb = notebook("import os\nprint(sorted(os.sched_getaffinity(0)))")
        assert execute(first, nb) is None
        pinned = eval(stream(nb.cells[0]))
        assert len(pinned) == 1
        assert list(own_state_root.iterdir()), "the session is not in the test's own state folder"
        users = sandbox_cpu_users(cores)
        assert users[pinned[0]] == 1 and sum(users.values()) == 1
        assert levels.control_for("job").cpu_users() == users
        (tmp_path / "b").mkdir()
        with sandbox.session(tmp_path / "b") as second:
            nb2 = notebook("import os\nprint(sorted(os.sched_getaffinity(0)))")
            assert execute(second, nb2) is None
            assert eval(stream(nb2.cells[0])) != pinned
    assert sum(sandbox_cpu_users(cores).values()) == 0


def test_kernel_ignoring_sigint_is_stopped(each, workdir):
    nb = notebook("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
                  "print('never')")
    with each.session(workdir) as s:
        err = execute(s, nb, timeout=3)
        assert isinstance(err, (CellTimeoutError, DeadKernelError))
        conn = str(s._conn_dir)
        assert running(conn), "the busy kernel should still be running here"
        s.kill()
        assert host_pids_with(conn) == []
        s.kill()                                   # idempotent
    assert host_pids_with(conn) == []
    session_traces_gone(s)


def test_kernel_ignoring_sigint_under_nbgrader_execute(sandbox, workdir):
    """The integrator's path: nbgrader's Execute preprocessor with km=. It interrupts on timeout; a
    kernel that ignores the interrupt ends the run with CellTimeoutError, and exit leaves nothing."""
    from nbgrader.preprocessors import Execute

    nb = notebook("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
                  "print('never')")
    with sandbox.session(workdir) as s:
        with pytest.raises(CellTimeoutError):
            Execute(timeout=2).preprocess(nb, {"metadata": {"path": str(workdir)}}, km=s.kernel_manager())
        conn = str(s._conn_dir)
        assert running(conn), "the busy kernel should still be running here"
    assert stream(nb.cells[1]) == ""
    assert host_pids_with(conn) == []
    session_traces_gone(s)


def test_kernel_survives_timeout_interrupt(sandbox, workdir):
    nb = notebook("import time\ntime.sleep(100)", "print('still here')")
    with sandbox.session(workdir) as s:
        assert execute(s, nb, timeout=3, interrupt_on_timeout=True) is None
    assert "KeyboardInterrupt" in error_text(nb.cells[0])
    assert stream(nb.cells[1]) == "still here\n"


def test_children_holding_output_pipes_do_not_hang(sandbox, workdir):
    t1, t2, t3 = unique_sleep_arg(), unique_sleep_arg(), unique_sleep_arg()
    nb = notebook(
        f"import os, subprocess, sys\nos.system('sleep {t1} &')\nprint('system returned')",
        f"subprocess.Popen('sleep {t2}', shell=True, stdout=sys.__stdout__.fileno(),"
        " stderr=sys.__stderr__.fileno())\nprint('popen returned')",
        f"subprocess.Popen(['sleep', {t3!r}], stdout=1, stderr=2, start_new_session=True)\nprint('third')",
        "print('next cell runs')",
    )
    with sandbox.session(workdir) as s:
        assert execute(s, nb, timeout=20) is None
        assert running(t1) and running(t2) and running(t3), [(stream(c), error_text(c)) for c in nb.cells]
    assert [stream(c) for c in nb.cells] == ["system returned\n", "popen returned\n", "third\n",
                                             "next cell runs\n"]
    assert host_pids_with(t1) == [] and host_pids_with(t2) == [] and host_pids_with(t3) == []


# ----------------------------------------------------------------------------------------------
# two sessions at once, clean-up, availability
# ----------------------------------------------------------------------------------------------

def test_connection_files_of_other_sessions_invisible(sandbox, tmp_path):
    wds = [tmp_path / "a", tmp_path / "b"]
    for d in wds:
        d.mkdir()
    sessions = [sandbox.session(d) for d in wds]
    both_running = threading.Barrier(2, timeout=60)

    def run(i: int):
        me, other = sessions[i], sessions[1 - i]
        nb = notebook(
            "import os, json\n"
            f"print(json.dumps({{'mine': os.path.exists({str(me._conn_dir)!r}),"
            f" 'other': os.path.exists({str(other._conn_dir)!r}),"
            f" 'parent': sorted(os.listdir({str(me._dir.parent)!r})),"
            f" 'conn': sorted(os.listdir({str(me._conn_dir)!r}))}}))",
        )
        with me:
            km = me.kernel_manager()
            client = NotebookClient(nb, km=km, timeout=30, allow_errors=True, startup_timeout=60)
            with client.setup_kernel():       # both kernels are up before either cell runs
                both_running.wait()
                client.execute_cell(nb.cells[0], 0)
        return nb

    with ThreadPoolExecutor(2) as pool:
        nbs = list(pool.map(run, [0, 1]))
    import json
    for i, nb in enumerate(nbs):
        seen = json.loads(stream(nb.cells[0]))
        assert seen["mine"] is True and seen["other"] is False
        assert seen["parent"] == [sessions[i].name]
        assert all(n.startswith("k1") for n in seen["conn"]), seen["conn"]
    for s in sessions:
        session_traces_gone(s)


def test_workdir_leaves_nothing_on_the_host(sandbox, workdir):
    """Symbolic links, FIFOs and set-uid files planted in the working folder are gone with its tmpfs."""
    nb = notebook(
        "import os, shutil\n"
        "os.symlink('/etc/passwd', 'link')\nos.mkfifo('fifo')\n"
        "shutil.copy('/usr/bin/true', 'suid'); os.chmod('suid', 0o4755)\n"
        "open('plain.txt', 'w').write('ok')",
    )
    with sandbox.session(workdir) as s:
        assert execute(s, nb) is None
        assert sorted(p.name for p in workdir.iterdir()) == ["fifo", "link", "plain.txt", "suid"]
    assert s.report.workdir_files == 4
    session_traces_gone(s)


@pytest.mark.parametrize("what, code", [
    ("bytes", "import os\ntry:\n    for i in range(100):\n        open(f'f{i}', 'wb').write(b'x' * (1 << 20))\n"
              "except OSError as e:\n    print('full', e.errno)"),
    ("inodes", "import os\ntry:\n    for i in range(100_000):\n        open(f'f{i}', 'w').close()\n"
               "except OSError as e:\n    print('full', e.errno)"),
])
def test_workdir_is_capped_in_bytes_and_inodes_and_says_so(package_root, workdir, what, code):
    sb = sbx.Sandbox(package_root, sbx.SandboxLimits(workdir_mb=8, workdir_inodes=500))
    nb = notebook(code, "print('alive')")
    with sb.session(workdir) as s:
        assert execute(s, nb) is None
    assert stream(nb.cells[0]).startswith("full 28"), (what, nb.cells[0].outputs)   # ENOSPC
    assert stream(nb.cells[1]) == "alive\n"
    assert s.report.workdir_full, s.report
    assert "8 MB" in s.report.full_zh() and "500" in s.report.full_zh()
    assert s.report.cause_zh() is None            # nothing was killed for it
    session_traces_gone(s)


def test_sweep_removes_stale_groups_only(each, workdir):
    """A dead grader's group, private folder and mount go; a live session's stay."""
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    stale_name = f"s{dead}-1-deadbeef"
    stale = each.control.group(stale_name, each.limits, [0])
    stale.create()
    folder = levels.state_root() / stale_name
    folder.mkdir()
    with each.session(workdir) as s:
        sbx.sweep_stale(each.level)
        assert not stale.exists() and not folder.exists()
        assert s._dir.is_dir() and (each.level == "job" or s.group.exists())
        assert execute(s, notebook("print(1)")) is None
    session_traces_gone(s)


def test_unavailable_message_names_what_is_missing(monkeypatch):
    monkeypatch.setattr(levels, "BWRAP", "/nonexistent/bwrap")
    with pytest.raises(sbx.SandboxUnavailable) as e:
        sbx.check_available()
    assert "bubblewrap" in str(e.value) and "未安装" in str(e.value)
    assert "apt-get install -y bubblewrap" in str(e.value)          # the way forward, not only the refusal


def test_kernel_that_cannot_start_fails_fast_with_the_reason(tmp_path, workdir):
    root = tmp_path / "gone"
    (root / "agentrl_ref").mkdir(parents=True)
    sb = sbx.Sandbox(root)
    (root / "agentrl_ref").rmdir()
    root.rmdir()                                   # bwrap cannot bind the package root any more
    client = NotebookClient(notebook("print(1)"), timeout=30, startup_timeout=60)
    with sb.session(workdir) as s:
        client.km = s.kernel_manager()
        client.owns_km = False
        try:
            with pytest.raises(RuntimeError, match="Kernel died"):
                client.execute()
        finally:
            import atexit
            atexit.unregister(client._cleanup_kernel)    # nbclient leaves this hook after a failed start
    assert "Can't find source path" in s.report.kernel_log_tail
    assert s.report.kernel_exit_status == 1
    session_traces_gone(s)


def test_session_exit_after_exception_cleans_up(each, workdir):
    tag = unique_sleep_arg()
    with pytest.raises(RuntimeError, match="boom"):
        with each.session(workdir) as s:
            assert execute(s, notebook(f"import subprocess\nsubprocess.Popen(['sleep', {tag!r}])")) is None
            raise RuntimeError("boom")
    assert host_pids_with(tag) == []
    session_traces_gone(s)
