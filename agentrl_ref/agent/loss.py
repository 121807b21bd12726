"""The student's blank in exercise 7: the masked, clipped policy-gradient loss (PPO surrogate, DAPO's batch token mean;
the GRPO paper averages per sequence first, see aggregation.py).

This file holds the only copy of the formula: the grading sandbox hides it, and the trainer takes
the loss as a plug-in (grpo(..., parts=Parts(loss=...))).
"""
from __future__ import annotations

import torch


def _check(logp_new, logp_old, advantages, loss_mask, clip_eps) -> None:
    tensors = {"logp_new": logp_new, "logp_old": logp_old, "advantages": advantages, "loss_mask": loss_mask}
    for name, value in tensors.items():
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if logp_new.dim() != 2:
        raise ValueError(f"logp_new must be [B, T], got shape {tuple(logp_new.shape)}")
    for name, value in tensors.items():
        if value.shape != logp_new.shape:
            raise ValueError(f"{name} has shape {tuple(value.shape)}, logp_new has {tuple(logp_new.shape)}: "
                             "all four must be the same [B, T]")
    if not (isinstance(clip_eps, (int, float)) and 0 < clip_eps < 1):
        raise ValueError(f"clip_eps must be a number in (0, 1), got {clip_eps!r}")


def clipped_pg_loss(logp_new: torch.Tensor, logp_old: torch.Tensor, advantages: torch.Tensor,
                    loss_mask: torch.Tensor, clip_eps: float = 0.2) -> torch.Tensor:
    """Scalar: token-mean over loss_mask of -min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A), ratio = exp(new - old).

    All inputs are [B, T] (advantages already per token, loss_mask 0/1); ValueError on a shape
    mismatch. The mean is sum(loss * mask) / sum(mask) over the whole batch: padding and tool tokens
    neither add to it nor dilute it. An all-zero mask gives 0.
    """
    _check(logp_new, logp_old, advantages, loss_mask, clip_eps)
    ratio = torch.exp(logp_new - logp_old)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    per_token = -torch.minimum(unclipped, clipped)
    mask = loss_mask.to(per_token.dtype)
    return (per_token * mask).sum() / mask.sum().clamp(min=1.0)


@torch.no_grad()
def pg_stats(logp_new: torch.Tensor, logp_old: torch.Tensor, advantages: torch.Tensor,
             loss_mask: torch.Tensor, clip_eps: float = 0.2) -> dict[str, float]:
    """Logging only, over the masked tokens: share taking the clipped branch (no gradient), that share among the
    tokens whose advantage is not 0 (a token with A = 0 is never clipped: a batch of equal rewards lowers clip_frac
    by itself), and k3 KL(old || new)."""
    _check(logp_new, logp_old, advantages, loss_mask, clip_eps)
    mask = loss_mask.to(torch.float32)
    n = mask.sum().clamp(min=1.0)
    log_ratio = (logp_new - logp_old).float()
    ratio = torch.exp(log_ratio)
    clipped = (torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages < ratio * advantages).float() * mask
    signal = mask * (advantages != 0).float()
    return {"clip_frac": float(clipped.sum() / n),
            "clip_frac_signal": float((clipped * signal).sum() / signal.sum()) if signal.sum() > 0 else float("nan"),
            "signal_frac": float(signal.sum() / n),
            "approx_kl": float((((ratio - 1) - log_ratio) * mask).sum() / n)}
