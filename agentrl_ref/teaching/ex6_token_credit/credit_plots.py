"""Examples and plots behind exercise 6: how one sequence reward becomes per-token credit.

- `plot_strategies`: the three strategies of the seed page (last token / uniform / KL-weighted) on
  the seed's 9-token example and on a longer multi-turn trajectory, side by side.
- `plot_outcome_credit` (where the original page is wrong about GRPO and KL): GRPO's group-normalised
  advantage broadcast to every token; the same scalar stored at the last token followed by
  reward-to-go for several gamma; and the per-token KL penalty that PPO really puts into the reward.
Figure text is Chinese where a CJK font is installed, English elsewhere (cjk.zh).
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import torch

from agentrl_ref.token_credit import (
    assign_reward_kl_weighted, assign_reward_last_token, assign_reward_uniform, broadcast_to_tokens,
    group_normalize, reward_to_go,
)

STRATEGIES = ("last token", "uniform", "KL-weighted")
STRATEGY_NAMES = {"last token": "最后一个 token", "uniform": "均摊", "KL-weighted": "按 KL 加权"}
GAMMAS = (1.0, 0.99, 0.95, 0.9)


class Trajectory(NamedTuple):
    title: str                      # Chinese (printed by the page, and the figure's where it can show Chinese)
    mask: torch.Tensor              # [T] int64, 1 = token the policy generated (trained)
    kl: torch.Tensor                # [T] float32, |KL(policy || ref)| per token, 0 where mask is 0
    segments: list[tuple[str, int, int]]  # (label, start, end) for the axis annotations
    title_en: str                   # the figure's title where no CJK font is installed


def seed_example() -> Trajectory:
    """The seed page's example: 9 tokens, 5 of them trained, one KL spike (2.0 at index 5)."""
    mask = torch.tensor([0, 0, 1, 1, 0, 1, 1, 1, 0])
    kl = torch.tensor([0.0, 0.0, 0.1, 0.5, 0.0, 2.0, 0.1, 0.3, 0.0])
    return Trajectory("原页面的例子（T=9）", mask, kl, [], "seed example (T=9)")


# (role, number of tokens) of a tool-using trajectory; only "assistant" tokens are trained
LONG_SEGMENTS: list[tuple[str, int]] = [
    ("system", 5), ("user", 9), ("assistant", 14), ("tool", 7), ("assistant", 12), ("pad", 3),
]


def long_trajectory(seed: int = 0) -> Trajectory:
    """A multi-turn trajectory (system, user, assistant, tool, assistant, padding) with a made-up KL profile.

    KL is small noise on every generated token plus two spikes: the token that opens the tool call
    and the token that writes the final answer. Deterministic for a given seed.
    """
    spans, start = [], 0
    for role, length in LONG_SEGMENTS:
        spans.append((role, start, start + length))
        start += length
    mask = torch.zeros(start, dtype=torch.long)
    for role, lo, hi in spans:
        if role == "assistant":
            mask[lo:hi] = 1
    gen = torch.Generator().manual_seed(seed)
    kl = (0.03 + 0.12 * torch.rand(start, generator=gen)) * mask
    first_turn, second_turn = [(lo, hi) for role, lo, hi in spans if role == "assistant"]
    kl[first_turn[1] - 4] = 1.5   # "<call>": the decision to use the tool
    kl[second_turn[1] - 2] = 2.5  # the token that writes the answer
    labels = {"system": "sys", "user": "user", "assistant": "asst", "tool": "tool", "pad": "pad"}
    return Trajectory(f"多轮轨迹（T={start}）", mask, kl, [(labels[r], lo, hi) for r, lo, hi in spans],
                      f"multi-turn trajectory (T={start})")


def credit(traj: Trajectory, seq_reward: float = 1.0) -> dict[str, torch.Tensor]:
    """Strategy name -> [T] per-token rewards of the reference implementations."""
    return {
        "last token": assign_reward_last_token(seq_reward, traj.mask),
        "uniform": assign_reward_uniform(seq_reward, traj.mask),
        "KL-weighted": assign_reward_kl_weighted(seq_reward, traj.mask, traj.kl),
    }


def untrained_runs(mask: torch.Tensor) -> list[tuple[int, int]]:
    """[start, end) of every run of consecutive mask-0 positions."""
    runs, start = [], None
    for t, m in enumerate(mask.tolist() + [1]):
        if m == 0 and start is None:
            start = t
        elif m != 0 and start is not None:
            runs.append((start, t))
            start = None
    return runs


def _shade_untrained(ax, mask: torch.Tensor) -> None:
    for lo, hi in untrained_runs(mask):
        ax.axvspan(lo - 0.5, hi - 0.5, color="0.9", zorder=0, linewidth=0)


def _label_segments(ax, segments: Sequence[tuple[str, int, int]]) -> None:
    for label, lo, hi in segments:
        ax.text((lo + hi - 1) / 2, 1.02, label, transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                fontsize=8, color="0.35")


