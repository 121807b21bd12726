"""Sequence reward -> per-token rewards and advantages (exercise 6).

Three ways to spread one scalar over the trained (mask = 1) tokens, per sample [T] and batched
[B, T]; GRPO's group-normalised advantage (DeepSeekMath §4.1.2), broadcast to every trained token;
and reward-to-go, which shows that "reward at the last token" with gamma = 1 gives every token the
same return (the original page calls last-token-only "the GRPO default"; DeepSeekMath broadcasts).
Outputs are float32.
"""
from __future__ import annotations

import sys

import numpy as np
import torch

KL_EPS = 1e-8  # below this total masked KL, kl_weighted falls back to uniform (as the seed)
_F32_EXACT = 2**24  # float32 holds every integer up to here; token positions beyond it need float64


def _as_mask(loss_mask: torch.Tensor, dims: int) -> torch.Tensor:
    """loss_mask as a float32 0/1 tensor with `dims` dimensions; ValueError otherwise.

    The result is loss_mask itself when that is already float32, a new tensor otherwise: check
    `result is loss_mask` before writing into it. One pass validates: an integer converts to 0.0
    (1.0) exactly when it is 0 (1), so min and max of the float32 copy suffice for integer masks.
    """
    if not isinstance(loss_mask, torch.Tensor) or loss_mask.dim() != dims:
        shape = tuple(loss_mask.shape) if isinstance(loss_mask, torch.Tensor) else type(loss_mask).__name__
        raise ValueError(f"loss_mask must be a {'[T]' if dims == 1 else '[B, T]'} tensor, got {shape}")
    dtype = loss_mask.dtype
    if dtype.is_complex:
        raise ValueError(f"loss_mask must hold only 0 and 1, got dtype {dtype}")
    mask = loss_mask.to(torch.float32)
    if dtype != torch.bool and mask.numel():
        # floats are checked in their own dtype: float64 0.9999999999 would round to 1.0 in float32
        checked = loss_mask if dtype.is_floating_point else mask
        lo, hi = torch.aminmax(checked)  # a NaN makes both comparisons False
        ok = lo.item() >= 0 and hi.item() <= 1
        if ok and dtype.is_floating_point:
            ok = not bool(checked.frac().any())  # in [0, 1] and no fractional part: 0 or 1
        if not ok:
            raise ValueError("loss_mask must hold only 0 and 1")
    return mask


def _as_rewards(seq_rewards: torch.Tensor, batch: int) -> torch.Tensor:
    if not isinstance(seq_rewards, torch.Tensor) or tuple(seq_rewards.shape) != (batch,):
        shape = tuple(seq_rewards.shape) if isinstance(seq_rewards, torch.Tensor) else type(seq_rewards).__name__
        raise ValueError(f"seq_rewards must be a [B] tensor with B={batch}, got {shape}")
    return seq_rewards.to(torch.float32)


