"""The capstone (exercise 7) end to end: SFT + GRPO with the notebook's seed, then three more seeds.

    .venv/bin/python bench/capstone.py                 # ~2.5 min on 2 idle cores
    .venv/bin/python bench/capstone.py --no-ablations  # skip the notebook's ablations

Prints Markdown: times (wall clock, with the process's CPU time in parentheses and os.getloadavg()
beside each: everything runs on one torch thread, so on an idle machine wall = CPU), held-out accuracy and tool-call
rate sampled at temperature 1 and greedy, before and after GRPO, the copy rate after SFT, the
notebook's whole budget (training + evaluation + ablations + figures), and the extra seeds. Nothing is
asserted and nothing is hard-coded: numbers depend on the machine and on what else runs on it.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from agentrl_ref.agent import EXTRA_SEEDS, NOTEBOOK_SEED, train  # noqa: E402
from agentrl_ref.agent.tables import fmt  # noqa: E402
from agentrl_ref.teaching.md_table import markdown_table  # noqa: E402


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def run_row(run) -> list[str]:
    b, a = run.before, run.after
    s, c = run.seconds, run.cpu_seconds
    return [str(run.seed), f"{s['sft']:.1f} s ({c['sft']:.1f})", f"{s['grpo']:.1f} s ({c['grpo']:.1f})",
            f"{s['sft'] + s['grpo']:.1f} s ({c['sft'] + c['grpo']:.1f})",
            f"{fmt(b['sampled'].accuracy)} → {fmt(a['sampled'].accuracy)}",
            f"{fmt(b['greedy'].accuracy)} → {fmt(a['greedy'].accuracy)}",
            f"{fmt(b['sampled'].tool_rate)} → {fmt(a['sampled'].tool_rate)}",
            f"{fmt(b['greedy'].tool_rate)} → {fmt(a['greedy'].tool_rate)}",
            fmt(run.sft_copy_rate), load()]


HEADER = ["seed", "SFT wall (CPU)", "GRPO wall (CPU)", "SFT + GRPO wall (CPU)", "accuracy sampled (T=1)",
          "accuracy greedy",
          "tool calls sampled", "tool calls greedy", "copy rate after SFT", "load avg (1/5/15 min)"]
ALIGN = ["r", "r", "r", "r", "r", "r", "r", "r", "r", ""]


def notebook_extras(run) -> tuple[float, float, str]:
    """What the notebook runs after train(): ablations, tables, figures. Returns (seconds, CPU seconds, load)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentrl_ref.agent import (ablation_table, before_after_table, episode_html, plot_ablations, plot_schedule,
                                   plot_training_curves, run_ablations)

    t0, c0 = time.perf_counter(), time.process_time()
    results = run_ablations(run)
    before_after_table(run)
    table = ablation_table(results)
    episode_html(next(e for e in run.after["sampled"].episodes if e.tool_calls))
    for fig in (plot_training_curves(run.grpo_result), plot_ablations(results), plot_schedule(results["staleness"])):
        fig.canvas.draw()
        plt.close(fig)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"\n#### Ablations (from the SFT weights of seed {run.seed})\n")
    print(table)
    return seconds, cpu, load()


def main(argv: list[str] | None = None) -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--no-ablations", action="store_true", help="skip the notebook's ablations and figures")
    args.add_argument("--extra-seeds", type=int, nargs="*", default=list(EXTRA_SEEDS))
    opts = args.parse_args(argv)

    print(f"### Capstone (linux {platform.python_version()}, torch {torch.__version__}, {os.cpu_count()} cores, "
          f"1 torch thread; wall-clock seconds (CPU seconds); load average before: {load()})\n")
    t0, c0 = time.perf_counter(), time.process_time()
    run = train(NOTEBOOK_SEED)
    main_seconds, main_cpu = time.perf_counter() - t0, time.process_time() - c0
    rows = [run_row(run)]
    print(markdown_table(HEADER, rows, ALIGN))
    budget = [["train(seed) incl. 4 held-out evaluations", f"{main_seconds:.1f} s", f"{main_cpu:.1f} s", load()]]
    if not opts.no_ablations:
        extra, extra_cpu, extra_load = notebook_extras(run)
        budget += [["ablations + tables + figures", f"{extra:.1f} s", f"{extra_cpu:.1f} s", extra_load],
                   ["notebook total", f"{main_seconds + extra:.1f} s", f"{main_cpu + extra_cpu:.1f} s", extra_load]]
    print("\n#### Notebook budget (target: SFT <= 20 s, SFT + GRPO <= 45 s, notebook <= 90 s)\n")
    print(markdown_table(["part", "wall time", "CPU time", "load avg (1/5/15 min)"], budget, ["", "r", "r", ""]))

    if opts.extra_seeds:
        extra_rows = [run_row(train(seed)) for seed in opts.extra_seeds]
        print("\n#### Other seeds (same settings)\n")
        print(markdown_table(HEADER, extra_rows, ALIGN))
        finals = ", ".join(f"seed {r[0]}: {r[4].split(' → ')[1]}" for r in extra_rows)
        print(f"\nfinal sampled accuracy of the extra seeds: {finals}")


if __name__ == "__main__":
    main()
