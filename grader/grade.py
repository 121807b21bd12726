"""make grade SUBMISSIONS=<folder>: autograde a whole class in sandboxes and say what happened to every notebook.

    python grader/grade.py SUBMISSIONS [--out DIR] [--jobs N] [--cell-timeout S] [--notebook-timeout S]
                                       [--db-url URL] [--unsafe-no-sandbox]

SUBMISSIONS holds `<student>/<assignment>/<assignment>.ipynb` (nbgrader's layout) or flat
`<student>_<assignment>.ipynb` files. Nothing in it is modified. The steps:

1. prepare  every notebook is read, validated and rebuilt on the release: each cell the release has gets
            the release's metadata back (type, tags, nbgrader fields) and each locked cell its source
            (with the hidden tests); cells the student added keep their code but lose every tag and
            grading field. Deleted, duplicated and retyped cells are repaired; all of it is noted.
2. expect   each assignment's instructor notebook runs like a submission; what its test cells
            record (agentrl_ref.checks.probes) is the expected result. It never enters a sandbox.
3. execute  every notebook runs in its own sandbox (grader/sandbox.py: bubblewrap, cgroups, no network,
            only an empty working folder and the course package without this assignment's answers),
            --jobs at a time. Its test cells are judged against the expected records by trusted code
            (grader/verdict.py), outputs are capped, and the kernel's fate (timeout, memory, processes)
            is noted in Chinese.
4. record   after every sandbox is gone, nbgrader (in this process, one writer) saves the scores into
            the gradebook (SQLite by default; --db-url for another) and writes the feedback.
5. report   grades.csv, cells.csv, feedback/ and report.md in --out (default grading-output/).

--unsafe-no-sandbox runs kernels without the sandbox (for machines without user namespaces); the
report says so on its first line. The verdict is still decided outside the kernel.
"""
from __future__ import annotations

import argparse
import copy
import csv
import json
import logging
import os
import re
import shutil
import statistics
import sys
import threading
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

import execute
from grading import scratch_course
from release import assignments as course_assignments, nbgrader_env

COURSE_ID = "agentrl-cloze"  # as in nbgrader_config.py
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


@dataclass
class Submission:
    student: str
    assignment: str
    path: Path | None            # None: the student handed in nothing for this assignment
    status: str = "ok"           # ok | missing | invalid | timeout | killed | error
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def collect(folder: Path, known: list[str]) -> list[Submission]:
    """Every (student, assignment) pair the folder speaks of, in either layout; missing ones included."""
    found: dict[tuple[str, str], Path | None] = {}
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        rel = path.relative_to(folder).parts
        if len(rel) == 3 and rel[1] in known and rel[2] == f"{rel[1]}.ipynb":
            found[(rel[0], rel[1])] = path
        elif len(rel) == 1:
            for name in known:
                if path.name.endswith(f"_{name}.ipynb") and len(path.name) > len(name) + 7:
                    found[(path.name[: -len(name) - 7], name)] = path
    for student_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        for name in known:
            if (student_dir / name).is_dir() and (student_dir.name, name) not in found:
                found[(student_dir.name, name)] = None
    students = sorted({s for s, _ in found})
    used = sorted({a for _, a in found}, key=known.index)
    return [Submission(s, a, found.get((s, a))) for s in students for a in used]


# ---------------------------------------------------------------- 1. prepare


def _grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def _locked(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("locked")) and not meta.get("solution")


def _as_type(cell, cell_type: str):
    """The same source as a cell of another type (a student retyped code <-> markdown)."""
    make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    new = make(cell.source)
    new.metadata = copy.deepcopy(cell.metadata)
    return new


def _release_metadata(cell, original) -> str | None:
    """Give cell the release's metadata; say what the student had changed (tags or grading fields)."""
    changed = [key for key in ("tags", "nbgrader")
               if cell.metadata.get(key, {} if key == "nbgrader" else []) != original.metadata.get(
                   key, {} if key == "nbgrader" else [])]
    cell.metadata = copy.deepcopy(original.metadata)
    if not changed:
        return None
    what = "、".join({"tags": "标签", "nbgrader": "评分设置"}[k] for k in changed)
    return f"单元 {_grade_id(original)} 的{what}被改动过：已按发布版恢复"


