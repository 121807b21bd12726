"""Every figure of exercises 1-6, 8, 10 and 11 and of the benchmarks page speaks Chinese where a CJK font is installed,
and none misses a glyph.

Each figure function of agentrl_ref.teaching is drawn twice: as the book build and the lab draw it (with the CJK
font that `make deps`, `make book` and `make lab` install, when it is there), and as Colab or Binder draw it (no
CJK font: the English text of cjk.zh). Both times matplotlib must not warn (a "Glyph ... missing" warning is
stderr: it fails the book's -W build and makes nbgrader score a test cell 0), and every character of every text
must be in a font matplotlib draws it with. The Chinese drawing is saved to test-artifacts/figure-<name>.png.
"""
from __future__ import annotations

import unicodedata
import warnings
from dataclasses import replace

import matplotlib
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402
from matplotlib.ft2font import FT2Font  # noqa: E402

from agentrl_ref.teaching.shared import cjk  # noqa: E402


def _reject_times():
    from agentrl_ref.teaching.ex1_format_reward.format_compare import plot_reject_times

    lengths = [1000, 2000, 4000, 8000]
    return plot_reject_times({"length": lengths, "seed page": [n * n * 1e-9 for n in lengths],
                              "tempered regex": [1e-6] * 4, "agentrl_ref": [n * 1e-8 for n in lengths]})


def _verifiers():
    from agentrl_ref.teaching.ex2_verifiable_reward.verifier_table import plot_verifiers
    from test_verifier_table import _comparison

    return plot_verifiers([_comparison(True, True, True), _comparison(True, False, True, toy_s=2e-6),
                           _comparison(False, False, True)])


def _mask_heatmap():
    from agentrl_ref.loss_mask import shift_mask_for_clm
    from agentrl_ref.teaching.shared.chat_template import AGENT_CONVERSATION, loss_mask_from_tokens, tokenize_chat
    from agentrl_ref.teaching.ex3_loss_mask.mask_plots import plot_mask_heatmap

    chat = tokenize_chat(AGENT_CONVERSATION)
    mask = loss_mask_from_tokens(chat)
    return plot_mask_heatmap(chat, mask, shift_mask_for_clm(mask))


def _rollouts():
    from agentrl_ref.teaching.ex4_async_rollout.rollout_plots import plot_results
    from agentrl_ref.teaching.ex4_async_rollout.rollout_sim import SimConfig, run_modes

    return plot_results(run_modes(replace(SimConfig(), n_steps=12, max_staleness=2)),
                        cjk.zh("长尾很重", "Heavy tail"))


def _lengths():
    from agentrl_ref.teaching.ex5_composite_reward.length_plots import plot_length_rewards

    return plot_length_rewards()


def _strategies():
    from agentrl_ref.teaching.ex6_token_credit.credit_plots import long_trajectory, plot_strategies, seed_example

    return plot_strategies([seed_example(), long_trajectory()])


def _outcome_credit():
    from agentrl_ref.teaching.ex6_token_credit.credit_plots import grpo_group, long_trajectory, plot_outcome_credit

    group = grpo_group()
    return plot_outcome_credit(group, long_trajectory(), group.advantages[0].item())


def _ex8_ratios():
    from agentrl_ref.teaching.ex8_token_in_out.drift_plots import plot_ratios
    from agentrl_ref.teaching.ex8_token_in_out.drift_study import Completion, DriftStudy

    kept = Completion((1,), (5, 6, 7), (-0.5, -1.25, -0.1), (5, 6, 7), None, (-0.5, -1.25, -0.1), ())
    drifted = Completion((1,), (5, 8, 9, 7), (-0.4, -2.5, -0.3, -0.1), (5, 10, 7), 1, (-0.4, -2.5, -0.3, -0.1),
                         (-0.4, -0.2, -0.1))
    return plot_ratios(DriftStudy((kept, drifted), sft_steps=0, vocab_size=11, tokenizer=None, chat_tokenizer=None))


def _ex10_timelines():
    from agentrl_ref.teaching.ex10_partial_rollout.plots import plot_timelines
    from test_interrupt_study import tiny_study

    return plot_timelines(tiny_study(), max_steps=3)


def _ex10_staleness():
    from agentrl_ref.teaching.ex10_partial_rollout.plots import plot_staleness_and_accuracy
    from test_interrupt_study import tiny_study

    return plot_staleness_and_accuracy(tiny_study())


def _ex11_study():
    """A study of hand-made histories: two seeds, the three arms (the figures read nothing else)."""
    from agentrl_ref.agent.dapo_arms import DAPO_BASE, DAPOArmRun, DAPOStudy, HeldOut

    def history(per_step, seed, arm):
        return [{"step": k, "entropy": 0.5 - 0.02 * k + 0.01 * seed, "clip_high": 0.002 * (k % 4) + 0.001 * arm,
                 "informative": 8 if per_step > 64 else 6 + (k + seed) % 3, "drawn_accuracy": 0.2 + 0.025 * k,
                 "samples_so_far": per_step * (k + 1)} for k in range(20)]

    runs = {(arm, seed): DAPOArmRun(arm, seed, history(per_step, seed, i), HeldOut([1, 0], [0.1, 0.2]))
            for seed in (0, 1) for i, (arm, per_step) in enumerate((("symmetric", 64), ("clip_higher", 64),
                                                                    ("dynamic", 104)))}
    return DAPOStudy((0, 1), DAPO_BASE, runs, {})


