"""Ablations: short GRPO runs from the same SFT weights, one thing changed per arm.

    results = run_ablations(run)                 # the four below plus "cliff", sharing the baseline arm
    res = run_ablation("credit", run)            # one of them
    ablation_table(results)                      # Markdown

Every arm uses the run's seed, so both arms see the same prompts and the same random streams; the
only difference is the change named in the arm. Differences smaller than the seed-to-seed spread
(see EXTRA_SEEDS in bench/capstone.py) are "no difference" at this scale.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from agentrl_ref.agent.evaluation import EvalResult, evaluate
from agentrl_ref.agent.grpo_trainer import GRPOConfig, GRPOResult, grpo
from agentrl_ref.agent.parts import REWARD_WEIGHTS

ABLATION_GRPO = GRPOConfig(steps=16)  # the baseline arm: the main run's settings, fewer steps

ABLATIONS: dict[str, tuple[str, list[tuple[str, dict]]]] = {
    "tool_mask": ("Is the tool's result in the loss mask?",
                  [("tool result masked", {}), ("tool result trained", {"train_tool_tokens": True})]),
    "staleness": ("How stale may a batch be (ex4)?",
                  [("max_staleness=0", {"max_staleness": 0}), ("max_staleness=2", {"max_staleness": 2})]),
    "cosine": ("Cosine length term in the reward (ex5)?",
               [("cosine on", {}), ("cosine off", {"reward_weights": {**REWARD_WEIGHTS, "cos_len": 0.0}})]),
    "credit": ("Advantage on every trained token or only on the last one (ex6)?",
               [("broadcast", {}), ("last token only", {"credit": "last_token"})]),
}


CLIFF_SFT_STEPS = 60  # too short: the policy calls the tool but rarely copies its result


@dataclass
class Arm:
    """One short GRPO run: its label, the changed settings, the result and the held-out evaluation (sampled)."""

    label: str
    overrides: dict
    result: GRPOResult = field(repr=False)
    after: EvalResult
    seconds: float
    before: EvalResult | None = None  # sampled held-out evaluation of the weights GRPO started from

    @property
    def summary(self) -> dict:
        h = self.result.history
        rep = self.result.replay
        return {"accuracy": self.after.accuracy, "tool_rate": self.after.tool_rate,
                "copy_rate": self.after.copy_rate, "format_rate": self.after.format_rate,
                "correct_answer_chars": self.after.mean_correct_answer_chars,
                "response_tokens": self.after.mean_response_tokens,
                "mean_staleness": sum(r["staleness"] for r in h) / len(h),
                "sim_seconds": rep.total, "serial_seconds": rep.serial, "steps_waited": rep.steps_waited,
                "throughput": rep.throughput, "seconds": self.seconds}


@dataclass
class AblationResult:
    name: str
    question: str
    arms: list[Arm]


def _key(overrides: dict) -> str:
    return repr(sorted(overrides.items()))


def run_arm(run, label: str, overrides: dict, base: GRPOConfig = ABLATION_GRPO, loss_fn=None, parts=None) -> Arm:
    """GRPO from run's SFT weights with base.replace(**overrides, seed=run.seed), then a sampled held-out evaluation."""
    return _grpo_arm(run, run.sft_policy(), label, overrides, base, loss_fn, parts, run.before.get("sampled"))


def _grpo_arm(run, policy, label, overrides, base, loss_fn, parts, before) -> Arm:
    cfg = replace(base, **overrides, seed=run.seed)
    t0 = time.perf_counter()
    result = grpo(policy, run.task, cfg, loss_fn=loss_fn, parts=parts)
    seconds = time.perf_counter() - t0
    after = evaluate(policy, run.task.test, 1.0, seed=run.seed, parts=parts)
    return Arm(label, overrides, result, after, seconds, before)


def run_cliff(run, sft_steps: int = CLIFF_SFT_STEPS, *, base: GRPOConfig = ABLATION_GRPO, cache: dict | None = None,
              loss_fn=None, parts=None) -> AblationResult:
    """The cliff: the same GRPO after the run's SFT and after only sft_steps SFT steps (same seed, fresh policy).

    With too little SFT the policy calls the tool but does not copy the result, calling earns nothing,
    and GRPO drives the tool-call rate towards zero. Arm.before holds each start's copy rate.
    """
    from agentrl_ref.agent.pipeline import run_sft

    cache = {} if cache is None else cache
    if _key({}) not in cache:
        cache[_key({})] = run_arm(run, "baseline", {}, base, loss_fn, parts)
    full = cache[_key({})]
    short = run_sft(run.seed, replace(run.sft_config, steps=sft_steps), parts, len(run.task.test))
    arm = _grpo_arm(short, short.policy, f"SFT {sft_steps} steps", {}, base, loss_fn, parts, short.before["sampled"])
    label = f"SFT {run.sft_config.steps} steps"
    return AblationResult("cliff", "Does GRPO still find the tool after a too short SFT?",
                          [replace(full, label=label, overrides={}), arm])


def run_ablation(name: str, run, *, base: GRPOConfig = ABLATION_GRPO, cache: dict | None = None,
                 loss_fn=None, parts=None) -> AblationResult:
    """Both arms of ABLATIONS[name] (arms already in cache, keyed by their overrides, are reused)."""
    if name == "cliff":
        return run_cliff(run, base=base, cache=cache, loss_fn=loss_fn, parts=parts)
    if name not in ABLATIONS:
        raise ValueError(f"unknown ablation {name!r}; choose from {sorted(ABLATIONS)}")
    cache = {} if cache is None else cache
    question, arms = ABLATIONS[name]
    out = []
    for label, overrides in arms:
        key = _key(overrides)
        if key not in cache:
            cache[key] = run_arm(run, label, overrides, base, loss_fn, parts)
        out.append(replace(cache[key], label=label, overrides=overrides))
    return AblationResult(name, question, out)


ALL_ABLATIONS = (*ABLATIONS, "cliff")


def run_ablations(run, names=ALL_ABLATIONS, *, base: GRPOConfig = ABLATION_GRPO, loss_fn=None,
                  parts=None) -> dict[str, AblationResult]:
    """Every named ablation ("cliff" included); the baseline arm (no overrides) is trained once and shared."""
    cache: dict = {}
    return {name: run_ablation(name, run, base=base, cache=cache, loss_fn=loss_fn, parts=parts) for name in names}
