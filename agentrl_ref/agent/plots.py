"""Figures of the capstone (matplotlib, ASCII text only; captions in Chinese go in the notebook's Markdown)."""
from __future__ import annotations

COLORS = {"total": "#222222", "fmt": "#1b7f3b", "acc": "#1f4fbf", "cos_len": "#c25a00",
          "accuracy": "#1f4fbf", "tool_rate": "#c25a00", "copy_rate": "#1b7f3b"}
ARM_COLORS = ("#1f4fbf", "#c25a00", "#1b7f3b", "#7a3fb0")


def plot_training_curves(result, title: str = "GRPO on the calculator task (training rollouts, temperature 1)"):
    """2x2 figure per trainer step: rewards (total and per component), accuracy / tool-call / copy rate,
    mean response length (tokens the policy wrote), and the PPO diagnostics (clip fraction, approx KL)."""
    import matplotlib.pyplot as plt

    h = result.history
    steps = [row["step"] for row in h]
    fig, axes = plt.subplots(2, 2, figsize=(9.0, 6.2), dpi=100)
    ax = axes[0, 0]
    for key in ("total", "acc", "fmt", "cos_len"):
        weight = result.config.reward_weights.get(key)
        label = "total" if key == "total" else f"{key} (weight {weight:g})"
        ax.plot(steps, [row[f"reward_{key}"] for row in h], color=COLORS[key], label=label,
                linewidth=2 if key == "total" else 1.2)
    ax.set_title("reward per component (mean over the batch)", fontsize=9)
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    for key, label in (("accuracy", "accuracy"), ("tool_rate", "tool-call rate"),
                       ("copy_rate", "correct | tool called")):
        ax.plot(steps, [row[key] for row in h], color=COLORS[key], label=label)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("accuracy and tool use", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax = axes[1, 0]
    ax.plot(steps, [row["response_tokens"] for row in h], color="#222222")
    ax.set_title("mean response length (tokens the policy wrote)", fontsize=9)
    ax = axes[1, 1]
    if "clip_frac" in h[0]:
        ax.plot(steps, [row["clip_frac"] for row in h], color="#7a3fb0", label="clip fraction")
        ax.plot(steps, [row["approx_kl"] for row in h], color="#6b6b6b", label="approx KL (k3)")
        ax.legend(fontsize=7)
    ax.set_title(f"PPO diagnostics (mean staleness {sum(r['staleness'] for r in h) / len(h):.2f})", fontsize=9)
    for ax in axes.flat:
        ax.set_xlabel("trainer step", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_ablations(results: dict, keys=("accuracy", "tool_rate")):
    """Grid: one row per ablation, one column per key (curves of both arms)."""
    import matplotlib.pyplot as plt

    names = list(results)
    fig, axes = plt.subplots(len(names), len(keys), figsize=(4.2 * len(keys), 2.3 * len(names)), dpi=100,
                             squeeze=False)
    for row, name in enumerate(names):
        for ax, key in zip(axes[row], keys):
            for color, arm in zip(ARM_COLORS, results[name].arms):
                h = arm.result.history
                ax.plot([r["step"] for r in h], [r[key] for r in h], color=color, label=arm.label)
            ax.set_ylim(-0.02, 1.02)
            ax.set_title(f"{name}: {key.replace('_', ' ')}", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=6.5)
    for ax in axes[-1]:
        ax.set_xlabel("trainer step", fontsize=8)
    fig.tight_layout()
    return fig


def plot_schedule(res, max_steps: int = 8):
    """The simulated timeline (schedule.replay) of each arm: rollout workers and trainer, first max_steps steps.

    A bar's label is the trainer step its work belongs to; with max_staleness=0 the devices take turns,
    with max_staleness > 0 the workers generate later batches while the trainer trains.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(res.arms), 1, figsize=(9.0, 1.5 * len(res.arms) + 0.6), dpi=100, squeeze=False)
    end = 0.0
    for ax, arm in zip(axes[:, 0], res.arms):
        rep = arm.result.replay
        devices = sorted({d for d, *_ in rep.intervals}, key=lambda d: (d == "trainer", d))
        for device, start, stop, step in rep.intervals:
            if step >= max_steps:
                continue
            y = devices.index(device)
            color = "#1f4fbf" if device == "trainer" else "#c25a00"
            ax.barh(y, stop - start, left=start, height=0.6, color=color, edgecolor="white")
            ax.text((start + stop) / 2, y, str(step), ha="center", va="center", fontsize=6.5, color="white")
            end = max(end, stop)
        ax.set_yticks(range(len(devices)), devices, fontsize=7)
        ax.set_title(f"{arm.label}: trainer waited before {rep.steps_waited} of {rep.steps} steps, "
                     f"{rep.total:.1f} s simulated for {rep.steps} steps", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes[:, 0]:
        ax.set_xlim(0, end * 1.02)
    axes[-1, 0].set_xlabel("simulated seconds (measured CPU time of each chunk and step)", fontsize=8)
    fig.tight_layout()
    return fig
