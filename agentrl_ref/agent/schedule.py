"""Throughput of the asynchronous pipeline, replayed on a simulated clock driven by a deterministic cost model.

The training run itself is single-threaded (asyncio): generation and training never overlap in
wall time here. replay() asks what the same run would take if each rollout worker and the trainer
had a device of its own: every chunk keeps the policy version it really used, it starts as soon as
its worker is free and that version exists, and a trainer step starts when the previous step is done
and its batch is complete.

How long each piece of work takes on that clock comes from COST_MODEL, a function of the work alone
(rows and positions decoded, rows and padded length trained), never from a timer: the same run gives
the same simulated times on a busy machine and on an idle one, so verdicts computed from them do not
depend on the load. The trainer also records the CPU seconds each piece really took (time.thread_time),
so a page can show how far the model is from this machine; those measured seconds go into no comparison.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CostModel:
    """Simulated seconds of the work a run does, one torch thread:

    a chunk of generation  decoded positions * (decode_call + decode_row * rows): every decode step is one call of
                           the model on all the chunk's rows (finished ones too) until its longest episode ends
    a prefill              decode_call + forward * rows * positions: a chunk's cache computed again with new weights
    a trainer step         rows * (episode + length * (token + forward * extra forward passes)): per trajectory the
                           reward, the loss mask and the padding (Python), per row and padded position the forward
                           and backward passes of all minibatches, and the extra forward passes without gradient, in
                           batches (the proximal policy's log-probs: 1; a measured step's "after" pass on its first
                           minibatch: 1 / minibatches)

    The constants were fitted to thread CPU seconds measured on the course's 2-core machine (one torch thread; chunks
    of 16 to 256 rows, trainer steps of 16 to 256 rows); the page prints the model beside this run's measurement."""

    decode_call: float = 6.0e-4
    decode_row: float = 1.9e-5
    episode: float = 1.2e-4
    token: float = 1.35e-5
    forward: float = 0.45e-5

    def chunk(self, rows: int, positions: int) -> float:
        return positions * self.decode_step(rows)

    def decode_step(self, rows: int) -> float:
        """One decode step of a chunk: one call of the model on all its rows."""
        return self.decode_call + self.decode_row * rows

    def prefill(self, rows: int, positions: int) -> float:
        """Keys and values of `positions` tokens of every row computed again in one call (new weights in the middle
        of a chunk, exercise 10): one forward pass without gradient, priced as the trainer's extra forward passes."""
        return self.decode_call + self.forward * rows * positions

    def step(self, rows: int, length: int, extra_forwards: float = 0.0) -> float:
        return rows * (self.episode + length * (self.token + self.forward * extra_forwards))


COST_MODEL = CostModel()


@dataclass
class Replay:
    """Simulated seconds: total, trainer idle; steps whose batch was not ready when the trainer was."""

    total: float
    serial: float          # the same work one after the other (what this single thread did)
    trainer_idle: float
    steps_waited: int      # steps (the first one included) before which the trainer waited for its batch
    steps: int
    trajectories: int
    intervals: list[tuple[str, float, float, int]] = field(default_factory=list, repr=False)  # device, start, end, step
    publish: list[float] = field(default_factory=list, repr=False)  # publish[v]: when policy version v exists

    @property
    def throughput(self) -> float:
        """Trajectories per simulated second."""
        return self.trajectories / self.total if self.total > 0 else float("nan")

    @property
    def speedup(self) -> float:
        return self.serial / self.total if self.total > 0 else float("nan")


def replay(chunks: list[dict], train_seconds: list[float], n_workers: int, chunks_per_step: int,
           trajectories_per_chunk: int, key: str = "seconds") -> Replay:
    """chunks[c] = {"version": int, key: float} in chunk order; chunk c belongs to step c // chunks_per_step.
    key: which duration of a chunk to use ("cost": the cost model's; "seconds": measured CPU seconds)."""
    steps = len(train_seconds)
    if len(chunks) < steps * chunks_per_step:
        raise ValueError(f"{len(chunks)} chunks cannot fill {steps} steps of {chunks_per_step}")
    publish = [0.0]  # publish[v]: when version v exists
    worker_free = [0.0] * n_workers
    trainer_free = idle = 0.0
    waited = 0
    intervals = []
    for step in range(steps):
        ready = 0.0
        for c in range(step * chunks_per_step, (step + 1) * chunks_per_step):
            w = min(range(n_workers), key=lambda i: worker_free[i])
            start = max(worker_free[w], publish[chunks[c]["version"]])
            worker_free[w] = start + chunks[c][key]
            intervals.append((f"worker {w}", start, worker_free[w], step))
            ready = max(ready, worker_free[w])
        if ready > trainer_free:
            waited += 1
            idle += ready - trainer_free
        intervals.append(("trainer", max(trainer_free, ready), max(trainer_free, ready) + train_seconds[step], step))
        trainer_free = max(trainer_free, ready) + train_seconds[step]
        publish.append(trainer_free)
    serial = sum(c[key] for c in chunks[: steps * chunks_per_step]) + sum(train_seconds)
    trajectories = steps * chunks_per_step * trajectories_per_chunk
    return Replay(trainer_free, serial, idle, waited, steps, trajectories, intervals, publish)