def repair(student: nbformat.NotebookNode, release: nbformat.NotebookNode,
           source: nbformat.NotebookNode | None = None) -> tuple[nbformat.NotebookNode, list[str]]:
    """Rebuild the submission on the release; say what had to change.

    Every cell the release has gets the release's metadata back (type, tags, nbgrader fields), and every
    locked cell (tests, read-only code) its source — from `source`, the instructor notebook, when given,
    so test cells carry their hidden tests. A deleted graded cell is put back; a duplicated locked cell
    is dropped; of a duplicated answer cell the last copy stays graded and the others become ordinary
    cells. The student's own extra cells stay where they were, without tags or grading fields.
    """
    ref_cells = [c for c in release.cells if _grade_id(c)]
    ref = {_grade_id(c): c for c in ref_cells}
    full = {_grade_id(c): c for c in (source.cells if source is not None else []) if _grade_id(c)}
    notes: list[str] = []
    last_answer_copy = {}
    for i, cell in enumerate(student.cells):
        gid = _grade_id(cell)
        if gid in ref and not _locked(ref[gid]):
            last_answer_copy[gid] = i
    out, position = [], {}
    for i, cell in enumerate(student.cells):
        gid = _grade_id(cell)
        if gid is None or gid not in ref:
            if gid is not None:
                notes.append(f"未知的评分单元 {gid}：当作普通单元")
            elif cell.metadata.get("nbgrader") or (cell.cell_type == "code" and cell.metadata.get("tags")):
                notes.append("自己加的单元带着评分设置或标签：已去掉")
            cell.metadata.pop("nbgrader", None)
            cell.metadata.pop("tags", None)
            out.append(cell)
            continue
        original = ref[gid]
        if gid in position and _locked(original):
            notes.append(f"重复的测试/只读单元 {gid}：已删除多余的一份")
            continue
        if not _locked(original) and last_answer_copy.get(gid) != i:
            notes.append(f"重复的答案单元 {gid}：评分用最后一份，其余当作普通单元")
            cell.metadata.pop("nbgrader", None)
            cell.metadata.pop("tags", None)
            out.append(cell)
            continue
        if cell.cell_type != original.cell_type:
            notes.append(f"单元 {gid} 的类型被改成 {cell.cell_type}：已改回 {original.cell_type}")
            cell = _as_type(cell, original.cell_type)
        if _locked(original):
            if cell.source != original.source:
                notes.append(f"锁定单元 {gid} 被改动过：已恢复原样（疑似篡改测试）")
            note = _release_metadata(cell, original)
            if note:
                notes.append(note)
            cell = copy.deepcopy(full.get(gid, original))
            cell.metadata = copy.deepcopy(original.metadata)
        else:
            note = _release_metadata(cell, original)
            if note:
                notes.append(note)
        position[gid] = len(out)
        out.append(cell)
    for k, original in enumerate(ref_cells):
        gid = _grade_id(original)
        if gid in position:
            continue
        notes.append(f"单元 {gid} 被删除：已按发布版恢复")
        before = [position[_grade_id(c)] for c in ref_cells[:k] if _grade_id(c) in position]
        at = max(before) + 1 if before else 0
        restored = copy.deepcopy(full.get(gid, original))
        restored.metadata = copy.deepcopy(original.metadata)
        out.insert(at, restored)
        position = {g: p + (p >= at) for g, p in position.items()}
        position[gid] = at
    fixed = copy.deepcopy(student)
    fixed.cells = out
    fixed.metadata = copy.deepcopy(release.metadata)  # kernelspec and all: the release's
    ids = set()
    for cell in fixed.cells:  # nbformat needs unique cell ids; a duplicated cell repeats one
        if cell.get("id") in ids or not cell.get("id"):
            cell["id"] = uuid.uuid5(uuid.NAMESPACE_URL, f"{cell.get('id')}-{len(ids)}").hex[:8]
        ids.add(cell["id"])
    return fixed, notes


