"""DAPO's sampling side (exercise 11): dynamic sampling and clip-higher, plus the entropy they are about.

A GRPO group whose rewards are all equal (every answer right, or every answer wrong) has advantage 0 on every token:
it costs a forward and a backward pass and teaches nothing, and under a token mean over the batch it still dilutes
the denominator. DAPO (arXiv 2503.14476) drops such groups and samples more until the batch is full; a real trainer
must bound how much more (verl: algorithm.filter_groups.max_num_gen_batches). Clip-higher decouples PPO's clip range
into eps_low and eps_high (DAPO: 0.2 / 0.28) so that a token with a positive advantage may rise further before its
gradient is cut, against entropy collapse.

    informative_groups(rewards, group_size)        bool [n_groups]: True where the rewards within the group differ
                                                   (max - min > 0; not "mean strictly between 0 and 1", which is
                                                   wrong for +-1 rewards, composite rewards and any other scale)
    fill_batch(draw, target_groups, group_size, max_draws, informative=informative_groups) -> FilledBatch
        calls draw() -> (groups, rewards) until it holds target_groups informative groups or has called it max_draws
        times; reports how many draws, groups and samples that took, and whether the batch is full (if not, it
        returns what it has: the caller decides, verl raises)
    clip_higher_loss(logp_new, logp_old, advantages, loss_mask, eps_low=0.2, eps_high=0.28)
        token mean over the batch (as exercise 7) of -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A): for A > 0 the
        ratio is cut at 1 + eps_high, for A < 0 at 1 - eps_low; eps_high acts only where the advantage is positive
    clip_fractions(logp_new, logp_old, advantages, loss_mask, eps_low, eps_high)
        logging: the share of trained tokens cut at the upper bound (A > 0) and at the lower bound (A < 0)
    mean_token_entropy(logits, loss_mask)          the policy's entropy per position, averaged over the loss mask
                                                   (never over padding, prompt or tool tokens)

Standard library and torch only. The same things in the frameworks: TRL 1.16 GRPOConfig epsilon / epsilon_high;
verl actor.clip_ratio_low / clip_ratio_high, algorithm.filter_groups.{enable, metric, max_num_gen_batches} and the
actor/entropy metric (agg_loss of entropy_from_logits over the response mask).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch


def _rewards(rewards, group_size: int) -> torch.Tensor:
    """rewards as a float64 [n_groups, group_size] tensor; ValueError naming what does not fit."""
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise ValueError(f"group_size must be an int >= 2 (a group needs two samples to differ), got {group_size!r}")
    # float64 from the start: a list of Python floats read as float32 would round a tiny spread away
    r = (rewards.detach().to(torch.float64) if isinstance(rewards, torch.Tensor)
         else torch.as_tensor(rewards, dtype=torch.float64))
    if r.dim() != 1:
        raise ValueError(f"rewards must be flat (one per sample, group after group), got shape {tuple(r.shape)}")
    if r.numel() % group_size:
        raise ValueError(f"{r.numel()} rewards do not split into groups of {group_size}")
    if not bool(torch.isfinite(r).all()):
        raise ValueError("rewards must be finite (score a failed sample, do not leave it NaN)")
    return r.view(-1, group_size)


def informative_groups(rewards, group_size: int) -> torch.Tensor:
    """bool [n_groups]: True where a group's rewards are not all equal (its spread max - min is > 0).

    rewards: one number per sample, group-major (the group_size samples of a prompt next to each other). Exactly
    the groups with a non-zero GRPO advantage somewhere, whatever the reward's scale (0/1, +-1, composite).
    """
    r = _rewards(rewards, group_size)
    return (r.max(dim=1).values - r.min(dim=1).values) > 0


@dataclass
class FilledBatch:
    """What fill_batch drew: the informative groups kept (at most target_groups, in the order drawn) and the cost."""

    groups: list = field(repr=False)
    draws: int              # calls to draw() (verl: num_gen_batches)
    drawn_groups: int       # groups drawn, informative or not
    drawn_samples: int      # samples drawn: drawn_groups * group_size (what generation cost)
    full: bool              # False: gave up after max_draws draws with fewer than target_groups groups

    @property
    def kept(self) -> int:
        return len(self.groups)


def _draw_once(draw: Callable[[], tuple[list, Any]], group_size: int, informative) -> tuple[list, list[bool]]:
    out = draw()
    if not (isinstance(out, tuple) and len(out) == 2):
        raise ValueError("draw() must return (groups, rewards)")
    groups, rewards = list(out[0]), out[1]
    keep = [bool(k) for k in informative(rewards, group_size)]
    if len(keep) != len(groups):
        raise ValueError(f"draw() returned {len(groups)} groups and rewards for {len(keep)} groups of {group_size}")
    return groups, keep


def fill_batch(draw: Callable[[], tuple[list, Any]], target_groups: int, group_size: int, max_draws: int,
               informative: Callable = informative_groups) -> FilledBatch:
    """Call draw() until target_groups informative groups are held or draw() was called max_draws times.

    draw() -> (groups, rewards): a list of groups (anything) and their rewards, flat and group-major; informative
    (rewards, group_size) says which groups count (verl's filter_groups.metric chooses what they are judged on). The
    batch keeps the first target_groups informative groups in the order drawn (the rest of the last draw is dropped,
    as verl's batch[:traj_bsz]). If max_draws draws do not fill it, it returns what it has with full=False (verl
    raises instead); it never loops without a bound.
    """
    for name, value in (("target_groups", target_groups), ("max_draws", max_draws)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    kept: list = []
    draws = drawn_groups = 0
    while len(kept) < target_groups and draws < max_draws:
        groups, keep = _draw_once(draw, group_size, informative)
        draws += 1
        drawn_groups += len(groups)
        kept += [g for g, k in zip(groups, keep) if k]
    return FilledBatch(kept[:target_groups], draws, drawn_groups, drawn_groups * group_size,
                       len(kept) >= target_groups)


def _check_loss_inputs(logp_new, logp_old, advantages, loss_mask, eps_low, eps_high) -> None:
    tensors = {"logp_new": logp_new, "logp_old": logp_old, "advantages": advantages, "loss_mask": loss_mask}
    for name, value in tensors.items():
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if value.shape != logp_new.shape:
            raise ValueError(f"{name} has shape {tuple(value.shape)}, logp_new has {tuple(logp_new.shape)}: "
                             "all four must be the same [B, T]")
    for name, eps in (("eps_low", eps_low), ("eps_high", eps_high)):
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < math.inf:
            raise ValueError(f"{name} must be a number > 0, got {eps!r}")
    if not eps_low < 1:
        raise ValueError(f"eps_low must be < 1 (the ratio's lower bound 1 - eps_low must stay positive), got {eps_low}")


def clip_higher_loss(logp_new: torch.Tensor, logp_old: torch.Tensor, advantages: torch.Tensor,
                     loss_mask: torch.Tensor, eps_low: float = 0.2, eps_high: float = 0.28) -> torch.Tensor:
    """Scalar: sum over the batch's trained tokens of -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A), divided by
    their number (exercise 7's token mean; an all-zero mask gives 0). r = exp(logp_new - logp_old).

    The min of the two objectives (the max of the two losses) is the pessimistic bound: for A > 0 the ratio is cut
    at 1 + eps_high, for A < 0 at 1 - eps_low, and a ratio past the other bound is not cut. eps_low = eps_high is
    exercise 7's clipped_pg_loss.
    """
    _check_loss_inputs(logp_new, logp_old, advantages, loss_mask, eps_low, eps_high)
    ratio = torch.exp(logp_new - logp_old)
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)
    per_token = -torch.minimum(ratio * advantages, clipped * advantages)
    mask = loss_mask.to(per_token.dtype)
    return (per_token * mask).sum() / mask.sum().clamp(min=1.0)


@torch.no_grad()
def clip_fractions(logp_new: torch.Tensor, logp_old: torch.Tensor, advantages: torch.Tensor,
                   loss_mask: torch.Tensor, eps_low: float = 0.2, eps_high: float = 0.28) -> dict[str, float]:
    """Logging only, over the trained tokens: {"clip_high": share with A > 0 and r > 1 + eps_high (no gradient: they
    may not rise further), "clip_low": share with A < 0 and r < 1 - eps_low}. verl logs pg_clipfrac (both)."""
    _check_loss_inputs(logp_new, logp_old, advantages, loss_mask, eps_low, eps_high)
    ratio = torch.exp(logp_new - logp_old)
    mask = loss_mask.to(torch.float32)
    n = mask.sum().clamp(min=1.0)
    high = ((advantages > 0) & (ratio > 1.0 + eps_high)).float() * mask
    low = ((advantages < 0) & (ratio < 1.0 - eps_low)).float() * mask
    return {"clip_high": float(high.sum() / n), "clip_low": float(low.sum() / n)}


def mean_token_entropy(logits: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Scalar: the entropy of the policy's next-token distribution, averaged over the positions where loss_mask is 1.

    logits [B, T, V] (any real numbers; -inf for a token the policy cannot pick), loss_mask [B, T] of 0/1. An
    all-zero mask gives 0. Differentiable (an entropy bonus could use it); log it under torch.no_grad().
    """
    if not isinstance(logits, torch.Tensor) or not isinstance(loss_mask, torch.Tensor):
        raise ValueError("logits and loss_mask must be torch tensors")
    if not logits.is_floating_point():
        raise ValueError(f"logits must be floating point, got {logits.dtype}")
    if logits.dim() < 2 or logits.shape[:-1] != loss_mask.shape:
        raise ValueError(f"logits {tuple(logits.shape)} must be loss_mask's shape {tuple(loss_mask.shape)} plus a "
                         "vocabulary dimension")
    # a token with probability 0 (logit -inf) adds 0 * log 0 = 0: its log-prob is clamped to a finite number first
    logp = torch.log_softmax(logits, dim=-1).clamp(min=torch.finfo(logits.dtype).min)
    entropy = -(logp.exp() * logp).sum(dim=-1)
    mask = loss_mask.to(entropy.dtype)
    return (entropy * mask).sum() / mask.sum().clamp(min=1.0)
