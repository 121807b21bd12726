"""Visible tests of exercise 4 (async rollout buffer): the seed's harness, FIFO, drops, whole batches, shutdown, several
trainers.

Every test is a coroutine (the notebook awaits it in the kernel's running loop). Nothing here may
hang on a wrong answer: each wait is bounded by a budget of event-loop turns (probes.finish_within, not
seconds: a busy machine cannot make a right answer look stuck), and every task a test starts is
cancelled and awaited before the test returns, so no "Task was destroyed" warning reaches stderr.
The "time" in these scenarios is asyncio.sleep(0): a turn of the event loop, not a real wait.

Each test returns what it observed (the batches taken, the buffer's contents, the state of a waiting
trainer), which run_test records for grading: the grader compares those raw values, not the verdict.
"""
from __future__ import annotations

import asyncio
import random

from agentrl_ref.checks import expect, fail, visible_test
from agentrl_ref.checks.probes import cancel_all, finish_within, spin, task_state

EX = "ex4_async_rollout"
PART = "AsyncRolloutBuffer"

HANG_HINT = ("put() 之后要把等待的 trainer 叫醒（记得调用方法，不只是写出它的名字）；"
             "wait_for 的条件是“至少攒够一个 batch”。")
DEQUE_INT_HINT = ("TODO 1：deque 的第一个参数是初始元素（一个可迭代对象），deque(max_capacity) 会去遍历一个整数："
                  "容量要写成关键字参数 deque(maxlen=max_capacity)。")
MAXLEN_HINT = "TODO 1：队列最多 max_capacity 条：deque(maxlen=max_capacity) 满了以后自动丢掉最左边（最老）的一条。"
CAPACITY_HINT = ("TODO 1：容量是 max_capacity，不是 batch_size：deque(maxlen=max_capacity)。只装得下一个 batch 的队列，"
                 "放得比取得快时就会丢轨迹。")
STRICT_HINT = ("TODO 3：条件要用 >=，不是 >：队列里正好 batch_size 条时就该交出去，"
               "否则最后一个满 batch 永远等不到第 batch_size + 1 条。")
EQUAL_HINT = ("TODO 3：条件是“至少 batch_size 条”（>=），不是“恰好 batch_size 条”（==）："
              "多出来的轨迹会让 trainer 一直等下去。")
TOO_WEAK_HINT = ("TODO 3：wait_for 的条件要保证醒来时已经攒够一个 batch：len(self.buf) >= self.batch_size。"
                 "条件太宽（有数据就行、或者不等），popleft 会取到空队列，或者交出残缺的 batch。")
CALL_HINT = "TODO 2：put() 之后要叫醒等待的协程：self.cond.notify_all()，带括号才是调用，只写出方法的名字什么也不做。"
NOTIFY_ALL_HINT = ("TODO 2：要用 notify_all()，不是 notify()：notify() 只叫醒一个等待者，它恰好被取消时这次唤醒就丢了。"
                   "有几个 trainer 在等时要叫醒全部，让它们各自检查条件。")
EVERY_PUT_HINT = ("TODO 2：每次 put 都要 notify_all()：Condition 上可能有人在等别的条件。别在 put 里自己判断"
                  "“够不够一个 batch”再决定叫不叫：判断条件是等待者自己的事（wait_for）。")
EXCEPTION_HINTS = {
    ("TODO 1", "TypeError"): DEQUE_INT_HINT,
    ("TODO 3", "IndexError"): TOO_WEAK_HINT,
}
DIAGNOSIS_TURNS = 2_000   # a right buffer finishes every scenario below in a few dozen turns of the loop


async def _settles(awaitable) -> asyncio.Future | None:
    return await finish_within(awaitable, DIAGNOSIS_TURNS)


