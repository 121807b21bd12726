"""The test suite's lanes in two concurrent pytest processes, measured: the experiment behind issue 35.

    python bench/suite_lanes.py [--group LANE,LANE,...] [--group ...]

Each --group is one pytest process running those lanes (tests/conftest.py LANES); the groups run at the same
time on this machine, after the site is built once (book/_ext/site_build.py --reuse, so no group builds it).
Prints each group's wall time, its lanes' times as the lane summary reports them, and the pytest result line,
then the wall time of the whole: beside the serial `make test` time of the same machine, the ratio that says
what running lanes side by side buys. Not part of `make test` (it is the suite itself, twice as busy):
its numbers go into the note of the issue that decides how `make test` runs, and into a record,
bench/results/suite-lanes.json (bench/record.py), which the book's benchmarks page draws.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import record

ROOT = Path(__file__).resolve().parents[1]
# the qemu guest (one busy core) beside the lanes that start few processes; the rest beside it
DEFAULT_GROUPS = ["cgroup v2 guest,notebooks,quick", "grading,sandbox levels,hub and service,browser"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--group", action="append", help="comma-separated lanes run by one pytest process")
    args = parser.parse_args()
    groups = args.group or DEFAULT_GROUPS
    since = record.now()
    subprocess.run([sys.executable, str(ROOT / "book" / "_ext" / "site_build.py"), "--reuse"], check=True)
    env = {**os.environ, "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci")}
    started = time.monotonic()
    procs = []
    for n, group in enumerate(groups):
        lanes = [arg for lane in group.split(",") for arg in ("--lane", lane.strip())]
        log = open(ROOT / f"test-artifacts/suite-lanes-{n}.log", "w", encoding="utf-8")
        cmd = [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider", *lanes]
        procs.append((group, time.monotonic(), subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log,
                                                                stderr=subprocess.STDOUT), log))
    finished = {}
    while len(finished) < len(procs):
        for group, start, proc, log in procs:
            if group not in finished and proc.poll() is not None:
                finished[group] = (time.monotonic() - start, proc.returncode)
                log.close()
        time.sleep(1)
    total = time.monotonic() - started
    ended = record.now()
    measured = []
    for n, (group, _start, _proc, _log) in enumerate(procs):
        seconds, code = finished[group]
        text = (ROOT / f"test-artifacts/suite-lanes-{n}.log").read_text(encoding="utf-8")
        lanes = re.findall(r"^(\S.*?)\s+(\d+) tests\s+([\d.]+) s$", text, flags=re.M)
        result = [line for line in text.splitlines() if re.search(r"\d+ (passed|failed)", line)]
        print(f"group {n} ({group}): {seconds:.0f} s wall, exit {code}")
        for lane, count, lane_seconds in lanes:
            print(f"    {lane:18} {count:>5} tests {float(lane_seconds):8.1f} s")
        print(f"    {result[-1] if result else '(no result line)'}")
        measured.append({"group": group, "seconds": seconds, "exit": code, "result": result[-1] if result else None,
                         "lanes": [{"lane": lane, "tests": int(count), "seconds": float(lane_seconds)}
                                   for lane, count, lane_seconds in lanes]})
    print(f"all groups side by side: {total:.0f} s wall ({total / 60:.1f} min)")
    record.save("suite-lanes", {"seconds": total, "groups": measured}, since=since, until=ended)


if __name__ == "__main__":
    main()
