"""Exercise 2: extract_boxed_answer, normalize_to_fraction, accuracy_reward (ERRATA E1, E2)."""
from __future__ import annotations

import re
import time
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from agentrl_ref.teaching.ex2_verifiable_reward.answer_forms import ANSWER_FORMS, compare_verifiers
from agentrl_ref import verifiable_reward as vr
from agentrl_ref.verifiable_reward import MAX_DIGITS, accuracy_reward, extract_boxed_answer, normalize_to_fraction

FAST = settings(max_examples=150, deadline=None)

SEED_CASES = [  # the seed page's test table, with its expected values (all correct)
    ("思考...所以\\boxed{0.5}", "1/2", 1.0),
    ("\\boxed{\\frac{1}{2}}", "0.5", 1.0),
    ("\\boxed{2}\n\\boxed{3}", "3", 1.0),
    ("没有答案", "5", 0.0),
    ("\\boxed{abc}", "5", 0.0),
]


@pytest.mark.parametrize("completion, gold, expected", SEED_CASES)
def test_seed_table(completion, gold, expected):
    assert accuracy_reward(completion, gold) == expected


def test_e1_seed_regex_cannot_see_nested_braces():
    seed_matches = re.findall(r"\\boxed\{([^{}]*)\}", "\\boxed{\\frac{1}{2}}")
    assert seed_matches == []  # the seed's extraction finds nothing: its own case 2 scores 0.0
    assert extract_boxed_answer("\\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"


@pytest.mark.parametrize("text, expected", [
    ("\\boxed{42}", "42"),
    ("a \\boxed{1} b \\boxed{2} c", "2"),
    ("\\boxed{\\frac{\\sqrt{3}}{2}} done", "\\frac{\\sqrt{3}}{2}"),
    ("\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),
    ("\\boxed{}", ""),
    ("\\boxed{2} then \\boxed{3", None),  # the last box is unclosed: no answer
    ("\\boxed{{{1}}", None),
    ("no box", None),
    ("", None),
    ("\\boxed 5", None),  # only the braced form is recognised
    ("\\boxed{a}}}}", "a"),
])
def test_extract_boxed_answer(text, expected):
    assert extract_boxed_answer(text) == expected


@pytest.mark.parametrize("s, expected", [
    ("3", Fraction(3)), ("-7", Fraction(-7)), ("007", Fraction(7)),
    ("0.5", Fraction(1, 2)), ("0.50", Fraction(1, 2)), (".5", Fraction(1, 2)), ("5.", Fraction(5)),
    ("-0.25", Fraction(-1, 4)), ("10.0", Fraction(10)),
    ("1/2", Fraction(1, 2)), ("2/4", Fraction(1, 2)), ("1 / 2", Fraction(1, 2)), ("-1/2", Fraction(-1, 2)),
    ("1,000", Fraction(1000)), ("1,234,567.5", Fraction(2469135, 2)), (" $12$ ", Fraction(12)),
    ("\\frac{1}{2}", Fraction(1, 2)), ("\\dfrac{3}{4}", Fraction(3, 4)), ("\\tfrac{3}{4}", Fraction(3, 4)),
    ("\\frac12", Fraction(1, 2)), ("\\frac{1}2", Fraction(1, 2)), ("\\frac1{2}", Fraction(1, 2)),
    ("-\\frac{1}{2}", Fraction(-1, 2)), ("\\frac{-1}{2}", Fraction(-1, 2)), ("\\frac{0.5}{2}", Fraction(1, 4)),
    ("0.1", Fraction(1, 10)),  # exact, not the float 0.1000000000000000055...
])
def test_normalize_accepts(s, expected):
    assert normalize_to_fraction(s) == expected


@pytest.mark.parametrize("s", [
    "inf", "-inf", "nan", "Infinity", "1e3", "1e999999", "1_000", "1,00", "1,2", "12,34", "50\\%", "½", "１２",
    "−3", "1/0", "0/0", "\\frac{1}{0}", "\\frac{1}{}", "\\frac{}{2}", "\\frac123", "abc", "", " ", "$", "-", ".",
    "--1", "+1", "1/2/3", "\\sqrt{2}", "\\pi", "x=3", "(1,2)", "\\text{5}", "0x10", "9" * (MAX_DIGITS + 1),
    "0." + "1" * (MAX_DIGITS + 1), "1/" + "2" * 200_000,
])
def test_normalize_rejects_without_raising(s):
    assert normalize_to_fraction(s) is None


def test_e2_inf_does_not_crash():
    # the seed's fallback Fraction(float("inf")) raises OverflowError (uncaught in the seed)
    with pytest.raises(OverflowError):
        Fraction(float("inf"))
    assert accuracy_reward("\\boxed{inf}", "5") == 0.0
    assert accuracy_reward("\\boxed{nan}", "nan") == 0.0


def test_max_digits_boundary():
    assert normalize_to_fraction("1" * MAX_DIGITS) == Fraction(int("1" * MAX_DIGITS))
    assert normalize_to_fraction("1" * (MAX_DIGITS + 1)) is None


def test_exact_comparison_of_long_integers():
    assert accuracy_reward("\\boxed{12345678901234567890}", "12345678901234567891") == 0.0
    assert float(12345678901234567890) == float(12345678901234567891)  # why no float on the path


@pytest.mark.parametrize("bad", [None, 5, b"\\boxed{5}", ["\\boxed{5}"]])
def test_misuse_raises_value_error(bad):
    with pytest.raises(ValueError):
        accuracy_reward(bad, "5")
    with pytest.raises(ValueError):
        accuracy_reward("\\boxed{5}", bad)
    with pytest.raises(ValueError):
        extract_boxed_answer(bad)
    with pytest.raises(ValueError):
        normalize_to_fraction(bad)


PIECES = st.sampled_from(["\\boxed{", "{", "}", "\\frac", "\\dfrac", "1", "2", "0", "-", ".", ",", "/", "$", " ",
                          "\\%", "e", "inf", "\\{", "\\}", "½", "−", "\n", "x"])
BOXY_TEXT = st.lists(PIECES, max_size=40).map("".join) | st.text(max_size=200)


@FAST
@given(BOXY_TEXT, BOXY_TEXT)
def test_accuracy_reward_never_raises_and_is_binary(completion, gold):
    assert accuracy_reward(completion, gold) in (0.0, 1.0)
    value = normalize_to_fraction(completion)
    assert value is None or isinstance(value, Fraction)


@FAST
@given(BOXY_TEXT)
def test_extract_returns_a_balanced_substring(text):
    got = extract_boxed_answer(text)
    if got is not None:
        assert ("\\boxed{" + got + "}") in text
        depth = 0
        for ch in got:  # balanced, never closing below zero
            depth += (ch == "{") - (ch == "}")
            assert depth >= 0
        assert depth == 0


@FAST
@given(st.integers(-10**30, 10**30), st.integers(1, 10**12))
def test_round_trip_of_exact_forms(num, den):
    value = Fraction(num, den)
    sign = "-" if num < 0 else ""
    for form in (f"{num}/{den}", f"\\frac{{{num}}}{{{den}}}", f"{sign}\\dfrac{{{abs(num)}}}{{{den}}}"):
        assert normalize_to_fraction(form) == value
        assert accuracy_reward(f"so \\boxed{{{form}}}.", f"{num}/{den}") == 1.0
    assert normalize_to_fraction(f"{num:,}") == num
    decimal = f"{sign}{abs(num) // 10**6}.{abs(num) % 10**6:06d}"  # num / 10^6 written out exactly
    assert normalize_to_fraction(decimal) == Fraction(num, 10**6)


DEGENERATE = {
    "boxed_repeated": "\\boxed{" * 28_600,
    "open_braces": "{" * 200_000,
    "unclosed_box_of_text": "\\boxed{" + "x" * 200_000,
    "alternating_braces_in_box": "\\boxed{" + "{}" * 100_000,
    "nested_braces_in_box": "\\boxed{" + "{" * 100_000 + "}" * 100_000,
    "long_number_in_box": "\\boxed{" + "1" * 200_000 + "}",
    "long_thousands_in_box": "\\boxed{" + "1,000" * 40_000 + "}",
    "long_fraction_in_box": "\\boxed{\\frac{" + "1" * 100_000 + "}{" + "2" * 100_000 + "}}",
    "braces_and_emoji_in_box": "\\boxed{" + "{}\U0001F600" * 66_666,
    "braces_and_lone_surrogates_in_box": "\\boxed{" + "{}\ud800" * 66_666 + "}",
    "digits_then_letter_in_box": "\\boxed{" + "1" * 199_999 + "x}",
    "thousands_then_letter_in_box": "\\boxed{1" + ",000" * 50_000 + "x}",
    "spaced_digits_in_box": "\\boxed{" + "1 " * 100_000 + "}",
    "nested_fracs_in_box": "\\boxed{" + "\\frac{1}{" * 22_000 + "}" * 22_001,
}


@pytest.mark.parametrize("name", DEGENERATE)
def test_degenerate_200kb_input_is_fast(name):
    text = DEGENERATE[name]
    t0 = time.perf_counter()
    assert accuracy_reward(text, "5") == 0.0
    assert time.perf_counter() - t0 < 10  # a hang guard (about 1 ms); make bench measures the real numbers


# How the time grows with the input (x4 input -> about x4 time) is measured by `make bench`
# ("accuracy_reward growth" rows), side by side in one run: a timing ratio is no test on a loaded machine.


def test_answer_forms_table():
    assert len(ANSWER_FORMS) >= 40
    assert len({(r.completion, r.gold) for r in ANSWER_FORMS}) == len(ANSWER_FORMS)
    for completion, gold, expected in SEED_CASES:
        assert (completion, gold, expected == 1.0) in {(r.completion, r.gold, r.expected_equal) for r in ANSWER_FORMS}
    for row in ANSWER_FORMS:
        got = accuracy_reward(row.completion, row.gold) == 1.0
        assert not got or row.expected_equal, f"toy false positive on {row}"


def test_compare_verifiers_runs_with_pinned_math_verify():
    pytest.importorskip("math_verify")
    from importlib.metadata import version

    if version("math-verify") != "0.9.0":
        pytest.skip("verdicts below are for math-verify 0.9.0")
    rows = compare_verifiers(ANSWER_FORMS[:12] + [r for r in ANSWER_FORMS if "two boxes" in r.note])
    assert all(r.toy_ok for r in rows[:12])
    two_boxes = rows[-1]
    assert two_boxes.toy_equal and not two_boxes.math_verify_equal  # 0.9.0 reads both boxes as a set {2, 3}


# --- the two ways of finding the matching brace, and the linear-time normaliser, agree with the simple ones

def _reference_close(text, pos, depth=1):
    """Character by character: the index of the `}` that brings depth to 0, or -1."""
    for i in range(pos, len(text)):
        depth += (text[i] == "{") - (text[i] == "}")
        if depth == 0:
            return i
    return -1


BRACE_TEXT = st.lists(st.sampled_from(["{", "}", "{", "}", "x", "é", "\ud800", "\U0001F600", "\x00", "\\boxed{"]),
                      max_size=300).map("".join)


@settings(max_examples=300, deadline=None)
@given(BRACE_TEXT, st.integers(1, 5), st.integers(1, 70))
def test_numpy_scan_equals_jump_loop_on_random_brace_strings(text, depth, chunk):
    expected = _reference_close(text, 0, depth)
    assert vr._matching_close(text, 0, depth, jumps=10**9) == expected  # the str.find / str.count loop only
    assert vr._close_by_scan(text, 0, depth, chunk=chunk) == expected  # numpy from the start, small chunks
    assert vr._close_by_scan(text, 0, depth) == expected  # numpy, one chunk
    assert vr._matching_close(text, 0, depth, jumps=2, scan_min=0) == expected  # a few jumps, then numpy


@pytest.mark.parametrize("body", ["{}" * 5000, "{" * 5000 + "}" * 4999, "{}é" * 3000, "{}\U0001F600" * 3000,
                                  "{}\ud800" * 3000 + "}", "x" * 70_000 + "{}" * 70_000 + "}"])
def test_long_inputs_take_the_numpy_path_and_agree(body):
    text = "a \\boxed{1} b \\boxed{" + body
    begin = text.rfind("\\boxed{") + len("\\boxed{")
    expected = _reference_close(text, begin)
    assert vr._matching_close(text, begin, jumps=10**9) == expected
    assert vr._matching_close(text, begin) == expected
    assert extract_boxed_answer(text) == (None if expected < 0 else text[begin:expected])


def test_close_by_scan_skips_chunks_where_depth_cannot_reach_zero():
    text = "{" * 200 + "}" * 201
    assert vr._close_by_scan(text, 0, 1, chunk=7) == _reference_close(text, 0, 1) == 400
    assert vr._close_by_scan(text, 0, 10**12, chunk=7) == -1  # depth beyond any int32


# The patterns as they were before the atomic group: the verdicts must not change.
_OLD_NUM = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]*)?|\.[0-9]+"
_OLD_ARG = rf"\{{(-?)({_OLD_NUM})\}}|([0-9])"
OLD_PATTERNS = [re.compile(rf"(-?)({_OLD_NUM})"), re.compile(rf"(-?)({_OLD_NUM})/(-?)({_OLD_NUM})"),
                re.compile(rf"(-?)\\[dt]?frac(?:{_OLD_ARG})(?:{_OLD_ARG})")]
