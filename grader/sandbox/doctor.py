"""The isolation level a run grades at, said out loud. `python -m grader doctor`: the level this machine
gives the grader, whether each guarantee of the table in book/guide_instructors.md holds at it, and, where something
is missing, the command that fixes it on this kind of machine. `choose(request)` picks the level a run uses: "auto"
(the default) takes the best there is and refuses anything below a cgroup level; "cgroup" asks for either
cgroup level, "job" and "none" (or a level's exact name) for that level, and each refuses if it cannot run
here, with the ways forward. Never silently less. `make grade` prints the table first, for its level."""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from .host import host_uid, real_root
from .levels import CGROUP_LEVELS, LEVELS, NAME_ZH, REQUESTS, Probe, control_for, probe
from .limits import SandboxLimits, SandboxUnavailable

GUARANTEES = ("网络关闭", "内存上限", "进程数上限", "CPU 份额", "磁盘和文件数", "不留进程", "别的学生不可读",
              "答案代码不在")


@dataclass
class Line:
    guarantee: str
    holds: bool
    how: str


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def guarantees(level: str, limits: SandboxLimits | None = None) -> list[Line]:
    """What each guarantee rests on at `level`, and whether it holds (computed where the machine decides)."""
    lim = limits or SandboxLimits()
    disk = (f"工作目录是 tmpfs（{lim.workdir_mb} MB、{lim.workdir_inodes} 个文件和文件夹），/tmp、/dev/shm、HOME "
            f"和连接文件共用一个 tmpfs（{lim.tmp_mb} MB、{lim.tmp_inodes} 个）；沙箱里没有别的可写目录")
    net = "bubblewrap 的网络命名空间：沙箱里只有 lo"
    others = "bubblewrap 只挂载这一份的工作目录和只读的解释器、课程包；结束时整个 tmpfs 卸掉"
    answers = "沙箱里的课程包副本不含本题的参考答案"
    if level in CGROUP_LEVELS:
        control = control_for(level)
        v2 = level == "cgroup2"
        pin = "cpuset 固定在核上" if control.pins_cpus else "sched_setaffinity 固定核（学生代码能改回，配额不变）"
        return [
            Line("网络关闭", True, net),
            Line("内存上限", True,
                 f"{'memory.max' if v2 else 'memory.limit_in_bytes'} = {lim.memory_mb} MB，不能用 swap"),
            Line("进程数上限", True, f"pids.max = {lim.pids}（线程也算）"),
            Line("CPU 份额", True, f"{'cpu.max' if v2 else 'cpu.cfs_quota_us'}：最多 {lim.cpu_cores:g} 个核；{pin}"),
            Line("磁盘和文件数", True, disk),
            Line("不留进程", True,
                 "结束时" + ("cgroup.kill 杀掉组里全部进程" if v2 else "逐个 SIGKILL 组里的进程，直到组空")),
            Line("别的学生不可读", True, others),
            Line("答案代码不在", True, answers),
        ]
    if level == "job":
        from .job import job_limits

        job = job_limits()
        job_memory = job.get("memory.max", "")
        job_pids = job.get("pids.max", "")
        as_mb = lim.effective_address_space_mb
        root = real_root()
        return [
            Line("网络关闭", True, net),
            Line("内存上限", bool(as_mb), (f"每个进程的地址空间 {as_mb} MB（RLIMIT_AS）" if as_mb else "没有 RLIMIT_AS")
                 + (f"；整个作业 memory.max = {job_memory}" if job_memory else "；读不到作业自己的内存上限")
                 + "；内核进程是作业里 OOM 时最先被杀的（oom_score_adj 1000）"),
            Line("进程数上限", not root,
                 (f"RLIMIT_NPROC = {lim.pids}，只数沙箱自己用户命名空间里的进程" if not root else
                  "以真正的 root 运行时 RLIMIT_NPROC 不起作用")
                 + (f"；整个作业 pids.max = {job_pids}" if job_pids else "")),
            Line("CPU 份额", True, "一次只评一份，没有同时运行的邻居；固定在一个核上，RLIMIT_CPU "
                 f"{lim.cpu_seconds} 秒"),
            Line("磁盘和文件数", True, disk),
            Line("不留进程", True, "每份 notebook 是 bubblewrap 的一个 PID 命名空间："
                 "杀掉它的 1 号进程，里面的进程全部结束；下一份开始前确认一个都不剩"),
            Line("别的学生不可读", True, others + "；一次只评一份"),
            Line("答案代码不在", True, answers),
        ]
    return [Line(g, False, "没有沙箱：学生代码以评分用户的身份在这台机器上运行") for g in GUARANTEES]


