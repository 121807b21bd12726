"""OUT: the folder `make grade` writes into, and the only things in it the grader may replace.

    out = claim(out, submissions, kind="one-machine", db_url=…)   # SystemExit with the reason, or an Out
    out.previous                 # the ledger of the earlier run in this folder ({} for a fresh one)
    out.record(rows, digests)    # after the run: what was graded, with which file (sha256)

Nothing of the instructor's is deleted or overwritten by surprise:

* refused: an OUT that is, holds or is inside SUBMISSIONS, or holds or is inside the course folder
  (grader/); an OUT that is a file; an OUT that is not empty and holds no MARKER (not a grading output).
* MARKER (a JSON file written first, with O_EXCL) says that the folder is a grading output, of which kind
  (one machine, or shards), for which course (a digest of its instructor notebooks and package) and
  gradebook (a digest of its URL, never the URL). Only the entries in OWN are the grader's; anything else
  in OUT (a notes.txt) is never touched.
* graded again into a one-machine output of the same course and gradebook: only the hand-ins that are new
  or whose file changed are graded; every other row, its gradebook entry, feedback page and autograded
  notebook are kept (the ledger in MARKER knows them). With another course or gradebook, or with --new,
  the run goes into a new dated folder beside OUT instead; both are said out loud.
* a shard graded again replaces its own OUT/shards/K/ (the grader's, under the marker), nothing else.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.course import GRADER

MARKER = ".agentrl-grading.json"
MADE_BY = "agentrl-cloze make grade"
OWN = ("course", "grading", "feedback", "references", "shards", "grades.csv", "cells.csv", "report.md", MARKER)
KINDS = ("one-machine", "shards")


@dataclass
class Out:
    path: Path
    kind: str
    course: str                   # digest of the course the output was graded with
    gradebook: str                # digest of the gradebook URL
    previous: dict = field(default_factory=dict)   # "student\0assignment" -> {"row": …, "sha256": …}
    moved_from: Path | None = None   # OUT as asked, when the run went into a new dated folder instead

    def record(self, rows: list[dict], digests: dict[tuple[str, str], str]) -> None:
        """The ledger after a one-machine run: every row of the class, with the sha256 of the file graded."""
        ledger = {}
        for row in rows:
            key = ledger_key(row["student"], row["assignment"])
            ledger[key] = {"row": row, "sha256": digests.get((row["student"], row["assignment"]))}
        _write_marker(self.path, self.kind, self.course, self.gradebook, ledger, replace=True)


def ledger_key(student: str, assignment: str) -> str:
    return f"{student}\0{assignment}"


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def course_digest(course: Path = GRADER) -> str:
    """What the grades of an output depend on: the instructor notebooks and the course package's files."""
    from grader.course import ROOT

    h = hashlib.sha256()
    files = [(course, p) for p in [course / "nbgrader_config.py", *sorted((course / "source").glob("*/*.ipynb"))]]
    files += [(ROOT, p) for p in sorted((ROOT / "agentrl_ref").rglob("*.py"))]
    for top, path in files:
        if path.is_file():
            h.update(str(path.relative_to(top)).encode())
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def gradebook_digest(db_url: str | None) -> str:
    """A digest of the gradebook's URL (it holds a password: never stored); None: SQLite inside OUT."""
    return hashlib.sha256((db_url or "sqlite-in-out").encode()).hexdigest()[:16]


def _inside(path: Path, other: Path) -> bool:
    return path == other or other in path.parents


def refusal(out: Path, submissions: Path, course: Path = GRADER) -> str | None:
    """Why OUT may not be written at all (Chinese and English), or None."""
    out, submissions, course = (Path(os.path.realpath(p)) for p in (out, submissions, course))
    if _inside(submissions, out):
        return (f"OUT（{out}）就是或包含 SUBMISSIONS（{submissions}）：评分不会在学生的原文件旁边写东西。换一个 OUT。"
                f" / OUT contains SUBMISSIONS: choose another OUT")
    if _inside(out, submissions):
        return (f"OUT（{out}）在 SUBMISSIONS（{submissions}）里面：下次评分会把输出当成交上来的作业。换一个 OUT。"
                f" / OUT is inside SUBMISSIONS: choose another OUT")
    if _inside(course, out) or _inside(out, course):
        return (f"OUT（{out}）包含课程目录或在课程目录（{course}）里面：评分不写进课程本身。换一个 OUT。"
                f" / OUT overlaps the course folder: choose another OUT")
    if out.exists() and not out.is_dir():
        return f"OUT（{out}）是一个文件，不是文件夹：没有动它。 / OUT is a file"
    return None


