"""make grade SUBMISSIONS=<folder>: autograde a whole class and say what happened to every notebook.

    python grader/grade.py SUBMISSIONS [--out DIR] [--cell-timeout S] [--notebook-timeout S]
                                       [--db-url URL --jobs N]

SUBMISSIONS holds `<student>/<assignment>/<assignment>.ipynb` (nbgrader's layout) or flat
`<student>_<assignment>.ipynb` files. Nothing in it is modified: every notebook is copied,
checked and, where a student broke the notebook's structure, repaired before nbgrader sees it.
Each (student, assignment) is autograded in its own nbgrader process with a time limit, so one
infinite loop or crash costs that notebook only. Output in --out (default grading-output/):
grades.csv (one row per student and assignment, with a status and notes), cells.csv (every
test cell's score), feedback/ (nbgrader's HTML feedback) and report.md (the printed summary).

The default gradebook is SQLite, which takes one writer, so notebooks are graded one after
another. With --db-url pointing at PostgreSQL, --jobs processes grade in parallel.
"""
from __future__ import annotations

import argparse
import copy
import csv
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grading import scratch_course
from release import assignments as course_assignments, nbgrader_env

COURSE_ID = "agentrl-cloze"  # as in nbgrader_config.py
SUSPICIOUS = [
    (re.compile(r"\bsys\.modules\b"), "改动 sys.modules"),
    (re.compile(r"\bbuiltins\b|__builtins__"), "改动 builtins"),
    (re.compile(r"__import__|\bimportlib\b"), "改动导入机制"),
    (re.compile(r"\bget_ipython\b|\brun_cell\b|\bshowtraceback\b"), "改动 IPython 内核"),
    (re.compile(r"agentrl_ref\.checks|\brun_test\b|\bAssertionError\b"), "改动测试代码"),
    (re.compile(r"(setattr\(\s*agentrl_ref|agentrl_ref\.\w+\s*=[^=])"), "替换 agentrl_ref"),
]


@dataclass
class Submission:
    student: str
    assignment: str
    path: Path | None            # None: the student handed in nothing for this assignment
    status: str = "ok"           # ok | missing | invalid | timeout | error
    notes: list[str] = field(default_factory=list)


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


def repair(student: nbformat.NotebookNode, release: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[str]]:
    """Give the submission the release's graded structure back; say what had to change.

    Locked cells (tests, read-only code) come from the release; a deleted graded cell is put
    back; a duplicated test cell is dropped; of a duplicated answer cell the last copy stays
    graded and the others become ordinary cells (so the code runs exactly as the student ran it);
    a retyped cell gets its type back. The student's own extra cells stay where they were.
    """
    ref_cells = [c for c in release.cells if _grade_id(c)]
    ref = {_grade_id(c): c for c in ref_cells}
    notes: list[str] = []
    last_answer_copy = {}
    for i, cell in enumerate(student.cells):
        gid = _grade_id(cell)
        if gid in ref and not _locked(ref[gid]):
            last_answer_copy[gid] = i
    out, position = [], {}
    for i, cell in enumerate(student.cells):
        gid = _grade_id(cell)
        if gid is None:
            out.append(cell)
            continue
        if gid not in ref:
            notes.append(f"未知的评分单元 {gid}：当作普通单元")
            cell.metadata.pop("nbgrader", None)
            out.append(cell)
            continue
        original = ref[gid]
        if gid in position:
            if _locked(original):
                notes.append(f"重复的测试/只读单元 {gid}：已删除多余的一份")
                continue
        if not _locked(original) and last_answer_copy.get(gid) != i:
            notes.append(f"重复的答案单元 {gid}：评分用最后一份，其余当作普通单元")
            cell.metadata.pop("nbgrader", None)
            out.append(cell)
            continue
        if cell.cell_type != original.cell_type:
            notes.append(f"单元 {gid} 的类型被改成 {cell.cell_type}：已改回 {original.cell_type}")
            cell = _as_type(cell, original.cell_type)
        if _locked(original) and cell.source != original.source:
            notes.append(f"锁定单元 {gid} 被改动过：已恢复原样（疑似篡改测试）")
            cell = copy.deepcopy(original)
        position[gid] = len(out)
        out.append(cell)
    for k, original in enumerate(ref_cells):
        gid = _grade_id(original)
        if gid in position:
            continue
        notes.append(f"单元 {gid} 被删除：已按发布版恢复")
        before = [position[_grade_id(c)] for c in ref_cells[:k] if _grade_id(c) in position]
        at = max(before) + 1 if before else 0
        out.insert(at, copy.deepcopy(original))
        position = {g: p + (p >= at) for g, p in position.items()}
        position[gid] = at
    fixed = copy.deepcopy(student)
    fixed.cells = out
    ids = set()
    for cell in fixed.cells:  # nbformat needs unique cell ids; a duplicated cell repeats one
        if cell.get("id") in ids or not cell.get("id"):
            cell["id"] = uuid.uuid5(uuid.NAMESPACE_URL, f"{cell.get('id')}-{len(ids)}").hex[:8]
        ids.add(cell["id"])
    return fixed, notes


