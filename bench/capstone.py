"""The capstone (exercise 7): the main run on several seeds, the page's ablations on more seeds, the page's budget.

    .venv/bin/python bench/capstone.py                  # ~6 min on 2 idle cores
    .venv/bin/python bench/capstone.py --seeds 0 1 2    # the page's seeds only
    .venv/bin/python bench/capstone.py --no-page        # skip executing the page
    .venv/bin/python bench/capstone.py --main-seeds --seeds 0 --no-page   # the two-process row (and seed 0's ablations)
    .venv/bin/python bench/capstone.py --offpolicy-lr-only              # the off-policy arms at lr and lr / 4
    .venv/bin/python bench/capstone.py --no-page --no-offpolicy-lr      # the main runs, two processes, ablations

Prints Markdown: the main run (SFT + GRPO) per seed with wall-clock and CPU seconds and os.getloadavg()
beside each (one torch thread per process: on an idle machine wall = CPU); the rollout worker and the trainer in two
processes for max_staleness 0, 1, 2, 4 side by side (wall clock, throughput against the synchronous run and its
ceiling (t_gen + t_train) / max(t_gen, t_train), and that of the run's steps); the same per-seed tables,
verdicts and cliff table as the page, for the seeds given (the page runs arms.PAGE_SEEDS); the
figures as PNG files; and the page itself executed as the book build executes it, with the CPU seconds of
its kernel and worker processes. Nothing is asserted and nothing is hard-coded: numbers depend on the
machine and on what else runs on it. Each section it runs is also written as a record (bench/record.py), which the
book's benchmarks page draws: bench/results/capstone-main.json, capstone-processes.json, capstone-ablations.json,
capstone-offpolicy-lr.json and capstone-page.json.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import record  # noqa: E402  (bench/record.py: this script's folder is sys.path[0])
import torch  # noqa: E402

from agentrl_ref.agent import (  # noqa: E402
    ABLATION_SPECS, ABLATIONS, EXTRA_SEEDS, NOTEBOOK_SEED, PAGE_SEEDS, run_ablations, run_sft, train,
)
from agentrl_ref.teaching.ex7_agent_grpo import (  # noqa: E402
    ABLATION_ZH, cliff_table, comparison_verdicts, fmt, seed_table,
)
from agentrl_ref.teaching.shared.md_table import markdown_table  # noqa: E402

FIGURES = ROOT / "_build" / "bench"
PAGE = ROOT / "book" / "ex7_agent_grpo.ipynb"
BENCH_SEEDS = tuple(range(6))
ASYNC_TARGET = 1.3  # issue 19: throughput with max_staleness >= 1 over the synchronous run, two processes
PAGE_TARGET_S = 120  # the page executed on 2 idle cores (book/guide_maintainers.md)


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
          "accuracy greedy", "tool calls sampled", "tool calls greedy", "copy rate after SFT", "load avg (1/5/15 min)"]
ALIGN = ["r", "r", "r", "r", "r", "r", "r", "r", "r", ""]


def main_runs(seeds) -> None:
    since = record.now()
    print("#### Main run (SFT 400 steps + GRPO 40 steps, held-out evaluation on 512 problems)\n")
    rows, data = [], []
    for seed in seeds:
        run = train(seed)
        rows.append(run_row(run))
        data.append(main_run_data(run))
    print(markdown_table(HEADER, rows, ALIGN))
    record.save("capstone-main", {"page_seeds": list(PAGE_SEEDS), "runs": data}, since=since)


def main_run_data(run) -> dict:
    """One row of the main-run table, as numbers (the load average when the run ended)."""
    evals = {f"{when}_{mode}": {"accuracy": getattr(run, when)[mode].accuracy,
                                "tool_rate": getattr(run, when)[mode].tool_rate}
             for when in ("before", "after") for mode in ("sampled", "greedy")}
    return {"seed": run.seed, "seconds": dict(run.seconds), "cpu_seconds": dict(run.cpu_seconds),
            "sft_copy_rate": run.sft_copy_rate, "load_after": list(os.getloadavg()), **evals}


def two_processes(seed: int) -> None:
    """measure_throughput on seed's SFT weights: the synchronous run and max_staleness 1, 2, 4, one after another."""
    from agentrl_ref.agent import THROUGHPUT_GRPO, measure_throughput, measure_weight_transfer

    run = run_sft(seed, greedy=False)
    since = record.now()
    before = load()
    real = measure_throughput(run)
    sync = real.sync
    print(f"\n#### Two processes: the rollout worker and the trainer on two cores (seed {seed}, GRPO "
          f"{THROUGHPUT_GRPO.steps} steps of {THROUGHPUT_GRPO.batch_size} trajectories from its SFT weights, one run "
          f"per max_staleness; load average before: {before})\n")
    rows = [[str(ms), f"{r.seconds:.2f} s", f"{r.step_seconds:.3f} s", f"{r.throughput:.0f}",
             f"{real.ratio(ms):.2f}x", f"{real.bound:.2f}x / {real.bound_steps():.2f}x", f"{r.mean_staleness:.2f}",
             fmt(r.trainer_idle),
             "/".join(f"{x:.2f}" for x in r.loadavg)] for ms, r in sorted(real.results.items())]
    print(markdown_table(["max_staleness", "wall", "wall per step", "trajectories / s", "throughput vs sync",
                          "ceiling (t_gen+t_train)/max(...): limit / these steps", "mean staleness",
                          "trainer waiting", "load avg after"], rows,
                         ["r", "r", "r", "r", "r", "r", "r", "r", ""]))
    transfer = measure_weight_transfer(run.policy)
    cpu, wall = transfer["cpu"], transfer["wall"]
    print(f"\nt_gen = {sync.generate_seconds:.3f} CPU s of generation per step, "
          f"t_train = {sync.train_seconds:.3f} CPU s of training and publishing the weights per step, both measured "
          "in the synchronous run. Handing one version of "
          f"the weights ({transfer['bytes'] / 1024:.0f} KiB) to a forked worker that loads it, CPU of both processes: "
          f"shared memory {1000 * cpu['shared memory']:.2f} ms, the state dict through a pipe {1000 * cpu['pipe']:.2f} "
          f"ms; round trip on the wall clock (waking the worker included) {1000 * wall['shared memory']:.2f} ms and "
          f"{1000 * wall['pipe']:.2f} ms (medians of 30, side by side).")
    best = max((ms for ms in real.results if ms), key=real.ratio)
    print(f"\nTarget: some max_staleness >= 1 at least {ASYNC_TARGET}x the synchronous run's throughput on 2 idle "
          f"cores: {real.ratio(best):.2f}x at max_staleness={best} (ceiling {real.bound:.2f}x): "
          f"{'met' if real.ratio(best) >= ASYNC_TARGET else 'not met'} at load average {before} before the runs.")
    record.save("capstone-processes", {
        "seed": seed, "steps": THROUGHPUT_GRPO.steps, "batch_size": THROUGHPUT_GRPO.batch_size,
        "target": ASYNC_TARGET, "bound": real.bound, "bound_steps": real.bound_steps(),
        "t_gen": sync.generate_seconds, "t_train": sync.train_seconds,
        "runs": [{"max_staleness": ms, "seconds": r.seconds, "step_seconds": r.step_seconds,
                  "throughput": r.throughput, "ratio": real.ratio(ms), "mean_staleness": r.mean_staleness,
                  "trainer_idle": r.trainer_idle, "load_after": list(r.loadavg)}
                 for ms, r in sorted(real.results.items())],
        "transfer": {"bytes": transfer["bytes"], "cpu": dict(cpu), "wall": dict(wall)},
    }, since=since)


