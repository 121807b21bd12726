"""Progress of a grading run: tqdm's bar on a terminal, tqdm's status line every so often elsewhere.

    with Progress(total=210, label="评分") as progress:
        ...
        progress.advance()

On a terminal it is tqdm's own bar (count, rate, ETA). In a log file (Slurm's, a CI log, `make grade >
log`) a bar would be a stream of carriage returns, so it writes tqdm's status line as a plain line every
`every` seconds and at the end.
"""
from __future__ import annotations

import sys
import threading
import time

from tqdm import tqdm


class Progress:
    def __init__(self, total: int, label: str, *, file=None, every: float = 30.0, tty: bool | None = None):
        self.file = file or sys.stderr
        self.tty = self.file.isatty() if tty is None else tty
        self.total, self.label, self.every = total, label, every
        self.done = 0
        self._lock = threading.Lock()
        self._started = self._last = time.monotonic()
        self._bar = tqdm(total=total, desc=label, unit="本", file=self.file, dynamic_ncols=True) if self.tty else None

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            if self._bar is not None:
                self._bar.update(n)
            elif time.monotonic() - self._last >= self.every:
                self._line()

    def _line(self) -> None:
        self._last = time.monotonic()
        meter = tqdm.format_meter(self.done, self.total, self._last - self._started, prefix=self.label, unit="本",
                                  ncols=0)
        print(meter, file=self.file, flush=True)

    def close(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.close()
            else:
                self._line()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
