"""Prepare: a hand-in becomes a notebook the grader may run, rebuilt on the release.

    nb = read_notebook(data)                        # ValueError (Chinese) if it is not a notebook
    fixed, notes = repair(nb, release, source)      # rebuilt on the release; what had to change
    for_grading(fixed)                              # outputs cleared, demo cells emptied

and the same as nbgrader's steps (lists.SANITIZE): RebuildOnRelease (repair, then `suspicious`: what the
student's own code reaches for, a note for the instructor), nbgrader's ClearOutput, SkipDemoCells.

The rebuilt notebook is the release's notebook with the student's cells put into it:
- every cell the release has gets the release's metadata back (type, tags, nbgrader fields);
- a locked cell (tests, read-only code) gets the release's source back; a test cell also its hidden tests,
  which is all that is ever taken from the instructor's source notebook;
- a deleted cell comes back as the release has it: a deleted answer cell as the release's blanks, never
  as the answer;
- the student's own cells keep their code and lose every tag, grading field and other metadata; their
  markdown and raw cells are made inert (sanitize.py), except a markdown cell identical to one of the
  release's, which is the release's own;
- duplicated and retyped cells are repaired; everything that was changed is noted.
"""
from __future__ import annotations

import copy
import re
import uuid
import warnings

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from grader.cells import grade_id, is_answer, is_demo, is_locked, is_test, nbgrader_metadata, tags
from grader.course import course_of
from grader.grade.sanitize import inert_cell
from grader.grade.state import NotebookState

# Student code that reaches for the grading machinery, the file system, processes or the network. It is
# flagged for the instructor; it decides nothing (the sandbox and the trusted verdict do).
# Names are matched anywhere in a word (`_os.environ`, `_sys.modules`): aliases do not hide them.
SUSPICIOUS = [
    (re.compile(r"agentrl_ref(?!\.checks)"), "调用 agentrl_ref（评分时里面没有参考答案）"),
    (re.compile(r"sys\.modules|__import__|importlib|sys\.path|meta_path"), "改动导入机制"),
    (re.compile(r"builtins|__self__|__subclasses__|__class__|__globals__|__code__|__dict__"), "改动 Python 内置对象"),
    (re.compile(r"def __(eq|ne|lt|le|gt|ge|hash|float|int|bool|index|repr|str)__"), "自定义比较或类型转换"),
    (re.compile(r"get_ipython|ipython|showtraceback|\.events\b|ast_transformers|run_cell|clear_output",
                re.IGNORECASE), "改动 IPython 内核"),
    (re.compile(r"agentrl_ref\.checks|run_test|probe|AssertionError|CheckFailure|application/vnd"), "改动测试代码"),
    (re.compile(r"setattr\(|agentrl_ref\.\w+\s*=[^=]"), "替换对象的属性"),
    (re.compile(r"getattr\(|\beval\(|\bexec\(|(?<!re\.)compile\(|\bast\b"), "动态执行代码"),
    (re.compile(r"\bopen\(|\bos\b|_os\b|pathlib|shutil|glob|sqlite3|environ|tempfile"), "读写文件"),
    (re.compile(r"subprocess|\.fork\(|\.system\(|spawn|\.exec[lv]|popen|multiprocessing|threading"), "启动进程或线程"),
    (re.compile(r"socket|urllib|requests|http|zmq"), "网络"),
    (re.compile(r"signal|\bresource\b|ctypes"), "信号或系统资源"),
    (re.compile(r"^\s*[%!]", re.MULTILINE), "IPython 魔法命令或 shell 命令"),
]
CELL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def read_notebook(data: bytes) -> nbformat.NotebookNode:
    """Parse and validate a hand-in; ValueError (Chinese) if it is not a notebook."""
    try:
        with warnings.catch_warnings():  # a duplicated cell repeats its id; repair() gives new ones
            warnings.simplefilter("ignore")
            nb = nbformat.reads(data.decode("utf-8"), as_version=4)
            nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 - any way a file fails to be a notebook makes it invalid
        raise ValueError(f"不是有效的 notebook：{type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(nb.get("cells"), list):
        raise ValueError("不是有效的 notebook：没有单元列表")
    return nb


def _text(cell) -> str:
    """A cell's source as one string, its lines joined if it is a list. Anything else is no text: null or a number
    reaches here in a cell of a type nbformat does not know, whose inside its validation does not check."""
    source = cell.get("source", "")
    if isinstance(source, str):
        return source
    return "".join(str(s) for s in source) if isinstance(source, list) else ""


def _fresh(cell_type: str, source: str, metadata: dict | None = None) -> nbformat.NotebookNode:
    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell,
            "raw": nbformat.v4.new_raw_cell}[cell_type]
    cell = make(source)
    cell.metadata = copy.deepcopy(metadata or {})
    return cell


