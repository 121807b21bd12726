"""What every sandbox on this host shares: paths, the private state folders and the registry of live
sessions. Trusted code: it runs in the grading process."""
from __future__ import annotations

import atexit
import itertools
import os
import re
import secrets
import shutil
import tempfile
import threading
from pathlib import Path

BWRAP = "/usr/bin/bwrap"
CGROUP_ROOT = Path("/sys/fs/cgroup")
PARENT_GROUP = "agentrl-grader"     # v1: /sys/fs/cgroup/<controller>/agentrl-grader/<session>; v2 as root:
                                    # /sys/fs/cgroup/agentrl-grader/<session>
STATE_PARENT = "agentrl-grader"     # /var/tmp/agentrl-grader[-u<uid>]/<session>/ (private 0700 folders)

INNER_HOME = "/home/student"
INNER_WORKDIR = "/submission"
INNER_PACKAGE_ROOT = "/opt/agentrl"
INNER_IPYTHONDIR = INNER_HOME + "/.ipython"
INNER_MPLCONFIGDIR = INNER_HOME + "/.config/matplotlib"

SESSION_NAME = re.compile(r"^s(\d+)-\d+-[0-9a-f]+$")
PROCESS_DIR_NAME = re.compile(r"^p(\d+)-[0-9a-f]+$")

lock = threading.Lock()
counter = itertools.count(1)
live_sessions: set[str] = set()
_process_dir: Path | None = None


def state_root() -> Path:
    """Parent of the private per-session folders (each the mount point of a session's scratch tmpfs and
    its kernel log): /var/tmp, else /run; never under the host /tmp (the sandbox mounts its own /tmp and
    would show the path there). One per user of the machine: root's and a user's graders never share it."""
    for base in ("/var/tmp", "/run"):
        if os.path.isdir(base) and os.access(base, os.W_OK):
            break
    else:
        base = tempfile.gettempdir()
    uid = host_uid()
    root = Path(base) / (STATE_PARENT if uid == 0 else f"{STATE_PARENT}-u{uid}")   # one per user of the machine
    root.mkdir(mode=0o700, exist_ok=True)
    os.chmod(root, 0o700)
    return root


def process_dir() -> Path:
    """A trusted private folder of this grader process (font caches, passwd); removed at exit."""
    global _process_dir
    with lock:
        if _process_dir is None or not _process_dir.is_dir():
            d = state_root() / f"p{os.getpid()}-{secrets.token_hex(4)}"
            d.mkdir(mode=0o700)
            (d / "passwd").write_text(f"root:x:0:0:student:{INNER_HOME}:/bin/sh\n"
                                      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
            (d / "group").write_text("root:x:0:\nnogroup:x:65534:\n")
            _process_dir = d
            atexit.register(shutil.rmtree, d, True)
        return _process_dir


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True



def host_uid() -> int:
    """This process's user on the machine: its uid, or, inside a user namespace of its own (userns.py),
    the uid that namespace maps its root to."""
    try:
        first = Path("/proc/self/uid_map").read_text().split()
        if len(first) >= 2 and first[0] == str(os.getuid()):
            return int(first[1])
    except (OSError, ValueError):
        pass
    return os.getuid()


def real_root() -> bool:
    """Root of the machine, not merely root of a user namespace of our own."""
    return host_uid() == 0
