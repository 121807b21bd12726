"""Asynchronous RL for real (issue 19): the rollout worker in a second process, the off-policy corrections.

Asynchronous runs are not deterministic, so these tests check invariants, never timings: the synchronous two-process
run is the in-process run; every trajectory's version names the weights that sampled it (its chunk is sampled again
from that version's snapshot and comes out identical); nothing older than max_staleness is trained on; no process
survives a run, an exception, a dead worker or a notebook's interrupt. That asynchrony is faster is a benchmark row
(bench/capstone.py), not a test.
"""
from __future__ import annotations

import json
import os
import time

import psutil
import pytest
import torch

from agentrl_ref.agent import (
    GRPOConfig, SFTConfig, Task, WeightBoard, collate, grpo, grpo_two_process, off_policy_inputs,
    resolve_parts, run_sft, sample_chunk, token_logp,
)
from agentrl_ref.agent.concurrency import torch_threads
from agentrl_ref.agent.two_process import available
from agentrl_ref.rollout_buffer import AsyncRolloutBuffer

pytestmark = pytest.mark.skipif(not available(), reason="needs fork and two cores")

TINY = GRPOConfig(steps=4, prompts_per_step=8, group_size=4)


@pytest.fixture(scope="module")
def start():
    """A short SFT (the weights every run here starts from)."""
    return run_sft(7, SFTConfig(steps=30, batch_size=32), n_test=32, greedy=False)


def _curves(history):
    return json.dumps([{k: v for k, v in row.items() if k != "train_seconds"} for row in history])


_ALREADY_RUNNING: set[int] = set()


@pytest.fixture(autouse=True)
def _note_the_children_before():
    """The session's own children (the browser of the site tests, a shared kernel) were there before the test."""
    _ALREADY_RUNNING.clear()
    _ALREADY_RUNNING.update(p.pid for p in psutil.Process().children(recursive=True))
    yield


def _children() -> list[psutil.Process]:
    """The living processes this test started and left behind."""
    return [p for p in psutil.Process().children(recursive=True)
            if p.pid not in _ALREADY_RUNNING and p.status() != psutil.STATUS_ZOMBIE]


def _gone(pid: int) -> bool:
    """Ended and reaped (a zombie is not gone: nobody has waited for it)."""
    try:
        psutil.Process(pid)
    except psutil.NoSuchProcess:
        return True
    return False


class RecordingBuffer(AsyncRolloutBuffer):
    """Exercise 4's buffer (a student's class goes in the same way, MY_PARTS), keeping every trajectory it was given."""

    seen: list = []

    async def put(self, traj):
        RecordingBuffer.seen.append(traj)
        await super().put(traj)


def test_the_synchronous_two_process_run_is_the_in_process_run(start):
    cfg = GRPOConfig(steps=3, prompts_per_step=8, group_size=4, max_staleness=0)
    two = grpo_two_process(start.sft_policy(), start.task, cfg)
    one = grpo(start.sft_policy(), start.task, cfg)
    assert _curves(two.history) == _curves(one.history)
    assert [c["version"] for c in two.chunks] == [c["version"] for c in one.chunks] == [0, 0, 1, 1, 2, 2]
    assert two.publish == sorted(two.publish) and len(two.publish) == cfg.steps + 1
    assert _gone(two.worker_pid) and not _children()


