"""Can this machine run the sandbox? check_available() says what is missing, in English and Chinese."""
from __future__ import annotations

import os
import subprocess
import sys

from .bwrap import NAMESPACE_ARGS, usr_links
from .cgroups import cpuset_parent, probe_mount
from .host import BWRAP, CGROUP_ROOT, CONTROLLERS, PARENT_GROUP
from .limits import SandboxUnavailable


def _unavailable(en: str, zh: str) -> SandboxUnavailable:
    return SandboxUnavailable(f"{en} / {zh}")


def _probe_args() -> list[str]:
    # the same namespace options as the real sandbox, and --size (bwrap >= 0.7)
    return [BWRAP, *NAMESPACE_ARGS, "--ro-bind", "/usr", "/usr", *usr_links(),
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
        raise _unavailable("this machine uses cgroup v2 only; the sandbox needs cgroup v1 (memory, pids, cpuacct, "
                           "cpu, cpuset)",
                           "本机只有 cgroup v2；沙箱需要 cgroup v1（memory、pids、cpuacct、cpu、cpuset）")
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
    cpuset_parent()
    err = _probe_bwrap()
    if err is not None:
        raise _unavailable(f"bwrap cannot create the sandbox namespaces (user namespaces disabled?): {err}",
                           f"bwrap 无法创建沙箱命名空间（用户命名空间被禁用？）：{err}")
    err = probe_mount()
    if err is not None:
        raise _unavailable(f"cannot mount the size- and inode-capped tmpfs of a working folder ({err}); run the "
                           "grader as root (CAP_SYS_ADMIN)",
                           f"无法挂载限制大小和文件数的工作目录 tmpfs（{err}）；请以 root 身份运行评分程序")

