"""Composite reward: length terms and a weighted sum of named reward components (exercise 5).

cosine_length_reward is Yeo et al. 2025 ("Demystifying Long CoT", arXiv 2502.03373), as in open-r1's
get_cosine_scaled_reward; soft_overlong_punishment is DAPO's Eq. 13 (a linear length penalty).
"""
from __future__ import annotations

import math
from typing import Callable

from agentrl_ref.verifiable_reward import accuracy_reward

RewardFn = Callable[[str, str], float]  # (completion, gold) -> score
CompositeFn = Callable[[str, str], dict]  # (completion, gold) -> {component: score, ..., "total": weighted sum}


def cosine_scaled(ratio: float, r_short: float, r_long: float) -> float:
    """Half a cosine from r_short at ratio 0 to r_long at ratio 1; ratio is clamped to [0, 1]."""
    ratio = min(max(ratio, 0.0), 1.0)
    return r_long + 0.5 * (r_short - r_long) * (1.0 + math.cos(math.pi * ratio))


def cosine_length_reward(
    completion: str,
    gold: str,
    max_len: int = 512,
    *,
    correct: tuple[float, float] = (1.0, 0.0),
    wrong: tuple[float, float] = (-1.0, 0.0),
) -> float:
    """Length-shaped correctness: a cosine in L/max_len (L = characters, clamped at max_len) between (short, long)
    values.

    Defaults are the seed's: correct goes 1.0 (short) -> 0.0 (at max_len), wrong goes -1.0 (short)
    -> 0.0, i.e. r = 1 - 0.5(1 - cos(pi L/max_len)) and r = -1 + 0.5(1 - cos(pi L/max_len)).
    Short and right is best, short and wrong is worst (the original page's docstring says the
    opposite). open-r1's defaults are correct=(1.0, 0.5), wrong=(-1.0, -0.5).
    """
    if not (isinstance(max_len, int) and max_len >= 1):
        raise ValueError(f"max_len must be an int >= 1, got {max_len!r}")
    r_short, r_long = correct if accuracy_reward(completion, gold) == 1.0 else wrong
    return cosine_scaled(len(completion) / max_len, r_short, r_long)


def soft_overlong_punishment(length: int, max_len: int, cache_len: int) -> float:
    """DAPO Eq. 13: 0 up to max_len - cache_len, then linear down to -1 at max_len, -1 beyond.

    length and max_len are in the same unit (DAPO counts response tokens).
    """
    if not (isinstance(cache_len, int) and isinstance(max_len, int) and 0 < cache_len <= max_len):
        raise ValueError(f"need ints 0 < cache_len <= max_len, got cache_len={cache_len!r}, max_len={max_len!r}")
    if not (isinstance(length, int) and length >= 0):
        raise ValueError(f"length must be an int >= 0, got {length!r}")
    safe_len = max_len - cache_len
    if length <= safe_len:
        return 0.0
    if length <= max_len:
        return (safe_len - length) / cache_len
    return -1.0


def make_reward_fn(weights: dict[str, float], funcs: dict[str, RewardFn]) -> Callable[[str, str], dict[str, float]]:
    """R(completion, gold) -> {name: score for every component, "total": sum of weight * score}.

    weights and funcs must have the same keys (ValueError naming the missing and extra ones);
    "total" is reserved. The dict lets a logger plot every component next to the total.
    """
    missing, extra = sorted(set(weights) - set(funcs)), sorted(set(funcs) - set(weights))
    if missing or extra:
        raise ValueError(f"weights and funcs need the same keys: no func for {missing}, no weight for {extra}")
    if "total" in weights:
        raise ValueError('"total" is reserved for the weighted sum; rename that component')
    weights, funcs = dict(weights), dict(funcs)  # later edits by the caller do not change R

    def composite(completion: str, gold: str) -> dict[str, float]:
        scores = {name: float(funcs[name](completion, gold)) for name in weights}
        scores["total"] = sum(weights[name] * scores[name] for name in weights)
        return scores

    return composite


def seed_reward_fn() -> Callable[[str, str], dict[str, float]]:
    """The seed page's composite: 0.1 * format + 1.0 * accuracy + 0.2 * cosine length (max_len 512)."""
    from agentrl_ref.format_reward import format_reward

    funcs: dict[str, RewardFn] = {
        "fmt": lambda c, g: format_reward(c),
        "acc": accuracy_reward,
        "cos_len": cosine_length_reward,
    }
    return make_reward_fn({"fmt": 0.1, "acc": 1.0, "cos_len": 0.2}, funcs)
