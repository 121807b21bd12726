"""A table of answer forms with a human verdict, and a side-by-side check of our toy verifier vs math-verify.

Each row is (completion, gold, expected_equal, note): `expected_equal` is what a careful human
grader would say (is the final answer in the completion mathematically equal to gold?).
Judgement calls are marked "(judgement)" in the note. The table feeds a notebook and bench/run.py.
"""
from __future__ import annotations

import time
from typing import NamedTuple

from agentrl_ref.verifiable_reward import accuracy_reward


class AnswerForm(NamedTuple):
    completion: str
    gold: str
    expected_equal: bool
    note: str


F = AnswerForm
ANSWER_FORMS: list[AnswerForm] = [
    # plain numbers
    F(r"So the answer is \boxed{42}.", "42", True, "integer"),
    F(r"\boxed{-7}", "-7", True, "negative integer"),
    F(r"\boxed{007}", "7", True, "leading zeros"),
    F(r"\boxed{3}", "2", False, "plainly wrong"),
    F(r"\boxed{10.0}", "10", True, "integer written as a decimal"),
    F(r"\boxed{0.50}", "0.5", True, "trailing zero"),
    F(r"\boxed{.5}", "0.5", True, "no leading zero"),
    F(r"思考...所以\boxed{0.5}", "1/2", True, "decimal vs slash fraction (seed case 1)"),
    F(r"\boxed{12345678901234567890}", "12345678901234567891", False,
      "20-digit integers differ in the last digit; floats cannot tell"),
    F(r"\boxed{5}", "5.0000001", False, "close is not equal"),
    # fractions
    F(r"\boxed{\frac{1}{2}}", "0.5", True, "latex frac, nested braces (seed case 2, E1)"),
    F(r"\boxed{\dfrac{3}{4}}", "0.75", True, "\\dfrac"),
    F(r"\boxed{\tfrac{3}{4}}", "3/4", True, "\\tfrac"),
    F(r"\boxed{\frac12}", "1/2", True, "TeX shorthand \\frac12"),
    F(r"\boxed{-\frac{1}{2}}", "-0.5", True, "minus before \\frac"),
    F(r"\boxed{\frac{-1}{2}}", "-1/2", True, "minus inside \\frac"),
    F(r"\boxed{2/4}", "1/2", True, "unreduced fraction"),
    F(r"\boxed{1 / 2}", "0.5", True, "spaces around the slash"),
    F(r"\boxed{3/4}", r"\frac{3}{4}", True, "gold written in LaTeX"),
    F(r"\boxed{\frac{2}{3}}", "0.67", False, "rounded decimal is not equal"),
    F(r"\boxed{0.333}", "1/3", False, "truncated decimal is not equal"),
    F(r"\boxed{0.333333}", "1/3", False, "six-digit decimal is still not equal"),
    F(r"\boxed{½}", "1/2", True, "unicode vulgar fraction"),
    F(r"\boxed{\frac{1}{0}}", "0", False, "division by zero is no number"),
    # separators, percent, notation
    F(r"\boxed{1,000}", "1000", True, "comma thousands separator"),
    F(r"\boxed{1,234,567}", "1234567", True, "several thousands separators"),
    F(r"\boxed{1{,}000}", "1000", True, "LaTeX thousands separator {,}"),
    F(r"\boxed{1\,000}", "1000", True, "LaTeX thin space as separator"),
    F(r"\boxed{1\,000}", "0", False, "thin-space thousand is not zero"),
    F(r"\boxed{1,2}", "12", False, "a comma list is not a thousands separator"),
    F(r"\boxed{50\%}", "0.5", True, "percent vs fraction"),
    F(r"\boxed{50\%}", "50", True, "percent vs bare number (judgement: the question asked for a percent)"),
    F(r"\boxed{1e3}", "1000", True, "scientific E notation"),
    F(r"\boxed{10^3}", "1000", True, "power"),
    F(r"\boxed{2^{10}}", "1024", True, "power with braced exponent"),
    F(r"\boxed{0.1+0.2}", "0.3", True, "unevaluated sum (a float trap)"),
    F(r"\boxed{−3}", "-3", True, "unicode minus sign U+2212"),
    # symbolic
    F(r"\boxed{\sqrt{2}}", r"\sqrt{2}", True, "surd"),
    F(r"\boxed{\sqrt{2}}", "1.41421356", False, "decimal approximation of a surd is not equal"),
    F(r"\boxed{\frac{\sqrt{3}}{2}}", r"\frac{\sqrt3}{2}", True, "surd in a fraction, shorthand \\sqrt3"),
    F(r"\boxed{2\pi}", r"2\pi", True, "pi expression"),
    F(r"\boxed{\pi}", "3.14", False, "approximation of pi is not equal"),
    F(r"\boxed{x^2+2x+1}", "(x+1)^2", True, "expanded vs factored polynomial"),
    F(r"\boxed{\infty}", r"\infty", True, "infinity"),
    F(r"\boxed{inf}", r"\infty", True, "infinity spelled inf"),
    # intervals, sets, tuples
    F(r"\boxed{(1, 2)}", "(1,2)", True, "tuple / open interval"),
    F(r"\boxed{[0, 1)}", "[0,1)", True, "half-open interval"),
    F(r"\boxed{(0, 1)}", "[0,1]", False, "open vs closed interval"),
    F(r"\boxed{\{1, 2\}}", r"\{2, 1\}", True, "set: order does not matter"),
    # where the box is, and how many
    F("\\boxed{2}\n\\boxed{3}", "3", True, "two boxes: the last is final (seed case 3)"),
    F(r"First \boxed{1}, no wait, \boxed{2}", "2", True, "self-correction, last box final (judgement)"),
    F(r"The answer is 5", "5", True, "no box: a human reads it, a box-only verifier cannot"),
    F(r"$\boxed{12}$", "12", True, "box inside inline math"),
    F(r"\boxed{$12$}", "12", True, "inline math inside the box"),
    F(r"\boxed {5}", "5", True, "space between \\boxed and {"),
    F(r"\boxed{2} so the answer is \boxed{3", "3", False,
      "last box unclosed: truncated output, no final answer (judgement)"),
    F("没有答案", "5", False, "no answer at all (seed case 4)"),
    F(r"\boxed{abc}", "5", False, "text that is no number (seed case 5)"),
    # text, units, choices
    F(r"\boxed{\text{five}}", "5", True, "number word"),
    F(r"\boxed{12\text{ cm}}", "12", True, "unit in the box"),
    F(r"\boxed{\$12}", "12", True, "currency sign"),
    F(r"\boxed{x = 3}", "3", True, "answer given as an equation"),
    F(r"\boxed{\text{(B)}}", "B", True, "multiple-choice letter"),
]
del F


