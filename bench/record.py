"""A benchmark's results as a machine-readable record: what the book's benchmarks page is drawn from.

    moment = record.now()                       # when a run (or one section of it) starts: time and load average
    ...                                          # the run prints its Markdown as before
    record.save("run", data, since=moment)       # bench/results/run.json, overwritten by the next run

A record is one JSON file per script or per section of a script (bench/results/<name>.json): `data` (the rows the
script prints, as numbers, and its verdicts) inside an envelope that says when it ran, at which commit (and which
files of the checkout differed from it when the run started, bench/results left out), on what machine, with which
Python and torch, under what load (the load average before and after) and by which command. A run writes only its
own files and deletes nothing. The page (book/benchmarks.md) reads them through bench/report.py.

BENCH_RESULTS=<folder> writes the records there instead (the tests do, so a test never overwrites a committed record).
"""
from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
SCHEMA = 1


@dataclass(frozen=True)
class Moment:
    wall: float                          # time.time()
    load: tuple[float, float, float]     # os.getloadavg(): 1, 5 and 15 minutes


def now() -> Moment:
    return Moment(time.time(), tuple(round(x, 2) for x in os.getloadavg()))


START = now()   # the process's start: the default `since` of a record


def results_dir() -> Path:
    return Path(os.environ.get("BENCH_RESULTS") or RESULTS)


def _git(*args: str) -> str:
    """git's output in this checkout, its trailing newline removed ("" without git)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True)
        return out.stdout.rstrip("\n")
    except (OSError, subprocess.CalledProcessError):
        return ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict:
    return {"system": platform.system(), "kernel": platform.release(), "cpu": _cpu_model(), "cores": os.cpu_count(),
            "memory_gb": _memory_gb(),
            "cgroup": "v2" if Path("/sys/fs/cgroup/cgroup.controllers").exists() else "v1"}


def command(argv: list[str] | None = None) -> str:
    """The command line that ran this process, the script relative to the repository: `python bench/run.py --x`."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]).resolve() if argv else None
    if script is not None and script.is_relative_to(ROOT):
        argv[0] = script.relative_to(ROOT).as_posix()
    return shlex.join(["python", *argv])


def checkout() -> tuple[str | None, list[str]]:
    """The commit checked out and the paths that differ from it (edited, added, untracked; bench/results left out)."""
    status = _git("status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude)bench/results")
    return _git("rev-parse", "HEAD") or None, sorted(line[3:] for line in status.splitlines() if line[3:].strip())


CHECKOUT = checkout()   # at the process's start: the code this run imported (a commit made during a long run is not)


def envelope(name: str, since: Moment, until: Moment | None = None, argv: list[str] | None = None) -> dict:
    end = until or now()
    head, edited = CHECKOUT
    return {
        "schema": SCHEMA, "name": name, "command": command(argv),
        "started": dt.datetime.fromtimestamp(since.wall, dt.timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(end.wall - since.wall, 1),
        "commit": head, "edited": edited,
        "machine": machine(), "python": platform.python_version(), "torch": _version("torch"),
        "load_before": list(since.load), "load_after": list(end.load),
    }


def _plain(value):
    """value with tuples as lists and NaN or infinity as None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def make(name: str, data: dict, since: Moment = START, until: Moment | None = None,
         argv: list[str] | None = None) -> dict:
    """The record: the envelope (since, until: when the run or section started and ended; until defaults to now)
    and data, as JSON can hold it."""
    return {**envelope(name, since, until, argv), "data": _plain(data)}


def save(name: str, data: dict, since: Moment = START, until: Moment | None = None,
         argv: list[str] | None = None, folder: Path | None = None) -> Path:
    """Write bench/results/<name>.json (or under BENCH_RESULTS, or folder): make(...)'s record. Returns the path;
    nothing else in the folder is touched."""
    folder = Path(folder or results_dir())
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    text = json.dumps(make(name, data, since, until, argv), ensure_ascii=False, indent=1, allow_nan=False)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)
    print(f"record: {path}", file=sys.stderr)
    return path