def test_every_trajectory_was_sampled_by_the_version_it_carries_and_none_is_too_old(start):
    """max_staleness=2: the chunk of every trajectory, sampled again from the snapshot of the version it carries,
    gives the same tokens and behaviour log-probs; no chunk trained on is older than max_staleness."""
    cfg = GRPOConfig(steps=6, prompts_per_step=8, group_size=4, max_staleness=2)
    snapshots = [start.sft_policy().state_dict()]

    def keep(version, policy):
        snapshots.append({k: t.clone() for k, t in policy.state_dict().items()})

    RecordingBuffer.seen = []
    res = grpo_two_process(start.sft_policy(), start.task, cfg, parts={"AsyncRolloutBuffer": RecordingBuffer},
                           on_update=keep)
    assert len(RecordingBuffer.seen) == cfg.steps * cfg.batch_size and len(snapshots) == cfg.steps + 1
    per_step = cfg.n_workers
    for c in res.chunks:  # chunk c is trained on at step c // per_step (the buffer hands out the oldest first)
        assert 0 <= c["chunk"] // per_step - c["version"] <= cfg.max_staleness
    for step, row in enumerate(res.history):
        lags = [step - c["version"] for c in res.chunks if c["chunk"] // per_step == step]
        assert row["staleness"] == pytest.approx(sum(lags) / len(lags))
    policy = start.sft_policy()
    by_chunk: dict = {}
    for traj in RecordingBuffer.seen:
        by_chunk.setdefault(traj["group"][0], []).append(traj)
    differs = 0
    for c, trajs in sorted(by_chunk.items()):
        version = {t["policy_version"] for t in trajs}
        assert len(version) == 1  # one chunk, one set of weights
        policy.load_state_dict(snapshots[version.pop()])
        with torch_threads():  # one torch thread, as in the worker: the float sums come out bit for bit the same
            again = sample_chunk(policy, start.task, cfg, c)
        assert [e.tokens for e in again] == [t["episode"].tokens for t in trajs]
        assert [e.logp for e in again] == [t["episode"].logp for t in trajs]
        # the behaviour log-probs are those of this version, not of its neighbours (so the check above can fail)
        b = collate([t["episode"] for t in trajs], resolve_parts())
        other = trajs[0]["policy_version"] + (1 if trajs[0]["policy_version"] < cfg.steps else -1)
        policy.load_state_dict(snapshots[other])
        with torch.no_grad():
            differs += not torch.allclose(token_logp(policy, b) * b.mask, b.logp_old * b.mask, atol=1e-4)
    assert differs == len(by_chunk)
    assert _gone(res.worker_pid) and not _children()


def test_an_exception_in_the_trainer_stops_the_worker(start):
    calls = []

    def failing_loss(logp_new, logp_old, advantages, loss_mask, clip_eps=0.2):
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("a student's loss failed")
        return -(advantages * logp_new * loss_mask).sum() / loss_mask.sum()

    with pytest.raises(ValueError, match="a student's loss failed"):
        grpo_two_process(start.sft_policy(), start.task, TINY, parts={"loss": failing_loss})
    assert len(calls) == 2 and not _children()


class DyingTask(Task):
    """A task whose sampling kills the process it runs in, or raises, unless that process is the test's."""

    def sample(self, rng, n):
        if os.getpid() != PARENT[0]:
            if PARENT[1] == "exit":
                os._exit(3)
            raise ArithmeticError("the environment broke")
        return super().sample(rng, n)


PARENT = [os.getpid(), "exit"]


@pytest.mark.parametrize("how, message", [("exit", "died \\(exit code 3\\)"), ("raise", "ArithmeticError")])
def test_a_dead_or_failing_worker_is_reported_at_once(start, how, message):
    PARENT[:] = [os.getpid(), how]
    t = start.task
    task = DyingTask(t.seed, t.ops, t.a_range, t.b_range, t.test)
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=message):
        grpo_two_process(start.sft_policy(), task, GRPOConfig(steps=2, prompts_per_step=8, group_size=4,
                                                               batch_timeout=600.0))
    assert time.perf_counter() - t0 < 300  # reported, not waited out (batch_timeout is 600 s); not a timing target
    assert not _children()


def _interrupt(km, kc, code: str, started) -> dict:
    """Run `code` in the kernel, wait until started() is true and a second more, interrupt as JupyterLab does (SIGINT
    to the kernel's process group); the cell's reply."""
    msg_id = kc.execute(code)
    deadline = time.monotonic() + 120
    while not started() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started(), "the cell never got going"
    time.sleep(1.0)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=60)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=60)
    return reply["content"]


NO_RUN_THREAD = "import threading\nassert not [t for t in threading.enumerate() if t.name.startswith('capstone')]"


def _run(kc, code: str) -> str:
    """The status of `code` run in the kernel. Right after a cell ends in an error, ipykernel answers the requests
    that reach it before it stops aborting with "aborted" (not run): those are sent again."""
    for _ in range(50):
        status = kc.execute_interactive(code, timeout=60)["content"]["status"]
        if status != "aborted":
            return status
        time.sleep(0.2)
    return status


