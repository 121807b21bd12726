"""Coroutine visible tests (exercise 4): `await check(...)` / `await run_test(...)` in a notebook, plain calls
elsewhere.

Also runs exercise 4's visible tests against realistic wrong buffers: each fails where it should,
in bounded time, with no task left pending.
"""
from __future__ import annotations

import asyncio
import inspect
import time
from collections import deque

import pytest

import agentrl_ref.checks as checks
from agentrl_ref.checks import CheckFailure, _REGISTRY, _load_all, check, expect, run_test, visible_test
from agentrl_ref.rollout_buffer import AsyncRolloutBuffer

EX = "ex4_async_rollout"
_load_all()


# a throwaway exercise for the mechanics, registered only while this module's tests run
# (collection imports every test module first: tests/test_checks.py must never see it)
DEMO = "demo_async_checks"


async def demo_async_ok(getter):
    await asyncio.sleep(0)
    expect(await getter() == 1, "取到的不是 1", hint="返回 1")


def demo_sync_ok(value):
    expect(value == 1, f"value 是 {value!r}，期望 1")


@pytest.fixture(autouse=True, scope="module")
def demo_tests():
    visible_test(DEMO, "demo_part", "异步：能取到一个值")(demo_async_ok)
    visible_test(DEMO, "demo_part", "同步：值是 1")(demo_sync_ok)
    yield
    for test_id in [t for t in _REGISTRY if t.startswith(DEMO + ".")]:
        del _REGISTRY[test_id]


async def _one():
    return 1


async def _two():
    return 2


def test_outside_a_loop_async_tests_just_run(capsys):
    assert run_test(f"{DEMO}.demo_async_ok", _one) is None
    with pytest.raises(CheckFailure) as failure:
        run_test(f"{DEMO}.demo_async_ok", _two)
    out = capsys.readouterr().out
    assert "✓ 异步：能取到一个值" in out and "✗" not in out  # a failing test cell shows its report once: the error
    report = str(failure.value)
    assert report.startswith("✗ 异步：能取到一个值") and "提示：返回 1" in report


def test_inside_a_running_loop_the_caller_awaits(capsys):
    async def notebook_cell():
        pending = run_test(f"{DEMO}.demo_async_ok", _one)
        assert inspect.iscoroutine(pending)
        await pending
        report = check("demo_part", {"getter": _two, "value": 1})
        assert inspect.iscoroutine(report)
        await report

    asyncio.run(notebook_cell())
    out = capsys.readouterr().out
    assert "✓ 异步：能取到一个值" in out
    assert "✗ 异步：能取到一个值" in out and "✓ 同步：值是 1" in out and "1/2 项通过" in out


def test_check_with_missing_names_is_still_awaitable(capsys):
    async def notebook_cell():
        await check("demo_part", {})

    asyncio.run(notebook_cell())
    assert "先运行上面的填空格" in capsys.readouterr().out


def _count(part: str) -> int:
    """How many visible tests check(part) runs (the summary line counts them all)."""
    return sum(t.part == part for t in _REGISTRY.values())


def test_check_reads_the_callers_globals_for_async_parts(capsys):
    assert check("AsyncRolloutBuffer", {"AsyncRolloutBuffer": AsyncRolloutBuffer}) is None  # ran it, no loop
    n = _count("AsyncRolloutBuffer")
    assert n >= 6 and f"{n}/{n} 项通过" in capsys.readouterr().out


def test_sync_path_unchanged_inside_a_loop(capsys):
    async def notebook_cell():
        assert run_test("ex1_format_reward.multi_line", checks_format_reward()) is None
        assert check("format_reward", {"format_reward": checks_format_reward()}) is None

    asyncio.run(notebook_cell())
    n = _count("format_reward")
    assert n >= 4 and f"{n}/{n} 项通过" in capsys.readouterr().out


def checks_format_reward():
    from agentrl_ref import format_reward
    return format_reward


def test_unfilled_blank_in_an_async_test_names_the_line(tmp_path, capsys):
    cell = tmp_path / "cell.py"
    cell.write_text("import asyncio\nfrom collections import deque\n\nclass AsyncRolloutBuffer:\n"
                    "    def __init__(self, batch_size, max_capacity):\n        self.batch_size = batch_size\n"
                    "        self.buf = _____\n        self.cond = asyncio.Condition()\n")
    namespace: dict = {}
    exec(compile(cell.read_text(), str(cell), "exec"), namespace)
    check("AsyncRolloutBuffer", namespace)
    out = capsys.readouterr().out
    assert "第 7 行" in out and "还有空没填" in out and "self.buf = _____" in out and "Traceback" not in out


# exercise 4's visible tests against wrong answers ---------------------------------------------------

