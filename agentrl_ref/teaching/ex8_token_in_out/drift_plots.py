"""Exercise 8's figure: the trainer's log-prob against the sampler's, token in, token out and retokenized.

    plot_ratios(study)   one point per sampled id (token in, token out: the trainer scores the id the sampler
                         sampled) and one per drifted completion at its first drifted position (retokenized: the
                         trainer scores the re-encoded id, the sampler's log-prob belongs to the sampled one); the
                         diagonal is ratio 1, the band PPO's clip range

Figure text is Chinese where a CJK font is installed, English elsewhere (cjk.zh).
"""
from __future__ import annotations

import math

from agentrl_ref.teaching.shared.cjk import zh

KEPT_COLOR, RETOK_COLOR = "#1f4fbf", "#c25a00"


def plot_ratios(study, clip: float = 0.2):
    """Scatter of log p_trainer against log p_sampler (see the module docstring)."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.shared.page_figure import DPI

    kept = [(s, k) for c in study.completions for s, k in zip(c.sampler_logprobs, c.kept_logprobs)]
    retok = [(c.sampler_logprobs[c.drift], c.retok_logprobs[c.drift]) for c in study.drifted
             if c.drift < len(c.ids) and c.drift < len(c.retok_logprobs)]
    values = [v for pair in kept + retok for v in pair]
    low = min(values, default=-1.0) - 0.5
    fig, ax = plt.subplots(figsize=(5.6, 5.2), dpi=DPI)
    line = [low, 0.0]
    band = f"[{1 - clip:g}, {1 + clip:g}]"
    ax.fill_between(line, [x + math.log(1 - clip) for x in line], [x + math.log(1 + clip) for x in line],
                    color="#999999", alpha=0.25, linewidth=0,
                    label=zh(f"PPO 裁剪区间 {band}", f"PPO clip range {band}"))
    ax.plot(line, line, color="#444444", linewidth=0.8, label=zh("概率比 = 1", "ratio = 1"))
    if kept:
        ax.scatter(*zip(*kept), s=6, color=KEPT_COLOR, alpha=0.5,
                   label=zh(f"token in, token out：每个采样的 id（{len(kept)} 个）",
                            f"token in, token out: every sampled id ({len(kept)})"))
    if retok:
        ax.scatter(*zip(*retok), s=22, color=RETOK_COLOR, marker="x",
                   label=zh(f"重新分词：第一个不同的位置（{len(retok)} 条）",
                            f"retokenized: first drifted position ({len(retok)})"))
    ax.set_xlim(low, 0.2)
    ax.set_ylim(low, 0.2)
    ax.set_xlabel(zh("采样器的 log-prob（采样出的 id）", "sampler log-prob (sampled id)"), fontsize=9)
    ax.set_ylabel(zh("trainer 的 log-prob（trainer 看到的 id）", "trainer log-prob (id the trainer sees)"), fontsize=9)
    ax.set_title(zh("同一份权重，第一次更新之前", "Same weights, before the first update"), fontsize=10)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1, frameon=False)
    fig.tight_layout()
    return fig
