"""GRPO with the rollout worker in a process of its own: generation and training overlap on the wall clock.

    result = grpo_two_process(policy, task, GRPOConfig(max_staleness=2))   # this process trains, a child samples
    result.step_seconds, result.throughput, result.mean_staleness, result.chunks, result.steps

Two processes, one torch thread each (two cores):
- the rollout worker (a forked child) generates chunk after chunk with the newest weights it has received, and sends
  each finished chunk through a multiprocessing.Queue: every trajectory with the policy version that sampled it and
  the behaviour log-prob of every token (Episode.logp). The queue's feeder thread writes the pipe, so the worker
  never waits for the trainer to read.
- the trainer (this process) runs trainer.Trainer on an asyncio loop. A receiver task takes the chunks off the
  queue (the blocking read runs in an executor thread, never on the loop) and puts every trajectory into exercise
  4's AsyncRolloutBuffer; the trainer takes batches from it, trains, and publishes the new weights.

Weights travel through shared memory (WeightBoard): one flat float32 tensor of all parameters, allocated before the
fork, written by the trainer and read by the worker under one lock together with its version number, so the version
a trajectory carries always names the weights that sampled it. max_staleness bounds how far the worker runs ahead by
AReaL's admission rule (trainer.needed_version): chunk c waits until version needed_version(c) is published.
With max_staleness=0 this is the synchronous baseline, run the same way; it samples exactly the chunks of the
in-process grpo() with the same weights, so its curves are grpo()'s.

A weight update that comes while a chunk is being generated (interrupt=, exercise 10):
    wait      (the default) the chunk finishes with the weights it started with; the worker takes the new version
              before its next chunk. The update waits, no trajectory mixes versions.
    abort     the worker notices the new version between two decode steps, drops the chunk and generates it again
              from scratch with the new weights: the tokens sampled so far are wasted.
    continue  the worker loads the new weights between two decode steps and goes on: the rest of the tokens come
              from the new version (the key/value cache is computed again with it). Every token records the
              version that sampled it and its behaviour log-prob under that version (Episode.versions, .logp); the
              trajectory's policy_version is its OLDEST token's, so the buffer's max_staleness and the admission
              rule bound the oldest token.
The worker only reads the shared version number between decode steps (a new version is loaded under the lock, as
always); with wait it does not even do that, and the run is the same as before interruptions existed.

The child gets everything by fork, nothing is pickled on the way in (a notebook's functions work). Whatever happens
(an exception in the trainer, a KeyboardInterrupt in the notebook, the worker dying), the worker is stopped and reaped
before grpo_two_process returns or raises. The worker ignores SIGINT (a notebook's interrupt signals the kernel's
whole process group; the trainer decides) and leaves by itself if its parent disappears. Times are
time.perf_counter(), CLOCK_MONOTONIC on Linux: one clock for both processes. Linux only (fork).
"""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import queue as queue_module
import statistics
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from agentrl_ref.agent.concurrency import default_processes, forked_child, run_coroutine, stop_process, torch_threads
from agentrl_ref.agent.grpo_config import GRPOConfig
from agentrl_ref.agent.rollout import Interrupted
from agentrl_ref.agent.trainer import Trainer, needed_version, sample_chunk

POLL = 0.2  # seconds between liveness checks while a process waits for the other
INTERRUPTS = ("wait", "abort", "continue")  # what a weight update does to a chunk in generation (module docstring)


def available() -> bool:
    """True where the worker can be forked (Linux) and two cores exist."""
    return default_processes() >= 2


