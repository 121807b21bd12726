"""A normal user's grader runs as root of a user namespace of its own.

Capping a working folder in bytes and inodes takes a tmpfs mounted with size= and nr_inodes=, and mounting
takes CAP_SYS_ADMIN over the mount namespace. A normal user gets that in a user namespace of their own:
`enter()` re-executes the grader under bubblewrap (the same binary the sandbox needs, and on Ubuntu ≥ 23.10
the one AppArmor profile that allows user namespaces), mapped to root inside, with the whole file system
bound where it was, the network and the PIDs of the machine. Nothing else changes: files it writes belong to
the user, the cgroup files delegated to the user stay writable (their owner is the user), and when the
grader ends, its mount namespace and every tmpfs in it go with it.

Real root needs none of this: enter() returns at once.
"""
from __future__ import annotations

import os
import subprocess
import sys

from .host import BWRAP

INSIDE = "AGENTRL_OWN_USERNS"    # set in the re-executed grader's environment


PREFIX = [BWRAP, "--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL", "--die-with-parent",
          "--dev-bind", "/", "/", "--"]


def inside() -> bool:
    return os.environ.get(INSIDE) == "1"


def possible() -> bool:
    """Whether bwrap can give this user a namespace of its own here (one quick run of `true`)."""
    if not (os.path.isfile(BWRAP) and os.access(BWRAP, os.X_OK)):
        return False
    try:
        return subprocess.run([*PREFIX, "/bin/true"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def enter(argv: list[str]) -> None:
    """Re-execute `python argv…` in a user namespace of its own, if this process is a normal user's, not
    inside one yet, and bwrap can make one. Otherwise return (the level check then says what is missing)."""
    if os.geteuid() == 0 or inside() or not possible():
        return
    os.environ[INSIDE] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(BWRAP, [*PREFIX, sys.executable, *argv])