def _as_kl(kl_per_token: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    if not isinstance(kl_per_token, torch.Tensor) or kl_per_token.shape != shape:
        got = tuple(kl_per_token.shape) if isinstance(kl_per_token, torch.Tensor) else type(kl_per_token).__name__
        raise ValueError(f"kl_per_token must have the mask's shape {tuple(shape)}, got {got}")
    kl = kl_per_token.to(torch.float32)
    if kl.numel():
        lo, hi = torch.aminmax(kl)  # a NaN anywhere makes both comparisons False
        if not (lo.item() >= 0 and hi.item() < float("inf")):
            raise ValueError("kl_per_token must be finite and >= 0 (pass |KL| per token)")
    return kl


def _last_one_index(mask: torch.Tensor) -> torch.Tensor:
    """Index of the last 1 along the last dim of a float 0/1 mask, -1 where there is none (T >= 1).

    max of mask * (1, 2, ..., T): one multiply and one reduction, no flip copy and no argmax.
    """
    n = mask.shape[-1]
    positions = torch.arange(1, n + 1, dtype=torch.float32 if n < _F32_EXACT else torch.float64)  # exact integers
    return (mask * positions).amax(dim=-1).long() - 1


def assign_reward_last_token(seq_reward: float, loss_mask: torch.Tensor) -> torch.Tensor:
    """[T] float32: seq_reward at the last position where loss_mask is 1, 0 elsewhere (all zeros for an empty mask)."""
    mask = _as_mask(loss_mask, 1)
    out = torch.zeros_like(mask)
    if mask.numel() and (last := int(_last_one_index(mask))) >= 0:
        out[last] = float(seq_reward)
    return out


def assign_reward_uniform(seq_reward: float, loss_mask: torch.Tensor) -> torch.Tensor:
    """[T] float32: seq_reward / n on each of the n positions where loss_mask is 1, 0 elsewhere."""
    mask = _as_mask(loss_mask, 1)
    n = mask.sum()
    return mask * (float(seq_reward) / n) if n > 0 else torch.zeros_like(mask)


def assign_reward_kl_weighted(seq_reward: float, loss_mask: torch.Tensor, kl_per_token: torch.Tensor) -> torch.Tensor:
    """[T] float32: seq_reward split over mask positions in proportion to kl_per_token (>= 0); uniform if that KL sums
    below KL_EPS.

    A thought experiment (the original page attributes it to real systems): no major framework
    spreads the sequence reward by KL.
    """
    mask = _as_mask(loss_mask, 1)
    masked_kl = _as_kl(kl_per_token, mask.shape) * mask
    total = float(masked_kl.sum(dtype=torch.float64))  # a float32 running sum drifts on long sequences
    if total < KL_EPS:
        return assign_reward_uniform(seq_reward, loss_mask)
    return masked_kl * (float(seq_reward) / total)  # weights masked_kl / total sum to 1 on the mask


# bool / integer dtypes whose values numpy can view in place (for _int_mask_values)
_NUMPY_INT_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _int_mask_values(loss_mask: torch.Tensor):
    """A uint8 numpy view (no copy) of a bool/integer CPU mask's values, after one pass checking that each is 0 or 1.

    None when loss_mask is not a contiguous CPU tensor of such a dtype (callers then use the torch
    path). Viewed as unsigned, a negative integer is huge, so "max <= 1" is the whole check; after
    it, the low byte of each element is its value.
    """
    if loss_mask.dtype not in _NUMPY_INT_DTYPES or loss_mask.device.type != "cpu" or not loss_mask.is_contiguous():
        return None
    values = loss_mask.numpy()
    size = values.dtype.itemsize
    if loss_mask.dtype != torch.bool and values.size and values.view(f"u{size}").max() > 1:
        raise ValueError("loss_mask must hold only 0 and 1")
    low = 0 if sys.byteorder == "little" else size - 1
    return values.view(np.uint8)[..., low::size]


def assign_reward_last_token_batched(seq_rewards: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """[B, T] float32: row b is assign_reward_last_token(seq_rewards[b], loss_mask[b]).

    For a bool/integer CPU mask the last 1 of each row is found by numpy's argmax on the reversed
    row (first maximum = last 1), without a float copy of the mask; other masks take the torch path.
    """
    values = _int_mask_values(loss_mask) if isinstance(loss_mask, torch.Tensor) and loss_mask.dim() == 2 else None
    if values is None:
        mask = _as_mask(loss_mask, 2)
        rewards = _as_rewards(seq_rewards, mask.shape[0])
        if mask.shape[1] == 0:
            return torch.zeros_like(mask)
        last = _last_one_index(mask)
        out = mask.zero_() if mask is not loss_mask else torch.zeros_like(mask)
    else:
        n_rows, n_tokens = values.shape
        rewards = _as_rewards(seq_rewards, n_rows)
        out = torch.zeros(n_rows, n_tokens, dtype=torch.float32)
        if n_tokens == 0 or n_rows == 0:
            return out
        last = n_tokens - 1 - np.argmax(values[:, ::-1], axis=1)
        last = torch.from_numpy(np.where(values[np.arange(n_rows), last] == 1, last, -1))  # all-zero rows: -1
    rewards = torch.where(last >= 0, rewards, 0.0)  # rows with an empty mask stay all zero
    return out.scatter_(1, last.clamp(min=0).unsqueeze(1), rewards.unsqueeze(1))


def assign_reward_uniform_batched(seq_rewards: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """[B, T] float32: row b is assign_reward_uniform(seq_rewards[b], loss_mask[b])."""
    mask = _as_mask(loss_mask, 2)
    rewards = _as_rewards(seq_rewards, mask.shape[0])
    scale = (rewards / mask.sum(dim=1).clamp(min=1.0)).unsqueeze(1)
    return mask.mul_(scale) if mask is not loss_mask else mask * scale  # in place into our own copy: no new [B, T]


def assign_reward_kl_weighted_batched(
    seq_rewards: torch.Tensor, loss_mask: torch.Tensor, kl_per_token: torch.Tensor
) -> torch.Tensor:
    """[B, T] float32: row b is assign_reward_kl_weighted(seq_rewards[b], loss_mask[b], kl_per_token[b]).

    Rows whose masked KL sums below KL_EPS fall back to uniform; they are recomputed on their own,
    so the common case costs one multiply, one row sum and one in-place scale.
    """
    mask = _as_mask(loss_mask, 2)
    rewards = _as_rewards(seq_rewards, mask.shape[0])
    kl = _as_kl(kl_per_token, mask.shape)
    masked_kl = mask.mul_(kl) if mask is not loss_mask else mask * kl  # a tensor of our own either way
    total = masked_kl.sum(dim=1, dtype=torch.float64)  # float64 row sums: no drift on long rows
    out = masked_kl.mul_((rewards / total.clamp(min=KL_EPS)).to(torch.float32).unsqueeze(1))
    fallback = total < KL_EPS
    if bool(fallback.any()):
        rows = fallback.nonzero().squeeze(1)
        out[rows] = assign_reward_uniform_batched(rewards[rows], loss_mask[rows])
    return out


def group_normalize(rewards: torch.Tensor, group_size: int, eps: float = 1e-6) -> torch.Tensor:
    """[N] float32 GRPO outcome advantages: (r - mean of its group) / (std of its group + eps).

    rewards holds N = G * group_size sequence rewards, each group (the samples of one prompt)
    contiguous. std is the unbiased sample std, as in verl and TRL; a group whose rewards are all
    equal gets advantage 0.
    """
    if not isinstance(group_size, int) or group_size < 2:
        raise ValueError(f"group_size must be an int >= 2, got {group_size!r}")
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 1 or rewards.numel() % group_size:
        shape = tuple(rewards.shape) if isinstance(rewards, torch.Tensor) else type(rewards).__name__
        raise ValueError(f"rewards must be a [N] tensor with N a multiple of group_size={group_size}, got {shape}")
    # Centre and scale in float64, return float32: in float32 a group whose spread is tiny next to
    # its mean (42.875, 42.875, 42.890625) loses the spread to cancellation, and its advantages no
    # longer sum to zero. float64 input is not cast down first.
    groups = rewards.to(torch.float64).view(-1, group_size)
    advantages = (groups - groups.mean(dim=1, keepdim=True)) / (groups.std(dim=1, keepdim=True) + eps)
    return advantages.view(-1).to(torch.float32)


def broadcast_to_tokens(advantages: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """[B, T] float32: advantages[b] on every token where loss_mask[b] is 1 (DeepSeekMath outcome supervision), 0
    elsewhere."""
    mask = _as_mask(loss_mask, 2)
    return mask * _as_rewards(advantages, mask.shape[0]).unsqueeze(1)


def reward_to_go(token_rewards: torch.Tensor, gamma: float = 1.0) -> torch.Tensor:
    """Returns G_t = sum over t' >= t of gamma^(t'-t) r_t' along the last dim, float32.

    With gamma = 1 and the reward at the last trained token, every earlier token gets the same
    return: storing the scalar at the last token is broadcasting in disguise.
    """
    if not isinstance(token_rewards, torch.Tensor) or token_rewards.dim() not in (1, 2):
        raise ValueError("token_rewards must be a [T] or [B, T] tensor")
    rewards = token_rewards.to(torch.float64)  # long cumulative sums in float64, returned as float32
    if gamma == 1.0:
        return rewards.flip(-1).cumsum(-1).flip(-1).to(torch.float32)
    returns = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[..., 0])
    for t in range(rewards.shape[-1] - 1, -1, -1):
        running = rewards[..., t] + gamma * running
        returns[..., t] = running
    return returns.to(torch.float32)
