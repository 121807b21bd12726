"""Resource control: one interface, three backends. Trusted code: it runs in the grading process.

    control = control_for("cgroup2")          # levels.py: the process's one Control of a level
    group = control.group(session_name, limits, cpus)
    group.create()                            # before the kernel starts
    ... the launcher writes its PID into group.procs_files, pins itself to group.cpus ...
    group.kill(); usage = group.usage(); group.remove()

A backend knows its own files: nothing outside cgroup_v1.py names a cgroup v1 file, nothing outside
cgroup_v2.py a v2 one. `job` creates no group at all: where the grader cannot (a pod, a Slurm step
without delegation) it grades one notebook at a time inside the job's own limits, and a notebook's
processes are the PID namespace bubblewrap gives it.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from .limits import SandboxLimits


@dataclass
class Usage:
    """What a session's processes used, read when they are gone."""
    oom_killed: bool = False
    pids_limit_hit: bool = False
    cpu_seconds: float | None = 0.0   # None: this level has no counter to read here (`job` without a v2 group)
    peak_memory_mb: float = 0.0


class Group:
    """The processes of one session and the limits on them."""

    procs_files: list[str] = []      # files the launcher writes its PID into (none for `job`)
    nproc: int | None = None         # RLIMIT_NPROC set inside the sandbox (`job`, not root), else None
    oom_score_adj: int | None = None  # the kernel volunteers to be the OOM killer's first choice (`job`)

    def __init__(self, name: str, limits: SandboxLimits, cpus: list[int]):
        self.name, self.limits, self.cpus = name, limits, cpus
        self.launcher_pid: int | None = None

    def create(self) -> None:
        raise NotImplementedError

    def pids(self) -> set[int]:
        raise NotImplementedError

    def kill(self, deadline_s: float = 10.0) -> set[int]:
        """SIGKILL every process of the session until none is left; the PIDs signalled."""
        return kill_until_empty(self.pids, deadline_s)

    def usage(self) -> Usage:
        raise NotImplementedError

    def remove(self) -> None:
        raise NotImplementedError

    def exists(self) -> bool:
        """Whether anything of the group is left on the machine (after remove(): False)."""
        return False


class Control:
    """A level's resource control, one per grader process."""

    level = ""
    pins_cpus = False   # True where the kernel enforces the pinning (cpuset); else sched_setaffinity

    def group(self, name: str, limits: SandboxLimits, cpus: list[int]) -> Group:
        raise NotImplementedError

    def cpu_users(self) -> dict[int, int]:
        """cpu -> how many live sessions of this machine are pinned to it (what pick_cpus balances)."""
        raise NotImplementedError

    def sweep(self, live: set[str], is_stale) -> int:
        """Remove leftover groups of dead graders (is_stale(name) says so); the number removed."""
        return 0

    def session_groups(self) -> list[str]:
        """The session groups on this machine now (folders), of every grader."""
        return []


def kill_until_empty(pids_of, deadline_s: float = 10.0) -> set[int]:
    """SIGKILL everything pids_of() names until it names nothing (or the deadline passes)."""
    killed: set[int] = set()
    end = time.monotonic() + deadline_s
    delay = 0.002
    while True:
        pids = pids_of()
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


def read(path: Path, default: str = "") -> str:
    try:
        return path.read_text()
    except OSError:
        return default


def keyed(text: str) -> dict[str, int]:
    """'oom 0\\noom_kill 1' -> {'oom': 0, 'oom_kill': 1} (memory.events, pids.events, cpu.stat …)."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        try:
            out[key] = int(value)
        except ValueError:
            pass
    return out


def cpu_list(text: str) -> list[int]:
    """'0-2,5' -> [0, 1, 2, 5]"""
    cpus = []
    for part in text.strip().split(","):
        if part:
            low, _, high = part.partition("-")
            cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def allowed_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))
