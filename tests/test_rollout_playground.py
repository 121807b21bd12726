"""Exercise 4's playground, driven without a browser: set the controls, click Run, the figure changes."""
from __future__ import annotations

import asyncio
import io

import matplotlib
import pytest

matplotlib.use("Agg")

from agentrl_ref.teaching.ex4_async_rollout.rollout_playground import BOTH, OFF, RolloutPlayground  # noqa: E402
from agentrl_ref.teaching.ex4_async_rollout.rollout_sim import SimConfig  # noqa: E402
from course import run_notebook  # noqa: E402


def png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


@pytest.fixture
def playground():
    return RolloutPlayground(SimConfig(n_steps=20))


def test_it_runs_once_when_built_and_shows_both_schedules(playground):
    assert playground.runs == 1
    assert set(playground.results) == {"sync", "async"} and playground.mode.value == BOTH
    assert playground.figure is not None and playground.progress.value == 100
    assert "trainer 忙碌" in playground.summary.value and "<b>同步</b>" in playground.summary.value
    assert "<b>异步</b>" in playground.summary.value and "平均版本差" in playground.summary.value
    assert playground.mode.label == "同步 + 异步"


def test_every_control_feeds_the_simulation(playground):
    controls = {playground.n_workers: 3, playground.gen_time: 1.5, playground.gen_spread: 0.0,
                playground.train_time: 2.5, playground.batch_size: 6, playground.capacity: 12,
                playground.max_staleness: 2, playground.n_steps: 30, playground.seed: 11}
    for widget, value in controls.items():
        widget.value = value
    assert playground.config() == SimConfig(n_workers=3, gen_time=1.5, gen_spread=0.0, train_time=2.5,
                                            batch_size=6, capacity=12, max_staleness=2, n_steps=30, seed=11)


def test_clicking_run_recomputes_and_redraws(playground):
    before_fig, before_png = playground.figure, png(playground.figure)
    before_summary = playground.summary.value
    before_busy = playground.results["async"].trainer_busy

    playground.n_workers.value = 2  # far fewer workers: the trainer starves
    playground.progress.value = 0
    playground.run_button.click()

    assert playground.runs == 2 and playground.progress.value == 100
    assert playground.figure is not before_fig and png(playground.figure) != before_png
    assert playground.summary.value != before_summary
    assert playground.results["async"].trainer_busy < before_busy
    assert not playground.run_button.disabled


def test_the_mode_switch_picks_the_schedules(playground):
    playground.mode.value = "async"
    playground.run_button.click()
    assert list(playground.results) == ["async"]
    assert "<b>同步</b>" not in playground.summary.value and "<b>异步</b>" in playground.summary.value
    playground.mode.value = "sync"
    playground.run_button.click()
    assert list(playground.results) == ["sync"]


def test_staleness_control_changes_the_drops(playground):
    playground.mode.value = "async"
    playground.n_workers.value = 16
    playground.capacity.value = 32
    playground.max_staleness.value = OFF
    playground.run_button.click()
    unlimited = playground.results["async"]
    playground.max_staleness.value = 0
    playground.run_button.click()
    strict = playground.results["async"]
    assert unlimited.dropped_stale == 0 < strict.dropped_stale
    assert max(strict.lags) == 0


def test_capacity_below_batch_size_explains_instead_of_crashing(playground):
    playground.batch_size.value = 32
    playground.capacity.value = 8
    playground.run_button.click()
    assert "ValueError" in playground.summary.value
    assert not playground.run_button.disabled


def test_after_the_capacity_warning_no_old_figure_or_result_is_left(playground):
    """The figure of the previous settings must not stay under the warning as if it were for these."""
    assert playground.figure is not None and playground.results
    playground.batch_size.value = 32
    playground.capacity.value = 8
    playground.run_button.click()
    assert playground.figure is None and playground.results == {} and playground.output.outputs == ()
    playground.capacity.value = 64  # fixed: the next run draws again
    playground.run_button.click()
    assert playground.figure is not None and set(playground.results) == {"sync", "async"}
    assert "ValueError" not in playground.summary.value


