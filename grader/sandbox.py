"""Run one Jupyter kernel per notebook execution inside a bubblewrap sandbox with cgroup v1 limits.

This is trusted code: it runs in the grading process, never inside the sandbox. The student code
inside the kernel is treated as hostile.

    sandbox = Sandbox(package_root, SandboxLimits(memory_mb=2048))
    with sandbox.session(workdir) as session:          # workdir: an empty folder, the kernel's cwd
        km = session.kernel_manager()                   # fresh AsyncKernelManager, not started
        ExecutePreprocessor(timeout=120).preprocess(nb, resources, km=km)   # or NotebookClient(nb, km=km)
    session.report.cause_zh()                           # e.g. "内存超过上限（2048 MB），内核被系统终止"

How it works
------------
* `Session.kernel_manager()` returns a `SandboxKernelManager` (an `AsyncKernelManager` subclass). Its
  kernel command is `/bin/sh -c LAUNCHER …`: the tiny POSIX-sh launcher writes its own PID into the
  session's memory, pids, cpuacct and cpu cgroups (v1), sets RLIMIT_CORE/AS/FSIZE/CPU with `ulimit`,
  ignores SIGINT (`trap '' INT`, so nbclient's interrupt, a SIGINT to the whole process group, does not
  kill bwrap) and then `exec`s bwrap, which runs `python -m ipykernel_launcher -f CONN` inside. No
  `preexec_fn` (unsafe with threads), no extra interpreter start.
* bwrap: `--unshare-all` (user, ipc, pid, net, uts, cgroup namespaces; the network has only `lo`),
  `--disable-userns` (no nested user namespaces), `--die-with-parent`, `--cap-drop ALL`. Read-only:
  `/usr` (+ the `/bin` `/lib` `/lib64` `/sbin` links), `/etc/ld.so.cache`, `/etc/fonts`,
  `/etc/alternatives`, a generated `/etc/passwd` + `/etc/group`, the venv and the base interpreter it
  links to, the package root at `/opt/agentrl`, the prebuilt matplotlib font list. Size-capped tmpfs
  on `/tmp`, `/dev/shm` and the private `$HOME` (`/home/student`). Read-write only the working folder
  (at `/submission`, the kernel's cwd) and the session's private connection-file folder (same path as
  on the host: client and kernel must agree on the IPC socket paths). Then `--remount-ro /`, and
  `--clearenv` then PATH, HOME, IPYTHONDIR, MPLCONFIGDIR, LANG, PYTHONPATH, PYTHONDONTWRITEBYTECODE.
  The options reach bwrap through a pipe (`--args FD`): /proc/1/cmdline inside stays short (but
  /proc/self/mountinfo still names the host paths of the binds, e.g. the workdir's).
* The working folder: for the session, a tmpfs capped in bytes and inodes (`workdir_mb`,
  `workdir_inodes`) is mounted on `workdir` (nosuid, nodev); nothing the notebook writes reaches the host
  disk, and at exit the tmpfs is unmounted with everything in it. While the session is open the host
  sees the files in `workdir`. The report says whether the folder was full (`full_zh()`).
* CPU: each session's cgroup gets a CFS quota of `cpu_cores` cores (and, as every sibling, an equal
  share): a notebook that starts fifty busy processes slows down itself, not a neighbour.
* Transport: ZMQ over IPC sockets in a fresh 0700 folder per session (TCP cannot cross the network
  namespace).
* Exit (`Session.__exit__`, also after exceptions): SIGKILL every process of the session's cgroup
  (repeated until empty; killing the PID namespace's init also takes down everything inside), reap the
  launcher, close the manager's and its clients' ZMQ sockets/contexts, read the cgroup counters into
  `Session.report`, remove the cgroups, the connection folder and the log, unmount the working folder.

Thread-safety: a `Sandbox` may be shared by threads; each `Session` belongs to the thread that runs its
notebook (`Session.kill()` may be called from any thread, e.g. a wall-clock watchdog). The kernel gets
SIGKILL when the *thread* that started it exits (PR_SET_PDEATHSIG of `--die-with-parent` is tied to
the forking thread): start and finish a session in the same, long-lived thread.

`python grader/sandbox.py --selftest` compares sandboxed and plain kernel start+execute times.
`python grader/sandbox.py --sweep` removes stale cgroups, state folders and working-folder mounts of dead
grader processes.
"""
from __future__ import annotations

import argparse
import atexit
import errno
import hashlib
import itertools
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpec

__all__ = [
    "SandboxUnavailable", "SandboxLimits", "SessionReport", "Sandbox", "Session", "SandboxKernelManager",
    "check_available", "sweep_stale_cgroups",
]

BWRAP = "/usr/bin/bwrap"
CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpuacct", "cpu")   # cpu and cpuacct may be one hierarchy (comounted)
PARENT_GROUP = "agentrl-grader"     # /sys/fs/cgroup/<controller>/agentrl-grader/<session>
STATE_PARENT = "agentrl-grader"     # /var/tmp/agentrl-grader/<session>/conn (private 0700 folders)

