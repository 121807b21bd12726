"""A Sandbox (the configuration shared by sessions) and a Session (one kernel run in it); the kernel
manager nbclient drives is in kernel.py. See the package docstring for what a session does."""
from __future__ import annotations

import itertools
import math
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from .bwrap import LAUNCHER, CPU_HARD_GRACE_S, common_bind_args, env_args, font_cache, python_layout
from .control import Control
from .host import (BWRAP, INNER_HOME, INNER_IPYTHONDIR, INNER_MPLCONFIGDIR, INNER_PACKAGE_ROOT, INNER_WORKDIR,
                   counter, live_sessions, lock, state_root)
from .doctor import choose
from .kernel import SandboxKernelManager
from .levels import control_for
from .limits import SandboxLimits, SandboxUnavailable, SessionReport
from .mounts import LABEL_PREFIX, mount_capped, unmount

SCRATCH = ("tmp", "shm", "home", "conn")   # one capped tmpfs per session holds these four folders


class Sandbox:
    """Configuration shared by sessions (thread-safe to share). One Session per notebook execution."""

    def __init__(self, package_root: Path, limits: SandboxLimits = SandboxLimits(),
                 python: str = sys.executable, *, extra_env: dict[str, str] | None = None,
                 shutdown_wait_time: float = 1.0, isolation: str = "auto"):
        self.level = choose(isolation)           # SandboxUnavailable if that level cannot run here
        if self.level == "none":
            raise SandboxUnavailable("isolation 'none' has no sandbox / 'none' 级别没有沙箱")
        self.control: Control = control_for(self.level)
        root = Path(os.path.realpath(package_root))
        if not (root / "agentrl_ref").is_dir():
            raise ValueError(f"package_root {package_root} has no agentrl_ref/ folder")
        self.package_root = root
        self.limits = limits
        self.python = python
        self.extra_env = dict(extra_env or {})
        self.shutdown_wait_time = shutdown_wait_time
        self._python_cmd, _ = python_layout(python)
        self._fonts: Path | None | bool = False     # built lazily, once per process and interpreter

    def session(self, workdir: Path, *, wall_seconds: float | None = None) -> "Session":
        """A context manager for one kernel run. `wall_seconds`: optional watchdog that kills the
        session (report.wall_limit_hit) after that many seconds from __enter__."""
        return Session(self, Path(workdir), wall_seconds=wall_seconds)

    def _font_files(self) -> list[Path]:
        if self._fonts is False:
            self._fonts = font_cache(self.python)
        if not self._fonts:
            return []
        return sorted(p for p in self._fonts.iterdir() if p.is_file())

    def _env(self) -> dict[str, str]:
        env = {"PATH": os.path.dirname(self._python_cmd) + ":/usr/local/bin:/usr/bin:/bin",
               "HOME": INNER_HOME, "IPYTHONDIR": INNER_IPYTHONDIR, "MPLCONFIGDIR": INNER_MPLCONFIGDIR,
               "LANG": "C.UTF-8", "PYTHONPATH": INNER_PACKAGE_ROOT, "PYTHONDONTWRITEBYTECODE": "1"}
        env.update(self.extra_env)
        env.pop("JPY_PARENT_PID", None)   # the kernel would exit: it cannot see that PID
        return env


