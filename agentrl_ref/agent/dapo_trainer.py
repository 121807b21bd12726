"""GRPO with DAPO's sampling side on the capstone's policy (exercise 11's page): clip-higher and dynamic sampling.

    cfg = DAPOConfig(eps_high=0.28, dynamic=True)
    run = train_dapo(policy, task, cfg, keep_at_samples=1280)   # trains policy in place
    run.history[k]["entropy"], run.kept_state                    # one row per step; the weights at 1280 samples

A synchronous, on-policy loop (one process trains one arm; no rollout workers), built from the capstone's parts:
sample_episodes, the composite reward (by default its accuracy term alone: DAPO's reward is correctness), exercise
6's group normalisation, exercise 3's loss mask; agentrl_ref.dapo_sampling for the rest. Each step:
  1. the batch: one generation batch of cfg.groups prompts x cfg.group_size samples, trained whole; or, with
     cfg.dynamic, fill_batch() draws generation batches of cfg.draw_groups prompts until it holds cfg.groups
     informative groups or has drawn cfg.max_draws batches (then it trains on what it has, and the row says so);
  2. one forward pass without gradient gives the old log-probs (the trainer's own, so the first update's ratio is
     exactly 1; TRL and verl recompute them too) and the policy's mean token entropy on the trained tokens (verl's
     actor/entropy);
  3. cfg.epochs passes of cfg.minibatches optimizer steps on consecutive slices, each on clip_higher_loss with
     (cfg.eps_low, cfg.eps_high). With one update per batch the ratio stays 1 and no clip ever acts: the ratio moves
     only from the second update on.
"""
from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field

import torch

from agentrl_ref.agent.arms import ACCURACY_ONLY
from agentrl_ref.agent.batch import Batch, collate, token_logp
from agentrl_ref.agent.concurrency import torch_threads
from agentrl_ref.agent.grpo_config import ADAM_BETAS
from agentrl_ref.agent.parts import build_reward_fn, reference_part, resolve_parts
from agentrl_ref.agent.rollout import sample_episodes
from agentrl_ref.agent.task import Task
from agentrl_ref.dapo_sampling import (
    FilledBatch, clip_fractions, clip_higher_loss, fill_batch, informative_groups, mean_token_entropy,
)


@dataclass(frozen=True)
class DAPOConfig:
    steps: int = 20
    groups: int = 8                 # groups trained per step (dynamic: informative groups wanted)
    group_size: int = 8
    dynamic: bool = False           # dynamic sampling: drop groups with equal rewards, draw more (bounded)
    draw_groups: int = 8            # prompts per generation batch when dynamic (verl: data.gen_batch_size)
    max_draws: int = 4              # generation batches a step may draw at most (verl: max_num_gen_batches)
    eps_low: float = 0.2
    eps_high: float = 0.2           # clip-higher: > eps_low (DAPO: 0.28)
    minibatches: int = 8            # optimizer steps per pass over a batch
    epochs: int = 2                 # passes over a batch
    lr: float = 1e-3
    reward_weights: dict = field(default_factory=lambda: dict(ACCURACY_ONLY))  # DAPO's reward: correctness only
    seed: int = 0

    def __post_init__(self):
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2 (GRPO normalises within a group)")
        if not 1 <= self.minibatches <= self.groups * self.group_size:
            raise ValueError(f"minibatches must be in [1, groups * group_size], got {self.minibatches}")
        if min(self.steps, self.epochs, self.max_draws, self.draw_groups, self.groups) < 1:
            raise ValueError("steps, epochs, max_draws, draw_groups and groups must be >= 1")

    @property
    def plain_samples(self) -> int:
        """Samples a step draws without dynamic sampling (one generation batch of `groups` prompts)."""
        return self.groups * self.group_size