async def diagnose(AsyncRolloutBuffer) -> str | None:
    """The mistake in the class, one TODO at a time in the order they depend on each other: the deque (TODO 1),
    then the wait condition on a queue that is already full enough (TODO 3, no wake-up needed), then the
    wake-up (TODO 2: one trainer, two trainers of which one is cancelled, a coroutine waiting for another
    condition). None: none of the classic mistakes shows."""
    try:
        buf = AsyncRolloutBuffer(batch_size=2, max_capacity=4)
    except TypeError:
        return DEQUE_INT_HINT
    except Exception:
        return None
    try:
        if await _settles(_put_all(buf, range(7))) is None:
            return None
        kept = list(buf.buf)
        if kept != [3, 4, 5, 6]:
            return CAPACITY_HINT if kept == [5, 6] else MAXLEN_HINT
        for have, stuck_hint in ((3, STRICT_HINT), (4, EQUAL_HINT)):
            buf = AsyncRolloutBuffer(batch_size=3, max_capacity=10)
            await _put_all(buf, range(have))
            if await _settles(buf.get_batch()) is None:
                return stuck_hint
        buf = AsyncRolloutBuffer(batch_size=3, max_capacity=10)
        await _put_all(buf, ["a", "b"])
        if await finish_within(buf.get_batch(), 50) is not None:
            return TOO_WEAK_HINT
        buf = AsyncRolloutBuffer(batch_size=2, max_capacity=10)
        async with _Tasks() as tasks:
            trainer = tasks.start(buf.get_batch())
            await spin()
            await _put_all(buf, ["x", "y"])
            if await _settles(trainer) is None:
                return CALL_HINT
        buf = AsyncRolloutBuffer(batch_size=1, max_capacity=10)
        async with _Tasks() as tasks:
            first, second = tasks.start(buf.get_batch()), tasks.start(buf.get_batch())
            await spin()
            await buf.put("x")
            first.cancel()
            if await _settles(second) is None:
                return NOTIFY_ALL_HINT
        buf = AsyncRolloutBuffer(batch_size=3, max_capacity=10)

        async def observer():
            async with buf.cond:
                await buf.cond.wait_for(lambda: len(buf.buf) > 0)

        async with _Tasks() as tasks:
            watching = tasks.start(observer())
            await spin()
            await buf.put("first")
            if await _settles(watching) is None:
                return EVERY_PUT_HINT
    except Exception:  # the failing test reports what the student's code raised
        return None
    return None


class _Tasks:
    """`async with _Tasks() as tasks:` start tasks with tasks.start(coro); leftovers are cancelled and awaited."""

    def __init__(self):
        self.started: list[asyncio.Task] = []

    def start(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self.started.append(task)
        return task

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info):
        await cancel_all(*self.started)
        return False


async def _within(awaitable, what: str, hint: str = HANG_HINT):
    """Await within a budget of event-loop turns (probes.finish_within); a stuck wait becomes a failed check
    that says what never happened."""
    task = await finish_within(awaitable)
    if task is None:
        fail("{what}：等了很久还没有结果，程序卡住了", hint=hint, what=what)
    return task.result()


async def _put_all(buf, items) -> None:
    for item in items:
        await buf.put(item)


def _crash(task: asyncio.Task) -> str:
    """What a finished task raised, as its class name ('' if it returned normally)."""
    if task.cancelled() or task.exception() is None:
        return ""
    return type(task.exception()).__name__


def _expect_still_waiting(trainer: asyncio.Task, what: str, hint: str) -> None:
    """Fail if the trainer has already returned (or raised) although `what` is not yet a batch."""
    if trainer.done():
        crash = _crash(trainer)
        got = f"抛出 {crash}" if crash else f"拿到 {trainer.result()!r}"
        fail("{what}，trainer 却已经返回（{got}）", hint=hint, what=what, got=got)


@visible_test(EX, PART, "原页面的测试脚手架：12 条轨迹，3 步训练，每步 4 条")
async def seed_harness(AsyncRolloutBuffer):
    mistake = await diagnose(AsyncRolloutBuffer)
    buf = AsyncRolloutBuffer(batch_size=4, max_capacity=16)
    rng = random.Random(4)

    async def rollout_worker(n):
        for i in range(n):
            await spin(rng.randint(0, 3))  # "generation time": a few turns of the loop
            await buf.put({"traj_id": i, "reward": rng.random()})

    async def trainer_loop(n_steps):
        steps = []
        for step in range(n_steps):
            batch = await buf.get_batch()
            ids = [t["traj_id"] for t in batch]
            print(f"  [trainer] step {step}: trained on {ids}")
            steps.append(ids)
        return steps

    steps, _ = await _within(asyncio.gather(trainer_loop(3), rollout_worker(12)),
                             "一个 worker 放 12 条、trainer 每步取 4 条：trainer 没等到 3 个 batch",
                             mistake or HANG_HINT)
    want = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    expect(steps == want, "一个 worker 放 12 条、trainer 每步取 4 条：trainer 拿到 {steps}，期望 {want}",
           hint=mistake or "每个 batch 按放入顺序取最早的 batch_size 条。", steps=steps, want=want)
    return steps