INNER_HOME = "/home/student"
INNER_WORKDIR = "/submission"
INNER_PACKAGE_ROOT = "/opt/agentrl"
INNER_IPYTHONDIR = INNER_HOME + "/.ipython"
INNER_MPLCONFIGDIR = INNER_HOME + "/.config/matplotlib"

# POSIX sh (dash). $1 the cgroup.procs files, separated by ":", $2 RLIMIT_AS (KiB or "unlimited"),
# $3 RLIMIT_FSIZE (512-byte blocks), $4/$5 RLIMIT_CPU soft/hard (s); the rest is the bwrap command line.
LAUNCHER = (
    'set -e; IFS=:; for f in $1; do echo $$ > "$f"; done; unset IFS; '
    'ulimit -c 0; ulimit -v "$2"; ulimit -f "$3"; ulimit -t "$5"; ulimit -S -t "$4"; '
    "trap '' INT; shift 5; exec \"$@\""
)
# --unshare-all: user, ipc, pid, net, uts, cgroup namespaces. --disable-userns (bwrap >= 0.8): the
# sandbox cannot create nested user namespaces (kernel attack surface).
_NAMESPACE_ARGS = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                   "--cap-drop", "ALL"]
CPU_HARD_GRACE_S = 2   # SIGXCPU at the soft limit, SIGKILL this much later if SIGXCPU is ignored

_SESSION_NAME = re.compile(r"^s(\d+)-\d+-[0-9a-f]+$")
_PROCESS_DIR_NAME = re.compile(r"^p(\d+)-[0-9a-f]+$")


# ----------------------------------------------------------------------------------------------
# Errors, limits, report
# ----------------------------------------------------------------------------------------------

