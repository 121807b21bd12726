"""Exercise 4's simulation: a virtual clock that runs the real AsyncRolloutBuffer, fast and deterministic."""
from __future__ import annotations

import asyncio
import math
import time
from dataclasses import replace

import pytest

from agentrl_ref.teaching.ex4_async_rollout import rollout_sim
from agentrl_ref.teaching.ex4_async_rollout.rollout_sim import (
    SimConfig, SimulationDeadlock, VirtualClockLoop, comparison_table, run_modes, simulate,
)


def test_virtual_clock_jumps_instead_of_sleeping():
    loop = VirtualClockLoop()
    try:
        async def main():
            t0 = loop.time()
            await asyncio.sleep(3600)
            await asyncio.gather(asyncio.sleep(2.5), asyncio.sleep(1.0))
            return loop.time() - t0

        start = time.perf_counter()
        assert loop.run_until_complete(main()) == pytest.approx(3602.5)
        assert time.perf_counter() - start < 60  # a real sleep would take an hour
    finally:
        loop.close()


def test_virtual_clock_reports_a_deadlock_instead_of_hanging():
    loop = VirtualClockLoop()
    try:
        async def stuck():
            await asyncio.Event().wait()

        with pytest.raises(SimulationDeadlock):
            loop.run_until_complete(stuck())
    finally:
        loop.close()


def test_sync_schedule_matches_the_arithmetic():
    # 4 workers share a batch of 8 (2 each, 1 s each), then 1 s of training: 3 s a step, trainer busy 1/3
    config = SimConfig(mode="sync", n_workers=4, gen_time=1.0, gen_spread=0.0, train_time=1.0, batch_size=8,
                       capacity=8, n_steps=10)
    r = simulate(config)
    assert r.duration == pytest.approx(30.0)
    assert r.trainer_busy == pytest.approx(1 / 3)
    assert r.worker_busy == pytest.approx(2 / 3)
    assert (r.generated, r.trained, r.dropped_overflow, r.dropped_stale, r.leftover) == (80, 80, 0, 0, 0)
    assert set(r.lags) == {0}


def test_async_schedule_overlaps_generation_and_training():
    # generation rate (4/s) equals consumption (8 per 2 s): after the first batch the trainer never waits
    config = SimConfig(mode="async", n_workers=4, gen_time=1.0, gen_spread=0.0, train_time=2.0, batch_size=8,
                       capacity=64, n_steps=20)
    r = simulate(config)
    assert r.duration == pytest.approx(2.0 + 20 * 2.0)  # 2 s to fill the first batch, then back to back
    assert r.trainer_busy == pytest.approx(40 / 42)
    assert r.trained == 160 and r.dropped_overflow == 0
    assert min(r.lags) >= 0 and max(r.lags) >= 1  # trained data is one policy version behind, at least sometimes


def test_async_beats_sync_when_both_sides_are_comparable():
    results = run_modes(SimConfig(n_steps=60))
    assert results["async"].trainer_busy > results["sync"].trainer_busy + 0.3
    assert results["async"].throughput > results["sync"].throughput
    assert set(results["sync"].lags) == {0}


def test_overflow_and_staleness_are_counted_and_everything_adds_up():
    config = SimConfig(mode="async", n_workers=16, capacity=32, max_staleness=1, n_steps=50)
    r = simulate(config)
    assert r.dropped_overflow > 0 and r.dropped_stale > 0
    assert r.generated == r.trained + r.dropped_overflow + r.dropped_stale + r.leftover
    assert max(r.lags) <= 1
    assert r.trained == config.n_steps * config.batch_size


def test_staleness_filter_favours_short_generations():
    r = simulate(SimConfig(mode="async", gen_spread=1.5, max_staleness=1, n_steps=80))
    s = r.summary()
    assert s["mean_gen_time_trained"] < 0.8 * s["mean_gen_time_all"]


def test_occupancy_series_is_consistent():
    config = SimConfig(mode="async", n_steps=30)
    r = simulate(config)
    assert len(r.occupancy_t) == len(r.occupancy_n) > 0
    assert all(a <= b for a, b in zip(r.occupancy_t, r.occupancy_t[1:]))
    assert 0 <= min(r.occupancy_n) and max(r.occupancy_n) <= config.capacity
    assert len(r.train_intervals) == config.n_steps
    assert all(math.isclose(e - s, config.train_time) for s, e in r.train_intervals)


def test_same_seed_same_result_other_seed_other_result():
    a, b = simulate(SimConfig(seed=7, n_steps=40)), simulate(SimConfig(seed=7, n_steps=40))
    c = simulate(SimConfig(seed=8, n_steps=40))
    assert (a.occupancy_t, a.occupancy_n, a.lags) == (b.occupancy_t, b.occupancy_n, b.lags)
    assert a.occupancy_t != c.occupancy_t


def test_a_few_thousand_trajectories():
    # about 0.15 s on an idle 2-core machine (no timing assertion: the notebook build would notice)
    r = simulate(SimConfig(mode="async", n_workers=16, capacity=32, n_steps=100))
    assert r.generated > 2500


def test_runs_inside_a_running_event_loop_like_a_jupyter_kernel():
    async def kernel_cell():
        return simulate(SimConfig(n_steps=5)), asyncio.get_running_loop()

    result, outer = asyncio.run(kernel_cell())
    assert result.trained == 5 * 16
    assert outer.is_closed()


def test_progress_is_reported_per_step():
    seen = []
    run_modes(SimConfig(n_steps=4), progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 8), (2, 8), (3, 8), (4, 8), (5, 8), (6, 8), (7, 8), (8, 8)]


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        SimConfig(mode="both")
    with pytest.raises(ValueError):
        SimConfig(n_workers=0)
    with pytest.raises(ValueError):
        simulate(SimConfig(batch_size=16, capacity=8))  # the buffer refuses, as in the exercise


def test_comparison_table_has_a_row_per_setting():
    table = comparison_table([("x", run_modes(SimConfig(n_steps=5))), ("y", run_modes(SimConfig(n_steps=5, seed=1)))])
    lines = table.split("\n")
    assert len(lines) == 4 and lines[2].startswith("| x | ") and lines[3].startswith("| y | ")
    assert all(line.count("|") == 7 for line in lines)


def test_plots_draw_every_panel():
    """Their language and glyphs: tests/test_figures.py."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.ex4_async_rollout.rollout_plots import plot_results

    fig = plot_results(run_modes(replace(SimConfig(), n_steps=20, max_staleness=2)), "title")
    try:
        assert len(fig.axes) == 5
        assert fig.get_suptitle().startswith("title\n")
    finally:
        plt.close(fig)


def test_module_has_no_wall_clock_sleep():
    import inspect

    assert "time.sleep" not in inspect.getsource(rollout_sim)
