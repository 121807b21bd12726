"""What a long notebook cell shows while it runs, and the lines that report measured time.

    line = LiveLine("SFT")
    sft(..., progress=line)            # line(done, total, "loss 0.41") after every step
    line.finish("完成")                 # the last state stays: that is what the book page keeps
    measured(f"用时：墙钟 {wall:.1f} s")  # a line whose numbers come from a clock

While it runs, the live line says how long the rest takes at the speed measured so far (elapsed / steps done x
steps left), so a long cell announces its length after its first step. In a notebook the live line is an IPython
display that is replaced (update_display_data), so the executed page keeps only the final line; outside IPython
nothing is printed until finish(). Redraws at most every
`every` seconds, so a step costs nothing measurable.

Everything a clock produced (the live line, which shows elapsed seconds, and every measured() line) is displayed with
MEASURED in its output metadata: two executions of the page differ only there, and in cells tagged "measured"
(tests/test_notebooks_execute.py compares the book build's execution of the page with a second one).
"""
from __future__ import annotations

import time

MEASURED = {"agentrl": "measured"}  # output metadata of a display whose numbers come from a clock


def _display(obj, **kwargs):
    from IPython.display import display

    return display(obj, metadata=MEASURED, **kwargs)


def _in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def measured(text: str, markdown: bool = True) -> None:
    """Show one line (or a Markdown block) whose numbers are measured time, marked as such; print() outside IPython.
    Markdown by default: it wraps on a book page, where a long plain-text line would be cut."""
    if not _in_ipython():
        print(text)
        return
    from IPython.display import Markdown, Pretty

    _display(Markdown(text) if markdown else Pretty(text))


class LiveLine:
    def __init__(self, label: str, every: float = 0.5, expect: str = ""):
        """label: what runs; expect: shown until the first update (e.g. how long it usually takes)."""
        self.label, self.every = label, every
        self.t0 = time.perf_counter()
        self._last = -1e9
        self._handle = None
        self.text = ""
        if _in_ipython():
            self._handle = _display(self._render(f"{label}：开始……" + (f"（{expect}）" if expect else "")),
                                    display_id=True)

    @staticmethod
    def _render(text: str):
        from IPython.display import Pretty

        return Pretty(text)

    def __call__(self, done: int, total: int, info: str = "") -> None:
        now = time.perf_counter()
        if done < total and now - self._last < self.every:
            return
        self._last = now
        self.show(f"{self.label}：{done}/{total}" + (f"，{info}" if info else "") + f"（{now - self.t0:.0f} s"
                  + self._remaining(done, total, now - self.t0) + "）")

    @staticmethod
    def _remaining(done: int, total: int, elapsed: float) -> str:
        """How long the rest takes at the speed measured so far ('' before the first step or after the last)."""
        if not 0 < done < total:
            return ""
        return f"，按目前的速度约还要 {elapsed / done * (total - done):.0f} s"

    def show(self, text: str) -> None:
        self.text = text
        if self._handle is not None:
            self._handle.update(self._render(text), metadata=MEASURED)

    def finish(self, info: str = "完成") -> None:
        text = f"{self.label}：{info}（墙钟 {time.perf_counter() - self.t0:.1f} s）"
        if self._handle is None:
            print(text)
        self.show(text)
