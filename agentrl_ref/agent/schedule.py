"""Throughput of the asynchronous pipeline, replayed on a simulated clock.

The training run itself is single-threaded (asyncio): generation and training never overlap in
wall time here. replay() asks what the same run would take if each rollout worker and the trainer
had a device of its own: every chunk keeps the policy version it really used and takes the CPU
seconds it really took, it starts as soon as its worker is free and that version exists, and a
trainer step starts when the previous step is done and its batch is complete.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Replay:
    """Simulated seconds: total, trainer idle; steps whose batch was not ready when the trainer was."""

    total: float
    serial: float          # the same work one after the other (what this single thread did)
    trainer_idle: float
    steps_waited: int
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
           trajectories_per_chunk: int) -> Replay:
    """chunks[c] = {"version": int, "seconds": float} in chunk order; chunk c belongs to step c // chunks_per_step."""
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
            worker_free[w] = start + chunks[c]["seconds"]
            intervals.append((f"worker {w}", start, worker_free[w], step))
            ready = max(ready, worker_free[w])
        if ready > trainer_free:
            waited += step > 0
            idle += ready - trainer_free
        intervals.append(("trainer", max(trainer_free, ready), max(trainer_free, ready) + train_seconds[step], step))
        trainer_free = max(trainer_free, ready) + train_seconds[step]
        publish.append(trainer_free)
    serial = sum(c["seconds"] for c in chunks[: steps * chunks_per_step]) + sum(train_seconds)
    trajectories = steps * chunks_per_step * trajectories_per_chunk
    return Replay(trainer_free, serial, idle, waited, steps, trajectories, intervals, publish)
