"""The capstone engine of this commit against another commit's, side by side in one run: `make bench BASE=REV`.

    .venv/bin/python bench/versus.py --base REV [--rounds 3]

The same work, done by each commit's `agentrl_ref` (REV from a git worktree, this venv), one after the other,
round after round (so that whatever else the machine does falls on both alike): the page's main run for seed 0
(`train(0)`: SFT, GRPO with the default settings, the held-out evaluations), in a fresh process with one torch
thread. Each run reports its own CPU seconds (one thread: what the run costs, not what the machine was doing) and
its held-out accuracy after GRPO, which must be the same for both commits (the same work, not merely the same time).
Prints the median of each side and their ratio against the target (a change may cost at most 5%), and writes them
as a record, bench/results/versus.json (bench/record.py).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import record
from worktree import worktree

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.05

# runs in a fresh interpreter with PYTHONPATH set to one tree; prints one JSON line
WORK = """
import json, time, torch
torch.set_num_threads(1)
import agentrl_ref
from agentrl_ref.agent import train
t0 = time.process_time()
run = train(0)
cpu = time.process_time() - t0
print(json.dumps({"file": agentrl_ref.__file__, "cpu": cpu, "accuracy": run.after["sampled"].accuracy}))
"""


def once(tree: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", WORK], cwd=tree, env=env, check=True, capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not Path(result["file"]).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"{tree}: imported {result['file']}, not this tree's agentrl_ref")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    since = record.now()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    runs: dict[str, list[dict]] = {"this": [], "base": []}
    with tempfile.TemporaryDirectory(prefix="agentrl-versus-") as tmp, \
            worktree(ROOT, args.base, Path(tmp) / "base") as tree:
        for r in range(args.rounds):
            for side, where in (("this", ROOT), ("base", tree)) if r % 2 == 0 else (("base", tree), ("this", ROOT)):
                runs[side].append(once(where))
                print(f"  round {r + 1}, {side}: {runs[side][-1]['cpu']:.2f} CPU-s", file=sys.stderr)
    this = statistics.median(x["cpu"] for x in runs["this"])
    base = statistics.median(x["cpu"] for x in runs["base"])
    same = {x["accuracy"] for x in runs["this"] + runs["base"]}
    print(f"### The capstone's main run (train(0): SFT + GRPO + evaluations, 1 torch thread), {args.rounds} rounds, "
          f"load average after {os.getloadavg()[0]:.2f}\n")
    print("| commit | CPU seconds (median) | each round | held-out accuracy after GRPO |")
    print("|---|---:|---|---:|")
    for label, side, median in ((f"this commit ({head})", "this", this), (f"commit {args.base}", "base", base)):
        rounds = ", ".join(f"{x['cpu']:.2f}" for x in runs[side])
        print(f"| {label} | {median:.2f} | {rounds} | {runs[side][0]['accuracy']:.1%} |")
    ratio = this / base
    print(f"\n- this commit / commit {args.base}, CPU: {ratio:.3f} (target <= {TARGET_RATIO}): "
          f"{'met' if ratio <= TARGET_RATIO else 'NOT met'}")
    print(f"- the same work on both (the same held-out accuracy every round): {len(same) == 1}")
    record.save("versus", {
        "head": head, "base": args.base, "rounds": args.rounds, "target_ratio": TARGET_RATIO,
        "sides": {side: [{"cpu": x["cpu"], "accuracy": x["accuracy"]} for x in runs[side]] for side in runs},
    }, since=since)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
