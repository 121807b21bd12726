"""make bench-grading: one simulated class graded every way side by side, in one run, on this machine.

    PYTHONPATH=tests python bench/grading.py [--students 30] [--jobs 2] [--base REV ...] [--shards 3] [--repeat 1]

The class: every student hands in every assignment, each notebook one of the reference answer, the
untouched release or a realistic wrong answer (tests/class_builder.py). It is graded:

- by this commit, sandboxed (`make grade`: SQLite, --jobs notebooks at a time, feedback and report);
- by each --base commit, from a git worktree of it, the same way (the cost of a change, measured side by
  side: same class, same machine, same minutes);
- by this commit with --unsafe-no-sandbox (the sandbox's own cost);
- by this commit as --shards shards on a real single-node Slurm cluster (tests/slurm_cluster.py), into a
  private PostgreSQL gradebook (tests/postgres_server.py), then the report job: the price of splitting, in
  CPU seconds. Every shard runs at once (one CPU each on this machine's cores: more shards than cores share).

Every way must give the same grades.csv; the shards' is compared byte for byte with the one-machine run's.
CPU seconds are the grader's own (all its threads) plus every sandbox's (cgroup cpuacct), so `core-seconds
per notebook` is what sizes a cluster. The table is also written as a record, bench/results/grading.json
(bench/record.py), which the book's benchmarks page draws. --shards 0 leaves Slurm out (it starts a cluster on
this machine).
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from class_builder import write_class
from course import ASSIGNMENTS

from grader.course import ROOT
from grader.grade.pipeline import grade
from postgres_server import local_postgres
from worktree import worktree

import record

TARGET_TOTAL_S = 300          # 30 x 7 sandboxed, end to end
TARGET_BASE_RATIO = 1.05      # a change may cost at most 5% against its base
TARGET_SHARD_CPU_RATIO = 1.15  # N shards over Slurm: at most 15% more CPU seconds than one run
CLASS_SIZE, NODE_CORES = 10_000, 32   # the class the capacity is scaled to, and the cores of one cluster node


def _nodes(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def _this(label: str, root: Path, out: Path, **kwargs) -> dict:
    timings: dict = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        grade(root, out, timings=timings, **kwargs)
    # without the sandbox (or at the job level on a cgroup v1 host) nothing counts the kernels' CPU: only the
    # grader's is known
    partial = kwargs.get("isolation", "auto") == "none" or timings["kernel_cpu"] is None
    timings["cpu"] = timings["grader_cpu"] + (timings["kernel_cpu"] or 0.0)
    print(f"  {label}: {timings['total']:.0f} s, {timings['cpu']:.0f} CPU-s", file=sys.stderr)
    return {"label": label, "kind": "unsandboxed" if kwargs.get("isolation") == "none" else "this",
            "wall": timings["total"], "cpu": timings["cpu"], "grades": out / "grades.csv", "cpu_partial": partial}


def _base(rev: str, root: Path, out: Path, jobs: int, tmp: Path) -> dict:
    """The same class graded by another commit's grader (a git worktree of it, this venv)."""
    with worktree(ROOT, rev, tmp / f"base-{rev}") as tree:
        if (tree / "grader" / "grade.py").is_file():          # before grader was a package
            command = [sys.executable, str(tree / "grader" / "grade.py"), str(root), "--out", str(out)]
        else:
            command = [sys.executable, "-m", "grader", "grade", str(root), "--out", str(out)]
        env = {**os.environ, "PYTHONPATH": str(tree)}        # its grader package first, if it has one
        started = time.perf_counter()
        before = os.times()
        subprocess.run(command + ["--jobs", str(jobs)], cwd=tree, env=env, check=True, capture_output=True)
        after = os.times()
        wall = time.perf_counter() - started
    cpu = after.children_user + after.children_system - before.children_user - before.children_system
    print(f"  {rev}: {wall:.0f} s", file=sys.stderr)
    changed = {a for a in ASSIGNMENTS if subprocess.run(
        ["git", "-C", str(ROOT), "diff", "--quiet", rev, "HEAD", "--", f"grader/source/{a}"]).returncode != 0}
    return {"label": f"commit {rev}", "kind": "base", "commit": rev, "wall": wall, "cpu": cpu,
            "grades": out / "grades.csv", "cpu_partial": True, "changed": changed}


def _rows(path: Path) -> dict:
    with open(path, encoding="utf-8", newline="") as f:
        return {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}


