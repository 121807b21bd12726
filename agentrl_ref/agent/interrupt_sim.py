"""Interruptible generation on the simulated clock: wait, abort and continue compared without a timer (exercise 10).

    sim = simulate_interrupts(policy, task, cfg, "continue", on_update=keep)
    sim.publish[v]            simulated seconds when version v was published (publish[0] = 0)
    sim.token_staleness       {staleness: trained tokens that lagged the trainer by that many versions}
    sim.generated, sim.kept   tokens sampled (aborted attempts included), tokens in the delivered trajectories

The two-process engine (two_process.py) is the real thing, and not deterministic: where a weight update lands in a
chunk depends on the wall clock, so on the machine's load. Here one process plays both devices of that engine on
schedule.py's simulated clock: the rollout device samples one chunk after another, decode step by decode step (a step
costs COST_MODEL.decode_step(rows), new weights in the middle of a chunk COST_MODEL.prefill(rows, positions)), and
the trainer trains each batch as soon as its chunks are done (COST_MODEL.step of the batch; the trainer row's
train_cost). A version is published when the trainer's simulated step ends. Chunk c waits for version
needed_version(c) (AReaL's admission rule, as the worker process does) and starts with the newest version published
by then; between two decode steps the rollout device looks whether a newer version has been published by its own
simulated time, and then waits (goes on with its weights), aborts (the chunk again from scratch with the new weights,
at the same simulated moment) or continues (new weights, cache recomputed). The same run gives the same trajectories,
versions and simulated times on any machine, however busy, so the verdicts computed from them do not move.

The trainer is trainer.Trainer, as in both runners: one batch per step, the oldest first, each trajectory's
policy_version its oldest token's.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

from agentrl_ref.agent.concurrency import torch_threads
from agentrl_ref.agent.grpo_config import GRPOConfig
from agentrl_ref.agent.rollout import Interrupted
from agentrl_ref.agent.schedule import COST_MODEL, CostModel
from agentrl_ref.agent.trainer import Trainer, needed_version, sample_chunk
from agentrl_ref.agent.two_process import INTERRUPTS, chunk_trajectories, token_staleness_counter


@dataclass
class SimRun:
    """One run of simulate_interrupts: the trainer's rows, each chunk on the simulated clock, the publications."""

    interrupt: str
    config: GRPOConfig
    history: list[dict] = field(repr=False)
    # chunk, version (its oldest token's), newest, start and end (simulated seconds), aborts, aborted [(start, end,
    # version) of each dropped attempt], wasted and kept tokens, switches [(position, version, time)], began and
    # began_version (the attempt that was kept)
    chunks: list[dict] = field(repr=False)
    steps: list[tuple[float, float]] = field(repr=False)  # simulated start and end of every train step
    publish: list[float] = field(repr=False)
    token_staleness: dict[int, int] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        """Simulated seconds until the last version was published."""
        return self.publish[-1]

    @property
    def trajectories(self) -> int:
        return len(self.history) * self.config.batch_size

    @property
    def throughput(self) -> float:
        """Trajectories trained on per simulated second."""
        return self.trajectories / self.seconds

    @property
    def generated(self) -> int:
        return sum(c["kept"] + c["wasted"] for c in self.chunks)

    @property
    def kept(self) -> int:
        return sum(c["kept"] for c in self.chunks)

    @property
    def mean_token_staleness(self) -> float:
        tokens = sum(self.token_staleness.values())
        return sum(s * n for s, n in self.token_staleness.items()) / tokens

    @property
    def trainer_idle(self) -> float:
        """Share of the simulated time the trainer waited for its batch."""
        return max(0.0, 1.0 - sum(end - start for start, end in self.steps) / self.seconds)


class _Clock:
    """The simulated time of the rollout device and the versions published so far (their snapshots and times)."""

    def __init__(self, state: dict):
        self.now = 0.0
        self.publish = [0.0]
        self.states = [state]

    def newest(self) -> int:
        """The newest version published by self.now."""
        return max(v for v, t in enumerate(self.publish) if t <= self.now)


