"""The sandbox's own cost at each isolation level: on this machine's kernel and on a real cgroup v2 kernel
(a guest under qemu, tests/guest.py), each against the unsandboxed run on the same kernel.

    PYTHONPATH=tests python bench/levels.py [--students 6] [--repeat 1] [--no-guest]

One class of exercise 1 notebooks (no torch: a guest emulated in software imports it in ~40 s) is graded by
`python -m grader grade` once per level, in turn, `--repeat` times. The cost is the CPU seconds the whole
machine spent while the run went on (busy time in /proc/stat: the grader and every process it started, also
those a sandbox's teardown kills before anyone reaps them, which getrusage(RUSAGE_CHILDREN) never sees; the
machine is otherwise idle), per notebook; the sandbox's own cost is that against the `none` run's on the same
kernel. The guest's CPU seconds are the
guest kernel's (software emulation makes them ~30 times longer: only ratios compare across kernels). The
target: the cgroup v2 level's ratio, as a normal user with a delegated subtree, within 10% of this
machine's cgroup v1 ratio. The table is also written as a record, bench/results/levels.json (bench/record.py).
"""
from __future__ import annotations

import argparse
import inspect
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import guest
import record
from class_builder import write_class

from grader.sandbox import probe

A = "ex1_format_reward"
TARGET = 1.10


def busy() -> float:
    """Busy CPU seconds of the whole machine: /proc/stat's first line, every state but idle and iowait."""
    ticks = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _here(level: str, root: Path, out: Path, jobs: int) -> dict:
    cpu, start = busy(), time.perf_counter()
    subprocess.run([sys.executable, "-m", "grader", "grade", str(root), "--out", str(out), "--jobs", str(jobs),
                    "--isolation", level if level == "none" or level == "job" else "cgroup"],
                   check=True, capture_output=True)
    return {"cpu": busy() - cpu, "wall": time.perf_counter() - start}


# in the guest: each level's run timed the same way (the same busy()), by a small Python driver
GUEST_RUN = ("import json, os, subprocess, sys, time\n" + inspect.getsource(busy) +
             "c, t = busy(), time.perf_counter(); subprocess.run(sys.argv[2:], check=True, capture_output=True)\n"
             "open(sys.argv[1], 'w').write(json.dumps({'cpu': busy() - c, 'wall': time.perf_counter() - t}))\n")

GUEST_SCRIPT = """\
cd {repo}
PY={python}
S={shared}
L=/var/tmp/bench && mkdir -p $L && cp -r $S/class $L/ && chmod -R a+rX $L
echo "+memory +pids +cpu" > /sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/bench && echo "+memory +pids +cpu" > /sys/fs/cgroup/bench/cgroup.subtree_control
D=/sys/fs/cgroup/bench/u4242
mkdir -p $D && chown 4242:4242 $D $D/cgroup.procs $D/cgroup.subtree_control $D/cgroup.threads
mkdir -p $L/out $L/home $L/res && chown 4242:4242 $L/out $L/home $L/res   # the user writes here, root copies
run() {{  # name, isolation
  sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' - $D setpriv --reuid 4242 --regid 4242 --clear-groups \\
    env HOME=$L/home $PY -c "$(cat $S/run.py)" $L/res/$1.json $PY -m grader grade $L/class --out $L/out/$1 \\
    --jobs {jobs} --isolation $2 || echo failed > $S/$1.failed
  cp $L/res/$1.json $S/ 2>/dev/null
}}
for i in $(seq {repeat}); do
  run none-$i none
  run cgroup2-$i cgroup
  run job-$i job
done
"""


def _guest(root: Path, jobs: int, repeat: int) -> dict[str, list[dict]]:
    import json

    with tempfile.TemporaryDirectory() as shared:
        shared = Path(shared)
        shared.chmod(0o755)
        subprocess.run(["cp", "-r", str(root), str(shared / "class")], check=True)
        (shared / "run.py").write_text(GUEST_RUN)
        script = GUEST_SCRIPT.format(repo=shlex.quote(str(guest.ROOT)),
                                     python=shlex.quote(str(guest.VENV / "bin/python")),
                                     shared=shlex.quote(str(shared)), jobs=jobs, repeat=repeat)
        result = guest.boot(script, shared, timeout=7200)
        found: dict[str, list[dict]] = {}
        for level in ("none", "cgroup2", "job"):
            for i in range(1, repeat + 1):
                path = shared / f"{level}-{i}.json"
                if not path.exists():
                    sys.exit(f"the guest's {level} run {i} left no result:\n{result.stdout[-2000:]}\n"
                             f"{result.stderr[-2000:]}")
                found.setdefault(level, []).append(json.loads(path.read_text()))
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-guest", action="store_true")
    args = parser.parse_args()
    since = record.now()
    best = probe().best
    levels = list(dict.fromkeys([best, "job", "none"]))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        tmp.chmod(0o755)
        root = tmp / "class"
        write_class(root, args.students, assignments=[A])
        n = args.students
        print(f"grading {n} notebooks of {A} at each level, {args.repeat} time(s) in turn ...", file=sys.stderr)
        here: dict[str, list[dict]] = {}
        for i in range(args.repeat):
            for level in levels:
                here.setdefault(level, []).append(_here(level, root, tmp / f"{level}-{i}", args.jobs))
        there = {} if args.no_guest or guest.unavailable() else _guest(root, args.jobs, args.repeat)

    def cpu(runs: list[dict]) -> float:
        return statistics.median(r["cpu"] for r in runs) / n

    print(f"\n### `make bench-grading`, the isolation levels: {n} notebooks of {A}, {args.jobs} at a time "
          f"(the job level: one at a time), median of {args.repeat}\n")
    print("| kernel | level | CPU s / notebook | / unsandboxed on the same kernel |")
    print("|---|---|---:|---:|")
    ratios, kernels = {}, []
    for kernel, runs in ((f"this machine ({os.uname().release}, cgroup {'v2' if best == 'cgroup2' else 'v1'})", here),
                         ("guest (cgroup v2, qemu software emulation; a normal user with a delegated subtree)", there)):
        if not runs:
            continue
        kernels.append({"kernel": kernel, "where": kernel.split()[0], "levels": []})
        for level in [lv for lv in runs if lv != "none"] + ["none"]:
            ratio = cpu(runs[level]) / cpu(runs["none"])
            ratios[(kernel.split()[0], level)] = ratio
            kernels[-1]["levels"].append({"level": level, "cpu_per_notebook": cpu(runs[level]), "ratio": ratio})
            print(f"| {kernel} | {level} | {cpu(runs[level]):.2f} | {ratio:.3f} |")
    v1 = ratios.get(("this", "cgroup1"))
    v2 = ratios.get(("guest", "cgroup2"))
    if v1 and v2:
        print(f"\n- the cgroup v2 level's own cost against the cgroup v1 level's (each against the unsandboxed run on "
              f"its kernel): {v2:.3f} / {v1:.3f} = {v2 / v1:.3f} (target <= {TARGET}): "
              f"{'met' if v2 / v1 <= TARGET else 'NOT met'}")
    elif not there:
        print("\n- no cgroup v2 guest here (tests/guest.py: make deps installs qemu and a kernel)")
    record.save("levels", {"assignment": A, "notebooks": n, "jobs": args.jobs, "repeat": args.repeat,
                           "guest": bool(there), "target": TARGET, "kernels": kernels}, since=since)


if __name__ == "__main__":
    main()
