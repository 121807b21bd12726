"""A kernel's reply read within half a second even when its wake-up is lost (the book build's and the tests' kernels).

nbclient waits for a cell's reply with ONE poll of the kernel's shell socket, as long as the cell's timeout (300 s in
the book build). When a cell shows a figure in an Output widget (exercise 4's playground does), nbclient's model of
that widget sends its state back to the kernel on the same shell socket while the poll is pending, and now and then
the reply that arrives next does not wake the poll: the kernel has answered and sits idle, nbclient sees the reply
only when its poll times out, and goes on as if nothing had happened. Measured on this 2-core machine under load:
8 of ~100 such cells waited out their timeout; none of ~300 without the widget's send-back, nor of ~600 other cells;
every time, the reply was there, unread, at the deadline (tests/test_rollout_playground.py waited 119 s of its 120).

get_msg_in_slices waits in polls of SLICE seconds instead: every new poll looks at the socket's events first, so a
reply that came without a wake-up is read within SLICE seconds. use_in_slices() puts it on jupyter_client's async
channels in this process (the book build: execution_cache.setup); tests/course.py subclasses it with a watchdog.
"""
from __future__ import annotations

import time

SLICE = 0.5   # seconds of one poll


async def get_msg_in_slices(self, timeout: float | None = None):
    """AsyncZMQSocketChannel.get_msg, polling in slices. A channel's `watch` (if any) is asked between them; once it
    says the wait is over its limit, this gives up as a poll that timed out does (Empty), and nbclient stops the
    run the way it stops a cell past its timeout (the watch keeps what to say)."""
    from queue import Empty

    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = SLICE if deadline is None else max(0.0, min(SLICE, deadline - time.monotonic()))
        if await self.socket.poll(int(step * 1000)):
            return await self._recv()
        watch = getattr(self, "watch", None)
        if watch is not None and watch.over(getattr(self, "name", "kernel")):
            raise Empty
        if deadline is not None and time.monotonic() >= deadline:
            raise Empty


def use_in_slices() -> None:
    from jupyter_client.channels import AsyncZMQSocketChannel

    AsyncZMQSocketChannel.get_msg = get_msg_in_slices