class WeightBoard:
    """The published weights in shared memory: all parameters as one flat tensor and their version, one lock."""

    def __init__(self, policy, ctx):
        with torch.no_grad():
            self.flat = torch.nn.utils.parameters_to_vector(policy.parameters()).detach().clone().share_memory_()
        self.version = ctx.Value("q", 0, lock=False)
        self.stopped = ctx.Value("b", 0, lock=False)
        self.cond = ctx.Condition()

    @property
    def nbytes(self) -> int:
        return self.flat.numel() * self.flat.element_size()

    def publish(self, policy, version: int) -> float:
        """Trainer: write the weights and their version, wake the worker; returns the seconds it took."""
        t0 = time.perf_counter()
        with torch.no_grad():
            flat = torch.nn.utils.parameters_to_vector(policy.parameters())
        with self.cond:
            self.flat.copy_(flat)
            self.version.value = version
            self.cond.notify_all()
        return time.perf_counter() - t0

    def stop(self) -> None:
        with self.cond:
            self.stopped.value = 1
            self.cond.notify_all()

    def wait_for(self, version: int | None, parent: int) -> bool:
        """Worker: block until `version` is published (True), or the run is stopped or the parent is gone (False).
        version None: wait for the stop only."""
        with self.cond:
            while not self.stopped.value and (version is None or self.version.value < version):
                self.cond.wait(timeout=POLL)
                if os.getppid() != parent:
                    return False
            return not self.stopped.value

    def load(self, policy, have: int) -> int:
        """Worker: copy the newest weights into policy unless it holds them already; returns their version."""
        with self.cond:
            version = self.version.value
            if version != have:
                with torch.no_grad():
                    offset = 0
                    for p in policy.parameters():  # copies: the policy must not alias the board the trainer writes
                        p.copy_(self.flat[offset:offset + p.numel()].view_as(p))
                        offset += p.numel()
        return version


class _Stopped(Exception):
    """The run was stopped while the worker was generating."""


class BoardWatch:
    """The worker's watch over the weight board while it samples a chunk (rollout.py's watch protocol): between two
    decode steps, is there a newer version? abort: drop the chunk; continue: load it and go on with it."""

    def __init__(self, board: WeightBoard, policy, version: int, interrupt: str):
        self.board, self.policy, self.version, self.interrupt = board, policy, version, interrupt
        self.switches: list[tuple[int, int]] = []  # (position, version) where newer weights took over

    def poll(self, t: int) -> str:
        if self.board.stopped.value:
            raise _Stopped
        if self.board.version.value == self.version:  # one read of a shared int: nothing new
            return "go"
        if self.interrupt == "abort":
            return "abort"
        self.version = self.board.load(self.policy, self.version)
        self.switches.append((t, self.version))
        return "switch"