def ablations(seeds) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.ex7_agent_grpo import plot_cliff, plot_differences, plot_versions

    since = record.now()
    print(f"\n#### Ablations on seeds {', '.join(map(str, seeds))} (each arm: the seed's own SFT, "
          f"then the same short GRPO; load average before: {load()})\n")
    run = run_sft(seeds[0])
    abl = run_ablations(run, seeds=seeds)
    print(f"{len(abl.runs)} arm runs on {abl.processes} processes: wall {abl.wall_seconds:.1f} s, "
          f"CPU {abl.cpu_seconds:.1f} s in all processes, busiest worker {abl.idle_seconds:.1f} s; "
          f"load average after: {load()}\n")
    for name in ABLATIONS:
        print(f"##### {ABLATION_ZH[name]} ({name})\n")
        print(cliff_table(abl) if name == "cliff" else seed_table(abl, name))
        print()
        for verdict in comparison_verdicts(abl, name):
            print(f"- {verdict.text}")
        print()
    FIGURES.mkdir(parents=True, exist_ok=True)
    comparisons = [(n, m, a, b) for n, ab in ABLATIONS.items() for m, a, b in ab.comparisons if m == "accuracy"]
    for label, fig in (("differences", plot_differences(abl, comparisons)), ("versions", plot_versions(abl)),
                       ("cliff", plot_cliff(abl))):
        path = FIGURES / f"capstone-{label}.png"
        fig.savefig(path)
        plt.close(fig)
        print(f"figure: {path.relative_to(ROOT)}")
    record.save("capstone-ablations", {**ablation_data(abl, ABLATIONS), "cliff_table": cliff_table(abl)}, since=since)


def ablation_data(abl, names) -> dict:
    """Every comparison of the ablations `names` as per-seed numbers (arm A's and B's means, the SE of B - A): what
    bench/report.py needs to draw the page's tables, verdicts and difference plot with the course's own functions."""
    return {
        "seeds": list(abl.seeds), "arm_runs": len(abl.runs), "processes": abl.processes,
        "wall_seconds": abl.wall_seconds, "cpu_seconds": abl.cpu_seconds, "busiest_seconds": abl.idle_seconds,
        "ablations": {name: [{"metric": metric, "a": a, "b": b,
                              "seeds": [{"seed": d.seed, "a": d.a, "b": d.b, "se": d.se}
                                        for d in abl.compare(a, b, metric)]}
                             for metric, a, b in ABLATION_SPECS[name].comparisons]
                      for name in names},
    }


