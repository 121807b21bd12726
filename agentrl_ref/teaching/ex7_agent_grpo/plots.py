"""Figures of the capstone (matplotlib), their text in Chinese.

Every figure is drawn inside cjk_fonts(): the text objects are created with a font list whose first entry is a CJK
font installed on the machine (Noto Sans CJK from Debian's fonts-noto-cjk, which `make deps` installs) and whose last
is matplotlib's own DejaVu Sans, so every glyph has a font (tests/test_agent.py draws every figure and fails on a
"Glyph ... missing" warning). Without any CJK font the figures warn once and the Chinese shows as boxes.
"""
from __future__ import annotations

import functools
import warnings
from contextlib import contextmanager

from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

# CJK fonts in the order they are preferred: Debian/Ubuntu (fonts-noto-cjk), Adobe's name for the same, then the
# usual ones on other systems
CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans CJK JP", "WenQuanYi Zen Hei", "Microsoft YaHei",
             "PingFang SC", "SimHei")


@functools.lru_cache(maxsize=1)
def cjk_font_family() -> tuple[str, ...]:
    """The installed CJK fonts of CJK_FONTS, then DejaVu Sans (matplotlib falls back glyph by glyph along the list)."""
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    found = tuple(name for name in CJK_FONTS if name in installed)
    if not found:
        warnings.warn("没有找到中文字体（例如 Noto Sans CJK），图里的中文会显示成方框。Debian/Ubuntu 上："
                      "apt-get install fonts-noto-cjk，然后删除 matplotlib 的字体缓存（~/.cache/matplotlib）"
                      "再重启内核。",
                      stacklevel=3)
    return found + ("DejaVu Sans",)


@contextmanager
def cjk_fonts():
    """matplotlib's font settings with cjk_font_family() while a figure's text is created; only those two settings are
    restored afterwards. (Not rc_context: it restores every setting, among them rcParams["interactive"], which a
    notebook's inline backend turns on when the first figure is made; undone, no later figure would show.)"""
    import matplotlib

    wanted = {"font.family": list(cjk_font_family()), "axes.unicode_minus": True}
    before = {key: matplotlib.rcParams[key] for key in wanted}
    matplotlib.rcParams.update(wanted)
    try:
        yield
    finally:
        matplotlib.rcParams.update(before)


def _cjk(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with cjk_fonts():
            return fn(*args, **kwargs)
    return wrapper


COLORS = {"total": "#222222", "fmt": "#1b7f3b", "acc": "#1f4fbf", "cos_len": "#c25a00",
          "accuracy": "#1f4fbf", "tool_rate": "#c25a00", "copy_rate": "#1b7f3b"}
ARM_COLORS = ("#1f4fbf", "#c25a00", "#1b7f3b", "#7a3fb0")
# one colour per seed: the page runs three, make bench six (bench/capstone.py); the first four are ARM_COLORS
SEED_COLORS = ARM_COLORS + ("#b8860b", "#008b8b")
# a legend under its panel, off the curves (whatever the data, a legend inside the axes may hide some)
UNDER_THE_PANEL = {"fontsize": 8, "loc": "upper center", "bbox_to_anchor": (0.5, -0.22), "ncol": 2, "frameon": False}


def _legend_under_the_panels(fig, ax, ncol: int) -> None:
    """ax's legend once for the whole figure, under its panels (off the curves), and the panels laid out above it."""
    fig.legend(*ax.get_legend_handles_labels(), fontsize=8, loc="lower center", ncol=ncol, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, 1))