def _same(run: dict, this: dict) -> str:
    """Whether a run's grades.csv is this commit's; for another commit, where they differ and whether only
    where that assignment's instructor notebook (its tests) changed between the two commits."""
    if run["grades"].read_bytes() == this["grades"].read_bytes():
        return "same"
    mine, theirs = _rows(this["grades"]), _rows(run["grades"])
    differ = sorted({a for k, a in mine if mine[(k, a)] != theirs.get((k, a))})
    if "changed" in run and set(differ) <= run["changed"]:
        return f"same but {', '.join(differ)} (its instructor notebook changed since)"
    return f"DIFFERENT in {', '.join(differ)}"


def _byte_for_byte(one: Path, other: Path) -> str:
    """'identical', or 'DIFFERENT' with the rows that differ (student, assignment: score/status each way)."""
    if one.read_bytes() == other.read_bytes():
        return "identical"
    mine, theirs = _rows(one), _rows(other)
    differ = [f"{s} {a}: {mine.get((s, a), {}).get('score')}/{mine.get((s, a), {}).get('status')} vs "
              f"{theirs.get((s, a), {}).get('score')}/{theirs.get((s, a), {}).get('status')}"
              for s, a in sorted(set(mine) | set(theirs)) if mine.get((s, a)) != theirs.get((s, a))]
    return f"DIFFERENT ({len(differ)} rows: {'; '.join(differ[:10])})"


