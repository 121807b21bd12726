"""Exercise 10's page machinery: the three interrupts on the simulated clock (agent/interrupt_sim.py) and the study
the page runs on them (teaching/ex10_partial_rollout). The simulated runs are deterministic, so their verdicts are:
the same run twice is the same run; every chunk replays from the snapshots and switches it recorded; abort and
continue do what they say on the clock; the tables and verdicts are computed from the study.
"""
from __future__ import annotations

import copy
import functools
import json

import pytest

from agentrl_ref.agent import GRPOConfig, SFTConfig, run_sft, sample_chunk
from agentrl_ref.agent.concurrency import torch_threads
from agentrl_ref.agent.interrupt_sim import simulate_interrupts
from agentrl_ref.agent.schedule import COST_MODEL
from test_two_process import ScriptedWatch

CFG = GRPOConfig(steps=5, prompts_per_step=4, group_size=4, n_workers=1, max_staleness=1)


@pytest.fixture(scope="module")
def start():
    return run_sft(3, SFTConfig(steps=30, batch_size=32), n_test=16, greedy=False)


def _sim(start, interrupt):
    snapshots = [copy.deepcopy(start.sft_policy().state_dict())]
    sim = simulate_interrupts(start.sft_policy(), start.task, CFG, interrupt,
                              on_update=lambda v, p: snapshots.append(copy.deepcopy(p.state_dict())))
    return sim, snapshots


@pytest.fixture(scope="module")
def sims(start):
    return {i: _sim(start, i) for i in ("wait", "abort", "continue")}


def _fingerprint(sim) -> str:
    """Everything the run produced but the measured CPU seconds, as text (NaN equals NaN there)."""
    return json.dumps([[{k: v for k, v in row.items() if k != "train_seconds"} for row in sim.history], sim.chunks,
                       sim.publish, sorted(sim.token_staleness.items())])


def test_the_simulated_clock_gives_the_same_run_twice(start, sims):
    again, _ = _sim(start, "continue")
    assert _fingerprint(again) == _fingerprint(sims["continue"][0])


@pytest.mark.parametrize("interrupt", ["wait", "abort", "continue"])
def test_every_chunk_replays_from_its_versions_and_nothing_is_older_than_max_staleness(start, sims, interrupt):
    sim, snapshots = sims[interrupt]
    policy = start.sft_policy()
    for c in sim.chunks:
        policy.load_state_dict(snapshots[c["began_version"]])
        watch = ScriptedWatch(policy, snapshots, c["began_version"], c["switches"])
        with torch_threads():
            episodes = sample_chunk(policy, start.task, CFG, c["chunk"], watch=watch)
        assert sum(e.assistant_tokens() for e in episodes) == c["kept"]
        oldest = min(v for e in episodes for v in e.sampled_versions(-1))
        assert oldest == c["version"] and 0 <= c["chunk"] - oldest <= CFG.max_staleness
        assert c["start"] <= c["began"] < c["end"]
        assert all(c["began"] <= time <= c["end"] for _, _, time in c["switches"])
    assert sum(sim.token_staleness.values()) == sim.kept
    assert sim.publish == sorted(sim.publish) and len(sim.publish) == CFG.steps + 1


def test_each_interrupt_does_what_it_says_on_the_clock(sims):
    wait, abort, cont = (sims[i][0] for i in ("wait", "abort", "continue"))
    assert not any(c["switches"] or c["aborts"] for c in wait.chunks) and wait.generated == wait.kept
    assert all(not c["switches"] for c in abort.chunks) and abort.generated > abort.kept
    assert set(abort.token_staleness) == {0}  # every kept token from the version the trainer trains
    assert all(c["began_version"] == c["version"] == c["newest"] for c in abort.chunks)
    assert sum(c["aborts"] for c in abort.chunks) > 0 and sum(bool(c["switches"]) for c in cont.chunks) > 0
    assert cont.generated == cont.kept and cont.mean_token_staleness < wait.mean_token_staleness
    for sim in (wait, abort, cont):
        # a step starts when both its batch and the previous step are done, and lasts its cost
        for (begin, end), row, c in zip(sim.steps, sim.history, sim.chunks):
            assert begin >= c["end"] and end == pytest.approx(begin + row["train_cost"])
        assert 0.0 <= sim.trainer_idle < 1.0 and sim.throughput > 0
    assert abort.seconds > wait.seconds  # the dropped attempts cost simulated time
    with pytest.raises(ValueError, match="interrupt"):
        simulate_interrupts(None, None, CFG, "pause")


def test_the_cost_model_prices_a_prefill_as_one_forward_pass():
    assert COST_MODEL.decode_step(32) == pytest.approx(COST_MODEL.decode_call + 32 * COST_MODEL.decode_row)
    assert COST_MODEL.chunk(32, 10) == pytest.approx(10 * COST_MODEL.decode_step(32))
    assert COST_MODEL.prefill(32, 30) == pytest.approx(COST_MODEL.decode_call + COST_MODEL.forward * 32 * 30)


# --- the page's study, at a toy size ----------------------------------------------------------------------------

def tiny_study():
    """The page's study at a toy size (two seeds, a few steps, few evaluation problems; one process)."""
    return _tiny()


@functools.cache
def _tiny():
    from agentrl_ref.teaching.ex10_partial_rollout.interrupt_study import StudyConfig, run_study

    cfg = StudyConfig(seeds=(0, 1), sft_steps=20, steps=3, prompts_per_step=2, group_size=4, n_eval=12)
    return run_study(cfg, processes=1)


def test_the_study_tables_and_verdicts_come_from_its_runs():
    from agentrl_ref.teaching.ex10_partial_rollout.interrupt_study import measure_real
    from agentrl_ref.teaching.ex10_partial_rollout.tables import (
        SIM_COMPARISONS, cost_lines, real_table, real_verdicts_markdown, sim_summary, sim_table, sim_verdicts,
    )

    study = tiny_study()
    cfg = study.config
    assert set(study.arms) == {(i, s) for i in cfg.interrupts for s in cfg.seeds}
    for (i, s), arm in study.arms.items():
        assert [v.version for v in arm.versions] == list(range(cfg.steps + 1))
        assert [v.published for v in arm.versions] == arm.sim.publish
        assert len(arm.versions[0].correct) == cfg.n_eval
        assert arm.versions[0].correct == study.before[s]  # version 0 is the seed's SFT weights in every arm
        assert len(study.time_accuracy(i, s)) == cfg.n_eval
    table = sim_table(study)
    assert table.count("\n| ") == len(cfg.interrupts) and "SFT 之后" in table
    verdicts = sim_verdicts(study)
    assert len(verdicts) == len(SIM_COMPARISONS) and all(v.kind != "single" for v in verdicts)
    assert "abort" in sim_summary(study)
    assert sim_table(study) == table  # computed, not sampled again
    real = measure_real(study)
    assert set(real.runs) == set(study.arms)
    assert real_table(real).count("\n| ") == len(cfg.interrupts)
    assert real_verdicts_markdown(real).count("判断（实测）") == 2
    assert "成本模型" in cost_lines(study, real) and real.idle_seconds > 0

