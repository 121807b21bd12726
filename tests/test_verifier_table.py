"""Exercise 2's tables: the seed page's answer on its own table (E1, E2), toy verifier vs math-verify (E12)."""
from __future__ import annotations

import pytest

from agentrl_ref.teaching.ex2_verifiable_reward.answer_forms import ANSWER_FORMS, AnswerForm, VerifierComparison
from agentrl_ref.teaching.ex2_verifiable_reward.verifier_table import (
    SEED_AND_TRAPS, WARM_UP, forms_table, plot_verifiers, run_comparison, seed_accuracy_reward, seed_answer_table,
    summary_table, verifier_summary,
)


def test_seed_answer_fails_its_own_frac_case_and_crashes_on_inf():
    assert seed_accuracy_reward("\\boxed{\\frac{1}{2}}", "0.5") == 0.0  # E1: the seed's own case 2
    with pytest.raises(OverflowError):  # E2
        seed_accuracy_reward("\\boxed{inf}", "1")
    assert seed_accuracy_reward("\\boxed{nan}", "1") == 0.0  # ValueError inside the fallback is caught
    assert seed_accuracy_reward("思考...所以\\boxed{0.5}", "1/2") == 1.0


def _table_rows(markdown: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in markdown.splitlines()[2:]]


def test_seed_answer_table_marks_only_the_seed_column():
    rows = _table_rows(seed_answer_table())
    assert len(rows) == len(SEED_AND_TRAPS)
    for row in rows:
        assert "✗" not in row[4], row  # ours is right on every row
    seed_column = [row[3] for row in rows]
    assert seed_column[1] == "**0.0** ✗" and seed_column[5] == "**抛出 OverflowError** ✗"
    assert sum("✗" in cell for cell in seed_column) == 2
    assert "`\\boxed{2}\\n\\boxed{3}`" in seed_answer_table()  # newlines shown as \n inside code spans


def _comparison(expected: bool, toy: bool, mv: bool, toy_s: float = 1e-5, mv_s: float = 1e-2) -> VerifierComparison:
    return VerifierComparison("c", "g", expected, "n", toy, mv, toy == expected, mv == expected, toy_s, mv_s, mv)


def test_summary_counts_false_negatives_and_false_positives():
    rows = [_comparison(True, True, True), _comparison(True, False, True), _comparison(True, False, False),
            _comparison(False, False, True), _comparison(False, False, False, toy_s=3e-5, mv_s=5e-2)]
    toy, mv = verifier_summary(rows)
    assert (toy.agree, toy.false_negatives, toy.positives, toy.false_positives, toy.negatives) == (3, 2, 3, 0, 2)
    assert (mv.agree, mv.false_negatives, mv.false_positives) == (3, 1, 1)
    assert toy.false_negative_rate == pytest.approx(2 / 3) and mv.false_positive_rate == pytest.approx(0.5)
    assert toy.median_seconds == pytest.approx(1e-5) and mv.median_seconds == pytest.approx(1e-2)
    table = summary_table([toy, mv])
    assert "2/3 = 67%" in table and "1/2 = 50%" in table and "10.0 µs" in table and "10.00 ms" in table


def test_forms_table_marks_disagreements():
    rows = [_comparison(True, False, True), _comparison(False, False, True)]
    lines = forms_table(rows).splitlines()
    assert len(lines) == 4
    assert lines[2].startswith("| 1 | 1 | **0** ✗ | 1 |") and lines[3].startswith("| 2 | 0 | 0 | **1** ✗ |")


def test_warm_up_forms_are_not_in_the_table():
    table = {(f.completion, f.gold) for f in ANSWER_FORMS}
    assert not table & {(f.completion, f.gold) for f in WARM_UP}


@pytest.fixture(scope="module")
def measured() -> list[VerifierComparison]:
    return run_comparison()


def test_the_notebook_prose_matches_the_measurement(measured):
    """The 解析 of exercise 2 states these verdicts in words; they must stay true (math-verify==0.9.0)."""
    toy, mv = verifier_summary(measured)
    assert toy.false_positives == 0 and toy.false_negatives > mv.false_negatives > 0
    assert mv.median_seconds > 10 * toy.median_seconds
    by_case = {(r.completion, r.gold): r for r in measured}
    assert by_case[("\\boxed{0.333333}", "1/3")].math_verify_equal             # float_rounding=6
    assert by_case[("\\boxed{\\sqrt{2}}", "1.41421356")].math_verify_equal
    assert by_case[("\\boxed{1\\,000}", "0")].math_verify_equal                 # parsed as 1*0
    assert not by_case[("\\boxed{2}\n\\boxed{3}", "3")].math_verify_equal        # two boxes, 0.9.0
    assert not by_case[("First \\boxed{1}, no wait, \\boxed{2}", "2")].math_verify_equal
    for case in [("\\boxed {5}", "5"), ("\\boxed{\\text{five}}", "5"), ("\\boxed{1\\,000}", "1000")]:
        assert not by_case[case].toy_equal and not by_case[case].math_verify_equal, case


def test_run_comparison_keeps_the_row_order():
    rows = [AnswerForm("\\boxed{3}", "3", True, "a"), AnswerForm("\\boxed{4}", "3", False, "b")]
    out = run_comparison(rows)
    assert [r.note for r in out] == ["a", "b"] and all(r.toy_ok and r.math_verify_ok for r in out)


def test_plot_verifiers_draws_without_warnings():
    import warnings

    from agentrl_ref.teaching.shared.cjk import cjk_font, zh

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [_comparison(True, True, True), _comparison(True, False, True, toy_s=2e-6), _comparison(False, False, True)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the book build turns any stderr into an error
        fig = plot_verifiers(rows)
        fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ([zh("与人工一致", ""), zh("漏判", ""), zh("误判", "")] if cjk_font() else
                      ["agrees with human", "false negative", "false positive"])
    plt.close(fig)


def test_tables_are_chinese_and_cite_no_errata():
    """The tables sit on a Chinese page: every note has a Chinese label, and no cell cites the maintainers' ERRATA."""
    from agentrl_ref.teaching.ex2_verifiable_reward.verifier_table import NOTE_ZH, REFERENCE_NAME

    assert {f.note for f in ANSWER_FORMS} <= set(NOTE_ZH)
    rows = [_comparison(True, True, True)._replace(note=ANSWER_FORMS[10].note)]
    table = forms_table(rows)
    assert NOTE_ZH[ANSWER_FORMS[10].note] in table and "参考实现" in table.splitlines()[0]
    seed = seed_answer_table()
    assert not any(f"E{n}" in seed for n in range(1, 13))
    assert "agentrl_ref.accuracy_reward" in REFERENCE_NAME
