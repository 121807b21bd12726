"""Run one Jupyter kernel per notebook execution inside a bubblewrap sandbox, at the isolation level this
machine gives the grader: one cgroup v2 or v1 group per notebook, or, where the grader may not create
groups (a pod, a Slurm step), one notebook at a time inside the job's own limits.

This is trusted code: it runs in the grading process, never inside the sandbox. The student code
inside the kernel is treated as hostile.

    sandbox = Sandbox(package_root, SandboxLimits(memory_mb=2048))   # isolation="auto": the best level here
    with sandbox.session(workdir) as session:          # workdir: an empty folder, the kernel's cwd
        km = session.kernel_manager()                   # fresh AsyncKernelManager, not started
        ExecutePreprocessor(timeout=120).preprocess(nb, resources, km=km)   # or NotebookClient(nb, km=km)
    session.report.cause_zh()                           # e.g. "内存超过上限（2048 MB），内核被系统终止"

The parts, one file each:
    levels.py     the isolation levels (cgroup2, cgroup1, job, none): which one runs here, why not a better
                  one, and the process's resource control at each
    doctor.py     the level a run uses (or a refusal with the ways forward), said out loud; `python -m grader
                  doctor`: each guarantee at the level, the commands that fix what is missing
    control.py    resource control, one interface: a session's group (limits, processes, what it used)
    cgroup_v2.py  … one cgroup v2 leaf per session (root, or a user with a delegated subtree)
    cgroup_v1.py  … one cgroup v1 group per controller and session (root)
    job.py        … no group: one notebook at a time in the job's or pod's own limits, PID namespaces
    mounts.py     tmpfs capped in bytes and inodes (the working folder, the scratch space)
    userns.py     a normal user's grader re-enters itself as root of a user namespace of its own
    bwrap.py      the bubblewrap command: namespaces, the read-only file system, the environment, fonts
    host.py       paths and state shared by every sandbox of this host (private folders, live sessions)
    limits.py     SandboxLimits (what a session may use) and SessionReport (what it used, why it died)
    session.py    Sandbox (shared by sessions) and Session (one kernel run: enter, kill, clean up, report)
    kernel.py     the kernel manager nbclient drives: it launches the session's command in the sandbox
    sweep.py      clean-up after crashed graders

How it works
------------
* `Session.kernel_manager()` returns a `SandboxKernelManager` (an `AsyncKernelManager` subclass). Its
  kernel command is `/bin/sh -c LAUNCHER …`: the tiny POSIX-sh launcher writes its own PID into the
  session's cgroup (none at the `job` level), sets RLIMIT_CORE/AS/FSIZE/CPU with `ulimit`, pins itself with
  sched_setaffinity where no cpuset does it, sets its oom_score_adj at the `job` level, ignores SIGINT
  (`trap '' INT`, so nbclient's interrupt, a SIGINT to the whole process group, does not kill bwrap) and
  then `exec`s bwrap, which runs `python -m ipykernel_launcher -f CONN` inside (under `prlimit --nproc` at
  the `job` level). No `preexec_fn` (unsafe with threads), no extra interpreter start.
* bwrap: `--unshare-all` (user, ipc, pid, net, uts, cgroup namespaces; the network has only `lo`),
  `--disable-userns` (no nested user namespaces), `--die-with-parent`, `--cap-drop ALL`. Read-only:
  `/usr` (+ the `/bin` `/lib` `/lib64` `/sbin` links), `/etc/ld.so.cache`, `/etc/fonts`,
  `/etc/alternatives`, a generated `/etc/passwd` + `/etc/group`, the venv and the base interpreter it
  links to, the package root at `/opt/agentrl`, the prebuilt matplotlib font list, and `/dev` itself.
  Writable, and every one of them a tmpfs capped in bytes and inodes: the working folder (at
  `/submission`, the kernel's cwd) and the session's scratch tmpfs, whose folders are `/tmp`, `/dev/shm`,
  the private `$HOME` (`/home/student`) and the connection-file folder (same path as on the host: client
  and kernel must agree on the IPC socket paths). Then `--remount-ro /`, and `--clearenv` then PATH,
  HOME, IPYTHONDIR, MPLCONFIGDIR, LANG, PYTHONPATH, PYTHONDONTWRITEBYTECODE. The options reach bwrap
  through a pipe (`--args FD`): /proc/1/cmdline inside stays short (but /proc/self/mountinfo still names
  the host paths of the binds, e.g. the workdir's).
* The two tmpfs are mounted by the grader on host folders (root, or root of the user namespace a normal
  user's grader re-enters, userns.py): nothing the notebook writes reaches a disk, and at exit they are
  unmounted with everything in them. While the session is open the host sees the files in `workdir`.
* CPU: each session gets `cpu_cores` of CPU time (cgroup quota) and is pinned to the `ceil(cpu_cores)`
  cores the fewest live sessions use: a notebook that starts fifty busy processes slows down itself, not
  a neighbour. At the `job` level one notebook runs at a time.
* Transport: ZMQ over IPC sockets in the session's private folder (TCP cannot cross the network namespace).
* Exit (`Session.__exit__`, also after exceptions): SIGKILL every process of the session (cgroup.kill, or
  the PID namespace's init at the `job` level), reap the launcher, close the manager's and its clients'
  ZMQ sockets/contexts, read the group's counters into `Session.report`, remove the group, unmount both
  tmpfs, remove the private folder.

Thread-safety: a `Sandbox` may be shared by threads; each `Session` belongs to the thread that runs its
notebook (`Session.kill()` may be called from any thread, e.g. a wall-clock watchdog). The kernel gets
SIGKILL when the *thread* that started it exits (PR_SET_PDEATHSIG of `--die-with-parent` is tied to
the forking thread): start and finish a session in the same, long-lived thread.

`python -m grader doctor` says which level runs here and what each guarantee rests on; `python -m grader
sandbox --sweep` removes what crashed graders left. `python bench/sandbox_overhead.py` compares sandboxed
and plain kernel start+execute times.
"""
from .doctor import check_available, choose, refusal, report as doctor_report, table as level_table
from .host import INNER_HOME, INNER_IPYTHONDIR, INNER_PACKAGE_ROOT, INNER_WORKDIR
from .levels import CGROUP_LEVELS, LEVELS, NAME_ZH, REQUESTS, controls, probe
from .limits import SandboxLimits, SandboxUnavailable, SessionReport
from .mounts import capped_mounts
from .sweep import sweep_stale

_KERNEL_SIDE = ("Sandbox", "SandboxKernelManager", "Session")


def __getattr__(name: str):
    """The kernel side (session.py, kernel.py: jupyter_client) only when it is asked for: `python -m
    grader` re-enters itself in a user namespace, or refuses, before paying for it."""
    if name in _KERNEL_SIDE:
        from . import kernel, session

        return getattr(session if hasattr(session, name) else kernel, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "SandboxUnavailable", "SandboxLimits", "SessionReport", "Sandbox", "Session", "SandboxKernelManager",
    "check_available", "choose", "probe", "controls", "refusal", "sweep_stale", "capped_mounts", "doctor_report",
    "level_table",
    "LEVELS", "CGROUP_LEVELS", "NAME_ZH", "REQUESTS", "INNER_HOME", "INNER_IPYTHONDIR", "INNER_PACKAGE_ROOT",
    "INNER_WORKDIR",
]
