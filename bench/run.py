"""Side-by-side benchmarks: ours vs a baseline, measured in the same run. `make bench` (not part of `make test`).

    .venv/bin/python bench/run.py

Prints markdown tables and writes them as a record, bench/results/run.json (bench/record.py), which the book's
benchmarks page draws. Numbers depend on the machine; nothing is hard-coded.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import record  # noqa: E402  (bench/record.py: this script's folder is sys.path[0])
import torch  # noqa: E402

from agentrl_ref.teaching.ex2_verifiable_reward.answer_forms import ANSWER_FORMS, compare_verifiers, math_verify_equal  # noqa: E402
from agentrl_ref.format_reward import format_reward  # noqa: E402
from agentrl_ref.loss_mask import (  # noqa: E402
    ASSISTANT_ID, ROLES, build_loss_mask_batched, build_loss_mask_batched_from_spans, role_ids_from_spans,
)
from agentrl_ref.rollout_buffer import AsyncRolloutBuffer  # noqa: E402
from agentrl_ref.token_credit import (  # noqa: E402
    assign_reward_kl_weighted, assign_reward_kl_weighted_batched, assign_reward_last_token,
    assign_reward_last_token_batched, assign_reward_uniform, assign_reward_uniform_batched,
)
from agentrl_ref.verifiable_reward import accuracy_reward  # noqa: E402

ROWS: list[tuple[str, str, float, float, str]] = []  # (benchmark, case, ours s, baseline s, unit)
# the targets the Targets section checks (issue 1's reward functions on degenerate input; the batched parts)
FORMAT_MAX_S = 5e-3       # format_reward on 208 KB of degenerate input
ACCURACY_MAX_S = 5e-3     # accuracy_reward, the worst 200 KB degenerate input
GROWTH_MAX = 8.0          # accuracy_reward time for a 4x longer input (linear ~ 4, quadratic ~ 16)
BATCHED_MIN = 50.0        # batched loss mask / credit against a Python loop that builds the tensor


# Timings are CPU seconds of this thread (time.thread_time), not wall-clock seconds: everything
# measured runs on this one thread (torch.set_num_threads(1) in main), and on a shared machine the
# time other processes hold the core would otherwise be charged to whichever side was running.
# Contention for caches and memory bandwidth still shows; on an idle machine the two clocks agree.
CLOCK = time.thread_time
BEST_OF = 3   # every time is the best of this many measurements


def per_call(fn, *args, min_time: float = 0.05, repeat: int = BEST_OF) -> float:
    """Best-of-`repeat` CPU seconds per call; each measurement runs batches of 1, 2, 4, ... calls
    until min_time has passed (the clock is read once per batch, not once per call)."""
    best = float("inf")
    for _ in range(repeat):
        calls, batch, t0 = 0, 1, CLOCK()
        while True:
            for _ in range(batch):
                fn(*args)
            calls += batch
            elapsed = CLOCK() - t0
            if elapsed >= min_time:
                break
            batch *= 2
        best = min(best, elapsed / calls)
    return best


def per_call_interleaved(fns, min_time: float = 0.05, rounds: int = BEST_OF) -> list[float]:
    """per_call for several functions, measured in turns (a, b, c, a, b, c, ...): on a busy machine
    each one gets the same chance of a quiet moment, so their ratios are not skewed by when they ran."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], per_call(fn, min_time=min_time, repeat=1))
    return best


def once(fn, *args) -> float:
    t0 = CLOCK()
    fn(*args)
    return CLOCK() - t0


def fmt_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def add(benchmark: str, case: str, ours: float, baseline: float, baseline_name: str) -> None:
    ROWS.append((benchmark, case, ours, baseline, baseline_name))
    print(f"  {benchmark:<22} {case:<44} ours {fmt_time(ours):>10}  {baseline_name} {fmt_time(baseline):>10}",
          file=sys.stderr, flush=True)


# 1. format reward vs the seed's backtracking regex ------------------------------------------------

SEED_FORMAT = re.compile(r"^\s*<think>.*?</think>\s*<answer>.*?</answer>\s*$", re.DOTALL)


def seed_format_reward(completion: str) -> float:
    return 1.0 if SEED_FORMAT.match(completion) else 0.0


ORDINARY = [
    "<think>Let me compute 2+3</think><answer>5</answer>",
    "The answer is 5",
    "<answer>5</answer><think>oops</think>",
    "<think>halfway",
    "  <think>x</think>\n\n<answer>y</answer>",
    "<think>\n" + "Step: multiply 23 by 17, carry the one, check again.\n" * 40
    + "</think>\n<answer>\\boxed{391}</answer>\n",
    "<think>a</think><answer>1</answer><think>b</think><answer>2</answer>",
]


