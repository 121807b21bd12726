"""Exercise 9's page machinery (agentrl_ref.teaching.ex9_rollout_correction): the low-precision samplers are real
copies in bf16 / fp8 that sample_episodes drives, the gap is measured on the trained tokens, and a tiny study runs
every arm and gives computed tables, verdicts and a figure."""
from __future__ import annotations

import math

import pytest
import torch

from agentrl_ref.agent.pipeline import fresh_policy
from agentrl_ref.agent.rollout import sample_episodes
from agentrl_ref.agent.task import make_task
from agentrl_ref.teaching.ex9_rollout_correction.mismatch_study import (
    ARMS, Bf16Sampler, Fp8Sampler, StudyConfig, _weights, measure_gap, train_arms,
)


@pytest.fixture(scope="module")
def tiny_study():
    cfg = StudyConfig(seeds=(0, 1), sft_steps=3, steps=2, prompts_per_step=2, group_size=2, n_eval=16)
    return train_arms(cfg)


def test_the_samplers_hold_rounded_copies_and_follow_the_trainer():
    policy = fresh_policy(0)
    bf16, fp8 = Bf16Sampler(policy), Fp8Sampler(policy)
    for sampler in (bf16, fp8):
        assert all(p.dtype == torch.bfloat16 for p in sampler.model.parameters())
    w = policy.head.weight
    assert torch.equal(bf16.model.head.weight, w.to(torch.bfloat16))
    assert torch.equal(fp8.model.head.weight, w.to(torch.float8_e4m3fn).to(torch.bfloat16))
    with torch.no_grad():
        policy.head.weight.add_(1.0)
    bf16.sync(policy)
    assert torch.equal(bf16.model.head.weight, policy.head.weight.to(torch.bfloat16))
    assert policy.head.weight.dtype == torch.float32     # the trainer's weights are untouched


def test_bf16_sampling_runs_and_its_log_probs_differ_a_little():
    task = make_task(0, n_test=16)
    policy = fresh_policy(0)
    episodes = sample_episodes(Bf16Sampler(policy), list(task.test), generator=torch.Generator().manual_seed(0))
    assert len(episodes) == 16
    gap = measure_gap(policy, task, 0, n=16)
    assert gap.report["tokens"] > 0 and 0 < gap.report["max_abs_diff"] < 1
    assert len(gap.abs_diffs) == gap.report["tokens"]
    assert gap.counts and len(set(gap.counts)) == 1 and len(gap.lengths) == len(gap.seq_log_ratio)
    for k, seq, geo in zip(gap.lengths, gap.seq_log_ratio, gap.geo_log_ratio):
        assert math.isclose(geo * k, seq, rel_tol=1e-9, abs_tol=1e-15)   # |sum| / k, averaged: the mean |sum| / k


def test_the_arms_weights():
    trainer = torch.tensor([[-1.0, -1.0, -1.0]])
    sampler = torch.tensor([[-3.0, -1.0, -1.0]])    # ratio e^2 on the first token
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    cfg = StudyConfig()
    assert torch.equal(_weights("matched", trainer, sampler, mask, cfg), mask)
    assert torch.equal(_weights("mismatched", trainer, sampler, mask, cfg), mask)
    tis = _weights("token_tis", trainer, sampler, mask, cfg)
    assert torch.allclose(tis, torch.tensor([[3.0, 1.0, 0.0]]))
    mis = _weights("sequence_mis", trainer, sampler, mask, cfg)
    assert torch.equal(mis, torch.zeros(1, 3))       # the sequence ratio e^2 = 7.4 is outside [0, 3]
    with pytest.raises(ValueError):
        _weights("other", trainer, sampler, mask, cfg)


def test_a_tiny_study_gives_tables_verdicts_and_a_figure(tiny_study, artifacts):
    from agentrl_ref.teaching.ex9_rollout_correction.plots import plot_gap
    from agentrl_ref.teaching.ex9_rollout_correction.tables import (
        arm_verdicts, arms_table, gap_summary, gap_table, verdicts_markdown,
    )

    assert set(tiny_study.runs) == {(arm, s) for arm in ARMS for s in (0, 1)}
    assert set(tiny_study.gaps) == {"bf16", "fp8"}
    assert tiny_study.runs[("matched", 0)].k3 < 1e-9 < tiny_study.runs[("mismatched", 0)].k3
    assert "bf16 副本" in gap_table(tiny_study) and "同精度采样" in arms_table(tiny_study)
    verdicts = arm_verdicts(tiny_study)
    assert len(verdicts) == 3 and all(v.text in verdicts_markdown(tiny_study) for v in verdicts)
    assert "k3 KL" in gap_summary(tiny_study)
    fig = plot_gap(tiny_study)
    assert len(fig.axes) == 2
    from agentrl_ref.teaching.shared.page_figure import page_problems

    assert not page_problems(fig), page_problems(fig)
    fig.savefig(artifacts / "figure-ex9-gap.png", bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_the_study_is_deterministic(tiny_study):
    again = train_arms(tiny_study.config)
    for key, run in tiny_study.runs.items():
        assert again.runs[key].correct == run.correct and again.runs[key].reward == run.reward
    assert again.gaps["bf16"].report == tiny_study.gaps["bf16"].report
