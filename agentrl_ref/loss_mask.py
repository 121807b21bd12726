"""Multi-turn loss mask: train on the assistant's tokens only (exercise 3).

A trajectory is rendered into one token sequence; each token belongs to a role. Only assistant
tokens are trained (1); system/user/tool tokens are observations (0). For a causal LM the logits
at t predict token t+1, so the mask is shifted left by one together with the labels.
"""
from __future__ import annotations

from operator import itemgetter

import numpy as np
import torch

ROLES = ("system", "user", "assistant", "tool")
# role ids for the batched version: a [B, T] LongTensor holds one of these per token
PAD_ID = -1  # padding: never trained
SYSTEM_ID, USER_ID, ASSISTANT_ID, TOOL_ID = range(len(ROLES))
ROLE_TO_ID = {role: i for i, role in enumerate(ROLES)}


def _check_spans(n_tokens: int, role_spans: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """The non-empty spans as tuples sorted by start; ValueError (naming the offending span) for an
    unknown role, an out-of-range or reversed span, or overlaps."""
    for span in role_spans:
        if not (isinstance(span, (tuple, list)) and len(span) == 3):
            raise ValueError(f"a role span is (role, start, end), got {span!r}")
        role, start, end = span
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r} in span {tuple(span)!r}; roles are {ROLES}")
        if not (isinstance(start, int) and isinstance(end, int)):
            raise ValueError(f"span bounds must be ints, got {tuple(span)!r}")
        if not 0 <= start <= end <= n_tokens:
            raise ValueError(f"span {tuple(span)!r} is reversed or outside [0, {n_tokens}]")
    ordered = sorted((tuple(s) for s in role_spans if s[1] < s[2]), key=itemgetter(1))
    for before, after in zip(ordered, ordered[1:]):
        if after[1] < before[2]:
            raise ValueError(f"spans {before!r} and {after!r} overlap")
    return ordered


def build_loss_mask(token_ids: list[int], role_spans: list[tuple[str, int, int]]) -> list[int]:
    """0/1 list as long as token_ids: 1 on tokens inside an assistant span, 0 elsewhere.

    role_spans holds (role, start, end) meaning token_ids[start:end] belong to role. Tokens in no
    span get 0. Raises ValueError for an unknown role, a reversed or out-of-range span, or overlaps.
    """
    _check_spans(len(token_ids), role_spans)
    mask = [0] * len(token_ids)
    for role, start, end in role_spans:
        if role == "assistant":
            mask[start:end] = [1] * (end - start)
    return mask


def is_trainable(role: str, part: str) -> bool:
    """The exercise's rule: the assistant's content and its <|im_end|> are trained; nothing else.

    The header "<|im_start|>assistant\\n" is written by the template (the generation prompt), not by
    the model; <|im_end|> is how the model stops, so it must be trained; tool output never is. verl 0.7's
    multi-turn SFT dataset masks only the generation prompt, so it also trains the template's "\\n" after
    <|im_end|> (agentrl_ref.teaching.shared.chat_template.verl_sft_tokens).
    """
    # parts of a rendered ChatML message (agentrl_ref.teaching.shared.chat_template): "header" is
    # "<|im_start|>{role}\n", "content", "end" is "<|im_end|>", "sep" the "\n" between messages
    return role == "assistant" and part in ("content", "end")


def shift_mask_for_clm(mask):
    """mask[..., 1:]: position t of the result says whether the prediction of token t+1 is trained.

    Works on a list (one sequence) or a tensor of any rank (shifts the last dim). Shift the labels
    the same way: labels = input_ids[..., 1:], logits = logits[..., :-1, :].
    """
    if isinstance(mask, torch.Tensor):
        return mask[..., 1:]
    return list(mask[1:])


def role_ids_from_spans(n_tokens: int, role_spans: list[tuple[str, int, int]]) -> torch.Tensor:
    """LongTensor[n_tokens] of role ids (PAD_ID where no span) — the input of build_loss_mask_batched."""
    _check_spans(n_tokens, role_spans)
    role_ids = torch.full((n_tokens,), PAD_ID, dtype=torch.long)
    for role, start, end in role_spans:
        role_ids[start:end] = ROLE_TO_ID[role]
    return role_ids


def build_loss_mask_batched(role_ids: torch.Tensor) -> torch.Tensor:
    """LongTensor[B, T] of 0/1: 1 where role_ids == ASSISTANT_ID. role_ids is an integer [B, T] tensor of role ids or
    PAD_ID."""
    if not isinstance(role_ids, torch.Tensor) or role_ids.dim() != 2:
        raise ValueError(f"role_ids must be a [B, T] tensor, got {getattr(role_ids, 'shape', type(role_ids))}")
    if role_ids.dtype.is_floating_point or role_ids.dtype.is_complex or role_ids.dtype == torch.bool:
        raise ValueError(f"role_ids must hold integer role ids, got dtype {role_ids.dtype}")
    if role_ids.numel():
        lo, hi = torch.aminmax(role_ids)
        if lo < PAD_ID or hi >= len(ROLES):
            raise ValueError(f"role ids must be in [{PAD_ID}, {len(ROLES) - 1}], "
                             f"got values in [{lo.item()}, {hi.item()}]")
    return (role_ids == ASSISTANT_ID).long()


def build_loss_mask_batched_from_spans(n_tokens: int,
                                      batch_role_spans: list[list[tuple[str, int, int]]]) -> torch.Tensor:
    """LongTensor[B, n_tokens]: row b is build_loss_mask(range(n_tokens), batch_role_spans[b]); same ValueErrors.

    The batched version for the seed's input (spans, rows padded to n_tokens): Python touches each
    span once (to check it), never each token. The assistant spans, in order, cut the flattened
    [B * n_tokens] mask into alternating 0 and 1 runs, written by one np.repeat.
    """
    if not isinstance(n_tokens, int) or n_tokens < 0:
        raise ValueError(f"n_tokens must be an int >= 0, got {n_tokens!r}")
    if not isinstance(batch_role_spans, (list, tuple)):
        raise ValueError(f"batch_role_spans must be a list of span lists, got {type(batch_role_spans).__name__}")
    bounds = [0]  # 0-run from bounds[0] to bounds[1], 1-run to bounds[2], 0-run to bounds[3], ...
    for row, role_spans in enumerate(batch_role_spans):
        if not isinstance(role_spans, (list, tuple)):
            raise ValueError(f"batch_role_spans[{row}] must be a list of (role, start, end), got {role_spans!r}")
        offset = row * n_tokens
        for role, start, end in _check_spans(n_tokens, role_spans):
            if role == "assistant":
                bounds += (offset + start, offset + end)
    bounds.append(len(batch_role_spans) * n_tokens)
    runs = np.diff(np.array(bounds, dtype=np.int64))
    values = np.arange(len(runs), dtype=np.int64) % 2  # 0, 1, 0, 1, ..., 0
    # np.repeat writes the [B * T] result in one pass (~4x faster than torch.repeat_interleave here)
    return torch.from_numpy(np.repeat(values, runs)).view(len(batch_role_spans), n_tokens)
