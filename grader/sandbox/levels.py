"""Isolation levels: which one this machine gives this grader, and why not a better one.

    cgroup2   one cgroup v2 group per notebook (root, or a normal user with a delegated subtree)
    cgroup1   one cgroup v1 group per notebook (root)
    job       no group of its own: one notebook at a time inside the job's or pod's own limits (job.py)
    none      no sandbox at all (only when asked for: --isolation=none / --unsafe-no-sandbox)

Every level but `none` runs each kernel in bubblewrap (no network, only its own files) with its working
folder, /tmp, /dev/shm and $HOME on tmpfs capped in bytes and inodes. `probe()` says which level runs here
and why not a better one; `control_for(level)` is the process's resource control at a level; which level a
run uses (and the refusal when it cannot have it) is doctor.choose().
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field

from .bwrap import NAMESPACE_ARGS, usr_links
from .control import Control
from .host import BWRAP, real_root, state_root
from .limits import SandboxUnavailable
from .mounts import probe_mount

LEVELS = ("cgroup2", "cgroup1", "job", "none")
CGROUP_LEVELS = ("cgroup2", "cgroup1")
REQUESTS = ("auto", "cgroup", "job", "none")
NAME_ZH = {
    "cgroup2": "cgroup v2：每份 notebook 一个组",
    "cgroup1": "cgroup v1：每份 notebook 一个组",
    "job": "作业级：一次一份，用作业或 pod 自己的限额",
    "none": "没有沙箱",
}


@dataclass
class Probe:
    best: str                                                     # the best level that runs here
    why_not: dict[str, tuple[str, str]] = field(default_factory=dict)   # level -> (English, Chinese)


def _probe_args() -> list[str]:
    # the same namespace options as the real sandbox, and --size (bwrap >= 0.7)
    return [BWRAP, *NAMESPACE_ARGS, "--ro-bind", "/usr", "/usr", *usr_links(),
            "--proc", "/proc", "--dev", "/dev", "--size", str(1 << 20), "--tmpfs", "/tmp",
            "--", "/usr/bin/true"]


_bwrap_ok = False


def probe_bwrap() -> str | None:
    """Run bwrap once (about 10 ms); None if it works, else its error output. Only success is cached."""
    global _bwrap_ok
    if _bwrap_ok:
        return None
    try:
        res = subprocess.run(_probe_args(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if res.returncode != 0:
        return res.stderr.decode(errors="replace").strip() or f"exit status {res.returncode}"
    _bwrap_ok = True
    return None


def sandbox_problem() -> tuple[str, str] | None:
    """What keeps any sandbox from running here (English, Chinese), or None."""
    if not sys.platform.startswith("linux"):
        return "the sandbox needs Linux", "沙箱只能在 Linux 上运行"
    if not (os.path.isfile(BWRAP) and os.access(BWRAP, os.X_OK)):
        return (f"bubblewrap is not installed ({BWRAP} missing)", f"未安装 bubblewrap（缺少 {BWRAP}）")
    if not os.path.isfile("/bin/sh"):
        return "/bin/sh is missing", "缺少 /bin/sh"
    err = probe_bwrap()
    if err is not None:
        return (f"bwrap cannot create the sandbox's namespaces: {err}", f"bwrap 无法创建沙箱的命名空间：{err}")
    if os.geteuid() != 0:
        return ("a normal user's grader must run in a user namespace of its own to mount the capped folders "
                "(python -m grader enters one by itself; here it could not)",
                "普通用户的评分程序要在自己的用户命名空间里才能挂载限额的目录"
                "（python -m grader 会自己进入；这里进不去）")
    err = probe_mount()
    if err is not None:
        return (f"cannot mount a tmpfs capped in bytes and inodes ({err})",
                f"无法挂载限制大小和文件数的 tmpfs（{err}）")
    return None


_controls: dict[str, Control] = {}
_made = threading.Lock()


def control_for(level: str) -> Control:
    """The one Control of `level` in this process (made, and its process-wide set-up done, once)."""
    with _made:
        if level not in _controls:
            if level == "cgroup1":
                from .cgroup_v1 import V1Control as cls
            elif level == "cgroup2":
                from .cgroup_v2 import V2Control as cls
            elif level == "job":
                from .job import JobControl as cls
            else:
                raise ValueError(f"no resource control for level {level!r}")
            _controls[level] = cls()
        return _controls[level]


def controls() -> list[Control]:
    """Every Control this process has made."""
    with _made:
        return list(_controls.values())


def probe() -> Probe:
    """Which level this process can run, and for every better one why not."""
    found = Probe("none")
    problem = sandbox_problem()
    if problem is not None:
        for level in ("cgroup2", "cgroup1", "job"):
            found.why_not[level] = problem
        return found
    from . import cgroup_v1, cgroup_v2

    if cgroup_v2.unified():
        try:
            control_for("cgroup2")
        except SandboxUnavailable as exc:
            en, _, zh = str(exc).partition(" / ")
            found.why_not["cgroup2"] = (en, zh)
        found.why_not["cgroup1"] = ("this machine mounts cgroup v2 only", "本机只有 cgroup v2")
    else:
        found.why_not["cgroup2"] = ("this machine mounts cgroup v1", "本机用的是 cgroup v1")
        if not cgroup_v1.mounted():
            found.why_not["cgroup1"] = ("the cgroup v1 controllers memory, pids, cpuacct, cpu and cpuset are not "
                                        "all mounted",
                                        "cgroup v1 的 memory、pids、cpuacct、cpu、cpuset 控制器没有都挂载")
        elif not real_root():
            found.why_not["cgroup1"] = ("cgroup v1 groups can only be made by root", "cgroup v1 的组只有 root 能建")
        else:
            problem = cgroup_v1.problem()
            if problem:
                found.why_not["cgroup1"] = problem
    found.best = next(level for level in LEVELS if level not in found.why_not)
    return found


__all__ = ["LEVELS", "CGROUP_LEVELS", "REQUESTS", "NAME_ZH", "Probe", "probe", "sandbox_problem", "control_for",
           "controls", "state_root"]
