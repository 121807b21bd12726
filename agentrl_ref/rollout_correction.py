"""Rollout-training mismatch: importance weights, TIS and MIS (exercise 9).

The sampler (vLLM or SGLang in bf16) and the trainer (fp32) give different log-probs for the same weights and the
same tokens, so "on-policy" data is quietly off-policy. The correction reweights each trained token's loss by
w = pi_train / pi_sampler, computed from the two engines' log-probs of the sampled tokens:

    log_importance_weights(trainer_lp, sampler_lp, mask, level)   log w per position, 0 where mask is 0:
        "token"      log pi_train(y_t) - log pi_sampler(y_t)
        "sequence"   the sum over the sequence's trained tokens (w is the product of the token ratios), broadcast
        "geometric"  that sum divided by the number of trained tokens (the geometric mean of the token ratios)
    importance_weights(...)                     exp(log w) on trained tokens, 0 elsewhere
    truncated_weights(log_w, mask, cap)         TIS: min(w, cap); the ratio is truncated, not the log-ratio
    masked_weights(log_w, mask, low, high)      MIS (IcePop): w where low <= w <= high, 0 outside
    mismatch_report(trainer_lp, sampler_lp, mask, low, high)
        k3 KL per trained token (an estimate of KL(sampler || trainer)), max |delta log p|, and the share of trained
        tokens whose token ratio lies outside [low, high]

The weights carry no gradient: they change the measure the loss averages over, not the objective (the policy
gradient flows through the loss's own ratio, exercise 7). Everything runs under torch.no_grad on detached inputs.
Positions where mask is 0 (prompt, tool results, padding) never enter a weight: their log-probs may be anything,
even -inf or nan. Tensors of shape (..., T): the last dimension is the sequence.

The same formulas: TRL 1.16 GRPOTrainer (vllm_importance_sampling_mode token_truncate / token_mask /
sequence_truncate / sequence_mask), verl's rollout_corr_helper.py (token / sequence weights, geometric-mean
rejection), IcePop (the Ring-1T report: mask tokens whose ratio leaves [alpha, beta]).
"""
from __future__ import annotations

import math

import torch

LEVELS = ("token", "sequence", "geometric")
# exp(20) is about 4.9e8: beyond it a float32 product of ratios only overflows (verl's SAFETY_BOUND)
SAFETY_BOUND = 20.0


def _inputs(trainer_logprobs, sampler_logprobs, mask) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Detached float tensors and a bool mask of one shape; ValueError naming what does not fit."""
    trainer = torch.as_tensor(trainer_logprobs).detach().to(torch.float32)
    sampler = torch.as_tensor(sampler_logprobs).detach().to(torch.float32)
    keep = torch.as_tensor(mask).detach()
    if not (trainer.shape == sampler.shape == keep.shape):
        raise ValueError(f"trainer_logprobs {tuple(trainer.shape)}, sampler_logprobs {tuple(sampler.shape)} and mask "
                         f"{tuple(keep.shape)} must have one shape")
    if trainer.dim() == 0:
        raise ValueError("log-probs must have a sequence dimension (shape (..., T))")
    if not bool(((keep == 0) | (keep == 1)).all()):
        raise ValueError("mask must hold 0 and 1 only")
    keep = keep.bool()
    diff = trainer - sampler
    if not bool(torch.isfinite(diff[keep]).all()):
        raise ValueError("log-probs of the trained tokens (mask 1) must be finite")
    return trainer, sampler, keep


def _as_mask(mask, like: torch.Tensor) -> torch.Tensor:
    keep = torch.as_tensor(mask).detach()
    if keep.shape != like.shape:
        raise ValueError(f"mask {tuple(keep.shape)} and log_weights {tuple(like.shape)} must have one shape")
    return keep.bool()


def _check_range(low, high) -> None:
    if not (isinstance(low, (int, float)) and isinstance(high, (int, float)) and 0 <= low <= high < math.inf):
        raise ValueError(f"need 0 <= low <= high (finite), got low={low!r}, high={high!r}")


@torch.no_grad()
def log_importance_weights(trainer_logprobs, sampler_logprobs, mask, level: str = "token") -> torch.Tensor:
    """log(pi_train / pi_sampler) at the given level, one value per position; 0.0 where mask is 0."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    trainer, sampler, keep = _inputs(trainer_logprobs, sampler_logprobs, mask)
    log_ratio = torch.where(keep, trainer - sampler, torch.zeros_like(trainer))
    if level == "token":
        log_w = log_ratio
    else:
        total = log_ratio.sum(dim=-1, keepdim=True)       # the log of the product of the token ratios
        if level == "geometric":
            total = total / keep.sum(dim=-1, keepdim=True).clamp(min=1)
        log_w = total.expand_as(log_ratio)
    return torch.where(keep, log_w, torch.zeros_like(log_w))