def _read_marker(out: Path) -> dict | None:
    """The marker of a grading output, None if there is none; SystemExit if it is not ours or is broken."""
    path = out / MARKER
    if not path.is_file() or path.is_symlink():
        return None
    for _ in range(50):   # another shard may be writing it this very moment
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            break
        except (OSError, ValueError):
            time.sleep(0.1)
    else:
        raise SystemExit(f"{path} 读不出来（不是评分程序写的？）：没有动 {out}。 / unreadable marker")
    if not isinstance(data, dict) or data.get("made_by") != MADE_BY or data.get("kind") not in KINDS:
        raise SystemExit(f"{path} 不是评分程序写的标记：没有动 {out}。 / not a grading output's marker")
    return data


def _write_marker(out: Path, kind: str, course: str, gradebook: str, ledger: dict, replace: bool = False) -> bool:
    """Write the marker; without replace only if there is none (O_EXCL). Return whether this call wrote it."""
    data = json.dumps({"made_by": MADE_BY, "kind": kind, "course": course, "gradebook": gradebook,
                       "created": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": ledger},
                      ensure_ascii=False, indent=1)
    if replace:
        tmp = out / f"{MARKER}.{os.getpid()}.tmp"
        tmp.write_text(data, encoding="utf-8")
        os.replace(tmp, out / MARKER)
        return True
    try:
        fd = os.open(out / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(data)
    return True


def require(out: Path, kind: str) -> None:
    """SystemExit unless OUT is a grading output of this kind (the report after the shards writes into it)."""
    marker = _read_marker(Path(os.path.realpath(out)))
    if marker is None or marker["kind"] != kind:
        raise SystemExit(f"OUT（{out}）不是{'分片' if kind == 'shards' else '单机'}评分的输出"
                         f"（没有 {MARKER}）：没有动它。"
                         " / OUT is not a grading output of this kind")


def _dated(out: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate, n = out.with_name(f"{out.name}-{stamp}"), 1
    while candidate.exists():
        n += 1
        candidate = out.with_name(f"{out.name}-{stamp}-{n}")
    return candidate


def claim(out: Path, submissions: Path, *, kind: str, db_url: str | None, new: bool = False,
          course: Path = GRADER) -> Out:
    """The output folder this run may write into (see the module docstring); SystemExit with the reason if none."""
    out = Path(os.path.realpath(out))
    why = refusal(out, submissions, course)
    if why:
        raise SystemExit(why)
    wanted = Out(out, kind, course_digest(course), gradebook_digest(db_url))
    if out.is_dir() and any(out.iterdir()):
        marker = _read_marker(out)
        if marker is None:
            raise SystemExit(f"OUT（{out}）不是空文件夹，也不是之前评分的输出（没有 {MARKER}）：没有动它。"
                             "换一个 OUT，或者先把里面的东西移走。 / OUT is not empty and not a grading output")
        if marker["kind"] != kind:
            raise SystemExit(f"OUT（{out}）是之前{'分片' if marker['kind'] == 'shards' else '单机'}评分的输出，"
                             f"这次是{'分片' if kind == 'shards' else '单机'}评分：换一个 OUT。"
                             " / OUT holds a grading output of the other kind")
        same = marker.get("course") == wanted.course and marker.get("gradebook") == wanted.gradebook
        if kind == "shards":
            if not same:
                raise SystemExit(f"OUT（{out}）里的分片是用另一份课程或另一个成绩册评的：换一个 OUT。"
                                 " / the shards in OUT were graded with another course or gradebook")
            return wanted
        if same and not new:
            wanted.previous = marker.get("rows") or {}
            return wanted
        dated = claim(_dated(out), submissions, kind=kind, db_url=db_url, course=course)
        dated.moved_from = out
        return dated
    out.mkdir(parents=True, exist_ok=True)
    if not _write_marker(out, kind, wanted.course, wanted.gradebook, {}):
        return claim(out, submissions, kind=kind, db_url=db_url, new=False, course=course)   # another shard won
    return wanted