def suspicious(nb: nbformat.NotebookNode) -> list[str]:
    """Student-written code that reaches into the test machinery: flagged for the instructor."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or _locked(cell):
            continue
        for pattern, what in SUSPICIOUS:
            if pattern.search(cell.source) and what not in found:
                found.append(what)
    return [f"可疑代码，请人工检查：{what}" for what in found]


def prepare(sub: Submission, course: Path, release: nbformat.NotebookNode) -> None:
    """Read, validate and repair one submission into course/submitted (the original stays untouched)."""
    if sub.path is None:
        sub.status, sub.notes = "missing", ["没有交这份作业"]
        return
    try:
        with warnings.catch_warnings():  # a duplicated cell repeats its id; repair() gives new ones
            warnings.simplefilter("ignore")
            nb = nbformat.reads(sub.path.read_text(encoding="utf-8"), as_version=4)
        nbformat.validate(nb)
    except (ValueError, UnicodeDecodeError, json.JSONDecodeError, nbformat.ValidationError, KeyError) as exc:
        sub.status, sub.notes = "invalid", [f"不是有效的 notebook：{type(exc).__name__}: {str(exc)[:200]}"]
        return
    fixed, notes = repair(nb, release)
    sub.notes = notes + suspicious(fixed)
    dest = course / "submitted" / sub.student / sub.assignment / f"{sub.assignment}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(fixed, dest)


def autograde(sub: Submission, course: Path, cell_timeout: int, notebook_timeout: int, db_args: list[str]) -> None:
    if sub.status != "ok":
        return
    cmd = [sys.executable, "-m", "nbgrader", "autograde", sub.assignment, "--student", sub.student, "--force",
           f"--Execute.timeout={cell_timeout}", *db_args]
    try:
        proc = subprocess.run(cmd, cwd=course, env=nbgrader_env(), capture_output=True, text=True,
                              timeout=notebook_timeout)
    except subprocess.TimeoutExpired:
        sub.status = "timeout"
        sub.notes.append(f"超过 {notebook_timeout} 秒仍未跑完（可能有死循环）：本 notebook 记 0 分")
        return
    if proc.returncode != 0 or "ERROR" in proc.stderr:
        sub.status = "error"
        last = [line for line in proc.stderr.splitlines() if "ERROR" in line][-1:] or proc.stderr.splitlines()[-1:]
        sub.notes.append("nbgrader 无法评分：" + (last[0][:200] if last else f"exit {proc.returncode}"))


def register_students(db_url: str, course_id: str, students: list[str]) -> None:
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id) as gb:
        for student in students:
            gb.update_or_create_student(student)


def gradebook_scores(db_url: str, course_id: str, subs: list[Submission]):
    """(student, assignment) -> (score, max, {grade_id: (score, max)}), and assignment -> max score."""
    from nbgrader.api import Gradebook, MissingEntry

    scores, maxima = {}, {}
    with Gradebook(db_url, course_id) as gb:
        for name in {s.assignment for s in subs}:
            maxima[name] = gb.find_assignment(name).max_score
        for sub in subs:
            if sub.status != "ok":
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


def summarize(subs: list[Submission], scores, maxima) -> str:
    lines = ["# 评分汇总", ""]
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
        status = {k: sum(s.status == k for s in rows) for k in ("missing", "invalid", "timeout", "error")}
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
        for s in flagged:
            lines.append(f"- {s.student} / {s.assignment}：{s.status}；" + "；".join(s.notes))
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


def grade(submissions: Path, out: Path, cell_timeout: int = 60, notebook_timeout: int = 900,
          db_url: str | None = None, jobs: int = 1) -> list[Submission]:
    submissions = submissions.resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    course = scratch_course(out / "course")
    db_url = db_url or f"sqlite:///{course / 'gradebook.db'}"
    db_args = [f"--CourseDirectory.db_url={db_url}"]
    subs = collect(submissions, course_assignments(course))
    if not subs:
        raise SystemExit(f"no submissions found in {submissions}")
    for name in sorted({s.assignment for s in subs}):
        subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", name, "--force",
                        "--log-level=WARN", *db_args], cwd=course, env=nbgrader_env(), check=True)
        release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
        for sub in subs:
            if sub.assignment == name:
                prepare(sub, course, release)
    # Create every student first: parallel nbgrader processes grading two notebooks of one student
    # would otherwise both insert that student, and one of them fails on the unique key.
    register_students(db_url, COURSE_ID, sorted({s.student for s in subs if s.status == "ok"}))
    started = time.perf_counter()
    run = lambda sub: autograde(sub, course, cell_timeout, notebook_timeout, db_args)  # noqa: E731
    if jobs > 1:
        if db_url.startswith("sqlite"):
            raise SystemExit("--jobs > 1 needs a --db-url that takes several writers (PostgreSQL): SQLite takes one")
        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(run, subs))
    else:
        for sub in subs:
            run(sub)
    elapsed = time.perf_counter() - started
    for name in sorted({s.assignment for s in subs}):
        subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", name, "--force",
                        "--log-level=ERROR", *db_args], cwd=course, env=nbgrader_env(), capture_output=True)
    if (course / "feedback").is_dir():
        shutil.copytree(course / "feedback", out / "feedback")
    scores, maxima = gradebook_scores(db_url, COURSE_ID, subs)
    write_csvs(out, subs, scores, maxima)
    report = summarize(subs, scores, maxima)
    (out / "report.md").write_text(report, encoding="utf-8")
    print(report)
    graded = sum(s.status in ("ok",) for s in subs)
    print(f"autograded {graded} notebooks of {len(subs)} in {elapsed:.1f} s with {jobs} process(es); "
          f"results in {out}/grades.csv")
    return subs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path)
    parser.add_argument("--out", type=Path, default=Path("grading-output"))
    parser.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell")
    parser.add_argument("--notebook-timeout", type=int, default=900, help="seconds per notebook")
    parser.add_argument("--db-url", default=None, help="gradebook URL (default: SQLite in the output folder)")
    parser.add_argument("--jobs", type=int, default=1, help="parallel autograde processes (PostgreSQL only)")
    args = parser.parse_args()
    grade(args.submissions, args.out, args.cell_timeout, args.notebook_timeout, args.db_url, args.jobs)


if __name__ == "__main__":
    main()
