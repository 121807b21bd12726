"""Async rollout buffer: rollout workers put trajectories, the trainer takes whole batches (exercise 4).

Pure asyncio (a deque and a Condition, as verl's fully-async message_queue), no clocks, no threads:
it runs under any event loop, including a simulated one. Not thread-safe; one event loop.
"""
from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

VERSION_KEY = "policy_version"  # a trajectory dict records the policy version it was sampled with


class AsyncRolloutBuffer:
    """FIFO of trajectories; get_batch waits for batch_size of them and returns the oldest first.

    - Capacity: when full, put() drops the oldest trajectory and counts it in `dropped_overflow`.
    - Staleness (optional): with max_staleness=k, every trajectory must be a dict with an int
      traj["policy_version"]; get_batch(current_version=v) first drops (and counts in
      `dropped_stale`) every trajectory with v - traj["policy_version"] > k. k=0 is on-policy only.
    - A cancelled get_batch takes nothing; several producers and consumers may run concurrently.
    """

    def __init__(self, batch_size: int, max_capacity: int, *, max_staleness: int | None = None):
        if not (isinstance(batch_size, int) and batch_size >= 1):
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if not (isinstance(max_capacity, int) and max_capacity >= batch_size):
            raise ValueError(f"max_capacity ({max_capacity!r}) must be an int >= batch_size ({batch_size}), "
                             "or get_batch could never be served")
        if max_staleness is not None and not (isinstance(max_staleness, int) and max_staleness >= 0):
            raise ValueError(f"max_staleness must be None or an int >= 0, got {max_staleness!r}")
        self.batch_size = batch_size
        self.max_capacity = max_capacity
        self.max_staleness = max_staleness
        self.buf: deque[Any] = deque()  # oldest on the left; capacity enforced by put() so drops are counted
        self.cond = asyncio.Condition()
        self.dropped_overflow = 0
        self.dropped_stale = 0

    @property
    def dropped(self) -> int:
        """All trajectories dropped so far (overflow + stale)."""
        return self.dropped_overflow + self.dropped_stale

    def __len__(self) -> int:
        return len(self.buf)

    async def put(self, traj: Any) -> None:
        """Append one trajectory (dropping the oldest if full) and wake the waiting consumers."""
        if self.max_staleness is not None and not (
            isinstance(traj, dict) and isinstance(traj.get(VERSION_KEY), int)
        ):
            raise ValueError(f"with max_staleness set, a trajectory must be a dict with an int {VERSION_KEY!r}")
        async with self.cond:
            if len(self.buf) >= self.max_capacity:
                self.buf.popleft()
                self.dropped_overflow += 1
            self.buf.append(traj)
            self.cond.notify_all()

    def _drop_stale(self, current_version: int) -> None:
        oldest_ok = current_version - self.max_staleness
        fresh = [t for t in self.buf if t[VERSION_KEY] >= oldest_ok]
        if len(fresh) < len(self.buf):
            self.dropped_stale += len(self.buf) - len(fresh)
            self.buf = deque(fresh)

    async def get_batch(self, current_version: int | None = None) -> list[Any]:
        """Wait until batch_size trajectories (not stale for current_version) are there; return the oldest
        batch_size."""
        if current_version is not None:
            if self.max_staleness is None:
                raise ValueError("current_version given but the buffer has no max_staleness")
            if not isinstance(current_version, int):
                raise ValueError(f"current_version must be an int, got {current_version!r}")

        def ready() -> bool:
            if current_version is not None:
                self._drop_stale(current_version)
            return len(self.buf) >= self.batch_size

        async with self.cond:
            await self.cond.wait_for(ready)
            # no await between the check and the pops: a cancellation cannot split a batch
            return [self.buf.popleft() for _ in range(self.batch_size)]
