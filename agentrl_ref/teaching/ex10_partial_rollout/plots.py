"""Exercise 10's figures: what a weight update does to a chunk in generation, on the simulated clock (a timeline of
the three answers), and what it costs in staleness and buys in accuracy (per-token staleness, accuracy against time).
"""
from __future__ import annotations

from agentrl_ref.teaching.ex10_partial_rollout.interrupt_study import SHORT, Study
from agentrl_ref.teaching.shared.cjk import zh

ARM_COLORS = {"wait": "#1f4fbf", "abort": "#c25a00", "continue": "#2e8b57"}
VERSION_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c",
                  "#ccb974", "#64b5cd")
NAME_ZH = {"wait": "等", "abort": "丢掉重来", "continue": "接着生成"}


def _version_color(v: int) -> str:
    return VERSION_COLORS[v % len(VERSION_COLORS)]


def plot_timelines(study: Study, seed: int | None = None, max_steps: int = 6):
    """The first max_steps steps of each interrupt on one seed, on the simulated clock: the rollout device's chunks
    (coloured by the version that sampled them; a chunk caught by an update shows where new weights took over, an
    aborted attempt is hatched grey) and the trainer's steps (coloured by the version they publish)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    cfg = study.config
    seed = cfg.seeds[0] if seed is None else seed
    fig, axes = plt.subplots(len(cfg.interrupts), 1, figsize=(WIDTH_IN, 1.25 * len(cfg.interrupts) + 1.4), dpi=DPI,
                             squeeze=False, sharex=True)
    end, shown = 0.0, set()
    for ax, interrupt in zip(axes[:, 0], cfg.interrupts):
        sim = study.arms[interrupt, seed].sim
        for c in sim.chunks[:max_steps * cfg.grpo(seed).n_workers]:
            for start, stop, _ in c["aborted"]:
                ax.barh(1, stop - start, left=start, height=0.6, color="#d9d9d9", hatch="///", edgecolor="#8c8c8c")
            pieces = [(c["began"], c["began_version"])] + [(time, v) for _, v, time in c["switches"]]
            for (start, v), nxt in zip(pieces, pieces[1:] + [(c["end"], None)]):
                ax.barh(1, nxt[0] - start, left=start, height=0.6, color=_version_color(v), edgecolor="white")
                shown.add(v)
            end = max(end, c["end"])
        for step, (start, stop) in enumerate(sim.steps[:max_steps]):
            ax.barh(0, stop - start, left=start, height=0.6, color=_version_color(step + 1), edgecolor="white")
            shown.add(step + 1)
            end = max(end, stop)
        ax.set_yticks([0, 1], [zh("trainer", "trainer"), zh("rollout", "rollout")], fontsize=8)
        ax.set_title(zh(f"{SHORT[interrupt]}（{NAME_ZH[interrupt]}）：全部 {len(sim.history)} 步共 {sim.seconds:.3f} "
                        f"模拟秒，trainer 等数据占 {sim.trainer_idle:.0%}",
                        f"{interrupt}: {len(sim.history)} steps in {sim.seconds:.3f} simulated s, "
                        f"trainer idle {sim.trainer_idle:.0%}"), fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_xlim(0, end * 1.01)
    axes[-1, 0].set_xlabel(zh("模拟时钟（秒）", "simulated clock (s)"), fontsize=8)
    handles = [Patch(color=_version_color(v), label=zh(f"版本 {v}", f"version {v}")) for v in sorted(shown)]
    handles.append(Patch(facecolor="#d9d9d9", hatch="///", edgecolor="#8c8c8c", label=zh("丢掉的生成", "aborted")))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 5), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(zh(f"更新落在一块生成的中间：三种做法的前 {max_steps} 步（种子 {seed}，模拟时钟；颜色是生成它的版本）",
                    f"an update lands mid-chunk: the first {max_steps} steps (seed {seed}, simulated clock)"),
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.09 if len(handles) > 5 else 0.05, 1, 1))
    return fig


def plot_staleness_and_accuracy(study: Study):
    """Left: the share of trained tokens by how many versions they lagged the trainer (all seeds). Right: held-out
    accuracy of the newest published version against the simulated clock, the seeds' mean (thin: each seed), up to
    the earliest horizon of the seeds."""
    import matplotlib.pyplot as plt
    import numpy as np

    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    cfg = study.config
    fig, (left, right) = plt.subplots(1, 2, figsize=(WIDTH_IN, 3.9), dpi=DPI)
    lags = sorted({s for arm in study.arms.values() for s in arm.sim.token_staleness})
    width = 0.8 / len(cfg.interrupts)
    for k, interrupt in enumerate(cfg.interrupts):
        counts = [sum(study.arms[interrupt, s].sim.token_staleness.get(lag, 0) for s in cfg.seeds) for lag in lags]
        total = sum(counts)
        left.bar(np.arange(len(lags)) + (k - (len(cfg.interrupts) - 1) / 2) * width, [n / total for n in counts],
                 width=width, color=ARM_COLORS[interrupt], label=zh(NAME_ZH[interrupt], interrupt))
    left.set_xticks(range(len(lags)), [str(lag) for lag in lags])
    left.set_xlabel(zh("训练时落后 trainer 几个版本", "versions behind the trainer when trained"), fontsize=8)
    left.set_ylabel(zh("训练 token 的占比", "share of trained tokens"), fontsize=8)
    left.set_ylim(0, 1.18)
    left.set_title(zh("每个 token 的版本差", "staleness per token"), fontsize=9)
    left.legend(fontsize=8, ncol=3, loc="upper center", frameon=False)
    horizon = min(study.horizon(s) for s in cfg.seeds)
    grid = np.linspace(0, horizon, 200)
    for interrupt in cfg.interrupts:
        curves = []
        for s in cfg.seeds:
            versions = study.arms[interrupt, s].versions
            times = [v.published for v in versions]
            acc = np.array([v.accuracy for v in versions])
            curve = acc[np.searchsorted(times, grid, side="right") - 1]
            curves.append(curve)
            right.plot(grid, curve, color=ARM_COLORS[interrupt], linewidth=0.6, alpha=0.35)
        right.plot(grid, np.mean(curves, axis=0), color=ARM_COLORS[interrupt], linewidth=1.8,
                   label=zh(NAME_ZH[interrupt], interrupt))
    right.set_xlabel(zh("模拟时钟（秒）", "simulated clock (s)"), fontsize=8)
    right.set_ylabel(zh("最新发布版本的留出题准确率", "held-out accuracy of the newest version"), fontsize=8)
    right.set_title(zh(f"同一模拟时刻的准确率（粗线：{len(cfg.seeds)} 个种子的平均）",
                       f"accuracy at the same simulated moment ({len(cfg.seeds)} seeds)"), fontsize=9)
    right.legend(fontsize=8, loc="lower right", frameon=False)
    for ax in (left, right):
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
