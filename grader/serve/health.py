"""The service's threads kept alive, and its health said out loud.

    threads = Supervisor(log)
    threads.add("scanner", scanner_loop)        # each a function that runs until the service stops
    threads.start(); threads.check()            # check(): a thread that died is started again (with a back-off)
    line = status_line(scanner.counts, queue.depth(), threads)   # every --status-every seconds, in the log
    write_status(state_folder, {...})           # the same as JSON, for `python -m grader doctor`

Nothing a student writes should make a thread raise; if one does anyway (a bug, the database gone for a
moment), the thread's error goes into the log and the thread starts again after 1, 2, 4 … (at most 30) s,
so a hand-in that arrives later is still graded.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

STATUS_FILE = "status.json"


@dataclass
class _Thread:
    name: str
    target: object
    thread: threading.Thread | None = None
    restarts: int = 0
    next_start: float = 0.0
    error: str | None = None


@dataclass
class Supervisor:
    log: object
    stop: threading.Event = field(default_factory=threading.Event)
    backoff: float = 1.0            # seconds before the first restart; doubled each time, at most 30
    threads: dict[str, _Thread] = field(default_factory=dict)

    def add(self, name: str, target) -> None:
        self.threads[name] = _Thread(name, target)

    def _run(self, entry: _Thread) -> None:
        try:
            entry.target()
        except BaseException as exc:  # noqa: BLE001 - the supervisor says it and starts the thread again
            entry.error = f"{type(exc).__name__}: {exc}"

    def _start(self, entry: _Thread) -> None:
        entry.thread = threading.Thread(target=self._run, args=(entry,), name=entry.name, daemon=True)
        entry.thread.start()

    def start(self) -> None:
        for entry in self.threads.values():
            self._start(entry)

    def check(self) -> None:
        """Start again every thread that ended while the service runs (after its back-off)."""
        now = time.monotonic()
        for entry in self.threads.values():
            if self.stop.is_set() or entry.thread is None or entry.thread.is_alive():
                continue
            if entry.next_start == 0.0:
                wait = min(30.0, self.backoff * 2.0 ** entry.restarts)
                entry.next_start = now + wait
                self.log(f"thread {entry.name} died ({entry.error or 'returned'}); starting it again in {wait:g} s")
            elif now >= entry.next_start:
                entry.restarts += 1
                entry.next_start, entry.error = 0.0, None
                self._start(entry)

    def restarts(self) -> int:
        return sum(e.restarts for e in self.threads.values())

    def alive(self) -> list[str]:
        return [e.name for e in self.threads.values() if e.thread is not None and e.thread.is_alive()]

    def join(self) -> None:
        for entry in self.threads.values():
            if entry.thread is not None:
                entry.thread.join()


def status(counts, depth: dict, threads: Supervisor) -> dict:
    """What the status line and status.json say: the last scan, its work, the queue, the threads."""
    return {"time": time.time(), "last_scan_ago_s": round(time.time() - counts.last_scan, 1) if counts.last_scan
            else None, "scan": {k: round(v, 3) if isinstance(v, float) else v for k, v in vars(counts).items()},
            "queue": depth, "threads_alive": len(threads.alive()), "threads": len(threads.threads),
            "restarts": threads.restarts()}


def status_line(info: dict) -> str:
    scan, queue = info["scan"], info["queue"]
    oldest = queue.get("oldest_pending_s")
    return (f"status: last scan {info['last_scan_ago_s']} s ago ({scan['pass_seconds']:.3f} s; parsed "
            f"{scan['pass_parsed']}, judged {scan['pass_judged']} this pass; {scan['listed']} folders listed, "
            f"{scan['parsed']} parsed and {scan['judged']} judged so far, {scan['found']} hand-ins, "
            f"{scan['ignored']} ignored, {scan['watched']} unfinished watched, {scan['backlog']} waiting); queue: "
            f"{queue['pending']} pending (oldest {'-' if oldest is None else f'{oldest:.1f} s'}), "
            f"{queue['running']} running; threads {info['threads_alive']}/{info['threads']} alive, "
            f"{info['restarts']} restarts")


def write_status(folder: Path, info: dict) -> None:
    """status.json in the service's private folder, replaced at once (doctor reads it)."""
    tmp = folder / f".{STATUS_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(info, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, folder / STATUS_FILE)


def read_status(folder: Path) -> dict | None:
    try:
        return json.loads((folder / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
