"""cgroup v2 (one unified hierarchy): one leaf group per session, as root or as a normal user with a
delegated subtree. The only module that names a cgroup v2 file.

Where the session groups go (`base`):
* root of the whole hierarchy (real root, no cgroup namespace): a group of its own, /sys/fs/cgroup/agentrl-grader;
* otherwise the grader's own group, if it may write it (a subtree delegated to this user by systemd's
  user@.service, `systemd-run --user --scope -p Delegate=yes`, a container's namespaced root …). The kernel
  lets a group hand controllers to children only if it has no processes of its own ("no internal
  processes"), so every process of that group (the grader, and `make` and the shell that started it) first
  moves into a leaf, <group>/agentrl-main; then memory, pids and cpu (and cpuset where delegated) are
  enabled for the children.

A session's group: memory.max (+ memory.swap.max 0), pids.max, cpu.max (cpu_cores of quota), cpuset.cpus
where cpuset is delegated (else the launcher pins with sched_setaffinity); teardown with cgroup.kill; the
out-of-memory kills from memory.events, CPU seconds from cpu.stat, peak memory from memory.peak.
"""
from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from .control import Control, Group, Usage, allowed_cpus, cpu_list, keyed, kill_until_empty, read
from .host import CGROUP_ROOT, PARENT_GROUP, real_root

NEEDED = ("memory", "pids", "cpu")
MAIN_LEAF = "agentrl-main"


def unified() -> bool:
    """The machine mounts cgroup v2 only (the unified hierarchy at /sys/fs/cgroup)."""
    return (CGROUP_ROOT / "cgroup.controllers").is_file()


def own_group() -> Path:
    """This process's group, as a folder under /sys/fs/cgroup ('0::/path' in /proc/self/cgroup)."""
    for line in read(Path("/proc/self/cgroup")).splitlines():
        if line.startswith("0::"):
            return CGROUP_ROOT / line[3:].lstrip("/")
    return CGROUP_ROOT


def _controllers(group: Path) -> set[str]:
    return set(read(group / "cgroup.controllers").split())


def _enable(group: Path, wanted: set[str]) -> None:
    missing = wanted - set(read(group / "cgroup.subtree_control").split())
    if missing:
        (group / "cgroup.subtree_control").write_text(" ".join("+" + c for c in sorted(missing)))


def _is_real_root_group(group: Path) -> bool:
    # the hierarchy's true root has no limit files of its own; a namespaced root does
    return group == CGROUP_ROOT and not (group / "memory.max").exists() and not (group / "cpu.max").exists()


def _may_write(group: Path) -> bool:
    return all(os.access(p, os.W_OK) for p in (group, group / "cgroup.procs", group / "cgroup.subtree_control"))


def _move_all(src: Path, dest: Path, deadline_s: float = 5.0) -> None:
    """Every process of src into dest (new ones may appear while we move: until src is empty)."""
    end = time.monotonic() + deadline_s
    while True:
        pids = read(src / "cgroup.procs").split()
        if not pids:
            return
        for pid in pids:
            try:
                (dest / "cgroup.procs").write_text(pid)
            except OSError as e:
                if e.errno != errno.ESRCH:   # gone meanwhile: fine
                    raise
        if time.monotonic() > end:
            raise OSError(errno.EBUSY, f"processes keep appearing in {src}")


def find_base() -> tuple[Path | None, tuple[str, str] | None]:
    """(the group the session groups go under, None) or (None, (why not in English, in Chinese)).
    Does the set-up: makes the group, moves this group's processes into a leaf, enables controllers."""
    if not unified():
        return None, ("this machine does not mount cgroup v2 only", "本机不是只有 cgroup v2")
    own = own_group()
    if real_root() and _is_real_root_group(CGROUP_ROOT):
        wanted = set(NEEDED) | ({"cpuset"} & _controllers(CGROUP_ROOT))
        missing = set(NEEDED) - _controllers(CGROUP_ROOT)
        if missing:
            return None, (f"the kernel offers no {', '.join(sorted(missing))} controller",
                          f"内核没有 {'、'.join(sorted(missing))} 控制器")
        try:
            _enable(CGROUP_ROOT, wanted)
            base = CGROUP_ROOT / PARENT_GROUP
            base.mkdir(exist_ok=True)
            _enable(base, wanted)
            return base, None
        except OSError:
            pass          # a namespaced root with processes in it: go on as a delegated group
    base = own.parent if own.name == MAIN_LEAF else own
    if not _may_write(base):
        return None, (f"this user may not write its cgroup {base} (no delegated subtree)",
                      f"当前用户不能写自己的 cgroup {base}（没有委派的子树）")
    missing = set(NEEDED) - _controllers(base)
    if missing:
        return None, (f"the controllers {', '.join(sorted(missing))} are not delegated to {base}",
                      f"{base} 没有被委派 {'、'.join(sorted(missing))} 控制器")
    wanted = set(NEEDED) | ({"cpuset"} & _controllers(base))
    try:
        leaf = base / MAIN_LEAF
        leaf.mkdir(exist_ok=True)
        _move_all(base, leaf)
        _enable(base, wanted)
    except OSError as e:
        return None, (f"cannot set up {base} for the session groups ({e.strerror or e})",
                      f"无法在 {base} 下建立评分用的组（{e.strerror or e}）")
    return base, None