class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run on this machine; the message says what is missing (English + Chinese)."""


@dataclass(frozen=True)
class SandboxLimits:
    memory_mb: int = 2048                 # cgroup v1 memory.limit_in_bytes (hard cap; OOM kill)
    address_space_mb: int | None = None   # RLIMIT_AS; None -> memory_mb + 1536 (torch maps ~1.5 GB)
    pids: int = 64                        # cgroup pids.max (counts threads too)
    file_size_mb: int = 64                # RLIMIT_FSIZE
    tmp_mb: int = 256                     # size of each tmpfs: /tmp, /dev/shm, $HOME
    cpu_seconds: int = 600                # RLIMIT_CPU per process (SIGXCPU, then SIGKILL)
    workdir_mb: int = 256                 # the working folder: a tmpfs of this size ...
    workdir_inodes: int = 10_000          # ... and this many files and folders
    cpu_cores: float = 1.0                # cgroup cpu quota: at most this many cores, whatever it starts

    def __post_init__(self) -> None:
        if not isinstance(self.cpu_cores, (int, float)) or not 0.05 <= self.cpu_cores <= 256:
            raise ValueError("SandboxLimits.cpu_cores must be a number of cores between 0.05 and 256")
        for name in ("memory_mb", "pids", "file_size_mb", "tmp_mb", "cpu_seconds", "workdir_mb", "workdir_inodes"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"SandboxLimits.{name} must be a positive int")   # tmpfs size=0 = unlimited
        if self.address_space_mb is not None and self.address_space_mb < 0:
            raise ValueError("SandboxLimits.address_space_mb must be None, 0 (no RLIMIT_AS) or positive")

    @property
    def effective_address_space_mb(self) -> int:
        """RLIMIT_AS in MB; 0 means no RLIMIT_AS."""
        return self.address_space_mb if self.address_space_mb is not None else self.memory_mb + 1536


@dataclass
class SessionReport:
    oom_killed: bool = False
    pids_limit_hit: bool = False
    cpu_limit_hit: bool = False
    file_size_limit_hit: bool = False     # best effort: SIGXFSZ or a workdir file at the cap
    workdir_full: bool = False            # the working folder's tmpfs ran out of bytes or of inodes
    cpu_seconds: float = 0.0              # all processes of the session (cpuacct)
    peak_memory_mb: float = 0.0           # memory.max_usage_in_bytes (incl. tmpfs pages)
    leftover_processes_killed: int = 0    # processes other than bwrap + the kernel alive at exit
    wall_limit_hit: bool = False          # Session(wall_seconds=...) watchdog fired
    kernel_exit_status: int | None = None  # launcher/bwrap exit status if the kernel ended by itself
    workdir_files: int = 0                # entries in the workdir after the run (files, folders)
    workdir_mb: float = 0.0               # bytes of regular files in the workdir after the run
    kernel_log_tail: str = ""             # last bytes of the kernel's stderr (bwrap errors, crashes)
    limits: SandboxLimits = field(default_factory=SandboxLimits)

    # (flag, Chinese, English): what a hit limit did to the kernel
    _CAUSES = (
        ("oom_killed", "内存超过上限（{memory_mb} MB），内核被系统终止",
         "memory limit ({memory_mb} MB) exceeded, kernel killed"),
        ("pids_limit_hit", "进程数超过上限（{pids}）", "process limit ({pids}) reached"),
        ("cpu_limit_hit", "CPU 时间超过上限（{cpu_seconds} 秒），内核被终止",
         "CPU time limit ({cpu_seconds} s) exceeded, kernel killed"),
        ("file_size_limit_hit", "写入的文件超过大小上限（{file_size_mb} MB）",
         "file size limit ({file_size_mb} MB) reached"),
        ("wall_limit_hit", "运行时间超过上限，内核被终止", "wall-clock limit exceeded, kernel killed"),
    )
    # limits that refuse a write but kill nothing
    _FULL = ("工作目录写满了（上限 {workdir_mb} MB、{workdir_inodes} 个文件和文件夹），之后的写入都失败了",
             "working folder full ({workdir_mb} MB, {workdir_inodes} files and folders); later writes failed")

    def _limits(self) -> dict:
        return {k: getattr(self.limits, k)
                for k in ("memory_mb", "pids", "cpu_seconds", "file_size_mb", "workdir_mb", "workdir_inodes")}

    def _cause(self, column: int, sep: str) -> str | None:
        parts = [row[column].format(**self._limits()) for row in self._CAUSES if getattr(self, row[0])]
        return sep.join(parts) if parts else None

    def full_zh(self) -> str | None:
        """A Chinese note if the working folder was full (nothing was killed for it); None otherwise."""
        return self._FULL[0].format(**self._limits()) if self.workdir_full else None

    def cause_zh(self) -> str | None:
        """A short Chinese note naming why the kernel was killed or limited; None if nothing was hit."""
        return self._cause(1, "；")

    def cause_en(self) -> str | None:
        return self._cause(2, "; ")


# ----------------------------------------------------------------------------------------------
# Availability
# ----------------------------------------------------------------------------------------------

def _unavailable(en: str, zh: str) -> SandboxUnavailable:
    return SandboxUnavailable(f"{en} / {zh}")


def _probe_args() -> list[str]:
    # the same namespace options as the real sandbox, and --size (bwrap >= 0.7)
    return [BWRAP, *_NAMESPACE_ARGS, "--ro-bind", "/usr", "/usr", *_usr_links(),
            "--proc", "/proc", "--dev", "/dev", "--size", str(1 << 20), "--tmpfs", "/tmp",
            "--", "/usr/bin/true"]


_probe_ok = False


def _probe_bwrap() -> str | None:
    """Run bwrap once (about 10 ms); None if it works, else its error output. Only success is cached."""
    global _probe_ok
    if _probe_ok:
        return None
    try:
        res = subprocess.run(_probe_args(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if res.returncode != 0:
        return res.stderr.decode(errors="replace").strip() or f"exit status {res.returncode}"
    _probe_ok = True
    return None


def check_available() -> None:
    """Raise SandboxUnavailable saying what is missing. Cheap (static checks + one cached bwrap run)."""
    if not sys.platform.startswith("linux"):
        raise _unavailable("the sandbox needs Linux", "沙箱只能在 Linux 上运行")
    if not (os.path.isfile(BWRAP) and os.access(BWRAP, os.X_OK)):
        raise _unavailable(f"bubblewrap is not installed ({BWRAP} missing; apt-get install bubblewrap)",
                           f"未安装 bubblewrap（缺少 {BWRAP}；请 apt-get install bubblewrap）")
    if not os.path.isfile("/bin/sh"):
        raise _unavailable("/bin/sh is missing", "缺少 /bin/sh")
    if (CGROUP_ROOT / "cgroup.controllers").is_file():
        raise _unavailable("this machine uses cgroup v2 only; the sandbox needs cgroup v1 (memory, pids, "
                           "cpuacct, cpu)", "本机只有 cgroup v2；沙箱需要 cgroup v1（memory、pids、cpuacct、cpu）")
    for ctrl in CONTROLLERS:
        d = CGROUP_ROOT / ctrl
        if not (d / "cgroup.procs").is_file():
            raise _unavailable(f"cgroup v1 controller '{ctrl}' is not mounted at {d}",
                               f"cgroup v1 控制器 '{ctrl}' 未挂载在 {d}")
        parent = d / PARENT_GROUP
        try:
            parent.mkdir(exist_ok=True)
        except OSError as e:
            raise _unavailable(f"cgroup {d} is not writable ({e.strerror}); run the grader as root",
                               f"cgroup {d} 不可写（{e.strerror}）；请以 root 身份运行评分程序") from None
        if not os.access(parent, os.W_OK):
            raise _unavailable(f"cgroup {parent} is not writable; run the grader as root",
                               f"cgroup {parent} 不可写；请以 root 身份运行评分程序")
    err = _probe_bwrap()
    if err is not None:
        raise _unavailable(f"bwrap cannot create the sandbox namespaces (user namespaces disabled?): {err}",
                           f"bwrap 无法创建沙箱命名空间（用户命名空间被禁用？）：{err}")
    err = _probe_mount()
    if err is not None:
        raise _unavailable(f"cannot mount the size- and inode-capped tmpfs of a working folder ({err}); run the "
                           "grader as root (CAP_SYS_ADMIN)",
                           f"无法挂载限制大小和文件数的工作目录 tmpfs（{err}）；请以 root 身份运行评分程序")


# ----------------------------------------------------------------------------------------------
# The working folder: a tmpfs capped in bytes and inodes, mounted on the host folder for one session
# ----------------------------------------------------------------------------------------------

_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2
_libc = None
_mount_ok = False


def _c_library():
    global _libc
    if _libc is None:
        import ctypes
        import ctypes.util

        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def mount_workspace(folder: Path, size_bytes: int, inodes: int, label: str) -> None:
    """Mount a tmpfs of size_bytes and at most `inodes` files and folders on folder (nosuid, nodev).
    label names the mount in /proc/self/mountinfo, so a sweep can find it after a crash."""
    import ctypes

    options = f"size={size_bytes},nr_inodes={inodes},mode=0700".encode()
    rc = _c_library().mount(label.encode(), str(folder).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(folder))


def unmount_workspace(folder: Path) -> None:
    """Lazily unmount folder's tmpfs: its files are gone at once for every later reader."""
    _c_library().umount2(str(folder).encode(), _MNT_DETACH)


