"""Clean-up after crashed graders: their sessions' capped mounts, groups and private folders."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from .levels import control_for, controls
from .host import PROCESS_DIR_NAME, SESSION_NAME, live_sessions, lock, pid_alive, state_root
from .mounts import capped_mounts, unmount


def _stale(name: str) -> bool:
    """A session of a dead grader process, or an orphan of this one (no live session owns it)."""
    m = SESSION_NAME.match(name.split(".", 1)[0])
    if m is None:
        return False
    owner = int(m.group(1))
    return owner == os.getpid() or not pid_alive(owner)


def sweep_stale(level: str | None = None) -> int:
    """Remove leftover session mounts, groups and private folders whose grader is gone, killing any process
    still in them; also orphans of this process that no live session owns. What belongs to other live
    graders is left alone. Returns how many were removed."""
    removed = 0
    if level in ("cgroup1", "cgroup2"):
        control_for(level)
    with lock:
        live = set(live_sessions)
    for label, point in capped_mounts():
        if label.split(".", 1)[0] not in live and _stale(label):
            unmount(Path(point))
            removed += 1
    for control in controls():
        removed += control.sweep(live, _stale)
    try:
        root = state_root()
    except OSError:
        return removed
    for child in root.iterdir():
        if child.name in live:
            continue
        if PROCESS_DIR_NAME.match(child.name):
            owner = int(PROCESS_DIR_NAME.match(child.name).group(1))
            if owner == os.getpid() or pid_alive(owner):
                continue
        elif not _stale(child.name):
            continue
        shutil.rmtree(child, ignore_errors=True)
        removed += 1
    return removed
