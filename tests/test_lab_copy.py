"""`make lab`'s working copy (grader/publish/lab_copy.py): answers are saved outside the tracked notebooks/, and a later
launch (after a new release or a git pull) adds new notebooks without touching any file a student already has,
says in Chinese where the copy is, and names the notebooks released again since the copy was made. Real files,
through the command `make lab` runs."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from grader.publish.lab_copy import RECORD, RELEASED, main, working_copy

ROOT = Path(__file__).resolve().parents[1]


def _launch(dest: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader.publish.lab_copy", str(dest)], capture_output=True, text=True,
                          check=False, cwd=ROOT)


def test_the_first_launch_copies_every_released_notebook_and_the_next_keeps_the_answers(tmp_path):
    dest = tmp_path / "my-notebooks"
    first = _launch(dest)
    assert first.returncode == 0, first.stderr
    released = sorted(p.name for p in RELEASED.glob("*.ipynb"))
    assert len(released) >= 2 and sorted(p.name for p in dest.glob("*.ipynb")) == released
    assert all((dest / n).read_bytes() == (RELEASED / n).read_bytes() for n in released)
    assert f"已把 {len(released)} 本练习复制到 {dest.resolve()}/" in first.stdout
    assert f"你的答案保存在 {dest.resolve()}/ 里" in first.stdout
    answered = dest / released[0]
    answered.write_text("学生的答案", encoding="utf-8")
    (dest / released[1]).unlink()                      # as if exercise 2 were released after the first launch
    (dest / "notes.txt").write_text("自己的笔记", encoding="utf-8")
    second = _launch(dest)
    assert second.returncode == 0, second.stderr
    assert answered.read_text(encoding="utf-8") == "学生的答案"
    assert (dest / released[1]).read_bytes() == (RELEASED / released[1]).read_bytes()
    assert (dest / "notes.txt").read_text(encoding="utf-8") == "自己的笔记"
    assert "已把 1 本练习复制到" in second.stdout and released[1] in second.stdout
    assert "新版本" not in second.stdout               # nothing was released again
    third = _launch(dest)
    assert "已把" not in third.stdout and f"你的答案保存在 {dest.resolve()}/" in third.stdout
    assert sorted(p.name for p in dest.iterdir() if p.name.startswith(".")) == [RECORD]   # no temporary file left


def test_a_new_release_never_overwrites_the_copy_and_is_announced(tmp_path, capsys):
    """`make release` or `git pull` rewrote notebooks/ex1: the student's copy stays, the launch says how to get
    the new version (rename the copy, launch again), and that works."""
    released = tmp_path / "notebooks"
    released.mkdir()
    for src in sorted(RELEASED.glob("*.ipynb"))[:2]:
        (released / src.name).write_bytes(src.read_bytes())
    first, second = sorted(p.name for p in released.iterdir())
    dest = tmp_path / "my-notebooks"
    assert main([str(dest)], released) == 0
    (dest / first).write_text("学生的答案", encoding="utf-8")
    capsys.readouterr()
    (released / first).write_bytes((released / first).read_bytes() + b"\n")     # released again
    (released / second).write_bytes((released / second).read_bytes() + b"\n")   # released again, copy untouched
    assert main([str(dest)], released) == 0
    out = capsys.readouterr().out
    assert (dest / first).read_text(encoding="utf-8") == "学生的答案"
    assert (dest / second).read_bytes() != (released / second).read_bytes()    # never overwritten, even unanswered
    assert f"notebooks/{first} 发布了新版本" in out and f"notebooks/{second} 发布了新版本" in out
    assert "改个名" in out and "已把" not in out
    (dest / first).rename(dest / f"我的-{first}")
    assert main([str(dest)], released) == 0
    out = capsys.readouterr().out
    assert (dest / first).read_bytes() == (released / first).read_bytes()
    assert (dest / f"我的-{first}").read_text(encoding="utf-8") == "学生的答案"
    assert f"notebooks/{first} 发布了新版本" not in out and f"notebooks/{second} 发布了新版本" in out


def test_a_link_or_folder_in_the_way_is_left_as_it_is(tmp_path):
    released = sorted(RELEASED.glob("*.ipynb"))
    dest = tmp_path / "work"
    dest.mkdir()
    (dest / released[0].name).symlink_to(tmp_path / "elsewhere.ipynb")   # dangling: never followed, never written
    (dest / released[1].name).mkdir()
    copied = working_copy(dest)
    assert released[0].name not in copied and released[1].name not in copied
    assert not (tmp_path / "elsewhere.ipynb").exists() and (dest / released[1].name).is_dir()
    assert len(copied) == len(released) - 2


def test_the_working_copy_cannot_be_the_tracked_notebooks_or_a_file(tmp_path):
    before = {p.name: p.read_bytes() for p in RELEASED.iterdir()}
    for dest in (RELEASED, RELEASED / "mine"):
        refused = _launch(dest)
        assert refused.returncode == 1 and "make lab 没有启动" in refused.stderr and "make release" in refused.stderr
    assert {p.name: p.read_bytes() for p in RELEASED.iterdir()} == before
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    refused = _launch(tmp_path / "a-file")
    assert refused.returncode == 1 and "不是文件夹" in refused.stderr
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "x"


def test_make_lab_serves_the_working_copy_not_the_tracked_notebooks():
    out = subprocess.run(["make", "-n", "lab"], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    copy, lab = [line for line in out.splitlines() if "grader.publish.lab_copy" in line or "jupyter lab" in line]
    assert "grader.publish.lab_copy" in copy and '"my-notebooks"' in copy      # the copy first, then the lab on it
    assert '--notebook-dir="my-notebooks"' in lab and "--notebook-dir=notebooks" not in lab
    assert "my-notebooks/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
