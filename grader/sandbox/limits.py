"""What a sandbox may use, and what a session report says about what it used."""
from __future__ import annotations

from dataclasses import dataclass, field


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run on this machine; the message says what is missing (English + Chinese)."""


@dataclass(frozen=True)
class SandboxLimits:
    memory_mb: int = 2048                 # the group's memory limit (hard cap; OOM kill); `job`: the job's
    address_space_mb: int | None = None   # RLIMIT_AS; None -> memory_mb + 1536 (torch maps ~1.5 GB)
    pids: int = 64                        # the group's pids.max (counts threads too); `job`: RLIMIT_NPROC
    file_size_mb: int = 64                # RLIMIT_FSIZE
    tmp_mb: int = 256                     # one tmpfs for /tmp, /dev/shm, $HOME and the connection files ...
    tmp_inodes: int = 10_000              # ... of this size and this many files and folders
    cpu_seconds: int = 600                # RLIMIT_CPU per process (SIGXCPU, then SIGKILL)
    workdir_mb: int = 256                 # the working folder: a tmpfs of this size ...
    workdir_inodes: int = 10_000          # ... and this many files and folders
    cpu_cores: float = 1.0                # pinned to ceil(cpu_cores) cores, a quota of cpu_cores of them

    def __post_init__(self) -> None:
        if not isinstance(self.cpu_cores, (int, float)) or not 0.05 <= self.cpu_cores <= 256:
            raise ValueError("SandboxLimits.cpu_cores must be a number of cores between 0.05 and 256")
        for name in ("memory_mb", "pids", "file_size_mb", "tmp_mb", "tmp_inodes", "cpu_seconds", "workdir_mb",
                     "workdir_inodes"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"SandboxLimits.{name} must be a positive int")   # tmpfs size=0 = unlimited
        if self.address_space_mb is not None and self.address_space_mb < 0:
            raise ValueError("SandboxLimits.address_space_mb must be None, 0 (no RLIMIT_AS) or positive")

    @property
    def effective_address_space_mb(self) -> int:
        """RLIMIT_AS in MB; 0 means no RLIMIT_AS."""
        return self.address_space_mb if self.address_space_mb is not None else self.memory_mb + 1536


@dataclass
class SessionReport:
    oom_killed: bool = False
    pids_limit_hit: bool = False
    cpu_limit_hit: bool = False
    file_size_limit_hit: bool = False     # best effort: SIGXFSZ or a workdir file at the cap
    workdir_full: bool = False            # the working folder's tmpfs ran out of bytes or of inodes
    cpu_seconds: float | None = 0.0       # all processes of the session (the group's CPU counter); None: unknown
    peak_memory_mb: float = 0.0           # the group's peak memory (incl. tmpfs pages); 0 at `job` level
    leftover_processes_killed: int = 0    # processes other than bwrap + the kernel alive at exit
    wall_limit_hit: bool = False          # Session(wall_seconds=...) watchdog fired
    kernel_exit_status: int | None = None  # launcher/bwrap exit status if the kernel ended by itself
    workdir_files: int = 0                # entries in the workdir after the run (files, folders)
    workdir_mb: float = 0.0               # bytes of regular files in the workdir after the run
    kernel_log_tail: str = ""             # last bytes of the kernel's stderr (bwrap errors, crashes)
    limits: SandboxLimits = field(default_factory=SandboxLimits)

    # (flag, note): what a hit limit did to the kernel
    _CAUSES = (
        ("oom_killed", "内存超过上限（{memory_mb} MB），内核被系统终止"),
        ("pids_limit_hit", "进程数超过上限（{pids}）"),
        ("cpu_limit_hit", "CPU 时间超过上限（{cpu_seconds} 秒），内核被终止"),
        ("file_size_limit_hit", "写入的文件超过大小上限（{file_size_mb} MB）"),
        ("wall_limit_hit", "运行时间超过上限，内核被终止"),
    )
    # a limit that refuses a write but kills nothing
    _FULL = "工作目录写满了（上限 {workdir_mb} MB、{workdir_inodes} 个文件和文件夹），之后的写入都失败了"

    def _limits(self) -> dict:
        return {k: getattr(self.limits, k)
                for k in ("memory_mb", "pids", "cpu_seconds", "file_size_mb", "workdir_mb", "workdir_inodes")}

    def full_zh(self) -> str | None:
        """A Chinese note if the working folder was full (nothing was killed for it); None otherwise."""
        return self._FULL.format(**self._limits()) if self.workdir_full else None

    def cause_zh(self) -> str | None:
        """A short Chinese note naming why the kernel was killed or limited; None if nothing was hit."""
        parts = [note.format(**self._limits()) for flag, note in self._CAUSES if getattr(self, flag)]
        return "；".join(parts) if parts else None