def _slurm(shards: int, root: Path, out: Path, tmp: Path) -> dict:
    from slurm_cluster import available, local_slurm, submit_shards, wait_for_jobs

    if available():
        print(f"  no Slurm shards: {available()}", file=sys.stderr)
        return {}
    # every shard at once, one CPU each, on the machine's cores: more shards than cores share them (a loaded node)
    cores = sorted(os.sched_getaffinity(0))
    with local_postgres() as db_url, local_slurm(cpus=max(shards, len(cores)), cores=cores) as slurm:
        started = time.perf_counter()
        ids = submit_shards(slurm, shards, root, out, db_url, tmp)
        wait_for_jobs(slurm, seconds=3600)
        wall = time.perf_counter() - started
    cpu, levels, partial = 0.0, set(), False
    for manifest in (out / "shards").glob("*/manifest.json"):
        shard = json.loads(manifest.read_text(encoding="utf-8"))
        levels.add(shard["level"])
        # a shard at the job level on a cgroup v1 host cannot count its sandboxes (kernel_cpu None): only its grader
        partial |= shard["timings"]["kernel_cpu"] is None
        cpu += shard["timings"]["grader_cpu"] + (shard["timings"]["kernel_cpu"] or 0.0)
    print(f"  {shards} Slurm shards (jobs {list(ids)}, levels {sorted(levels)}): {wall:.0f} s, {cpu:.0f} CPU-s"
          + (" (the sandboxes' CPU not counted at the job level here)" if partial else ""), file=sys.stderr)
    return {"label": f"{shards} shards on Slurm (1 core each, {'/'.join(sorted(levels))}) + report", "kind": "shards",
            "shards": shards, "levels": sorted(levels), "wall": wall, "cpu": cpu, "grades": out / "grades.csv",
            "cpu_note": "shards only", "cpu_partial": partial}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--base", action="append", default=[], help="a commit to compare with (repeatable)")
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--no-unsandboxed", action="store_true")
    parser.add_argument("--repeat", type=int, default=1,
                        help="grade the class one way and as shards this many times in turn (the shards' CPU ratio "
                             "from one pair moves with the machine's load; the verdict takes the median pair)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        tmp.chmod(0o755)
        root = tmp / "class"
        write_class(root, args.students)
        notebooks = args.students * len(ASSIGNMENTS)
        print(f"grading {notebooks} notebooks, every way ...", file=sys.stderr)
        load = os.getloadavg()
        since = record.now()
        runs = [_this("this commit, sandboxed", root, tmp / "this", jobs=args.jobs)]
        runs += [_base(rev, root, tmp / f"out-{rev}", args.jobs, tmp) for rev in args.base]
        if not args.no_unsandboxed:
            runs.append(_this("this commit, --unsafe-no-sandbox", root, tmp / "unsafe", jobs=args.jobs,
                              isolation="none"))
        if args.shards:
            runs += [r for r in [_slurm(args.shards, root, tmp / "sharded", tmp)] if r]
        this = runs[0]
        shard = next((r for r in runs if "shards" in r["label"]), None)
        pairs = [(this, shard)] if shard else []
        for i in range(1, args.repeat if shard else 1):
            again = _this("this commit, sandboxed", root, tmp / f"this-{i}", jobs=args.jobs)
            pairs.append((again, _slurm(args.shards, root, tmp / f"sharded-{i}", tmp)))
        same = {r["label"]: _same(r, this) for r in runs}
        print(f"\n### `make bench-grading`: {args.students} students x {len(ASSIGNMENTS)} assignments = {notebooks} "
              f"notebooks ({os.cpu_count()} cores, {args.jobs} notebooks at a time; load average before "
              f"{load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f})\n")
        print("| run | wall | wall / this commit | CPU seconds | CPU / this commit | notebooks / min | grades.csv |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for r in runs:
            cpu = "—" if r.get("cpu_partial") else f"{r['cpu']:.0f}"
            ratio = "—" if r.get("cpu_partial") else f"{r['cpu'] / this['cpu']:.3f}"
            print(f"| {r['label']} | {r['wall']:.0f} s | {r['wall'] / this['wall']:.3f} | {cpu} | {ratio} "
                  f"| {60 * notebooks / r['wall']:.1f} | {same[r['label']]} |")
        per_notebook = this["cpu"] / notebooks
        capacity = this["wall"] * (os.cpu_count() or 1) / notebooks
        print(f"\n- CPU seconds per notebook (this commit, sandboxed; the grader's and every sandbox's): "
              f"{per_notebook:.2f}; core-seconds of capacity per notebook (wall x cores / notebooks, what a "
              f"cluster must provide: kernels also wait, start and stop): {capacity:.2f}")
        print(f"- end to end, sandboxed: {this['wall']:.0f} s (target <= {TARGET_TOTAL_S} s): "
              f"{'met' if this['wall'] <= TARGET_TOTAL_S else 'NOT met'}")
        for r in runs[1:1 + len(args.base)]:
            ratio = this["wall"] / r["wall"]
            print(f"- this commit / {r['label']}, wall: {ratio:.3f} (target <= {TARGET_BASE_RATIO}): "
                  f"{'met' if ratio <= TARGET_BASE_RATIO else 'NOT met'}")
        if any(s.get("cpu_partial") for _, s in pairs):
            print(f"- {shard['label']}, CPU seconds / one run: not known (a shard ran at the job level on a cgroup "
                  "v1 host, where nothing counts its sandboxes' CPU)")
        elif pairs:
            ratios = [s["cpu"] / o["cpu"] for o, s in pairs]
            ratio = statistics.median(ratios)
            each = "" if len(pairs) == 1 else (
                f" (median of {len(pairs)} pairs graded in turn: "
                + ", ".join(f"{s['cpu']:.0f}/{o['cpu']:.0f} = {r:.3f}" for (o, s), r in zip(pairs, ratios)) + ")")
            print(f"- {shard['label']}, CPU seconds / one run: {ratio:.3f}{each} (target <= {TARGET_SHARD_CPU_RATIO}): "
                  f"{'met' if ratio <= TARGET_SHARD_CPU_RATIO else 'NOT met'}")
        hours = CLASS_SIZE * len(ASSIGNMENTS) * capacity / 3600
        print(f"- a class of {CLASS_SIZE:,} students x {len(ASSIGNMENTS)} notebooks at that capacity: {hours:.0f} "
              f"core-hours; for a one-hour turnaround, {hours:.0f} cores: {_nodes(math.ceil(hours / NODE_CORES))} of "
              f"{NODE_CORES} cores (--jobs {NODE_CORES}), or {math.ceil(hours / 2)} of 2")
        for one, sharded in pairs:
            print(f"- {sharded['label']} against {one['label']}: grades.csv byte for byte "
                  f"{_byte_for_byte(one['grades'], sharded['grades'])}")
        print(f"- the same grades.csv every way (where the tests are the same): "
              f"{not any(v.startswith('DIFFERENT') for v in same.values())}")
        record.save("grading", {
            "students": args.students, "assignments": len(ASSIGNMENTS), "notebooks": notebooks, "jobs": args.jobs,
            "cores": os.cpu_count(), "targets": {"total_s": TARGET_TOTAL_S, "base_ratio": TARGET_BASE_RATIO,
                                                 "shard_cpu_ratio": TARGET_SHARD_CPU_RATIO},
            "projection": {"students": CLASS_SIZE, "node_cores": NODE_CORES},
            "runs": [{"label": r["label"], "kind": r["kind"], "commit": r.get("commit"), "wall": r["wall"],
                      "cpu": None if r.get("cpu_partial") else r["cpu"], "grades": same[r["label"]]} for r in runs],
            "shard_pairs": [{"one_cpu": None if o.get("cpu_partial") else o["cpu"],
                             "shards_cpu": None if s.get("cpu_partial") else s["cpu"],
                             "grades_byte_for_byte": _byte_for_byte(o["grades"], s["grades"])} for o, s in pairs],
        }, since=since)


if __name__ == "__main__":
    main()
