"""Graded on arrival, measured: submit -> feedback available, on this machine, exercise 1.

    PYTHONPATH=tests python bench/serve_latency.py [--idle 10] [--burst 60] [--over 60] [--jobs 1 2]
                                                   [--junk 100000] [--pending 20000]

A private PostgreSQL gradebook (tests/postgres_server.py), a course with exercise 1 released to a local
exchange, and `python -m grader serve` as a real process, sandboxed at the level `doctor` reports. A student
submits with nbgrader's own exchange code (tests/exchange.py); the latency of a submission is from the
moment its folder is complete in inbound to the moment its feedback file exists under nbgrader's name in
the exchange (what "Fetch Feedback" then copies). Two loads, for each --jobs (one service process grading
that many at a time):

- idle: --idle submissions one after another, each once the previous one's feedback is there;
- burst: --burst submissions spread evenly over --over seconds (60 in a minute), all at the service.

Prints p50 and p95 of each and the time from the first submission of the burst to the last feedback, with
the targets (exercise 1, 2 cores: idle p50 <= 15 s, p95 <= 30 s; a burst of 60 in a minute all graded
within 3 minutes). Then the same --idle hand-ins on one more service, quiet and with junk beside them:
--junk empty, well-named folders of made-up students in inbound and --pending rows of other students
waiting out their rate limit, side by side (target: with the junk within 1.5x of quiet, p50). Both are also
written as records (bench/record.py), bench/results/serve-latency.json and serve-junk.json, which the book's
benchmarks page draws.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from course import filled, reference_fills
from exchange import EX1, Exchange
from sqlalchemy import create_engine, text

from grader.course import COURSE_ID
from grader.serve.deliver import feedback_name
from grader.serve.queue import TABLE
from postgres_server import local_postgres

import record

TARGET_IDLE_P50, TARGET_IDLE_P95, TARGET_BURST_ALL = 15.0, 30.0, 180.0
TARGET_JUNK_RATIO = 1.5   # an honest hand-in with 100,000 junk folders and 20,000 pending rows, against quiet
RIGHT = filled(EX1, reference_fills(EX1))


def _secret(ex: Exchange, folder: str) -> str:
    return (ex.inbound / folder / "submission_secret.txt").read_text(encoding="utf-8")


def _submit_and_time(ex: Exchange, student: str, latencies: dict, lock: threading.Lock) -> None:
    folder = ex.submit(student, RIGHT)
    began = time.monotonic()
    target = ex.root / COURSE_ID / "feedback" / feedback_name(_secret(ex, folder), EX1)
    while not target.exists():
        time.sleep(0.05)
    with lock:
        latencies[student] = time.monotonic() - began


def _pcts(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    p95 = values[min(len(values) - 1, max(0, round(0.95 * len(values)) - 1))]
    return statistics.median(values), p95


def run(jobs: int, idle: int, burst: int, over: float, tmp: Path, db_url: str) -> dict:
    ex = Exchange.create(tmp / f"jobs{jobs}", db_url)
    lock, result = threading.Lock(), {"jobs": jobs}
    with ex.service(tmp / f"jobs{jobs}.log", "--jobs", str(jobs), "--poll", "0.2"):
        warm: dict = {}
        _submit_and_time(ex, f"warm-{jobs}", warm, lock)   # the reference run and first imports: not a student's
        idle_lat: dict = {}
        for i in range(idle):
            _submit_and_time(ex, f"idle-{jobs}-{i}", idle_lat, lock)
        result["idle"] = _pcts(list(idle_lat.values()))
        burst_lat: dict = {}
        threads, began = [], time.monotonic()
        for i in range(burst):
            while time.monotonic() < began + i * over / burst:
                time.sleep(0.01)
            thread = threading.Thread(target=_submit_and_time, args=(ex, f"burst-{jobs}-{i}", burst_lat, lock))
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join()
        result["burst"] = _pcts(list(burst_lat.values()))
        result["burst_all"] = time.monotonic() - began
    return result


def _fill_junk(ex: Exchange, folders: int, pending: int, db_url: str) -> None:
    """folders empty, well-named folders of made-up students in inbound, written by another OS account than the
    honest hand-ins (nobody: what a hostile student can write in a minute), and pending rows of other students
    that wait out their rate limit (a class that resubmits a lot)."""
    stamp = "2026-06-01 00:00:00.000000 UTC"
    for i in range(folders):
        path = ex.inbound / f"junk{i:06d}+{EX1}+{stamp}+j{i:011d}"
        os.mkdir(path)
        os.chown(path, 65534, 65534)
    engine = create_engine(db_url)
    with engine.begin() as conn:
        now = float(conn.execute(text("SELECT extract(epoch from clock_timestamp())")).scalar())
        conn.execute(text(
            f"INSERT INTO {TABLE} (course_id, folder, student, assignment, submitted_at, enqueued_at, state, ready_at, "
            f"skeleton, claimed_at) SELECT :c, 'pend' || i || '+old', 'pend' || i, :a, :now, :now, 'done', NULL, "
            f"'pend' || i, :now FROM generate_series(1, :n) AS i"), dict(c=COURSE_ID, a=EX1, now=now, n=pending))
        conn.execute(text(
            f"INSERT INTO {TABLE} (course_id, folder, student, assignment, submitted_at, enqueued_at, state, ready_at, "
            f"skeleton) SELECT :c, 'pend' || i || '+new', 'pend' || i, :a, :now, :now, 'pending', :now + 3600, "
            f"'pend' || i FROM generate_series(1, :n) AS i"), dict(c=COURSE_ID, a=EX1, now=now, n=pending))
    engine.dispose()


def run_junk(idle: int, folders: int, pending: int, tmp: Path, db_url: str) -> dict:
    """The same honest hand-ins one after another, quiet and then with the junk in place, on one service."""
    ex = Exchange.create(tmp / "junk", db_url)
    lock, result = threading.Lock(), {}
    with ex.service(tmp / "junk.log", "--jobs", "1", "--poll", "0.2", "--min-interval", "3600",
                    "--status-every", "5"):
        _submit_and_time(ex, "warm-junk", {}, lock)
        quiet: dict = {}
        for i in range(idle):
            _submit_and_time(ex, f"quiet-{i}", quiet, lock)
        began = time.monotonic()
        _fill_junk(ex, folders, pending, db_url)
        result["made_s"] = time.monotonic() - began
        loaded: dict = {}
        for i in range(idle):
            _submit_and_time(ex, f"loaded-{i}", loaded, lock)
        result["quiet"], result["loaded"] = _pcts(list(quiet.values())), _pcts(list(loaded.values()))
    log = (tmp / "junk.log").read_text(errors="replace").splitlines()
    result["status"] = next((line for line in reversed(log) if "status: last scan" in line), "")
    for name in os.listdir(ex.inbound):
        if name.startswith("junk"):
            os.rmdir(ex.inbound / name)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=10)
    parser.add_argument("--burst", type=int, default=60)
    parser.add_argument("--over", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, nargs="*", default=[1, 2], help="(none: only the junk run)")
    parser.add_argument("--junk", type=int, default=100_000, help="junk folders in inbound (0: no junk run)")
    parser.add_argument("--pending", type=int, default=20_000, help="pending rows of other students beside them")
    args = parser.parse_args()
    since = record.now()
    load = os.getloadavg()
    rows = []
    with local_postgres() as db_url, tempfile.TemporaryDirectory(prefix="serve-bench-") as tmp:
        for jobs in args.jobs:
            rows.append(run(jobs, args.idle, args.burst, args.over, Path(tmp), db_url))
            print(f"  jobs {jobs}: done", file=sys.stderr)
        junk_since = record.now()   # also when the --jobs runs ended
        junk = run_junk(args.idle, args.junk, args.pending, Path(tmp), db_url) if args.junk else None
    if rows:
        print(f"#### Graded on arrival: submit -> feedback, exercise 1 ({os.cpu_count()} cores; {args.idle} idle "
              f"submissions one at a time; a burst of {args.burst} over {args.over:.0f} s; load average before: "
              f"{load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f})")
        print()
        print("| service | idle p50 | idle p95 | burst p50 | burst p95 | burst: first submit -> last feedback |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| 1 process, --jobs {r['jobs']} | {r['idle'][0]:.1f} s | {r['idle'][1]:.1f} s "
                  f"| {r['burst'][0]:.1f} s | {r['burst'][1]:.1f} s | {r['burst_all']:.0f} s |")
        best = min(rows, key=lambda r: r["burst_all"])
        print()
        print(f"Targets: idle p50 <= {TARGET_IDLE_P50:.0f} s, p95 <= {TARGET_IDLE_P95:.0f} s; the burst all graded "
              f"within {TARGET_BURST_ALL:.0f} s. Best: idle p50 {min(r['idle'][0] for r in rows):.1f} s, p95 "
              f"{min(r['idle'][1] for r in rows):.1f} s; burst {best['burst_all']:.0f} s (--jobs {best['jobs']}).")
        record.save("serve-latency", {
            "idle": args.idle, "burst": args.burst, "over_s": args.over, "cores": os.cpu_count(),
            "targets": {"idle_p50_s": TARGET_IDLE_P50, "idle_p95_s": TARGET_IDLE_P95, "burst_all_s": TARGET_BURST_ALL},
            "services": [{"jobs": r["jobs"], "idle_p50": r["idle"][0], "idle_p95": r["idle"][1],
                          "burst_p50": r["burst"][0], "burst_p95": r["burst"][1], "burst_all": r["burst_all"]}
                         for r in rows]}, since=since, until=junk_since)
    if junk:
        ratio = junk["loaded"][0] / junk["quiet"][0]
        print()
        print(f"#### With junk: {args.junk} empty folders of made-up students in inbound and {args.pending} pending "
              f"rows of other students waiting out their rate limit (--jobs 1, --identity names: no owner check "
              f"filters the junk, the scanner's limits count it as one account's; made in {junk['made_s']:.0f} s, "
              f"the first honest hand-in right after)")
        print()
        print("| the same honest hand-ins, one at a time | p50 | p95 |")
        print("|---|---:|---:|")
        print(f"| quiet | {junk['quiet'][0]:.1f} s | {junk['quiet'][1]:.1f} s |")
        print(f"| with the junk | {junk['loaded'][0]:.1f} s | {junk['loaded'][1]:.1f} s |")
        print()
        print(f"With the junk / quiet, p50: {ratio:.2f} (target <= {TARGET_JUNK_RATIO}): "
              f"{'met' if ratio <= TARGET_JUNK_RATIO else 'NOT met'}. The service's last status line:")
        print()
        print(f"    {junk['status'].split('] ', 1)[-1]}")
        record.save("serve-junk", {
            "idle": args.idle, "junk_folders": args.junk, "pending_rows": args.pending, "made_s": junk["made_s"],
            "target_ratio": TARGET_JUNK_RATIO, "quiet_p50": junk["quiet"][0], "quiet_p95": junk["quiet"][1],
            "junk_p50": junk["loaded"][0], "junk_p95": junk["loaded"][1],
            "status": junk["status"].split("] ", 1)[-1]}, since=junk_since)


if __name__ == "__main__":
    main()
