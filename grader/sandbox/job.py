"""The `job` level: no group of its own. Where the grader may not create cgroups (a Kubernetes pod without a
writable cgroupfs, a Slurm step without delegation, a user without a delegated subtree) it grades one
notebook at a time, and the job's (or pod's) own limits are the notebook's limits:

* processes: the notebook's processes are bubblewrap's PID namespace; killing the launcher kills its PID 1
  (--die-with-parent), and the kernel kills everything else in that namespace with it: nothing is alive
  when the next notebook starts. A namespace is known by an open descriptor of it, held until the group
  is removed: the kernel reuses a dead namespace's inode number for the next one made (another shard's
  sandbox on the same machine), and a name compared by number alone would then kill that shard's kernel.
  The launcher is known by its PID and its start time, for the same reason (PIDs are reused too).
  RLIMIT_NPROC, set inside the sandbox, counts only the sandbox's own processes (the kernel counts per
  user namespace since Linux 5.14); it does not bind real root.
* memory: RLIMIT_AS per process; the whole job's memory.max above it. The kernel's processes volunteer
  (oom_score_adj 1000) to be what the job's OOM killer takes first, not the grader.
* CPU: one notebook at a time, pinned with sched_setaffinity to the core the fewest sandboxes of this
  machine are pinned to (other shards' too: where Slurm does not confine a task to its cores, every shard
  pinned to the first core would share it); RLIMIT_CPU per process.
* what it used: the job's own group's counters (readable without writing), minus the grader's own CPU.
"""
from __future__ import annotations

import os
from pathlib import Path

from .control import Control, Group, Usage, allowed_cpus, keyed, read
from .host import BWRAP, CGROUP_ROOT, real_root, state_root


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


def _pid_namespace(pid: int) -> tuple[int, int] | None:
    """The PID namespace a process is in, as (device, inode) of its nsfs file; None if it is gone."""
    try:
        st = os.stat(f"/proc/{pid}/ns/pid")
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _start_time(pid: int) -> str | None:
    """When a process started (clock ticks since boot, /proc/PID/stat field 22): with the PID, its identity."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


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
        # the sandbox's PID namespaces, once seen: (device, inode) -> an open descriptor that keeps the
        # namespace, and so its inode number, from being given to another one until remove()
        self._namespaces: dict[tuple[int, int], int] = {}
        self._launcher_started: str | None = None

    @property
    def launcher_pid(self) -> int | None:
        return self._launcher

    @launcher_pid.setter
    def launcher_pid(self, pid: int | None) -> None:
        self._launcher = pid   # set when the launcher has just started (Session._register_process): it is ours
        self._launcher_started = None if pid is None else _start_time(pid)

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
        found: set[int] = set()
        started = _start_time(self.launcher_pid)
        if started is not None and started == self._launcher_started:   # still our launcher, not a reused PID
            found = _descendants(self.launcher_pid)
        mine = _pid_namespace(os.getpid())
        for pid in found - {self.launcher_pid}:
            ns = _pid_namespace(pid)
            if ns is not None and ns != mine and ns not in self._namespaces:
                self._hold(pid, ns)
        if self._namespaces:
            found |= {pid for pid in _all_pids() if _pid_namespace(pid) in self._namespaces}
        return found

    def _hold(self, pid: int, ns: tuple[int, int]) -> None:
        """Keep the namespace of pid open (if pid is still in it once opened: else it was not ours)."""
        try:
            fd = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) == ns:
            self._namespaces[ns] = fd
        else:
            os.close(fd)

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
        try:
            self.kill(5.0)
        finally:
            for fd in self._namespaces.values():
                os.close(fd)
            self._namespaces.clear()
            self.launcher_pid = None


class JobControl(Control):
    level = "job"

    def __init__(self):
        self.counters = job_group()
        if self.counters is not None and not (self.counters / "cpu.stat").is_file():
            self.counters = None

    def group(self, name, limits, cpus) -> JobGroup:
        return JobGroup(name, limits, cpus, self.counters)

    def cpu_users(self) -> dict[int, int]:
        """cpu -> how many live sandboxes of this machine (this grader's user's, any process) are pinned to it."""
        return sandbox_cpu_users(allowed_cpus())


def sandbox_cpu_users(cpus: list[int]) -> dict[int, int]:
    """For each of cpus, how many running sandbox kernels (bwrap running ipykernel on a connection file under
    this user's state folder, one per file) are pinned to it: their affinity, set by the launcher, is inherited."""
    users = dict.fromkeys(cpus, 0)
    head, marker = f"{BWRAP}\0".encode(), str(state_root()).encode() + b"/"
    seen: set[bytes] = set()
    for pid in _all_pids():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if not cmd.startswith(head) or b"ipykernel_launcher" not in cmd or marker not in cmd:
            continue
        conn = next((a for a in cmd.split(b"\0") if a.startswith(marker)), b"")
        if conn in seen:
            continue
        try:
            pinned = os.sched_getaffinity(pid)
        except OSError:
            continue
        seen.add(conn)
        if len(pinned) < len(users):
            for cpu in pinned & users.keys():
                users[cpu] += 1
    return users
