"""Verdicts computed from per-seed results: what a comparison of two arms over several seeds supports.

    cmp = paired(seeds, a_per_seed, b_per_seed)   # per seed: per-problem values of arm A and arm B
    judge(cmp, "准确率", "屏蔽", "也训练")          # a Verdict: its kind and one Chinese sentence, never typed by hand

Two kinds of noise are in a seed's difference b - a:
- evaluation noise: which held-out problems, which samples. Both arms of a seed are evaluated on the same problems,
  so its standard error comes from the per-problem differences (paired_se), or from the two samples when the values
  do not pair up (unpaired_se);
- training noise: initialisation, problem order, sampling during training. It shows only as the spread of the
  differences across seeds.

The rule accounts for both. The mean difference over the seeds is compared with its standard error across seeds, a
paired t-test on the per-seed differences (n - 1 degrees of freedom). That standard error is the spread of the
differences / sqrt(n), but never less than what the evaluation noise alone gives (sqrt(sum se_i^2) / n): with three
seeds a spread can be small by luck. Outcomes (Verdict.kind):

    agree     the mean beyond its standard error (two-sided p < ALPHA): a result (the sentence says how many seeds
              point the other way, if any);
    lean      every seed the same sign, the mean within it: a tendency, not a result (with no difference at all,
              n seeds point the same way with probability 2 / 2^n: sign_chance);
    noise     every seed's difference within its own evaluation noise (2 SE): no difference visible;
    disagree  the seeds point different ways (or some differences are 0): no conclusion;
    no_se     some seed's difference has no standard error: the numbers are shown, no verdict is given;
    single    one seed: a number, no verdict.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

NOISE_Z = 2.0  # "within evaluation noise": |difference| <= 2 standard errors
ALPHA = 0.05   # two-sided level of the paired t-test across seeds


@dataclass(frozen=True)
class SeedDiff:
    seed: int
    a: float            # arm A's mean
    b: float            # arm B's mean
    se: float | None    # standard error of b - a from the evaluation (paired or not); None: not known

    @property
    def diff(self) -> float:
        return self.b - self.a

    @property
    def beyond_noise(self) -> bool:
        """|b - a| > 2 SE; ValueError when the SE is unknown (nothing can be said then)."""
        if self.se is None:
            raise ValueError(f"seed {self.seed}: no standard error, so no judgement against the evaluation noise")
        return abs(self.diff) > NOISE_Z * self.se


def paired_se(a_values, b_values) -> float:
    """Standard error of mean(b) - mean(a) over the same items (sample std of the differences / sqrt(n))."""
    diffs = [b - a for a, b in zip(a_values, b_values, strict=True)]
    n = len(diffs)
    if n < 2:
        return float("nan")
    mean = sum(diffs) / n
    return math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1) / n)


def unpaired_se(a_values, b_values) -> float:
    """Standard error of mean(b) - mean(a) for two independent samples (Welch: sqrt(var_a / n_a + var_b / n_b))."""
    def part(values):
        values = list(values)
        n = len(values)
        if n < 2:
            return float("nan")
        mean = sum(values) / n
        return sum((v - mean) ** 2 for v in values) / (n - 1) / n

    return math.sqrt(part(a_values) + part(b_values))


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


def unpaired(seeds, a_per_seed, b_per_seed) -> list[SeedDiff]:
    """One SeedDiff per seed from two independent samples per seed (e.g. the correct answers of each arm)."""
    out = []
    for seed, a, b in zip(seeds, a_per_seed, b_per_seed, strict=True):
        a, b = list(a), list(b)
        mean_a = sum(a) / len(a) if a else float("nan")
        mean_b = sum(b) / len(b) if b else float("nan")
        se = unpaired_se(a, b)
        out.append(SeedDiff(seed, mean_a, mean_b, None if math.isnan(se) else se))
    return out


def sign_chance(n: int) -> float:
    """Probability that n seeds all point the same way by chance when the arms do not differ (2 / 2^n)."""
    return 2.0 / 2 ** n


# --- Student's t distribution (no scipy in the course's environment) -------------------------------

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes 6.4)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if math.isinf(t):
        return 0.0
    return _betainc(df / 2.0, 0.5, df / (df + t * t))


def t_critical(df: int, alpha: float = ALPHA) -> float:
    """|t| at which the two-sided p-value is alpha (bisection on t_two_sided_p)."""
    lo, hi = 0.0, 1e4
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_two_sided_p(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True)
class AcrossSeeds:
    """The mean of the per-seed differences, its standard error across seeds, the paired t statistic and p-value."""

    n: int
    mean: float
    se: float        # max(spread / sqrt(n), sqrt(sum se_i^2) / n)
    t: float
    p: float


def across_seeds(diffs: list[SeedDiff]) -> AcrossSeeds:
    """The paired t-test of the mean difference against 0 over the seeds (needs n >= 2 and every SE known)."""
    n = len(diffs)
    if n < 2:
        raise ValueError("a test across seeds needs at least 2 seeds")
    if any(d.se is None for d in diffs):
        raise ValueError("every seed's difference needs a standard error")
    values = [d.diff for d in diffs]
    mean = sum(values) / n
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    se = max(spread / math.sqrt(n), math.sqrt(sum(d.se ** 2 for d in diffs)) / n)
    if se == 0.0:
        t = 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
    else:
        t = mean / se
    return AcrossSeeds(n, mean, se, t, t_two_sided_p(t, n - 1))


@dataclass(frozen=True)
class Verdict:
    kind: str     # "agree" | "lean" | "noise" | "disagree" | "no_se" | "single"
    sign: int     # +1: B above A on every seed, -1: below, 0: no common direction
    text: str
    test: AcrossSeeds | None = None


def _p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def judge(diffs: list[SeedDiff], metric: str, a_label: str, b_label: str, *, unit: str = "pct",
          higher: str = "高", lower: str = "低") -> Verdict:
    """The verdict of arm B against arm A over the seeds in diffs, as one sentence (the kinds: see the module)."""
    n = len(diffs)
    if n == 0:
        raise ValueError("no seeds to judge")
    # quoted, with spaces outside the quotes: a browser may not break a line next to a straight quote, and
    # '是"max_staleness=2"比"max_staleness=0"短' would be one unbreakable run, wider than a phone
    a_label, b_label = f'"{a_label}"', f'"{b_label}"'
    signs = [(d.diff > 0) - (d.diff < 0) for d in diffs]
    spread = _range(diffs, unit)
    if any(d.se is None for d in diffs):
        return Verdict("no_se", 0, f"{metric}：{b_label} 与 {a_label} 之差 {spread}；这个量没有标准误，"
                                   "不知道评估噪声有多大，所以只列出数字，不下判断。")
    if n == 1:  # e.g. AGENTRL_CAPSTONE_SEEDS=0: a number, not a verdict
        d = diffs[0]
        noise = "，超出评估噪声" if d.beyond_noise else "，在评估噪声之内"
        return Verdict("single", signs[0], f"{metric}：只有 1 个种子，{b_label} 与 {a_label} 之差 {spread}{noise}："
                                           "一个种子说明不了训练本身的波动，不下结论。")
    test = across_seeds(diffs)
    mean = f"平均 {_number(test.mean, unit)} ± {_number(NOISE_Z * test.se, unit, signed=False)}{UNITS[unit]}"
    same = signs[0] != 0 and all(s == signs[0] for s in signs)
    if test.p < ALPHA and test.mean != 0:
        sign = 1 if test.mean > 0 else -1
        word = higher if sign > 0 else lower
        along = signs.count(sign)
        who = (f"{n} 个种子全部是 {b_label} 比 {a_label} {word}" if along == n else
               f"{n} 个种子里 {along} 个是 {b_label} 比 {a_label} {word}，{n - along} 个不是")
        return Verdict("agree", sign, f"{metric}：{who}（差 {spread}，{mean}），平均差超出了种子之间的波动"
                                      f"（配对 t 检验，{_p_text(test.p)}）。", test)
    if all(not d.beyond_noise for d in diffs):
        if all(d.diff == 0 for d in diffs):
            return Verdict("noise", 0, f"{metric}：{n} 个种子上 {b_label} 与 {a_label} 的结果完全相同。", test)
        return Verdict("noise", 0, f"{metric}：{n} 个种子上 {b_label} 与 {a_label} 之差（{spread}）都在评估噪声"
                                   f"（±{NOISE_Z:g} 个标准误）之内：这个规模上看不出差别。", test)
    if same:
        word = higher if signs[0] > 0 else lower
        return Verdict("lean", signs[0], f"{metric}：{n} 个种子都是 {b_label} 比 {a_label} {word}（差 {spread}，"
                                         f"{mean}），但平均差没有超出种子之间的波动（配对 t 检验，{_p_text(test.p)}；"
                                         f"两臂毫无差别时，{n} 个种子方向碰巧一致的概率也有 {sign_chance(n):.0%}）："
                                         "是倾向，不是定论。", test)
    up, down = signs.count(1), signs.count(-1)
    zero = n - up - down
    parts = [f"{up} 个种子 {b_label} 更{higher}", f"{down} 个更{lower}"] + ([f"{zero} 个相同"] if zero else [])
    return Verdict("disagree", 0, f"{metric}：种子之间方向不一致（{'，'.join(parts)}；差 {spread}）："
                                  "这个规模上得不出结论。", test)


def _number(value: float, unit: str, signed: bool = True) -> str:
    sign = "+" if signed else ""
    if unit == "pct":
        return f"{100 * value:{sign}.1f}"
    return f"{value:{sign}.2f}"


UNITS = {"pct": " 个百分点", "s": " 模拟秒", "num": ""}


def _range(diffs: list[SeedDiff], unit: str) -> str:
    """'-10.2 到 -3.7 个百分点' (or one value when all seeds give the same difference)."""
    lo, hi = min(d.diff for d in diffs), max(d.diff for d in diffs)
    low, high = _number(lo, unit), _number(hi, unit)
    text = low if low == high else f"{low} 到 {high}"
    return text + UNITS[unit]
