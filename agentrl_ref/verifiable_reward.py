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
# No accepted answer is longer than this once whitespace and `$` are gone: two numbers of at most
# MAX_DIGITS digits, their thousands commas and decimal points, `-\dfrac{-`, `}{-`, `}`. Longer
# strings are None without being split or matched, which bounds the work on 200 KB inputs.
_NUM_LEN = MAX_DIGITS + MAX_DIGITS // 3 + 1
MAX_ANSWER_LEN = 2 * _NUM_LEN + 16

# A number: integer (optionally with comma thousands separators) with an optional decimal part,
# or a bare decimal part (".5"). ASCII digits only: `\d` would also accept other scripts' digits.
# The atomic group (?>...) (Python 3.11+) never gives characters back once a number has matched.
# That changes no verdict, because what may follow a number (end, "/", "}") can never be a digit,
# "," or ".", and it keeps a failed fullmatch linear: without it "1" * 200_000 + "x" backtracks
# through every digit, once per pattern (~14 ms instead of ~0.1 ms).
_NUM = r"(?>(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]*)?|\.[0-9]+)"
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
    Linear time on any input, and fast on long degenerate ones (see _matching_close).
    """
    if not isinstance(text, str):
        raise ValueError(f"extract_boxed_answer expects a str, got {type(text).__name__}")
    start = text.rfind(_BOX_OPEN)
    if start < 0:
        return None
    begin = start + len(_BOX_OPEN)
    close = _matching_close(text, begin)
    return None if close < 0 else text[begin:close]


# Past this many closing braces, if more than _SCAN_MIN characters are left, the brace depth is
# computed with numpy (_close_by_scan) instead of one str.find/str.count step per `}`.
_JUMPS = 64
_SCAN_MIN = 4096
_CHUNK = 1 << 16  # characters per numpy step: bounds memory, and a found `}` ends the scan early


def _matching_close(text: str, pos: int, depth: int = 1, jumps: int = _JUMPS, scan_min: int = _SCAN_MIN) -> int:
    """Index of the `}` that brings `depth` open braces (before pos) back to 0; -1 if there is none.

    Jump from `}` to `}` with str.find, counting the `{` in between with str.count: each character
    is read a constant number of times, and a short answer needs a handful of C calls. Input that
    closes many braces without reaching depth 0 (`{}` * 100_000 costs ~20 ms of Python steps)
    is handed to the numpy scan, which gives the same index.
    """
    while (close := text.find("}", pos)) >= 0:
        depth += text.count("{", pos, close) - 1
        if depth == 0:
            return close
        pos = close + 1
        jumps -= 1
        if jumps <= 0 and len(text) - pos > scan_min:
            return _close_by_scan(text, pos, depth)
    return -1


def _code_units(chunk: str):
    """numpy array with one element per character of chunk (its code point or byte); any str, incl. lone surrogates."""
    import numpy as np

    if chunk.isascii():  # O(1) in CPython
        return np.frombuffer(chunk.encode("ascii"), dtype=np.uint8)
    try:
        return np.frombuffer(chunk.encode("utf-32-le"), dtype="<u4")
    except UnicodeEncodeError:  # lone surrogates; 'surrogatepass' is slow when there are many of them
        return np.array([chunk]).view(np.uint32)[: len(chunk)]  # numpy stores str as UCS-4 code points


def _close_by_scan(text: str, pos: int, depth: int, chunk: int = _CHUNK) -> int:
    """Same result as _matching_close: brace depth as a running sum (numpy), chunk by chunk, first index where it hits
    0."""
    import numpy as np

    for lo in range(pos, len(text), chunk):
        hi = min(lo + chunk, len(text))
        closes = text.count("}", lo, hi)
        if closes < depth:  # depth cannot reach 0 in this chunk
            depth += text.count("{", lo, hi) - closes
            continue
        units = _code_units(text[lo:hi])
        steps = (units == 123).view(np.int8) - (units == 125).view(np.int8)  # "{" -> +1, "}" -> -1
        level = np.cumsum(steps, dtype=np.int32)  # depth - (initial depth) after each character
        first = int(np.argmax(level == -depth))  # depth moves by 1, so == finds the first time it is 0
        if level[first] == -depth:
            return lo + first
        depth += int(level[-1])
    return -1


def _to_fraction(sign: str, num: str) -> Fraction:
    """Exact value of a _NUM match (no float on the path)."""
    num = num.replace(",", "")
    whole, _, decimals = num.partition(".")
    if len(whole) + len(decimals) > MAX_DIGITS:
        raise ValueError("too many digits")
    value = Fraction(int(whole or "0") * 10 ** len(decimals) + int(decimals or "0"), 10 ** len(decimals))
    return -value if sign else value


def normalize_to_fraction(s: str) -> Fraction | None:
    """Exact value of a plain numeric answer (`3`, `-0.50`, `.5`, `1,000`, `2/4`, `\\frac{1}{2}`, `\\dfrac12`, ...);
    None otherwise.

    Whitespace and `$` are removed first. Never raises on a str; None for anything it does not
    know, including `inf`, `nan`, `1e3`, `50\\%`, division by zero and numbers over MAX_DIGITS digits.
    """
    if not isinstance(s, str):
        raise ValueError(f"normalize_to_fraction expects a str, got {type(s).__name__}")
    # = "".join(s.split()).replace("$", ""), but it splits off at most MAX_ANSWER_LEN + 1 words:
    # that many words already make the string too long ("1 " * 100_000 is 100_000 words).
    words = s.replace("$", "").split(None, MAX_ANSWER_LEN)
    s = "".join(words)
    if len(words) > MAX_ANSWER_LEN or len(s) > MAX_ANSWER_LEN:
        return None
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
    """1.0 iff the last complete \\boxed{} of completion and gold both normalise and are equal, else 0.0; never raises
    on strs."""
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
