"""One class graded as N shards (on N machines, or N Slurm or Kubernetes tasks), then one report.

    shard = Shard.parse("1/3")                 # shard 1 of 3 (0-based: 0/3, 1/3, 2/3)
    shard.takes(student)                       # a stable hash of the student id decides, the same on every run
    write_manifest(folder, shard, rows, ...)   # what the shard did: every row of the class, its own rows graded
    rows, missing, level = read_manifests(out) # every shard's rows; the shards that never finished

A shard grades every assignment of its students, records into the shared gradebook (PostgreSQL) and
writes its per-notebook outputs under OUT/shards/K/. The report (grade/pipeline.py, report) reads the
manifests and the gradebook: a shard that never ran, or never finished, is named and its students' rows
say so. A row here is plain data (Submission.row(): student, assignment, path, status, notes, seconds).
The Slurm and Kubernetes files that start the shards are beside this file (slurm/, kubernetes/).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from grader.sandbox import LEVELS

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        try:
            index, count = (int(part) for part in text.split("/"))
        except ValueError:
            raise ValueError(f"SHARD must look like K/N (0 <= K < N), got {text!r}") from None
        if not 0 <= index < count:
            raise ValueError(f"SHARD must look like K/N with 0 <= K < N, got {text!r}")
        return cls(index, count)

    def takes(self, student: str) -> bool:
        return shard_of(student, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(student: str, count: int) -> int:
    """The shard a student belongs to: a hash of the id (not Python's hash(), which changes per process)."""
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count


def shard_folder(out: Path, shard: Shard) -> Path:
    return out / "shards" / str(shard.index)


def write_manifest(folder: Path, shard: Shard, rows: list[dict], level: str, timings: dict) -> None:
    """Every row of the class (so the report knows whom a missing shard would have graded), this shard's
    own rows as graded, and its timings (wall and CPU seconds; when it ran). Written last, atomically: a
    shard that died has no manifest."""
    data = {"shard": shard.index, "count": shard.count, "level": level, "timings": timings,
            "rows": [dict(row, shard=shard_of(row["student"], shard.count), mine=shard.takes(row["student"]))
                     for row in rows]}
    tmp = folder / f".{MANIFEST}.{os.getpid()}"
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)


def read_manifests(out: Path) -> tuple[list[dict], list[int], str]:
    """The class's rows (each from the shard that graded it, with its `shard` and `mine`), the shards that
    left no manifest, and the isolation level the class was graded at (the lowest any shard used).
    ValueError if no shard left a manifest."""
    manifests = []
    for path in sorted((out / "shards").glob(f"*/{MANIFEST}")):
        manifests.append(json.loads(path.read_text(encoding="utf-8")))
    if not manifests:
        raise ValueError(f"no shard finished: no {out}/shards/*/{MANIFEST}")
    count = manifests[0]["count"]
    if any(m["count"] != count for m in manifests):
        raise ValueError("the shards were run with different N: " + ", ".join(str(m["count"]) for m in manifests))
    done = {m["shard"] for m in manifests}
    missing = sorted(set(range(count)) - done)
    rows: dict[tuple[str, str], dict] = {}
    for m in manifests:
        for row in m["rows"]:
            key = (row["student"], row["assignment"])
            if row["mine"]:
                rows[key] = row
            elif row["shard"] in missing and key not in rows:
                rows[key] = dict(row, path=None, status="error",
                                 notes=[f"第 {row['shard']}/{count} 片没有运行或没有跑完：这份作业没有评分"])
    level = max((m["level"] for m in manifests), key=LEVELS.index)
    return sorted(rows.values(), key=lambda r: (r["student"], r["assignment"])), missing, level
