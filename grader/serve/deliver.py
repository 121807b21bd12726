"""Feedback where nbgrader's "Fetch Feedback" finds it, and the same files an instructor's nbgrader writes.

    deliver(exchange_course, secret, notebook_id, html)   # <exchange>/<course>/feedback/<hash>.html
    keep_in_course(folder, timestamp, secret)            # beside the course's feedback/<student>/<a>/ page
    not_graded_page(assignment, reason)                  # a submission that could not be graded
    short_page(assignment, reason, score)                # a graded one whose full page could not be made

The file name is nbgrader's (ExchangeReleaseFeedback): md5 of the submission's secret (its
submission_secret.txt) and the notebook's name, so only the student who holds the secret in their own
submission cache finds it, and each submission has its own page. The feedback folder is 0711, as nbgrader's
release_feedback makes it: students open a page by its name and cannot list the others. The page is written
through a descriptor of that folder (opened without following links, checked to be the grader's own) to a
random temporary name created exclusively (O_EXCL | O_NOFOLLOW: nothing planted there is ever followed),
then renamed: a student fetching at that moment gets the old page or the new one, never half of one. In the
course folder the page goes where `nbgrader generate_feedback` puts it, with the submission's timestamp.txt
and submission_secret.txt, so a later `nbgrader release_feedback` writes the same file.
"""
from __future__ import annotations

import html as html_lib
import os
import secrets
import stat
from pathlib import Path

from nbgrader.utils import notebook_hash

from grader.serve.inbound import DIR_FLAGS

FEEDBACK_MODE = 0o711


def feedback_name(secret: str, notebook_id: str) -> str:
    return f"{notebook_hash(secret=secret, notebook_id=notebook_id)}.html"


def _write_in(folder_fd: int, name: str, data: str, mode: int) -> None:
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder_fd)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data.encode("utf-8"))
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        os.unlink(tmp, dir_fd=folder_fd)
        raise
    os.close(fd)
    os.rename(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)


def _atomic_write(dest: Path, data: str, mode: int = 0o644) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(dest.parent, DIR_FLAGS)
    try:
        _write_in(fd, dest.name, data, mode)
    finally:
        os.close(fd)


def deliver(exchange_course: Path, secret: str, notebook_id: str, html: str, trusted=frozenset()) -> Path:
    """The page under nbgrader's name in <exchange>/<course>/feedback/ (made 0711 if missing). The folder must
    be root's, this account's or one of trusted (uids: the instructor's), and writable by nobody else."""
    parent = os.open(exchange_course, DIR_FLAGS)
    try:
        try:
            os.mkdir("feedback", FEEDBACK_MODE, dir_fd=parent)
            made = True
        except FileExistsError:
            made = False
        fd = os.open("feedback", DIR_FLAGS, dir_fd=parent)
    finally:
        os.close(parent)
    try:
        if made:
            os.fchmod(fd, FEEDBACK_MODE)
        st = os.fstat(fd)
        if st.st_uid not in {0, os.geteuid(), *trusted} or st.st_mode & 0o022 or not stat.S_ISDIR(st.st_mode):
            raise PermissionError(f"{exchange_course / 'feedback'} is not the grader's own (owner uid {st.st_uid}, "
                                  f"mode {stat.S_IMODE(st.st_mode):o}): no feedback written into it")
        name = feedback_name(secret, notebook_id)
        _write_in(fd, name, html, 0o644)
    finally:
        os.close(fd)
    return exchange_course / "feedback" / name


def keep_in_course(folder: Path, timestamp: str, secret: str) -> None:
    _atomic_write(folder / "timestamp.txt", timestamp)
    _atomic_write(folder / "submission_secret.txt", secret, 0o600)


def _page(assignment: str, heading: str, body: str) -> str:
    return ("<!DOCTYPE html><html lang=\"zh\"><head><meta charset=\"utf-8\">"
            f"<title>{html_lib.escape(assignment)}</title></head><body>"
            f"<h4>{html_lib.escape(assignment)}：{html_lib.escape(heading)}</h4>{body}</body></html>")


def not_graded_page(assignment: str, reason: str) -> str:
    """A plain page (Chinese) for a submission that has no score: why, in the student's own terms."""
    return _page(assignment, "这次提交没有得到分数",
                 f"<p>{html_lib.escape(reason)}</p><p>改好后可以重新提交；有疑问请联系老师。</p>")


def short_page(assignment: str, reason: str, score: tuple[float, float] | None) -> str:
    """The page of a graded submission whose full page was not made (too big, too slow): the score if the
    instructor shows it now, and why there is nothing more."""
    shown = f"（得分：{score[0]:g} / {score[1]:g}）" if score else ""   # as the full page's heading
    return _page(assignment, f"已评分{shown}",
                 f"<p>分数已经记进成绩册，但这一份的反馈页没有生成：{html_lib.escape(reason)}。</p>"
                 "<p>把多余的内容（很长的单元格、很多单元格）删掉再提交，就能得到完整的反馈页。</p>")
