"""Report: grades.csv, cells.csv and report.md, safe to open whatever the students named things.

    report = write_reports(out, subs, scores, maxima, level="cgroup2")

Student-controlled text (ids, file names in notes) goes into a spreadsheet and a markdown page. In the CSV
files a cell that starts with =, +, -, @, a tab or a carriage return gets a leading apostrophe, as OWASP
recommends against formula injection (a spreadsheet shows the text instead of running it). In report.md
student text is HTML-escaped, its markdown punctuation backslash-escaped and its control characters shown
as escapes, so a name cannot become a link, an image, HTML or a broken table.
"""
from __future__ import annotations

import csv
import html
import re
import statistics
from pathlib import Path

from grader.grade.submissions import Submission, printable

STATUS_ZH = {"missing": "没交", "invalid": "无效", "conflict": "冲突", "timeout": "超时", "killed": "被终止",
             "error": "出错", "ungraded": "未评分（评分环境故障）"}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]()!|~#])")


def csv_text(text: str) -> str:
    """A CSV cell that no spreadsheet reads as a formula (OWASP: prefix a single quote)."""
    return "'" + text if text.startswith(FORMULA_START) else text


def md_text(text: str) -> str:
    """Student text as inert markdown: one line, no HTML, no link or image syntax, no table breaks."""
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(printable(text), quote=False))


def _score(scores, sub: Submission) -> float:
    return scores.get((sub.student, sub.assignment), (0.0,))[0]


def write_csvs(out: Path, subs: list[Submission], scores, maxima) -> None:
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student_id", "assignment", "score", "max_score", "status", "notes"])
        for s in sorted(subs, key=lambda s: (s.student, s.assignment)):
            top = maxima.get(s.assignment)
            w.writerow([csv_text(s.student), s.assignment, f"{_score(scores, s):g}",
                        "" if top is None else f"{top:g}", s.status, csv_text("；".join(s.notes))])
    with open(out / "cells.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student_id", "assignment", "grade_id", "score", "max_score"])
        for (student, name), (_, _, cells) in sorted(scores.items()):
            for gid, (got, most) in sorted(cells.items()):
                w.writerow([csv_text(student), name, gid, f"{got:g}", f"{most:g}"])


def student_table(subs: list[Submission], scores, maxima) -> list[str]:
    """One row per student: each assignment's score (and its status when it is not `ok`; 未改动 for a notebook
    handed in as released), and the student's total."""
    names = sorted(maxima)
    by_student: dict[str, dict[str, Submission]] = {}
    for s in subs:
        if s.assignment:
            by_student.setdefault(s.student, {})[s.assignment] = s
    if not names or not by_student:
        return []
    top = sum(maxima.values())
    lines = ["## 每名学生", "", "| 学生 | " + " | ".join(names) + f" | 总分（满分 {top:g}） |",
             "|---|" + "---:|" * (len(names) + 1)]
    for student in sorted(by_student):
        cells, total = [], 0.0
        for name in names:
            sub = by_student[student].get(name)
            if sub is None:
                cells.append("—")
                continue
            got = _score(scores, sub)
            total += got
            flag = "，未改动" if sub.untouched else ""
            status = "" if sub.status == "ok" else f"，{STATUS_ZH.get(sub.status, sub.status)}"
            cells.append(f"{got:g}{status}{flag}" if sub.status != "missing" else "没交")
        lines.append(f"| {md_text(student)} | " + " | ".join(cells) + f" | {total:g} |")
    untouched = [s for s in subs if s.untouched]
    if untouched:
        lines += ["", f"未改动：{len(untouched)} 份 notebook 交上来时和发布版一样（一个空也没填）："
                  + "，".join(f"{md_text(s.student)}（{s.assignment}）" for s in untouched)]
    return lines + [""]


def summarize(subs: list[Submission], scores, maxima, header: list[str]) -> str:
    lines = ["# 评分汇总", "", *header, ""]
    for name in sorted(maxima):
        rows = [s for s in subs if s.assignment == name]
        totals = [_score(scores, s) for s in rows]
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
        lines += ["## 需要留意的提交", "", "| 学生 | 作业 | 状态 | 得分 | 发现了什么 |", "|---|---|---|---:|---|"]
        for s in flagged:
            lines.append(f"| {md_text(s.student)} | {s.assignment or '—'} | {s.status} | {_score(scores, s):g} "
                         f"| {md_text('；'.join(s.notes))} |")
        lines.append("")
    lines += student_table(subs, scores, maxima)
    return "\n".join(lines).rstrip("\n") + "\n"


HEADERS = {
    "cgroup2": "**沙箱：已启用，隔离级别 cgroup2**（每份 notebook 在自己的 bubblewrap 沙箱和 cgroup v2 组里运行，"
               "判分在沙箱外）。",
    "cgroup1": "**沙箱：已启用，隔离级别 cgroup1**（每份 notebook 在自己的 bubblewrap 沙箱和 cgroup v1 组里运行，"
               "判分在沙箱外）。",
    "job": "**沙箱：已启用，隔离级别 job**（作业级：一次只评一份，每份在自己的 bubblewrap 沙箱里，用作业或 pod "
           "自己的限额；哪些保证成立见 python -m grader doctor；判分在沙箱外）。",
    "none": "**警告：没有沙箱（--isolation=none / --unsafe-no-sandbox）**：学生代码在评分机器上不受隔离地运行；"
            "判分仍在内核之外，但文件、进程和网络都没有隔离。",
}


def write_reports(out: Path, subs: list[Submission], scores, maxima, level: str, kept: int = 0) -> str:
    """grades.csv, cells.csv and report.md in out; return the report's text (its header names the
    isolation level the class was graded at, and how many rows were kept from an earlier run in out)."""
    write_csvs(out, subs, scores, maxima)
    header = [HEADERS[level]]
    if kept:
        header += ["", f"**又评了一次，写进了上次的输出**：只评新交或文件改过的作业，其余 {kept} 行沿用上次的评分"
                       "（成绩册、反馈页和 autograded/ 里的都没有动）。"]
    report = summarize(subs, scores, maxima, header)
    (out / "report.md").write_text(report, encoding="utf-8")
    return report