def _probe_mount() -> str | None:
    """Mount and unmount a tiny capped tmpfs once; None if that works (cached), else why not."""
    global _mount_ok
    if _mount_ok:
        return None
    probe = Path(tempfile.mkdtemp(prefix="agentrl-mount-probe-"))
    try:
        mount_workspace(probe, 1 << 20, 16, "agentrl-probe")
        unmount_workspace(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass
    _mount_ok = True
    return None


def _workspace_mounts() -> list[tuple[str, str]]:
    """(label, mount point) of every workspace tmpfs mounted by this module (mountinfo: source field)."""
    found = []
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) > 4 and len(rfields) > 1 and rfields[0] == "tmpfs" and rfields[1].startswith("agentrl-s"):
            point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n") \
                .replace("\\134", "\\")
            found.append((rfields[1][len("agentrl-"):], point))
    return found


# ----------------------------------------------------------------------------------------------
# Process-wide helpers: state folder, registry of live sessions, matplotlib font cache
# ----------------------------------------------------------------------------------------------

_lock = threading.Lock()
_counter = itertools.count(1)
_live_sessions: set[str] = set()
_process_dir: Path | None = None
_font_caches: dict[str, Path | None] = {}
_font_cache_locks: dict[str, threading.Lock] = {}


def _state_root() -> Path:
    """Parent of the private per-session folders. The connection folder is writable from inside the
    sandbox, so it should live on disk (/var/tmp), not on a small RAM-backed /run that host services
    need; never under the host /tmp (the sandbox mounts its own /tmp and would show the path there)."""
    for base in ("/var/tmp", "/run"):
        if os.path.isdir(base) and os.access(base, os.W_OK):
            break
    else:
        base = tempfile.gettempdir()
    root = Path(base) / STATE_PARENT
    root.mkdir(mode=0o700, exist_ok=True)
    os.chmod(root, 0o700)
    return root


