"""The `job` level: no group of its own. Where the grader may not create cgroups (a Kubernetes pod without a
writable cgroupfs, a Slurm step without delegation, a user without a delegated subtree) it grades one
notebook at a time, and the job's (or pod's) own limits are the notebook's limits:

* processes: the notebook's processes are bubblewrap's PID namespace; killing the launcher kills its PID 1
  (--die-with-parent), and the kernel kills everything else in that namespace with it: nothing is alive
  when the next notebook starts. RLIMIT_NPROC, set inside the sandbox, counts only the sandbox's own
  processes (the kernel counts per user namespace since Linux 5.14); it does not bind real root.
* memory: RLIMIT_AS per process; the whole job's memory.max above it. The kernel's processes volunteer
  (oom_score_adj 1000) to be what the job's OOM killer takes first, not the grader.
* CPU: one notebook at a time, pinned with sched_setaffinity; RLIMIT_CPU per process.
* what it used: the job's own group's counters (readable without writing), minus the grader's own CPU.
"""
from __future__ import annotations

import os
from pathlib import Path

from .control import Control, Group, Usage, allowed_cpus, keyed, read
from .host import CGROUP_ROOT, real_root


def job_group() -> Path | None:
    """The job's own group folder, to read its limits and counters (v2 or v1 memory hierarchy), if any."""
    for line in read(Path("/proc/self/cgroup")).splitlines():
        hid, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if hid == "0" and controllers == "" and (CGROUP_ROOT / "cgroup.controllers").is_file():
            return CGROUP_ROOT / path.lstrip("/")
    return None


def job_limits() -> dict[str, str]:
    """What the enclosing job or pod allows (memory.max, pids.max, cpu.max), where it can be read."""
    group = job_group()
    if group is None:
        return {}
    found = {}
    for name in ("memory.max", "pids.max", "cpu.max"):
        value = read(group / name).strip()
        if value:
            found[name] = value
    return found


def _descendants(root: int) -> set[int]:
    """root and every live process below it (by parent PID, from /proc; zombies are not alive)."""
    children: dict[int, list[int]] = {}
    alive: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            state, ppid = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(int(ppid), []).append(int(entry))
        if state != "Z":
            alive.add(int(entry))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, []))
    return found & alive


def _pid_namespace(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return ""


def _all_pids() -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def _self_cpu() -> float:
    t = os.times()
    return t.user + t.system


class JobGroup(Group):
    oom_score_adj = 1000

    def __init__(self, name, limits, cpus, counters: Path | None):
        super().__init__(name, limits, cpus)
        # RLIMIT_NPROC means nothing to real root; as a normal user (or root of a user namespace) it
        # bounds the sandbox's own processes
        self.nproc = limits.pids if limits is not None and not real_root() else None
        self._counters = counters
        self._start = None
        self._namespaces: set[str] = set()   # the sandbox's PID namespace, once seen

    def create(self) -> None:
        self._start = (self._events(), self._group_cpu(), _self_cpu())

    def _events(self) -> int:
        if self._counters is None:
            return 0
        return keyed(read(self._counters / "memory.events")).get("oom_kill", 0)

    def _group_cpu(self) -> float:
        if self._counters is None:
            return 0.0
        return keyed(read(self._counters / "cpu.stat")).get("usage_usec", 0) / 1e6

    def pids(self) -> set[int]:
        """The launcher, everything below it, and everything in the sandbox's PID namespace (so that
        nothing is lost if the launcher dies first and its child is handed to another parent)."""
        if self.launcher_pid is None:
            return set()
        found = _descendants(self.launcher_pid)
        mine = _pid_namespace(os.getpid())
        for pid in found - {self.launcher_pid}:
            ns = _pid_namespace(pid)
            if ns and ns != mine:
                self._namespaces.add(ns)
        if self._namespaces:
            found |= {pid for pid in _all_pids() if _pid_namespace(pid) in self._namespaces}
        return found

    def usage(self) -> Usage:
        u = Usage()
        if self._start is not None:
            oom0, cpu0, self0 = self._start
            u.oom_killed = self._events() > oom0
            # without the job's own group (a cgroup v1 host) nothing counts the sandbox's processes: unknown, not 0
            u.cpu_seconds = (None if self._counters is None
                             else max(0.0, (self._group_cpu() - cpu0) - (_self_cpu() - self0)))
        return u

    def remove(self) -> None:
        self.kill(5.0)


class JobControl(Control):
    level = "job"

    def __init__(self):
        self.counters = job_group()
        if self.counters is not None and not (self.counters / "cpu.stat").is_file():
            self.counters = None

    def group(self, name, limits, cpus) -> JobGroup:
        return JobGroup(name, limits, cpus, self.counters)

    def cpu_users(self) -> dict[int, int]:
        return dict.fromkeys(allowed_cpus(), 0)     # one notebook at a time: every core is free