def bench_format() -> None:
    for fn in (format_reward, seed_format_reward):  # same verdicts on the ordinary set except the repeated group
        [fn(c) for c in ORDINARY]
    add("format_reward", f"{len(ORDINARY)} ordinary completions (per call)",
        per_call(lambda: [format_reward(c) for c in ORDINARY]) / len(ORDINARY),
        per_call(lambda: [seed_format_reward(c) for c in ORDINARY]) / len(ORDINARY), "seed regex")
    for n in (500, 1000, 2000, 4000, 8000):
        text = "<think>" + "</think><answer></answer>x" * n
        ours = per_call(format_reward, text, min_time=0.02)
        seed = (once(seed_format_reward, text) if n >= 2000
                else per_call(seed_format_reward, text, min_time=0.1, repeat=1))
        add("format_reward", f"degenerate n={n} ({len(text) / 1000:.0f} KB)", ours, seed, "seed regex")


# 2. accuracy reward vs math-verify ----------------------------------------------------------------

# More shapes (nested braces, "1" + ",000" * 50_000 + "x", ...) are timed in tests/test_verifiable_reward.py;
# here each row also runs math-verify once, which stops at its 5 s timeout on several of them.
DEGENERATE_ACC = {
    "\\boxed{ x 28600": "\\boxed{" * 28_600,
    "\\boxed{ + 200K chars of text": "\\boxed{" + "x" * 200_000,
    "\\boxed{ + {} x 100000": "\\boxed{" + "{}" * 100_000,
    "\\boxed{ + ({} + emoji) x 66666": "\\boxed{" + "{}\U0001F600" * 66_666,
    "\\boxed{ + ({} + lone surrogate) x 66666 + }": "\\boxed{" + "{}\ud800" * 66_666 + "}",
    "\\boxed{ + 200K digits + }": "\\boxed{" + "1" * 200_000 + "}",
    "\\boxed{ + 200K digits + x}": "\\boxed{" + "1" * 199_999 + "x}",
    "\\boxed{ + '1 ' x 100000 + }": "\\boxed{" + "1 " * 100_000 + "}",
}


def bench_accuracy() -> list:
    math_verify_equal("\\boxed{1}", "1")  # import sympy/antlr and warm the caches outside the timings
    pairs = [(r.completion, r.gold) for r in ANSWER_FORMS]  # > 20 distinct: math-verify's lru_cache(20) misses
    add("accuracy_reward", f"answer-forms table, {len(pairs)} rows (per call)",
        per_call(lambda: [accuracy_reward(c, g) for c, g in pairs], min_time=0.1) / len(pairs),
        once(lambda: [math_verify_equal(c, g) for c, g in pairs]) / len(pairs), "math-verify")
    for name, text in DEGENERATE_ACC.items():
        add("accuracy_reward", f"200 KB degenerate: {name}", per_call(accuracy_reward, text, "5", min_time=0.02),
            once(math_verify_equal, text, "5"), "math-verify")
    return compare_verifiers()


GROWTH_UNITS = ("{}", "1,000", "x{")


def bench_growth(n: int = 20_000) -> list[tuple[str, float]]:
    """(unit, time at 4n / time at n) for accuracy_reward on \\boxed{ + unit * size: ~4 linear, ~16 quadratic."""
    out = []
    for unit in GROWTH_UNITS:
        short, long = "\\boxed{" + unit * n, "\\boxed{" + unit * (4 * n)
        small, large = per_call_interleaved([lambda: accuracy_reward(short, "5"), lambda: accuracy_reward(long, "5")])
        out.append((unit, large / small))
    return out


# 3. batched loss mask and credit assignment vs per-sample loops ----------------------------------
#
# Every batched function is compared with three loops over the B samples, all measured here:
#   LOOP_TENSOR  the per-sample Python loop over tokens (the seed's build_loss_mask; the credit rules
#                written position by position), inputs already Python lists (not timed), output
#                turned into the [B, T] tensor a trainer consumes with torch.tensor (the Targets
#                section reports which share of its time that call takes);
#   LOOP_LISTS   the same Python loop alone, lists in and lists out (no tensor: not a drop-in);
#   ROW_TORCH    a Python loop over rows making a few torch calls per row (our per-sample functions,
#                or role_ids_from_spans / == ASSISTANT_ID for the mask).
# The batched side starts from the same input: spans, or a role-id / mask tensor.