@_cjk
def plot_training_curves(result, title: str = "计算器任务上的 GRPO（训练时的采样，温度 1）"):
    """2x2 figure per trainer step: rewards (total and per component), accuracy / tool-call / copy rate,
    mean response length (tokens the policy wrote), and the PPO diagnostics (clip fraction, approx KL)."""
    import matplotlib.pyplot as plt

    h = result.history
    steps = [row["step"] for row in h]
    fig, axes = plt.subplots(2, 2, figsize=(WIDTH_IN, 6.4), dpi=DPI)
    ax = axes[0, 0]
    names = {"total": "总奖励", "acc": "正确", "fmt": "格式", "cos_len": "长度项"}
    for key in ("total", "acc", "fmt", "cos_len"):
        weight = result.config.reward_weights.get(key)
        label = names[key] if key == "total" else f"{names[key]}（权重 {weight:g}）"
        ax.plot(steps, [row[f"reward_{key}"] for row in h], color=COLORS[key], label=label,
                linewidth=2 if key == "total" else 1.2)
    ax.set_title("奖励的各项（一批的平均）", fontsize=9)
    ax.legend(**UNDER_THE_PANEL)
    ax = axes[0, 1]
    for key, label in (("accuracy", "准确率"), ("tool_rate", "工具调用率"), ("copy_rate", "调用了工具时答对的比例")):
        ax.plot(steps, [row[key] for row in h], color=COLORS[key], label=label)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("准确率与工具使用", fontsize=9)
    ax.legend(**UNDER_THE_PANEL)
    ax = axes[1, 0]
    ax.plot(steps, [row["response_tokens"] for row in h], color="#222222")
    ax.set_title("平均回复长度（策略写的 token 数）", fontsize=9)
    ax = axes[1, 1]
    if "clip_frac" in h[0]:
        ax.plot(steps, [row["clip_frac"] for row in h], color="#7a3fb0", label="被裁剪的 token 比例")
        ax.plot(steps, [row["approx_kl"] for row in h], color="#6b6b6b", label="近似 KL（k3）")
        ax.legend(**UNDER_THE_PANEL)
    ax.set_title(f"PPO 诊断量（平均版本差 {sum(r['staleness'] for r in h) / len(h):.2f}）", fontsize=9)
    for ax in axes.flat:
        ax.set_xlabel("训练步", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


@_cjk
def plot_differences(abl, comparisons, far: float = 0.3):
    """One row per comparison (name, metric, arm A, arm B): each seed's B - A in percentage points, with its paired
    +-2 SE bar (evaluation noise); the spread of the dots across seeds is the training noise on top of it.
    Differences beyond `far` (a fraction) are drawn as arrows at the edge with their value, so the small ones stay
    readable."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.ex7_agent_grpo.tables import ABLATION_ZH, ARM_ZH

    rows = [(name, a, b, abl.compare(a, b, metric)) for name, metric, a, b in comparisons]
    near = [100 * (abs(d.diff) + 2 * (d.se or 0.0)) for *_, diffs in rows for d in diffs if abs(d.diff) <= far]
    limit = max([5.0] + near) * 1.15
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 1.0 + 0.45 * len(rows)), dpi=DPI)
    offsets = [0.22 * (i - (len(abl.seeds) - 1) / 2) for i in range(len(abl.seeds))]
    ticks = []
    for row, (name, a, b, diffs) in enumerate(rows):
        y = len(rows) - 1 - row
        for k, (d, dy) in enumerate(zip(diffs, offsets)):
            color, x = SEED_COLORS[k % len(SEED_COLORS)], 100 * d.diff
            label = f"种子 {d.seed}" if row == 0 else None
            if abs(x) > limit:
                edge = limit if x > 0 else -limit
                ax.plot(edge * 0.97, y + dy, marker=">" if x > 0 else "<", color=color, markersize=5, label=label)
                ax.annotate(f"{x:+.0f}", (edge * 0.97, y + dy), xytext=(-4 if x > 0 else 4, 0),
                            textcoords="offset points", ha="right" if x > 0 else "left", va="center", fontsize=8,
                            color=color)
            else:
                err = None if d.se is None else 200 * d.se
                ax.errorbar(x, y + dy, xerr=err, fmt="o", color=color, markersize=4, capsize=2, linewidth=1,
                            label=label)
        ticks.append((y, f"{ABLATION_ZH[name]}：{ARM_ZH[b]} − {ARM_ZH[a]}"))
    ax.axvline(0, color="#6b6b6b", linewidth=0.8)
    ax.set_xlim(-limit, limit)
    ax.set_yticks([y for y, _ in ticks], [text for _, text in ticks], fontsize=8)
    ax.set_xlabel("留出集准确率之差（百分点）；横线：±2 个标准误（留出题上的评估噪声）", fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=len(abl.seeds), frameon=False,
              borderaxespad=0.2)  # above the rows: no dot hides behind it
    ax.set_title("每个消融：两臂的留出集准确率之差，每个种子一个点", fontsize=10, loc="left", pad=18)
    fig.tight_layout()
    return fig


@_cjk
def plot_versions(abl, arms=("stale0", "stale2")):
    """Held-out accuracy of every published policy version against the simulated time it was published, one panel
    per seed: the fair way to ask whether the faster, staler arm learns faster per second."""
    import matplotlib.pyplot as plt

    from agentrl_ref.agent.arms import ARMS

    cols = min(3, len(abl.seeds))
    rows = -(-len(abl.seeds) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(WIDTH_IN, 2.9 * rows + 0.4), dpi=DPI, squeeze=False,
                             sharey=True)
    for ax in axes.flat[len(abl.seeds):]:
        ax.set_visible(False)
    for ax, seed in zip(axes.flat, abl.seeds):
        for color, arm in zip(ARM_COLORS, arms):
            versions = abl.runs[arm, seed].versions
            ax.step([v.published for v in versions], [v.accuracy for v in versions], where="post", color=color,
                    marker="o", markersize=2.5, linewidth=1.2, label=ARMS[arm].label)
        ax.set_title(f"种子 {seed}", fontsize=8)
        ax.set_xlabel("版本发布的时刻（模拟秒）", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("留出集准确率", fontsize=8)
    fig.suptitle("每个发布的版本的留出集准确率，按它发布的模拟时刻", fontsize=10)
    _legend_under_the_panels(fig, axes[0, 0], ncol=len(arms))
    return fig


@_cjk
def plot_cliff(abl, arms=("cliff_full", "cliff_acc", "cliff_no_std"), key="tool_rate"):
    """The cliff: tool-call rate of each training batch per step, one panel per arm, one line per seed."""
    import matplotlib.pyplot as plt

    from agentrl_ref.agent.arms import ARMS

    names = {"tool_rate": "工具调用率", "accuracy": "准确率"}
    fig, axes = plt.subplots(1, len(arms), figsize=(WIDTH_IN, 3.0), dpi=DPI, squeeze=False,
                             sharey=True)
    for ax, arm in zip(axes[0], arms):
        for color, seed in zip(SEED_COLORS, abl.seeds):
            h = abl.runs[arm, seed].history
            ax.plot([r["step"] for r in h], [r[key] for r in h], color=color, label=f"种子 {seed}")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(ARMS[arm].label, fontsize=8)
        ax.set_xlabel("训练步", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel(f"{names.get(key, key)}（训练批）", fontsize=8)
    fig.suptitle(f"每个训练批的{names.get(key, key)}，逐步（每臂一格，每个种子一条线）", fontsize=10)
    _legend_under_the_panels(fig, axes[0, 0], ncol=len(abl.seeds))
    return fig


@_cjk
def plot_schedule(arm_runs, max_steps: int = 8):
    """The simulated timeline (schedule.replay) of each arm run: rollout workers and trainer, first max_steps steps.

    A bar's label is the trainer step its work belongs to; with max_staleness=0 the devices take turns,
    with max_staleness > 0 the workers generate later batches while the trainer trains.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(arm_runs), 1, figsize=(WIDTH_IN, 1.6 * len(arm_runs) + 0.7), dpi=DPI,
                             squeeze=False)
    end = 0.0
    for ax, arm in zip(axes[:, 0], arm_runs):
        rep = arm.replay
        devices = sorted({d for d, *_ in rep.intervals}, key=lambda d: (d == "trainer", d))
        names = {d: "trainer" if d == "trainer" else f"rollout worker {d.split()[-1]}" for d in devices}
        for device, start, stop, step in rep.intervals:
            if step >= max_steps:
                continue
            y = devices.index(device)
            color = "#1f4fbf" if device == "trainer" else "#c25a00"
            ax.barh(y, stop - start, left=start, height=0.6, color=color, edgecolor="white")
            ax.text((start + stop) / 2, y, str(step), ha="center", va="center", fontsize=8, color="white")
            end = max(end, stop)
        ax.set_yticks(range(len(devices)), [names[d] for d in devices], fontsize=8)
        ax.set_title(f"{arm.label}：{rep.steps} 步共 {rep.total:.2f} 模拟秒；trainer 在其中 {rep.steps_waited} 步"
                     "开始前等过数据（含第 0 步）", fontsize=8)
        ax.tick_params(labelsize=8)
    for ax in axes[:, 0]:
        ax.set_xlim(0, end * 1.02)
    axes[-1, 0].set_xlabel("模拟秒（每块生成、每步训练的用时来自成本模型）", fontsize=8)
    fig.suptitle(f"模拟时间线：前 {max_steps} 步里每个设备在做什么（色块上的数字：它属于第几步）", fontsize=10)
    fig.tight_layout()
    return fig


