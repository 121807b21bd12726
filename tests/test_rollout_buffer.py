"""Exercise 4: AsyncRolloutBuffer — FIFO batches, counted drops, staleness, cancellation, concurrency (E10)."""
from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings, strategies as st

from agentrl_ref.rollout_buffer import AsyncRolloutBuffer


def run(coro):
    return asyncio.run(coro)


async def put_all(buf, trajs):
    for t in trajs:
        await buf.put(t)


def test_seed_scenario_one_producer_one_trainer():
    async def main():
        buf = AsyncRolloutBuffer(batch_size=4, max_capacity=16)

        async def trainer():
            return [[t["traj_id"] for t in await buf.get_batch()] for _ in range(3)]

        async def worker():
            for i in range(12):
                await asyncio.sleep(0)
                await buf.put({"traj_id": i})

        steps, _ = await asyncio.gather(trainer(), worker())
        return steps, len(buf), buf.dropped

    steps, left, dropped = run(main())
    assert steps == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert (left, dropped) == (0, 0)


def test_e10_get_batch_takes_the_oldest():
    async def main():
        buf = AsyncRolloutBuffer(batch_size=3, max_capacity=10)
        await put_all(buf, range(7))
        return await buf.get_batch(), await buf.get_batch(), len(buf)

    assert run(main()) == ([0, 1, 2], [3, 4, 5], 1)


@pytest.mark.parametrize("kwargs", [
    dict(batch_size=4, max_capacity=3), dict(batch_size=0, max_capacity=3), dict(batch_size=2, max_capacity=2.5),
    dict(batch_size=2, max_capacity=4, max_staleness=-1), dict(batch_size=2, max_capacity=4, max_staleness=0.5),
])
def test_bad_construction_raises(kwargs):
    with pytest.raises(ValueError):
        AsyncRolloutBuffer(**kwargs)


def test_capacity_below_batch_size_is_refused_not_a_hang():
    with pytest.raises(ValueError, match="batch_size"):
        AsyncRolloutBuffer(batch_size=8, max_capacity=4)


def test_overflow_drops_the_oldest_and_counts():
    async def main():
        buf = AsyncRolloutBuffer(batch_size=2, max_capacity=4)
        await put_all(buf, range(7))
        return list(buf.buf), buf.dropped_overflow, buf.dropped

    assert run(main()) == ([3, 4, 5, 6], 3, 3)


def test_staleness_drops_and_counts_old_versions():
    async def main():
        buf = AsyncRolloutBuffer(batch_size=2, max_capacity=10, max_staleness=1)
        await put_all(buf, [{"id": i, "policy_version": v} for i, v in enumerate([0, 3, 1, 2, 3, 4])])
        batch = await buf.get_batch(current_version=3)  # keeps versions >= 2: drops ids 0 and 2
        rest = await buf.get_batch(current_version=4)  # keeps versions >= 3
        return [t["id"] for t in batch], [t["id"] for t in rest], buf.dropped_stale, buf.dropped, len(buf)

    assert run(main()) == ([1, 3], [4, 5], 2, 2, 0)  # ids 0 (v0) and 2 (v1) were stale


def test_staleness_zero_is_on_policy_and_waits_for_fresh_data():
    async def main():
        buf = AsyncRolloutBuffer(batch_size=2, max_capacity=10, max_staleness=0)
        await put_all(buf, [{"policy_version": 0}] * 3)
        task = asyncio.create_task(buf.get_batch(current_version=1))
        await asyncio.sleep(0)
        assert not task.done() and buf.dropped_stale == 3
        await put_all(buf, [{"policy_version": 1, "id": 1}, {"policy_version": 1, "id": 2}])
        return [t["id"] for t in await task]

    assert run(main()) == [1, 2]


def test_staleness_misuse_raises():
    async def main():
        plain = AsyncRolloutBuffer(batch_size=1, max_capacity=2)
        with pytest.raises(ValueError):
            await plain.get_batch(current_version=3)
        versioned = AsyncRolloutBuffer(batch_size=1, max_capacity=2, max_staleness=1)
        for bad in ({"id": 1}, {"policy_version": "1"}, [1]):
            with pytest.raises(ValueError):
                await versioned.put(bad)
        with pytest.raises(ValueError):
            await versioned.get_batch(current_version=1.5)

    run(main())