def _from_release(original, hidden: dict[str, str]):
    """The release's cell; a test cell with its hidden tests (the instructor source's version of it)."""
    cell = copy.deepcopy(original)
    if is_test(original) and grade_id(original) in hidden:
        cell.source = hidden[grade_id(original)]
    return cell


def _changed_metadata(cell, original) -> str | None:
    changed = [what for key, what in (("tags", "标签"), ("nbgrader", "评分设置"))
               if (tags(cell) if key == "tags" else nbgrader_metadata(cell)) !=
               (tags(original) if key == "tags" else nbgrader_metadata(original))
               or (key in cell.get("metadata", {}) and not isinstance(cell.metadata[key], (list, dict)))]
    return f"单元 {grade_id(original)} 的{'、'.join(changed)}被改动过：已按发布版恢复" if changed else None


def repair(student: nbformat.NotebookNode, release: nbformat.NotebookNode,
           source: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[str]]:
    """Rebuild the submission on the release (see the module docstring); say what had to change."""
    ref_cells = [c for c in release.cells if grade_id(c)]
    ref = {grade_id(c): c for c in ref_cells}
    hidden = {grade_id(c): c.source for c in source.cells if is_test(c) and grade_id(c)}
    trusted_markdown = {c.source: c for c in release.cells if c.cell_type == "markdown"}
    notes: list[str] = []
    last_answer_copy = {grade_id(c): i for i, c in enumerate(student.cells)
                        if grade_id(c) in ref and not is_locked(ref[grade_id(c)])}

    def own(cell):
        """A cell of the student's own: its text, nothing else of it; markdown and raw made inert."""
        text = _text(cell)
        if cell.get("cell_type") == "markdown" and text in trusted_markdown:
            return copy.deepcopy(trusted_markdown[text])
        kind = cell.get("cell_type") if cell.get("cell_type") in ("code", "markdown", "raw") else "raw"
        fresh = _fresh(kind, text)
        if kind != "code":
            fresh.attachments = cell.get("attachments")
            notes.extend(inert_cell(fresh))
        return fresh

    out, position = [], {}
    for i, cell in enumerate(student.cells):
        gid = grade_id(cell)
        if gid is None or gid not in ref:
            if gid is not None:
                notes.append(f"未知的评分单元 {gid[:64]}：当作普通单元")
            elif nbgrader_metadata(cell) or (cell.get("cell_type") == "code" and cell.get("metadata", {}).get("tags")):
                notes.append("自己加的单元带着评分设置或标签：已去掉")
            out.append(own(cell))
            continue
        original = ref[gid]
        if gid in position and is_locked(original):
            notes.append(f"重复的测试/只读单元 {gid}：已删除多余的一份")
            continue
        if not is_locked(original) and last_answer_copy.get(gid) != i:
            notes.append(f"重复的答案单元 {gid}：评分用最后一份，其余当作普通单元")
            out.append(own(cell))
            continue
        if cell.get("cell_type") != original.cell_type:
            notes.append(f"单元 {gid} 的类型被改成 {str(cell.get('cell_type'))[:20]}：已改回 {original.cell_type}")
        note = _changed_metadata(cell, original)
        if is_locked(original):
            if _text(cell) != original.source:
                notes.append(f"锁定单元 {gid} 被改动过：已恢复原样（疑似篡改测试）")
            fixed = _from_release(original, hidden)
        else:
            fixed = _fresh(original.cell_type, _text(cell), original.metadata)
        if note:
            notes.append(note)
        position[gid] = len(out)
        out.append(fixed)
    for k, original in enumerate(ref_cells):
        gid = grade_id(original)
        if gid in position:
            continue
        notes.append(f"单元 {gid} 被删除：已按发布版恢复" + ("（答案单元恢复为空白）" if is_answer(original) else ""))
        before = [position[grade_id(c)] for c in ref_cells[:k] if grade_id(c) in position]
        at = max(before) + 1 if before else 0
        out.insert(at, _from_release(original, hidden))
        position = {g: p + (p >= at) for g, p in position.items()}
        position[gid] = at
    fixed = copy.deepcopy(release)   # nbformat version and notebook metadata (kernelspec and all): the release's
    fixed.cells = out
    _unique_ids(fixed)
    return fixed, notes