def plot_strategies(trajectories: Sequence[Trajectory], seq_reward: float = 1.0):
    """Rows: the three strategies; columns: the trajectories. Grey = untrained (mask 0) tokens."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.shared.cjk import zh
    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    colors = {"last token": "tab:blue", "uniform": "tab:orange", "KL-weighted": "tab:green"}
    widths = [max(len(t.mask), 12) for t in trajectories]
    fig, axes = plt.subplots(len(STRATEGIES), len(trajectories), figsize=(WIDTH_IN, 7.0), dpi=DPI, sharey="row",
                             gridspec_kw={"width_ratios": widths}, squeeze=False)
    all_rewards = [credit(traj, seq_reward) for traj in trajectories]
    for col, (traj, rewards) in enumerate(zip(trajectories, all_rewards)):
        positions = range(len(traj.mask))
        for row, name in enumerate(STRATEGIES):
            ax = axes[row][col]
            _shade_untrained(ax, traj.mask)
            values = rewards[name]
            ax.bar(positions, values.tolist(), width=0.8, color=colors[name])
            ax.set_xlim(-0.5, len(traj.mask) - 0.5)
            top = max(r[name].max().item() for r in all_rewards)
            ax.set_ylim(0, top * 1.3)  # head room for the sum/max note
            ax.text(0.99, 0.93, zh(f"合计 {values.sum().item():.2f}，最大 {values.max().item():.3f}",
                                   f"sum = {values.sum().item():.2f}, max = {values.max().item():.3f}"),
                    transform=ax.transAxes, ha="right", va="top", fontsize=8)
            if col == 0:
                ax.set_ylabel(zh(STRATEGY_NAMES[name], name))
            if row == 0:
                ax.set_title(zh(traj.title, traj.title_en), pad=16)
                _label_segments(ax, traj.segments)
            if row == len(STRATEGIES) - 1:
                ax.set_xlabel(zh("token 位置", "token position"))
    fig.suptitle(zh(f"一个序列奖励 r = {seq_reward:g} 分到各个 token 上（灰色：mask = 0，不训练）",
                    f"One sequence reward r = {seq_reward:g} spread over tokens (grey: mask = 0, not trained)"))
    fig.tight_layout()
    return fig


class Group(NamedTuple):
    rewards: torch.Tensor     # [G] sequence rewards of G sampled completions of one prompt
    mask: torch.Tensor        # [G, T] response masks (right-padded)
    advantages: torch.Tensor  # [G] group-normalised


def grpo_group(rewards: Sequence[float] = (1, 0, 0, 1, 0, 0),
               lengths: Sequence[int] = (20, 34, 12, 27, 40, 16)) -> Group:
    """One GRPO group: G completions of the same prompt, their 0/1 rewards, masks and advantages
    (DeepSeekMath §4.1.2)."""
    if len(rewards) != len(lengths):
        raise ValueError("one length per reward")
    r = torch.tensor(rewards, dtype=torch.float32)
    width = max(lengths)
    mask = (torch.arange(width).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)).long()
    return Group(r, mask, group_normalize(r, group_size=len(rewards)))


def last_token_returns(traj: Trajectory, advantage: float,
                       gammas: Sequence[float] = GAMMAS) -> dict[float, torch.Tensor]:
    """gamma -> [T] returns when `advantage` is stored at the last trained token (reward-to-go, discount gamma)."""
    stored = assign_reward_last_token(advantage, traj.mask)
    return {g: reward_to_go(stored, g) for g in gammas}


def ppo_style_returns(traj: Trajectory, reward: float, beta: float) -> torch.Tensor:
    """[T] gamma = 1 returns of PPO's per-token reward: -beta * KL_t on trained tokens, plus reward at the last one."""
    token_rewards = assign_reward_last_token(reward, traj.mask) - beta * traj.kl * traj.mask
    return reward_to_go(token_rewards, 1.0)


class CreditFacts(NamedTuple):
    broadcast_rows_constant: bool        # every trained token of completion i carries advantages[i]
    gamma1_equals_broadcast: bool        # last-token storage + gamma=1 reward-to-go == broadcast (trained tokens)
    first_token_share: dict[float, float]  # gamma -> return of the first trained token / advantage
    distance: int                        # positions from the first to the last trained token


def credit_facts(group: Group, traj: Trajectory, advantage: float, gammas: Sequence[float] = GAMMAS) -> CreditFacts:
    """The checks the notebook prints under the second plot, computed, not typed in."""
    token_adv = broadcast_to_tokens(group.advantages, group.mask)
    constant = all(torch.equal(token_adv[i][group.mask[i].bool()],
                               group.advantages[i].expand(int(group.mask[i].sum())))
                   for i in range(len(group.advantages)))
    returns = last_token_returns(traj, advantage, gammas)
    trained = traj.mask.bool()
    broadcast = broadcast_to_tokens(torch.tensor([advantage]), traj.mask.unsqueeze(0))[0]
    idx = trained.nonzero().flatten()
    first, last = idx[0].item(), idx[-1].item()
    return CreditFacts(
        broadcast_rows_constant=constant,
        gamma1_equals_broadcast=torch.allclose(returns[1.0][trained], broadcast[trained]),
        first_token_share={g: returns[g][first].item() / advantage for g in gammas},
        distance=last - first,
    )


