"""GRPO in one process: rollout workers and the trainer (trainer.py) joined by ex4's AsyncRolloutBuffer, on one
asyncio event loop.

    result = grpo(policy, task, GRPOConfig(max_staleness=1), parts=Parts(loss=my_loss, format_reward=my_fn))

Single thread: tasks switch only at awaits, so a run is deterministic (same seed -> same curves).
Generation and training do not overlap in wall time; schedule.replay() puts every chunk and step on the
simulated clock of a two-device system, with durations from schedule.COST_MODEL (a function of the work, so
the replay is deterministic too; the measured CPU seconds are kept beside it). two_process.py runs the same
trainer with the rollout worker in a second process, where they do overlap on the wall clock.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from agentrl_ref.agent.concurrency import run_coroutine
from agentrl_ref.agent.episode import Episode
from agentrl_ref.agent.grpo_config import GRPOConfig
from agentrl_ref.agent.schedule import Replay, replay
from agentrl_ref.agent.task import Task
from agentrl_ref.agent.trainer import Trainer


@dataclass
class GRPOResult:
    """history: one dict per trainer step; chunks: one dict per generated chunk; replay: simulated throughput."""

    config: GRPOConfig
    history: list[dict]
    chunks: list[dict]
    replay: Replay
    seconds: float          # wall time of the run
    dropped_stale: int
    dropped_overflow: int
    last_batch: list[Episode] = field(default_factory=list, repr=False)


async def grpo_async(policy, task: Task, cfg: GRPOConfig = GRPOConfig(), *, parts=None, on_update=None,
                     progress=None) -> GRPOResult:
    """grpo() for a running event loop (`await grpo_async(...)` in a notebook cell)."""
    trainer = Trainer(policy, task, cfg, parts, on_update, progress)
    t0 = time.perf_counter()
    policy.train()
    dropped_stale, dropped_overflow = await trainer.run()
    seconds = time.perf_counter() - t0
    chunks = [c for c in trainer.chunks if c is not None]
    rep = replay(chunks, [row["train_cost"] for row in trainer.history], cfg.n_workers, cfg.n_workers,
                 trainer.chunk_size, key="cost")
    return GRPOResult(cfg, trainer.history, chunks, rep, seconds, dropped_stale, dropped_overflow, trainer.last_batch)


def grpo(policy, task: Task, cfg: GRPOConfig = GRPOConfig(), *, parts=None, on_update=None,
         progress=None) -> GRPOResult:
    """Train policy in place with GRPO for cfg.steps trainer steps, from `parts` (a Parts or a dict; see parts.py):
    parts.loss(logp_new, logp_old, adv, mask, clip_eps), and parts.advantages(rewards [B], group_size,
    loss_mask [B, T]) -> [B, T], which, when given, replaces the default wiring parts.group_normalize then
    parts.broadcast_to_tokens (exercise 7's second blank).
    on_update(version, policy) runs after every trainer step, once the new version is published;
    progress(step, steps, text) after every step too (a progress display).
    """
    return run_coroutine(grpo_async(policy, task, cfg, parts=parts, on_update=on_update, progress=progress))
