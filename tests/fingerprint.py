"""What every file under some folders holds, to show that a run left them as they were.

    before = fingerprint(submissions, ROOT / "grader")
    ...                                                  # grade the class
    assert fingerprint(submissions, ROOT / "grader") == before
"""
from __future__ import annotations

import hashlib
from pathlib import Path


def fingerprint(*roots: Path) -> dict[str, str]:
    """Path -> SHA-256 of every file under roots (bytecode caches left out: an import may write them)."""
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out
