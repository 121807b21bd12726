"""Token in, token out: a multi-turn trajectory made of the ids the sampler produced (exercise 8).

The trainer must see exactly the token ids the sampler produced. Rendering the finished conversation and tokenizing
it again gives other ids whenever byte-level BPE is not a bijection (`encode(decode(ids))` need not be `ids`), drops
what the template puts after an assistant turn that the sampler stopped before, or fails outright when the template
rewrites earlier turns (a template that strips earlier <think> blocks). So a trajectory is built piece by piece:

    message_ids(render_ids, messages, index)       the ids messages[index] adds to the rendered conversation: render
                                                   the prefix without and with it; ValueError where the template is
                                                   not append-only
    build_trajectory(prompt_ids, turns, separator) ids, loss mask and behaviour log-probs of one length, aligned:
                                                   the prompt (not trained), each sampled turn with its sampler
                                                   log-probs (trained), each observation (not trained), and the
                                                   template's separator after a sampled turn followed by more
    first_drift(ids, encode, decode)               the first position where encode(decode(ids)) differs from ids, or
                                                   None

Conventions: logprobs[t] is the sampler's log p(ids[t] | ids[:t]), at the position of the token itself (0.0 where
the mask is 0); the trainer shifts labels, mask and log-probs together (exercise 3). Lists of ints in, lists out;
only the standard library.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

SAMPLED, OBSERVATION = "sampled", "observation"
KINDS = (SAMPLED, OBSERVATION)


def _first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first position where a and b differ (len of the shorter when one is a proper prefix), or None."""
    for t, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return t
    return None if len(a) == len(b) else min(len(a), len(b))


def _ids(value, what: str) -> list[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{what} must be a list of token ids, got {type(value).__name__}")
    ids = list(value)
    bad = next((x for x in ids if isinstance(x, bool) or not isinstance(x, int)), None)
    if bad is not None:
        raise ValueError(f"{what} must hold ints, got {bad!r}")
    return ids


def message_ids(render_ids: Callable[[list], Sequence[int]], messages: Sequence[dict], index: int) -> list[int]:
    """The ids messages[index] adds: render_ids(messages[:index + 1]) after the ids of render_ids(messages[:index]).

    render_ids maps a list of messages to the ids of the rendered conversation (a chat template and a tokenizer).
    ValueError when index is out of range, or when the template is not append-only at this boundary: the rendering
    without the message is not a prefix of the rendering with it (the message names the message and the position).
    """
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(messages):
        raise ValueError(f"index must be an int in [0, {len(messages)}), got {index!r}")
    before = _ids(render_ids(list(messages[:index])), "render_ids(messages[:index])")
    after = _ids(render_ids(list(messages[:index + 1])), "render_ids(messages[:index + 1])")
    if after[:len(before)] != before:
        k = _first_difference(before, after)
        raise ValueError(f"the template is not append-only at message {index}: rendering messages[:{index}] and "
                         f"messages[:{index + 1}] first differ at token {k}")
    return after[len(before):]


def build_trajectory(prompt_ids: Sequence[int], turns: Sequence[tuple], separator_ids: Sequence[int]
                     ) -> tuple[list[int], list[int], list[float]]:
    """(ids, loss_mask, logprobs), one length: the prompt, then each turn in order.

    turns holds ("sampled", ids, logprobs) for a turn the sampler produced (trained; logprobs[i] is the sampler's
    log-prob of ids[i]) and ("observation", ids, None) for what the environment or the template adds (not trained).
    separator_ids (not trained) follow every sampled turn that has a turn after it: the template writes them after
    the assistant's end-of-turn token, where the sampler stopped. Not trained positions have log-prob 0.0.
    ValueError for an unknown kind, log-probs of another length than their ids, or a non-finite or positive
    log-prob.
    """
    prompt, separator = _ids(prompt_ids, "prompt_ids"), _ids(separator_ids, "separator_ids")
    ids, mask, logprobs = list(prompt), [0] * len(prompt), [0.0] * len(prompt)
    if isinstance(turns, (str, bytes)) or not isinstance(turns, Sequence):
        raise ValueError(f"turns must be a list of (kind, ids, logprobs), got {type(turns).__name__}")
    for i, turn in enumerate(turns):
        if not (isinstance(turn, (tuple, list)) and len(turn) == 3):
            raise ValueError(f"turns[{i}] must be (kind, ids, logprobs), got {turn!r}")
        kind, turn_ids, turn_logprobs = turn
        turn_ids = _ids(turn_ids, f"turns[{i}] ids")
        if kind == SAMPLED:
            if isinstance(turn_logprobs, (str, bytes)) or not isinstance(turn_logprobs, Sequence) \
                    or len(turn_logprobs) != len(turn_ids):
                raise ValueError(f"turns[{i}]: a sampled turn needs one log-prob per id ({len(turn_ids)}), "
                                 f"got {turn_logprobs!r}")
            values = [float(x) for x in turn_logprobs]
            if any(not math.isfinite(x) or x > 0 for x in values):
                raise ValueError(f"turns[{i}]: log-probs must be finite and <= 0, got {values}")
            ids += turn_ids
            mask += [1] * len(turn_ids)
            logprobs += values
            if i + 1 < len(turns):
                ids += separator
                mask += [0] * len(separator)
                logprobs += [0.0] * len(separator)
        elif kind == OBSERVATION:
            ids += turn_ids
            mask += [0] * len(turn_ids)
            logprobs += [0.0] * len(turn_ids)
        else:
            raise ValueError(f"turns[{i}]: kind must be one of {KINDS}, got {kind!r}")
    return ids, mask, logprobs


def first_drift(ids: Sequence[int], encode: Callable[[str], Sequence[int]], decode: Callable[[list], str]
                ) -> int | None:
    """The first position t where encode(decode(ids)) differs from ids, or None when the round trip gives ids back.

    When one is a proper prefix of the other (a decoder that drops a special token, say) the answer is the length
    of the shorter one: the first position where one has a token and the other has none."""
    ids = _ids(ids, "ids")
    again = _ids(encode(decode(list(ids))), "encode(decode(ids))")
    return _first_difference(ids, again)