NUMBERISH = st.lists(st.sampled_from(["0", "1", "12", "123", "1234", ",", ",000", ",00", ".", ".5", "-", "/", "{", "}",
                                      "\\frac", "\\dfrac", "x"]), max_size=14).map("".join)


@settings(max_examples=400, deadline=None)
@given(NUMBERISH)
def test_atomic_number_patterns_match_exactly_like_the_backtracking_ones(s):
    for old, new in zip(OLD_PATTERNS, (vr._NUMBER, vr._SLASH, vr._FRAC)):
        m_old, m_new = old.fullmatch(s), new.fullmatch(s)
        assert (m_old and m_old.groups()) == (m_new and m_new.groups())


def test_longest_accepted_answer_fits_under_max_answer_len():
    digits = "9" * MAX_DIGITS
    thousands = f"{int(digits):,}."  # every digit, every comma and a decimal point
    longest = f"-\\dfrac{{-{thousands}}}{{-{thousands}}}"
    assert normalize_to_fraction(longest) == Fraction(-1)  # three minus signs
    assert len(longest) <= vr.MAX_ANSWER_LEN
    assert normalize_to_fraction(" ".join(longest) + " $" * 100_000) == Fraction(-1)  # whitespace and $ don't count
    assert normalize_to_fraction(longest + "0" * (vr.MAX_ANSWER_LEN - len(longest) + 1)) is None


@pytest.mark.parametrize("s", ["1 " * 100_000, "1\xa0" * 100_000, "$" * 200_000, "1" * 199_999 + "x",
                               "1" + ",000" * 50_000 + "x", "\\frac{1}{" * 22_000, "-" * 200_000])
def test_normalize_rejects_long_strings_quickly(s):
    t0 = time.perf_counter()
    assert normalize_to_fraction(s) is None
    assert time.perf_counter() - t0 < 10  # a hang guard (well under 1 ms); make bench measures the real numbers
