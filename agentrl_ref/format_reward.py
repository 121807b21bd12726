"""Exercise 1: the R1 format reward, <think>...</think><answer>...</answer> -> 0/1.

The check is a handful of linear string scans, so a degenerate completion of any
length is rejected in time proportional to its length (the original page's backtracking
regex needs seconds on 200 KB of adversarial text).
"""
from __future__ import annotations

import re

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
TAGS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)

# The seed page's answer, kept only to measure and to show its mistakes (E3, E4):
# it accepts repeated and nested groups and backtracks quadratically.
SEED_FORMAT_PATTERN = r"^\s*<think>.*?</think>\s*<answer>.*?</answer>\s*$"

# One regex with the same semantics as `format_reward`: the body of each tag may
# hold any character (newlines included, with re.DOTALL) except the start of a tag.
NO_TAG = r"(?:(?!</?(?:think|answer)>).)*"
STRICT_FORMAT_PATTERN = rf"\s*<think>{NO_TAG}</think>\s*<answer>{NO_TAG}</answer>\s*\Z"


def _require_str(completion: object) -> str:
    if not isinstance(completion, str):
        raise ValueError(f"completion must be a str, got {type(completion).__name__}")
    return completion


def format_reward(completion: str) -> float:
    """1.0 iff the text is one <think>..</think> then one <answer>..</answer>, else 0.0.

    Surrounding whitespace and whitespace between the two blocks are allowed; the
    four tags (case-sensitive) must each appear exactly once, so repeated or nested
    groups score 0.0. Linear time; never raises on a str.
    """
    text = _require_str(completion).strip()
    if any(text.count(tag) != 1 for tag in TAGS):
        return 0.0
    if not (text.startswith(THINK_OPEN) and text.endswith(ANSWER_CLOSE)):
        return 0.0
    think_end = text.index(THINK_CLOSE) + len(THINK_CLOSE)
    answer_start = text.index(ANSWER_OPEN)
    if answer_start < think_end:
        return 0.0
    return 1.0 if text[think_end:answer_start].strip() == "" else 0.0


def tag_count_reward(completion: str) -> float:
    """0.25 for each of the four tags that appears exactly once (open-r1's partial credit)."""
    text = _require_str(completion)
    return 0.25 * sum(text.count(tag) == 1 for tag in TAGS)


def format_reward_regex(completion: str, pattern: str = STRICT_FORMAT_PATTERN) -> float:
    """`format_reward` written as one regex match (the exercise's answer style)."""
    return 1.0 if re.match(pattern, _require_str(completion), re.DOTALL) else 0.0
