"""What each test cell should record: the instructor notebook, run exactly like a submission.

    expected = expected_for(assignment, source_dir, runner, grading_dir, cache_dir)   # grade_id -> records

The reference run happens once per assignment and settings (cached on disk in cache_dir, keyed by the
notebook and the package copy it ran with; shards of one class share it, and a file lock makes the
others wait for the first instead of running it again). Its records stay in the grader's process: they
never enter a sandbox. ValueError if the instructor notebook itself fails in the grading environment: nothing of that
assignment can then be graded, and every row of it says so.

With AGENTRL_REFERENCE_STORE=<folder> in the environment, every grading run that names the same folder (in
this process or another: `make grade`, shards, the service, plain `nbgrader autograde`) reads and writes its
records there, under the same key: the test suite's session shares one folder, so each instructor notebook
runs once per session. The key hashes the instructor notebook and the package copy, so a changed notebook or
package never meets the records of the old one. Only the grader writes there, and only records of the course's
own instructor notebook, before any submission of the run starts; keep the folder where no sandbox can see it
and no student account can write. Where the grader may not write in it (another account's folder), it only
reads it, and a record it lacks is run and kept in the run's own cache as without a store.
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

STORE = "AGENTRL_REFERENCE_STORE"


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:16]


def reference_key(path: Path, package_root: Path) -> str:
    """The records' key: the instructor notebook's bytes and every file of the package copy (path and bytes)."""
    files = sorted(p for p in package_root.rglob("*") if p.is_file())
    return _digest(path.read_bytes(), *(str(p.relative_to(package_root)).encode() + p.read_bytes() for p in files))


def _parse(text: str) -> dict:
    return {gid: [tuple(r) for r in recs] for gid, recs in json.loads(text).items()}


def _read(cache: Path) -> dict | None:
    """The records in cache, or None if there are none (or what is there does not parse as records)."""
    try:
        return _parse(cache.read_text("utf-8"))
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def _store() -> Path | None:
    folder = os.environ.get(STORE)
    return Path(folder) if folder else None


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def expected_for(assignment: str, source: Path, runner, grading: Path, cache_dir: Path | None = None) -> dict:
    """grade_id -> records of the assignment's instructor notebook run like a submission (by runner, the
    assignment's execute.Runner, on its package copy)."""
    path = source / assignment / f"{assignment}.ipynb"
    key = reference_key(path, runner.package_root)
    name = f"{assignment}-{key}.json"
    store = _store()
    if store is not None:
        found = _read(store / name)
        if found is not None:
            return found
    folder = store if store is not None and _writable(store) else (cache_dir or grading / "expected")
    cache = folder / name
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _read(cache)
        if found is not None:
            return found
        text = json.dumps(_run_reference(assignment, path, runner, grading, key), ensure_ascii=False)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, "utf-8")
        os.replace(tmp, cache)
        return _parse(text)   # as every later run reads them: the first run judges with the same values


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