@torch.no_grad()
def importance_weights(trainer_logprobs, sampler_logprobs, mask, level: str = "token") -> torch.Tensor:
    """pi_train / pi_sampler at the given level on trained positions (log-ratio bounded at +-20), 0.0 elsewhere."""
    log_w = log_importance_weights(trainer_logprobs, sampler_logprobs, mask, level)
    keep = torch.as_tensor(mask).bool()
    return torch.where(keep, log_w.clamp(-SAFETY_BOUND, SAFETY_BOUND).exp(), torch.zeros_like(log_w))


@torch.no_grad()
def truncated_weights(log_weights, mask, cap: float) -> torch.Tensor:
    """TIS: min(w, cap) on trained positions, 0.0 elsewhere (w = exp(log_weights)). cap must be > 0."""
    if not (isinstance(cap, (int, float)) and math.isfinite(cap) and cap > 0):
        raise ValueError(f"cap must be a finite number > 0, got {cap!r}")
    log_w = torch.as_tensor(log_weights).detach().to(torch.float32)
    keep = _as_mask(mask, log_w)
    return torch.where(keep, log_w.exp().clamp(max=cap), torch.zeros_like(log_w))


@torch.no_grad()
def masked_weights(log_weights, mask, low: float, high: float) -> torch.Tensor:
    """MIS: w on trained positions whose w lies in [low, high], 0.0 elsewhere. Needs 0 <= low <= high."""
    _check_range(low, high)
    log_w = torch.as_tensor(log_weights).detach().to(torch.float32)
    keep = _as_mask(mask, log_w)
    w = log_w.exp()
    inside = (w >= low) & (w <= high)
    return torch.where(keep & inside, w, torch.zeros_like(w))


@torch.no_grad()
def mismatch_report(trainer_logprobs, sampler_logprobs, mask, low: float = 0.5, high: float = 2.0) -> dict:
    """How far the two engines disagree on the trained tokens: {"tokens", "k3_kl", "max_abs_diff", "out_of_range"}.

    k3_kl is the mean over trained tokens of r - 1 - log r with r = pi_train / pi_sampler (>= 0 for every token;
    an unbiased estimate of KL(sampler || trainer) on tokens the sampler drew); out_of_range is the share of trained
    tokens with r outside [low, high]. With no trained token every number is 0.0.
    """
    _check_range(low, high)
    trainer, sampler, keep = _inputs(trainer_logprobs, sampler_logprobs, mask)
    log_ratio = (trainer - sampler)[keep].to(torch.float64)
    n = int(log_ratio.numel())
    if n == 0:
        return {"tokens": 0, "k3_kl": 0.0, "max_abs_diff": 0.0, "out_of_range": 0.0}
    k3 = torch.expm1(log_ratio) - log_ratio
    ratio = log_ratio.exp()
    outside = (ratio < low) | (ratio > high)
    return {"tokens": n, "k3_kl": float(k3.mean()), "max_abs_diff": float(log_ratio.abs().max()),
            "out_of_range": float(outside.double().mean())}