def offpolicy_learning_rate(seeds) -> None:
    """The page's hypothesis about the off-policy arms, tested where the page has no time for it: the behaviour ratio
    and the decoupled objective at the page's learning rate and at a quarter of it (ablations "offpolicy" and
    "offpolicy_slow"), on the same seeds and SFT weights. If the decoupled objective lost to the behaviour ratio
    because a large learning rate moves the policy far between versions (not the AReaL paper's regime), it should
    stop losing at the smaller one."""
    from agentrl_ref.teaching.ex7_agent_grpo import decoupled_check, offpolicy_details

    since = record.now()
    print(f"\n#### Off-policy arms at the page's learning rate and at a quarter of it, seeds "
          f"{', '.join(map(str, seeds))} (load average before: {load()})\n")
    run = run_sft(seeds[0])
    abl = run_ablations(run, names=("offpolicy", "offpolicy_slow"), seeds=seeds)
    print(f"{len(abl.runs)} arm runs: wall {abl.wall_seconds:.1f} s, CPU {abl.cpu_seconds:.1f} s; "
          f"load average after: {load()}\n")
    for name in ("offpolicy", "offpolicy_slow"):
        print(f"##### {ABLATION_ZH[name]} ({name})\n\n" + seed_table(abl, name) + "\n")
        for verdict in comparison_verdicts(abl, name):
            print(f"- {verdict.text}")
        print()
    print(offpolicy_details(abl) + "\n")
    for arm in ("stale_decoupled", "stale_decoupled_slow"):
        print(f"- {decoupled_check(abl, arm)}")
    record.save("capstone-offpolicy-lr", {
        **ablation_data(abl, ("offpolicy", "offpolicy_slow")), "details": offpolicy_details(abl),
        "decoupled_checks": [decoupled_check(abl, arm) for arm in ("stale_decoupled", "stale_decoupled_slow")],
    }, since=since)


def page() -> None:
    """Execute the page as the book build does (nbclient, skip-execution honoured); CPU of all its processes."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(PAGE, as_version=4)
    since = record.now()
    before_load = load()
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(PAGE.parent)}}).execute()
    wall = time.perf_counter() - t0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (children.ru_utime - children0.ru_utime) + (children.ru_stime - children0.ru_stime)
    texts = [out.get("text", "") + out.get("data", {}).get("text/markdown", "")
             for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]
    budget = [line for text in texts for line in text.splitlines() if "本页执行" in line]
    print(f"\n#### The page, executed as the book build executes it (target: <= {PAGE_TARGET_S} s on 2 idle cores)\n")
    print(markdown_table(["wall clock", "CPU (kernel + workers, user + system)", "load avg before", "load avg after"],
                         [[f"{wall:.1f} s", f"{cpu:.1f} s", before_load, load()]], ["r", "r", "", ""]))
    for line in budget:
        print(f"\nthe page's own account: {line.strip()}")
    record.save("capstone-page", {"wall_seconds": wall, "cpu_seconds": cpu, "target_seconds": PAGE_TARGET_S,
                                  "page_account": [line.strip() for line in budget]}, since=since)


def main(argv: list[str] | None = None) -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--seeds", type=int, nargs="+", default=list(BENCH_SEEDS), help="seeds of the ablations")
    args.add_argument("--main-seeds", type=int, nargs="*", default=[NOTEBOOK_SEED, *EXTRA_SEEDS])
    args.add_argument("--no-page", action="store_true", help="do not execute the page")
    args.add_argument("--no-processes", action="store_true", help="do not measure the two-process runs")
    args.add_argument("--offpolicy-lr-only", action="store_true",
                      help="only the off-policy arms at the page's learning rate and at a quarter of it")
    args.add_argument("--no-offpolicy-lr", action="store_true",
                      help="without the off-policy arms at the page's learning rate and at a quarter of it")
    opts = args.parse_args(argv)
    if opts.offpolicy_lr_only:
        offpolicy_learning_rate(tuple(opts.seeds))
        return
    print(f"### Capstone (linux {platform.python_version()}, torch {torch.__version__}, {os.cpu_count()} cores, "
          f"1 torch thread per process; wall-clock seconds (CPU seconds); load average before: {load()}; "
          f"the page runs seeds {', '.join(map(str, PAGE_SEEDS))})\n")
    if opts.main_seeds:
        main_runs(opts.main_seeds)
    if not opts.no_processes:
        two_processes(NOTEBOOK_SEED)
    ablations(tuple(opts.seeds))
    if not opts.no_offpolicy_lr:
        offpolicy_learning_rate(tuple(opts.seeds))
    if not opts.no_page:
        page()


if __name__ == "__main__":
    main()
