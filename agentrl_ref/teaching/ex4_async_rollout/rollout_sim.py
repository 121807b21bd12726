"""Rollout workers and a trainer around the real AsyncRolloutBuffer, on a simulated clock (exercise 4).

    result = simulate(SimConfig(mode="async", n_workers=8, gen_time=2.0, train_time=4.0, batch_size=16))
    result.trainer_busy, result.lags, result.occupancy_t, ...

Nothing sleeps for real: the coroutines call plain `asyncio.sleep(dt)` on an event loop whose clock
jumps to the next timer whenever every task is waiting (VirtualClockLoop), so a run of thousands of
trajectories takes a fraction of a second and is the same for the same seed. The buffer is
agentrl_ref.rollout_buffer.AsyncRolloutBuffer itself: its Condition, its drops, its staleness filter.

Two schedules (SimConfig.mode):
- "sync": the workers generate one batch with the current policy, then the trainer trains on it while
  the workers wait, then the next batch is generated. Lag is always 0.
- "async": the workers generate without pause; each trajectory records the policy version it was
  started with; the trainer takes a batch whenever one is there, trains, and bumps the version.
  Lag of a trained trajectory = trainer version at training time - its version.

Inside a Jupyter kernel an event loop is already running in the main thread, and a second loop cannot
run there; simulate() then runs its own loop in a worker thread and waits for it.
"""
from __future__ import annotations

import asyncio
import math
import random
import selectors
import threading
from dataclasses import dataclass, field, replace
from typing import Callable

from agentrl_ref.teaching.shared.md_table import markdown_table
from agentrl_ref.rollout_buffer import VERSION_KEY, AsyncRolloutBuffer

MODES = ("sync", "async")


class SimulationDeadlock(RuntimeError):
    """Every task is waiting and no timer is due: the simulated system can never move again."""