class Session:
    """One sandboxed kernel run (use as a context manager). See the module docstring."""

    def __init__(self, sandbox: Sandbox, workdir: Path, *, wall_seconds: float | None = None):
        wd = Path(os.path.realpath(workdir))
        if not wd.is_dir():
            raise ValueError(f"workdir {workdir} is not a folder")
        self.sandbox = sandbox
        self.workdir = wd
        self.wall_seconds = wall_seconds
        self.name = f"s{os.getpid()}-{next(counter)}-{secrets.token_hex(4)}"
        self.report = SessionReport(limits=sandbox.limits)
        self.lock = threading.RLock()
        self._state = "new"            # new -> open -> closed
        self._dir = state_root() / self.name
        self._scratch = self._dir / "scratch"      # a capped tmpfs: /tmp, /dev/shm, $HOME, the connection files
        self._conn_dir = self._scratch / "conn"
        self.group = None                          # the session's processes and limits (control.py)
        self._mounted: list[Path] = []
        self._procs_list: list[subprocess.Popen] = []
        self._kms: list[SandboxKernelManager] = []
        self._km_counter = itertools.count(1)
        self._timer: threading.Timer | None = None
        self._exit_status_before_kill: int | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> "Session":
        with self.lock:
            if self._state != "new":
                raise RuntimeError("a Session can be entered once")
            font_files = self.sandbox._font_files()     # may build the cache (first session only)
            with lock:
                live_sessions.add(self.name)
            try:
                self._dir.mkdir(mode=0o700)
                self._scratch.mkdir(mode=0o700)
                self._font_binds = font_files
                lim, control = self.sandbox.limits, self.sandbox.control
                # CPU: however many processes the notebook starts, they run on cores of their own (the
                # ones the fewest other sessions use) and at most cpu_cores of them, so a neighbour's
                # cells keep their pace
                with lock:
                    users = control.cpu_users()
                    cpus = sorted(sorted(users, key=lambda cpu: (users[cpu], cpu))[:max(1, math.ceil(lim.cpu_cores))])
                    self.group = control.group(self.name, lim, cpus)
                    self.group.create()
                for folder, size, inodes, label in ((self.workdir, lim.workdir_mb, lim.workdir_inodes, ""),
                                                    (self._scratch, lim.tmp_mb, lim.tmp_inodes, ".scratch")):
                    mount_capped(folder, size << 20, inodes, f"{LABEL_PREFIX}{self.name}{label}")
                    self._mounted.append(folder)
                for name in SCRATCH:
                    (self._scratch / name).mkdir(mode=0o700)
            except BaseException:
                self._cleanup_dirs()
                with lock:
                    live_sessions.discard(self.name)
                raise
            self._state = "open"
            if self.wall_seconds is not None:
                self._timer = threading.Timer(self.wall_seconds, self._wall_timeout)
                self._timer.daemon = True
                self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Kill everything, fill `report`, remove cgroups and private folders. Idempotent."""
        with self.lock:
            if self._state != "open":
                self._state = "closed"
                return
            if self._timer is not None:
                self._timer.cancel()
            try:
                self._collect_exit_status()
                self._count_leftovers()
                self.kill()
                for p in self._procs_list:
                    try:
                        p.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        pass
                self._close_managers()
                self._fill_report()
                self._inspect_workdir()
            finally:
                self._cleanup_dirs()
                with lock:
                    live_sessions.discard(self.name)
                self._state = "closed"

    def kill(self) -> None:
        """SIGKILL every process of this session (its whole group). Idempotent, any thread."""
        with self.lock:
            if self._state == "new":
                return
            if self.group is not None:
                self.group.kill()
            for p in self._procs_list:
                if p.poll() is None:
                    try:
                        p.kill()
                    except OSError:
                        pass

    def kernel_manager(self) -> SandboxKernelManager:
        """A fresh, not-yet-started AsyncKernelManager for this sandbox: pass it as km= to
        ExecutePreprocessor.preprocess / NotebookClient. One kernel per session is the intended use."""
        with self.lock:
            self._check_open()
            conn = self._conn_dir / f"k{next(self._km_counter)}.json"
            km = SandboxKernelManager(kernel_name="python3", transport="ipc")
            km.connection_file = str(conn)
            km.ip = str(conn.with_suffix("")) + "-ipc"
            km.shutdown_wait_time = self.sandbox.shutdown_wait_time
            km._sbx_session = self
            km._sbx_clients = []
            self._kms.append(km)
            return km

    # -- internals ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._state != "open":
            raise RuntimeError("use the Session inside its `with` block")

    def _register_process(self, proc: subprocess.Popen) -> None:
        with self.lock:
            self._procs_list.append(proc)
            self.group.launcher_pid = proc.pid

    def _wall_timeout(self) -> None:
        with self.lock:
            if self._state != "open":
                return
            self.report.wall_limit_hit = True
            self._collect_exit_status()
            self.kill()

    def _command(self, connection_file: str, extra_arguments: list[str]) -> tuple[list[str], int]:
        """The full launcher + bwrap command line, and how many bwrap options follow BWRAP in it. Every
        folder the kernel may write is on a capped tmpfs: the working folder, and the session's scratch
        tmpfs for /tmp, /dev/shm, $HOME and the connection files; /dev itself is read-only."""
        sb, lim, group, scratch = self.sandbox, self.sandbox.limits, self.group, self._scratch
        bw = [BWRAP, *common_bind_args(sb.python, sb.package_root, ["--bind", str(scratch / "tmp"), "/tmp"]),
              "--bind", str(scratch / "shm"), "/dev/shm", "--remount-ro", "/dev",
              "--bind", str(scratch / "home"), INNER_HOME]
        for f in self._font_binds:
            bw += ["--ro-bind", str(f), f"{INNER_MPLCONFIGDIR}/{f.name}"]
        bw += ["--bind", str(self.workdir), INNER_WORKDIR,
               "--bind", str(self._conn_dir), str(self._conn_dir),
               "--remount-ro", "/", "--chdir", INNER_WORKDIR,
               *env_args(sb._env())]
        n_opts = len(bw) - 1
        bw.append("--")
        if group.nproc is not None:     # `job`: counted in the sandbox's own user namespace
            bw += ["/usr/bin/prlimit", f"--nproc={group.nproc}:{group.nproc}", "--"]
        bw += [sb._python_cmd, "-m", "ipykernel_launcher", "-f", connection_file]
        if not any(a.startswith("--HistoryManager.hist_file") for a in extra_arguments):
            bw.append("--HistoryManager.hist_file=:memory:")
        bw += extra_arguments
        as_kb = str(lim.effective_address_space_mb << 10) if lim.effective_address_space_mb else "unlimited"
        pin = "" if sb.control.pins_cpus else ",".join(map(str, group.cpus))
        oom = "" if group.oom_score_adj is None else str(group.oom_score_adj)
        return ["/bin/sh", "-c", LAUNCHER, "agentrl-sandbox", ":".join(group.procs_files),
                as_kb, str(lim.file_size_mb << 11), str(lim.cpu_seconds),
                str(lim.cpu_seconds + CPU_HARD_GRACE_S), pin, oom, *bw], n_opts

    def _collect_exit_status(self) -> None:
        """Remember how the kernel ended if it ended on its own (before we kill anything)."""
        for p in self._procs_list:
            rc = p.poll()
            if rc is not None and self._exit_status_before_kill is None:
                self._exit_status_before_kill = rc

    def _count_leftovers(self) -> None:
        """Processes alive at exit other than the launcher (bwrap), bwrap's PID-1 and the kernel."""
        pids = self.group.pids()
        outer = {p.pid for p in self._procs_list}
        info: dict[int, tuple[int, bytes]] = {}
        for pid in pids:
            try:
                st = Path(f"/proc/{pid}/stat").read_text()
                ppid = int(st.rsplit(")", 1)[1].split()[1])
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except (OSError, ValueError, IndexError):
                continue
            info[pid] = (ppid, cmd)
        inits = {pid for pid, (ppid, _) in info.items() if ppid in outer}
        conns = [str(km.connection_file).encode() for km in self._kms]
        kernels = {pid for pid, (ppid, cmd) in info.items()
                   if ppid in inits and b"ipykernel_launcher" in cmd and any(c in cmd for c in conns)}
        self.report.leftover_processes_killed = len(set(info) - outer - inits - kernels)

    def _close_managers(self) -> None:
        """Close the ZMQ sockets/contexts nbclient leaves open when it does not own the manager."""
        for km in self._kms:
            for kc in getattr(km, "_sbx_clients", []):
                try:
                    kc.stop_channels()
                except Exception:
                    pass
            try:
                km._close_control_socket()
            except Exception:
                pass
            try:
                km.cleanup_connection_file()
                km.cleanup_ipc_files()
            except Exception:
                pass
            try:
                if km._created_context and not km.context.closed:
                    km.context.destroy(linger=0)
            except Exception:
                pass
            prov = km.provisioner
            if prov is not None and getattr(prov, "process", None) is not None:
                if prov.process.poll() is not None:
                    prov.process = None     # reaped above; has_kernel -> False

    def _fill_report(self) -> None:
        r = self.report
        used = self.group.usage()
        r.oom_killed, r.pids_limit_hit = used.oom_killed, used.pids_limit_hit
        r.cpu_seconds, r.peak_memory_mb = used.cpu_seconds, used.peak_memory_mb
        rc = self._exit_status_before_kill
        r.kernel_exit_status = rc
        lim = self.sandbox.limits
        if rc is not None:
            if rc == 128 + signal.SIGXCPU:
                r.cpu_limit_hit = True
            elif rc == 128 + signal.SIGKILL and not r.oom_killed and (r.cpu_seconds or 0.0) >= lim.cpu_seconds:
                r.cpu_limit_hit = True
            if rc == 128 + signal.SIGXFSZ:
                r.file_size_limit_hit = True
        try:
            with open(self._scratch / "kernel.log", "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4096))
                r.kernel_log_tail = f.read().decode(errors="replace")
        except OSError:
            pass

    def _inspect_workdir(self) -> None:
        """After every process is gone: how much the run left in its working folder, whether the folder
        was full (bytes or inodes), whether a file reached the size cap. Nothing needs scrubbing: the
        folder is a tmpfs that is unmounted next, and whatever the sandbox planted there (symbolic links,
        FIFOs, set-uid files, 10,000 files) is gone with it."""
        r = self.report
        try:
            fs = os.statvfs(self.workdir)
            r.workdir_full = fs.f_bfree * fs.f_frsize < (64 << 10) or fs.f_ffree == 0
        except OSError:
            pass
        cap = self.sandbox.limits.file_size_mb << 20
        total = 0
        for _, st in _walk(self.workdir):
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
                if st.st_size >= cap:
                    r.file_size_limit_hit = True
            r.workdir_files += 1
        r.workdir_mb = total / 2**20

    def _cleanup_dirs(self) -> None:
        if self.group is not None:
            self.group.remove()
        for folder in self._mounted:
            unmount(folder)
        self._mounted = []
        shutil.rmtree(self._dir, ignore_errors=True)


def _walk(root: Path):
    """(path, lstat) of everything under root, depth first, never following symlinks. Each folder is
    listed completely before its entries are yielded, so the caller may unlink them."""
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            yield Path(e.path), st
            if stat.S_ISDIR(st.st_mode):
                stack.append(Path(e.path))

