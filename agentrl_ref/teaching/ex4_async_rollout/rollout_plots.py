"""Figures of rollout simulations (exercise 4): occupancy, trainer timeline, busy fractions, drops, lag.

    fig = plot_results(run_modes(SimConfig()))       # sync and async side by side in every panel

Every number drawn comes from rollout_sim's results (this room). Text in figures is Chinese where a CJK font is
installed, English elsewhere (cjk.zh).
"""
from __future__ import annotations

import bisect

from agentrl_ref.teaching.ex4_async_rollout.rollout_sim import SimResult

COLORS = {"sync": "#d1495b", "async": "#00798c"}
FALLBACK_COLORS = ["#edae49", "#30638e", "#66a182", "#8d96a3"]


def _color(label: str, i: int) -> str:
    return COLORS.get(label, FALLBACK_COLORS[i % len(FALLBACK_COLORS)])


def _window(results: dict[str, SimResult], steps: int = 10) -> float:
    """Seconds shown in the time panels: about `steps` trainer steps of the slowest schedule."""
    per_step = max(r.duration / r.config.n_steps for r in results.values())
    return min(max(r.duration for r in results.values()), per_step * steps)


MODE_NAMES = {"sync": ("同步", "sync"), "async": ("异步", "async")}


def plot_results(results: dict[str, SimResult], title: str | None = None):
    """One figure comparing the given results (label -> SimResult); labels are usually the modes (shown as
    MODE_NAMES). A title with Chinese text should come from cjk.zh, like every text here."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.shared.cjk import zh
    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    names = {label: zh(*MODE_NAMES.get(label, (label, label))) for label in results}
    labels = list(results)
    fig = plt.figure(figsize=(WIDTH_IN, 8.4), dpi=DPI)
    grid = fig.add_gridspec(3, 3, height_ratios=[2.0, 0.55 + 0.25 * len(labels), 2.2], hspace=0.7, wspace=0.5,
                            width_ratios=[1.0, 1.4, 1.0])
    ax_occ = fig.add_subplot(grid[0, :])
    ax_tl = fig.add_subplot(grid[1, :], sharex=ax_occ)
    ax_busy = fig.add_subplot(grid[2, 0])
    ax_count = fig.add_subplot(grid[2, 1])
    ax_lag = fig.add_subplot(grid[2, 2])
    window = _window(results)

    # buffer occupancy over time
    for i, (label, r) in enumerate(results.items()):
        shown = bisect.bisect_right(r.occupancy_t, window) + 1  # only what the window shows: faster to draw
        ax_occ.step(r.occupancy_t[:shown], r.occupancy_n[:shown], where="post", color=_color(label, i), lw=1.4,
                    label=names[label])
    first = next(iter(results.values())).config
    ax_occ.axhline(first.batch_size, color="0.4", ls=":", lw=1, label=zh("batch 大小", "batch size"))
    ax_occ.set_xlim(0, window)
    ax_occ.set_ylim(bottom=0)
    ax_occ.set_ylabel(zh("队列里的轨迹数", "trajectories in buffer"))
    ax_occ.set_title(zh(f"队列占用（模拟时间的前 {window:.0f} 秒）",
                        f"Buffer occupancy (first {window:.0f} simulated seconds)"), fontsize=10, loc="right")
    ax_occ.legend(loc="lower left", bbox_to_anchor=(0, 1.0), fontsize=8, ncols=len(labels) + 1, frameon=False,
                  borderaxespad=0.2)
    ax_occ.grid(alpha=0.3)

    # trainer timeline: filled while training, gaps while waiting for a batch
    for i, (label, r) in enumerate(results.items()):
        spans = [(s, e - s) for s, e in r.train_intervals if s < window]
        ax_tl.broken_barh(spans, (i - 0.35, 0.7), color=_color(label, i))
    ax_tl.set_yticks(range(len(labels)), [names[label] for label in labels])
    ax_tl.set_ylim(len(labels) - 0.5, -0.5)
    ax_tl.set_xlabel(zh("模拟时间（秒）", "simulated time (s)"))
    ax_tl.set_title(zh("trainer 的时间线：色条 = 训练，空隙 = 等一个 batch",
                       "Trainer timeline: bar = training, gap = waiting for a batch"), fontsize=10)
    ax_tl.grid(axis="x", alpha=0.3)

    # measured busy fractions
    width = 0.8 / len(labels)
    for i, (label, r) in enumerate(results.items()):
        xs = [j - 0.4 + width * (i + 0.5) for j in range(2)]
        values = [r.trainer_busy, r.worker_busy]
        bars = ax_busy.bar(xs, values, width, color=_color(label, i))
        ax_busy.bar_label(bars, labels=[f"{v:.0%}" for v in values], fontsize=8, padding=1)
    ax_busy.set_xticks([0, 1], ["trainer", zh("worker 们", "workers")])
    ax_busy.set_ylim(0, 1.2)
    ax_busy.set_yticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
    ax_busy.set_title(zh("忙碌比例（实测）", "Busy fraction (measured)"), fontsize=10)

    # where the generated trajectories went
    kinds = ["trained", "overflow", "stale"]
    for i, (label, r) in enumerate(results.items()):
        xs = [j - 0.4 + width * (i + 0.5) for j in range(len(kinds))]
        values = [r.trained, r.dropped_overflow, r.dropped_stale]
        bars = ax_count.bar(xs, values, width, color=_color(label, i))
        ax_count.bar_label(bars, fontsize=8, padding=2, rotation=90 if max(values) >= 100 else 0)  # 1600 1600 collide
    ax_count.set_xticks(range(len(kinds)), [zh("训练了", "trained"), zh("丢弃：\n队列满", "dropped:\noverflow"),
                                            zh("丢弃：\n过期", "dropped:\nstale")])
    ax_count.margins(y=0.2)
    ax_count.set_title(zh("轨迹去了哪里", "Trajectories"), fontsize=10)

    # policy-version lag at training time
    top = max((max(r.lags, default=0) for r in results.values()), default=0)
    edges = [x - 0.5 for x in range(top + 2)]
    for i, (label, r) in enumerate(results.items()):
        weights = [1 / len(r.lags)] * len(r.lags) if r.lags else []
        ax_lag.hist(r.lags, bins=edges, weights=weights, color=_color(label, i), alpha=0.55, label=names[label],
                    edgecolor=_color(label, i))
    ax_lag.set_xticks(range(top + 1))
    ax_lag.set_xlabel(zh("trainer 的版本 − 轨迹的版本", "trainer version - trajectory version"))
    ax_lag.set_ylabel(zh("占训练过的轨迹的比例", "share of trained trajectories"))
    ax_lag.set_title(zh("policy 版本差", "Policy-version lag"), fontsize=10)
    ax_lag.set_ylim(0, 1.45)
    ax_lag.legend(fontsize=8, loc="upper right", ncols=1)

    c = first
    subtitle = zh(f"worker {c.n_workers} 个  生成 {c.gen_time:g} 秒（离散度 {c.gen_spread:g}）  "
                  f"训练一步 {c.train_time:g} 秒  batch {c.batch_size}  容量 {c.capacity}  "
                  f"max_staleness={c.max_staleness}  {c.n_steps} 步",
                  f"workers={c.n_workers}  gen={c.gen_time:g}s (cv {c.gen_spread:g})  train step={c.train_time:g}s  "
                  f"batch={c.batch_size}  capacity={c.capacity}  max_staleness={c.max_staleness}  steps={c.n_steps}")
    fig.suptitle((title + "\n" if title else "") + subtitle, fontsize=9)
    return fig