def test_cancelled_get_batch_loses_nothing():
    async def main():
        buf = AsyncRolloutBuffer(batch_size=3, max_capacity=10)
        await put_all(buf, [0, 1])
        waiting = asyncio.create_task(buf.get_batch())
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert list(buf.buf) == [0, 1]
        await buf.put(2)
        return await buf.get_batch()

    assert run(main()) == [0, 1, 2]


def test_cancel_after_wakeup_hands_the_batch_to_another_consumer():
    async def main():
        buf = AsyncRolloutBuffer(batch_size=2, max_capacity=10)
        first = asyncio.create_task(buf.get_batch())
        second = asyncio.create_task(buf.get_batch())
        await asyncio.sleep(0)
        await put_all(buf, [0, 1])  # wakes both waiters ...
        first.cancel()  # ... and the first is cancelled before it runs
        got = await second
        assert first.cancelled()
        return got, len(buf)

    assert run(main()) == ([0, 1], 0)


def test_len_and_works_on_a_fresh_event_loop():
    buf = AsyncRolloutBuffer(batch_size=1, max_capacity=3)  # created outside any loop
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(buf.put("a"))
        assert len(buf) == 1
        assert loop.run_until_complete(buf.get_batch()) == ["a"]
    finally:
        loop.close()


async def _interleaving(schedule, n_producers, n_consumers, batch_size, capacity, per_producer, max_staleness=None):
    """Producers and consumers yield to the loop as `schedule` says; return (consumed, left, buffer)."""
    buf = AsyncRolloutBuffer(batch_size, capacity, max_staleness=max_staleness)
    steps = iter(schedule * 1000)
    consumed: list = []

    async def pause():
        for _ in range(next(steps, 0)):
            await asyncio.sleep(0)

    async def producer(p):
        for i in range(per_producer):
            await pause()
            await buf.put({"id": (p, i), "policy_version": i // 3})

    async def consumer(c):
        version = 0
        while True:
            await pause()
            version += 1
            batch = await buf.get_batch(current_version=version if max_staleness is not None else None)
            assert len(batch) == batch_size
            consumed.extend(t["id"] for t in batch)

    consumers = [asyncio.create_task(consumer(c)) for c in range(n_consumers)]
    await asyncio.gather(*(producer(p) for p in range(n_producers)))
    # let consumers drain every full batch (bounded, so a bug fails instead of hanging), then stop them
    for _ in range(100_000):
        if len(buf) < batch_size and all(not t.done() for t in consumers):
            break
        await asyncio.sleep(0)
    for _ in range(20):  # and give a consumer woken by the last put its turn
        await asyncio.sleep(0)
    for task in consumers:
        task.cancel()
    await asyncio.gather(*consumers, return_exceptions=True)
    return consumed, [t["id"] for t in buf.buf], buf


SCENARIO = dict(
    schedule=st.lists(st.integers(0, 3), min_size=1, max_size=30),
    n_producers=st.integers(1, 4), n_consumers=st.integers(1, 4),
    batch_size=st.integers(1, 5), per_producer=st.integers(0, 25),
)


@settings(max_examples=60, deadline=None)
@given(**SCENARIO)
def test_no_loss_no_duplicates_when_capacity_suffices(schedule, n_producers, n_consumers, batch_size, per_producer):
    total = n_producers * per_producer
    consumed, left, buf = run(_interleaving(schedule, n_producers, n_consumers, batch_size, max(total, batch_size),
                                            per_producer))
    produced = {(p, i) for p in range(n_producers) for i in range(per_producer)}
    assert buf.dropped == 0
    assert len(consumed) + len(left) == total
    assert set(consumed) | set(left) == produced
    assert len(left) < batch_size  # consumers took every full batch


@settings(max_examples=60, deadline=None)
@given(**SCENARIO, capacity_extra=st.integers(0, 3), max_staleness=st.none() | st.integers(0, 3))
def test_drops_are_accounted_exactly(schedule, n_producers, n_consumers, batch_size, per_producer, capacity_extra,
                                     max_staleness):
    consumed, left, buf = run(_interleaving(schedule, n_producers, n_consumers, batch_size,
                                            batch_size + capacity_extra, per_producer, max_staleness))
    everything = consumed + left
    assert len(everything) == len(set(everything))  # no duplicates
    assert len(everything) + buf.dropped == n_producers * per_producer  # nothing lost unaccounted
    assert buf.dropped == buf.dropped_overflow + buf.dropped_stale
    if max_staleness is None:
        assert buf.dropped_stale == 0
