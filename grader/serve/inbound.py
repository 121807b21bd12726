"""nbgrader's exchange, read by the grader: the submissions in `<exchange>/<course>/inbound/`.

    arrivals = scan(inbound, known=["ex1_format_reward", ...])   # complete submission folders, parsed
    handin = read_handin(inbound, arrival)    # its notebook's bytes, secret and timestamp (or Rejected)

`nbgrader submit` makes `inbound/{student}+{assignment}+{timestamp}+{random}/` (the last part only with
add_random_string, the default), copies the student's files into it, then writes timestamp.txt and
submission_secret.txt (128 hex digits): a folder is complete when its secret is. Everything in inbound is the
students': a name is only trusted as far as it parses (the student id as make grade checks ids, a known
assignment, nbgrader's timestamp), the folder and its files are opened relative to the inbound folder
without following any link (openat with O_NOFOLLOW: a link swapped in for a folder or a notebook is
rejected), only regular files, size-capped. With check_owner the folder must belong to the OS account
named like the student (a shared exchange where each student is an account): nobody hands in as another.
"""
from __future__ import annotations

import os
import pwd
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from nbgrader.utils import parse_utc

from grader.grade.submissions import MAX_NOTEBOOK_BYTES, id_problem

SECRET = re.compile(r"[0-9a-f]{128}")
MAX_SMALL_FILE = 4096


@dataclass(frozen=True)
class Arrival:
    folder: str          # the inbound folder's name
    student: str
    assignment: str
    timestamp: str       # nbgrader's, as written in the name
    submitted_at: float  # the same, seconds since the epoch


@dataclass
class Handin:
    notebook: bytes
    secret: str          # nbgrader's submission_secret.txt: the feedback's file name is derived from it
    timestamp: str


class Rejected(Exception):
    """The folder cannot be graded; the message (Chinese) says why."""


def parse(name: str, known: list[str]) -> Arrival | None:
    """The folder name's parts, or None if it is not a submission of a known assignment by a valid id."""
    parts = name.split("+")
    if len(parts) not in (3, 4):
        return None
    student, assignment, timestamp = parts[:3]
    if assignment not in known or id_problem(student) is not None:
        return None
    try:
        submitted_at = parse_utc(timestamp).timestamp()
    except (ValueError, OverflowError, TypeError):
        return None
    return Arrival(name, student, assignment, timestamp, submitted_at)


def scan(inbound: Path, known: list[str], skip: set[str] = frozenset()) -> list[Arrival]:
    """Complete submission folders in inbound whose names parse, oldest first (names in skip: not looked at)."""
    found = []
    try:
        names = os.listdir(inbound)
    except OSError:
        return []
    for name in names:
        if name in skip:
            continue
        arrival = parse(name, known)
        if arrival is not None and _complete(inbound, name):
            found.append(arrival)
    return sorted(found, key=lambda a: (a.submitted_at, a.folder))


def _complete(inbound: Path, name: str) -> bool:
    try:
        with _folder(inbound, name) as fd:
            return SECRET.fullmatch(_small(fd, "submission_secret.txt")) is not None
    except (OSError, Rejected):
        return False


class _folder:
    """The submission folder opened under inbound without following links: a descriptor to open files in."""

    def __init__(self, inbound: Path, name: str):
        self.inbound, self.name = inbound, name

    def __enter__(self) -> int:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        parent = os.open(self.inbound, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self.fd = os.open(self.name, flags, dir_fd=parent)
        except OSError as exc:
            raise Rejected(f"提交文件夹打不开（{exc.strerror}）：可能被换成了链接") from None
        finally:
            os.close(parent)
        return self.fd

    def __exit__(self, *exc):
        os.close(self.fd)


def _read(folder_fd: int, name: str, limit: int) -> bytes:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder_fd)
    except OSError as exc:
        raise Rejected(f"{name} 打不开（{exc.strerror}）") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise Rejected(f"{name} 不是普通文件：没有打开")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise Rejected(f"{name} 太大（上限 {limit} 字节）")
    return data


def _small(folder_fd: int, name: str) -> str:
    return _read(folder_fd, name, MAX_SMALL_FILE).decode("utf-8", "replace").strip()


def owner_problem(folder_fd: int, student: str) -> str | None:
    """Why the folder is not the student's own (its owner is another account), or None."""
    uid = os.fstat(folder_fd).st_uid
    try:
        owner = pwd.getpwuid(uid).pw_name
    except KeyError:
        owner = str(uid)
    if owner != student:
        return f"提交文件夹属于账户 {owner}，不是 {student}：没有评分"
    return None


def read_handin(inbound: Path, arrival: Arrival, check_owner: bool = False) -> Handin:
    """The submission's notebook, secret and timestamp, read safely (see the module docstring)."""
    with _folder(inbound, arrival.folder) as fd:
        if check_owner and (problem := owner_problem(fd, arrival.student)):
            raise Rejected(problem)
        secret = _small(fd, "submission_secret.txt")
        if not SECRET.fullmatch(secret):
            raise Rejected("submission_secret.txt 不是 nbgrader 写的密钥：没有评分")
        notebook = _read(fd, f"{arrival.assignment}.ipynb", MAX_NOTEBOOK_BYTES)
        return Handin(notebook, secret, arrival.timestamp)
