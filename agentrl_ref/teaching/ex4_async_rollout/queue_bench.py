"""Condition + deque vs asyncio.Queue, measured (exercise 4: the seed page's "saves N switches").

The seed page says a batch from Condition + deque saves "N coroutine switches" over N calls of
`await queue.get()`. An await only switches coroutines when the awaited thing is not ready:
`queue.get()` on a non-empty queue returns without yielding to the event loop. drain_cost() times
both ways of draining the same prefilled items and counts how often each one let the loop run
another task; backpressure_demo() shows the real semantic difference (drop vs wait).

Both are coroutines: `await drain_cost()` in a notebook cell (the kernel's loop is already running),
`asyncio.run(drain_cost())` in a script.
"""
from __future__ import annotations

import asyncio
import time
from collections import deque

from agentrl_ref.rollout_buffer import AsyncRolloutBuffer


async def _filled_buffer(n: int, batch_size: int) -> AsyncRolloutBuffer:
    buf = AsyncRolloutBuffer(batch_size, max_capacity=n)
    for i in range(n):
        await buf.put(i)
    return buf


def _filled_queue(n: int) -> asyncio.Queue:
    queue: asyncio.Queue = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(i)
    return queue


async def _drain_buffer(buf: AsyncRolloutBuffer, batches: int) -> None:
    for _ in range(batches):
        await buf.get_batch()


async def _drain_queue(queue: asyncio.Queue, batches: int, batch_size: int) -> None:
    for _ in range(batches):
        [await queue.get() for _ in range(batch_size)]


async def _switches(drain) -> int:
    """How many times the event loop ran another task while `drain` ran."""
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0)
            ticks += 1

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)  # the ticker is now waiting for its next turn
    before = ticks
    await drain
    switched = ticks - before
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return switched


async def drain_cost(n: int = 20_000, batch_size: int = 64, repeats: int = 3) -> dict[str, float]:
    """Seconds per item to drain n prefilled items in batches of batch_size, best of `repeats`,
    and the event-loop switches during one drain, for AsyncRolloutBuffer.get_batch and asyncio.Queue.get."""
    batches = n // batch_size
    n = batches * batch_size
    best = {"buffer": float("inf"), "queue": float("inf")}
    for _ in range(repeats):
        buf = await _filled_buffer(n, batch_size)
        start = time.perf_counter()
        await _drain_buffer(buf, batches)
        best["buffer"] = min(best["buffer"], (time.perf_counter() - start) / n)
        queue = _filled_queue(n)
        start = time.perf_counter()
        await _drain_queue(queue, batches, batch_size)
        best["queue"] = min(best["queue"], (time.perf_counter() - start) / n)
    switches_buffer = await _switches(_drain_buffer(await _filled_buffer(n, batch_size), batches))
    switches_queue = await _switches(_drain_queue(_filled_queue(n), batches, batch_size))
    return {"n": n, "batch_size": batch_size, "buffer_s_per_item": best["buffer"],
            "queue_s_per_item": best["queue"], "buffer_switches": switches_buffer, "queue_switches": switches_queue}


async def backpressure_demo(capacity: int = 4, n: int = 6) -> dict[str, object]:
    """Put n items into containers of size `capacity`: Queue(maxsize) makes the producer wait,
    deque(maxlen) silently forgets the oldest, AsyncRolloutBuffer forgets them and counts."""
    queue: asyncio.Queue = asyncio.Queue(maxsize=capacity)
    accepted = 0

    async def producer():
        nonlocal accepted
        for i in range(n):
            await queue.put(i)
            accepted += 1

    task = asyncio.create_task(producer())
    for _ in range(10):
        await asyncio.sleep(0)
    queue_accepted, producer_waiting = accepted, not task.done()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    kept = deque(maxlen=capacity)
    kept.extend(range(n))
    buf = AsyncRolloutBuffer(1, capacity)
    for i in range(n):
        await buf.put(i)
    return {"capacity": capacity, "n": n, "queue_accepted": queue_accepted, "queue_producer_waiting": producer_waiting,
            "deque_kept": list(kept), "buffer_kept": list(buf.buf), "buffer_dropped_overflow": buf.dropped_overflow}