class _JumpingSelector(selectors.DefaultSelector):
    """Never blocks: where the loop would sleep until its next timer, move the virtual clock there."""

    def __init__(self, loop: "VirtualClockLoop"):
        super().__init__()
        self._virtual_loop = loop

    def select(self, timeout=None):
        events = super().select(0)
        if not events:
            if timeout is None:
                raise SimulationDeadlock("every task is waiting and no timer is scheduled")
            if timeout > 0:
                self._virtual_loop._now += timeout
        return events


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An asyncio event loop whose time() is a simulated clock that starts at 0.

    Callbacks and tasks run exactly as on a normal loop; only waiting is free: when nothing is
    ready, the clock jumps to the earliest timer (asyncio.sleep, call_later, wait_for timeouts).
    """

    def __init__(self):
        self._now = 0.0
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self._now


@dataclass(frozen=True)
class SimConfig:
    mode: str = "async"                 # "sync" or "async"
    n_workers: int = 8                  # rollout workers (concurrent trajectory generators)
    gen_time: float = 2.0               # mean seconds to generate one trajectory
    gen_spread: float = 0.5             # coefficient of variation of the generation time (0 = constant)
    train_time: float = 4.0             # seconds per trainer step
    batch_size: int = 16
    capacity: int = 64                  # buffer max_capacity (>= batch_size, or the buffer refuses)
    max_staleness: int | None = None    # None: keep everything; k: drop trajectories k+1 or more versions old
    n_steps: int = 100                  # trainer steps to simulate
    seed: int = 0

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not (isinstance(self.n_workers, int) and self.n_workers >= 1):
            raise ValueError(f"n_workers must be an int >= 1, got {self.n_workers!r}")
        if not (self.gen_time > 0 and self.train_time > 0 and self.gen_spread >= 0):
            raise ValueError("gen_time and train_time must be > 0 and gen_spread >= 0")
        if not (isinstance(self.n_steps, int) and self.n_steps >= 1):
            raise ValueError(f"n_steps must be an int >= 1, got {self.n_steps!r}")


@dataclass
class SimResult:
    config: SimConfig
    duration: float = 0.0               # simulated seconds until the last trainer step ended
    train_seconds: float = 0.0          # seconds the trainer spent training
    generate_seconds: float = 0.0       # worker-seconds spent generating (within duration)
    generated: int = 0                  # trajectories that reached the buffer
    trained: int = 0                    # trajectories the trainer trained on
    dropped_overflow: int = 0           # dropped because the buffer was full
    dropped_stale: int = 0              # dropped because they were too many versions old
    leftover: int = 0                   # still in the buffer at the end
    occupancy_t: list[float] = field(default_factory=list)    # buffer length after every put/get ...
    occupancy_n: list[int] = field(default_factory=list)      # ... at these simulated times
    train_intervals: list[tuple[float, float]] = field(default_factory=list)  # (start, end) of each step
    lags: list[int] = field(default_factory=list)             # policy-version lag of every trained trajectory
    gen_time_trained: list[float] = field(default_factory=list)   # generation time of every trained one
    gen_time_all: list[float] = field(default_factory=list)       # generation time of every generated one

    @property
    def trainer_busy(self) -> float:
        """Fraction of the run the trainer was training (the seed page's "GPU utilisation")."""
        return self.train_seconds / self.duration if self.duration else 0.0

    @property
    def worker_busy(self) -> float:
        """Fraction of the workers' time spent generating."""
        return self.generate_seconds / (self.config.n_workers * self.duration) if self.duration else 0.0

    @property
    def throughput(self) -> float:
        """Trained trajectories per simulated second."""
        return self.trained / self.duration if self.duration else 0.0

    @property
    def wasted(self) -> float:
        """Share of the generated trajectories that were dropped (generated and never trained on)."""
        return (self.dropped_overflow + self.dropped_stale) / self.generated if self.generated else 0.0

    def summary(self) -> dict[str, float]:
        return {
            "mode": self.config.mode, "trainer_busy": self.trainer_busy, "worker_busy": self.worker_busy,
            "throughput": self.throughput, "duration": self.duration, "generated": self.generated,
            "trained": self.trained, "dropped_overflow": self.dropped_overflow,
            "dropped_stale": self.dropped_stale, "mean_lag": _mean(self.lags),
            "max_lag": max(self.lags, default=0),
            "mean_gen_time_trained": _mean(self.gen_time_trained), "mean_gen_time_all": _mean(self.gen_time_all),
        }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _generation_times(config: SimConfig) -> Callable[[], float]:
    """Draws of a lognormal generation time with mean gen_time and coefficient of variation gen_spread."""
    rng = random.Random(config.seed)
    if config.gen_spread == 0:
        return lambda: config.gen_time
    sigma = math.sqrt(math.log1p(config.gen_spread ** 2))
    mu = math.log(config.gen_time) - sigma ** 2 / 2
    return lambda: rng.lognormvariate(mu, sigma)


async def _run(config: SimConfig, progress: Callable[[int, int], None] | None) -> SimResult:
    loop = asyncio.get_running_loop()
    res = SimResult(config)
    buf = AsyncRolloutBuffer(config.batch_size, config.capacity, max_staleness=config.max_staleness)
    draw = _generation_times(config)
    state = {"version": 0}
    gen_started: list[tuple[float, float]] = []  # (start, length) of every generation, to clip at the end

    def record() -> None:
        res.occupancy_t.append(loop.time())
        res.occupancy_n.append(len(buf))

    async def generate_one() -> None:
        version, length = state["version"], draw()
        gen_started.append((loop.time(), length))
        await asyncio.sleep(length)
        await buf.put({VERSION_KEY: version, "gen_time": length})
        res.generated += 1
        res.gen_time_all.append(length)
        record()

    async def train_one() -> None:
        current = state["version"] if config.max_staleness is not None else None
        batch = await buf.get_batch(current_version=current)
        record()
        start = loop.time()
        res.trained += len(batch)
        res.lags.extend(state["version"] - traj[VERSION_KEY] for traj in batch)
        res.gen_time_trained.extend(traj["gen_time"] for traj in batch)
        await asyncio.sleep(config.train_time)
        res.train_intervals.append((start, loop.time()))
        state["version"] += 1

    record()
    if config.mode == "sync":
        for step in range(config.n_steps):
            todo = [config.batch_size]  # trajectories of this batch not started yet, shared by the workers

            async def worker() -> None:
                while todo[0] > 0:
                    todo[0] -= 1
                    await generate_one()

            workers = [asyncio.create_task(worker()) for _ in range(config.n_workers)]
            await train_one()  # returns after training: get_batch waits for the whole batch first
            await asyncio.gather(*workers)
            if progress:
                progress(step + 1, config.n_steps)
    else:
        async def worker() -> None:
            while True:
                await generate_one()

        workers = [asyncio.create_task(worker()) for _ in range(config.n_workers)]
        try:
            for step in range(config.n_steps):
                await train_one()
                if progress:
                    progress(step + 1, config.n_steps)
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    res.duration = loop.time()
    res.train_seconds = sum(end - start for start, end in res.train_intervals)
    res.generate_seconds = sum(max(0.0, min(length, res.duration - start)) for start, length in gen_started)
    res.dropped_overflow, res.dropped_stale, res.leftover = buf.dropped_overflow, buf.dropped_stale, len(buf)
    return res


def _simulate_here(config: SimConfig, progress) -> SimResult:
    loop = VirtualClockLoop()
    try:
        return loop.run_until_complete(_run(config, progress))
    finally:
        loop.close()


def simulate(config: SimConfig = SimConfig(), progress: Callable[[int, int], None] | None = None) -> SimResult:
    """Run one simulation to the end and return its measurements. progress(step, n_steps) after each step.

    Works from plain Python and from inside a running event loop (a Jupyter cell, a widget callback):
    there the simulation's own loop runs in a worker thread, because one thread runs one loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _simulate_here(config, progress)
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["result"] = _simulate_here(config, progress)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="rollout-sim", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]


def run_modes(config: SimConfig = SimConfig(), modes=MODES,
              progress: Callable[[int, int], None] | None = None) -> dict[str, SimResult]:
    """The same settings under each schedule: {"sync": result, "async": result}. progress counts all steps."""
    results = {}
    total = config.n_steps * len(modes)
    for i, mode in enumerate(modes):
        offset = i * config.n_steps
        step_progress = (lambda step, _n, o=offset: progress(o + step, total)) if progress else None
        results[mode] = simulate(replace(config, mode=mode), step_progress)
    return results


def comparison_table(rows) -> str:
    """A Markdown table, one row per setting: rows is an iterable of (label, {"sync": result, "async": result}).

    Sync never drops and never lags, so drops, version lag (版本差) and the generation-time bias are shown for
    async only. The headers are Chinese (the table goes on the course's pages)."""
    header = ["设置", "trainer 忙碌：同步 → 异步", "吞吐（条/秒）：同步 → 异步", "异步丢弃：溢出 / 过期",
              "异步平均版本差", "异步生成耗时均值：被训练的 / 全部（秒）"]
    body = []
    for label, results in rows:
        sync, asyn = results["sync"].summary(), results["async"].summary()
        body.append([f"{label}", f"{sync['trainer_busy']:.0%} → {asyn['trainer_busy']:.0%}",
                     f"{sync['throughput']:.2f} → {asyn['throughput']:.2f}",
                     f"{asyn['dropped_overflow']} / {asyn['dropped_stale']}", f"{asyn['mean_lag']:.2f}",
                     f"{asyn['mean_gen_time_trained']:.2f} / {asyn['mean_gen_time_all']:.2f}"])
    return markdown_table(header, body)