def chunk_trajectories(episodes, c: int, group_size: int, version: int) -> list[dict]:
    """The buffer's trajectory dicts of chunk c: policy_version is the oldest version among each episode's sampled
    tokens (its only version when the episode records none)."""
    return [{"policy_version": min(e.sampled_versions(version), default=version), "group": (c, i // group_size),
             "episode": e} for i, e in enumerate(episodes)]


def sample_interruptible(policy, task, cfg: GRPOConfig, c: int, board: WeightBoard, have: int,
                         interrupt: str) -> tuple[list, dict]:
    """Chunk c sampled under a BoardWatch (abort: again from scratch with the newest weights after every abort).
    Returns the episodes and {"newest": the version the policy holds at the end, "aborts", "wasted": tokens sampled
    in aborted attempts, "switches": [(position, version)]}."""
    wasted = aborts = 0
    while True:
        watch = BoardWatch(board, policy, have, interrupt)
        try:
            episodes = sample_chunk(policy, task, cfg, c, watch=watch)
        except Interrupted as stop:
            wasted, aborts = wasted + stop.sampled, aborts + 1
            have = board.load(policy, have)
            continue
        return episodes, {"newest": watch.version, "aborts": aborts, "wasted": wasted, "switches": watch.switches}


def _worker(board: WeightBoard, out, policy, task, cfg: GRPOConfig, n_chunks: int, chunk_size: int, t0: float,
            parent: int, interrupt: str = "wait") -> None:
    """The rollout worker process: for each chunk, wait until it is admitted, take the newest weights, sample, send."""
    forked_child(ignore_interrupt=True)  # first: the OpenMP pool inherited through fork must not be entered
    try:
        have = -1
        for c in range(n_chunks):
            waited = time.perf_counter()
            if not board.wait_for(needed_version(c, chunk_size, cfg.batch_size, cfg.max_staleness), parent):
                return
            loading = time.perf_counter()
            have = board.load(policy, have)
            start, cpu = time.perf_counter(), time.thread_time()
            if interrupt == "wait":
                episodes, extra = sample_chunk(policy, task, cfg, c), {"aborts": 0, "wasted": 0, "switches": []}
                newest = have
            else:
                try:
                    episodes, extra = sample_interruptible(policy, task, cfg, c, board, have, interrupt)
                except _Stopped:
                    return
                newest = extra.pop("newest")
            end = time.perf_counter()
            trajectories = chunk_trajectories(episodes, c, cfg.group_size, have)
            have = newest
            kept = sum(e.assistant_tokens() for e in episodes)
            out.put({"chunk": c, "version": min(t["policy_version"] for t in trajectories), "newest": newest,
                     "waited": waited - t0, "start": start - t0, "end": end - t0, "load_seconds": start - loading,
                     "seconds": time.thread_time() - cpu, "kept": kept, "generated": kept + extra["wasted"], **extra,
                     "trajectories": trajectories})
        out.put({"done": True, "cpu": time.process_time()})
        board.wait_for(None, parent)  # the feeder thread flushes the last chunks meanwhile
    except BaseException:  # noqa: BLE001 - reported to the trainer, which raises it
        out.put({"error": traceback.format_exc()})
        board.wait_for(None, parent)
    finally:
        out.cancel_join_thread()


class _Link:
    """The trainer's end of the queue: the next message, or RuntimeError as soon as the worker has died or failed."""

    def __init__(self, process, out, stopping: threading.Event):
        self.process, self.out, self.stopping = process, out, stopping

    def next_message(self) -> dict | None:
        while not self.stopping.is_set():
            try:
                message = self.out.get(timeout=POLL)
            except queue_module.Empty:
                if not self.process.is_alive():
                    raise RuntimeError(f"the rollout worker died (exit code {self.process.exitcode})") from None
                continue
            if "error" in message:
                raise RuntimeError("the rollout worker failed:\n" + message["error"])
            return message
        return None


@dataclass
class TwoProcessResult:
    """A run of grpo_two_process. Wall times are seconds since the worker was started."""

    config: GRPOConfig
    history: list[dict] = field(repr=False)       # the trainer's rows, as grpo()'s
    chunks: list[dict] = field(repr=False)        # chunk, version, waited, start, end, received; seconds (CPU)
    steps: list[tuple[float, float]] = field(repr=False)  # wall start and end of every train step
    publish: list[float] = field(repr=False)      # publish[v]: when version v was in shared memory (publish[0] = 0)
    publish_seconds: list[float] = field(repr=False)  # the trainer's time to write each version
    seconds: float = 0.0                          # wall clock until the last version was published
    trainer_cpu: float = 0.0                      # CPU seconds of this process during the run
    worker_cpu: float = 0.0                       # CPU seconds of the rollout worker
    loadavg: tuple[float, float, float] = (0.0, 0.0, 0.0)  # when the run ended
    dropped_stale: int = 0
    dropped_overflow: int = 0
    worker_pid: int = 0                           # the rollout worker's process id (gone when the run returns)
    interrupt: str = "wait"                       # what a weight update did to a chunk in generation (INTERRUPTS)
    token_staleness: dict[int, int] = field(default_factory=dict)  # staleness -> trained tokens that lagged so much

    @property
    def trajectories(self) -> int:
        return len(self.history) * self.config.batch_size

    @property
    def generated_tokens(self) -> int:
        """Tokens the worker sampled, those of aborted attempts included."""
        return sum(c["generated"] for c in self.chunks)

    @property
    def kept_tokens(self) -> int:
        """Tokens the worker sampled in the trajectories it delivered."""
        return sum(c["kept"] for c in self.chunks)

    @property
    def step_seconds(self) -> float:
        """Wall seconds per trainer step, the filling of the pipeline included."""
        return self.seconds / len(self.history)

    @property
    def throughput(self) -> float:
        """Trajectories trained on per wall-clock second."""
        return self.trajectories / self.seconds

    @property
    def generate_seconds(self) -> float:
        """CPU seconds of generation per step (the worker's side)."""
        return sum(c["seconds"] for c in self.chunks) / len(self.history)

    @property
    def train_seconds(self) -> float:
        """CPU seconds of one train step plus writing its weights (the trainer's side)."""
        return (sum(r["train_seconds"] for r in self.history) + sum(self.publish_seconds)) / len(self.history)

    @property
    def mean_staleness(self) -> float:
        return sum(r["staleness"] for r in self.history) / len(self.history)

    @property
    def trainer_idle(self) -> float:
        """Share of the wall clock the trainer waited for a batch."""
        busy = sum(end - start for start, end in self.steps) + sum(self.publish_seconds)
        return max(0.0, 1.0 - busy / self.seconds)


async def _receive(link: _Link, buffer, chunks: list, done: dict, executor, t0: float) -> None:
    loop = asyncio.get_running_loop()
    while True:
        message = await loop.run_in_executor(executor, link.next_message)
        if message is None:
            return
        if message.get("done"):
            done["cpu"] = message["cpu"]
            return
        trajectories = message.pop("trajectories")
        message["received"] = time.perf_counter() - t0
        chunks.append(message)
        for traj in trajectories:
            await buffer.put(traj)


async def _two_process(trainer: Trainer, board: WeightBoard, process, out, t0: float) -> tuple[list, dict, int, int]:
    buffer, versioned = trainer.new_buffer()
    stopping = threading.Event()
    link = _Link(process, out, stopping)
    chunks: list[dict] = []
    done: dict = {}
    executor = ThreadPoolExecutor(1, thread_name_prefix="capstone-receiver")
    receiving = asyncio.ensure_future(_receive(link, buffer, chunks, done, executor, t0))
    training = asyncio.ensure_future(trainer.trainer(buffer, versioned, asyncio.Condition()))
    try:
        with torch_threads():
            await asyncio.wait({receiving, training}, return_when=asyncio.FIRST_EXCEPTION)
        if receiving.done() and receiving.exception() is not None:
            raise receiving.exception()
        training.result()
    finally:
        stopping.set()
        for task in (receiving, training):
            task.cancel()
        board.stop()
        executor.shutdown(wait=True)  # the reader returns within POLL seconds
        stop_process(process)
    return chunks, done, *trainer.dropped(buffer)


def token_staleness_counter(counts: dict[int, int]):
    """A Trainer.on_batch that adds every trained token's staleness (the trainer's version minus the version that
    sampled the token) to counts."""
    def on_batch(batch, version):
        for traj in batch:
            for v in traj["episode"].sampled_versions(traj["policy_version"]):
                counts[version - v] = counts.get(version - v, 0) + 1
    return on_batch


def grpo_two_process(policy, task, cfg: GRPOConfig = GRPOConfig(), *, parts=None, on_update=None,
                     progress=None, interrupt: str = "wait") -> TwoProcessResult:
    """grpo() with the rollout worker in a second process; trains `policy` in place in this process.

    Same arguments as grpo(); on_update(version, policy) runs after each version is published. The chunks of a step
    (cfg.n_workers of them) are generated one after the other by the one worker process. interrupt: what a weight
    update does to a chunk being generated, one of INTERRUPTS (the module docstring).
    """
    if not available():
        raise RuntimeError("grpo_two_process needs fork (Linux) and two cores")
    if interrupt not in INTERRUPTS:
        raise ValueError(f"interrupt must be one of {INTERRUPTS}, got {interrupt!r}")
    ctx = multiprocessing.get_context("fork")
    trainer = Trainer(policy, task, cfg, parts, None, progress)
    counts: dict[int, int] = {}
    trainer.on_batch = token_staleness_counter(counts)
    board = WeightBoard(policy, ctx)
    publish, publish_seconds = [0.0], []

    def published(version, pol):
        publish_seconds.append(board.publish(pol, version))
        publish.append(time.perf_counter() - t0)
        if on_update is not None:
            on_update(version, pol)

    trainer.on_update = published
    out = ctx.Queue()
    policy.train()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    process = ctx.Process(target=_worker, name="capstone-rollout", daemon=True,
                          args=(board, out, policy, task, cfg, trainer.n_chunks, trainer.chunk_size, t0, os.getpid(),
                                interrupt))
    process.start()
    try:
        chunks, done, dropped_stale, dropped_overflow = run_coroutine(_two_process(trainer, board, process, out, t0))
    finally:  # the coroutine has stopped the worker already, unless it never ran
        board.stop()
        stop_process(process)
        out.close()
        out.join_thread()
    steps = [(start - t0, end - t0) for start, end in trainer.step_times]
    return TwoProcessResult(cfg, trainer.history, chunks, steps, publish, publish_seconds, publish[-1],
                            time.process_time() - cpu0, done.get("cpu", float("nan")), os.getloadavg(),
                            dropped_stale, dropped_overflow, process.pid, interrupt, dict(sorted(counts.items())))


def _transfer_child(conn, board: WeightBoard, policy, parent: int) -> None:
    """The worker's side of measure_weight_transfer: receive one version, load it, answer with the CPU seconds it took
    (receiving, unpickling and loading included)."""
    forked_child(ignore_interrupt=True)
    while True:
        if not conn.poll(POLL):
            if os.getppid() != parent:
                return
            continue
        cpu = time.thread_time()
        kind, payload = conn.recv()
        if kind == "stop":
            return
        if kind == "shared memory":
            board.load(policy, -1)
        else:
            policy.load_state_dict(payload)
        conn.send(time.thread_time() - cpu)


def measure_weight_transfer(policy, repeats: int = 30, warmup: int = 5) -> dict[str, dict[str, float]]:
    """How long it takes to hand one version of the weights to a forked worker that loads it, through shared memory
    (WeightBoard.publish, a short message to wake the worker, WeightBoard.load) and through a pipe (the state dict
    pickled, sent, unpickled, load_state_dict), side by side, after `warmup` untimed rounds (the child's first writes
    to its copied pages). Medians over `repeats` rounds:
    {"cpu": {way: CPU seconds of both processes}, "wall": {way: round trip, waking the worker included},
     "bytes": size of the weights}. The CPU seconds are the cost; the wall clock adds how fast the scheduler wakes the
    worker, which depends on what else runs."""
    ctx = multiprocessing.get_context("fork")
    board = WeightBoard(policy, ctx)
    here, there = ctx.Pipe()
    process = ctx.Process(target=_transfer_child, args=(there, board, policy, os.getpid()), daemon=True)
    process.start()
    ways = ("shared memory", "pipe")
    cpu: dict[str, list[float]] = {way: [] for way in ways}
    wall: dict[str, list[float]] = {way: [] for way in ways}
    try:
        for i in range(warmup + repeats):
            for way in ways:
                t0, c0 = time.perf_counter(), time.thread_time()
                if way == "shared memory":
                    board.publish(policy, i + 1)
                    here.send((way, None))
                else:
                    here.send((way, policy.state_dict()))
                mine = time.thread_time() - c0
                theirs = here.recv()
                if i >= warmup:
                    wall[way].append(time.perf_counter() - t0)
                    cpu[way].append(mine + theirs)
        here.send(("stop", None))
    finally:
        stop_process(process)
        here.close()
        there.close()
    return {"cpu": {way: statistics.median(cpu[way]) for way in ways},
            "wall": {way: statistics.median(wall[way]) for way in ways}, "bytes": board.nbytes}
