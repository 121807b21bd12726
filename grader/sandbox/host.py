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
CONTROLLERS = ("memory", "pids", "cpuacct", "cpu", "cpuset")   # cpu and cpuacct may be one hierarchy
PARENT_GROUP = "agentrl-grader"     # /sys/fs/cgroup/<controller>/agentrl-grader/<session>
STATE_PARENT = "agentrl-grader"     # /var/tmp/agentrl-grader/<session>/conn (private 0700 folders)

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
    """Parent of the private per-session folders. The connection folder is writable from inside the
    sandbox, so it should live on disk (/var/tmp), not on a small RAM-backed /run that host services
    need; never under the host /tmp (the sandbox mounts its own /tmp and would show the path there)."""
    for base in ("/var/tmp", "/run"):
        if os.path.isdir(base) and os.access(base, os.W_OK):
            break
    else:
        base = tempfile.gettempdir()
    root = Path(base) / STATE_PARENT
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

