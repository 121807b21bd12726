"""Where a test makes and removes tens of thousands of small folders: memory (tmpfs) where the machine has one.

    base = Path(tempfile.mkdtemp(prefix="agentrl-hub-", dir=scratch_root()))

On this machine's disk (ext4 mounted with `discard`) removing a folder costs about 0.7 ms, on tmpfs 0.04 ms
(measured here: 20,000 empty folders removed in 45 s against 0.9 s): test_serve_trust's junk test (120,000 folders
a student floods the inbound with) spent four of its five minutes removing them. What the tests check (modes,
owners, links, namespaces) is the same on both file systems.
"""
from __future__ import annotations

import os
from pathlib import Path

SHM = Path("/dev/shm")
ROOM = 2 << 30   # bytes free on the tmpfs, at least: otherwise the disk


def scratch_root() -> str:
    """/dev/shm if it is a writable tmpfs with room, else /tmp."""
    try:
        st = os.statvfs(SHM)
        with open("/proc/mounts", encoding="utf-8") as mounts:
            tmpfs = any(line.split()[1:3] == [str(SHM), "tmpfs"] for line in mounts)
    except OSError:
        return "/tmp"
    if tmpfs and os.access(SHM, os.W_OK | os.X_OK) and st.f_bavail * st.f_frsize >= ROOM:
        return str(SHM)
    return "/tmp"