def _get_process_dir() -> Path:
    """A trusted private folder of this grader process (font caches, passwd); removed at exit."""
    global _process_dir
    with _lock:
        if _process_dir is None or not _process_dir.is_dir():
            d = _state_root() / f"p{os.getpid()}-{secrets.token_hex(4)}"
            d.mkdir(mode=0o700)
            (d / "passwd").write_text(f"root:x:0:0:student:{INNER_HOME}:/bin/sh\n"
                                      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
            (d / "group").write_text("root:x:0:\nnogroup:x:65534:\n")
            _process_dir = d
            atexit.register(shutil.rmtree, d, True)
        return _process_dir


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _usr_links() -> list[str]:
    """/bin, /lib, /lib64, /sbin: symlinks into /usr on merged-/usr systems, else read-only binds."""
    args: list[str] = []
    for name in ("bin", "lib", "lib64", "lib32", "libx32", "sbin"):
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    return args


@lru_cache(maxsize=8)
def _python_layout(python: str) -> tuple[str, tuple[str, ...]]:
    """(the interpreter path to run, the folders to bind read-only so that it works inside).

    For a venv: the venv itself and the base interpreter its `bin/python` links to (its prefix holds
    the stdlib and, for a shared build, libpython)."""
    py = Path(python)
    py = Path(os.path.realpath(py.parent)) / py.name      # keep the venv's own bin/python (venv-ness)
    # (not "the same binary": every venv's bin/python links to the same base interpreter)
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        info = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    else:
        out = subprocess.run([str(py), "-I", "-c",
                              "import sys; print(sys.prefix); print(sys.exec_prefix); "
                              "print(sys.base_prefix); print(sys.base_exec_prefix)"],
                             capture_output=True, text=True, timeout=60, check=True)
        info = out.stdout.split("\n")[:4]
    dirs = {os.path.realpath(p) for p in info if p}
    dirs.add(os.path.dirname(os.path.dirname(os.path.realpath(py))))   # where the binary really lives
    keep: list[str] = []
    for d in sorted(dirs, key=len):
        if d == "/usr" or d.startswith("/usr/"):
            continue                                                      # bound anyway
        if d in ("/", "/root", "/home", "/work", "/tmp", "/etc", "/var", "/opt"):
            raise ValueError(f"refusing to bind {d!r} into the sandbox (interpreter prefix of {python})")
        if any(d == k or d.startswith(k + "/") for k in keep):
            continue
        keep.append(d)
    return str(py), tuple(keep)


def _common_bind_args(python: str, package_root: Path | None, tmp_bytes: int) -> list[str]:
    """The sandbox's file system. The private /tmp comes first: the venv or the interpreter may live
    under the host's /tmp (a checkout in /tmp), and binds made before the tmpfs would be hidden by it."""
    _, pydirs = _python_layout(python)
    pdir = _get_process_dir()
    args = [*_NAMESPACE_ARGS, "--hostname", "sandbox",
            "--size", str(tmp_bytes), "--tmpfs", "/tmp",
            "--ro-bind", "/usr", "/usr", *_usr_links(),
            "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
            "--ro-bind-try", "/etc/fonts", "/etc/fonts",
            "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
            "--ro-bind", str(pdir / "passwd"), "/etc/passwd",
            "--ro-bind", str(pdir / "group"), "/etc/group"]
    for d in pydirs:
        args += ["--ro-bind", d, d]
    if package_root is not None:
        args += ["--ro-bind", str(package_root), INNER_PACKAGE_ROOT]
    args += ["--proc", "/proc", "--dev", "/dev"]
    return args


def _env_args(env: dict[str, str]) -> list[str]:
    args = ["--clearenv"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    return args


def _font_cache(python: str) -> Path | None:
    """Build matplotlib's font list once per process and interpreter, inside a sandbox (so the font
    paths are the ones the kernel sees), in a trusted folder outside. None if matplotlib is absent."""
    key = os.path.realpath(python)
    with _lock:
        lk = _font_cache_locks.setdefault(key, threading.Lock())
    with lk:
        if key in _font_caches:
            cached = _font_caches[key]
            if cached is None or cached.is_dir():
                return cached
        out = _get_process_dir() / ("mpl-" + hashlib.sha1(key.encode()).hexdigest()[:10])
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(mode=0o700)
        py, _ = _python_layout(python)
        env = {"PATH": "/usr/bin:/bin", "HOME": INNER_HOME, "MPLCONFIGDIR": INNER_MPLCONFIGDIR,
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
        cmd = [BWRAP, *_common_bind_args(python, None, 256 << 20),
               "--size", str(256 << 20), "--tmpfs", INNER_HOME,
               "--bind", str(out), INNER_MPLCONFIGDIR, "--remount-ro", "/", "--chdir", "/tmp",
               *_env_args(env), "--", py, "-c",
               "import importlib.util, sys\n"
               "if importlib.util.find_spec('matplotlib') is None: sys.exit(3)\n"
               "import matplotlib; matplotlib.use('Agg'); import matplotlib.font_manager\n"]
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
        files = [p for p in out.iterdir() if p.is_file()]
        if res.returncode != 0 or not files:
            shutil.rmtree(out, ignore_errors=True)
            if res.returncode == 3:
                _font_caches[key] = None
                return None
            raise RuntimeError("could not build the matplotlib font cache inside the sandbox: "
                               + res.stderr.decode(errors="replace")[-2000:])
        _font_caches[key] = out
        return out


# ----------------------------------------------------------------------------------------------
# cgroups
# ----------------------------------------------------------------------------------------------

def _read(path: Path, default: str = "") -> str:
    try:
        return path.read_text()
    except OSError:
        return default


def _procs(dirs: list[Path]) -> set[int]:
    pids: set[int] = set()
    for d in dirs:
        for line in _read(d / "cgroup.procs").split():
            pids.add(int(line))
    return pids


def _kill_group(dirs: list[Path], deadline_s: float = 10.0) -> set[int]:
    """SIGKILL every process in the cgroups until they are empty. Returns the PIDs signalled."""
    killed: set[int] = set()
    end = time.monotonic() + deadline_s
    delay = 0.002
    while True:
        pids = _procs(dirs)
        if not pids:
            return killed
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        if time.monotonic() > end:
            return killed
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _rmdir_retry(d: Path, deadline_s: float = 5.0) -> bool:
    end = time.monotonic() + deadline_s
    delay = 0.002
    while True:
        try:
            d.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() > end:
                return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def sweep_stale_cgroups() -> int:
    """Remove leftover cgroup folders (and private state folders) of this module whose grader process
    is gone, killing any process still in them; also empty leftovers of this process that no live
    session owns. Groups of other live grader processes are left alone. Returns folders removed."""
    removed = 0
    me = os.getpid()
    with _lock:
        live = set(_live_sessions)
    for name, point in _workspace_mounts():   # a crashed grader's working folders
        m = _SESSION_NAME.match(name)
        if m and name not in live and (int(m.group(1)) == me or not _pid_alive(int(m.group(1)))):
            unmount_workspace(Path(point))
            removed += 1
    for ctrl in CONTROLLERS:
        parent = CGROUP_ROOT / ctrl / PARENT_GROUP
        if not parent.is_dir():
            continue
        for child in parent.iterdir():
            if not child.is_dir() or child.name in live:
                continue
            m = _SESSION_NAME.match(child.name)
            if m is None:
                continue
            owner = int(m.group(1))
            if owner != me and _pid_alive(owner):
                continue
            _kill_group([child], deadline_s=5.0)
            if _rmdir_retry(child, 2.0):
                removed += 1
    try:
        root = _state_root()
    except OSError:
        return removed
    for child in root.iterdir():
        m = _SESSION_NAME.match(child.name) or _PROCESS_DIR_NAME.match(child.name)
        if m is None or child.name in live:
            continue
        owner = int(m.group(1))
        if owner == me:
            if _PROCESS_DIR_NAME.match(child.name):
                continue
        elif _pid_alive(owner):
            continue
        shutil.rmtree(child, ignore_errors=True)
        removed += 1
    return removed


# ----------------------------------------------------------------------------------------------
# Kernel manager
# ----------------------------------------------------------------------------------------------

class SandboxKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernel runs in its Session's sandbox (IPC transport, fixed command).

    The notebook's own kernelspec is ignored. `start_kernel(cwd=...)` is accepted but the kernel's cwd
    is always the session workdir (seen inside as /submission)."""

    _sbx_session: "Session"
    _sbx_clients: list
    _sbx_opts: int = 0

    @property
    def kernel_spec(self) -> KernelSpec:  # type: ignore[override]
        if self._kernel_spec is None:
            self._kernel_spec = KernelSpec(
                argv=["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                display_name="Python 3 (sandbox)", language="python", interrupt_mode="signal",
                env={}, metadata={})
        return self._kernel_spec

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd, self._sbx_opts = self._sbx_session._command(self.connection_file, list(extra_arguments or []))
        return cmd

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        session = self._sbx_session
        session._check_open()
        kw["env"] = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}   # bwrap --clearenv anyway
        kw["cwd"] = str(session._dir)
        kw["stdout"] = subprocess.DEVNULL
        # bwrap's options go through a pipe (`--args FD`): the sandbox's /proc/1/cmdline then shows
        # "bwrap --args N -- python ...", not the whole mount list.
        i = kernel_cmd.index(BWRAP)
        opts = kernel_cmd[i + 1:i + 1 + self._sbx_opts]
        data = b"".join(a.encode() + b"\0" for a in opts)
        if len(data) > 60000:
            raise RuntimeError("bwrap argument list too long for a pipe")
        r, w = os.pipe()
        try:
            os.write(w, data)
        finally:
            os.close(w)
        kernel_cmd = kernel_cmd[:i + 1] + ["--args", str(r)] + kernel_cmd[i + 1 + self._sbx_opts:]
        kw["pass_fds"] = (r,)
        log = open(session._dir / "kernel.log", "ab")
        kw["stderr"] = log
        try:
            await super()._async_launch_kernel(kernel_cmd, **kw)
        finally:
            log.close()
            os.close(r)
        proc = self.provisioner.process if self.provisioner is not None else None
        if proc is not None:
            session._register_process(proc)

    def client(self, **kwargs: Any):  # type: ignore[override]
        kc = super().client(**kwargs)
        self._sbx_clients.append(kc)
        return kc


# ----------------------------------------------------------------------------------------------
# Sandbox and Session
# ----------------------------------------------------------------------------------------------

class Sandbox:
    """Configuration shared by sessions (thread-safe to share). One Session per notebook execution."""

    def __init__(self, package_root: Path, limits: SandboxLimits = SandboxLimits(),
                 python: str = sys.executable, *, extra_env: dict[str, str] | None = None,
                 shutdown_wait_time: float = 1.0):
        check_available()
        root = Path(os.path.realpath(package_root))
        if not (root / "agentrl_ref").is_dir():
            raise ValueError(f"package_root {package_root} has no agentrl_ref/ folder")
        self.package_root = root
        self.limits = limits
        self.python = python
        self.extra_env = dict(extra_env or {})
        self.shutdown_wait_time = shutdown_wait_time
        self._python_cmd, _ = _python_layout(python)
        self._fonts: Path | None | bool = False     # built lazily, once per process and interpreter

    def session(self, workdir: Path, *, wall_seconds: float | None = None) -> "Session":
        """A context manager for one kernel run. `wall_seconds`: optional watchdog that kills the
        session (report.wall_limit_hit) after that many seconds from __enter__."""
        return Session(self, Path(workdir), wall_seconds=wall_seconds)

    def _font_files(self) -> list[Path]:
        if self._fonts is False:
            self._fonts = _font_cache(self.python)
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
        self.name = f"s{os.getpid()}-{next(_counter)}-{secrets.token_hex(4)}"
        self.report = SessionReport(limits=sandbox.limits)
        self._lock = threading.RLock()
        self._state = "new"            # new -> open -> closed
        self._dir = _state_root() / self.name
        self._conn_dir = self._dir / "conn"
        self._cgroup = {c: CGROUP_ROOT / c / PARENT_GROUP / self.name for c in CONTROLLERS}
        # one folder per hierarchy: where cpu and cpuacct are comounted, both names lead to one folder
        self._cgroups: list[Path] = list({os.path.realpath(d.parent): d for d in self._cgroup.values()}.values())
        self._mounted = False
        self._procs_list: list[subprocess.Popen] = []
        self._kms: list[SandboxKernelManager] = []
        self._km_counter = itertools.count(1)
        self._timer: threading.Timer | None = None
        self._exit_status_before_kill: int | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> "Session":
        with self._lock:
            if self._state != "new":
                raise RuntimeError("a Session can be entered once")
            font_files = self.sandbox._font_files()     # may build the cache (first session only)
            with _lock:
                _live_sessions.add(self.name)
            try:
                self._dir.mkdir(mode=0o700)
                self._conn_dir.mkdir(mode=0o700)
                self._font_binds = font_files
                lim = self.sandbox.limits
                for d in self._cgroups:
                    d.parent.mkdir(exist_ok=True)
                    d.mkdir()
                mem, pids, cpu = self._cgroup["memory"], self._cgroup["pids"], self._cgroup["cpu"]
                # a CPU quota: however many processes the notebook starts, it gets at most cpu_cores
                # cores, so a neighbour's cells keep their pace (and equal shares among siblings)
                period = int(_read(cpu / "cpu.cfs_period_us", "100000") or 100000)
                (cpu / "cpu.cfs_quota_us").write_text(str(max(1000, int(lim.cpu_cores * period))))
                (mem / "memory.limit_in_bytes").write_text(str(lim.memory_mb << 20))
                if (mem / "memory.memsw.limit_in_bytes").exists():   # no escape into swap
                    try:
                        (mem / "memory.memsw.limit_in_bytes").write_text(str(lim.memory_mb << 20))
                    except OSError:
                        pass
                (pids / "pids.max").write_text(str(lim.pids))
                mount_workspace(self.workdir, lim.workdir_mb << 20, lim.workdir_inodes, f"agentrl-{self.name}")
                self._mounted = True
            except BaseException:
                self._cleanup_dirs()
                with _lock:
                    _live_sessions.discard(self.name)
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
        with self._lock:
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
                with _lock:
                    _live_sessions.discard(self.name)
                self._state = "closed"

    def kill(self) -> None:
        """SIGKILL every process of this session (the whole cgroup). Idempotent, any thread."""
        with self._lock:
            if self._state == "new":
                return
            _kill_group([d for d in self._cgroups if d.is_dir()])
            for p in self._procs_list:
                if p.poll() is None:
                    try:
                        p.kill()
                    except OSError:
                        pass

    def kernel_manager(self) -> SandboxKernelManager:
        """A fresh, not-yet-started AsyncKernelManager for this sandbox: pass it as km= to
        ExecutePreprocessor.preprocess / NotebookClient. One kernel per session is the intended use."""
        with self._lock:
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
        with self._lock:
            self._procs_list.append(proc)

    def _wall_timeout(self) -> None:
        with self._lock:
            if self._state != "open":
                return
            self.report.wall_limit_hit = True
            self._collect_exit_status()
            self.kill()

    def _command(self, connection_file: str, extra_arguments: list[str]) -> tuple[list[str], int]:
        """The full launcher + bwrap command line, and how many bwrap options follow BWRAP in it."""
        sb, lim = self.sandbox, self.sandbox.limits
        size = str(lim.tmp_mb << 20)
        bw = [BWRAP, *_common_bind_args(sb.python, sb.package_root, lim.tmp_mb << 20),
              "--size", size, "--tmpfs", "/dev/shm",
              "--size", size, "--tmpfs", INNER_HOME]
        for f in self._font_binds:
            bw += ["--ro-bind", str(f), f"{INNER_MPLCONFIGDIR}/{f.name}"]
        bw += ["--bind", str(self.workdir), INNER_WORKDIR,
               "--bind", str(self._conn_dir), str(self._conn_dir),
               "--remount-ro", "/", "--chdir", INNER_WORKDIR,
               *_env_args(sb._env())]
        n_opts = len(bw) - 1
        bw += ["--", sb._python_cmd, "-m", "ipykernel_launcher", "-f", connection_file]
        if not any(a.startswith("--HistoryManager.hist_file") for a in extra_arguments):
            bw.append("--HistoryManager.hist_file=:memory:")
        bw += extra_arguments
        as_kb = str(lim.effective_address_space_mb << 10) if lim.effective_address_space_mb else "unlimited"
        return ["/bin/sh", "-c", LAUNCHER, "agentrl-sandbox",
                ":".join(str(d / "cgroup.procs") for d in self._cgroups),
                as_kb, str(lim.file_size_mb << 11), str(lim.cpu_seconds),
                str(lim.cpu_seconds + CPU_HARD_GRACE_S), *bw], n_opts

    def _collect_exit_status(self) -> None:
        """Remember how the kernel ended if it ended on its own (before we kill anything)."""
        for p in self._procs_list:
            rc = p.poll()
            if rc is not None and self._exit_status_before_kill is None:
                self._exit_status_before_kill = rc

    def _count_leftovers(self) -> None:
        """Processes alive at exit other than the launcher (bwrap), bwrap's PID-1 and the kernel."""
        pids = _procs(self._cgroups)
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
        mem, pids, cpu = self._cgroup["memory"], self._cgroup["pids"], self._cgroup["cpuacct"]
        oom = _read(mem / "memory.oom_control")
        m = re.search(r"^oom_kill (\d+)", oom, re.M)
        r.oom_killed = bool(m and int(m.group(1)) > 0)
        try:
            r.peak_memory_mb = int(_read(mem / "memory.max_usage_in_bytes", "0")) / 2**20
        except ValueError:
            pass
        m = re.search(r"^max (\d+)", _read(pids / "pids.events"), re.M)
        r.pids_limit_hit = bool(m and int(m.group(1)) > 0)
        try:
            r.cpu_seconds = int(_read(cpu / "cpuacct.usage", "0")) / 1e9
        except ValueError:
            pass
        rc = self._exit_status_before_kill
        r.kernel_exit_status = rc
        lim = self.sandbox.limits
        if rc is not None:
            if rc == 128 + signal.SIGXCPU:
                r.cpu_limit_hit = True
            elif rc == 128 + signal.SIGKILL and not r.oom_killed and r.cpu_seconds >= lim.cpu_seconds:
                r.cpu_limit_hit = True
            if rc == 128 + signal.SIGXFSZ:
                r.file_size_limit_hit = True
        try:
            with open(self._dir / "kernel.log", "rb") as f:
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
        for d in self._cgroups:
            if d.is_dir():
                _kill_group([d], deadline_s=5.0)
                _rmdir_retry(d)
        if self._mounted:
            unmount_workspace(self.workdir)
            self._mounted = False
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


# ----------------------------------------------------------------------------------------------
# Self-test / benchmark
# ----------------------------------------------------------------------------------------------

def _selftest(rounds: int) -> int:
    import asyncio
    import statistics

    import nbformat
    from nbclient import NotebookClient

    check_available()
    base = Path(tempfile.mkdtemp(prefix="sandbox-selftest-"))
    try:
        pkg = base / "pkg" / "agentrl_ref"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("VALUE = 42\n")
        work = base / "work"
        work.mkdir()
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("x = 1 + 1\nprint(x)")]

        t0 = time.perf_counter()
        sandbox = Sandbox(base / "pkg")
        with sandbox.session(work):
            pass
        print(f"one-off set-up (font cache, first session): {time.perf_counter() - t0:.2f} s")

        plain_conn = base / "plain-conn"
        plain_conn.mkdir(mode=0o700)
        plain_runs = itertools.count()

        def run_plain() -> tuple[float, float]:
            # same transport (IPC) as the sandbox, no sandbox, no limits
            km = AsyncKernelManager(kernel_name="python3", transport="ipc")
            km.connection_file = str(plain_conn / f"k{next(plain_runs)}.json")
            km.ip = km.connection_file[:-5] + "-ipc"
            t = time.perf_counter()
            NotebookClient(nbformat.from_dict(nb), km=km, timeout=60,
                           resources={"metadata": {"path": str(work)}}).execute()
            t_exec = time.perf_counter() - t
            asyncio.run(km.shutdown_kernel(now=True))
            return t_exec, time.perf_counter() - t

        def run_sandboxed() -> tuple[float, float]:
            t = time.perf_counter()
            with sandbox.session(work) as s:
                out = NotebookClient(nbformat.from_dict(nb), km=s.kernel_manager(), timeout=60).execute()
                t_exec = time.perf_counter() - t
            assert out.cells[0].outputs[0]["text"] == "2\n", out.cells[0].outputs
            return t_exec, time.perf_counter() - t

        plain, sandboxed = [], []
        run_plain()                         # warm the page cache
        run_sandboxed()
        for _ in range(rounds):
            plain.append(run_plain())
            sandboxed.append(run_sandboxed())
        med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
        print(f"rounds: {rounds} (alternating; wall-clock medians, one notebook `x = 1 + 1; print(x)`)")
        print(f"kernel start + execute   plain {med(plain, 0):.3f} s   sandboxed {med(sandboxed, 0):.3f} s"
              f"   overhead {med(sandboxed, 0) - med(plain, 0):+.3f} s")
        print(f"  ... + kernel shutdown  plain {med(plain, 1):.3f} s   sandboxed {med(sandboxed, 1):.3f} s"
              f"   overhead {med(sandboxed, 1) - med(plain, 1):+.3f} s")
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--selftest", action="store_true", help="time sandboxed vs plain kernels")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="only check that the sandbox is available")
    ap.add_argument("--sweep", action="store_true", help="remove stale cgroups/state of dead graders")
    args = ap.parse_args(argv)
    if args.check:
        check_available()
        print("sandbox available / 沙箱可用")
        return 0
    if args.sweep:
        print(f"removed {sweep_stale_cgroups()} stale folders")
        return 0
    if args.selftest:
        return _selftest(args.rounds)
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
