"""Run one Jupyter kernel per notebook execution inside a bubblewrap sandbox with cgroup v1 limits.

This is trusted code: it runs in the grading process, never inside the sandbox. The student code
inside the kernel is treated as hostile.

    sandbox = Sandbox(package_root, SandboxLimits(memory_mb=2048))
    with sandbox.session(workdir) as session:          # workdir: an empty folder, the kernel's cwd
        km = session.kernel_manager()                   # fresh AsyncKernelManager, not started
        ExecutePreprocessor(timeout=120).preprocess(nb, resources, km=km)   # or NotebookClient(nb, km=km)
    session.report.cause_zh()                           # e.g. "内存超过上限（2048 MB），内核被系统终止"

The parts, one file each:
    limits.py     SandboxLimits (what a session may use) and SessionReport (what it used, why it died)
    host.py       paths and state shared by every sandbox of this host (private folders, live sessions)
    bwrap.py      the bubblewrap command: namespaces, the read-only file system, the environment, fonts
    cgroups.py    the session's cgroups (memory, pids, cpuacct, cpu) and its capped working folder
    available.py  check_available(): can this machine run the sandbox, and if not, what is missing
    session.py    Sandbox, Session and the kernel manager nbclient drives

How it works
------------
* `Session.kernel_manager()` returns a `SandboxKernelManager` (an `AsyncKernelManager` subclass). Its
  kernel command is `/bin/sh -c LAUNCHER …`: the tiny POSIX-sh launcher writes its own PID into the
  session's memory, pids, cpuacct, cpu and cpuset cgroups (v1), sets RLIMIT_CORE/AS/FSIZE/CPU with `ulimit`,
  ignores SIGINT (`trap '' INT`, so nbclient's interrupt, a SIGINT to the whole process group, does not
  kill bwrap) and then `exec`s bwrap, which runs `python -m ipykernel_launcher -f CONN` inside. No
  `preexec_fn` (unsafe with threads), no extra interpreter start.
* bwrap: `--unshare-all` (user, ipc, pid, net, uts, cgroup namespaces; the network has only `lo`),
  `--disable-userns` (no nested user namespaces), `--die-with-parent`, `--cap-drop ALL`. Read-only:
  `/usr` (+ the `/bin` `/lib` `/lib64` `/sbin` links), `/etc/ld.so.cache`, `/etc/fonts`,
  `/etc/alternatives`, a generated `/etc/passwd` + `/etc/group`, the venv and the base interpreter it
  links to, the package root at `/opt/agentrl`, the prebuilt matplotlib font list. Size-capped tmpfs
  on `/tmp`, `/dev/shm` and the private `$HOME` (`/home/student`). Read-write only the working folder
  (at `/submission`, the kernel's cwd) and the session's private connection-file folder (same path as
  on the host: client and kernel must agree on the IPC socket paths). Then `--remount-ro /`, and
  `--clearenv` then PATH, HOME, IPYTHONDIR, MPLCONFIGDIR, LANG, PYTHONPATH, PYTHONDONTWRITEBYTECODE.
  The options reach bwrap through a pipe (`--args FD`): /proc/1/cmdline inside stays short (but
  /proc/self/mountinfo still names the host paths of the binds, e.g. the workdir's).
* The working folder: for the session, a tmpfs capped in bytes and inodes (`workdir_mb`,
  `workdir_inodes`) is mounted on `workdir` (nosuid, nodev); nothing the notebook writes reaches the host
  disk, and at exit the tmpfs is unmounted with everything in it. While the session is open the host
  sees the files in `workdir`. The report says whether the folder was full (`full_zh()`).
* CPU: each session is pinned (cpuset) to the `ceil(cpu_cores)` cores the fewest live sessions of this
  machine use, and gets a CFS quota of `cpu_cores` cores: a notebook that starts fifty busy processes
  slows down itself, not a neighbour (with --jobs no larger than the cores, each notebook has its own).
* Transport: ZMQ over IPC sockets in a fresh 0700 folder per session (TCP cannot cross the network
  namespace).
* Exit (`Session.__exit__`, also after exceptions): SIGKILL every process of the session's cgroup
  (repeated until empty; killing the PID namespace's init also takes down everything inside), reap the
  launcher, close the manager's and its clients' ZMQ sockets/contexts, read the cgroup counters into
  `Session.report`, remove the cgroups, the connection folder and the log, unmount the working folder.

Thread-safety: a `Sandbox` may be shared by threads; each `Session` belongs to the thread that runs its
notebook (`Session.kill()` may be called from any thread, e.g. a wall-clock watchdog). The kernel gets
SIGKILL when the *thread* that started it exits (PR_SET_PDEATHSIG of `--die-with-parent` is tied to
the forking thread): start and finish a session in the same, long-lived thread.

`python -m grader sandbox --check` says whether the sandbox runs here; `--sweep` removes stale cgroups,
state folders and working-folder mounts of dead grader processes. `python bench/sandbox_overhead.py`
compares sandboxed and plain kernel start+execute times.
"""
from .available import check_available
from .cgroups import sweep_stale_cgroups, workspace_mounts
from .host import (CGROUP_ROOT, CONTROLLERS, INNER_HOME, INNER_IPYTHONDIR, INNER_PACKAGE_ROOT, INNER_WORKDIR,
                   PARENT_GROUP)
from .limits import SandboxLimits, SandboxUnavailable, SessionReport
from .session import Sandbox, SandboxKernelManager, Session

__all__ = [
    "SandboxUnavailable", "SandboxLimits", "SessionReport", "Sandbox", "Session", "SandboxKernelManager",
    "check_available", "sweep_stale_cgroups", "workspace_mounts", "CGROUP_ROOT", "CONTROLLERS", "INNER_HOME",
    "INNER_IPYTHONDIR", "INNER_PACKAGE_ROOT", "INNER_WORKDIR", "PARENT_GROUP",
]
