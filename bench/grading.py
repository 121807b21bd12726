"""make bench-grading: a simulated class graded end to end, with and without the sandbox, side by side.

    python bench/grading.py [--students 30] [--jobs 2] [--postgres]

The class: every student hands in every assignment, each notebook one of the reference answer, the
untouched release or a realistic wrong answer (tests/class_builder.py). It is graded twice in one run,
the same way (`make grade`: SQLite gradebook, --jobs notebooks executing at a time, feedback and report
included): once sandboxed (the default) and once with --unsafe-no-sandbox. The difference per notebook is
the sandbox's own cost. Both must give the same grades.csv. With --postgres, a third run records into a
private PostgreSQL gradebook instead.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "grader"), str(ROOT / "tests")]

from class_builder import write_class  # noqa: E402
from course import ASSIGNMENTS  # noqa: E402
from grader.pipeline import grade  # noqa: E402

TARGET_TOTAL_S = 300
TARGET_OVERHEAD_S = 0.2


def _run(label: str, root: Path, out: Path, **kwargs) -> tuple[str, dict]:
    timings: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):  # the report (and nbgrader's prints) of every run
        grade(root, out, timings=timings, **kwargs)
    print(f"  {label}: {timings['total']:.0f} s", file=sys.stderr)
    return label, timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--postgres", action="store_true", help="also record into a private PostgreSQL gradebook")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_class(tmp / "class", args.students)
        notebooks = args.students * len(ASSIGNMENTS)
        print(f"grading {notebooks} notebooks, three ways ...", file=sys.stderr)
        runs = [_run("sandboxed (default)", tmp / "class", tmp / "sandboxed", jobs=args.jobs),
                _run("--unsafe-no-sandbox", tmp / "class", tmp / "unsandboxed", jobs=args.jobs, sandbox=False)]
        if args.postgres:
            from grader.postgres import local_postgres

            with local_postgres() as db_url:
                runs.append(_run("sandboxed, PostgreSQL gradebook", tmp / "class", tmp / "postgres", jobs=args.jobs,
                                 db_url=db_url))
        grades = [(tmp / name / "grades.csv").read_text(encoding="utf-8")
                  for name in ("sandboxed", "unsandboxed", "postgres")[: len(runs)]]
    same = all(g == grades[0] for g in grades)
    steps = ["prepare", "execute", "record", "feedback", "report", "total"]  # record and feedback overlap execute
    print(f"\n## Grading {args.students} students x {len(ASSIGNMENTS)} assignments = {notebooks} notebooks "
          f"({os.cpu_count()} cores, {args.jobs} notebooks executing at a time, SQLite gradebook unless said)\n")
    print("| run | " + " | ".join(steps) + " | notebooks / min |")
    print("|---|" + "---:|" * (len(steps) + 1))
    for label, t in runs:
        print(f"| {label} | " + " | ".join(f"{t[s]:.0f} s" for s in steps) + f" | {60 * notebooks / t['total']:.1f} |")
    sandboxed, unsandboxed = runs[0][1], runs[1][1]
    overhead = (sandboxed["execute"] - unsandboxed["execute"]) / notebooks * args.jobs
    print(f"\n- end to end, sandboxed: {sandboxed['total']:.0f} s (target <= {TARGET_TOTAL_S} s): "
          f"{'met' if sandboxed['total'] <= TARGET_TOTAL_S else 'NOT met'}")
    print(f"- the sandbox's own cost per notebook (execution time difference x jobs / notebooks): {overhead:+.3f} s "
          f"(target <= {TARGET_OVERHEAD_S} s): {'met' if overhead <= TARGET_OVERHEAD_S else 'NOT met'}")
    print(f"- the same grades.csv every way: {same}")


if __name__ == "__main__":
    main()
