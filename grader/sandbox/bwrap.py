"""The bubblewrap command: namespaces, the read-only file system a kernel sees, its environment, and the
matplotlib font list built once inside a sandbox (so that the paths in it are the ones the kernel sees)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
from functools import lru_cache
from pathlib import Path

from .host import BWRAP, INNER_HOME, INNER_MPLCONFIGDIR, INNER_PACKAGE_ROOT, lock, process_dir

_font_caches: dict[str, Path | None] = {}
_font_cache_locks: dict[str, threading.Lock] = {}

# POSIX sh (dash). $1 the cgroup.procs files, separated by ":" (none at the `job` level), $2 RLIMIT_AS (KiB
# or "unlimited"), $3 RLIMIT_FSIZE (512-byte blocks), $4/$5 RLIMIT_CPU soft/hard (s), $6 the CPUs to pin
# to with sched_setaffinity ("" where a cpuset does it), $7 an oom_score_adj ("" for none); the rest is
# the bwrap command line.
LAUNCHER = (
    'set -e; IFS=:; for f in $1; do echo $$ > "$f"; done; unset IFS; '
    'ulimit -c 0; ulimit -v "$2"; ulimit -f "$3"; ulimit -t "$5"; ulimit -S -t "$4"; '
    'if [ -n "$6" ]; then taskset -p -c "$6" $$ >/dev/null; fi; '
    'if [ -n "$7" ]; then echo "$7" > /proc/self/oom_score_adj; fi; '
    "trap '' INT; shift 7; exec \"$@\""
)
# --unshare-all: user, ipc, pid, net, uts, cgroup namespaces. --disable-userns (bwrap >= 0.8): the
# sandbox cannot create nested user namespaces (kernel attack surface).
NAMESPACE_ARGS = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                   "--cap-drop", "ALL"]
CPU_HARD_GRACE_S = 2   # SIGXCPU at the soft limit, SIGKILL this much later if SIGXCPU is ignored



def usr_links() -> list[str]:
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
def python_layout(python: str) -> tuple[str, tuple[str, ...]]:
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


def common_bind_args(python: str, package_root: Path | None, tmp: list[str]) -> list[str]:
    """The sandbox's file system. The private /tmp (`tmp`: the options that make it) comes first: the venv
    or the interpreter may live under the host's /tmp (a checkout in /tmp), and binds made before it would
    be hidden by it."""
    _, pydirs = python_layout(python)
    pdir = process_dir()
    args = [*NAMESPACE_ARGS, "--hostname", "sandbox", *tmp,
            "--ro-bind", "/usr", "/usr", *usr_links(),
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


def env_args(env: dict[str, str]) -> list[str]:
    args = ["--clearenv"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    return args


def font_cache(python: str) -> Path | None:
    """Build matplotlib's font list once per process and interpreter, inside a sandbox (so the font
    paths are the ones the kernel sees), in a trusted folder outside. None if matplotlib is absent."""
    key = os.path.realpath(python)
    with lock:
        lk = _font_cache_locks.setdefault(key, threading.Lock())
    with lk:
        if key in _font_caches:
            cached = _font_caches[key]
            if cached is None or cached.is_dir():
                return cached
        out = process_dir() / ("mpl-" + hashlib.sha1(key.encode()).hexdigest()[:10])
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(mode=0o700)
        py, _ = python_layout(python)
        env = {"PATH": "/usr/bin:/bin", "HOME": INNER_HOME, "MPLCONFIGDIR": INNER_MPLCONFIGDIR,
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
        cmd = [BWRAP, *common_bind_args(python, None, ["--size", str(256 << 20), "--tmpfs", "/tmp"]),
               "--size", str(256 << 20), "--tmpfs", INNER_HOME,
               "--bind", str(out), INNER_MPLCONFIGDIR, "--remount-ro", "/", "--chdir", "/tmp",
               *env_args(env), "--", py, "-c",
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

