"""Exercise 6's examples and plots: the seed example, the multi-turn trajectory, GRPO broadcast (E8), PPO-style KL
(E9)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

from conftest import STRICT_WARNINGS  # noqa: E402
from agentrl_ref.teaching.ex6_token_credit.credit_plots import (  # noqa: E402
    GAMMAS, LONG_SEGMENTS, STRATEGIES, credit, credit_facts, grpo_group, last_token_returns, long_trajectory,
    plot_outcome_credit, plot_strategies, ppo_style_returns, seed_example, untrained_runs,
)

pytestmark = STRICT_WARNINGS  # no torch or matplotlib warning on any path (see conftest)


def test_seed_example_is_the_seed_pages():
    seed = seed_example()
    assert seed.mask.tolist() == [0, 0, 1, 1, 0, 1, 1, 1, 0]
    assert credit(seed)["KL-weighted"][5].item() == pytest.approx(2 / 3, abs=1e-6)


def test_long_trajectory_trains_only_assistant_tokens():
    traj = long_trajectory()
    assert len(traj.mask) == sum(n for _, n in LONG_SEGMENTS)
    trained = [t for label, lo, hi in traj.segments if label == "asst" for t in range(lo, hi)]
    assert traj.mask.nonzero().flatten().tolist() == trained
    assert bool((traj.kl[traj.mask == 0] == 0).all()) and bool((traj.kl[traj.mask == 1] > 0).all())
    assert torch.equal(traj.kl, long_trajectory().kl)  # deterministic
    assert traj.kl.max().item() == pytest.approx(2.5)


@pytest.mark.parametrize("reward", [1.0, -0.5])
def test_every_strategy_hands_out_the_whole_reward(reward):
    for traj in (seed_example(), long_trajectory()):
        for name, values in credit(traj, reward).items():
            assert values.sum().item() == pytest.approx(reward, abs=1e-5), name
            assert bool((values[traj.mask == 0] == 0).all()), name


def test_untrained_runs():
    assert untrained_runs(torch.tensor([0, 0, 1, 1, 0, 1, 0])) == [(0, 2), (4, 5), (6, 7)]
    assert untrained_runs(torch.tensor([1, 1])) == []
    assert untrained_runs(torch.tensor([0, 0])) == [(0, 2)]


def test_grpo_group_and_the_e8_facts():
    group = grpo_group()
    assert group.mask.sum(dim=1).tolist() == [20, 34, 12, 27, 40, 16]
    assert group.advantages.sum().item() == pytest.approx(0.0, abs=1e-5)
    assert (group.advantages > 0).tolist() == [r == 1 for r in group.rewards.tolist()]
    traj = long_trajectory()
    advantage = group.advantages[0].item()
    facts = credit_facts(group, traj, advantage)
    assert facts.broadcast_rows_constant and facts.gamma1_equals_broadcast
    for gamma in GAMMAS:
        assert facts.first_token_share[gamma] == pytest.approx(gamma ** facts.distance, rel=1e-4)
    last = int(traj.mask.nonzero()[-1])
    gamma1 = last_token_returns(traj, advantage)[1.0]
    assert torch.allclose(gamma1[: last + 1], torch.full((last + 1,), advantage))  # every token up to the last
    assert bool((gamma1[last + 1:] == 0).all())  # padding after it gets nothing
    with pytest.raises(ValueError):
        grpo_group(rewards=(1, 0), lengths=(3,))


def test_ppo_style_returns_subtract_the_kl_still_to_come():
    traj = long_trajectory()
    beta = 0.1
    returns = ppo_style_returns(traj, 1.0, beta)
    last = int(traj.mask.nonzero()[-1])
    assert returns[last].item() == pytest.approx(1.0 - beta * traj.kl[last].item(), abs=1e-6)
    first = int(traj.mask.nonzero()[0])
    assert returns[first].item() == pytest.approx(1.0 - beta * traj.kl.sum().item(), abs=1e-5)
    trained = returns[traj.mask.bool()]
    assert bool((trained[1:] >= trained[:-1]).all())  # later tokens owe less KL


def test_plots_draw_without_warnings():
    import matplotlib.pyplot as plt

    fig = plot_strategies([seed_example(), long_trajectory()])
    assert len(fig.axes) == len(STRATEGIES) * 2
    plt.close(fig)
    group = grpo_group()
    fig = plot_outcome_credit(group, long_trajectory(), group.advantages[0].item())
    assert len(fig.axes) == 4  # three panels and the colour bar
    fig.canvas.draw()
    plt.close(fig)
