"""The whole capstone in one call: task, SFT, evaluation, GRPO, evaluation.

    run = train(seed=0)                  # about 30 s on one idle core
    run.before["sampled"].accuracy, run.after["sampled"].tool_rate, run.sft_copy_rate
"""
from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass, field, replace

from agentrl_ref.agent.concurrency import start_jobs
from agentrl_ref.agent.evaluation import EvalResult, evaluate
from agentrl_ref.agent.grpo_config import GRPOConfig
from agentrl_ref.agent.grpo_trainer import GRPOResult, grpo
from agentrl_ref.agent.parts import uses_own_parts
from agentrl_ref.agent.policy import TinyPolicy, make_policy
from agentrl_ref.agent.sft_trainer import SFTConfig, sft
from agentrl_ref.agent.task import Task, make_task
from agentrl_ref.agent.vocab import VOCAB

NOTEBOOK_SEED = 0
EXTRA_SEEDS = (1, 2, 3)


@dataclass
class CapstoneRun:
    """Everything a notebook shows: the policy after GRPO, the SFT weights, evaluations, curves and timings."""

    seed: int
    task: Task
    policy: TinyPolicy
    sft_state: dict = field(repr=False)
    sft_log: dict = field(repr=False)
    grpo_result: GRPOResult | None = field(repr=False)
    before: dict[str, EvalResult] = field(default_factory=dict)  # "sampled" (temperature 1), "greedy"
    after: dict[str, EvalResult] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)      # wall clock: "sft", "grpo", "eval"
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # CPU time of this process, same keys
    loadavg: tuple[float, float, float] = (0.0, 0.0, 0.0)        # os.getloadavg() when the run ended
    sft_config: SFTConfig = SFTConfig()

    @property
    def sft_copy_rate(self) -> float:
        """Accuracy after SFT among the sampled held-out episodes that called the tool (must be >= 0.8)."""
        return self.before["sampled"].copy_rate

    def sft_policy(self) -> TinyPolicy:
        """A fresh copy of the policy as it was after SFT."""
        policy = copy.deepcopy(self.policy)
        policy.load_state_dict(self.sft_state)
        return policy


def evaluate_both(policy, task: Task, seed: int, greedy: bool = True) -> dict[str, EvalResult]:
    """Held-out evaluation sampled at temperature 1 and greedy (scored with the references, see evaluation.py)."""
    out = {"sampled": evaluate(policy, task.test, 1.0, seed=seed)}
    if greedy:
        out["greedy"] = evaluate(policy, task.test, 0.0, seed=seed)
    return out


def fresh_policy(seed: int, state: dict | None = None) -> TinyPolicy:
    """The policy of `seed` as initialised (or with `state` loaded)."""
    policy = make_policy(len(VOCAB), seed)
    if state is not None:
        policy.load_state_dict(state)
    return policy


def run_sft(seed: int = NOTEBOOK_SEED, sft_cfg: SFTConfig | None = None, parts=None, n_test: int = 512, *,
            greedy: bool = True, progress=None) -> CapstoneRun:
    """make_task(seed), a policy initialised with seed, SFT, and the 'before' evaluation (grpo_result is None).

    progress(step, steps, text) is called after every SFT step (see sft())."""
    task = make_task(seed, n_test=n_test)
    policy = fresh_policy(seed)
    cfg = replace(sft_cfg or SFTConfig(), seed=seed)
    t0, c0 = time.perf_counter(), time.process_time()
    log = sft(policy, task, cfg, parts=parts, progress=progress)
    seconds, cpu = {"sft": time.perf_counter() - t0}, {"sft": time.process_time() - c0}
    t0, c0 = time.perf_counter(), time.process_time()
    before = evaluate_both(policy, task, seed, greedy)
    seconds["eval"], cpu["eval"] = time.perf_counter() - t0, time.process_time() - c0
    state = copy.deepcopy(policy.state_dict())
    return CapstoneRun(seed, task, policy, state, log, None, before, {}, seconds, cpu, os.getloadavg(), cfg)


def run_grpo(run: CapstoneRun, grpo_cfg: GRPOConfig | None = None, *, parts=None, progress=None) -> CapstoneRun:
    """GRPO on run.policy (in place) from its current weights, then the 'after' evaluation; returns run."""
    cfg = replace(grpo_cfg or GRPOConfig(), seed=run.seed)
    t0, c0 = time.perf_counter(), time.process_time()
    run.grpo_result = grpo(run.policy, run.task, cfg, parts=parts, progress=progress)
    run.seconds["grpo"], run.cpu_seconds["grpo"] = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    run.after = evaluate_both(run.policy, run.task, run.seed)
    run.seconds["eval"] = run.seconds.get("eval", 0.0) + time.perf_counter() - t0
    run.cpu_seconds["eval"] = run.cpu_seconds.get("eval", 0.0) + time.process_time() - c0
    run.loadavg = os.getloadavg()
    return run


def _reference_grpo(seed: int, state: dict, cfg: GRPOConfig, n_test: int) -> EvalResult:
    """GRPO with every part the reference, from `state`, then the sampled held-out evaluation (a worker's job)."""
    task = make_task(seed, n_test=n_test)
    policy = fresh_policy(seed, state)
    grpo(policy, task, cfg)
    return evaluate(policy, task.test, 1.0, seed=seed)


def run_grpo_compared(run: CapstoneRun, grpo_cfg: GRPOConfig | None = None, *, parts=None,
                      progress=None) -> tuple[CapstoneRun, EvalResult | None]:
    """run_grpo(); when any part is the student's (uses_own_parts), the same GRPO with the references runs at the same
    time in a worker process from the same weights. Returns (run, the reference's sampled evaluation or None)."""
    reference = None
    if uses_own_parts(parts):
        cfg = replace(grpo_cfg or GRPOConfig(), seed=run.seed)
        state = copy.deepcopy(run.policy.state_dict())
        reference = start_jobs(_reference_grpo, [(run.seed, state, cfg, len(run.task.test))])
    run_grpo(run, grpo_cfg, parts=parts, progress=progress)
    return run, (reference.get()[0][0] if reference is not None else None)


def train(seed: int = NOTEBOOK_SEED, *, sft_cfg: SFTConfig | None = None, grpo_cfg: GRPOConfig | None = None,
          parts=None, n_test: int = 512) -> CapstoneRun:
    """run_sft then run_grpo: the full capstone for one seed (parts as in grpo())."""
    return run_grpo(run_sft(seed, sft_cfg, parts, n_test), grpo_cfg, parts=parts)
