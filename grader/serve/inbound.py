"""nbgrader's exchange, read by the grader: the hand-ins in `<exchange>/<course>/inbound/`.

    arrival = parse(name, known)           # the folder name's parts, or None; never raises
    verdict = judge(inbound_fd, name, owner)   # complete / incomplete / rejected, by descriptors
    handin = read_handin(inbound, name, arrival, owner)   # its secret and notebook bytes (or Rejected)

`nbgrader submit` makes `inbound/{student}+{assignment}+{timestamp}+{random}/` (the last part only with
add_random_string, the default), copies the student's files into it, then writes timestamp.txt and
submission_secret.txt (128 hex digits): a folder is complete when its secret is. Everything in inbound is the
students'. A name is trusted only as far as it parses, strictly and without any date parser: the student id
as make grade checks ids, a known assignment, a timestamp of nbgrader's shape, ASCII random characters; any
other name is not a hand-in (None), whatever bytes it holds. The timestamp is only the student's claim (the
queue times a hand-in by its arrival). Folders and files are opened relative to a descriptor of their parent
without following any link (O_NOFOLLOW), only regular files, size-capped, and every descriptor is closed on
every path. With an owner (the uid of the student's OS account) the folder and every file read must belong
to it, checked on the descriptor the bytes are then read from: nobody hands in as another, nor swaps a file
into another's folder. A service running as root makes each complete folder private on arrival (0700):
nbgrader leaves it 0777, so anyone who learned its name could read or replace what is inside.
"""
from __future__ import annotations

import datetime
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from grader.grade.submissions import MAX_NOTEBOOK_BYTES, id_problem

SECRET = re.compile(r"[0-9a-f]{128}", re.ASCII)
SECRET_FILE = "submission_secret.txt"
MAX_SMALL_FILE = 4096
# nbgrader's Exchange.timestamp_format ("%Y-%m-%d %H:%M:%S.%f %Z") and add_random_string's urlsafe base64
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?( [A-Za-z]{1,6}| [+-]\d{4})?", re.ASCII)
RANDOM = re.compile(r"[A-Za-z0-9_-]{1,32}={0,2}", re.ASCII)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class Arrival:
    folder: str          # the inbound folder's name
    student: str
    assignment: str
    claim: str           # the timestamp in the name: what the student says, never what counts


@dataclass
class Handin:
    secret: str          # nbgrader's submission_secret.txt: the feedback's file name is derived from it
    notebook: bytes | None = None
    problem: str | None = None   # why the notebook was not read (Chinese), with a secret to answer to


class Rejected(Exception):
    """The folder cannot be graded; the message (Chinese) says why."""


def parse(name: str, known) -> Arrival | None:
    """The folder name's parts, or None if it is not a hand-in of a known assignment by a valid id."""
    parts = name.split("+")
    if len(parts) not in (3, 4):
        return None
    student, assignment, claim = parts[:3]
    if assignment not in known or id_problem(student) is not None or not TIMESTAMP.fullmatch(claim):
        return None
    try:
        datetime.datetime.strptime(claim[:19], "%Y-%m-%d %H:%M:%S")   # a real date, by shape only: no parser
    except ValueError:
        return None
    if len(parts) == 4 and not RANDOM.fullmatch(parts[3]):
        return None
    return Arrival(name, student, assignment, claim)


def _opendir(parent_fd: int, name: str) -> int:
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        raise Rejected(f"提交文件夹打不开（{exc.strerror}）：可能被换成了链接") from None


def _owned(st: os.stat_result, owner: int | None, what: str) -> None:
    if owner is not None and st.st_uid != owner:
        raise Rejected(f"{what}属于另一个账户（uid {st.st_uid}），不是这名学生的：没有评分")


def read_file(folder_fd: int, name: str, limit: int, owner: int | None = None) -> bytes:
    """A regular file of the folder, opened without following links, owned by owner (if given), at most limit
    bytes: the checks and the reading on the same descriptor, closed on every path."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=folder_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Rejected(f"{name} 打不开（{exc.strerror}）") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Rejected(f"{name} 不是普通文件：没有打开")
        _owned(st, owner, name)
        if st.st_size > limit:
            raise Rejected(f"{name} 太大（上限 {limit} 字节）")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise Rejected(f"{name} 太大（上限 {limit} 字节）")
    return b"".join(chunks)


def _secret(folder_fd: int, owner: int | None) -> str | None:
    """The folder's secret, or None while it is not (yet) nbgrader's 128 hex digits."""
    try:
        text = read_file(folder_fd, SECRET_FILE, MAX_SMALL_FILE, owner).decode("ascii", "replace").strip()
    except FileNotFoundError:
        return None
    return text if SECRET.fullmatch(text) else None


def freeze(folder_fd: int) -> None:
    """As root: nobody but the folder's owner (and root) may list, read or change it any more."""
    if os.geteuid() == 0 and os.fstat(folder_fd).st_mode & 0o077:
        try:
            os.fchmod(folder_fd, 0o700)
        except OSError:   # root of a user namespace only: other accounts' folders stay as they are
            pass


def judge(inbound_fd: int, name: str, owner: int | None) -> tuple[str, object]:
    """("complete", the folder's lstat) | ("incomplete", lstat) | ("rejected", reason) | ("gone", None);
    "waiting" (lstat) when it has no secret file at all yet (only a change of the folder's mtime can end that).
    A complete folder is made private (freeze) before this returns."""
    try:
        st = os.stat(name, dir_fd=inbound_fd, follow_symlinks=False)
    except OSError:
        return "gone", None
    if not stat.S_ISDIR(st.st_mode):
        return "rejected", "不是文件夹"
    if owner is not None and st.st_uid != owner:
        return "rejected", f"属于 uid {st.st_uid}"
    try:
        fd = _opendir(inbound_fd, name)
    except Rejected as exc:
        return "rejected", str(exc)
    try:
        opened = os.fstat(fd)
        if (opened.st_ino, opened.st_dev) != (st.st_ino, st.st_dev):
            return "incomplete", st          # swapped between the two looks: look again next pass
        try:
            os.stat(SECRET_FILE, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return "waiting", st
        if _secret(fd, owner) is None:
            return "incomplete", st
        freeze(fd)
        return "complete", st
    except Rejected as exc:
        return "rejected", str(exc)
    finally:
        os.close(fd)


def read_handin(inbound: Path, name: str, assignment: str, owner: int | None = None) -> Handin:
    """The hand-in's secret and notebook, read safely (see the module docstring). Rejected without a secret
    to answer to; a Handin with a problem if only the notebook could not be taken."""
    parent = os.open(inbound, DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        fd = _opendir(parent, name)
    finally:
        os.close(parent)
    try:
        _owned(os.fstat(fd), owner, "提交文件夹")
        freeze(fd)
        secret = _secret(fd, owner)
        if secret is None:
            raise Rejected(f"{SECRET_FILE} 不是 nbgrader 写的密钥：没有评分")
        try:
            return Handin(secret, read_file(fd, f"{assignment}.ipynb", MAX_NOTEBOOK_BYTES, owner))
        except FileNotFoundError:
            return Handin(secret, problem=f"提交里没有 {assignment}.ipynb")
        except Rejected as exc:
            return Handin(secret, problem=f"{exc}（请重新提交）")
    except FileNotFoundError:
        raise Rejected(f"{SECRET_FILE} 不见了") from None
    finally:
        os.close(fd)