def test_a_notebook_interrupt_stops_the_run_its_thread_and_its_worker():
    """A kernel trains in a cell; the notebook's interrupt ends the cell with KeyboardInterrupt after the run has
    unwound: no process and no thread of it is left, and the kernel goes on. Once with the rollout worker in a second
    process, once in-process (grpo() in a notebook runs its event loop in a thread of its own)."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        kernel = psutil.Process(km.provisioner.process.pid)
        setup = ("from agentrl_ref.agent import GRPOConfig, fresh_policy, grpo, grpo_two_process, make_task\n"
                 "cfg = GRPOConfig(steps=100000, prompts_per_step=4, group_size=2, max_staleness=1)\n"
                 "task = make_task(0, n_test=8)\n")
        assert kc.execute_interactive(setup, timeout=120)["content"]["status"] == "ok"
        reply = _interrupt(km, kc, "grpo_two_process(fresh_policy(0), task, cfg)", kernel.children)
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
        assert not [p for p in kernel.children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]
        assert _run(kc, NO_RUN_THREAD) == "ok"
        steps = []
        reply = _interrupt(km, kc, "grpo(fresh_policy(0), task, cfg, progress=lambda *a: print(a[0]))",
                           lambda: steps or steps.extend(m for m in _iopub(kc) if m["msg_type"] == "stream"))
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
        assert _run(kc, NO_RUN_THREAD) == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _iopub(kc):
    """The kernel's pending output messages (none if there are none yet)."""
    out = []
    while kc.iopub_channel.msg_ready():
        out.append(kc.get_iopub_msg(timeout=1))
    return out


def test_the_weight_board_hands_over_copies_with_their_version(start):
    import multiprocessing

    policy = start.sft_policy()
    board = WeightBoard(policy, multiprocessing.get_context("fork"))
    other = start.sft_policy()
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(1.0)
    board.publish(policy, 5)
    assert board.load(other, -1) == 5
    assert all(torch.equal(a, b) for a, b in zip(policy.parameters(), other.parameters()))
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(1.0)  # the trainer goes on: the worker's copy must not move with it
    assert not any(torch.equal(a, b) for a, b in zip(policy.parameters(), other.parameters()))
    assert board.load(other, 5) == 5  # nothing newer: nothing copied


# --- the off-policy corrections -----------------------------------------------------------------------------------

def _areal_loss(new, prox, behave, adv, mask, eps, cap):
    """AReaL's decoupled PPO loss written out per token (areal ppo_actor_loss_fn, v1.0.1-v1.0.3, with
    behave_imp_weight_cap and behave_imp_weight_mode="token_mask"; v1.0.4's rejection_sampling with action "mask")."""
    total = count = 0.0
    for i in range(new.shape[0]):
        for t in range(new.shape[1]):
            if not mask[i, t]:
                continue
            count += 1
            r = torch.exp(new[i, t] - prox[i, t])
            w = torch.exp(prox[i, t] - behave[i, t])
            w = w if w <= cap else torch.zeros(())
            total = total - w * torch.minimum(r * adv[i, t], torch.clamp(r, 1 - eps, 1 + eps) * adv[i, t])
    return total / max(count, 1.0)


def test_the_corrections_hand_the_loss_what_each_objective_needs():
    from agentrl_ref.agent.loss import clipped_pg_loss

    gen = torch.Generator().manual_seed(19)
    behave = -torch.rand(3, 7, generator=gen, dtype=torch.float64) * 3
    prox = behave + torch.randn(3, 7, generator=gen, dtype=torch.float64) * 0.8  # some weights beyond the cap
    new = (prox + torch.randn(3, 7, generator=gen, dtype=torch.float64) * 0.3).requires_grad_(True)
    adv = torch.randn(3, 7, generator=gen, dtype=torch.float64)
    mask = (torch.rand(3, 7, generator=gen) < 0.7).to(torch.float64)
    cap = 2.0
    assert (torch.exp(prox - behave)[mask > 0] > cap).any()

    old, a = off_policy_inputs("behave", prox, behave, adv, cap)
    assert old is behave and a is adv
    old, a = off_policy_inputs("recompute", prox, behave, adv, cap)
    assert torch.equal(old, prox) and a is adv
    old, a = off_policy_inputs("decoupled", prox, behave, adv, cap)
    ours = clipped_pg_loss(new, old, a, mask, 0.2)
    theirs = _areal_loss(new, prox, behave, adv, mask, 0.2, cap)
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-12)
    g_ours, = torch.autograd.grad(ours, new)
    g_theirs, = torch.autograd.grad(theirs, new)
    assert torch.allclose(g_ours, g_theirs, atol=1e-12)
    with pytest.raises(ValueError, match="correction"):
        off_policy_inputs("tis", prox, behave, adv)
    with pytest.raises(ValueError, match="correction"):
        GRPOConfig(correction="none")
    with pytest.raises(ValueError, match="minibatches"):
        GRPOConfig(minibatches=0)


