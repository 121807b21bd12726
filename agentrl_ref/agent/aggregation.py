"""How the per-token losses of a batch become one number: three choices real frameworks offer.

    loss_fn = aggregated(clipped_pg_loss, "seq_mean")        # any token-mean loss, the student's too

Every variant is built from a token-mean loss (exercise 7's blank), so the formula stays in loss.py:
  token_mean  sum_i sum_t l_it m_it / sum_i sum_t m_it       DAPO §3.3; TRL loss_type="dapo"/"bnpo",
                                                             verl loss_agg_mode="token-mean" (this page)
  seq_mean    1/B sum_i (sum_t l_it m_it / sum_t m_it)       DeepSeekMath GRPO Eq. 3; TRL loss_type="grpo",
                                                             verl "seq-mean-token-mean"
  constant    sum_i sum_t l_it m_it / (B * max_tokens)       Dr. GRPO (arXiv 2503.20783); TRL "dr_grpo"
                                                             (max_tokens = max_completion_length); verl's
                                                             "seq-mean-token-sum-norm" divides a micro-batch's
                                                             token sum by loss_scale_factor only (default: its
                                                             padded response length), not by B (verl v0.7)
"""
from __future__ import annotations

import torch

LOSS_AGGS = ("token_mean", "seq_mean", "constant")


def aggregated(loss_fn, agg: str = "token_mean", max_tokens: int | None = None):
    """A loss with loss_fn's per-token terms and `agg`'s normaliser (loss_fn itself must be a token mean)."""
    if agg not in LOSS_AGGS:
        raise ValueError(f"loss aggregation must be one of {LOSS_AGGS}, got {agg!r}")
    if agg == "token_mean":
        return loss_fn
    if agg == "constant" and not (isinstance(max_tokens, int) and max_tokens > 0):
        raise ValueError(f"the constant normaliser needs max_tokens > 0, got {max_tokens!r}")

    def seq_mean(logp_new, logp_old, advantages, loss_mask, clip_eps=0.2):
        # one token mean per sequence (a row with no trained token contributes 0), then the mean over rows
        rows = [loss_fn(logp_new[i:i + 1], logp_old[i:i + 1], advantages[i:i + 1], loss_mask[i:i + 1], clip_eps)
                for i in range(logp_new.shape[0])]
        return torch.stack(rows).mean()

    def constant(logp_new, logp_old, advantages, loss_mask, clip_eps=0.2):
        # token mean x trained tokens = the token sum; divided by a number that does not depend on the batch
        n = loss_mask.to(torch.float32).sum()
        return loss_fn(logp_new, logp_old, advantages, loss_mask, clip_eps) * n / (logp_new.shape[0] * max_tokens)

    return seq_mean if agg == "seq_mean" else constant