@visible_test(EX, PART, "先进先出：队列里有 7 条时连取两个 batch（batch_size=3）")
async def fifo_oldest_first(AsyncRolloutBuffer):
    mistake = await diagnose(AsyncRolloutBuffer)
    buf = AsyncRolloutBuffer(batch_size=3, max_capacity=10)
    await _put_all(buf, range(7))
    first = await _within(buf.get_batch(), "放入 0..6、batch_size=3：队列里已经有 7 条，取第一个 batch 却没有返回",
                          hint=mistake or EQUAL_HINT)
    second = await _within(buf.get_batch(), "放入 0..6、batch_size=3：队列里还剩 4 条，取第二个 batch 却没有返回",
                           hint=mistake or EQUAL_HINT)
    expect([first, second] == [[0, 1, 2], [3, 4, 5]],
           "放入 0..6、batch_size=3：两个 batch 是 {first} 和 {second}，期望 [0, 1, 2] 和 [3, 4, 5]",
           hint=mistake or "popleft() 从左边取：最早放进去的先出来。", first=first, second=second)
    left = list(buf.buf)
    expect(left == [6], "放入 0..6、取完两个 batch 后队列里是 {left}，期望 [6]", hint=mistake or MAXLEN_HINT, left=left)
    return {"batches": [first, second], "left": left}


@visible_test(EX, PART, "满了丢最老的：容量 4，依次放入 0..6")
async def drops_oldest_when_full(AsyncRolloutBuffer):
    mistake = await diagnose(AsyncRolloutBuffer)
    buf = AsyncRolloutBuffer(batch_size=2, max_capacity=4)
    await _put_all(buf, range(7))
    kept = list(buf.buf)
    expect(kept == [3, 4, 5, 6], "容量 4：放入 0..6 之后队列里是 {kept}，期望 [3, 4, 5, 6]",
           hint=mistake or MAXLEN_HINT, kept=kept)
    batch = await _within(buf.get_batch(), "容量 4、batch_size=2：队列里有 4 条，却取不出来", mistake or HANG_HINT)
    expect(batch == [3, 4], "容量 4、batch_size=2：取出的 batch 是 {batch}，期望 [3, 4]",
           hint=mistake or "popleft() 从左边取：最早放进去的先出来。", batch=batch)
    return {"kept": kept, "batch": batch}


@visible_test(EX, PART, "不给残缺的 batch：只有 2 条时 trainer 继续等（batch_size=3）")
async def no_partial_batch(AsyncRolloutBuffer):
    mistake = await diagnose(AsyncRolloutBuffer)
    buf = AsyncRolloutBuffer(batch_size=3, max_capacity=10)
    async with _Tasks() as tasks:
        trainer = tasks.start(buf.get_batch())
        await spin()
        await _put_all(buf, ["a", "b"])
        await spin()
        with_two = task_state(trainer)
        _expect_still_waiting(trainer, "batch_size=3，队列里只有 'a'、'b' 2 条", hint=mistake or TOO_WEAK_HINT)
        await buf.put("c")
        batch = await _within(trainer, "batch_size=3：放入第 3 条之后 trainer 仍然没有拿到 batch", mistake or HANG_HINT)
    expect(batch == ["a", "b", "c"], "batch_size=3：trainer 拿到 {batch!r}，期望 ['a', 'b', 'c']",
           hint=mistake or TOO_WEAK_HINT, batch=batch)
    return {"with_two": with_two, "batch": batch}