TEMPLATE = '''
import asyncio
from collections import deque


class AsyncRolloutBuffer:
    def __init__(self, batch_size, max_capacity):
        self.batch_size = batch_size
        self.buf = {0}
        self.cond = asyncio.Condition()

    async def put(self, traj):
        async with self.cond:
            self.buf.append(traj)
            {1}

    async def get_batch(self):
        async with self.cond:
            await self.cond.wait_for(lambda: {2})
            return [self.buf.popleft() for _ in range(self.batch_size)]
'''
REFERENCE = ["deque(maxlen=max_capacity)", "self.cond.notify_all()", "len(self.buf) >= self.batch_size"]


def student_class(**changes):
    fills = list(REFERENCE)
    for index, text in changes.items():
        fills[int(index[1:])] = text
    namespace: dict = {"deque": deque}
    exec(TEMPLATE.format(*fills), namespace)
    return namespace["AsyncRolloutBuffer"]


def visible_results(cls) -> dict[str, bool]:
    async def run_all():
        results = {}
        for test in [t for t in _REGISTRY.values() if t.test_id.startswith(EX + ".")]:
            ok, *_ = await checks._run_one_async(test, [cls])
            results[test.test_id.split(".")[1]] = ok
        leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert not leftover, f"a visible test left tasks behind: {leftover}"
        return results

    return asyncio.run(run_all())


def test_student_style_reference_passes_all_visible_tests(capsys):
    assert all(visible_results(student_class()).values())


@pytest.mark.parametrize("changes, must_fail", [
    ({"b0": "deque()"}, "drops_oldest_when_full"),
    ({"b0": "deque(maxlen=batch_size)"}, "drops_oldest_when_full"),
    ({"b1": "self.cond.notify()"}, "several_trainers"),
    ({"b1": "self.cond.notify_all"}, "seed_harness"),
    ({"b2": "len(self.buf) > self.batch_size"}, "last_batch_when_producers_finish"),
    ({"b2": "len(self.buf) == self.batch_size"}, "fifo_oldest_first"),
    ({"b2": "len(self.buf) > 0"}, "no_partial_batch"),
    ({"b2": "True"}, "no_partial_batch"),
])
def test_wrong_answers_fail_the_right_visible_test_quickly(changes, must_fail, capsys):
    start = time.perf_counter()
    results = visible_results(student_class(**changes))
    assert results[must_fail] is False, results
    assert time.perf_counter() - start < 20  # every wait is bounded


def test_a_hang_is_reported_as_stuck_not_as_a_traceback(capsys):
    cls = student_class(b1="self.cond.notify_all")

    async def cell():
        await check("AsyncRolloutBuffer", {"AsyncRolloutBuffer": cls})

    asyncio.run(cell())
    out = capsys.readouterr().out
    assert "卡住了" in out and "Traceback" not in out and "提示" in out


# what the visible tests record for grading ----------------------------------------------------------

def observations(cls) -> dict:
    """test name -> what the visible test returned (run_test records it as `visible:<test id>`)."""
    async def run_all():
        return {t.test_id.split(".")[1]: await t.func(cls)
                for t in _REGISTRY.values() if t.test_id.startswith(EX + ".")}

    return asyncio.run(run_all())


def _unsupported(encoded) -> bool:
    if isinstance(encoded, dict):
        return "unsupported" in encoded or any(_unsupported(v) for v in encoded.values())
    return isinstance(encoded, list) and any(_unsupported(v) for v in encoded)


def test_visible_tests_return_the_raw_observations(capsys):
    from agentrl_ref.checks.probes import encode

    seen = observations(student_class())
    assert all(value is not None and not _unsupported(encode(value)) for value in seen.values()), seen
    assert seen["seed_harness"] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert seen["fifo_oldest_first"] == {"batches": [[0, 1, 2], [3, 4, 5]], "left": [6]}
    assert seen["drops_oldest_when_full"] == {"kept": [3, 4, 5, 6], "batch": [3, 4]}
    assert seen["no_partial_batch"] == {"with_two": "waiting", "batch": ["a", "b", "c"]}
    assert seen["last_batch_when_producers_finish"]["trainer"] == "waiting"
    assert seen["several_trainers"] == {"first": "cancelled", "second": ["x"], "left": []}
    assert observations(AsyncRolloutBuffer) == seen  # the package's reference observes the same


def test_a_silenced_expect_still_records_what_the_wrong_buffer_did(monkeypatch, capsys):
    """A kernel that patches expect() away makes the test 'pass', but its record shows the wrong values."""
    import agentrl_ref.checks.ex4_async_rollout as ex4

    reference = observations(student_class())
    monkeypatch.setattr(ex4, "expect", lambda *args, **kwargs: None)
    wrong = observations(student_class(b0="deque()"))
    assert wrong["drops_oldest_when_full"] != reference["drops_oldest_when_full"]
