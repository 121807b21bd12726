"""What a comparison of two arms over several seeds supports: per-seed differences and the paired t-test across seeds.

    cmp = paired(seeds, a_per_seed, b_per_seed)   # per seed: per-problem values of arm A and arm B
    test = across_seeds(cmp)                      # mean difference, its standard error, t and p
    (teaching/ex7_agent_grpo/verdicts.py makes a SeedVerdict of them: its kind and one Chinese sentence, never typed)

Two kinds of noise are in a seed's difference b - a:
- evaluation noise: which held-out problems, which samples. Both arms of a seed are evaluated on the same problems,
  so its standard error comes from the per-problem differences (paired_se), or from the two samples when the values
  do not pair up (unpaired_se);
- training noise: initialisation, problem order, sampling during training. It shows only as the spread of the
  differences across seeds.

The rule accounts for both. The mean difference over the seeds is compared with its standard error across seeds, a
paired t-test on the per-seed differences (n - 1 degrees of freedom). That standard error is the spread of the
differences / sqrt(n), but never less than what the evaluation noise alone gives (sqrt(sum se_i^2) / n): with three
seeds a spread can be small by luck. Outcomes (SeedVerdict.kind):

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