@_cjk
def plot_timeline(real, settings=(0, 2), max_steps: int = 6):
    """The measured timeline of two-process runs (measure_throughput): what the rollout worker and the trainer did
    when, on the wall clock, for the first max_steps trainer steps. A bar's label is the trainer step its work belongs
    to; a gap is waiting (the worker for a version it may use, the trainer for a batch)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(settings), 1, figsize=(WIDTH_IN, 1.4 * len(settings) + 0.8), dpi=DPI, squeeze=False,
                             sharex=True)
    end = 0.0
    for ax, ms in zip(axes[:, 0], settings):
        r = real.results[ms]
        per_step = r.config.n_workers
        for c in r.chunks:
            step = c["chunk"] // per_step
            if step < max_steps:
                ax.barh(1, c["end"] - c["start"], left=c["start"], height=0.6, color="#c25a00", edgecolor="white")
                ax.text((c["start"] + c["end"]) / 2, 1, str(step), ha="center", va="center", fontsize=8,
                        color="white")
                end = max(end, c["end"])
        for step, (start, stop) in enumerate(r.steps[:max_steps]):
            ax.barh(0, stop - start, left=start, height=0.6, color="#1f4fbf", edgecolor="white")
            ax.text((start + stop) / 2, 0, str(step), ha="center", va="center", fontsize=8, color="white")
            end = max(end, stop)
        ax.set_yticks([0, 1], ["trainer", "rollout worker"], fontsize=8)
        ax.set_title(f"max_staleness={ms}：{len(r.history)} 步用了墙钟 {r.seconds:.2f} s，其中 trainer 等数据 "
                     f"{r.trainer_idle:.0%}，平均版本差 {r.mean_staleness:.2f}", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_xlim(0, end * 1.02)
    axes[-1, 0].set_xlabel("从 worker 启动算起的墙钟秒数（两个进程，实测）", fontsize=8)
    fig.suptitle(f"两个真实进程的时间线：前 {max_steps} 步（色块上的数字：它属于第几步）", fontsize=10)
    fig.tight_layout()
    return fig


@_cjk
def plot_wall_versions(real):
    """Held-out accuracy of every version each two-process run published, against the wall-clock time it was
    published: accuracy reached per second, one line per max_staleness."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.8, 3.6), dpi=DPI)
    for color, (ms, versions) in zip(ARM_COLORS, sorted(real.versions.items())):
        ax.step([v.published for v in versions], [v.accuracy for v in versions], where="post", color=color,
                marker="o", markersize=2.5, linewidth=1.3, label=f"max_staleness={ms}")
    ax.axvline(real.horizon, color="#6b6b6b", linewidth=0.8, linestyle="--")
    n = len(next(iter(real.versions.values()))[0].correct)
    ax.set_title(f"每个发布的版本在 {n} 道留出题上的准确率（采样，T=1）；虚线：最快的一次跑完的时刻", fontsize=8)
    ax.set_xlabel("版本发布的时刻（墙钟秒）", fontsize=8)
    ax.set_ylabel("留出集准确率", fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside the panel
    fig.tight_layout()
    return fig
