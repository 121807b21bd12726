"""cgroup v1 (one hierarchy per controller, root only): a session's groups in memory, pids, cpuacct, cpu
and cpuset, under /sys/fs/cgroup/<controller>/agentrl-grader/<session>. The only module that names a
cgroup v1 file."""
from __future__ import annotations

import errno
import os
import re
import time
from pathlib import Path

from .control import Control, Group, Usage, cpu_list, keyed, read
from .host import CGROUP_ROOT, PARENT_GROUP

CONTROLLERS = ("memory", "pids", "cpuacct", "cpu", "cpuset")   # cpu and cpuacct may be one hierarchy


def mounted() -> bool:
    """Every controller the sandbox needs has its own v1 hierarchy here."""
    return all((CGROUP_ROOT / c / "cgroup.procs").is_file() for c in CONTROLLERS)


def problem() -> tuple[str, str] | None:
    """Why this process cannot make v1 groups (English, Chinese), or None."""
    for ctrl in CONTROLLERS:
        d = CGROUP_ROOT / ctrl
        if not (d / "cgroup.procs").is_file():
            return (f"cgroup v1 controller '{ctrl}' is not mounted at {d}", f"cgroup v1 控制器 '{ctrl}' 未挂载在 {d}")
        parent = d / PARENT_GROUP
        try:
            parent.mkdir(exist_ok=True)
        except OSError as e:
            return (f"cgroup {d} is not writable ({e.strerror}); v1 needs root",
                    f"cgroup {d} 不可写（{e.strerror}）；cgroup v1 需要 root")
        if not os.access(parent, os.W_OK):
            return (f"cgroup {parent} is not writable; v1 needs root", f"cgroup {parent} 不可写；cgroup v1 需要 root")
    return None


def rmdir_retry(d: Path, deadline_s: float = 5.0) -> bool:
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


def procs(dirs: list[Path]) -> set[int]:
    return {int(line) for d in dirs for line in read(d / "cgroup.procs").split()}


def cpuset_parent() -> Path:
    """The cpuset group all sessions live under, with the machine's CPUs and memory nodes (a new cpuset
    group starts with none, and a process cannot join a group that has none)."""
    root, parent = CGROUP_ROOT / "cpuset", CGROUP_ROOT / "cpuset" / PARENT_GROUP
    parent.mkdir(exist_ok=True)
    for name in ("cpuset.cpus", "cpuset.mems"):
        if not read(parent / name).strip():
            (parent / name).write_text(read(root / name).strip() or "0")
    return parent


class V1Group(Group):
    def __init__(self, name, limits, cpus):
        super().__init__(name, limits, cpus)
        self.dirs = {c: CGROUP_ROOT / c / PARENT_GROUP / name for c in CONTROLLERS}
        # one folder per hierarchy: where cpu and cpuacct are comounted, both names lead to one folder
        self.unique = list({os.path.realpath(d.parent): d for d in self.dirs.values()}.values())
        self.procs_files = [str(d / "cgroup.procs") for d in self.unique]

    def create(self) -> None:
        lim = self.limits
        for d in self.unique:
            d.parent.mkdir(exist_ok=True)
            d.mkdir()
        cpuset, cpu, mem = self.dirs["cpuset"], self.dirs["cpu"], self.dirs["memory"]
        (cpuset / "cpuset.mems").write_text(read(cpuset.parent / "cpuset.mems").strip())
        (cpuset / "cpuset.cpus").write_text(",".join(map(str, self.cpus)))
        period = int(read(cpu / "cpu.cfs_period_us", "100000") or 100000)
        (cpu / "cpu.cfs_quota_us").write_text(str(max(1000, int(lim.cpu_cores * period))))
        (mem / "memory.limit_in_bytes").write_text(str(lim.memory_mb << 20))
        if (mem / "memory.memsw.limit_in_bytes").exists():   # no escape into swap
            try:
                (mem / "memory.memsw.limit_in_bytes").write_text(str(lim.memory_mb << 20))
            except OSError:
                pass
        (self.dirs["pids"] / "pids.max").write_text(str(lim.pids))

    def pids(self) -> set[int]:
        return procs([d for d in self.unique if d.is_dir()])

    def usage(self) -> Usage:
        mem = self.dirs["memory"]
        u = Usage()
        m = re.search(r"^oom_kill (\d+)", read(mem / "memory.oom_control"), re.M)
        u.oom_killed = bool(m and int(m.group(1)) > 0)
        try:
            u.peak_memory_mb = int(read(mem / "memory.max_usage_in_bytes", "0")) / 2**20
            u.cpu_seconds = int(read(self.dirs["cpuacct"] / "cpuacct.usage", "0")) / 1e9
        except ValueError:
            pass
        u.pids_limit_hit = keyed(read(self.dirs["pids"] / "pids.events")).get("max", 0) > 0
        return u

    def remove(self) -> None:
        for d in self.unique:
            if d.is_dir():
                self.kill(5.0)
                rmdir_retry(d)

    def exists(self) -> bool:
        return any(d.exists() for d in self.dirs.values())


class V1Control(Control):
    level = "cgroup1"
    pins_cpus = True

    def __init__(self):
        cpuset_parent()

    def group(self, name, limits, cpus) -> V1Group:
        return V1Group(name, limits, cpus)

    def cpu_users(self) -> dict[int, int]:
        parent = cpuset_parent()
        users = dict.fromkeys(cpu_list(read(parent / "cpuset.effective_cpus") or read(parent / "cpuset.cpus")), 0)
        for child in parent.iterdir():
            if child.is_dir():
                for cpu in cpu_list(read(child / "cpuset.cpus")):
                    if cpu in users:
                        users[cpu] += 1
        return users

    def session_groups(self) -> list[str]:
        return [str(p) for c in CONTROLLERS for p in (CGROUP_ROOT / c / PARENT_GROUP).glob("s*-*") if p.is_dir()]

    def sweep(self, live: set[str], is_stale) -> int:
        removed = 0
        for ctrl in CONTROLLERS:
            parent = CGROUP_ROOT / ctrl / PARENT_GROUP
            if not parent.is_dir():
                continue
            for child in parent.iterdir():
                if child.is_dir() and child.name not in live and is_stale(child.name):
                    group = V1Group(child.name, None, [])
                    group.unique = [child]
                    group.kill(5.0)
                    if rmdir_retry(child, 2.0):
                        removed += 1
        return removed