@dataclass
class DAPORun:
    """history: one row per step (see train_dapo); kept_state: the weights after the last step whose samples drawn so
    far were <= keep_at_samples (None if not asked or no step was that cheap), kept_step: that step's index."""

    history: list[dict] = field(repr=False)
    kept_state: dict | None = field(default=None, repr=False)
    kept_step: int | None = None

    @property
    def samples(self) -> int:
        return self.history[-1]["samples_so_far"] if self.history else 0


class _Sampler:
    """draw() for fill_batch: a generation batch of n prompts x group_size samples from the current policy, as
    (groups of (episode, reward) pairs, flat rewards). It notes each sample's correctness (the reference
    accuracy_reward), the capstone's composite reward and the reward the arm trains on, for the step's row."""

    def __init__(self, policy, task: Task, cfg: DAPOConfig, n: int):
        self.policy, self.task, self.cfg, self.n = policy, task, cfg, n
        self.reward_fn = build_reward_fn(resolve_parts(), cfg.reward_weights)
        self.composite_fn = build_reward_fn(resolve_parts())
        self.accuracy = reference_part("accuracy_reward")
        self.rng = random.Random(f"ex11-{cfg.seed}")
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.reset()

    def reset(self) -> None:
        self.correct: list[int] = []
        self.composite: list[float] = []
        self.rewards: list[float] = []

    def __call__(self):
        g = self.cfg.group_size
        episodes = sample_episodes(self.policy, self.task.sample(self.rng, self.n), group_size=g, generator=self.gen)
        rewards = [float(self.reward_fn(e.answer_text, e.problem.answer)["total"]) for e in episodes]
        self.rewards += rewards
        self.correct += [int(self.accuracy(e.answer_text, e.problem.answer) == 1.0) for e in episodes]
        self.composite += [float(self.composite_fn(e.answer_text, e.problem.answer)["total"]) for e in episodes]
        groups = [list(zip(episodes[i:i + g], rewards[i:i + g])) for i in range(0, len(episodes), g)]
        return groups, torch.tensor(rewards)


def _fill(sampler: _Sampler, cfg: DAPOConfig) -> FilledBatch:
    if cfg.dynamic:
        return fill_batch(sampler, cfg.groups, cfg.group_size, cfg.max_draws)
    groups, _ = sampler()
    return FilledBatch(groups, 1, len(groups), len(groups) * cfg.group_size, True)


def _update(policy, opt, episodes, rewards: torch.Tensor, cfg: DAPOConfig, parts) -> dict:
    """Entropy and old log-probs from one forward pass, then cfg.epochs x cfg.minibatches clipped updates."""
    b = collate(episodes, parts)
    adv = parts.broadcast_to_tokens(parts.group_normalize(rewards, cfg.group_size), b.mask)
    with torch.no_grad():
        logits = policy(b.inputs)
        logp_old = torch.log_softmax(logits, -1).gather(2, b.targets[..., None])[..., 0]
        entropy = float(mean_token_entropy(logits, b.mask))
    rows = torch.arange(b.tokens.shape[0]).chunk(cfg.minibatches)
    losses, high, low = [], [], []
    cut_p = cut_n = pos_p = pos_n = 0.0   # old probabilities of the A > 0 tokens: all of them, those cut at the top
    for _ in range(cfg.epochs):
        for part in rows:
            sub = Batch(b.tokens[part], b.mask[part], logp_old[part])
            logp_new = token_logp(policy, sub)
            loss = clip_higher_loss(logp_new, sub.logp_old, adv[part], sub.mask, cfg.eps_low, cfg.eps_high)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            opt.step()
            with torch.no_grad():
                new = logp_new.detach()
                fractions = clip_fractions(new, sub.logp_old, adv[part], sub.mask, cfg.eps_low, cfg.eps_high)
                positive = (adv[part] > 0) & sub.mask.bool()
                cut = positive & (torch.exp(new - sub.logp_old) > 1.0 + cfg.eps_high)
                p_old = sub.logp_old.exp()
                pos_p, pos_n = pos_p + float(p_old[positive].sum()), pos_n + float(positive.sum())
                cut_p, cut_n = cut_p + float(p_old[cut].sum()), cut_n + float(cut.sum())
            losses.append(float(loss.detach()))
            high.append(fractions["clip_high"])
            low.append(fractions["clip_low"])
    return {"entropy": entropy, "loss": sum(losses) / len(losses), "clip_high": sum(high) / len(high),
            "clip_low": sum(low) / len(low), "trained_tokens": int(b.mask.sum()),
            "positive_tokens": pos_n, "positive_old_p": pos_p, "cut_tokens": cut_n, "cut_old_p": cut_p}


