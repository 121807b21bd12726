"""cgroup v1 groups (memory, pids, cpuacct, cpu, cpuset) of a session, and its working folder: a tmpfs capped in
bytes and inodes, mounted on the host folder for the session. Trusted code: it runs in the grading
process as root."""
from __future__ import annotations

import errno
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

from .host import (CGROUP_ROOT, CONTROLLERS, PARENT_GROUP, PROCESS_DIR_NAME, SESSION_NAME, live_sessions, lock,
                   pid_alive, state_root)


def read(path: Path, default: str = "") -> str:
    try:
        return path.read_text()
    except OSError:
        return default


def procs(dirs: list[Path]) -> set[int]:
    pids: set[int] = set()
    for d in dirs:
        for line in read(d / "cgroup.procs").split():
            pids.add(int(line))
    return pids


def kill_group(dirs: list[Path], deadline_s: float = 10.0) -> set[int]:
    """SIGKILL every process in the cgroups until they are empty. Returns the PIDs signalled."""
    killed: set[int] = set()
    end = time.monotonic() + deadline_s
    delay = 0.002
    while True:
        pids = procs(dirs)
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


def cpuset_parent() -> Path:
    """The cpuset group all sessions live under, with the machine's CPUs and memory nodes (a new cpuset
    group starts with none, and a process cannot join a group that has none)."""
    root, parent = CGROUP_ROOT / "cpuset", CGROUP_ROOT / "cpuset" / PARENT_GROUP
    parent.mkdir(exist_ok=True)
    for name in ("cpuset.cpus", "cpuset.mems"):
        if not read(parent / name).strip():
            (parent / name).write_text(read(root / name).strip() or "0")
    return parent


def cpu_list(text: str) -> list[int]:
    """'0-2,5' -> [0, 1, 2, 5]"""
    cpus = []
    for part in text.strip().split(","):
        if part:
            low, _, high = part.partition("-")
            cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def pick_cpus(count: int) -> list[int]:
    """The `count` CPUs the fewest live sessions (of every grader on this machine) are pinned to."""
    parent = cpuset_parent()
    allowed = cpu_list(read(parent / "cpuset.effective_cpus") or read(parent / "cpuset.cpus"))
    users = dict.fromkeys(allowed, 0)
    for child in parent.iterdir():
        if child.is_dir():
            for cpu in cpu_list(read(child / "cpuset.cpus")):
                if cpu in users:
                    users[cpu] += 1
    return sorted(sorted(allowed, key=lambda cpu: (users[cpu], cpu))[:max(1, count)])


def sweep_stale_cgroups() -> int:
    """Remove leftover cgroup folders (and private state folders) of this module whose grader process
    is gone, killing any process still in them; also empty leftovers of this process that no live
    session owns. Groups of other live grader processes are left alone. Returns folders removed."""
    removed = 0
    me = os.getpid()
    with lock:
        live = set(live_sessions)
    for name, point in workspace_mounts():   # a crashed grader's working folders
        m = SESSION_NAME.match(name)
        if m and name not in live and (int(m.group(1)) == me or not pid_alive(int(m.group(1)))):
            unmount_workspace(Path(point))
            removed += 1
    for ctrl in CONTROLLERS:
        parent = CGROUP_ROOT / ctrl / PARENT_GROUP
        if not parent.is_dir():
            continue
        for child in parent.iterdir():
            if not child.is_dir() or child.name in live:
                continue
            m = SESSION_NAME.match(child.name)
            if m is None:
                continue
            owner = int(m.group(1))
            if owner != me and pid_alive(owner):
                continue
            kill_group([child], deadline_s=5.0)
            if rmdir_retry(child, 2.0):
                removed += 1
    try:
        root = state_root()
    except OSError:
        return removed
    for child in root.iterdir():
        m = SESSION_NAME.match(child.name) or PROCESS_DIR_NAME.match(child.name)
        if m is None or child.name in live:
            continue
        owner = int(m.group(1))
        if owner == me:
            if PROCESS_DIR_NAME.match(child.name):
                continue
        elif pid_alive(owner):
            continue
        shutil.rmtree(child, ignore_errors=True)
        removed += 1
    return removed



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


def probe_mount() -> str | None:
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


def workspace_mounts() -> list[tuple[str, str]]:
    """(label, mount point) of every workspace tmpfs mounted by this module (mountinfo: source field)."""
    found = []
    for line in read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) > 4 and len(rfields) > 1 and rfields[0] == "tmpfs" and rfields[1].startswith("agentrl-s"):
            point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n") \
                .replace("\\134", "\\")
            found.append((rfields[1][len("agentrl-"):], point))
    return found