def _unique_ids(nb) -> None:
    """Valid, unique, deterministic cell ids: the release's where it has them, derived ones elsewhere."""
    seen = set()
    for i, cell in enumerate(nb.cells):
        cid = cell.get("id")
        if not (isinstance(cid, str) and CELL_ID.match(cid)) or cid in seen:
            cid = uuid.uuid5(uuid.NAMESPACE_URL, f"{i}:{cell.get('source', '')}").hex[:12]
        cell["id"] = cid
        seen.add(cid)


def suspicious(nb: nbformat.NotebookNode) -> list[str]:
    """What the student's own code reaches for (SUSPICIOUS): a note for the instructor, not a verdict.
    Cells that do not run while grading (locked ones, demo cells) are not looked at."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or is_locked(cell) or is_demo(cell):
            continue
        for pattern, what in SUSPICIOUS:
            if pattern.search(cell.source) and what not in found:
                found.append(what)
    return [f"可疑代码，请人工检查：{'、'.join(found)}"] if found else []


def untouched(nb: nbformat.NotebookNode, release: nbformat.NotebookNode) -> bool:
    """Every answer cell of the rebuilt notebook is the release's, word for word (nothing was filled in)."""
    blanks = {grade_id(c): c.source for c in release.cells if is_answer(c)}
    answers = {grade_id(c): c.source for c in nb.cells if is_answer(c) and grade_id(c) in blanks}
    return bool(blanks) and answers == blanks


DEMO_PLACEHOLDER = "# （评分时不运行这一格：它只做演示，不计分）"


def for_grading(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """What any notebook looks like before a grading run: no outputs, demo cells emptied (cells tagged
    `demo` teach but grade nothing; a test or answer cell is never emptied, whatever its tags say)."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if is_demo(cell):
                cell.source = DEMO_PLACEHOLDER
    return nb


class RebuildOnRelease(NbGraderPreprocessor):
    """The hand-in rebuilt on the release of the course folder (repair), with what had to change and what
    its own code reaches for (suspicious) in the notebook's notes."""

    zh = "整理"   # what the step does, for a note if it fails

    def preprocess(self, nb, resources):
        name = resources["nbgrader"]["assignment"]
        course = course_of(self)
        release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
        source = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
        fixed, notes = repair(nb, release, source)
        notes += suspicious(fixed)
        state = NotebookState.of(resources)
        state.untouched = untouched(fixed, release)
        if state.untouched:
            notes.insert(0, "交上来时和发布版一样：一个空也没填")
        for note in notes:
            self.log.warning("%s: %s", resources["nbgrader"].get("student"), note)
        state.notes.extend(notes)
        return fixed, resources


class SkipDemoCells(NbGraderPreprocessor):
    """Cells tagged `demo` teach but grade nothing; they are not run while grading."""

    zh = "整理"

    def preprocess_cell(self, cell, resources, index):
        if is_demo(cell):
            cell.source = DEMO_PLACEHOLDER
        return cell, resources