class VerifierComparison(NamedTuple):
    completion: str
    gold: str
    expected_equal: bool
    note: str
    toy_equal: bool
    math_verify_equal: bool          # open-r1's settings (math_verify_equal)
    toy_ok: bool  # toy verdict == human verdict
    math_verify_ok: bool
    toy_seconds: float
    math_verify_seconds: float
    math_verify_default_equal: bool  # math-verify's own defaults (math_verify_default_equal)


def math_verify_equal(completion: str, gold: str) -> bool:
    """math-verify's verdict as open-r1's accuracy_reward configures it (src/open_r1/rewards.py).

    The gold is parsed with extraction_mode="first_match" and math-verify's default extraction; the completion
    with one LatexExtractionConfig: boxed_match_priority=0, try_extract_without_anchor=False and open-r1's
    NormalizationConfig (nits=False, malformed_operators=False, basic_latex, equations, boxed="all", units).
    The gold string is wrapped in \\boxed{}: math-verify's LaTeX extraction needs a math environment, so a bare
    gold like `\\sqrt{2}` or `(1,2)` would not parse at all (open-r1 then returns None and skips the sample).
    Pinned to math-verify==0.9.0: verdicts differ between versions.
    """
    import logging

    from latex2sympy2_extended import NormalizationConfig
    from math_verify import LatexExtractionConfig, parse, verify  # imported lazily: heavy (sympy, antlr)

    answer_config = [LatexExtractionConfig(
        normalization_config=NormalizationConfig(nits=False, malformed_operators=False, basic_latex=True,
                                                 equations=True, boxed="all", units=True),
        boxed_match_priority=0, try_extract_without_anchor=False)]
    # latex2sympy2_extended 1.11 logs that equations=True is deprecated (it still splits equations): not for the page
    normalization = logging.getLogger("latex2sympy2_extended.math_normalization")
    level, normalization.level = normalization.level, logging.ERROR
    try:
        gold_parsed = parse("\\boxed{" + gold + "}", extraction_mode="first_match")
        answer = parse(completion, extraction_config=answer_config, extraction_mode="first_match")
        return bool(gold_parsed) and bool(verify(gold_parsed, answer))
    finally:
        normalization.level = level


def math_verify_default_equal(completion: str, gold: str) -> bool:
    """math-verify with its default settings: verify(parse(\\boxed{gold}), parse(completion)).

    Timeouts use signal.alarm (main thread only; parsing_timeout=None / timeout_seconds=None turn them off).
    """
    from math_verify import parse, verify

    return bool(verify(parse("\\boxed{" + gold + "}"), parse(completion)))


def compare_verifiers(rows: list[AnswerForm] = ANSWER_FORMS) -> list[VerifierComparison]:
    """Run the toy accuracy_reward and math-verify on every row; verdicts, agreement with the human and seconds per
    call."""
    out = []
    for row in rows:
        t0 = time.perf_counter()
        toy = accuracy_reward(row.completion, row.gold) == 1.0
        t1 = time.perf_counter()
        mv = math_verify_equal(row.completion, row.gold)
        t2 = time.perf_counter()
        out.append(VerifierComparison(*row, toy, mv, toy == row.expected_equal, mv == row.expected_equal,
                                      t1 - t0, t2 - t1, math_verify_default_equal(row.completion, row.gold)))
    return out
