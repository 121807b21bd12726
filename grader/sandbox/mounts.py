"""Capped tmpfs mounts: a session's working folder and its scratch space (/tmp, /dev/shm, $HOME and the
connection files), each capped in bytes and inodes. Mounting needs CAP_SYS_ADMIN over the grader's mount
namespace: real root, or the user namespace of its own that a normal user's grader enters (userns.py).
Trusted code: it runs in the grading process."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2
LABEL_PREFIX = "agentrl-"     # the source field of every mount made here, so a sweep can find them
_libc = None
_mount_ok = False


def _c_library():
    global _libc
    if _libc is None:
        import ctypes
        import ctypes.util

        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def mount_capped(folder: Path, size_bytes: int, inodes: int, label: str) -> None:
    """Mount a tmpfs of size_bytes and at most `inodes` files and folders on folder (nosuid, nodev).
    label names the mount in /proc/self/mountinfo, so a sweep can find it after a crash."""
    import ctypes

    options = f"size={size_bytes},nr_inodes={inodes},mode=0700".encode()
    rc = _c_library().mount(label.encode(), str(folder).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(folder))


def unmount(folder: Path) -> None:
    """Lazily unmount folder's tmpfs: its files are gone at once for every later reader."""
    _c_library().umount2(str(folder).encode(), _MNT_DETACH)


def probe_mount() -> str | None:
    """Mount and unmount a tiny capped tmpfs once; None if that works (cached), else why not."""
    global _mount_ok
    if _mount_ok:
        return None
    probe = Path(tempfile.mkdtemp(prefix="agentrl-mount-probe-"))
    try:
        mount_capped(probe, 1 << 20, 16, LABEL_PREFIX + "probe")
        unmount(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass
    _mount_ok = True
    return None


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def capped_mounts(prefix: str = LABEL_PREFIX + "s") -> list[tuple[str, str]]:
    """(label without the prefix's 'agentrl-', mount point) of every tmpfs this module mounted for a
    session (mountinfo's source field)."""
    found = []
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return found
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) > 4 and len(rfields) > 1 and rfields[0] == "tmpfs" and rfields[1].startswith(prefix):
            found.append((rfields[1][len(LABEL_PREFIX):], _unescape(fields[4])))
    return found
