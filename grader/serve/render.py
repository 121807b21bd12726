"""Feedback pages rendered in a process of their own, with a size and a time limit.

    renderer = Renderer()                              # one per worker thread; its process starts at once
    ok = renderer.render(nb, resources, dest, extra)   # False: too big or too slow (give the short page)
    renderer.close()

A page is nbgrader's feedback template over the student's notebook (grade/feedback.py): a student who hands
in a 1 MB cell, or markdown that nbconvert takes minutes over, must not hold anything the others need. So
the service renders outside its shared lock, one page at a time per worker, in a spawned child process
(its imports done once): a notebook with more than MAX_SOURCE characters of cells or MAX_CELLS cells is not
rendered at all, a page larger than MAX_PAGE bytes is not kept, and a page that takes longer than SECONDS
kills the child (the next page starts a new one). In each of those cases the caller gives the student the
short page instead (deliver.short_page): the score, and why there is no more.
"""
from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

MAX_SOURCE = 200_000     # characters of all cells' source (exercise 7, the longest notebook: about 43,000)
MAX_CELLS = 1_000        # exercise 7: about 100
MAX_PAGE = 8_000_000     # bytes of one page
SECONDS = 60.0


def too_big(nb) -> str | None:
    """Why the notebook gets the short page without being rendered, or None."""
    cells = nb.get("cells", [])
    if len(cells) > MAX_CELLS:
        return f"notebook 有 {len(cells)} 个单元格（上限 {MAX_CELLS}）"
    size = sum(len(c.get("source", "")) for c in cells)
    if size > MAX_SOURCE:
        return f"notebook 的单元格一共有 {size} 个字符（上限 {MAX_SOURCE}）"
    return None


def _serve(conn) -> None:
    """The child: render each page it is sent, answer ("ok", size) or ("error", why); stop on None."""
    from grader.grade.feedback import write_feedback

    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):   # the service is gone
            return
        if request is None:
            return
        nb, resources, dest, extra = request
        try:
            write_feedback(nb, resources, Path(dest), extra=extra)
            conn.send(("ok", os.path.getsize(dest)))
        except Exception as exc:  # noqa: BLE001 - this page is not rendered; the child serves the next
            conn.send(("error", f"{type(exc).__name__}: {exc}"[:300]))


class Renderer:
    def __init__(self, seconds: float = SECONDS, serve=None):
        self.seconds, self._target = seconds, serve or _serve
        self._proc = self._conn = None
        self.why = ""                 # why the last render gave no page
        self._spawn()

    def _spawn(self) -> None:
        context = multiprocessing.get_context("spawn")    # not fork: the service has threads and open connections
        self._conn, child = context.Pipe()
        self._proc = context.Process(target=self._target, args=(child,), name="agentrl-feedback", daemon=True)
        self._proc.start()
        child.close()

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join()
            self._conn.close()
        self._proc = self._conn = None

    def render(self, nb, resources: dict, dest: Path, extra=()) -> bool:
        """The page into dest; False (dest not written or removed) when the short page must do instead."""
        self.why = too_big(nb) or ""
        if self.why:
            return False
        if self._proc is None or not self._proc.is_alive():
            self._kill()
            self._spawn()
        self._conn.send((nb, resources, str(dest), tuple(extra)))
        if not self._conn.poll(self.seconds):
            self._kill()              # still rendering: killed, the next page gets a fresh child
            self.why = f"生成反馈页超过了 {self.seconds:g} 秒"
            dest.unlink(missing_ok=True)
            return False
        try:
            answer, detail = self._conn.recv()
        except (EOFError, OSError):   # the child died (out of memory, killed)
            self._kill()
            answer, detail = "error", "生成反馈页的进程意外结束"
        if answer != "ok":
            self.why = f"生成反馈页时出错（{detail}）"
        elif detail > MAX_PAGE:
            self.why = f"反馈页有 {detail} 字节（上限 {MAX_PAGE}）"
        if self.why:
            dest.unlink(missing_ok=True)
            return False
        return True

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
                self._proc.join(timeout=5)
            except OSError:
                pass
        self._kill()