def plot_outcome_credit(group: Group, traj: Trajectory, advantage: float, beta: float = 0.1,
                        gammas: Sequence[float] = GAMMAS):
    """Three panels: GRPO broadcast (heatmap), last-token storage + reward-to-go, PPO-style per-token KL reward."""
    import matplotlib.pyplot as plt
    import numpy as np

    from agentrl_ref.teaching.shared.cjk import zh
    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    fig, (ax_a, ax_b, ax_c) = plt.subplots(3, 1, figsize=(WIDTH_IN, 12.0), dpi=DPI)

    # (a) GRPO: each completion's advantage on every one of its tokens
    token_adv = broadcast_to_tokens(group.advantages, group.mask).numpy()
    shown = np.ma.masked_where(group.mask.numpy() == 0, token_adv)
    limit = float(group.advantages.abs().max())
    cmap = plt.get_cmap("RdBu").with_extremes(bad="0.92")  # grey where the mask is 0
    image = ax_a.imshow(shown, aspect="auto", cmap=cmap, vmin=-limit, vmax=limit, interpolation="nearest")
    ax_a.set_yticks(range(len(group.rewards)),
                    [f"r={r:g}  A={a:+.2f}" for r, a in zip(group.rewards.tolist(), group.advantages.tolist())])
    ax_a.set_xlabel(zh("token 位置", "token position"))
    ax_a.set_title(zh("(a) GRPO：组内标准化的 A 写在每个 token 上", "(a) GRPO: group-normalised A on every token"))
    fig.colorbar(image, ax=ax_a, fraction=0.03, pad=0.01, label="advantage")

    # (b) store A at the last trained token, then reward-to-go
    trained = traj.mask.bool()
    positions = np.arange(len(traj.mask))

    def masked(values: torch.Tensor) -> np.ndarray:
        return np.where(trained.numpy(), values.numpy(), np.nan)

    _shade_untrained(ax_b, traj.mask)
    for g, returns in last_token_returns(traj, advantage, gammas).items():
        label = zh(f"最后一个 token，gamma={g:g}", f"last token, gamma={g:g}")
        ax_b.plot(positions, masked(returns), marker=".", markersize=3, linewidth=1.2, label=label)
    uniform = reward_to_go(assign_reward_uniform(advantage, traj.mask), 1.0)
    ax_b.plot(positions, masked(uniform), linestyle=":", color="0.3",
              label=zh("均摊 A/n，gamma=1", "uniform A/n, gamma=1"))
    ax_b.axhline(advantage, color="black", linestyle="--", linewidth=0.8,
                 label=zh("GRPO 广播（A）", "GRPO broadcast (A)"))
    ax_b.set_xlim(-0.5, len(traj.mask) - 0.5)
    ax_b.set_ylim(0, advantage * 1.12)
    ax_b.set_xlabel(zh("token 位置", "token position"))
    ax_b.set_ylabel(zh("回报 G_t", "return G_t"))
    ax_b.set_title(zh(f"(b) A = {advantage:.2f} 只记在最后一个 token 上",
                      f"(b) A = {advantage:.2f} stored at the last token"))
    ax_b.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)

    # (c) what PPO really puts into the per-token reward (not a KL-weighted split of the sequence reward)
    _shade_untrained(ax_c, traj.mask)
    ppo = ppo_style_returns(traj, 1.0, beta)
    ax_c.plot(positions, masked(ppo), marker=".", markersize=3, color="tab:purple",
              label=zh(f"r_t = -{beta:g}*KL_t（最后一个再加 r），gamma=1",
                       f"r_t = -{beta:g}*KL_t (+ r at last), gamma=1"))
    ax_c.axhline(1.0, color="black", linestyle="--", linewidth=0.8, label=zh("没有 KL 时 r = 1", "r = 1 without KL"))
    ax_c.bar(positions, (-beta * traj.kl).numpy(), width=0.8, color="tab:red", alpha=0.5, label="-beta*KL_t")
    ax_c.set_xlim(-0.5, len(traj.mask) - 0.5)
    ax_c.set_xlabel(zh("token 位置", "token position"))
    ax_c.set_ylabel(zh("回报 G_t", "return G_t"))
    ax_c.set_title(zh("(c) PPO 式的奖励：每个 token 上的 KL", "(c) PPO-style reward, KL per token"))
    ax_c.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)

    fig.tight_layout()
    return fig
