"""The ablations as data: every arm (what it changes against the main run's settings) and every ablation (the arms it
compares and on which metrics). ablations.py runs them; bench/capstone.py adds BENCH_ABLATIONS.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from agentrl_ref.agent.grpo_config import GRPOConfig
from agentrl_ref.agent.parts import REWARD_WEIGHTS

# the page's seeds; bench/capstone.py runs more. AGENTRL_CAPSTONE_SEEDS="0" (a comma-separated list) runs fewer, e.g.
# on a slow machine or in a smoke test: the tables and verdicts are then computed from those seeds only.
PAGE_SEEDS = tuple(int(s) for s in os.environ.get("AGENTRL_CAPSTONE_SEEDS", "0,1,2").split(","))
# every arm: the main run's settings with fewer steps and half its prompts per step (the page's time budget)
ABLATION_GRPO = GRPOConfig(steps=16, prompts_per_step=16)
CLIFF_SFT_STEPS = 60             # too short: the policy calls the tool but rarely copies its result
VERSION_EVAL_PROBLEMS = 128      # held-out problems on which every published version of a tracked arm is evaluated
ACCURACY_ONLY = {"fmt": 0.0, "acc": 1.0, "cos_len": 0.0}
# the off-policy arms: data up to 8 versions old (the single-process trainer lets its workers run as far ahead as the
# admission rule allows, so the lag grows step by step and reaches 8 only at the end: off_policy_lags), four minibatch
# updates per batch as AReaL's default ppo_n_minibatches (so a proximal policy exists between them), 12 steps (the
# page's budget; the lag is the point), and how far each batch moved the policy measured (one or two extra forwards)
OFF_POLICY = {"max_staleness": 8, "minibatches": 4, "steps": 12, "measure_steps": True}


@dataclass(frozen=True)
class ArmSpec:
    """label: Chinese, as tables, verdicts and figures show it; overrides: GRPOConfig fields (steps: at most that
    many); start: "sft" or "short_sft"; versions: evaluate every published policy version on VERSION_EVAL_PROBLEMS
    held-out problems."""

    label: str
    overrides: dict = field(default_factory=dict)
    start: str = "sft"
    versions: bool = False


ARMS: dict[str, ArmSpec] = {
    "baseline": ArmSpec("默认"),
    "tool_trained": ArmSpec("也训练 tool 结果", {"train_tool_tokens": True}),
    "stale0": ArmSpec("max_staleness=0", {"max_staleness": 0}, versions=True),
    "stale2": ArmSpec("max_staleness=2", {"max_staleness": 2}, versions=True),
    "cos_off": ArmSpec("关掉 cosine 项", {"reward_weights": {**REWARD_WEIGHTS, "cos_len": 0.0}}),
    "last_token": ArmSpec("只给最后一个训练 token", {"credit": "last_token"}),
    "seq_mean": ArmSpec("先每条平均（GRPO 论文）", {"loss_agg": "seq_mean"}),
    "constant": ArmSpec("除以常数（Dr. GRPO）", {"loss_agg": "constant"}),
    "cliff_full": ArmSpec("短 SFT，完整奖励", start="short_sft"),
    "cliff_acc": ArmSpec("短 SFT，只看正确性", {"reward_weights": ACCURACY_ONLY}, start="short_sft"),
    "cliff_no_std": ArmSpec("短 SFT，不除以标准差", {"scale_rewards": "none"}, start="short_sft"),
    "stale_behave": ArmSpec("对行为策略取比值（PPO 原样）", {**OFF_POLICY, "correction": "behave"}),
    "stale_decoupled": ArmSpec("解耦 PPO（AReaL）", {**OFF_POLICY, "correction": "decoupled"}),
    "stale_recompute": ArmSpec("不修正", {**OFF_POLICY, "correction": "recompute"}),
    # the page's hypothesis about the decoupled arm, tested by bench/capstone.py (not on the page: its time budget)
    "stale_behave_slow": ArmSpec("对行为策略取比值，学习率 1/4",
                                 {**OFF_POLICY, "correction": "behave", "lr": ABLATION_GRPO.lr / 4}),
    "stale_decoupled_slow": ArmSpec("解耦 PPO，学习率 1/4",
                                    {**OFF_POLICY, "correction": "decoupled", "lr": ABLATION_GRPO.lr / 4}),
}

@dataclass(frozen=True)
class Ablation:
    """question (English); arms (the first is the reference arm); comparisons: (metric, arm A, arm B) judged per seed
    (metrics: see Ablations.compare)."""

    question: str
    arms: tuple[str, ...]
    comparisons: tuple[tuple[str, str, str], ...]


ABLATIONS: dict[str, Ablation] = {
    "tool_mask": Ablation("Is the tool's result in the loss mask (ex3)?", ("baseline", "tool_trained"),
                          (("accuracy", "baseline", "tool_trained"),)),
    "staleness": Ablation("How stale may a batch be (ex4)?", ("stale0", "stale2"),
                          (("sim_seconds", "stale0", "stale2"), ("accuracy", "stale0", "stale2"),
                           ("time_accuracy", "stale0", "stale2"))),
    "cosine": Ablation("Cosine length term in the reward (ex5)?", ("baseline", "cos_off"),
                       (("accuracy", "baseline", "cos_off"), ("answer_chars", "baseline", "cos_off"))),
    "credit": Ablation("Advantage on every trained token or only on the last one (ex6)?", ("baseline", "last_token"),
                       (("accuracy", "baseline", "last_token"),)),
    "loss_agg": Ablation("How are the per-token losses averaged?", ("baseline", "seq_mean", "constant"),
                         (("accuracy", "baseline", "seq_mean"), ("response_tokens", "baseline", "seq_mean"),
                          ("accuracy", "baseline", "constant"))),
    "cliff": Ablation("What drives the tool calls down after a too short SFT?",
                      ("cliff_full", "cliff_acc", "cliff_no_std"),
                      (("start_tool_rate", "cliff_full", "cliff_full"), ("start_tool_rate", "cliff_acc", "cliff_acc"),
                       ("start_tool_rate", "cliff_no_std", "cliff_no_std"), ("tool_rate", "cliff_full", "cliff_acc"),
                       ("tool_rate", "cliff_full", "cliff_no_std"))),
    "offpolicy": Ablation("Data up to 8 versions old: against which policy is the ratio taken?",
                          ("stale_behave", "stale_decoupled", "stale_recompute"),
                          (("accuracy", "stale_behave", "stale_decoupled"),
                           ("accuracy", "stale_behave", "stale_recompute"),
                           ("accuracy", "stale_recompute", "stale_decoupled"))),
}
ALL_ABLATIONS = tuple(ABLATIONS)  # what the page runs
# ablations bench/capstone.py runs beside the page's (too long for the page's budget)
BENCH_ABLATIONS: dict[str, Ablation] = {
    "offpolicy_slow": Ablation("The same two objectives at a quarter of the learning rate",
                               ("stale_behave_slow", "stale_decoupled_slow"),
                               (("accuracy", "stale_behave_slow", "stale_decoupled_slow"),)),
}
ABLATION_SPECS: dict[str, Ablation] = {**ABLATIONS, **BENCH_ABLATIONS}  # every ablation run_ablations knows by name
