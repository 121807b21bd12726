"""The book build's kernels talk to it over Unix sockets (zmq's IPC transport), not over TCP on 127.0.0.1.

ipykernel 7 logs at every start of a kernel reached over TCP without CurveZMQ keys "Kernel is running over TCP
without encryption ..." on the kernel's stderr: `make book` printed it once per executed page (8 times). The
warning is right: any local user of the machine can connect to a TCP port on 127.0.0.1. An IPC socket is a file
in the user's Jupyter runtime folder (made 0700): only the user reaches it, so the warning has no cause left, and
any other warning of the kernel still shows. jupyter-cache (myst-nb's cache mode) makes its NotebookClient with no
way to configure the kernel manager, so use_ipc() sets the transport of each kernel manager nbclient makes in this
process, before the kernel starts. Where zmq has no IPC (Windows), or the socket's path would be longer than a
Unix socket's address allows, the kernel keeps TCP (and ipykernel keeps saying so).
"""
from __future__ import annotations

import os
import sys
import uuid

SOCKET_PATH_MAX = 100   # sun_path is 108 bytes on Linux, 104 on macOS; the transport appends "-<n>" per channel


def ipc_prefix() -> str | None:
    """A fresh absolute path prefix for one kernel's sockets in the Jupyter runtime folder; None where IPC won't do."""
    if sys.platform == "win32":
        return None
    from jupyter_core.paths import jupyter_runtime_dir

    runtime = jupyter_runtime_dir()
    os.makedirs(runtime, mode=0o700, exist_ok=True)
    prefix = os.path.join(os.path.abspath(runtime), f"kernel-{uuid.uuid4()}-ipc")
    return prefix if len(prefix.encode()) + 3 <= SOCKET_PATH_MAX else None


def use_ipc() -> None:
    """Every kernel nbclient starts in this process listens on IPC sockets (module docstring)."""
    from nbclient import NotebookClient

    make = NotebookClient.create_kernel_manager
    if getattr(make, "ipc_transport", False):
        return

    def create_kernel_manager(self):
        km = make(self)
        prefix = ipc_prefix()
        if prefix is not None and not km.has_kernel:
            km.transport, km.ip = "ipc", prefix     # an absolute path: the kernel runs in the page's folder
        return km

    create_kernel_manager.ipc_transport = True
    NotebookClient.create_kernel_manager = create_kernel_manager