# ---------------------------------------------------------------- the ways forward


def _kind() -> dict[str, bool]:
    status = _read("/proc/self/status")
    return {
        "kubernetes": "KUBERNETES_SERVICE_HOST" in os.environ,
        "slurm": "SLURM_JOB_ID" in os.environ,
        "container": os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")
        or "KUBERNETES_SERVICE_HOST" in os.environ,
        "seccomp": any(line.split()[-1] == "2" for line in status.splitlines() if line.startswith("Seccomp:")),
        "systemd_user": os.path.isdir(f"/run/user/{host_uid()}/systemd"),
        "apparmor_userns": _read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1",
        "userns_clone_off": _read("/proc/sys/kernel/unprivileged_userns_clone") == "0",
        "max_userns_zero": _read("/proc/sys/user/max_user_namespaces") == "0",
    }


APPARMOR_PROFILE = """sudo tee /etc/apparmor.d/bwrap >/dev/null <<'EOF'
abi <abi/4.0>,
include <tunables/global>
profile bwrap /usr/bin/bwrap flags=(unconfined) {
  userns,
  include if exists <local/bwrap>
}
EOF
sudo apparmor_parser -r /etc/apparmor.d/bwrap"""

DELEGATE_DROP_IN = """sudo mkdir -p /etc/systemd/system/user@.service.d
printf '[Service]\\nDelegate=memory pids cpu cpuset\\n' | sudo tee /etc/systemd/system/user@.service.d/delegate.conf
sudo systemctl daemon-reload    # 然后重新登录"""


def fixes(found: Probe) -> list[str]:
    """What would raise this machine's level, as commands for this kind of machine (Chinese)."""
    kind, out = _kind(), []
    missing = found.why_not.get("job", ("", ""))[0]
    if found.best == "none":
        if "not installed" in missing:
            out.append("安装 bubblewrap：sudo apt-get install -y bubblewrap"
                       "（Fedora/RHEL：sudo dnf install -y bubblewrap）")
        elif "namespaces" in missing:
            if kind["apparmor_userns"]:
                out.append("Ubuntu ≥ 23.10 用 AppArmor 限制了用户命名空间，给 bubblewrap 一个允许它的配置：\n"
                           + APPARMOR_PROFILE)
            if kind["userns_clone_off"]:
                out.append("打开非特权用户命名空间：sudo sysctl -w kernel.unprivileged_userns_clone=1")
            if kind["max_userns_zero"]:
                out.append("允许用户命名空间：sudo sysctl -w user.max_user_namespaces=15000")
            if kind["container"] and kind["seccomp"]:
                out.append("容器的 seccomp 配置（Kubernetes 的 RuntimeDefault、Docker 的默认配置）"
                           "不允许 bubblewrap 建命名空间："
                           "评分容器需要 seccompProfile Unconfined（或允许 unshare/clone 的 Localhost 配置），并且 "
                           "hostUsers: false 加 procMount: Unmasked，见 grader/cluster/kubernetes/grade-job.yaml")
        elif "user namespace of its own" in missing:
            out.append("用 python -m grader（或 make grade）启动评分：它会自己进入一个用户命名空间")
        elif missing:
            out.append("以 root 运行，或者在自己的用户命名空间里运行（python -m grader 会自己进入）")
        return out
    if found.best in CGROUP_LEVELS:
        return out
    v2_reason = found.why_not.get("cgroup2", ("", ""))[0]
    if "v2 only" in found.why_not.get("cgroup1", ("", ""))[0]:
        if kind["kubernetes"]:
            out.append("Kubernetes 的 pod 里通常不能建 cgroup：grader/cluster/kubernetes/grade-job.yaml 用作业级"
                       "（--isolation=job，每个 pod 一次一份）")
        elif kind["slurm"]:
            out.append("Slurm 不把 cgroup 委派给作业：用作业级（--isolation=job，每个数组任务一次一份，"
                       "grader/cluster/slurm/grade.sbatch 就是这样做的），或者请管理员在评分节点上以 root 运行")
        elif real_root():
            out.append(f"以 root 运行却建不了组：{v2_reason}")
        elif kind["systemd_user"]:
            out.append("在 systemd 给你的委派子树里运行：systemd-run --user --scope -p Delegate=yes "
                       "make grade SUBMISSIONS=…")
        else:
            out.append("这台机器没有为你运行 systemd 用户实例：请管理员把 cgroup 委派给用户，\n" + DELEGATE_DROP_IN
                       + "\n之后：systemd-run --user --scope -p Delegate=yes make grade SUBMISSIONS=…")
    elif not real_root():
        out.append("cgroup v1 的组只有 root 能建：sudo make grade SUBMISSIONS=…")
    if "job" not in found.why_not:
        out.append("或者明确接受作业级隔离（一次一份，表里写明哪些保证成立）：make grade ISOLATION=job "
                   "（python -m grader grade --isolation=job）")
    return out


