"""What each test cell should record: the instructor notebook, run exactly like a submission.

    expected = expected_for(assignment, source_dir, runner, grading_dir, cache_dir)   # grade_id -> records

The reference run happens once per assignment and settings (cached on disk in cache_dir, keyed by the
notebook and the package copy it ran with; shards of one class share it, and a file lock makes the
others wait for the first instead of running it again). Its records stay in the grader's process: they
never enter a sandbox. ValueError if the instructor notebook itself fails in the grading environment: nothing of that
assignment can then be graded, and every row of it says so.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path

import nbformat

from grader.cells import grade_id, is_test
from grader.grade.prepare import for_grading
from grader.grade.redact import hidden_strings
from grader.grade.verdict import check_reference, error_summary, expected_records


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:16]


def expected_for(assignment: str, source: Path, runner, grading: Path, cache_dir: Path | None = None) -> dict:
    """grade_id -> records of the assignment's instructor notebook run like a submission (by runner, the
    assignment's execute.Runner, on its package copy)."""
    path = source / assignment / f"{assignment}.ipynb"
    files = sorted(p for p in runner.package_root.rglob("*") if p.is_file())
    key = _digest(path.read_bytes(), *(str(p.relative_to(runner.package_root)).encode() + p.read_bytes()
                                       for p in files))
    cache = (cache_dir or grading / "expected") / f"{assignment}-{key}.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cache.is_file():
            return {gid: [tuple(r) for r in recs] for gid, recs in json.loads(cache.read_text("utf-8")).items()}
        expected = _run_reference(assignment, path, runner, grading, key)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(expected, ensure_ascii=False), "utf-8")
        os.replace(tmp, cache)
        return expected


def _run_reference(assignment: str, path: Path, runner, grading: Path, key: str) -> dict:
    nb = for_grading(nbformat.read(path, as_version=4))
    result = runner.run(nb, grading / "work" / f"reference-{assignment}-{key}")
    expected = expected_records(result.nb)
    errors = [f"{grade_id(c)}: {error_summary(c)}" for c in result.nb.cells if is_test(c) and error_summary(c)]
    if result.status != "ok" or errors:
        raise ValueError(f"{assignment}: the instructor notebook fails in the grading sandbox "
                         f"({result.status}; {'; '.join(errors + result.notes)[:500]})")
    check_reference(expected, assignment)
    return expected


def hidden_for(assignment: str, source: Path) -> list[str]:
    """The strings of the assignment's hidden tests (redact.py): what no feedback may quote."""
    return hidden_strings(nbformat.read(source / assignment / f"{assignment}.ipynb", as_version=4))
