"""The hub's folders as the grading service needs them: checked before it starts, and by `doctor`.

    findings = check(Layout(exchange, course, state, db_url_file, per_user, instructor))
    raise SystemExit(refusal(findings))     # if any: each problem, and the exact chown/chmod that fixes it

"The grader" is root, the account the service runs as, or the instructor's account (--instructor). What a
student could do with each folder if it were otherwise, and the rule (course.EXCHANGE_MODES, PRIVATE_MODE):

  every folder above these     only the grader may write it (or it is sticky, as /tmp): else a student
                               renames it and puts a folder of her own in its place
  the exchange root 1777       sticky: nobody renames or replaces the course's folder in it (students must
                               write the root: nbgrader checks that before every command)
  <root>/<course>, outbound    0755, the grader's: nobody changes the release or plants links
  inbound 3733, the grader's   nobody lists it (a hand-in's folder name is what keeps it apart); the
                               sticky bit: nobody renames or removes another's folder by its name
  feedback 0711, the grader's  nobody lists the pages; a page opens only by its name (md5 of the
                               hand-in's secret): each student finds only their own
  the course folder 0700       the solutions, hidden tests, hand-ins, graded copies and the gradebook
  the state folder 0700        the service's copies and reference records (inside the course by default)
  the database URL file 0600   it holds the gradebook's password
  --inbound-per-user DIR 0711  the hub's per-user inbound folders (identity per-user): nobody else's to change
"""
from __future__ import annotations

import os
import pwd
import shlex
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from grader.course import COURSE_ID, EXCHANGE_MODES, PRIVATE_MODE


@dataclass
class Layout:
    exchange: Path
    course: Path
    state: Path | None = None
    db_url_file: Path | None = None
    per_user: Path | None = None
    instructor: str | None = None

    def trusted(self) -> set[int]:
        uids = {0, os.geteuid()}
        if self.instructor:
            uids.add(pwd.getpwnam(self.instructor).pw_uid)
        return uids


@dataclass
class Finding:
    path: Path
    problem: str     # what a student could do (Chinese)
    fix: str         # the shell command that fixes it


def _who() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def _q(path: Path) -> str:
    return shlex.quote(str(path))


def _ancestors(path: Path, trusted: set[int]) -> list[Finding]:
    found = []
    for folder in reversed(path.parents):
        try:
            st = os.stat(folder)
        except OSError:
            continue
        if st.st_uid not in trusted:
            found.append(Finding(folder, f"上级目录属于 uid {st.st_uid}：它的主人能把下面的目录整个换掉",
                                 f"chown root {_q(folder)}"))
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            found.append(Finding(folder, "上级目录别人可写（又没有 sticky 位）：学生能把下面的目录改名、换成自己的",
                                 f"chmod go-w {_q(folder)}"))
    return found


STICKY = "没有 sticky 位：知道文件夹名的学生能把别人的提交改名或删掉"