class ClockWatch:
    """rollout.py's watch on the simulated clock: every decode step advances the rollout device's time; a version
    published by then makes it wait (go on), abort or switch (the weights loaded, the prefill paid)."""

    def __init__(self, clock: _Clock, policy, version: int, interrupt: str, rows: int, cost: CostModel):
        self.clock, self.policy, self.version, self.interrupt = clock, policy, version, interrupt
        self.rows, self.cost = rows, cost
        self.switches: list[tuple[int, int, float]] = []  # (position, version, simulated time) of each switch

    def poll(self, t: int) -> str:
        newest = self.clock.newest()
        if newest != self.version and self.interrupt == "abort":
            return "abort"
        if newest != self.version and self.interrupt == "continue":
            self.version = newest
            self.policy.load_state_dict(self.clock.states[newest])
            self.switches.append((t, newest, self.clock.now))
            self.clock.now += self.cost.prefill(self.rows, t)
            return "switch"
        self.clock.now += self.cost.decode_step(self.rows)
        return "go"


def simulate_interrupts(policy, task, cfg: GRPOConfig, interrupt: str = "wait", *, parts=None, on_update=None,
                        progress=None, cost: CostModel = COST_MODEL) -> SimRun:
    """GRPO with one rollout device and one trainer on the simulated clock, chunks caught by an update handled as
    `interrupt` says (INTERRUPTS); trains `policy` in place. on_update(version, policy) after each publication,
    progress(done, total, text) after each step."""
    if interrupt not in INTERRUPTS:
        raise ValueError(f"interrupt must be one of {INTERRUPTS}, got {interrupt!r}")
    trainer = Trainer(policy, task, cfg, parts, None, None)
    counts: dict[int, int] = {}
    count = token_staleness_counter(counts)
    sampler = copy.deepcopy(policy)
    clock = _Clock(copy.deepcopy(policy.state_dict()))
    rows = trainer.chunk_size
    per_step = cfg.n_workers
    chunks, waiting, steps = [], [], []
    have = 0
    policy.train()
    with torch_threads():
        for c in range(trainer.n_chunks):
            need = needed_version(c, trainer.chunk_size, cfg.batch_size, cfg.max_staleness)
            clock.now = max(clock.now, clock.publish[need])
            newest = clock.newest()
            if newest != have:
                sampler.load_state_dict(clock.states[newest])
                have = newest
            start, wasted, aborted = clock.now, 0, []
            while True:
                attempt = clock.now
                clock.now += cost.decode_step(rows)  # the first decode step (the prompt's prefill)
                watch = ClockWatch(clock, sampler, have, interrupt, rows, cost)
                try:
                    episodes = sample_chunk(sampler, task, cfg, c, watch=watch)
                    break
                except Interrupted as stop:
                    wasted += stop.sampled
                    aborted.append((attempt, clock.now, have))
                    have = clock.newest()
                    sampler.load_state_dict(clock.states[have])
            trajectories = chunk_trajectories(episodes, c, cfg.group_size, have)
            chunks.append({"chunk": c, "version": min(t["policy_version"] for t in trajectories),
                           "newest": watch.version, "start": start, "end": clock.now, "aborts": len(aborted),
                           "aborted": aborted, "wasted": wasted, "kept": sum(e.assistant_tokens() for e in episodes),
                           "switches": watch.switches, "began": attempt, "began_version": have})
            have = watch.version
            waiting += trajectories
            if len(waiting) < cfg.batch_size:
                continue
            batch, waiting = waiting[:cfg.batch_size], waiting[cfg.batch_size:]
            version = trainer.version
            stale = max(version - t["policy_version"] for t in batch)
            if stale > cfg.max_staleness:  # the admission rule makes this impossible
                raise RuntimeError(f"step {version}: a trajectory {stale} versions old (max_staleness "
                                   f"{cfg.max_staleness})")
            count(batch, version)
            row = trainer.train_step(batch)
            trainer.history.append(row)
            begin = max(clock.publish[-1], clock.now)
            steps.append((begin, begin + row["train_cost"]))
            trainer.version += 1
            clock.publish.append(begin + row["train_cost"])
            clock.states.append(copy.deepcopy(policy.state_dict()))
            if on_update is not None:
                on_update(trainer.version, policy)
            if progress is not None:
                progress(trainer.version, cfg.steps, f"训练批准确率 {row['accuracy']:.0%}")
    assert len(chunks) == per_step * cfg.steps
    return SimRun(interrupt, cfg, trainer.history, chunks, steps, clock.publish, dict(sorted(counts.items())))