def _ex11_clip():
    from agentrl_ref.teaching.ex11_dapo_sampling.plots import plot_clip

    return plot_clip(_ex11_study())


def _ex11_sampling():
    from agentrl_ref.teaching.ex11_dapo_sampling.plots import plot_sampling

    return plot_sampling(_ex11_study())


def _bench(record: str, i: int):
    """The benchmarks page's i-th figure of a record (bench/report.py), drawn from a record shaped as its script
    writes it (tests/test_bench_records.py)."""
    def make():
        import report  # bench/
        from test_bench_records import sample_record

        return report.FIGURES[record][i](sample_record(record))
    return make


FIGURES = {"ex1-reject-times": _reject_times, "ex2-verifiers": _verifiers, "ex3-mask-heatmap": _mask_heatmap,
           "ex4-rollouts": _rollouts, "ex5-length-rewards": _lengths, "ex6-strategies": _strategies,
           "ex6-outcome-credit": _outcome_credit, "ex8-ratios": _ex8_ratios, "ex10-timelines": _ex10_timelines,
           "ex10-staleness": _ex10_staleness, "ex11-clip": _ex11_clip, "ex11-sampling": _ex11_sampling,
           "bench-format-scaling": _bench("run", 0), "bench-batched": _bench("run", 1),
           "bench-throughput": _bench("capstone-processes", 0), "bench-grading": _bench("grading", 0),
           "bench-latency": _bench("serve-latency", 0), "bench-page-weight": _bench("page-weight", 0)}


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def _is_cjk(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


def _fonts_used() -> list[str]:
    """The files matplotlib draws text with: one per entry of font.family, in order (its fallback chain)."""
    props = font_manager.FontProperties(family=matplotlib.rcParams["font.family"])
    return [str(path) for path in font_manager.fontManager._find_fonts_by_props(props)]


def _missing_glyphs(texts: list[str]) -> set[str]:
    covered: set[int] = set()
    for path in _fonts_used():
        covered |= set(FT2Font(path).get_charmap())
    return {ch for text in texts for ch in text if ch.isprintable() and not ch.isspace() and ord(ch) not in covered}


def _draw(make):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph warns; the book build and nbgrader punish any stderr
        fig = make()
        fig.canvas.draw()
    return fig


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_chinese_where_the_font_is_and_never_misses_a_glyph(name, artifacts):
    fig = _draw(FIGURES[name])
    try:
        texts = _texts(fig)
        assert not _missing_glyphs(texts), (name, _missing_glyphs(texts))
        if cjk.cjk_font():
            assert any(_is_cjk(ch) for text in texts for ch in text), f"{name}: no Chinese text"
            fig.savefig(artifacts / f"figure-{name}.png")
    finally:
        plt.close(fig)


@pytest.mark.parametrize("name", FIGURES)
def test_without_a_cjk_font_the_figure_falls_back_to_english(name, monkeypatch):
    monkeypatch.setattr(cjk, "cjk_font", lambda: None)
    fig = _draw(FIGURES[name])
    try:
        texts = _texts(fig)
        assert not any(_is_cjk(ch) for text in texts for ch in text), (name, texts)
        assert not _missing_glyphs(texts), (name, _missing_glyphs(texts))
    finally:
        plt.close(fig)


def test_the_project_installs_the_font_the_figures_use():
    """make deps (tests), make book and make lab install Debian's fonts-noto-cjk; cjk.py finds it."""
    from pathlib import Path

    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text(encoding="utf-8")
    assert "CJK_FONT_PACKAGE := fonts-noto-cjk" in makefile and "fonts-noto-cjk" in makefile.split("DEBIAN_PACKAGES")[1]
    for target in ("book: vendor fonts", "lab: venv fonts", "lab-instructor: venv fonts"):
        assert target in makefile
    if Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc").is_file():
        assert cjk.cjk_font() == "Noto Sans CJK SC"


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_drawn_for_the_books_column(name):
    """Text at least page_figure.MIN_TEXT_PX as a desktop reader sees it, no legend on the data, and a title (the
    caption and the alt text the book gives the figure: book/_ext/figure_captions.py)."""
    from agentrl_ref.teaching.shared.page_figure import COLUMN_PX, page_problems, saved_width_px

    fig = _draw(FIGURES[name])
    try:
        assert not page_problems(fig), (name, page_problems(fig))
        assert saved_width_px(fig) <= COLUMN_PX + 2, name  # shown unscaled: its text is as big as drawn
    finally:
        plt.close(fig)


def test_the_checks_catch_what_the_book_had():
    """page_problems on a figure like exercise 5's before: 10-inch wide at 110 dpi, legend over the curves."""
    from agentrl_ref.teaching.shared.page_figure import page_problems, title_of

    fig, ax = plt.subplots(figsize=(10, 4), dpi=110)
    ax.plot([0, 1, 2], [0, 0.05, 0.1], label="curve")
    ax.legend(loc="lower left", fontsize=7.5)
    problems = page_problems(fig)
    assert any(p.startswith("text ") for p in problems) and any(p.startswith("legend on the data") for p in problems)
    assert "no title (the caption and the alt text come from it)" in problems
    ax.set_title("左", loc="left")
    assert title_of(fig) == "左"
    plt.close(fig)
