"""Feedback: the HTML page a student gets back, written by nbgrader's feedback template in Chinese.

    write_feedback(nb, resources, dest)   # nb: the judged notebook; resources: nbgrader's (student, db_url…)
    write_feedback(nb, resources, dest, extra=[Step])   # extra steps after FEEDBACK's own

The page is what `nbgrader generate_feedback` writes (its grade lookup; its template's structure, in Chinese:
templates/feedback_zh), built by the preprocessors the course's nbgrader_config.py gives GenerateFeedback
(FEEDBACK, below): the scores from the gradebook, no hidden tests, no kernel output but the verdicts, which say
what check() said (verdict.py, explain.py), and each test cell named by its first visible test
(StudentFacingOutputs). MathJax comes from the feedback folder itself (mathjax.py), never from a CDN.
`make grade` writes each page as soon as its notebook is recorded (WriteFeedback, after lists.RECORD in the
writer thread). One notebook at a time, so a notebook nbconvert cannot render loses its own page and nothing else.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

import nbformat
import nbgrader.converters
from nbconvert import HTMLExporter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import ClearHiddenTests, GetGrades, NbGraderPreprocessor
from traitlets.config import Config

from grader.cells import grade_id, is_test
from grader.course import course_of
from grader.grade.mathjax import install as install_mathjax
from grader.grade.state import KEY, NotebookState
from grader.grade.marks import mark, verdict_outputs

_TEMPLATES = Path(nbgrader.converters.__file__).resolve().parent.parent / "server_extensions" / "formgrader"
OWN_TEMPLATES = Path(__file__).resolve().parent / "templates"   # feedback_zh: nbgrader's feedback template, in Chinese


def student_facing(cell) -> None:
    """A code cell without the kernel's outputs, except the verdicts (verdict.py marks them). What the
    student's code printed at grading time could carry the hidden tests it saw running (its own code runs
    inside the test cells); the instructor keeps the full executed notebook in the course's autograded/."""
    if cell.get("cell_type") == "code":
        cell["outputs"] = verdict_outputs(cell)
        if cell["outputs"]:
            mark(cell, len(cell["outputs"]))


class StudentFacingOutputs(NbGraderPreprocessor):
    """Every code cell as student_facing leaves it; every test cell named for the page's table of contents by
    its place and what its first visible test checks (the verdict's lines), with ✓ or ✗."""

    def preprocess(self, nb, resources):
        verdicts = NotebookState.of(resources).verdicts if KEY in resources else {}
        count = 0
        for cell in nb.cells:
            student_facing(cell)
            if is_test(cell):
                count += 1
                verdict = verdicts.get(grade_id(cell))
                cell.metadata["agentrl_title"] = test_title(count, verdict)
        return nb, resources


def test_title(count: int, verdict) -> str:
    """'测试 3 ✗：原页面的轨迹……' from the verdict's first visible test line (its title is the course's text)."""
    if verdict is None:
        return f"测试 {count}"
    mark = "✓" if verdict.passed else "✗"
    first = next((line[2:] for line in verdict.lines if line[:2] in ("✓ ", "✗ ")), "")
    return f"测试 {count} {mark}" + (f"：{first}" if first else "")


# nbgrader's GenerateFeedback list with the course's step: hidden tests cleared, the kernel's outputs gone
FEEDBACK = [GetGrades, ClearHiddenTests, StudentFacingOutputs, CSSHTMLHeaderPreprocessor]


def feedback_config() -> Config:
    """HTMLExporter settings of nbgrader's GenerateFeedback, with the course's Chinese copy of its feedback
    template (which extends nbconvert's classic one) and bootstrap's CSS."""
    config = Config()
    config.HTMLExporter.template_name = "feedback_zh"
    config.HTMLExporter.extra_template_basedirs = [str(OWN_TEMPLATES), str(_TEMPLATES / "templates")]
    config.HTMLExporter.extra_template_paths = [str(_TEMPLATES / "static" / "node_modules" / "bootstrap" / "dist"
                                                    / "css")]
    return config


_per_thread = threading.local()


def _exporter(extra: tuple = ()) -> HTMLExporter:
    """One exporter per thread and list of steps (its templates compiled once; its preprocessors keep
    per-call state). extra: steps after FEEDBACK's, before the CSS header."""
    exporters = _per_thread.__dict__.setdefault("exporters", {})
    if extra not in exporters:
        exporter = HTMLExporter(config=feedback_config())
        for preprocessor in FEEDBACK[:-1] + list(extra) + FEEDBACK[-1:]:
            exporter.register_preprocessor(preprocessor, enabled=True)
        exporters[extra] = exporter
    return exporters[extra]


def write_feedback(nb: nbformat.NotebookNode, resources: dict, dest: Path, extra=(),
                   mathjax: str | None = None) -> None:
    """The page into dest; mathjax: the URL of MathJax as the page loads it (mathjax.install), None for none."""
    resources = {**resources, "agentrl_mathjax": mathjax}
    body, _ = _exporter(tuple(extra)).from_notebook_node(nbformat.from_dict(nb), resources=resources)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + f".{os.getpid()}.tmp")
    tmp.write_text(body, encoding="utf-8")
    os.replace(tmp, dest)


class WriteFeedback(NbGraderPreprocessor):
    """`make grade`'s last step: the notebook's feedback page into the course's feedback/ folder, as
    `nbgrader generate_feedback` would write it once its scores are in the gradebook."""

    zh = "生成反馈"   # what the step does, for a note if it fails

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        feedback = course_of(self) / "feedback"
        write_feedback(nb, resources, feedback / info["student"] / info["assignment"] / f"{info['notebook']}.html",
                       mathjax=install_mathjax(feedback))
        return nb, resources