def suspicious(nb: nbformat.NotebookNode) -> list[str]:
    """What the student's own code reaches for (SUSPICIOUS): a note for the instructor, not a verdict."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or _locked(cell):
            continue
        for pattern, what in SUSPICIOUS:
            if pattern.search(cell.source) and what not in found:
                found.append(what)
    return [f"可疑代码，请人工检查：{'、'.join(found)}"] if found else []


def prepare(sub: Submission, course: Path, release: nbformat.NotebookNode, source: nbformat.NotebookNode) -> None:
    """Read, validate and repair one submission into course/submitted (the original stays untouched)."""
    if sub.path is None:
        sub.status, sub.notes = "missing", ["没有交这份作业"]
        return
    try:
        if sub.path.stat().st_size > 50_000_000:
            raise ValueError(f"文件太大（{sub.path.stat().st_size} 字节）")
        with warnings.catch_warnings():  # a duplicated cell repeats its id; repair() gives new ones
            warnings.simplefilter("ignore")
            nb = nbformat.reads(sub.path.read_text(encoding="utf-8"), as_version=4)
        nbformat.validate(nb)
    except (ValueError, UnicodeDecodeError, json.JSONDecodeError, nbformat.ValidationError, KeyError,
            TypeError, AttributeError, RecursionError) as exc:
        sub.status, sub.notes = "invalid", [f"不是有效的 notebook：{type(exc).__name__}: {str(exc)[:200]}"]
        return
    fixed, notes = repair(nb, release, source)
    sub.notes = notes + suspicious(fixed)
    dest = course / "submitted" / sub.student / sub.assignment / f"{sub.assignment}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(execute.for_grading(fixed), dest)


# ---------------------------------------------------------------- nbgrader in this process


def _nbgrader_config(course: Path, db_url: str):
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = db_url
    config.CourseDirectory.course_id = COURSE_ID
    return config


# nbgrader's converters change the process's working folder and environment while they run: one at a
# time per process, even when two gradings share a process.
_NBGRADER = threading.Lock()


def _run_converter(kind, course: Path, config, assignment: str, student: str = "*", **options) -> None:
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id, coursedir.student_id = assignment, student
    app = kind(coursedir=coursedir, config=config)
    for key, value in options.items():
        setattr(app, key, value)
    with _NBGRADER:
        cwd = os.getcwd()
        try:
            app.start()
        finally:
            os.chdir(cwd)


def generate_assignments(course: Path, names: list[str], db_url: str) -> None:
    from nbgrader.converters import GenerateAssignment

    config = _nbgrader_config(course, db_url)
    for name in names:
        _run_converter(GenerateAssignment, course, config, name, student=".", force=True)


def record(course: Path, names: list[str], db_url: str) -> None:
    """nbgrader saves the judged notebooks' scores (course/executed -> gradebook, course/autograded)."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import AssignLatePenalties, CheckCellMetadata, SaveAutoGrades

    config = _nbgrader_config(course, db_url)
    config.CourseDirectory.submitted_directory = "executed"
    config.Autograde.sanitize_preprocessors = [CheckCellMetadata]
    config.Autograde.autograde_preprocessors = [SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    for name in names:
        if (course / "executed").is_dir() and any((course / "executed").glob(f"*/{name}")):
            _run_converter(Autograde, course, config, name, force=True, create_student=True)


def feedback(course: Path, names: list[str], db_url: str) -> None:
    from nbgrader.converters import GenerateFeedback

    config = _nbgrader_config(course, db_url)  # its GenerateFeedback steps: see nbgrader_config.py
    for name in names:
        if any((course / "autograded").glob(f"*/{name}")):
            _run_converter(GenerateFeedback, course, config, name, force=True)


# ---------------------------------------------------------------- 2.-3. expect and execute


def execute_one(sub: Submission, course: Path, runner: execute.Runner, expected: dict, work: Path) -> None:
    src = course / "submitted" / sub.student / sub.assignment / f"{sub.assignment}.ipynb"
    nb = nbformat.read(src, as_version=4)
    result = runner.run(nb, work / uuid.uuid4().hex, expected)
    sub.seconds = result.seconds
    if result.status != "ok":
        sub.status = result.status
    sub.notes += result.notes
    forged = sorted(gid for gid, v in result.verdicts.items() if v.forged)
    if forged:
        sub.notes.append(f"测试单元里出现了参考答案没有的评分记录（{', '.join(forged)}）：疑似伪造，已判 0 分")
    from safety import CapOutputs

    CapOutputs().preprocess(result.nb, {})
    dest = course / "executed" / sub.student / sub.assignment / f"{sub.assignment}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(result.nb, dest)


# ---------------------------------------------------------------- 4.-5. record and report


def gradebook_scores(db_url: str, course_id: str, subs: list[Submission]):
    """(student, assignment) -> (score, max, {grade_id: (score, max)}), and assignment -> max score."""
    from nbgrader.api import Gradebook, MissingEntry

    scores, maxima = {}, {}
    with Gradebook(db_url, course_id) as gb:
        for name in {s.assignment for s in subs}:
            maxima[name] = gb.find_assignment(name).max_score
        for sub in subs:
            if sub.status in ("missing", "invalid"):
                continue
            try:
                nb = gb.find_submission_notebook(sub.assignment, sub.assignment, sub.student)
            except MissingEntry:
                sub.status = "error"
                sub.notes.append("成绩册里没有这份提交")
                continue
            cells = {g.name: (g.score, g.max_score) for g in nb.grades}
            scores[(sub.student, sub.assignment)] = (nb.score, nb.max_score, cells)
    return scores, maxima


STATUS_ZH = {"missing": "没交", "invalid": "无效", "timeout": "超时", "killed": "被终止", "error": "出错"}


def summarize(subs: list[Submission], scores, maxima, header: list[str]) -> str:
    lines = ["# 评分汇总", "", *header, ""]
    for name in sorted(maxima):
        rows = [s for s in subs if s.assignment == name]
        totals = [scores[(s.student, name)][0] if (s.student, name) in scores else 0.0 for s in rows]
        top = maxima[name]
        lines.append(f"## {name}（满分 {top:g}，{len(rows)} 名学生）")
        lines.append(f"- 平均 {statistics.mean(totals):.2f}，中位数 {statistics.median(totals):g}，"
                     f"最低 {min(totals):g}，最高 {max(totals):g}")
        buckets = [0] * 5
        for t in totals:
            buckets[min(4, int(5 * t / top)) if top else 0] += 1
        labels = ["0-20%", "20-40%", "40-60%", "60-80%", "80-100%"]
        lines.append("- 分布：" + "  ".join(f"{label} {'#' * n}{n}" for label, n in zip(labels, buckets)))
        status = {k: sum(s.status == k for s in rows) for k in STATUS_ZH}
        if any(status.values()):
            lines.append("- 异常：" + "，".join(f"{k} {v}" for k, v in status.items() if v))
        failed: dict[str, int] = {}
        for s in rows:
            for gid, (got, most) in scores.get((s.student, name), (0, 0, {}))[2].items():
                failed[gid] = failed.get(gid, 0) + (got < most)
        worst = sorted(failed.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        if worst:
            lines.append("- 失分最多的测试单元：" + "，".join(f"{gid}（{n} 人）" for gid, n in worst if n))
        lines.append("")
    flagged = [s for s in subs if s.status != "ok" or s.notes]
    if flagged:
        lines.append("## 需要留意的提交")
        lines.append("")
        lines.append("| 学生 | 作业 | 状态 | 得分 | 发现了什么 |")
        lines.append("|---|---|---|---:|---|")
        for s in flagged:
            got = scores.get((s.student, s.assignment), (0.0,))[0]
            text = "；".join(s.notes).replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {s.student} | {s.assignment} | {s.status} | {got:g} | {text} |")
    return "\n".join(lines) + "\n"


def write_csvs(out: Path, subs: list[Submission], scores, maxima) -> None:
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student_id", "assignment", "score", "max_score", "status", "notes"])
        for s in sorted(subs, key=lambda s: (s.student, s.assignment)):
            score = scores.get((s.student, s.assignment), (0.0,))[0]
            w.writerow([s.student, s.assignment, f"{score:g}", f"{maxima[s.assignment]:g}", s.status,
                        "；".join(s.notes)])
    with open(out / "cells.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student_id", "assignment", "grade_id", "score", "max_score"])
        for (student, name), (_, _, cells) in sorted(scores.items()):
            for gid, (got, most) in sorted(cells.items()):
                w.writerow([student, name, gid, f"{got:g}", f"{most:g}"])


def grade(submissions: Path, out: Path, cell_timeout: int = 60, notebook_timeout: int = 600,
          db_url: str | None = None, jobs: int | None = None, sandbox: bool = True,
          limits=None, timings: dict | None = None) -> list[Submission]:
    """Grade every submission in the folder into out; see the module docstring. timings (if given) gets the
    seconds each step took: prepare, execute (reference runs included; recording and feedback of finished
    assignments run alongside, and their own seconds are in record and feedback), report, total."""
    started = time.perf_counter()
    timings = {} if timings is None else timings
    mark = [started]

    def lap(step: str) -> None:
        now = time.perf_counter()
        timings[step] = now - mark[0]
        mark[0] = now

    if sandbox:
        from sandbox import SandboxUnavailable, check_available, sweep_stale_cgroups

        try:
            check_available()
        except SandboxUnavailable as exc:
            raise SystemExit(f"无法启动评分沙箱，没有评分 / cannot start the grading sandbox, nothing graded:\n{exc}\n"
                             "（在不支持的机器上可以显式加 --unsafe-no-sandbox：学生代码将不受隔离，报告里会写明）")
        sweep_stale_cgroups()
    log = logging.getLogger("traitlets")  # nbgrader's converters log there
    if not log.handlers:
        log.addHandler(logging.StreamHandler())
    log.setLevel(logging.ERROR)
    os.environ["PATH"] = nbgrader_env()["PATH"]  # nbgrader runs `alembic` from PATH: the venv's
    # nbgrader's own gradebook code trips SQLAlchemy's autoflush warnings; they say nothing about the class
    warnings.filterwarnings("ignore", module=r"nbgrader\.api")
    jobs = jobs or max(1, min(2, os.cpu_count() or 1))
    submissions = submissions.resolve()
    out = out.resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    course = scratch_course(out / "course")
    db_url = db_url or f"sqlite:///{course / 'gradebook.db'}"
    subs = collect(submissions, course_assignments(course))
    if not subs:
        raise SystemExit(f"no submissions found in {submissions}")
    names = sorted({s.assignment for s in subs})
    generate_assignments(course, names, db_url)
    grading = out / "grading"   # trusted: package copies, expected records, working folders
    runners, expected = {}, {}
    for name in names:
        release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
        source = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
        for sub in subs:
            if sub.assignment == name:
                prepare(sub, course, release, source)
        runners[name] = execute.runner_for(name, grading, cell_timeout=cell_timeout,
                                           notebook_timeout=notebook_timeout, sandbox=sandbox, limits=limits)
    lap("prepare")

    def reference(name: str):
        try:
            return execute.expected_for(name, course / "source", runners[name], grading)
        except ValueError as exc:  # the instructor notebook itself fails: grade nothing of it, say why
            return exc

    with ThreadPoolExecutor(jobs) as pool:  # the reference runs, then every submission
        for name, exp in zip(names, pool.map(reference, names)):
            if isinstance(exp, ValueError):
                print(f"cannot grade {name}: {exp}", file=sys.stderr)
                for sub in subs:
                    if sub.assignment == name and sub.status == "ok":
                        sub.status = "error"
                        sub.notes.append(f"参考答案在评分环境里运行失败，这份作业没有评分：{exp}")
            else:
                expected[name] = exp
        running = {name: [pool.submit(execute_one, s, course, runners[name], expected[name], grading / "work")
                          for s in subs if s.assignment == name and s.status == "ok"] for name in names}
        # While the pool works through the later assignments, nbgrader (one writer, in this thread) records
        # each assignment whose notebooks are all judged, and writes its feedback.
        timings["record"] = timings["feedback"] = 0.0
        for name in names:
            for future in running[name]:
                future.result()
            for step, write in (("record", record), ("feedback", feedback)):
                began = time.perf_counter()
                write(course, [name], db_url)
                timings[step] += time.perf_counter() - began
    if sandbox:
        sweep_stale_cgroups()
    lap("execute")  # the sandboxes, with recording and feedback of finished assignments alongside
    if (course / "feedback").is_dir():  # copied out once every sandbox is gone
        shutil.copytree(course / "feedback", out / "feedback")
    scores, maxima = gradebook_scores(db_url, COURSE_ID, subs)
    write_csvs(out, subs, scores, maxima)
    header = (["**沙箱：已启用**（每份 notebook 在独立的 bubblewrap 沙箱里运行，判分在沙箱外）。"] if sandbox else
              ["**警告：没有沙箱（--unsafe-no-sandbox）**：学生代码在评分机器上不受隔离地运行；"
               "判分仍在内核之外，但文件、进程和网络都没有隔离。"])
    report = summarize(subs, scores, maxima, header)
    (out / "report.md").write_text(report, encoding="utf-8")
    lap("report")
    timings["total"] = time.perf_counter() - started
    print(report)
    graded = sum(s.status not in ("missing", "invalid") for s in subs)
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in timings.items() if k != "total")
    print(f"graded {graded} notebooks of {len(subs)} in {timings['total']:.1f} s ({steps}; {jobs} at a time, "
          f"sandbox {'on' if sandbox else 'OFF'}); results in {out}/grades.csv", file=sys.stderr)
    return subs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path)
    parser.add_argument("--out", type=Path, default=Path("grading-output"))
    parser.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell")
    parser.add_argument("--notebook-timeout", type=int, default=600, help="seconds per notebook")
    parser.add_argument("--db-url", default=os.environ.get("AGENTRL_DB_URL"),
                        help="gradebook URL (default: SQLite in the output folder; or set AGENTRL_DB_URL)")
    parser.add_argument("--jobs", type=int, default=None, help="notebooks executed at a time (default: 2)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="run student code without the sandbox (machines without namespaces); say so in the report")
    args = parser.parse_args()
    grade(args.submissions, args.out, args.cell_timeout, args.notebook_timeout, args.db_url, args.jobs,
          sandbox=not args.unsafe_no_sandbox)


if __name__ == "__main__":
    main()
