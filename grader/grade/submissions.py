"""Which files a folder of hand-ins holds, and which of them may be opened at all.

    found = collect(folder, ["ex1_format_reward", ...])   # one Submission per (student, assignment)
    data = read_submission(sub)                            # the bytes of its notebook (or SubmissionRejected)

A folder of hand-ins is student-controlled. Only two layouts are understood: nbgrader's
`<student>/<assignment>/<assignment>.ipynb` and a flat `<student>_<assignment>.ipynb`. A file is graded only
if it is the student's own regular file: nothing is followed (symbolic links, folders named like
notebooks, FIFOs, sockets and devices are rejected without being opened), a hard link to an instructor's
notebook is rejected, one file handed in under two names (hard links) is a conflict, and the file is
opened with O_NOFOLLOW and checked again after opening. Two files claiming the same student and
assignment are a conflict: both are named, neither is graded. Hidden entries (.ipynb_checkpoints,
.DS_Store) are not hand-ins. A student id that is empty, hidden, too long, has a path separator, a glob
character, a control or format character, or leading/trailing spaces is rejected with a note; the rest
of the class is graded. Two ids a person cannot tell apart (the same after Unicode normalisation and case
folding, or letters of another script that look the same: Cyrillic "а" for Latin "a") are flagged on every
row of both; a hand-in of the same assignment under both is a conflict, neither graded.
Every notebook-like file in the folder ends up in some row (a file in no known place is reported on the
student's row, or on a row of its own), so nothing a student handed in disappears without a word.
"""
from __future__ import annotations

import os
import stat
import unicodedata
from dataclasses import asdict, dataclass, field
from pathlib import Path

MAX_NOTEBOOK_BYTES = 50_000_000
MAX_ID_LENGTH = 128          # nbgrader's gradebook keeps ids in String(128)
UNKNOWN_ASSIGNMENT = ""     # a row for files that belong to no assignment the course knows
GLOB_CHARACTERS = set("*?[]")  # nbgrader finds submissions with glob patterns built from the ids


@dataclass
class Submission:
    student: str                 # a valid id, or a printable rendering of a rejected one
    assignment: str              # a course assignment, or UNKNOWN_ASSIGNMENT
    path: Path | None            # the notebook to grade; None: nothing gradable
    status: str = "ok"           # ok | missing | invalid | conflict | timeout | killed | error
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    identity: tuple[int, int] | None = None   # (st_dev, st_ino) of the file when it was collected
    passed: dict[str, bool] = field(default_factory=dict)   # grade_id -> the trusted verdict
    untouched: bool = False      # handed in as released: every answer cell as the release has it

    def row(self) -> dict:
        """The row as plain data (a shard's manifest): what the class's report needs of it."""
        row = asdict(self)
        row["path"] = None if self.path is None else str(self.path)
        row.pop("identity", None)
        row.pop("passed", None)
        return row

    @classmethod
    def from_row(cls, row: dict) -> "Submission":
        fields = {k: v for k, v in row.items() if k in cls.__dataclass_fields__}
        fields["path"] = None if row.get("path") is None else Path(row["path"])
        return cls(**fields)


class SubmissionRejected(Exception):
    """The file may not be graded; the message (Chinese) says why."""


def printable(name: str) -> str:
    """name with every control, format, separator or undecodable character shown as an escape (\\x07,
    \\u202e, \\udcff): safe in a report, a CSV cell or a log line, and still recognisable."""
    return "".join(ch.encode("unicode_escape").decode("ascii") if _unsafe(ch) else ch for ch in name)