@visible_test(EX, PART, "生产者结束时：最后一个满 batch 也要交出去（2 个生产者各 5 条，batch_size=5）")
async def last_batch_when_producers_finish(AsyncRolloutBuffer):
    mistake = await diagnose(AsyncRolloutBuffer)
    buf = AsyncRolloutBuffer(batch_size=5, max_capacity=50)
    batches: list[list] = []

    async def producer(p):
        for i in range(5):
            await spin(p + 1)
            await buf.put((p, i))

    async def trainer():
        while True:
            batches.append(await buf.get_batch())

    async with _Tasks() as tasks:
        loop = tasks.start(trainer())
        await _within(asyncio.gather(producer(0), producer(1)), "2 个生产者各放 5 条：生产者没能放完轨迹",
                      mistake or HANG_HINT)

        async def two_batches():
            while len(batches) < 2 and not loop.done():
                await asyncio.sleep(0)

        await _within(two_batches(), "10 条轨迹、batch_size=5：生产者都结束了，trainer 却没拿到第 2 个 batch",
                      hint=mistake or STRICT_HINT)
        crash = _crash(loop) if loop.done() else ""
        expect(not crash, "10 条轨迹、batch_size=5：trainer 抛出了 {crash}", hint=mistake or TOO_WEAK_HINT, crash=crash)
        trainer_after = task_state(loop)
    got = sorted(item for batch in batches for item in batch)
    want = sorted((p, i) for p in range(2) for i in range(5))
    sizes = [len(b) for b in batches]
    expect(sizes == [5, 5], "10 条轨迹、batch_size=5：trainer 拿到的 batch 大小是 {sizes}，期望 [5, 5]",
           hint=mistake or TOO_WEAK_HINT, sizes=sizes)
    expect(got == want and len(buf.buf) == 0, "10 条轨迹、batch_size=5：有轨迹丢了、被训练了两次，或者还留在队列里",
           hint=mistake or MAXLEN_HINT)
    return {"batches": batches, "left": list(buf.buf), "trainer": trainer_after}


@visible_test(EX, PART, "两个 trainer：被叫醒的那个恰好被取消，另一个仍要拿到数据")
async def several_trainers(AsyncRolloutBuffer):
    mistake = await diagnose(AsyncRolloutBuffer)
    buf = AsyncRolloutBuffer(batch_size=1, max_capacity=10)
    async with _Tasks() as tasks:
        first = tasks.start(buf.get_batch())
        second = tasks.start(buf.get_batch())
        await spin()
        await buf.put("x")  # wakes the waiting trainer(s) ...
        first.cancel()  # ... and the first one is stopped before it runs (shutdown, a timeout, ...)
        got = await _within(second, "两个 trainer 在等、batch_size=1：放入 'x' 后第一个被取消，第二个却一直没被叫醒",
                            hint=mistake or NOTIFY_ALL_HINT)
        first_state = task_state(first)
    expect(got == ["x"], "两个 trainer 在等、batch_size=1：第二个 trainer 拿到 {got!r}，期望 ['x']",
           hint=mistake or NOTIFY_ALL_HINT, got=got)
    return {"first": first_state, "second": got, "left": list(buf.buf)}


WAKE_HINT = ("TODO 3：被叫醒不等于数据够了：wait_for 的条件是“至少攒够一个 batch”，每次醒来都重新检查，"
             "不成立就接着等。")


@visible_test(EX, PART, "被多余地叫醒时接着等：数据不够，或者被另一个 trainer 抢先拿走")
async def extra_wakeups(AsyncRolloutBuffer):
    mistake = await diagnose(AsyncRolloutBuffer)
    buf = AsyncRolloutBuffer(batch_size=2, max_capacity=10)
    async with _Tasks() as tasks:
        trainer = tasks.start(buf.get_batch())
        await spin()
        await buf.put("a")
        for _ in range(2):  # someone notifies although one item is not a batch
            async with buf.cond:
                buf.cond.notify_all()
            await spin()
        woken_early = task_state(trainer)
        _expect_still_waiting(trainer, "batch_size=2、只有 'a' 1 条时被叫醒了两次", hint=mistake or WAKE_HINT)
        await buf.put("b")
        first = await _within(trainer, "batch_size=2：放入第 2 条之后 trainer 仍然没有拿到 batch", mistake or HANG_HINT)
        # two trainers wait, one batch arrives: one takes it, the other must go back to waiting
        one, two = tasks.start(buf.get_batch()), tasks.start(buf.get_batch())
        await spin()
        await _put_all(buf, ["c", "d"])
        await spin()
        states = [task_state(one), task_state(two)]
        crash = next((_crash(t) for t in (one, two) if t.done() and _crash(t)), "")
        expect(not crash, "两个 trainer 等一个 batch（batch_size=2，放入 'c'、'd'）：有一个抛出了 {crash}",
               hint=mistake or WAKE_HINT, crash=crash)
        expect(sorted(states, key=repr) == sorted([["c", "d"], "waiting"], key=repr),
               "两个 trainer 等一个 batch，放入 'c'、'd' 后它们是 {states}，期望一个拿到 ['c', 'd']、另一个接着等",
               hint=mistake or WAKE_HINT, states=states)
    expect(first == ["a", "b"], "batch_size=2：trainer 拿到 {first!r}，期望 ['a', 'b']", hint=mistake or WAKE_HINT,
           first=first)
    return {"woken_early": woken_early, "first": first, "two_trainers": sorted(states, key=repr)}