def test_with_fresh_data_decoupled_is_recompute_and_with_stale_data_the_behaviour_is_far(start):
    """max_staleness=0: the proximal weights are the behaviour weights, every importance weight is 1 (to float error),
    so the decoupled objective is the recomputed one. max_staleness=4: the batches are 4 versions old and the weights
    being trained are further from the behaviour policy than from the proximal one the recomputed arm compares with."""
    cfg = GRPOConfig(steps=2, prompts_per_step=8, group_size=4, max_staleness=0, minibatches=4)
    runs = {c: grpo(start.sft_policy(), start.task, GRPOConfig(**{**cfg.__dict__, "correction": c}))
            for c in ("behave", "decoupled", "recompute")}
    assert len(runs["behave"].history) == 2
    assert [r["loss"] for r in runs["decoupled"].history] == pytest.approx(
        [r["loss"] for r in runs["recompute"].history], abs=1e-5)
    stale = GRPOConfig(steps=6, prompts_per_step=8, group_size=4, max_staleness=4, minibatches=4)
    behave = grpo(start.sft_policy(), start.task, stale)
    recompute = grpo(start.sft_policy(), start.task, GRPOConfig(**{**stale.__dict__, "correction": "recompute"}))
    assert max(r["staleness"] for r in behave.history) == 4
    last = recompute.history[-1]  # its ratio is taken against the weights before the batch, not the behaviour's
    assert behave.history[-1]["behave_kl"] > 0 and last["approx_kl"] < last["behave_kl"]
    # measured steps: how far each batch moved the policy, and for the decoupled objective how its weights spread
    measured = grpo(start.sft_policy(), start.task,
                    GRPOConfig(**{**stale.__dict__, "correction": "decoupled", "measure_steps": True}))
    for row in measured.history:
        assert row["step_kl"] >= 0 and row["extra_forwards"] == 1.25 and 0 <= row["capped_share"] <= 1
        assert 0 < row["weight_ess"] <= 1 + 1e-9
    assert measured.history[0]["capped_share"] == 0 and measured.history[0]["weight_ess"] == pytest.approx(1)
    assert "step_kl" not in behave.history[0] and behave.history[0]["extra_forwards"] == 0


def test_the_throughput_section_measures_every_setting_and_evaluates_every_version(start):
    """measure_throughput: the runs side by side from the same weights, every published version evaluated at the wall
    time it was published; the ceilings from the synchronous run; the figures in Chinese with no glyph missing. No
    timing is asserted."""
    import io
    import warnings

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentrl_ref.agent import measure_throughput
    from agentrl_ref.teaching.ex7_agent_grpo import plot_timeline, plot_wall_versions, throughput_table

    cfg = GRPOConfig(steps=3, prompts_per_step=8, group_size=4)
    real = measure_throughput(start, staleness=(0, 2), base=cfg)
    assert set(real.results) == set(real.versions) == {0, 2}
    for ms, versions in real.versions.items():
        assert [v.version for v in versions] == list(range(cfg.steps + 1))
        assert [v.published for v in versions] == real.results[ms].publish
        assert len(versions[0].correct) == len(start.task.test)  # 32 < VERSION_EVAL_PROBLEMS: all of them
        assert _gone(real.results[ms].worker_pid)
    assert real.versions[0][0].correct == real.versions[2][0].correct  # version 0 is the SFT weights in both
    assert real.ratio(0) == 1.0 and 1.0 <= real.bound_steps() <= real.bound <= 2.0
    assert all(real.replayed_seconds(ms) > 0 for ms in real.results)
    assert set(real.time_accuracy()) == {0, 2} and real.horizon == min(r.seconds for r in real.results.values())
    assert throughput_table(real).count("\n") == 3  # header, alignment, two rows
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figs = [plot_timeline(real, (0, 2)), plot_wall_versions(real)]
        for fig in figs:
            fig.savefig(io.BytesIO(), format="png")
    assert not [str(w.message) for w in caught if "missing" in str(w.message)]
    from agentrl_ref.teaching.shared.page_figure import page_problems

    for fig in figs:
        texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
        assert any(any("\u4e00" <= ch <= "\u9fff" for ch in text) for text in texts), texts
        assert not page_problems(fig), page_problems(fig)  # drawn for the book's column
        plt.close(fig)
    with pytest.raises(ValueError, match="synchronous"):
        measure_throughput(start, staleness=(1, 2), base=cfg)
    assert not _children()


