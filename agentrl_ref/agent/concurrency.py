"""Concurrency for the capstone, in one place: a fixed torch thread count, independent jobs on both cores (forked
workers), a coroutine run from a notebook (whose thread already runs an event loop), and stopping a child process.

    with torch_threads(): ...                 # one torch thread inside the block
    results, stats = run_jobs(train_arm, [(seed, arm) for ...], context={"parts": MY_PARTS, ...})
    ahead = start_jobs(sft_job, [(1,), (2,)], context=...)   # one worker, in the background
    results, stats = ahead.get()                              # later: wait for it
    value = run_coroutine(grpo_async(...))    # asyncio.run, or in a fresh thread under Jupyter

The jobs and their context are handed to the workers by fork, not by pickling: a student's function
defined in a notebook cell (or a lambda) works in a worker as it does in the kernel. Only the results
travel back, pickled, so they must be plain data (dataclasses of numbers, lists, tensors, episodes).
Where fork is not the safe default (macOS, Windows) or only one core is there, the jobs run one after
another in this process: the same results, only slower. A job's result depends on its arguments only
(fixed seeds), never on which process ran it or in what order. torch is imported only when a function needs it.
"""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Sequence

TORCH_THREADS = 1  # the tensors are tiny: one thread is the fastest and the same on every machine


