"""Exercise 11's training on the capstone's policy (agentrl_ref.agent.dapo_trainer, dapo_arms) and its page's tables,
verdicts and figures, on a tiny study: a few steps of tiny batches, two seeds."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from agentrl_ref.agent.dapo_arms import DAPO_ARMS, DAPO_COMPARISONS, EQUAL_COST, run_dapo_study
from agentrl_ref.agent.dapo_trainer import DAPOConfig, train_dapo
from agentrl_ref.agent.parts import REWARD_WEIGHTS
from agentrl_ref.agent.pipeline import fresh_policy
from agentrl_ref.agent.task import make_task

# the capstone's composite reward: after a few SFT steps no answer is right yet, but the lengths differ, so groups are
# informative and every arm trains (the page trains on correctness alone)
TINY = DAPOConfig(steps=3, groups=2, group_size=4, draw_groups=2, max_draws=3, minibatches=2, epochs=1,
                  reward_weights=dict(REWARD_WEIGHTS))


@pytest.fixture(scope="module")
def tiny_study():
    return run_dapo_study((0, 1), base=TINY, sft_steps=20, n_eval=16, processes=2)


def test_one_update_per_batch_never_clips():
    """With one update per batch the ratio is exactly 1 (the old log-probs are the trainer's own): no clip acts."""
    run = train_dapo(fresh_policy(0), make_task(0, n_test=4), replace(TINY, minibatches=1, epochs=1, eps_high=0.28))
    assert [(row["clip_high"], row["clip_low"]) for row in run.history] == [(0.0, 0.0)] * TINY.steps


def test_the_plain_arms_draw_one_batch_and_the_dynamic_arm_trains_only_informative_groups(tiny_study):
    for arm in ("symmetric", "clip_higher"):
        for run in tiny_study.runs_of(arm):
            assert all(row["draws"] == 1 and row["drawn_samples"] == TINY.plain_samples and row["groups"] == TINY.groups
                       for row in run.history)
    for run in tiny_study.runs_of("dynamic"):
        for row in run.history:
            assert row["informative"] == row["groups"] <= TINY.groups
            assert row["drawn_samples"] == row["draws"] * TINY.draw_groups * TINY.group_size
            assert row["full"] or row["draws"] == TINY.max_draws
            assert row["drawn_informative"] >= row["informative"]
        assert run.history[-1]["samples_so_far"] == sum(row["drawn_samples"] for row in run.history)


def test_the_equal_cost_arm_is_the_dynamic_arm_at_the_plain_arms_samples(tiny_study):
    budget = TINY.steps * TINY.plain_samples
    for seed in tiny_study.seeds:
        dynamic, equal = tiny_study.runs[("dynamic", seed)], tiny_study.runs[(EQUAL_COST, seed)]
        assert repr(equal.history) == repr(dynamic.history[:len(equal.history)])
        assert equal.samples <= budget
        if len(equal.history) < len(dynamic.history):
            assert dynamic.history[len(equal.history)]["samples_so_far"] > budget


def test_a_filler_that_gives_up_trains_on_what_it_has():
    run = train_dapo(fresh_policy(1), make_task(1, n_test=4),
                     replace(TINY, dynamic=True, max_draws=1, steps=4, reward_weights={"fmt": 0.0, "acc": 1.0,
                                                                                        "cos_len": 0.0}))
    for row in run.history:
        assert row["draws"] == 1 and row["groups"] == row["informative"] <= TINY.groups
        assert row["full"] == (row["groups"] == TINY.groups)
        assert math.isnan(row["entropy"]) == (row["groups"] == 0)


def test_the_study_is_the_same_in_one_process_and_in_two(tiny_study):
    again = run_dapo_study((0, 1), base=TINY, sft_steps=20, n_eval=16, processes=1)
    assert set(again.runs) == set(tiny_study.runs) == {(arm, s) for arm in [*DAPO_ARMS, EQUAL_COST] for s in (0, 1)}
    for key, run in tiny_study.runs.items():
        assert repr(again.runs[key].history) == repr(run.history)   # NaN where a step trained on nothing
        assert again.runs[key].after.correct == run.after.correct and again.runs[key].after.entropy == run.after.entropy


def test_held_out_entropy_is_one_number_per_problem(tiny_study):
    for run in tiny_study.runs.values():
        assert len(run.after.entropy) == len(run.after.correct) == 16
        assert all(0.0 <= h <= math.log(64) for h in run.after.entropy)


def test_the_page_gets_tables_verdicts_and_figures(tiny_study, artifacts):
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.ex11_dapo_sampling.plots import plot_clip, plot_sampling
    from agentrl_ref.teaching.ex11_dapo_sampling.tables import (
        arms_table, clip_summary, clip_table, sampling_summary, sampling_table, study_verdicts, verdicts_markdown,
    )
    from agentrl_ref.teaching.shared.page_figure import page_problems

    assert "clip-higher 0.2/0.28" in arms_table(tiny_study) and "动态采样，抽样数相同时" in arms_table(tiny_study)
    assert "在上界被截" in clip_table(tiny_study) and "每步抽的样本" in sampling_table(tiny_study)
    verdicts = study_verdicts(tiny_study)
    assert len(verdicts) == len(DAPO_COMPARISONS) and all(v.text in verdicts_markdown(tiny_study) for v in verdicts)
    assert "旧概率" in clip_summary(tiny_study) and "verl" in sampling_summary(tiny_study)
    for name, plot in (("clip", plot_clip), ("sampling", plot_sampling)):
        fig = plot(tiny_study)
        assert not page_problems(fig), page_problems(fig)
        fig.savefig(artifacts / f"figure-ex11-{name}-tiny.png", bbox_inches="tight")
        plt.close(fig)


def test_the_config_refuses_nonsense():
    for bad in ({"group_size": 1}, {"minibatches": 0}, {"minibatches": 99}, {"steps": 0}, {"max_draws": 0}):
        with pytest.raises(ValueError):
            replace(TINY, **bad)


def test_torch_threads_are_restored():
    before = torch.get_num_threads()
    train_dapo(fresh_policy(0), make_task(0, n_test=4), replace(TINY, steps=1))
    assert torch.get_num_threads() == before