def test_the_weight_transfer_is_measured_both_ways_and_leaves_nothing_behind(start):
    from agentrl_ref.agent import measure_weight_transfer

    out = measure_weight_transfer(start.policy, repeats=3, warmup=1)
    n = sum(p.numel() for p in start.policy.parameters())
    assert out["bytes"] == 4 * n
    for clock in ("cpu", "wall"):
        assert set(out[clock]) == {"shared memory", "pipe"} and all(s > 0 for s in out[clock].values())
    assert not _children()


# --- interruptible generation (exercise 10): wait, abort, continue ----------------------------------------------

INTERRUPTED = GRPOConfig(steps=5, prompts_per_step=4, group_size=4, n_workers=1, max_staleness=1)
GATE_AT = 5  # the decode step at which the worker waits for the update it is about to be caught by


@pytest.fixture
def gated(monkeypatch):
    """Make every update land in the middle of a chunk, at the same decode step, whatever the machine's load: with
    max_staleness=1 and one chunk per step, the worker generates chunk c >= 1 while the trainer trains step c - 1;
    at its GATE_AT-th decode step the (forked) worker waits until version c is published. The patches are made
    before the fork, so the worker inherits them."""
    from agentrl_ref.agent import two_process

    current = {"chunk": -1}
    real_sample, real_poll = two_process.sample_chunk, two_process.BoardWatch.poll

    def sample(policy, task, cfg, c, watch=None):
        current["chunk"] = c
        return real_sample(policy, task, cfg, c, watch=watch)

    def poll(self, t):
        self.polls = getattr(self, "polls", 0) + 1
        c = current["chunk"]
        if self.polls == GATE_AT and c >= 1:
            deadline = time.monotonic() + 120  # a hang guard, not a timing expectation
            while self.board.version.value < c and time.monotonic() < deadline and not self.board.stopped.value:
                time.sleep(0.005)
        return real_poll(self, t)

    monkeypatch.setattr(two_process, "sample_chunk", sample)
    monkeypatch.setattr(two_process.BoardWatch, "poll", poll)
    return current


def _run_interrupted(start, interrupt):
    snapshots = [start.sft_policy().state_dict()]
    RecordingBuffer.seen = []
    res = grpo_two_process(start.sft_policy(), start.task, INTERRUPTED, interrupt=interrupt, on_update=lambda v, p:
                           snapshots.append({k: t.clone() for k, t in p.state_dict().items()}),
                           parts={"AsyncRolloutBuffer": RecordingBuffer})
    by_chunk: dict = {}
    for traj in RecordingBuffer.seen:
        by_chunk.setdefault(traj["group"][0], []).append(traj)
    return res, snapshots, by_chunk


class ScriptedWatch:
    """Replays a chunk's recorded weight switches, (position, version, ...) each: at that position, load the snapshot
    of that version (tests/test_interrupt_study.py replays the simulated clock's chunks with it too)."""

    def __init__(self, policy, snapshots, version, switches):
        self.policy, self.snapshots, self.version = policy, snapshots, version
        self.script = {switch[0]: switch[1] for switch in switches}

    def poll(self, t):
        if t not in self.script:
            return "go"
        self.version = self.script[t]
        self.policy.load_state_dict(self.snapshots[self.version])
        return "switch"