@visible_test(EX, PART, "同一个 Condition 上等别的条件的协程（只等“队列非空”）也要按时被叫醒")
async def observer_on_same_condition(AsyncRolloutBuffer):
    mistake = await diagnose(AsyncRolloutBuffer)
    buf = AsyncRolloutBuffer(batch_size=3, max_capacity=10)

    async def observer():
        async with buf.cond:
            await buf.cond.wait_for(lambda: len(buf.buf) > 0)
            return list(buf.buf)

    async with _Tasks() as tasks:
        watching = tasks.start(observer())
        await spin()
        trainer = tasks.start(buf.get_batch())
        await spin()
        await buf.put("first")
        await spin()
        seen = task_state(watching)
        expect(seen == ["first"],
               "batch_size=3：放入第 1 条以后，等“队列非空”的协程是 {seen!r}，期望它醒来、看到 ['first']",
               hint=mistake or EVERY_PUT_HINT, seen=seen)
        await _put_all(buf, ["second", "third"])
        batch = await _within(trainer, "batch_size=3：放满一个 batch 后 trainer 没有拿到它", mistake or HANG_HINT)
    return {"observer": seen, "trainer": batch}


@visible_test(EX, PART, "3 个 worker、2 个 trainer 并发：一条不丢、一条不重复、每个 worker 的轨迹按顺序训练")
async def several_workers_and_trainers(AsyncRolloutBuffer):
    mistake = await diagnose(AsyncRolloutBuffer)
    rng = random.Random(44)
    buf = AsyncRolloutBuffer(batch_size=4, max_capacity=64)
    batches: list[list] = []

    async def worker(w):
        for i in range(8):
            await spin(rng.randint(0, 2))
            await buf.put((w, i))

    async def trainer():
        while True:
            batches.append(await buf.get_batch())
            await spin(rng.randint(0, 6))  # a training step: the workers keep going meanwhile

    async with _Tasks() as tasks:
        loops = [tasks.start(trainer()) for _ in range(2)]
        await _within(asyncio.gather(*(worker(w) for w in range(3))), "3 个 worker 各放 8 条：worker 没能放完轨迹",
                      mistake or HANG_HINT)

        async def all_batches():
            while len(batches) < 6 and not any(t.done() for t in loops):
                await asyncio.sleep(0)

        await _within(all_batches(), "24 条轨迹、batch_size=4、容量 64：trainer 没拿到全部 6 个 batch",
                      hint=mistake or CAPACITY_HINT)
        crash = next((_crash(t) for t in loops if t.done() and _crash(t)), "")
        expect(not crash, "24 条轨迹、batch_size=4：trainer 抛出了 {crash}", hint=mistake or TOO_WEAK_HINT, crash=crash)
    trained = [item for batch in batches for item in batch]
    per_worker = [[i for w2, i in trained if w2 == w] for w in range(3)]
    sizes = [len(b) for b in batches]
    print(f"  batch 大小 {sizes}，队列里剩 {len(buf.buf)} 条")
    expect(all(size == 4 for size in sizes), "24 条轨迹、batch_size=4：batch 大小是 {sizes}，每个都应是 4",
           hint=mistake or TOO_WEAK_HINT, sizes=sizes)
    expect(sorted(trained) == sorted((w, i) for w in range(3) for i in range(8)),
           "24 条轨迹：训练了 {n} 条、其中不同的 {distinct} 条，期望 24 条各一次",
           hint=mistake or CAPACITY_HINT, n=len(trained), distinct=len(set(trained)))
    expect(per_worker == [list(range(8))] * 3, "每个 worker 的轨迹被训练的顺序是 {per_worker}，期望各自 0..7",
           hint=mistake or "先进先出：append 放在右边，popleft 从左边取。", per_worker=per_worker)
    return {"sizes": sizes, "per_worker": per_worker, "left": list(buf.buf)}
