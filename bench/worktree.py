"""Another commit of this repository, checked out beside it for a side-by-side benchmark (bench/grading.py,
bench/versus.py): `with worktree(ROOT, rev, where) as tree: ...` (a detached git worktree, removed afterwards)."""
from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path


@contextlib.contextmanager
def worktree(root: Path, rev: str, where: Path):
    subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", str(where), rev], check=True,
                   capture_output=True)
    try:
        yield where
    finally:
        subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(where)], capture_output=True)
