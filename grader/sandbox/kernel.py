"""The kernel manager nbclient drives for a Session: its kernel runs in the session's sandbox.

    km = session.kernel_manager()          # a SandboxKernelManager, not started
    ExecutePreprocessor(...).preprocess(nb, resources, km=km)

It launches the session's command (the launcher, then bwrap, then ipykernel; Session._command) with
bwrap's options through a pipe, a clean environment and the kernel's stderr in the session's scratch
space, and registers the process with the session, which kills, reaps and closes everything at its end.
"""
from __future__ import annotations

import os
import subprocess
from typing import Any

from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpec

from .host import BWRAP


class SandboxKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernel runs in its Session's sandbox (IPC transport, fixed command).

    The notebook's own kernelspec is ignored. `start_kernel(cwd=...)` is accepted but the kernel's cwd
    is always the session workdir (seen inside as /submission)."""

    _sbx_session: Any          # the Session (session.py) whose sandbox the kernel runs in
    _sbx_clients: list
    _sbx_opts: int = 0

    @property
    def kernel_spec(self) -> KernelSpec:  # type: ignore[override]
        if self._kernel_spec is None:
            self._kernel_spec = KernelSpec(
                argv=["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                display_name="Python 3 (sandbox)", language="python", interrupt_mode="signal",
                env={}, metadata={})
        return self._kernel_spec

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd, self._sbx_opts = self._sbx_session._command(self.connection_file, list(extra_arguments or []))
        return cmd

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        session = self._sbx_session
        session._check_open()
        kw["env"] = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}   # bwrap --clearenv anyway
        kw["cwd"] = str(session._dir)
        kw["stdout"] = subprocess.DEVNULL
        # bwrap's options go through a pipe (`--args FD`): the sandbox's /proc/1/cmdline then shows
        # "bwrap --args N -- python ...", not the whole mount list.
        i = kernel_cmd.index(BWRAP)
        opts = kernel_cmd[i + 1:i + 1 + self._sbx_opts]
        data = b"".join(a.encode() + b"\0" for a in opts)
        if len(data) > 60000:
            raise RuntimeError("bwrap argument list too long for a pipe")
        r, w = os.pipe()
        try:
            os.write(w, data)
        finally:
            os.close(w)
        kernel_cmd = kernel_cmd[:i + 1] + ["--args", str(r)] + kernel_cmd[i + 1 + self._sbx_opts:]
        kw["pass_fds"] = (r,)
        log = open(session._scratch / "kernel.log", "ab")
        kw["stderr"] = log
        try:
            await super()._async_launch_kernel(kernel_cmd, **kw)
        finally:
            log.close()
            os.close(r)
        proc = self.provisioner.process if self.provisioner is not None else None
        if proc is not None:
            session._register_process(proc)

    def client(self, **kwargs: Any):  # type: ignore[override]
        kc = super().client(**kwargs)
        self._sbx_clients.append(kc)
        return kc
