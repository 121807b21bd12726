"""Verdicts computed from per-seed results: what a comparison of two arms over several seeds supports.

    cmp = paired(a_per_seed, b_per_seed)        # per seed: per-problem values of arm A and arm B
    verdict_zh(cmp, "准确率", "也训练", "屏蔽")   # one Chinese sentence, never typed by hand

Both arms of a seed are evaluated on the same held-out problems, so a seed's difference is paired:
its standard error comes from the per-problem differences (evaluation noise only: which problems, which
samples). The spread of the differences across seeds is training noise (initialisation, problem order,
sampling during training) plus that evaluation noise. A verdict needs both: the same sign on every
seed, and each seed's difference beyond its own evaluation noise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

NOISE_Z = 2.0  # "beyond evaluation noise": |difference| > 2 standard errors


@dataclass(frozen=True)
class SeedDiff:
    seed: int
    a: float            # arm A's mean
    b: float            # arm B's mean
    se: float | None    # standard error of b - a from the paired per-problem differences; None: not known

    @property
    def diff(self) -> float:
        return self.b - self.a

    @property
    def beyond_noise(self) -> bool:
        """|b - a| > 2 SE (always True when the SE is unknown: then only the sign is judged)."""
        return self.se is None or abs(self.diff) > NOISE_Z * self.se


def paired_se(a_values, b_values) -> float:
    """Standard error of mean(b) - mean(a) over the same items (sample std of the differences / sqrt(n))."""
    diffs = [b - a for a, b in zip(a_values, b_values, strict=True)]
    n = len(diffs)
    if n < 2:
        return float("nan")
    mean = sum(diffs) / n
    return math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1) / n)


def paired(seeds, a_per_seed, b_per_seed) -> list[SeedDiff]:
    """One SeedDiff per seed from per-problem values (lists) of arm A and arm B, or from plain numbers (SE unknown)."""
    out = []
    for seed, a, b in zip(seeds, a_per_seed, b_per_seed, strict=True):
        if isinstance(a, (int, float)):
            out.append(SeedDiff(seed, float(a), float(b), None))
        else:
            a, b = list(a), list(b)
            out.append(SeedDiff(seed, sum(a) / len(a), sum(b) / len(b), paired_se(a, b)))
    return out


@dataclass(frozen=True)
class Verdict:
    kind: str     # "agree" | "lean" | "noise" | "disagree" | "single" (one seed: no verdict)
    sign: int     # +1: B above A on every seed, -1: below, 0: no common direction
    text: str


def sign_chance(n: int) -> float:
    """Probability that n seeds all point the same way by chance when the arms do not differ (2 / 2^n)."""
    return 2.0 / 2 ** n


def judge(diffs: list[SeedDiff], metric: str, a_label: str, b_label: str, *, unit: str = "pct",
          higher: str = "高", lower: str = "低") -> Verdict:
    """The verdict of arm B against arm A over the seeds in diffs, as one sentence:

    noise     every seed's difference is within its evaluation noise (known SEs only): no difference visible;
    agree     every seed: the same sign and beyond its evaluation noise;
    lean      every seed the same sign, but some within their evaluation noise: a tendency, not a result;
    disagree  the signs differ (or some are exactly 0): no conclusion at this scale.
    """
    n = len(diffs)
    if n == 0:
        raise ValueError("no seeds to judge")
    # quoted, with spaces outside the quotes: a browser may not break a line next to a straight quote, and
    # '是"max_staleness=2"比"max_staleness=0"短' would be one unbreakable run, wider than a phone
    a_label, b_label = f'"{a_label}"', f'"{b_label}"'
    signs = [(d.diff > 0) - (d.diff < 0) for d in diffs]
    beyond = [d.beyond_noise for d in diffs]
    spread = _range(diffs, unit)
    known_se = all(d.se is not None for d in diffs)
    if n == 1:  # e.g. AGENTRL_CAPSTONE_SEEDS=0: a number, not a verdict
        d = diffs[0]
        noise = "" if d.se is None else ("，超出评估噪声" if beyond[0] else "，在评估噪声之内")
        return Verdict("single", signs[0], f"{metric}：只有 1 个种子，{b_label} 与 {a_label} 之差 {spread}{noise}："
                                           "一个种子说明不了训练本身的波动，不下结论。")
    if known_se and not any(beyond):
        return Verdict("noise", 0, f"{metric}：{n} 个种子上 {b_label} 与 {a_label} 之差（{spread}）都在评估噪声"
                                   f"（±{NOISE_Z:g} 个标准误）之内：这个规模上看不出差别。")
    if signs[0] != 0 and all(s == signs[0] for s in signs):
        word = higher if signs[0] > 0 else lower
        if all(beyond):
            noise = "，每个种子的差都超出了它自己的评估噪声" if known_se else ""
            return Verdict("agree", signs[0], f"{metric}：{n} 个种子全部是 {b_label} 比 {a_label} {word}（差 {spread}）"
                                              f"{noise}。")
        inside = sum(not x for x in beyond)
        return Verdict("lean", signs[0], f"{metric}：{n} 个种子都是 {b_label} 比 {a_label} {word}（差 {spread}），"
                                         f"但其中 {inside} 个种子的差在评估噪声之内：是倾向，不是定论。")
    up, down = signs.count(1), signs.count(-1)
    same = n - up - down
    parts = [f"{up} 个种子 {b_label} 更{higher}", f"{down} 个更{lower}"] + ([f"{same} 个相同"] if same else [])
    return Verdict("disagree", 0, f"{metric}：种子之间方向不一致（{'，'.join(parts)}；差 {spread}）："
                                  "这个规模上得不出结论。")


def _number(value: float, unit: str) -> str:
    if unit == "pct":
        return f"{100 * value:+.1f}"
    return f"{value:+.2f}"


UNITS = {"pct": " 个百分点", "s": " 模拟秒", "num": ""}


def _range(diffs: list[SeedDiff], unit: str) -> str:
    """'-10.2 到 -3.7 个百分点' (or one value when all seeds give the same difference)."""
    lo, hi = min(d.diff for d in diffs), max(d.diff for d in diffs)
    low, high = _number(lo, unit), _number(hi, unit)
    text = low if low == high else f"{low} 到 {high}"
    return text + UNITS[unit]