def _unsafe(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category[0] == "C" or (category[0] == "Z" and ch != " ")


# Letters of other scripts that look like Latin ones, after case folding (after Unicode's confusables,
# for the scripts a class list is likely to mix: Cyrillic and Greek, both cases folded)
LOOK_ALIKE = str.maketrans({
    "а": "a", "в": "b", "е": "e", "і": "i", "ј": "j", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l",
    "ү": "y", "ѵ": "v", "α": "a", "β": "b", "ε": "e", "ζ": "z", "η": "h", "ι": "i", "κ": "k", "μ": "m",
    "ν": "n", "ο": "o", "ρ": "p", "τ": "t", "υ": "y", "χ": "x", "ϲ": "c", "ı": "i", "ɡ": "g", "ɑ": "a",
})


def skeleton(name: str) -> str:
    """What a person sees of an id: NFKC (full-width and compatibility forms), case folded, look-alike
    letters of other scripts as the Latin ones. Two ids with one skeleton cannot be told apart."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold().translate(LOOK_ALIKE))


def id_problem(name: str) -> str | None:
    """Why name cannot be a student id (Chinese), or None if it can."""
    if not name or not name.strip():
        return "学生名是空的"
    if name != name.strip():
        return "学生名的开头或结尾有空白"
    if name in (".", "..") or name.startswith("."):
        return "学生名以点开头"
    if len(name) > MAX_ID_LENGTH:
        return f"学生名超过 {MAX_ID_LENGTH} 个字符"
    if "/" in name or "\\" in name:
        return "学生名里有路径分隔符"
    if GLOB_CHARACTERS & set(name):
        return "学生名里有通配符（* ? [ ]）"
    if any(_unsafe(ch) for ch in name):
        return "学生名里有控制字符、格式字符或无法解码的字节"
    return None


def _kind(mode: int) -> str | None:
    """None for a regular file, else what it is (Chinese)."""
    if stat.S_ISLNK(mode):
        return "符号链接"
    if stat.S_ISDIR(mode):
        return "文件夹"
    if stat.S_ISFIFO(mode):
        return "命名管道"
    if stat.S_ISSOCK(mode):
        return "套接字"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "设备文件"
    if not stat.S_ISREG(mode):
        return "特殊文件"
    return None


def _entries(folder: Path) -> list[os.DirEntry]:
    """The folder's entries, hidden ones (.ipynb_checkpoints, .DS_Store, …) left out, sorted by name."""
    try:
        with os.scandir(folder) as it:
            return sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError:
        return []


@dataclass
class _Candidate:
    path: Path
    shown: str                      # the path relative to the hand-in folder, printable
    problem: str | None = None      # why it may not be opened
    identity: tuple[int, int] | None = None
    status: str = "invalid"         # what a problem makes of the row: invalid, or conflict


def _candidate(entry: os.DirEntry, root: Path) -> _Candidate:
    path = Path(entry.path)
    shown = printable(str(path.relative_to(root)))
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError as exc:
        return _Candidate(path, shown, f"读不到文件信息（{exc.strerror}）")
    kind = _kind(st.st_mode)
    if kind:
        return _Candidate(path, shown, f"{shown} 是{kind}，不是学生自己的普通文件：没有打开")
    if st.st_size > MAX_NOTEBOOK_BYTES:
        return _Candidate(path, shown, f"{shown} 太大（{st.st_size} 字节，上限 {MAX_NOTEBOOK_BYTES}）")
    return _Candidate(path, shown, None, (st.st_dev, st.st_ino))


def collect(folder: Path, known: list[str], forbidden: list[Path] = ()) -> list[Submission]:
    """One Submission per (student, assignment) the folder speaks of, missing ones included (see the
    module docstring). Students that hand in anything get a row for every assignment anyone handed in.
    forbidden: files no hand-in may be (the instructor's notebooks): a hard link to one is rejected."""
    folder = Path(folder)
    claims: dict[tuple[str, str], list[_Candidate]] = {}
    strays: dict[tuple[str, str], list[str]] = {}    # notes about files in no known place

    def claim(student: str, assignment: str, candidate: _Candidate | None) -> None:
        claims.setdefault((student, assignment), []).extend([candidate] if candidate else [])

    def stray(student: str, name: str, note: str) -> None:
        guess = next((a for a in known if a in name), UNKNOWN_ASSIGNMENT)
        strays.setdefault((student, guess), []).append(note)

    for entry in _entries(folder):
        if entry.is_dir(follow_symlinks=False) and not entry.name.endswith(".ipynb"):
            student = entry.name
            for sub in _entries(Path(entry.path)):
                if sub.name not in known:
                    if sub.name.endswith(".ipynb") or any(a in sub.name for a in known):
                        stray(student, sub.name, f"不在规定位置，没有评分：{printable(student + '/' + sub.name)}")
                    continue
                if not sub.is_dir(follow_symlinks=False):
                    found = _candidate(sub, folder)
                    found.problem = f"{found.shown} 应该是作业文件夹：没有打开"
                    claim(student, sub.name, found)
                    continue
                notebook = f"{sub.name}.ipynb"
                inside = _entries(Path(sub.path))
                claim(student, sub.name, next((_candidate(e, folder) for e in inside if e.name == notebook), None))
                for other in inside:
                    if other.name != notebook and other.name.endswith(".ipynb"):
                        stray(student, sub.name,
                              f"不在规定位置，没有评分：{printable('/'.join((student, sub.name, other.name)))}")
            continue
        name = next((a for a in known if entry.name.endswith(f"_{a}.ipynb") and len(entry.name) > len(a) + 7), None)
        if name is not None:
            claim(entry.name[: -len(name) - 7], name, _candidate(entry, folder))
        elif entry.name.endswith(".ipynb") or entry.is_symlink():
            problem = _candidate(entry, folder).problem
            stray(entry.name, entry.name, problem or f"不在规定位置，没有评分：{printable(entry.name)}")

    _same_file(claims, forbidden)
    students = sorted({s for s, _ in claims} | {s for s, _ in strays})
    used = sorted({a for _, a in claims}, key=known.index)
    subs = []
    for student in students:
        problem = id_problem(student)
        keys = [(student, a) for a in used]
        keys += [key for key in sorted(strays) if key[0] == student and key[1] not in used]
        for key in keys:
            subs.append(_decide(key, claims.get(key, []), strays.get(key, []), problem))
    _look_alikes(subs)
    return subs


def _look_alikes(subs: list[Submission]) -> None:
    """Ids a person cannot tell apart: a note on each of their rows; the same assignment handed in under
    two of them is a conflict (neither graded), as two files of one student are."""
    groups: dict[str, set[str]] = {}
    for sub in subs:
        if sub.status != "invalid" or sub.path is not None:
            groups.setdefault(skeleton(sub.student), set()).add(sub.student)
    for same in (g for g in groups.values() if len(g) > 1):
        rows = [s for s in subs if s.student in same]
        handed_in = [(s.assignment, s.student) for s in rows if s.path is not None]
        for sub in rows:
            others = [o for o in same if o != sub.student]
            twins = [who for what, who in handed_in if what == sub.assignment and who != sub.student]
            if sub.path is not None and twins:
                sub.status, sub.path = "conflict", None
                sub.notes.insert(0, look_alike_note(sub.student, others, "同一份作业两个名字各交了一份：都没有评分"))
            else:
                sub.notes.insert(0, look_alike_note(sub.student, others))


def look_alike_note(student: str, others, conflict: str | None = None) -> str:
    """The note on a row whose id looks like others' (skeleton): conflict says what that did to the hand-in."""
    same = f"学生名 {student} 和 {'、'.join(sorted(others))} 看起来一样（Unicode 写法不同或是形近的字母）"
    return f"{same}，{conflict}，请确认是不是同一个人" if conflict else f"{same}：请确认是不是同一个人"


def _same_file(claims: dict[tuple[str, str], list[_Candidate]], forbidden) -> None:
    """Hard links: a file that is also an instructor's notebook is rejected; a file handed in under two
    names (two students, or two assignments) is a conflict on every one of them."""
    protected = set()
    for path in forbidden:
        try:
            st = os.stat(path)
            protected.add((st.st_dev, st.st_ino))
        except OSError:
            pass
    seen: dict[tuple[int, int], list[_Candidate]] = {}
    for candidates in claims.values():
        for c in candidates:
            if c.identity is not None:
                seen.setdefault(c.identity, []).append(c)
    for identity, same in seen.items():
        for c in same:
            if identity in protected:
                c.problem = f"{c.shown} 是讲师答案文件的硬链接：没有打开"
            elif len(same) > 1:
                places = "；".join(o.shown for o in same)
                c.problem = f"同一个文件（硬链接）交在了 {len(same)} 个位置：{places}：都没有评分"
                c.status = "conflict"


def _decide(key: tuple[str, str], candidates: list[_Candidate], strays: list[str],
            id_rejected: str | None) -> Submission:
    student, assignment = key
    sub = Submission(printable(student), assignment, None)
    stray_note = list(strays)
    if id_rejected:
        sub.status = "invalid"
        sub.notes = [f"{id_rejected}：这名学生的文件没有评分（请改名后重评）"] + stray_note
    elif len(candidates) > 1:
        sub.status = "conflict"
        sub.notes = [f"同一名学生的同一份作业有 {len(candidates)} 个文件：{'；'.join(c.shown for c in candidates)}"
                     "。都没有评分，请确认哪一份算数"] + stray_note
    elif candidates and candidates[0].problem:
        sub.status = candidates[0].status
        sub.notes = [candidates[0].problem] + stray_note
    elif candidates:
        sub.path, sub.identity = candidates[0].path, candidates[0].identity
        sub.notes = stray_note
    else:
        sub.status = "missing" if assignment else "invalid"
        sub.notes = (["没有交这份作业"] if assignment else []) + stray_note
    return sub


def read_submission(sub: Submission) -> bytes:
    """The notebook's bytes, opened without following links and checked to be the file collect() saw."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(sub.path, flags)
    except OSError as exc:
        raise SubmissionRejected(f"打不开文件（{exc.strerror}）") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        kind = _kind(st.st_mode)
        if kind or (st.st_dev, st.st_ino) != sub.identity:
            raise SubmissionRejected(f"文件在收集之后被换掉了（现在是{kind or '另一个文件'}）：没有评分")
        data = f.read(MAX_NOTEBOOK_BYTES + 1)
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise SubmissionRejected(f"文件太大（超过 {MAX_NOTEBOOK_BYTES} 字节）")
    return data
