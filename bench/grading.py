"""make bench-grading: a simulated class graded serially (SQLite) and in parallel (PostgreSQL).

Prints one table row per way with wall time, notebooks per minute and the speed-up, measured
side by side in one run on the same folder, and checks that both give the same grades.csv.
    python bench/grading.py [--students 30]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "grader"), str(ROOT / "tests")]

from class_builder import write_class  # noqa: E402
from course import ASSIGNMENTS  # noqa: E402
from grade import grade  # noqa: E402
from postgres import local_postgres  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_class(tmp / "class", args.students)
        notebooks = args.students * len(ASSIGNMENTS)
        rows = []
        start = time.perf_counter()
        grade(tmp / "class", tmp / "serial")
        rows.append(("SQLite, serial", 1, time.perf_counter() - start))
        with local_postgres() as db_url:
            start = time.perf_counter()
            grade(tmp / "class", tmp / "parallel", db_url=db_url, jobs=args.jobs)
            rows.append((f"PostgreSQL, {args.jobs} processes", args.jobs, time.perf_counter() - start))
        same = (tmp / "serial" / "grades.csv").read_text() == (tmp / "parallel" / "grades.csv").read_text()
    print(f"\n## Grading {args.students} students x {len(ASSIGNMENTS)} notebooks = {notebooks} notebooks "
          f"({os.cpu_count()} cores)\n")
    print("| gradebook | processes | wall time | notebooks / min | speed-up |")
    print("|---|---:|---:|---:|---:|")
    for name, jobs, seconds in rows:
        print(f"| {name} | {jobs} | {seconds:.0f} s | {60 * notebooks / seconds:.1f} | {rows[0][2] / seconds:.2f}x |")
    print(f"\nsame grades.csv both ways: {same}")


if __name__ == "__main__":
    main()
