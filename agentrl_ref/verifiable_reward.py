"""Verifiable math reward: extract the last \\boxed{...}, normalise it to an exact Fraction, compare.

A deliberately small verifier (exercise 2). It knows plain numbers and simple fractions only;
everything else (sqrt, pi, intervals, units, text) is "cannot verify" -> reward 0.0.
See answer_forms.py for a measured comparison against math-verify.
"""
from __future__ import annotations

import re
from fractions import Fraction

_BOX_OPEN = "\\boxed{"

# Python refuses int(str) beyond 4300 digits by default (sys.get_int_max_str_digits); we refuse
# earlier and by ourselves, so the result does not depend on interpreter settings and stays fast.
MAX_DIGITS = 4300

# A number: integer (optionally with comma thousands separators) with an optional decimal part,
# or a bare decimal part (".5"). ASCII digits only: `\d` would also accept other scripts' digits.
_NUM = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]*)?|\.[0-9]+"
_NUMBER = re.compile(rf"(-?)({_NUM})")
_SLASH = re.compile(rf"(-?)({_NUM})/(-?)({_NUM})")
# \frac{a}{b}, \dfrac, \tfrac; each argument is {signed number} or one bare digit (TeX: \frac12).
_ARG = rf"\{{(-?)({_NUM})\}}|([0-9])"
_FRAC = re.compile(rf"(-?)\\[dt]?frac(?:{_ARG})(?:{_ARG})")


def extract_boxed_answer(text: str) -> str | None:
    """Content of the last `\\boxed{` in text up to its matching `}`; None if there is none or it is unclosed.

    "Last" means the last occurrence of `\\boxed{`; if that box never closes (truncated output),
    the answer is None even when an earlier box is complete. Braces nest (`\\boxed{\\frac{1}{2}}`
    -> `\\frac{1}{2}`); escaped `\\{ \\}` are counted like any brace, which keeps them balanced.
    Linear time on any input: one rfind, then we jump from `}` to `}` with str.find and count the
    `{` in between with str.count, so each character is read a constant number of times.
    """
    if not isinstance(text, str):
        raise ValueError(f"extract_boxed_answer expects a str, got {type(text).__name__}")
    start = text.rfind(_BOX_OPEN)
    if start < 0:
        return None
    begin = pos = start + len(_BOX_OPEN)
    depth = 1  # open braces not yet closed
    while (close := text.find("}", pos)) >= 0:
        depth += text.count("{", pos, close) - 1
        if depth == 0:
            return text[begin:close]
        pos = close + 1
    return None


def _to_fraction(sign: str, num: str) -> Fraction:
    """Exact value of a _NUM match (no float on the path)."""
    num = num.replace(",", "")
    whole, _, decimals = num.partition(".")
    if len(whole) + len(decimals) > MAX_DIGITS:
        raise ValueError("too many digits")
    value = Fraction(int(whole or "0") * 10 ** len(decimals) + int(decimals or "0"), 10 ** len(decimals))
    return -value if sign else value


def normalize_to_fraction(s: str) -> Fraction | None:
    """Exact value of a plain numeric answer (`3`, `-0.50`, `.5`, `1,000`, `2/4`, `\\frac{1}{2}`, `\\dfrac12`, ...); None otherwise.

    Whitespace and `$` are removed first. Never raises on a str; None for anything it does not
    know, including `inf`, `nan`, `1e3`, `50\\%`, division by zero and numbers over MAX_DIGITS digits.
    """
    if not isinstance(s, str):
        raise ValueError(f"normalize_to_fraction expects a str, got {type(s).__name__}")
    s = "".join(s.split()).replace("$", "")
    try:
        if m := _NUMBER.fullmatch(s):
            return _to_fraction(*m.groups())
        if m := _SLASH.fullmatch(s):
            top, bottom = _to_fraction(m[1], m[2]), _to_fraction(m[3], m[4])
        elif m := _FRAC.fullmatch(s):
            sign, ts, tn, td, bs, bn, bd = m.groups()
            top = _to_fraction(ts, tn) if tn is not None else Fraction(int(td))
            bottom = _to_fraction(bs, bn) if bn is not None else Fraction(int(bd))
            top = -top if sign else top
        else:
            return None
        return None if bottom == 0 else top / bottom
    except ValueError:
        return None


def accuracy_reward(completion: str, gold: str) -> float:
    """1.0 iff the last complete \\boxed{} of completion and gold both normalise and are equal, else 0.0; never raises on strs."""
    if not isinstance(completion, str) or not isinstance(gold, str):
        raise ValueError(
            f"accuracy_reward expects (str, str), got ({type(completion).__name__}, {type(gold).__name__})"
        )
    boxed = extract_boxed_answer(completion)
    if boxed is None:
        return 0.0
    pred, want = normalize_to_fraction(boxed), normalize_to_fraction(gold)
    if pred is None or want is None:
        return 0.0
    return 1.0 if pred == want else 0.0
