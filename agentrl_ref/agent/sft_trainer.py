"""Supervised warm-up on synthetic episodes: the tool is used only sometimes, and the loss mask is ex3's.

SFT must teach the policy to copy the tool's result into its box (the "copy rate" after SFT, measured
by evaluate(), should be >= 80%): RL can only reinforce what the policy already sometimes does, and a
policy that calls the tool but then answers wrongly gets no reward for calling it.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from agentrl_ref.agent.batch import collate
from agentrl_ref.agent.episode import Episode, demo_episode
from agentrl_ref.agent.parts import resolve_parts
from agentrl_ref.agent.task import Problem, Task
from agentrl_ref.agent.concurrency import torch_threads


@dataclass(frozen=True)
class SFTConfig:
    steps: int = 400
    batch_size: int = 64
    p_tool: float = 0.25  # share of demonstrations that call the tool
    lr: float = 3e-3
    warmup: int = 20
    seed: int = 0


def think_variants(problem: Problem, use_tool: bool) -> tuple[str, ...]:
    """What a demonstration writes between <think> and </think>: nothing after a tool call, else nothing or the expr.

    After a tool call the answer's digits then sit at a fixed distance behind the tool's digits,
    which is what lets a 2-layer model learn to copy them in a few hundred steps.
    """
    return ("",) if use_tool else ("", problem.expr)


def demonstrations(task: Task, rng: random.Random, n: int, p_tool: float) -> list[Episode]:
    """n well-formed episodes with correct answers; each calls the tool with probability p_tool."""
    out = []
    for problem in task.sample(rng, n):
        use_tool = rng.random() < p_tool
        out.append(demo_episode(problem, use_tool, rng.choice(think_variants(problem, use_tool))))
    return out


def lr_at(step: int, cfg: SFTConfig) -> float:
    """Linear warm-up over cfg.warmup steps, then constant."""
    return cfg.lr * min(1.0, (step + 1) / cfg.warmup)


def sft(policy, task: Task, cfg: SFTConfig = SFTConfig(), parts=None, progress=None) -> dict:
    """Train policy in place on cfg.steps batches of demonstrations; returns {"loss": [...], "seconds": float}.

    progress(step, steps, text), when given, is called after every step (a progress display decides how often to draw).

    The loss is the mean cross-entropy over the tokens where the shifted loss mask is 1 (labels
    elsewhere are ignore_index), i.e. over the assistant's own tokens and its <|im_end|>.
    """
    parts = resolve_parts(parts)
    rng = random.Random(f"sft-{cfg.seed}")
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, betas=(0.9, 0.98), weight_decay=0.0)
    losses = []
    t0 = time.perf_counter()
    policy.train()
    with torch_threads():
        for step in range(cfg.steps):
            batch = collate(demonstrations(task, rng, cfg.batch_size, cfg.p_tool), parts)
            labels = batch.targets.masked_fill(batch.mask == 0, -100)
            logits = policy(batch.inputs)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
            for group in opt.param_groups:
                group["lr"] = lr_at(step, cfg)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
            if progress is not None:
                progress(step + 1, cfg.steps, f"loss {losses[-1]:.3f}")
    return {"loss": losses, "seconds": time.perf_counter() - t0}
