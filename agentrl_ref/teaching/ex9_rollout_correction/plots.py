"""Exercise 9's figure: how far the low-precision samplers are from the float32 trainer, per token and per length."""
from __future__ import annotations

from agentrl_ref.teaching.ex9_rollout_correction.mismatch_study import Study
from agentrl_ref.teaching.shared.cjk import zh

COLORS = {"bf16": "tab:blue", "fp8": "tab:orange"}


def plot_gap(study: Study):
    """Left: the distribution of |delta log p| per trained token (log scale). Right: the mean |log ratio| of the
    first k trained tokens of an episode, at the sequence level (it grows with k) and the geometric level."""
    import matplotlib.pyplot as plt
    import numpy as np

    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    fig, (left, right) = plt.subplots(1, 2, figsize=(WIDTH_IN - 0.3, 4.4), dpi=DPI)  # its tick labels run wide
    for name, gap in study.gaps.items():
        values = np.maximum(np.array(gap.abs_diffs), 1e-9)
        bins = np.logspace(-9, 0, 46)
        left.hist(values, bins=bins, histtype="step", color=COLORS[name], label=zh(f"{name} 采样", f"{name} sampler"))
        ks = gap.lengths
        right.plot(ks, gap.seq_log_ratio, color=COLORS[name],
                   label=zh(f"{name}：sequence 级", f"{name}: sequence level"))
        right.plot(ks, gap.geo_log_ratio, color=COLORS[name], linestyle="--",
                   label=zh(f"{name}：geometric 级", f"{name}: geometric level"))
    left.set_xscale("log")
    left.set_xlabel(zh("每个训练 token 的 |Δ log p|（对数刻度）", "|delta log p| per trained token (log scale)"))
    left.set_ylabel(zh("token 数", "tokens"))
    left.set_title(zh("低精度采样器与 float32 trainer 的差", "low-precision sampler vs float32 trainer"),
                  fontsize=10)
    left.legend()
    n = next(iter(study.gaps.values())).counts[0]
    right.set_xlabel(zh(f"回答里前 k 个训练 token（{n} 条至少这么长的回答）",
                        f"first k trained tokens of a response ({n} responses at least that long)"))
    right.set_ylabel(zh("平均 |log 比率|", "mean |log ratio|"))
    right.set_title(zh("序列比率随长度增长，几何平均不增长", "the sequence ratio grows with length"), fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig
