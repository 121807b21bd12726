"""Exercise 11's figures, drawn from the study (agent/dapo_arms.py): each seed a thin line, the mean over seeds thick.

    plot_clip(study)       entropy on the trained tokens per step, and the share cut at the upper bound, per arm
    plot_sampling(study)   informative groups trained per step, and accuracy of the samples drawn against the samples
                           drawn so far (the cost of dynamic sampling; the mean per bin of BIN samples)
"""
from __future__ import annotations

import math

from agentrl_ref.agent.dapo_arms import ARM_LABELS, DAPOStudy
from agentrl_ref.teaching.shared.cjk import zh

COLORS = {"symmetric": "tab:blue", "clip_higher": "tab:orange", "dynamic": "tab:green"}
ENGLISH = {"symmetric": "symmetric clip 0.2/0.2", "clip_higher": "clip-higher 0.2/0.28",
           "dynamic": "clip-higher + dynamic sampling"}
BIN = 256  # samples per bin of the right panel of plot_sampling


def _label(arm: str) -> str:
    return zh(ARM_LABELS[arm], ENGLISH[arm])


def _per_step(study: DAPOStudy, arm: str, key: str, x_key: str = "step"):
    """Per seed (xs, ys), and the mean over the seeds at each step all seeds reached (NaN left out)."""
    lines = [([row[x_key] + (1 if x_key == "step" else 0) for row in r.history], [row[key] for row in r.history])
             for r in study.runs_of(arm)]
    steps = min(len(ys) for _, ys in lines)
    mean = []
    for k in range(steps):
        values = [ys[k] for _, ys in lines if not math.isnan(ys[k])]
        mean.append(sum(values) / len(values) if values else float("nan"))
    return lines, list(range(1, steps + 1)), mean


def _draw(ax, study, arm, key, x_key="step") -> None:
    lines, xs, mean = _per_step(study, arm, key, x_key)
    for seed_xs, seed_ys in lines:
        ax.plot(seed_xs, seed_ys, color=COLORS[arm], alpha=0.3, linewidth=0.8)
    if x_key != "step":  # the seeds drew different numbers of samples: the mean of each bin of BIN samples
        xs, mean = _binned(lines)
    ax.plot(xs, mean, color=COLORS[arm], linewidth=2.2, label=_label(arm))


def _binned(lines) -> tuple[list[float], list[float]]:
    """Per bin of BIN samples drawn so far: its middle, and the mean of every seed's values that fall in it."""
    bins: dict[int, list[float]] = {}
    for xs, ys in lines:
        for x, y in zip(xs, ys):
            bins.setdefault((x - 1) // BIN, []).append(y)
    keys = sorted(bins)
    return [BIN * (k + 0.5) for k in keys], [sum(bins[k]) / len(bins[k]) for k in keys]


def _legend_under(fig, ax) -> None:
    """One legend for both panels, under them (off the curves)."""
    fig.legend(*ax.get_legend_handles_labels(), fontsize=8, loc="lower center", ncol=2, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.45 / fig.get_figheight(), 1, 1))


def plot_clip(study: DAPOStudy):
    """Left: the policy's mean token entropy on each step's trained tokens (before its updates). Right: the share of
    trained tokens with A > 0 whose ratio passed the upper bound (cut: no gradient), symmetric against clip-higher."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    fig, (left, right) = plt.subplots(1, 2, figsize=(WIDTH_IN, 4.2), dpi=DPI)
    for arm in ("symmetric", "clip_higher"):
        _draw(left, study, arm, "entropy")
        _draw(right, study, arm, "clip_high")
    left.set_title(zh("训练 token 上的平均熵", "mean token entropy on the trained tokens"), fontsize=10)
    left.set_xlabel(zh("训练步", "step"))
    left.set_ylabel(zh("熵（nat）", "entropy (nats)"))
    right.set_title(zh("在上界被截的 token（A > 0）", "tokens cut at the upper bound (A > 0)"), fontsize=10)
    right.set_xlabel(zh("训练步", "step"))
    right.set_ylabel(zh("占训练 token 的比例", "share of trained tokens"))
    right.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.1%}"))
    _legend_under(fig, left)
    return fig


def plot_sampling(study: DAPOStudy):
    """Left: informative groups in each step's trained batch (plain against dynamic sampling). Right: accuracy of
    every sample drawn at a step (the current policy on fresh problems) against the samples drawn so far."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    fig, (left, right) = plt.subplots(1, 2, figsize=(WIDTH_IN, 4.2), dpi=DPI)
    for arm in ("clip_higher", "dynamic"):
        _draw(left, study, arm, "informative")
        _draw(right, study, arm, "drawn_accuracy", x_key="samples_so_far")
    left.set_ylim(0, study.base.groups + 0.5)
    left.set_title(zh("每步训练批里有信息的组", "informative groups per trained batch"), fontsize=10)
    left.set_xlabel(zh("训练步", "step"))
    left.set_ylabel(zh("组数", "groups"))
    equal = study.base.steps * study.base.plain_samples
    right.axvline(equal, color="0.5", linestyle="--", linewidth=1)
    right.set_title(zh("抽样准确率与累计抽样数", "accuracy of the samples drawn vs samples drawn"), fontsize=10)
    right.set_xlabel(zh(f"累计抽的样本（虚线：{equal}，不做动态采样的全部）",
                        f"samples drawn so far (dashed: {equal}, all of the plain arm's)"))
    right.set_ylabel(zh("抽样准确率", "accuracy of the samples drawn"))
    _legend_under(fig, left)
    return fig
