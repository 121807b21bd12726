"""`make lab`'s working copy: a student's answers live outside the tracked notebooks/.

    python -m grader.publish.lab_copy my-notebooks      # copies notebooks/*.ipynb that my-notebooks/ does not have yet

notebooks/ is what `make release` writes and `git pull` updates: answers saved there would be overwritten. The
first `make lab` copies every released notebook into the working folder (git-ignored); a later one copies only
notebooks released since (a new exercise) and never touches a file that is already there, whatever is in it. A
record in the folder (RECORD: each copied notebook's hash as released) lets a later launch say which notebooks
were released again since the student's copy was made, and how to get the new version without losing answers.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

from grader.course import ROOT

RELEASED = ROOT / "notebooks"
RECORD = ".released-versions.json"    # name -> sha256 of the released notebook this folder's copy was made from


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _place(src: Path, target: Path) -> bool:
    """Copy src to target only where nothing is (not even a dangling link); whether it was copied. The copy goes
    to a temporary name first and is linked in, so a file that appears meanwhile is never written over."""
    if os.path.lexists(target):
        return False
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.copyfile(src, tmp)
    try:
        try:
            os.link(tmp, target)             # fails if target appeared meanwhile: then it is kept as it is
        except FileExistsError:
            return False
        except OSError:                      # a file system without hard links: create it, only if it is not there
            try:
                with open(target, "xb") as f:
                    f.write(tmp.read_bytes())
            except FileExistsError:
                return False
        return True
    finally:
        tmp.unlink()


class WorkingCopy:
    """The student's folder of notebooks, filled from the released ones without ever overwriting a file."""

    def __init__(self, dest: Path, released: Path = RELEASED):
        self.dest, self.released = Path(dest), Path(released)
        self._refuse_the_released_folder()

    def _refuse_the_released_folder(self) -> None:
        dest, released = self.dest.resolve(), self.released.resolve()
        if dest == released or released in dest.parents:
            raise ValueError(f"工作副本不能放在 {released} 里：make release 和 git pull 会改写那里的文件")
        if self.dest.exists() and not self.dest.is_dir():
            raise ValueError(f"{self.dest} 已经存在，而且不是文件夹：换一个 LAB_DIR")

    def _record(self) -> dict[str, str]:
        try:
            record = json.loads((self.dest / RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {k: v for k, v in record.items() if isinstance(k, str) and isinstance(v, str)} \
            if isinstance(record, dict) else {}

    def _write_record(self, record: dict[str, str]) -> None:
        path = self.dest / RECORD
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return                           # not ours: left as it is (the notices of later launches are lost)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def update(self) -> tuple[list[str], list[str]]:
        """Copy each released notebook the folder lacks; (the names copied, the names the student has whose
        released notebook changed since their copy was made: kept as they are)."""
        self.dest.mkdir(parents=True, exist_ok=True)
        record = self._record()
        copied, newer = [], []
        for src in sorted(self.released.glob("*.ipynb")):
            digest = _digest(src)
            if _place(src, self.dest / src.name):
                copied.append(src.name)
                record[src.name] = digest
            elif src.name in record and record[src.name] != digest:
                newer.append(src.name)
        if copied:
            self._write_record(record)
        return copied, newer


def working_copy(dest: Path, released: Path = RELEASED) -> list[str]:
    """Copy each released notebook dest lacks into dest (made if needed); the names copied."""
    return WorkingCopy(dest, released).update()[0]


def main(argv: list[str], released: Path = RELEASED) -> int:
    if len(argv) != 1:
        print("usage: python -m grader.publish.lab_copy DEST", file=sys.stderr)
        return 2
    dest = Path(argv[0])
    try:
        copied, newer = WorkingCopy(dest, released).update()
    except ValueError as e:
        print(f"make lab 没有启动：{e}", file=sys.stderr)
        return 1
    where = dest.resolve()
    if copied:
        print(f"已把 {len(copied)} 本练习复制到 {where}/：{'、'.join(copied)}")
    print(f"你的答案保存在 {where}/ 里（JupyterLab 打开的就是这个文件夹）。notebooks/ 里是发布的原件，"
          "make release 和 git pull 会改写它们，但从不碰你的副本；已有的文件永远不会被覆盖。")
    for name in newer:
        print(f"提示：notebooks/{name} 发布了新版本，你的副本 {name} 保持原样。想要新版：在 JupyterLab 里把你的副本"
              "改个名（答案还在里面），再运行一次 make lab，新版会复制进来。")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
