"""The sandbox's own cost: one tiny notebook, started and run in a plain kernel and in a sandboxed one,
alternately, `--rounds` times; medians of kernel start + execute, and of the same with shutdown.

    .venv/bin/python bench/sandbox_overhead.py [--rounds 5]

The medians are also written as a record, bench/results/sandbox-overhead.json (bench/record.py).
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client import AsyncKernelManager
from nbclient import NotebookClient

from grader.sandbox import Sandbox, check_available

import record


def compare(rounds: int) -> int:
    check_available()
    since = record.now()
    base = Path(tempfile.mkdtemp(prefix="sandbox-selftest-"))
    try:
        pkg = base / "pkg" / "agentrl_ref"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("VALUE = 42\n")
        work = base / "work"
        work.mkdir()
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("x = 1 + 1\nprint(x)")]

        t0 = time.perf_counter()
        sandbox = Sandbox(base / "pkg")
        with sandbox.session(work):
            pass
        setup = time.perf_counter() - t0
        print(f"one-off set-up (font cache, first session): {setup:.2f} s")

        plain_conn = base / "plain-conn"
        plain_conn.mkdir(mode=0o700)
        plain_runs = itertools.count()

        def run_plain() -> tuple[float, float]:
            # same transport (IPC) as the sandbox, no sandbox, no limits
            km = AsyncKernelManager(kernel_name="python3", transport="ipc")
            km.connection_file = str(plain_conn / f"k{next(plain_runs)}.json")
            km.ip = km.connection_file[:-5] + "-ipc"
            t = time.perf_counter()
            NotebookClient(nbformat.from_dict(nb), km=km, timeout=60,
                           resources={"metadata": {"path": str(work)}}).execute()
            t_exec = time.perf_counter() - t
            asyncio.run(km.shutdown_kernel(now=True))
            return t_exec, time.perf_counter() - t

        def run_sandboxed() -> tuple[float, float]:
            t = time.perf_counter()
            with sandbox.session(work) as s:
                out = NotebookClient(nbformat.from_dict(nb), km=s.kernel_manager(), timeout=60).execute()
                t_exec = time.perf_counter() - t
            assert out.cells[0].outputs[0]["text"] == "2\n", out.cells[0].outputs
            return t_exec, time.perf_counter() - t

        plain, sandboxed = [], []
        run_plain()                         # warm the page cache
        run_sandboxed()
        for _ in range(rounds):
            plain.append(run_plain())
            sandboxed.append(run_sandboxed())
        med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
        print(f"rounds: {rounds} (alternating; wall-clock medians, one notebook `x = 1 + 1; print(x)`)")
        print(f"kernel start + execute   plain {med(plain, 0):.3f} s   sandboxed {med(sandboxed, 0):.3f} s"
              f"   overhead {med(sandboxed, 0) - med(plain, 0):+.3f} s")
        print(f"  ... + kernel shutdown  plain {med(plain, 1):.3f} s   sandboxed {med(sandboxed, 1):.3f} s"
              f"   overhead {med(sandboxed, 1) - med(plain, 1):+.3f} s")
        record.save("sandbox-overhead", {
            "rounds": rounds, "setup_seconds": setup,
            "plain": {"execute": med(plain, 0), "with_shutdown": med(plain, 1)},
            "sandboxed": {"execute": med(sandboxed, 0), "with_shutdown": med(sandboxed, 1)}}, since=since)
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    return compare(parser.parse_args().rounds)


if __name__ == "__main__":
    sys.exit(main())