LOOP_TENSOR, LOOP_LISTS, ROW_TORCH = "Python loop → torch.tensor", "Python loop, lists only", "per-row torch loop"


def seed_build_loss_mask(token_ids, role_spans):
    """The seed page's answer: one Python loop per token."""
    mask = [0] * len(token_ids)
    for role, start, end in role_spans:
        if role == "assistant":
            for i in range(start, end):
                mask[i] = 1
    return mask


def random_spans(rng: random.Random, n_tokens: int) -> list[tuple[str, int, int]]:
    cuts = sorted(rng.sample(range(1, n_tokens), 15))
    bounds = [0, *cuts, n_tokens]
    return [(rng.choice(ROLES), a, b) for a, b in zip(bounds, bounds[1:])]


def python_mask_from_role_ids(role_ids):
    return [1 if r == ASSISTANT_ID else 0 for r in role_ids]


def python_last_token(seq_reward, mask):
    out = [0.0] * len(mask)
    for t in range(len(mask) - 1, -1, -1):  # from the end: stops at the last 1
        if mask[t]:
            out[t] = seq_reward
            break
    return out


def python_uniform(seq_reward, mask):
    n = sum(mask)
    return [seq_reward / n if m else 0.0 for m in mask] if n else [0.0] * len(mask)


def python_kl_weighted(seq_reward, mask, kl):
    masked = [k * m for k, m in zip(kl, mask)]
    total = sum(masked)
    if total < 1e-8:
        return python_uniform(seq_reward, mask)
    return [seq_reward * k / total for k in masked]


def compare_batched(benchmark: str, case: str, ours, loop_lists, to_tensor, row_torch) -> None:
    """One row per baseline; all four give the same [B, T] values (checked first)."""
    want = ours()
    for got in (to_tensor(loop_lists()), row_torch()):
        assert got.shape == want.shape and torch.allclose(got.to(want.dtype), want, rtol=1e-5, atol=1e-6), benchmark
    ours_s, *baselines = per_call_interleaved([ours, lambda: to_tensor(loop_lists()), loop_lists, row_torch])
    for name, seconds in zip((LOOP_TENSOR, LOOP_LISTS, ROW_TORCH), baselines):
        add(benchmark, f"{case}: batched vs {name}", ours_s, seconds, name)


def bench_batched(batch: int = 64, n_tokens: int = 8192) -> None:
    rng = random.Random(0)
    torch.manual_seed(0)
    size = f"B={batch}, T={n_tokens}"
    spans = [random_spans(rng, n_tokens) for _ in range(batch)]
    ids = list(range(n_tokens))
    compare_batched(
        "loss mask", f"{size}, from (role, start, end) spans",
        lambda: build_loss_mask_batched_from_spans(n_tokens, spans),
        lambda: [seed_build_loss_mask(ids, s) for s in spans], torch.tensor,
        lambda: torch.stack([(role_ids_from_spans(n_tokens, s) == ASSISTANT_ID).long() for s in spans]))

    role_ids = torch.stack([role_ids_from_spans(n_tokens, s) for s in spans])
    role_lists = role_ids.tolist()
    compare_batched(
        "loss mask", f"{size}, from per-token role ids",
        lambda: build_loss_mask_batched(role_ids),
        lambda: [python_mask_from_role_ids(row) for row in role_lists], torch.tensor,
        lambda: torch.stack([(row == ASSISTANT_ID).long() for row in role_ids]))

    mask = build_loss_mask_batched(role_ids)
    rewards, kl = torch.randn(batch), torch.rand(batch, n_tokens)
    mask_lists, kl_lists, reward_list = mask.tolist(), kl.tolist(), rewards.tolist()
    as_tensor = lambda rows: torch.tensor(rows, dtype=torch.float32)  # noqa: E731
    compare_batched(
        "credit: last_token", size, lambda: assign_reward_last_token_batched(rewards, mask),
        lambda: [python_last_token(r, m) for r, m in zip(reward_list, mask_lists)], as_tensor,
        lambda: torch.stack([assign_reward_last_token(r, m) for r, m in zip(rewards, mask)]))
    compare_batched(
        "credit: uniform", size, lambda: assign_reward_uniform_batched(rewards, mask),
        lambda: [python_uniform(r, m) for r, m in zip(reward_list, mask_lists)], as_tensor,
        lambda: torch.stack([assign_reward_uniform(r, m) for r, m in zip(rewards, mask)]))
    compare_batched(
        "credit: kl_weighted", size, lambda: assign_reward_kl_weighted_batched(rewards, mask, kl),
        lambda: [python_kl_weighted(r, m, k) for r, m, k in zip(reward_list, mask_lists, kl_lists)], as_tensor,
        lambda: torch.stack([assign_reward_kl_weighted(r, m, k) for r, m, k in zip(rewards, mask, kl)]))