class V2Group(Group):
    def __init__(self, name, limits, cpus, base: Path, cpuset: bool):
        super().__init__(name, limits, cpus)
        self.dir = base / name
        self.cpuset = cpuset
        self.procs_files = [str(self.dir / "cgroup.procs")]

    def create(self) -> None:
        lim, d = self.limits, self.dir
        d.mkdir()
        (d / "memory.max").write_text(str(lim.memory_mb << 20))
        if (d / "memory.swap.max").exists():     # no escape into swap
            (d / "memory.swap.max").write_text("0")
        (d / "pids.max").write_text(str(lim.pids))
        period = 100_000
        (d / "cpu.max").write_text(f"{max(1000, int(lim.cpu_cores * period))} {period}")
        if self.cpuset:
            (d / "cpuset.cpus").write_text(",".join(map(str, self.cpus)))

    def pids(self) -> set[int]:
        return {int(p) for p in read(self.dir / "cgroup.procs").split()}

    def kill(self, deadline_s: float = 10.0) -> set[int]:
        pids = self.pids()
        if (self.dir / "cgroup.kill").exists():      # Linux >= 5.14: the kernel kills the whole group at once
            try:
                (self.dir / "cgroup.kill").write_text("1")
            except OSError:
                pass
        return pids | kill_until_empty(self.pids, deadline_s)

    def usage(self) -> Usage:
        d, u = self.dir, Usage()
        u.oom_killed = keyed(read(d / "memory.events")).get("oom_kill", 0) > 0
        u.pids_limit_hit = keyed(read(d / "pids.events")).get("max", 0) > 0
        u.cpu_seconds = keyed(read(d / "cpu.stat")).get("usage_usec", 0) / 1e6
        try:
            u.peak_memory_mb = int(read(d / "memory.peak", "0") or 0) / 2**20
        except ValueError:
            pass
        return u

    def remove(self) -> None:
        if not self.dir.is_dir():
            return
        self.kill(5.0)
        end, delay = time.monotonic() + 5.0, 0.002
        while True:
            try:
                self.dir.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() > end:
                    return
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def exists(self) -> bool:
        return self.dir.exists()


class V2Control(Control):
    level = "cgroup2"

    def __init__(self):
        base, why = find_base()
        if base is None:
            from .limits import SandboxUnavailable
            raise SandboxUnavailable(f"{why[0]} / {why[1]}")
        self.base = base
        self.pins_cpus = "cpuset" in read(base / "cgroup.subtree_control").split()
        self._pinned: dict[str, list[int]] = {}     # without cpuset: this process's own bookkeeping

    def group(self, name, limits, cpus) -> V2Group:
        self._pinned[name] = cpus
        return V2Group(name, limits, cpus, self.base, self.pins_cpus)

    def cpu_users(self) -> dict[int, int]:
        if self.pins_cpus:
            allowed = cpu_list(read(self.base / "cpuset.cpus.effective")) or allowed_cpus()
            users = dict.fromkeys(allowed, 0)
            for child in self.base.iterdir():
                if child.is_dir() and child.name != MAIN_LEAF:
                    for cpu in cpu_list(read(child / "cpuset.cpus")):
                        if cpu in users:
                            users[cpu] += 1
            return users
        users = dict.fromkeys(allowed_cpus(), 0)
        for name, cpus in list(self._pinned.items()):
            if not (self.base / name).is_dir():
                del self._pinned[name]
                continue
            for cpu in cpus:
                if cpu in users:
                    users[cpu] += 1
        return users

    def session_groups(self) -> list[str]:
        return [str(p) for p in self.base.glob("s*-*") if p.is_dir()]

    def sweep(self, live: set[str], is_stale) -> int:
        removed = 0
        for child in self.base.iterdir():
            if child.is_dir() and child.name not in live and is_stale(child.name):
                group = V2Group(child.name, None, [], self.base, False)
                group.remove()
                removed += not child.exists()
        return removed
