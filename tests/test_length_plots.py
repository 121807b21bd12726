"""Exercise 5's plot and tables: the curves, the values table and the training-log table."""
import math

import pytest

from agentrl_ref.composite_reward import seed_reward_fn
from agentrl_ref.teaching.ex5_composite_reward.length_plots import (
    CURVE_LABELS_ZH, CURVES, LOG_EXAMPLES, dapo_reward, length_curves, log_markdown_table, plot_length_rewards,
    reward_log_rows, unclamped_cosine, values_table,
)


def test_course_curves_short_is_best_and_clamped():
    f_right, f_wrong = CURVES["course correct"], CURVES["course wrong"]
    assert f_right(0.0) == pytest.approx(1.0) and f_wrong(0.0) == pytest.approx(-1.0)  # ERRATA E5
    assert f_right(1.0) == pytest.approx(0.0, abs=1e-12) and f_wrong(1.0) == pytest.approx(0.0, abs=1e-12)
    for x in (1.2, 1.5, 2.0, 7.0):
        assert f_right(x) == pytest.approx(0.0, abs=1e-12) and f_wrong(x) == pytest.approx(0.0, abs=1e-12)
    grid = [i / 100 for i in range(101)]
    assert all(f_right(a) >= f_right(b) for a, b in zip(grid, grid[1:]))
    assert all(f_wrong(a) <= f_wrong(b) for a, b in zip(grid, grid[1:]))


def test_without_clamp_the_cosine_wraps():
    assert CURVES["course correct, no clamp"](2.0) == pytest.approx(1.0)
    assert CURVES["course wrong, no clamp"](2.0) == pytest.approx(-1.0)
    assert unclamped_cosine(0.3, 1.0, 0.0) == pytest.approx(CURVES["course correct"](0.3))


def test_open_r1_defaults():
    assert CURVES["open-r1 correct"](0.0) == pytest.approx(1.0)
    assert CURVES["open-r1 correct"](1.0) == pytest.approx(0.5)
    assert CURVES["open-r1 wrong"](0.0) == pytest.approx(-1.0)  # short wrong answers punished most
    assert CURVES["open-r1 wrong"](1.0) == pytest.approx(-0.5)
    assert CURVES["open-r1 wrong"](0.5) == pytest.approx(-0.75)


def test_dapo_is_linear_in_the_cache_zone():
    assert dapo_reward(0.5, True) == 1.0 and dapo_reward(0.75, False) == -1.0
    assert dapo_reward(0.875, True) == pytest.approx(0.5) and dapo_reward(0.875, False) == pytest.approx(-1.5)
    assert dapo_reward(1.0, True) == pytest.approx(0.0) and dapo_reward(1.3, False) == -2.0
    # equal steps in length, equal steps in reward: linear, not a cosine
    steps = [dapo_reward(0.8 + 0.05 * i, True) for i in range(4)]
    diffs = [b - a for a, b in zip(steps, steps[1:])]
    assert max(diffs) - min(diffs) < 1e-12 and diffs[0] < 0


def test_length_curves_grid():
    curves = length_curves(x_max=1.5, points=31)
    assert curves["ratio"][0] == 0.0 and curves["ratio"][-1] == pytest.approx(1.5)
    assert set(curves) == {"ratio", *CURVES} and all(len(v) == 31 for v in curves.values())


def test_values_table_has_every_curve():
    table = values_table(at=(0.0, 1.0, 2.0))
    lines = table.splitlines()
    assert len(lines) == 2 + len(CURVES)
    assert lines[0] == "| L/max_len = | 0 | 1 | 2 |"
    assert "| 本题，答对，不截断 | 1.000 | 0.000 | 1.000 |" in lines
    assert set(CURVE_LABELS_ZH) == set(CURVES)
    assert "-0.000" not in table


def test_plot_has_two_panels(recwarn):
    """The figure's language and glyphs: tests/test_figures.py."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plot_length_rewards()
    try:
        assert len(fig.axes) == 2
        texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
        assert any("cosine" in t.lower() for t in texts) and any("DAPO" in t for t in texts)
        fig.canvas.draw()
    finally:
        plt.close(fig)
    assert not [w for w in recwarn if "Glyph" in str(w.message)]


def test_log_rows_seed_example_true_values():
    rows = reward_log_rows(seed_reward_fn())
    seed = rows[0]
    assert seed["L"] == 62 and seed["fmt"] == 1.0 and seed["acc"] == 1.0
    assert seed["cos_len"] == pytest.approx(0.964, abs=5e-4)  # ERRATA E6: not "≈ 0"
    assert seed["total"] == pytest.approx(1.293, abs=5e-4)  # ERRATA E6: not "≈ 1.1"
    for row in rows:
        assert row["total"] == pytest.approx(0.1 * row["fmt"] + 1.0 * row["acc"] + 0.2 * row["cos_len"])
        assert row["L/max_len"] == pytest.approx(row["L"] / 512)


def test_log_examples_cover_the_cases_the_page_talks_about():
    rows = {label: row for (label, _, _), row in zip(LOG_EXAMPLES, reward_log_rows(seed_reward_fn()))}
    by = list(rows.values())
    assert any(r["acc"] == 1.0 and r["L"] > 512 and r["cos_len"] == 0.0 for r in by)  # clamped
    assert any(r["acc"] == 0.0 and r["cos_len"] < -0.9 for r in by)  # short and wrong
    assert any(r["fmt"] == 0.0 and r["acc"] == 1.0 for r in by)  # no tags
    last = by[-1]  # a false negative of the verifier: right number, not in \boxed{}
    assert last["fmt"] == 1.0 and last["acc"] == 0.0 and last["cos_len"] < 0
    assert "391" in LOG_EXAMPLES[-1][1] and "\\boxed" not in LOG_EXAMPLES[-1][1]


def test_log_markdown_table():
    rows = reward_log_rows(seed_reward_fn())
    table = log_markdown_table(rows)
    lines = table.splitlines()
    assert lines[0] == "| 回答 | L | L/max_len | fmt | acc | cos_len | total |"
    assert len(lines) == 2 + len(LOG_EXAMPLES)
    assert "**1.293**" in lines[2] and "| 62 |" in lines[2]
    assert not math.isnan(sum(r["total"] for r in rows))
