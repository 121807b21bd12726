"""The seed page's AsyncRolloutBuffer, answers filled in, and the traps it hides (exercise 4).

Kept only to show, by running it, what agentrl_ref.rollout_buffer.AsyncRolloutBuffer fixes:
its comment says get_batch takes the newest trajectories (popleft takes the oldest), its docstring
promises a max_age it does not have, deque(maxlen) drops without counting, and a capacity below the
batch size makes get_batch wait forever.
"""
from __future__ import annotations

import asyncio
from collections import deque

from agentrl_ref.rollout_buffer import AsyncRolloutBuffer


class SeedRolloutBuffer:
    """The seed page's class, as its answer fills it (do not use: see the module docstring)."""

    def __init__(self, batch_size: int, max_capacity: int):
        self.batch_size = batch_size
        self.buf = deque(maxlen=max_capacity)
        self.cond = asyncio.Condition()

    async def put(self, traj):
        async with self.cond:
            self.buf.append(traj)
            self.cond.notify_all()

    async def get_batch(self):
        async with self.cond:
            await self.cond.wait_for(lambda: len(self.buf) >= self.batch_size)
            return [self.buf.popleft() for _ in range(self.batch_size)]


async def seed_traps(timeout: float = 0.2) -> dict[str, object]:
    """Run the seed class into each trap and the reference class into the same situations."""
    out: dict[str, object] = {}

    fifo = SeedRolloutBuffer(batch_size=4, max_capacity=16)
    for i in range(6):
        await fifo.put({"traj_id": i})
    out["first_batch_ids"] = [t["traj_id"] for t in await fifo.get_batch()]  # put 0..5: the oldest four

    small = SeedRolloutBuffer(batch_size=8, max_capacity=4)
    for i in range(10):
        await small.put({"traj_id": i})
    out["kept_ids"] = [t["traj_id"] for t in small.buf]  # 0..5 are gone, and nothing counted them
    out["counts_drops"] = any("drop" in name for name in vars(small))
    try:
        await asyncio.wait_for(small.get_batch(), timeout)
        out["capacity_below_batch_waits_forever"] = False
    except asyncio.TimeoutError:
        out["capacity_below_batch_waits_forever"] = True
    out["timeout"] = timeout

    reference = AsyncRolloutBuffer(batch_size=8, max_capacity=16)
    for i in range(20):
        await reference.put({"traj_id": i})
    out["reference_dropped_overflow"] = reference.dropped_overflow
    try:
        AsyncRolloutBuffer(batch_size=8, max_capacity=4)
        out["reference_refuses"] = ""
    except ValueError as exc:
        out["reference_refuses"] = str(exc)
    return out
