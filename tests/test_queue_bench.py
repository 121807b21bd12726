"""Exercise 4's measurements behind ERRATA E10 and E11: the seed class's traps, and Condition + deque vs
asyncio.Queue."""
from __future__ import annotations

import asyncio


from agentrl_ref.teaching.ex4_async_rollout.queue_bench import backpressure_demo, drain_cost
from agentrl_ref.teaching.ex4_async_rollout.seed_rollout_buffer import SeedRolloutBuffer, seed_traps


def test_e11_neither_way_of_draining_ready_items_switches_coroutines():
    cost = asyncio.run(drain_cost(n=4096, batch_size=64, repeats=1))
    assert cost["n"] == 4096
    assert cost["buffer_switches"] == 0 and cost["queue_switches"] == 0
    assert cost["buffer_s_per_item"] > 0 and cost["queue_s_per_item"] > 0


def test_e11_switch_counter_does_count_real_switches():
    from agentrl_ref.teaching.ex4_async_rollout.queue_bench import _switches

    async def yields_three_times():
        for _ in range(3):
            await asyncio.sleep(0)

    async def main():
        return await _switches(yields_three_times())

    assert asyncio.run(main()) == 3


def test_e11_queue_waits_deque_drops_buffer_counts():
    bp = asyncio.run(backpressure_demo(capacity=4, n=6))
    assert bp["queue_accepted"] == 4 and bp["queue_producer_waiting"] is True
    assert bp["deque_kept"] == bp["buffer_kept"] == [2, 3, 4, 5]
    assert bp["buffer_dropped_overflow"] == 2


def test_e10_seed_class_traps():
    traps = asyncio.run(seed_traps(timeout=0.05))
    assert traps["first_batch_ids"] == [0, 1, 2, 3]  # the oldest, not "the newest" as its comment says
    assert traps["kept_ids"] == [6, 7, 8, 9] and traps["counts_drops"] is False
    assert traps["capacity_below_batch_waits_forever"] is True
    assert traps["reference_dropped_overflow"] == 4
    assert "batch_size" in traps["reference_refuses"]


def test_seed_class_is_the_seed_answer():
    async def main():
        buf = SeedRolloutBuffer(batch_size=2, max_capacity=3)
        for i in range(4):
            await buf.put(i)
        return await buf.get_batch(), list(buf.buf)

    assert asyncio.run(main()) == ([1, 2], [3])