SKIPPED = {"informative": 0, "entropy": float("nan"), "loss": float("nan"), "clip_high": float("nan"),
           "clip_low": float("nan"), "trained_tokens": 0, "positive_tokens": 0.0, "positive_old_p": 0.0,
           "cut_tokens": 0.0, "cut_old_p": 0.0}


def train_dapo(policy, task: Task, cfg: DAPOConfig = DAPOConfig(), progress=None,
               keep_at_samples: int | None = None) -> DAPORun:
    """Train policy in place for cfg.steps steps. One row per step:
    draws, drawn_groups, drawn_samples, samples_so_far   what the step's generation cost
    groups, informative, full        groups trained, how many of them informative, False if the filler gave up
    drawn_informative                informative groups among all drawn (the rest of them were dropped as surplus)
    drawn_accuracy                   accuracy of every sample drawn (the current policy on fresh training problems)
    informative_composite            share of drawn groups whose capstone composite reward differs (logging only)
    entropy                          mean token entropy on the trained tokens, before the step's updates
    clip_high, clip_low              shares of trained tokens cut at 1 + eps_high (A > 0) / 1 - eps_low (A < 0)
    positive_tokens, positive_old_p, cut_tokens, cut_old_p
                                     over the updates: A > 0 tokens and the sum of their old probabilities, and the
                                     same for those cut at the upper bound
    A step whose filler found no informative group trains on nothing (its loss and entropy are NaN).
    keep_at_samples: keep a copy of the weights after the last step with samples_so_far <= it (DAPORun.kept_state).
    progress(step, steps, text) after each step."""
    parts = resolve_parts()
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr, betas=ADAM_BETAS)
    sampler = _Sampler(policy, task, cfg, cfg.draw_groups if cfg.dynamic else cfg.groups)
    run = DAPORun([])
    spent = 0
    policy.train()
    with torch_threads():
        for step in range(cfg.steps):
            sampler.reset()
            filled = _fill(sampler, cfg)
            spent += filled.drawn_samples
            drawn_informative = int(informative_groups(sampler.rewards, cfg.group_size).sum())
            row = {"step": step, "draws": filled.draws, "drawn_groups": filled.drawn_groups,
                   "drawn_samples": filled.drawn_samples, "samples_so_far": spent, "groups": filled.kept,
                   "full": filled.full, "drawn_informative": drawn_informative,
                   "drawn_accuracy": sum(sampler.correct) / len(sampler.correct),
                   "informative_composite": float(informative_groups(sampler.composite, cfg.group_size)
                                                  .double().mean())}
            if filled.groups:
                pairs = [pair for group in filled.groups for pair in group]
                rewards = torch.tensor([r for _, r in pairs])
                row["informative"] = int(informative_groups(rewards, cfg.group_size).sum())
                row.update(_update(policy, opt, [e for e, _ in pairs], rewards, cfg, parts))
            else:
                row.update(SKIPPED)
            run.history.append(row)
            if keep_at_samples is not None and spent <= keep_at_samples:
                run.kept_state, run.kept_step = copy.deepcopy(policy.state_dict()), step
            if progress is not None:
                progress(step + 1, cfg.steps, f"抽样准确率 {row['drawn_accuracy']:.0%}")
    return run