def test_the_staleness_dropdown_starts_on_a_real_option():
    """ipywidgets 8: a Dropdown with value=None selects nothing and shows up empty."""
    off = RolloutPlayground(SimConfig(n_steps=5), run_now=False)
    assert off.max_staleness.index == 0 and off.max_staleness.label == "off"
    assert off.config().max_staleness is None
    one = RolloutPlayground(SimConfig(n_steps=5, max_staleness=1), run_now=False)
    assert one.max_staleness.label == "1" and one.config().max_staleness == 1
    three = RolloutPlayground(SimConfig(n_steps=5, max_staleness=3), run_now=False)  # not a preset option
    assert three.max_staleness.label == "3" and three.config().max_staleness == 3
    assert [label for label, _ in three.max_staleness.options] == ["off", "0", "1", "2", "3", "4", "8"]
    for label, _ in off.max_staleness.options:  # every option can be picked and gives a valid config
        off.max_staleness.label = label
        assert off.config().max_staleness == (None if label == "off" else int(label))


def test_same_settings_same_figure():
    a = RolloutPlayground(SimConfig(n_steps=15, seed=3))
    b = RolloutPlayground(SimConfig(n_steps=15, seed=3))
    assert png(a.figure) == png(b.figure)


def test_works_from_a_callback_inside_a_running_event_loop():
    # a widget callback in a Jupyter kernel runs while the kernel's loop is running
    async def kernel():
        pg = RolloutPlayground(SimConfig(n_steps=10), run_now=False)
        pg.run_button.click()
        return pg

    pg = asyncio.run(kernel())
    assert pg.runs == 1 and pg.results["async"].trained == 10 * 16


def test_displays_as_a_widget_box(playground):
    import ipywidgets

    assert isinstance(playground.widget, ipywidgets.VBox)
    children = repr(playground.widget.children)
    assert "Button" in children and "IntProgress" in children and "Output" in children


SHOW_PLAYGROUND = ("from agentrl_ref.teaching.ex4_async_rollout.rollout_playground import RolloutPlayground\n"
                   "from agentrl_ref.teaching.ex4_async_rollout.rollout_sim import SimConfig\n"
                   "pg = RolloutPlayground(SimConfig(n_steps=20))\npg")


def _kernel_run(*sources):
    """The cells run in a real kernel (no stderr, no error); the notebook and its saved widget state. The kernel
    is watched (course.run_notebook): a phase that waits a minute fails naming it. A run takes ~2 s alone; in
    full-suite runs this test took 120-240 s, the kernel's reply lying unread in nbclient's socket (course.py)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    run_notebook(nb, timeout=120, phase_limit=60, record_timing=True)
    assert not [o for c in nb.cells for o in c.outputs if o.get("name") == "stderr" or o.output_type == "error"]
    return nb, nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]


def test_in_a_real_kernel_the_widget_shows_and_a_click_redraws():
    """What JupyterLab does, minus the browser: display the playground, click Run, read the Output widget."""
    nb, state = _kernel_run(
        SHOW_PLAYGROUND,
        "pg.n_workers.value = 3\npg.mode.value = 'async'\npg.run_button.click()\n"
        "print(pg.runs, list(pg.results), pg.progress.value)")
    shown, clicked = nb.cells
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in shown.outputs)
    assert clicked.outputs[0].text.strip() == "2 ['async'] 100"
    figures = [o for model in state.values() if model["model_name"] == "OutputModel"
               for o in model["state"].get("outputs", []) if "image/png" in o.get("data", {})]
    assert figures, "the Output widget holds no figure"


def test_in_a_real_kernel_the_dropdown_shows_off_and_the_warning_clears_the_figure():
    """JupyterLab minus the browser: the dropdown's state selects "off"; after a click with a capacity below the
    batch size the Output widget holds no figure any more (only the warning is left)."""
    _, state = _kernel_run(
        SHOW_PLAYGROUND,
        "pg.batch_size.value = 32\npg.capacity.value = 8\npg.run_button.click()\nprint(pg.figure, pg.results)")
    dropdowns = [m["state"] for m in state.values() if m["model_name"] == "DropdownModel"]
    assert [d["index"] for d in dropdowns] == [0] and dropdowns[0]["_options_labels"][0] == "off"
    outputs = [m["state"].get("outputs", []) for m in state.values() if m["model_name"] == "OutputModel"]
    assert outputs == [[]], "the old figure is still in the Output widget"
    summaries = [m["state"]["value"] for m in state.values() if m["model_name"] == "HTMLModel"]
    assert any("ValueError" in value for value in summaries)
