"""Hand-ins whose trick is the file, not the code: its kind (a link, a FIFO, a folder), its place, its
names. Made here once for the intake's own test (test_intake.py: which files collect() takes) and for the
class of attackers graded end to end (test_attacks.py).

    make_file_tricks(root, A, text, honest=root / "alice", instructor=SOURCE / A / f"{A}.ipynb")
    FILE_TRICKS["link-to-source"]     # what that student's row says: invalid, "符号链接"

Each trick is one student of root (two-files hands in one assignment twice: in the folder layout and flat);
honest is a classmate's folder holding <A>/<A>.ipynb, whose work the links reach for.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from notebook_fuzz import make_file


@dataclass(frozen=True)
class FileTrick:
    status: str                 # the status of the row that reports it
    note: str                   # what that row's notes must say
    of_assignment: bool = True  # the row is the assignment's; False: of no assignment (a folder in no known place)


FILE_TRICKS = {
    "link-to-source": FileTrick("invalid", "符号链接"),
    "link-to-classmate": FileTrick("invalid", "符号链接"),
    "hardlink-to-source": FileTrick("invalid", "讲师答案"),
    "hardlink-twin-a": FileTrick("conflict", "硬链接"),
    "hardlink-twin-b": FileTrick("conflict", "硬链接"),
    "fifo-notebook": FileTrick("invalid", "命名管道"),
    "folder-named-like-notebook": FileTrick("invalid", "文件夹"),
    "student-folder-link": FileTrick("invalid", "符号链接", of_assignment=False),
    "assignment-folder-link": FileTrick("invalid", "应该是作业文件夹"),
    "two-files": FileTrick("conflict", "2 个文件"),
}


def make_file_tricks(root: Path, assignment: str, text: str, honest: Path, instructor: Path) -> None:
    """Every FILE_TRICKS student's hand-in of assignment in root; text: a notebook's text."""
    def at(student: str) -> Path:
        return root / student / assignment / f"{assignment}.ipynb"

    make_file(at("link-to-source"), "", "symlink", other=instructor)
    make_file(at("link-to-classmate"), "", "symlink", other=honest / assignment / f"{assignment}.ipynb")
    make_file(at("hardlink-to-source"), "", "hardlink", other=instructor)
    make_file(at("hardlink-twin-a"), text, "file")
    make_file(at("hardlink-twin-b"), "", "hardlink", other=at("hardlink-twin-a"))
    make_file(at("fifo-notebook"), "", "fifo")
    make_file(at("folder-named-like-notebook"), "", "directory")
    os.symlink(honest, root / "student-folder-link")
    (root / "assignment-folder-link").mkdir()
    os.symlink(honest / assignment, root / "assignment-folder-link" / assignment)
    make_file(at("two-files"), text, "file")
    make_file(root / f"two-files_{assignment}.ipynb", text, "file")