def test_continue_every_token_records_the_version_that_sampled_it(start, gated):
    """interrupt="continue": every chunk after the first is caught by an update and switches weights mid-chunk.
    Replaying its recorded switches from the snapshots gives the same tokens, log-probs and versions; each sampled
    token's behaviour log-prob is its own version's (a full forward pass with that snapshot), not the other
    version's; a trajectory's policy_version is its oldest token's, and the trained tokens' staleness is counted per
    token."""
    res, snapshots, by_chunk = _run_interrupted(start, "continue")
    cfg = INTERRUPTED
    assert res.interrupt == "continue" and len(res.history) == cfg.steps
    switched = [c for c in res.chunks if c["switches"]]
    assert [c["chunk"] for c in switched] == list(range(1, cfg.steps))  # the gate makes every later chunk switch
    policy = start.sft_policy()
    differs = mixed = 0
    for c in sorted(res.chunks, key=lambda c: c["chunk"]):
        trajs = by_chunk[c["chunk"]]
        assert c["switches"] == [] or len(c["switches"]) == 1
        policy.load_state_dict(snapshots[c["version"]])
        watch = ScriptedWatch(policy, snapshots, c["version"], c["switches"])
        with torch_threads():
            again = sample_chunk(policy, start.task, cfg, c["chunk"], watch=watch)
        assert [e.tokens for e in again] == [t["episode"].tokens for t in trajs]
        assert [e.logp for e in again] == [t["episode"].logp for t in trajs]
        assert [e.versions for e in again] == [t["episode"].versions for t in trajs]
        for traj in trajs:
            e = traj["episode"]
            sampled = e.sampled_versions(-1)
            assert len(sampled) == e.assistant_tokens() and traj["policy_version"] == min(sampled)
            assert 0 <= c["chunk"] - traj["policy_version"] <= cfg.max_staleness  # trained at step = chunk
            versions = sorted(set(sampled))
            mixed += len(versions) > 1
            b = collate([e], resolve_parts())
            for v in versions:
                at = torch.tensor([[x == v for x in e.versions[1:]]])  # targets sampled by v (logp_old is shifted)
                policy.load_state_dict(snapshots[v])
                with torch.no_grad():
                    mine = token_logp(policy, b)
                assert torch.allclose(mine[at], b.logp_old[at], atol=1e-4)
                other = snapshots[versions[0] if v != versions[0] else versions[-1]] if len(versions) > 1 else None
                if other is not None:
                    policy.load_state_dict(other)
                    with torch.no_grad():
                        differs += not torch.allclose(token_logp(policy, b)[at], b.logp_old[at], atol=1e-4)
    assert mixed > 0 and differs > 0  # trajectories do mix versions, and the check above can tell them apart
    assert sum(res.token_staleness.values()) == sum(c["kept"] for c in res.chunks)
    assert set(res.token_staleness) == {0, 1} and res.generated_tokens == res.kept_tokens
    assert _gone(res.worker_pid) and not _children()


def test_abort_drops_the_caught_chunk_and_generates_it_again_with_the_new_weights(start, gated):
    """interrupt="abort": every chunk after the first is dropped once and generated again from scratch: what the
    trainer gets is exactly the chunk sampled by the new version (replayed from its snapshot, no switches), its
    tokens are all one version, and the dropped attempt's tokens are counted as generated, not kept."""
    res, snapshots, by_chunk = _run_interrupted(start, "abort")
    cfg = INTERRUPTED
    assert [c["aborts"] for c in sorted(res.chunks, key=lambda c: c["chunk"])] == [0] + [1] * (cfg.steps - 1)
    policy = start.sft_policy()
    for c in res.chunks:
        trajs = by_chunk[c["chunk"]]
        assert c["version"] == c["newest"] == (c["chunk"] if c["chunk"] else 0) and not c["switches"]
        policy.load_state_dict(snapshots[c["version"]])
        with torch_threads():
            again = sample_chunk(policy, start.task, cfg, c["chunk"])
        assert [e.tokens for e in again] == [t["episode"].tokens for t in trajs]
        assert [e.logp for e in again] == [t["episode"].logp for t in trajs]
        assert all(set(t["episode"].sampled_versions(-1)) == {c["version"]} for t in trajs)
        assert c["generated"] == c["kept"] + c["wasted"] and (c["wasted"] > 0) == (c["chunk"] > 0)
    assert res.token_staleness == {0: res.kept_tokens} and res.generated_tokens > res.kept_tokens
    assert _gone(res.worker_pid) and not _children()


def test_wait_is_the_default_and_never_mixes_versions(start, gated):
    """interrupt="wait" (the default): the gated worker still finishes every chunk with the weights it started with."""
    with pytest.raises(ValueError, match="interrupt"):
        grpo_two_process(start.sft_policy(), start.task, INTERRUPTED, interrupt="pause")
    res, _, by_chunk = _run_interrupted(start, "wait")
    assert res.interrupt == "wait" and not any(c["switches"] or c["aborts"] for c in res.chunks)
    for c in res.chunks:
        assert all(t["episode"].versions is None and t["policy_version"] == c["version"] for t in by_chunk[c["chunk"]])
    assert sum(res.token_staleness.values()) == res.kept_tokens == res.generated_tokens
    assert not _children()