# 4. rollout buffer vs asyncio.Queue ---------------------------------------------------------------

async def through_buffer(n: int, batch_size: int) -> None:
    buf = AsyncRolloutBuffer(batch_size, max_capacity=n)

    async def producer():
        for i in range(n):
            await buf.put(i)

    async def consumer():
        for _ in range(n // batch_size):
            await buf.get_batch()

    await asyncio.gather(producer(), consumer())
    assert len(buf) == 0 and buf.dropped == 0


async def through_queue(n: int, batch_size: int) -> None:
    queue: asyncio.Queue = asyncio.Queue()

    async def producer():
        for i in range(n):
            await queue.put(i)

    async def consumer():
        for _ in range(n // batch_size):
            [await queue.get() for _ in range(batch_size)]

    await asyncio.gather(producer(), consumer())
    assert queue.empty()


def bench_buffer(n: int = 128_000) -> None:
    for batch_size in (8, 64, 512):
        ours = min(once(asyncio.run, through_buffer(n, batch_size)) for _ in range(BEST_OF)) / n
        queue = min(once(asyncio.run, through_queue(n, batch_size)) for _ in range(BEST_OF)) / n
        add("rollout buffer", f"{n} trajectories, batch {batch_size} (per trajectory)", ours, queue, "asyncio.Queue")


# report ---------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    since = record.now()
    # One torch thread: the loops it is compared with are single-threaded, and on a small shared
    # machine OpenMP threads that wait for a busy core turn sub-ms kernels into ~8 ms ones.
    torch.set_num_threads(1)
    logging.disable(logging.WARNING)  # math-verify logs a warning per timeout; timings are what we report
    t_start = time.perf_counter()
    print("running (progress on stderr) ...", file=sys.stderr)
    bench_format()
    comparison = bench_accuracy()
    growth = bench_growth()
    bench_batched()
    bench_buffer()

    print(f"\n## Benchmarks ({sys.platform}, Python {sys.version.split()[0]}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch thread(s); times are CPU time of the one benchmarking thread, "
          f"best of {BEST_OF})\n")
    print("| benchmark | case | ours | baseline | baseline time | baseline / ours |")
    print("|---|---|---:|---|---:|---:|")
    for benchmark, case, ours, baseline, name in ROWS:
        print(f"| {benchmark} | {case} | {fmt_time(ours)} | {name} | {fmt_time(baseline)} | {baseline / ours:,.1f}× |")

    n = len(comparison)
    print(f"\n## Verdicts on the answer-forms table ({n} rows, human verdict = reference)\n")
    print("| verifier | agrees with human | false negatives | false positives | mean time per call |")
    print("|---|---:|---:|---:|---:|")
    for name, eq, ok, sec in (("toy accuracy_reward", "toy_equal", "toy_ok", "toy_seconds"),
                              ("math-verify 0.9.0", "math_verify_equal", "math_verify_ok", "math_verify_seconds")):
        fn = sum(r.expected_equal and not getattr(r, eq) for r in comparison)
        fp = sum(getattr(r, eq) and not r.expected_equal for r in comparison)
        agree = sum(getattr(r, ok) for r in comparison)
        mean_time = fmt_time(statistics.mean(getattr(r, sec) for r in comparison))
        print(f"| {name} | {agree}/{n} | {fn} | {fp} | {mean_time} |")
    wrong_mv = [r for r in comparison if not r.math_verify_ok]
    print("\nmath-verify differs from the human verdict on: " +
          "; ".join(f"`{r.completion!r}` vs `{r.gold}` ({r.note})" for r in wrong_mv))

    format_200k = next(o for b, c, o, _, _ in ROWS if b == "format_reward" and "n=8000" in c)
    acc_200k, acc_case = max((o, c) for b, c, o, _, _ in ROWS if b == "accuracy_reward" and "200 KB" in c)

    def ratios(baseline_name: str) -> list[float]:
        return [base / o for b, _, o, base, name in ROWS
                if b.startswith(("loss mask", "credit")) and name == baseline_name]

    def label(benchmark: str, case: str) -> str:  # "loss mask (from spans ...)": two loss-mask rows per baseline
        return f"{benchmark} ({case.split(', ', 2)[2].split(':')[0]})" if benchmark == "loss mask" else benchmark

    below_50 = [f"{label(b, c)} {base / o:.1f}×" for b, c, o, base, name in ROWS
                if name == LOOP_TENSOR and base / o < BATCHED_MIN]

    def span(values: list[float]) -> str:
        return f"{min(values):,.1f}× .. {max(values):,.1f}×"

    to_tensor, lists_only, row_torch = ratios(LOOP_TENSOR), ratios(LOOP_LISTS), ratios(ROW_TORCH)
    print("\n## Targets\n")
    print(f"- format_reward on 208 KB degenerate input: {fmt_time(format_200k)} (target < 5 ms): "
          f"{'met' if format_200k < FORMAT_MAX_S else 'NOT met'}")
    print(f"- accuracy_reward, worst of {len(DEGENERATE_ACC)} 200 KB degenerate inputs ({acc_case.split(': ')[1]}): "
          f"{fmt_time(acc_200k)} (target < 5 ms): {'met' if acc_200k < ACCURACY_MAX_S else 'NOT met'}")
    print("- accuracy_reward time for a 4x longer degenerate input (linear ≈ 4×, quadratic ≈ 16×; target < 8×): " +
          ", ".join(f"`\\boxed{{` + `{unit}` × n: {ratio:.1f}×" for unit, ratio in growth) +
          f": {'met' if max(r for _, r in growth) < GROWTH_MAX else 'NOT met'}")
    print(f"- batched loss mask / credit vs per-sample Python loops that return the [B, T] tensor "
          f"({len(to_tensor)} rows): {span(to_tensor)} (target >= 50×): "
          f"{'met by every row' if not below_50 else 'NOT met by ' + ', '.join(below_50)}")
    baseline_of = {(b, c.split(": batched vs ")[0], name): base for b, c, _, base, name in ROWS}
    tensor_share = [1 - baseline_of[(b, c, LOOP_LISTS)] / base for (b, c, name), base in baseline_of.items()
                    if name == LOOP_TENSOR]
    print(f"- the same Python loops without building the tensor (lists only, not a drop-in): {span(lists_only)}: "
          f"{'also >= 50×' if min(lists_only) >= BATCHED_MIN else 'below 50× there'}; "
          f"torch.tensor(list of lists) takes {min(tensor_share):.0%} .. {max(tensor_share):.0%} "
          "of the first baseline's time")
    print(f"- batched vs a Python loop over rows of torch calls: {span(row_torch)}")
    print(f"\n(total bench time {time.perf_counter() - t_start:.0f} s)")
    record.save("run", record_data(ROWS, comparison, growth), since=since)


def record_data(rows, comparison, growth) -> dict:
    """What this run printed, as numbers: bench/results/run.json (bench/report.py draws the page from it)."""
    verifiers = []
    for name, eq, ok, sec in (("toy accuracy_reward", "toy_equal", "toy_ok", "toy_seconds"),
                              ("math-verify", "math_verify_equal", "math_verify_ok", "math_verify_seconds")):
        verifiers.append({
            "verifier": name, "agree": sum(getattr(r, ok) for r in comparison), "rows": len(comparison),
            "false_negatives": sum(r.expected_equal and not getattr(r, eq) for r in comparison),
            "false_positives": sum(getattr(r, eq) and not r.expected_equal for r in comparison),
            "mean_seconds": statistics.mean(getattr(r, sec) for r in comparison)})
    return {
        "torch_threads": torch.get_num_threads(), "best_of": BEST_OF, "math_verify": record._version("math-verify"),
        # n: the repetitions of a degenerate format_reward input ("degenerate n=500 (13 KB)")
        "rows": [{"benchmark": b, "case": c, "ours_s": o, "baseline": name, "baseline_s": base,
                  **({"n": int(m.group(1))} if (m := re.search(r"\bn=(\d+)", c)) else {})}
                 for b, c, o, base, name in rows],
        "verifiers": verifiers,
        "math_verify_differs": [{"completion": r.completion, "gold": r.gold, "note": r.note}
                                for r in comparison if not r.math_verify_ok],
        "growth": [{"unit": unit, "ratio": ratio} for unit, ratio in growth],
        "targets": {"format_max_s": FORMAT_MAX_S, "accuracy_max_s": ACCURACY_MAX_S, "growth_max": GROWTH_MAX,
                    "batched_min": BATCHED_MIN},
        "baselines": {"tensor": LOOP_TENSOR, "lists": LOOP_LISTS, "row_torch": ROW_TORCH},
    }


if __name__ == "__main__":
    main()