# ---------------------------------------------------------------- the level a run uses


def choose(request: str = "auto") -> str:
    """The level a run uses for `request` (see the module docstring); SandboxUnavailable names what is missing."""
    if request not in REQUESTS and request not in LEVELS:
        raise ValueError(f"isolation must be one of {', '.join(REQUESTS)} (or exactly {', '.join(LEVELS)})")
    if request == "none":
        return "none"
    found = probe()
    if request in ("job", *CGROUP_LEVELS):
        if request in found.why_not:
            raise unavailable(found, request)
        return request
    if found.best in CGROUP_LEVELS:
        return found.best
    raise unavailable(found, "cgroup")


def unavailable(found: Probe, wanted: str) -> SandboxUnavailable:
    """The refusal: what is missing for `wanted`, what this machine does give, and the ways forward."""
    reasons = [found.why_not[level] for level in (CGROUP_LEVELS if wanted == "cgroup" else (wanted,))
               if level in found.why_not]
    en = "; ".join(dict.fromkeys(r[0] for r in reasons))
    zh = "；".join(dict.fromkeys(r[1] for r in reasons))
    lines = [f"{en} / {zh}",
             f"这台机器上能用的最高隔离级别 / the best level here: {found.best}（{NAME_ZH[found.best]}）"]
    lines += fixes(found)
    return SandboxUnavailable("\n".join(lines))


def refusal(exc: SandboxUnavailable) -> str:
    """What `make grade` says when it grades nothing: what is missing and the ways forward."""
    return (f"无法启动评分沙箱，没有评分 / cannot start the grading sandbox, nothing graded:\n{exc}\n"
            "（python -m grader doctor 列出每一项保证；在不支持的机器上可以显式选择较低的级别：--isolation=job，"
            "或者 --isolation=none / --unsafe-no-sandbox：学生代码将不受隔离，报告里会写明）")


def check_available(request: str = "auto") -> str:
    """The level `request` gives here, or SandboxUnavailable saying what is missing."""
    return choose(request)


# ---------------------------------------------------------------- the report


def machine_line() -> str:
    from .cgroup_v2 import unified

    who = "root" if real_root() else (f"普通用户 uid {host_uid()}"
                                      + ("（在自己的用户命名空间里）" if os.geteuid() == 0 else ""))
    return f"本机：Linux {platform.release()}，cgroup {'v2' if unified() else 'v1'}，以{who}运行"


def table(level: str, limits: SandboxLimits | None = None) -> str:
    lines = [f"隔离级别 / isolation level: {level}（{NAME_ZH[level]}）"]
    for line in guarantees(level, limits):
        lines.append(f"  {'✓' if line.holds else '✗'} {line.guarantee}：{line.how}")
    return "\n".join(lines)


def report(limits: SandboxLimits | None = None) -> tuple[str, bool]:
    """(the doctor's text, whether `make grade` runs here without lowering the level)."""
    found = probe()
    lines = ["评分沙箱体检 / grader doctor", machine_line(), table(found.best, limits)]
    better = [lv for lv in ("cgroup2", "cgroup1", "job") if lv in found.why_not]
    if better:
        lines.append("不能用的级别 / levels not available here:")
        lines += [f"  · {lv}：{found.why_not[lv][1]}" for lv in better]
    ways = fixes(found)
    if ways:
        lines.append("怎么办 / how to fix:")
        lines += ["  · " + w.replace("\n", "\n    ") for w in ways]
    ok = found.best in CGROUP_LEVELS
    lines.append("make grade 可以直接运行" if ok else
                 "make grade 会拒绝评分，除非明确选择较低的级别（--isolation=job 或 --isolation=none）")
    return "\n".join(lines), ok
