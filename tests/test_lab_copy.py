"""`make lab`'s working copy (grader/lab_copy.py): answers are saved outside the tracked notebooks/, and a later
launch (after a new release) adds new notebooks without touching any file a student already has. Real files,
through the command `make lab` runs."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from grader.lab_copy import RELEASED, working_copy

ROOT = Path(__file__).resolve().parents[1]


def test_the_first_launch_copies_every_released_notebook_and_the_next_keeps_the_answers(tmp_path):
    dest = tmp_path / "my-notebooks"
    first = subprocess.run([sys.executable, "-m", "grader.lab_copy", str(dest)], capture_output=True, text=True,
                           check=True, cwd=ROOT)
    released = sorted(p.name for p in RELEASED.glob("*.ipynb"))
    assert released and sorted(p.name for p in dest.iterdir()) == released
    assert all((dest / n).read_bytes() == (RELEASED / n).read_bytes() for n in released)
    assert f"已把 {len(released)} 本练习复制到" in first.stdout
    answered = dest / released[0]
    answered.write_text("学生的答案", encoding="utf-8")
    (dest / released[1]).unlink()                      # as if exercise 2 were released after the first launch
    (dest / "notes.txt").write_text("自己的笔记", encoding="utf-8")
    second = subprocess.run([sys.executable, "-m", "grader.lab_copy", str(dest)], capture_output=True, text=True,
                            check=True, cwd=ROOT)
    assert answered.read_text(encoding="utf-8") == "学生的答案"
    assert (dest / released[1]).read_bytes() == (RELEASED / released[1]).read_bytes()
    assert (dest / "notes.txt").read_text(encoding="utf-8") == "自己的笔记"
    assert "已把 1 本练习复制到" in second.stdout and released[1] in second.stdout
    assert not [p for p in dest.iterdir() if p.name.startswith(".")]   # no temporary file left


def test_a_link_or_folder_in_the_way_is_left_as_it_is(tmp_path):
    released = sorted(RELEASED.glob("*.ipynb"))
    dest = tmp_path / "work"
    dest.mkdir()
    (dest / released[0].name).symlink_to(tmp_path / "elsewhere.ipynb")   # dangling: never followed, never written
    (dest / released[1].name).mkdir()
    copied = working_copy(dest)
    assert released[0].name not in copied and released[1].name not in copied
    assert not (tmp_path / "elsewhere.ipynb").exists() and (dest / released[1].name).is_dir()


def test_make_lab_serves_the_working_copy_not_the_tracked_notebooks():
    out = subprocess.run(["make", "-n", "lab"], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert "grader.lab_copy" in out and '--notebook-dir="my-notebooks"' in out and "--notebook-dir=notebooks" not in out
    assert "my-notebooks/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