def _folder(path: Path, mode: int, trusted: set[int], why: str, bad: int, sticky: bool = False,
            missing_ok: bool = False) -> list[Finding]:
    """path must be a folder of the grader's without any of the bits in bad (and sticky, if asked)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return [] if missing_ok else [Finding(path, "不存在", "make release EXCHANGE=… COURSE=…（建好这个布局）")]
    if not stat.S_ISDIR(st.st_mode):
        return [Finding(path, "不是目录（可能是链接）", f"rm {_q(path)}（再 make release EXCHANGE=…）")]
    found = []
    if st.st_uid not in trusted:
        found.append(Finding(path, f"属于 uid {st.st_uid}，不是评分服务的：它的主人能随意改动",
                             f"chown {_who()} {_q(path)}"))
    reasons = ([why] if st.st_mode & bad else []) + ([STICKY] if sticky and not st.st_mode & stat.S_ISVTX else [])
    if reasons:
        found.append(Finding(path, f"权限是 {stat.S_IMODE(st.st_mode):04o}：{'；'.join(reasons)}",
                             f"chmod {mode:04o} {_q(path)}"))
    return found


def check(layout: Layout) -> list[Finding]:
    """Everything a student could read, rename or replace (see the module docstring); [] if nothing."""
    trusted = layout.trusted()
    exchange, course = layout.exchange.resolve(), layout.course.resolve()
    found = _ancestors(exchange, trusted) + _ancestors(course, trusted)
    try:
        root_mode = os.stat(exchange).st_mode
    except OSError:
        root_mode = 0
    if root_mode & 0o002 and not root_mode & stat.S_ISVTX:
        found.append(Finding(exchange, "所有人可写但没有 sticky 位：学生能把课程的文件夹改名，换成自己的，"
                                       "从此收到同学的作业和反馈", f"chmod 1777 {_q(exchange)}"))
    found += _folder(exchange, EXCHANGE_MODES["."], trusted, "", 0)
    rules = {COURSE_ID: ("别人能改动课程的 exchange 目录", 0o022, False),
             f"{COURSE_ID}/outbound": ("别人能改动发布的作业", 0o022, False),
             f"{COURSE_ID}/inbound": ("学生能列出所有提交（文件夹名就是找到别人提交的钥匙）", 0o044, True),
             f"{COURSE_ID}/feedback": ("学生能列出所有反馈页，打开每个同学的（里面有代码）", 0o066, False)}
    for rel, (why, bad, sticky) in rules.items():
        found += _folder(exchange / rel, EXCHANGE_MODES[rel], trusted, why, bad, sticky,
                         missing_ok=rel.endswith("feedback"))
    found += _folder(course, PRIVATE_MODE, trusted, "学生能读到参考答案、隐藏测试、同学的提交和评过的副本", 0o077)
    if layout.state is not None and course not in layout.state.resolve().parents:
        found += _ancestors(layout.state.resolve(), trusted)
        found += _folder(layout.state.resolve(), PRIVATE_MODE, trusted, "学生能读到服务的副本和参考记录", 0o077,
                         missing_ok=True)
    if layout.per_user is not None:
        found += _ancestors(layout.per_user.resolve(), trusted)
        found += _folder(layout.per_user.resolve(), 0o711, trusted, "学生能改动按用户分开的 inbound", 0o022)
    if layout.db_url_file is not None:
        path = layout.db_url_file.resolve()
        found += _ancestors(path, trusted)
        try:
            st = os.stat(path)
            if st.st_uid not in trusted:
                found.append(Finding(path, f"属于 uid {st.st_uid}", f"chown {_who()} {_q(path)}"))
            if st.st_mode & 0o077:
                found.append(Finding(path, f"权限是 {stat.S_IMODE(st.st_mode):04o}：别人能读到成绩册的密码",
                                     f"chmod 0600 {_q(path)}"))
        except OSError as exc:
            found.append(Finding(path, f"读不到（{exc.strerror}）", f"ls -l {_q(path)}"))
    unique = {}
    for f in found:
        unique.setdefault((f.path, f.fix), f)
    return list(unique.values())


def refuse_unsafe(layout: Layout, identity: str = "accounts") -> None:
    """SystemExit with the fixes if a student could read, rename or replace any folder the service trusts. A
    missing course folder is made first, private (its parent is checked like every other folder)."""
    from grader.serve.identity import sees_host_uids

    if identity == "accounts" and not sees_host_uids():
        raise SystemExit("--identity accounts needs the service to see the students' accounts: inside the user "
                         "namespace a normal user's grader runs in, every student's folder looks like nobody's. Run "
                         "the service as root (a JupyterHub managed service of a hub that runs as root is), or choose "
                         "--identity per-user or names (grader/serve/identity.py says what each guarantees).")
    if not sees_host_uids():
        return   # checked by `python -m grader serve` before it entered the namespace (owners look wrong in it)
    course = layout.course.resolve()
    if not course.exists() and course.parent.is_dir():
        course.mkdir(mode=PRIVATE_MODE)
        os.chmod(course, PRIVATE_MODE)
    findings = check(layout)
    if findings:
        raise SystemExit(refusal(findings))


def lines(findings: list[Finding]) -> list[str]:
    return [f"  ✗ {f.path}：{f.problem}\n      修复 / fix: {f.fix}" for f in findings]


def refusal(findings: list[Finding]) -> str:
    return "\n".join(
        ["评分服务没有启动 / the grading service did not start: 这些目录学生能读、改名或替换"
         "（each lets a student read, rename or replace what the service trusts）:", *lines(findings),
         "改好以后再启动（python -m grader doctor --exchange … --course … 会再检查一遍）；"
         "新的 exchange 和课程目录用 make release EXCHANGE=… COURSE=… 建，就是这个布局。"])


def hub_report(layout: Layout, identity: str = "accounts", db_url: str | None = None) -> tuple[str, bool]:
    """`python -m grader doctor --exchange … --course …`: the layout, what the identity convention guarantees,
    and the service's health (its last status.json; the queue, if the gradebook is given)."""
    from grader.serve.health import read_status
    from grader.serve.identity import GUARANTEES

    findings = check(layout)
    out = [f"JupyterHub 评分服务 / the hub's grading service: exchange {layout.exchange}, course {layout.course}"]
    out += lines(findings) or ["  ✓ 布局：学生读不到答案和别人的提交、反馈，改不了名、换不了目录 / layout safe"]
    out.append(f"  身份 / identity {identity}：{GUARANTEES[identity]}")
    state = (layout.state or layout.course / ".grading-service").resolve()
    info = read_status(state)
    if info is None:
        out.append(f"  服务状态 / service: 还没有运行过（{state} 里没有 status.json）")
    else:
        from grader.serve.health import status_line

        out.append(f"  服务状态 / service ({time.time() - info['time']:.0f} s ago): {status_line(info)}")
    if db_url:
        from grader.course import COURSE_ID
        from grader.serve.queue import Queue

        try:
            queue = Queue(db_url, COURSE_ID)
            try:
                depth = queue.depth()
            finally:
                queue.close()
            oldest = depth["oldest_pending_s"]
            out.append(f"  队列 / queue: {depth['pending']} pending (oldest "
                       f"{'-' if oldest is None else f'{oldest:.1f} s'}), {depth['running']} running")
        except Exception as exc:  # noqa: BLE001 - the doctor says what it could not see
            out.append(f"  队列 / queue: 连不上成绩册（{type(exc).__name__}）")
    return "\n".join(out), not findings
