"""Feedback where nbgrader's "Fetch Feedback" finds it, and the same files an instructor's nbgrader writes.

    deliver(exchange_course, secret, notebook_id, html)   # <exchange>/<course>/feedback/<hash>.html
    keep_in_course(folder, timestamp, secret)            # beside the course's feedback/<student>/<a>/ page
    not_graded_page(reason)                               # the page of a submission that could not be graded

The file name is nbgrader's (ExchangeReleaseFeedback): md5 of the submission's secret (its
submission_secret.txt) and the notebook's name, so only the student who holds the secret in their own
submission cache finds it, and each submission has its own page. Written to a temporary name and renamed:
a student fetching at that moment gets the old page or the new one, never half of one. In the course
folder the page goes where `nbgrader generate_feedback` puts it, with the submission's timestamp.txt and
submission_secret.txt, so a later `nbgrader release_feedback` writes the same file.
"""
from __future__ import annotations

import html as html_lib
import os
from pathlib import Path

from nbgrader.utils import notebook_hash


def feedback_name(secret: str, notebook_id: str) -> str:
    return f"{notebook_hash(secret=secret, notebook_id=notebook_id)}.html"


def _atomic_write(dest: Path, data: str, mode: int = 0o644) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    tmp.write_text(data, encoding="utf-8")
    os.chmod(tmp, mode)
    os.replace(tmp, dest)


def deliver(exchange_course: Path, secret: str, notebook_id: str, html: str) -> Path:
    folder = exchange_course / "feedback"
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o755)   # as nbgrader's release_feedback makes it: students may only open files by name
    dest = folder / feedback_name(secret, notebook_id)
    _atomic_write(dest, html)
    return dest


def keep_in_course(folder: Path, timestamp: str, secret: str) -> None:
    _atomic_write(folder / "timestamp.txt", timestamp)
    _atomic_write(folder / "submission_secret.txt", secret, 0o600)


def not_graded_page(assignment: str, reason: str) -> str:
    """A plain page (Chinese) for a submission that has no score: why, in the student's own terms."""
    return ("<!DOCTYPE html><html lang=\"zh\"><head><meta charset=\"utf-8\">"
            f"<title>{html_lib.escape(assignment)}</title></head><body>"
            f"<h4>{html_lib.escape(assignment)}：这次提交没有得到分数</h4>"
            f"<p>{html_lib.escape(reason)}</p><p>改好后可以重新提交；有疑问请联系老师。</p></body></html>")
