"""A live progress line for long notebook cells: one line of text, updated in place, never a growing log.

    line = LiveLine("SFT")
    sft(..., progress=line)            # line(done, total, "loss 0.41") after every step
    line.finish("完成")                 # the last state stays: that is what the book page keeps

In a notebook the line is an IPython display that is replaced (update_display_data), so the executed page
keeps only the final line; outside IPython nothing is printed until finish(). Redraws at most every
`every` seconds, so a step costs nothing measurable.
"""
from __future__ import annotations

import time


class LiveLine:
    def __init__(self, label: str, every: float = 0.5):
        self.label, self.every = label, every
        self.t0 = time.perf_counter()
        self._last = -1e9
        self._handle = None
        self.text = ""
        try:
            from IPython import get_ipython

            if get_ipython() is not None:
                from IPython.display import display

                self._handle = display(self._render(f"{label}：开始……"), display_id=True)
        except ImportError:  # plain Python without IPython: finish() prints
            self._handle = None

    @staticmethod
    def _render(text: str):
        from IPython.display import Pretty

        return Pretty(text)

    def __call__(self, done: int, total: int, info: str = "") -> None:
        now = time.perf_counter()
        if done < total and now - self._last < self.every:
            return
        self._last = now
        self.show(f"{self.label}：{done}/{total}" + (f"，{info}" if info else "") + f"（{now - self.t0:.0f} s）")

    def show(self, text: str) -> None:
        self.text = text
        if self._handle is not None:
            self._handle.update(self._render(text))

    def finish(self, info: str = "完成") -> None:
        text = f"{self.label}：{info}（墙钟 {time.perf_counter() - self.t0:.1f} s）"
        if self._handle is None:
            print(text)
        self.show(text)
