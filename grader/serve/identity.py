"""Who handed a folder in: the three ways a hub can tell, and what each guarantees.

    identity = Identity("accounts")            # or "per-user" (with per_user=DIR), or "names"
    sources = identity.sources(exchange)       # the inbound folders to watch: [Source(path, user)]
    account = identity.account(arrival, source, st)   # whose hand-in (a key for the limits), or None: nobody's
    owner = identity.owner(arrival, source)    # the uid its folder and files must belong to (None: not checked)

accounts   One OS account per student (the hub as root with LocalProcessSpawner or SystemdSpawner; nbgrader
           names the student after the account). The folder and every file read must belong to the account
           named like the student: nobody hands in as another, nor swaps a file into another's folder. The
           default.
per-user   docker-stacks' convention: every lab runs as the same account (jovyan) in a container of its own,
           so files cannot tell students apart. The hub mounts each user's own folder DIR/<hub user> as the
           container's inbound (DockerSpawner or KubeSpawner volumes); a hand-in counts only for the user whose
           folder it is in, and its name must say that user. A student sees no one else's folder at all.
names      The folder's name is believed. Any student can hand in as any other: only for a class that does
           not attack itself (or labs that all run as one account, as in tests/test_hub.py).
"""
from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

from grader.course import COURSE_ID
from grader.grade.submissions import id_problem
from grader.serve.inbound import Arrival

MODES = ("accounts", "per-user", "names")
GUARANTEES = {
    "accounts": "每个学生一个系统账户：提交文件夹和里面读到的每个文件都必须属于同名账户，冒充不了别人，"
                "也换不了别人文件夹里的文件",
    "per-user": "所有学生同一个系统账户（jovyan），每人一个容器：hub 只把学生自己的 DIR/<用户名> 挂成他的 inbound，"
                "交在谁的文件夹里就算谁的，看不到也碰不到别人的",
    "names": "相信文件夹的名字：任何学生都能以别人的名字交作业"
             "（只适合不互相攻击的班，或所有 lab 都是同一个账户的测试）",
}


@dataclass(frozen=True)
class Source:
    path: Path                 # an inbound folder
    user: str | None = None    # per-user: the hub user whose folder it is

    def key(self, name: str) -> str:
        """The hand-in's name in the queue (unique in the course)."""
        return name if self.user is None else f"{self.user}/{name}"


def sees_host_uids() -> bool:
    """Whether this process sees every account's uid as the machine does (not inside a user namespace of its
    own, where other accounts' files all look like nobody's: a normal user's service runs in one)."""
    try:
        first = open("/proc/self/uid_map", encoding="ascii").readline().split()
    except OSError:
        return True
    return first[:2] == ["0", "0"] and int(first[2]) >= 2 ** 31


class Identity:
    def __init__(self, mode: str = "accounts", per_user: Path | None = None):
        if mode not in MODES:
            raise ValueError(f"identity must be one of {MODES}, not {mode!r}")
        if (mode == "per-user") != (per_user is not None):
            raise ValueError("--identity per-user needs --inbound-per-user DIR (and only it does)")
        self.mode, self.per_user = mode, per_user
        self._names: dict[int, str | None] = {}

    def sources(self, exchange: Path) -> list[Source]:
        if self.mode != "per-user":
            return [Source(exchange / COURSE_ID / "inbound")]
        try:
            with os.scandir(self.per_user) as entries:
                users = sorted(e.name for e in entries
                               if e.is_dir(follow_symlinks=False) and id_problem(e.name) is None)
        except OSError:
            return []
        return [Source(self.per_user / user, user) for user in users]

    def account_name(self, uid: int) -> str | None:
        if uid not in self._names:   # one lookup per uid: bounded by the accounts, not by the folders
            try:
                self._names[uid] = pwd.getpwuid(uid).pw_name
            except KeyError:
                self._names[uid] = None
        return self._names[uid]

    def account(self, arrival: Arrival, source: Source, st: os.stat_result) -> str | None:
        """Who wrote the folder (the key the scanner's limits count by: the OS account, or the hub user whose
        folder it is), or None if it may count for nobody."""
        if not stat.S_ISDIR(st.st_mode):
            return None
        if self.mode == "accounts" and self.account_name(st.st_uid) != arrival.student:
            return None
        if self.mode == "per-user":
            return source.user if arrival.student == source.user else None
        return f"uid {st.st_uid}"     # names: 100,000 made-up names of one account are still one account

    def owner(self, arrival: Arrival) -> int | None:
        """The uid the hand-in's folder and files must belong to; None where files cannot tell (per-user, names).
        A student without an account gets -1, which no file has."""
        if self.mode != "accounts":
            return None
        try:
            return pwd.getpwnam(arrival.student).pw_uid
        except (KeyError, ValueError, UnicodeError):
            return -1
