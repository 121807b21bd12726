"""How long a long notebook cell will take on this machine, said before it runs: its first steps timed, then scaled.

    seconds = sft_seconds(seed)            # a few SFT steps and a slice of the evaluation, on throwaway copies
    seconds = grpo_seconds(run)            # one GRPO step from run's SFT weights, times the steps, plus evaluation
    seconds = throughput_seconds(run)      # the two-process runs at the main run's measured speed

A pilot runs on its own policy copy and its own random streams, so the cell's results do not depend on it; its
estimate is a clock's number (shown as measured), a few per cent to a few tens of per cent off when the machine's
load changes while the cell runs.
"""
from __future__ import annotations

import time
from dataclasses import replace

from agentrl_ref.agent.arms import VERSION_EVAL_PROBLEMS
from agentrl_ref.agent.evaluation import evaluate
from agentrl_ref.agent.grpo_config import GRPOConfig
from agentrl_ref.agent.grpo_trainer import grpo
from agentrl_ref.agent.pipeline import NOTEBOOK_SEED, fresh_policy
from agentrl_ref.agent.sft_trainer import SFTConfig, sft
from agentrl_ref.agent.task import make_task

PILOT_PROBLEMS = 32  # held-out problems the pilot evaluates, scaled up to the whole held-out set


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def sft_seconds(seed: int = NOTEBOOK_SEED, cfg: SFTConfig | None = None, n_test: int = 512, *, parts=None,
                pilot_steps: int = 3, greedy: bool = True) -> float:
    """Wall seconds run_sft(seed, cfg, parts, n_test) will take here: pilot_steps SFT steps on a fresh policy (after one
    untimed step), scaled to cfg.steps, and the held-out evaluation (sampled, and greedy if asked) timed on
    PILOT_PROBLEMS problems and scaled to the held-out set (an untrained policy writes longer: an upper estimate)."""
    cfg = replace(cfg or SFTConfig(), seed=seed)
    if not (isinstance(pilot_steps, int) and 1 <= pilot_steps <= cfg.steps):
        raise ValueError(f"pilot_steps must be an int in [1, {cfg.steps}], got {pilot_steps!r}")
    task = make_task(seed, n_test=n_test)
    policy = fresh_policy(seed)
    sft(policy, task, replace(cfg, steps=1), parts=parts)  # the first step pays torch's one-off start-up: not timed
    train = _timed(lambda: sft(policy, task, replace(cfg, steps=pilot_steps), parts=parts)) / pilot_steps
    problems = task.test[:PILOT_PROBLEMS]
    temperatures = (1.0, 0.0) if greedy else (1.0,)
    ev = sum(_timed(lambda t=t: evaluate(policy, problems, t, seed=seed)) for t in temperatures)
    return train * cfg.steps + ev * len(task.test) / len(problems)


def grpo_seconds(run, cfg: GRPOConfig | None = None, *, parts=None, pilot_steps: int = 1) -> float:
    """Wall seconds run_grpo(run, cfg) will take here: pilot_steps GRPO steps from a copy of run's SFT weights, scaled
    to cfg.steps, plus the evaluation after SFT as measured (the one after GRPO does the same work)."""
    cfg = replace(cfg or GRPOConfig(), seed=run.seed)
    if not (isinstance(pilot_steps, int) and 1 <= pilot_steps <= cfg.steps):
        raise ValueError(f"pilot_steps must be an int in [1, {cfg.steps}], got {pilot_steps!r}")
    policy = run.sft_policy()
    step = _timed(lambda: grpo(policy, run.task, replace(cfg, steps=pilot_steps), parts=parts)) / pilot_steps
    return step * cfg.steps + run.seconds.get("eval", 0.0)


def throughput_seconds(run, staleness, base: GRPOConfig, *, step_seconds: float) -> float:
    """Wall seconds measure_throughput(run, staleness, base) will take here at step_seconds per step of the main run's
    batch (e.g. from grpo_seconds or a finished run): the synchronous run does generation and training in turn, the
    others overlap them, and every published version is evaluated on the held-out slice. An upper estimate."""
    per_step = step_seconds * base.batch_size / GRPOConfig().batch_size
    sample = _timed(lambda: evaluate(run.sft_policy(), run.task.test[:PILOT_PROBLEMS], 1.0, seed=run.seed))
    evals = len(staleness) * (base.steps + 1) * sample * VERSION_EVAL_PROBLEMS / PILOT_PROBLEMS
    return len(staleness) * base.steps * per_step + evals / 2  # the evaluations run on both cores
