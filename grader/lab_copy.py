"""`make lab`'s working copy: a student's answers live outside the tracked notebooks/.

    python -m grader.lab_copy my-notebooks      # copies notebooks/*.ipynb that my-notebooks/ does not have yet

notebooks/ is what `make release` writes and `git pull` updates: answers saved there would be overwritten. The
first `make lab` copies every released notebook into the working folder (git-ignored); a later one copies only
notebooks released since (a new exercise) and never touches a file that is already there, whatever is in it.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from grader.course import ROOT

RELEASED = ROOT / "notebooks"


def working_copy(dest: Path, released: Path = RELEASED) -> list[str]:
    """Copy each released notebook dest lacks into dest (made if needed); the names copied. An existing file is
    never opened for writing: the copy goes to a temporary name, then is linked in only where nothing is."""
    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    for src in sorted(released.glob("*.ipynb")):
        target = dest / src.name
        if os.path.lexists(target):
            continue
        tmp = dest / f".{src.name}.{os.getpid()}.tmp"
        shutil.copyfile(src, tmp)
        try:
            try:
                os.link(tmp, target)     # fails if target appeared meanwhile: then it is kept as it is
            except FileExistsError:
                continue
            except OSError:              # a file system without hard links: create it, only if it is not there
                with open(target, "xb") as f:
                    f.write(tmp.read_bytes())
            copied.append(src.name)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return copied


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m grader.lab_copy DEST", file=sys.stderr)
        return 2
    dest = Path(argv[0])
    copied = working_copy(dest)
    if copied:
        print(f"已把 {len(copied)} 本练习复制到 {dest}/（你的答案保存在这里；notebooks/ 里的原件不动）：{'、'.join(copied)}")
    else:
        print(f"你的答案在 {dest}/（已有的文件不会被覆盖；notebooks/ 里的原件不动）")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