@contextmanager
def torch_threads(n: int = TORCH_THREADS):
    """torch.set_num_threads(n) inside the block, the previous count restored after it."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_JOB: dict[str, Any] = {}  # set before the fork, read by the workers


def default_processes() -> int:
    """2 on a machine with 2 or more cores (torch runs one thread per process), 1 otherwise or without fork."""
    if not sys.platform.startswith("linux") or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(2, os.cpu_count() or 1))


def forked_child(ignore_interrupt: bool = False) -> None:
    """First thing in a forked worker: its own signal handling and one torch thread.

    - SIGTERM back to its default (the process ends): the child inherits the parent's handlers, and an event loop
      in the parent (nbclient's, a notebook's) may have installed a do-nothing one; with it, Pool.terminate() and
      stop_process() would wait forever for a worker blocked on a lock. The parent's wake-up fd is let go as well.
    - SIGINT ignored if asked (a notebook's interrupt is the trainer's to handle, not the worker's).
    - One torch thread: a forked child must not enter the OpenMP thread pool it inherited from a parent that used
      more than one thread (GNU OpenMP's pool does not survive fork: the child hangs)."""
    import torch

    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if ignore_interrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)


def _call(index: int):
    t0 = time.process_time()
    value = _JOB["fn"](*_JOB["jobs"][index], **_JOB["context"])
    return index, value, time.process_time() - t0, os.getpid()


@dataclass
class JobStats:
    """CPU seconds of the jobs, in total and per worker process. With one torch thread per process, the busiest
    worker's CPU seconds are what the jobs take on idle cores (wall clock grows when other programs share them)."""

    processes: int
    cpu_seconds: float = 0.0
    per_worker: dict[int, float] = field(default_factory=dict)

    @property
    def busiest_worker(self) -> float:
        return max(self.per_worker.values(), default=0.0)


def run_jobs(fn: Callable, jobs: Sequence[tuple], *, context: dict | None = None, processes: int | None = None,
             on_done: Callable[[int, int, Any], None] | None = None) -> tuple[list, JobStats]:
    """[fn(*job, **context) for job in jobs] computed on `processes` workers; returns (results, JobStats).

    on_done(done, total, result) runs in this process after each job finishes (progress display).
    """
    processes = default_processes() if processes is None else processes
    jobs = list(jobs)
    results: list = [None] * len(jobs)
    stats = JobStats(processes if len(jobs) > 1 else 1)
    _JOB.update(fn=fn, jobs=jobs, context=dict(context or {}))
    try:
        if processes <= 1 or len(jobs) <= 1:
            finished = map(_call, range(len(jobs)))
            pool = None
        else:
            pool = multiprocessing.get_context("fork").Pool(min(processes, len(jobs)), initializer=forked_child)
            finished = pool.imap_unordered(_call, range(len(jobs)))
        try:
            for done, (index, value, seconds, pid) in enumerate(finished, 1):
                results[index] = value
                stats.cpu_seconds += seconds
                stats.per_worker[pid] = stats.per_worker.get(pid, 0.0) + seconds
                if on_done is not None:
                    on_done(done, len(jobs), value)
        finally:
            if pool is not None:
                pool.terminate()
                pool.join()
    finally:
        _JOB.clear()
    return results, stats


_BACKGROUND: dict[str, dict[str, Any]] = {}  # jobs of start_jobs(), by key; a worker reads its own (forked) copy


def _call_background(key: str, index: int):
    job = _BACKGROUND[key]
    t0 = time.process_time()
    value = job["fn"](*job["jobs"][index], **job["context"])
    return index, value, time.process_time() - t0, os.getpid()


class Jobs:
    """Jobs running in one background worker (start_jobs); get() waits and returns (results, JobStats)."""

    def __init__(self, key: str, pool, pending, done=None):
        self.key, self.pool, self.pending, self.done = key, pool, pending, done

    def get(self) -> tuple[list, JobStats]:
        if self.done is None:
            try:
                finished = self.pending.get()
            finally:
                self.cancel()
            stats = JobStats(1)
            results: list = [None] * len(finished)
            for index, value, seconds, pid in finished:
                results[index] = value
                stats.cpu_seconds += seconds
                stats.per_worker[pid] = stats.per_worker.get(pid, 0.0) + seconds
            self.done = (results, stats)
        return self.done

    def cancel(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None
        _BACKGROUND.pop(self.key, None)


def start_jobs(fn: Callable, jobs: Sequence[tuple], *, context: dict | None = None) -> Jobs:
    """run_jobs() in one background worker while this process goes on (e.g. the next seeds' SFT while a notebook
    trains its own seed). Like run_jobs, the jobs reach the worker by fork, never pickled; without fork or a second
    core they run here, at once."""
    key = uuid.uuid4().hex
    _BACKGROUND[key] = {"fn": fn, "jobs": list(jobs), "context": dict(context or {})}
    if default_processes() < 2 or not jobs:
        handle = Jobs(key, None, None)
        finished = [_call_background(key, i) for i in range(len(jobs))]
        handle.pending = _Done(finished)
        return handle
    pool = multiprocessing.get_context("fork").Pool(1, initializer=forked_child)
    return Jobs(key, pool, pool.map_async(partial(_call_background, key), range(len(jobs)), chunksize=1))


class _Done:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value


def stop_process(process, grace: float = 5.0) -> None:
    """Join; if it does not end within `grace` seconds, SIGTERM, then SIGKILL. The process is reaped on return."""
    process.join(timeout=grace)
    if process.is_alive():
        process.terminate()
        process.join(timeout=grace)
    if process.is_alive():
        process.kill()
        process.join()


CANCEL_EVERY = 0.2  # seconds between cancellation requests after an interrupt (see run_coroutine)


def run_coroutine(coro):
    """asyncio.run(coro), or, when this thread already runs an event loop (Jupyter), in a fresh thread.

    A KeyboardInterrupt (a notebook's interrupt button) or any other exception raised in this thread while it
    waits cancels the coroutine and waits for it to unwind, so its `finally` clauses (stopping worker processes)
    have run when the exception reaches the caller."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    out: dict = {}
    started, finished = threading.Event(), threading.Event()

    async def main():
        out["loop"], out["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        return await coro

    def target():
        try:
            out["value"] = asyncio.run(main())
        except BaseException as exc:  # re-raised in the caller's thread
            out["error"] = exc
        finally:
            started.set()
            finished.set()

    thread = threading.Thread(target=target, name="capstone-grpo")
    thread.start()
    try:
        # an Event, not thread.join(): a join interrupted by KeyboardInterrupt can mark a running thread as stopped
        # (CPython 3.11), and the second join would then return at once
        finished.wait()
    except BaseException:
        started.wait()
        # cancel until it takes: in Python 3.11, asyncio.wait_for swallows a cancellation that arrives just as the
        # awaited batch is ready, and the trainer would go on
        while "task" in out and not finished.wait(CANCEL_EVERY):
            try:
                out["loop"].call_soon_threadsafe(out["task"].cancel)
            except RuntimeError:  # the loop has just finished
                pass
        finished.wait()
        raise
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]
