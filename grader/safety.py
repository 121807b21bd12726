"""nbgrader preprocessors that make autograding hold against what real (and hostile) submissions do.

SkipDemoCells (before execution): cells tagged `demo` (timing plots, comparison tables, the setup
    cell) teach but grade nothing; they are not run while grading. A test or answer cell is never
    skipped, whatever its tags say.
InertStudentText (before execution) and InertOutputs (after it): nothing a student wrote or printed stays
    active (sanitize.py).
SandboxedExecute (the execution step of `nbgrader autograde` in this course): runs the notebook in
    the grading sandbox (grader/execute.py) and decides every test cell's verdict outside the kernel
    (grader/verdict.py) against the reference notebook's records, computed once and cached.
CapOutputs (after execution): every output of every MIME type is capped (text, images, HTML, JSON),
    and so is the whole notebook, so one print of 50 MB or a 40 MB image ends up neither in the
    gradebook nor in every feedback page.

`make grade` (grader/grade.py) runs the same steps, with notebooks executed in parallel.
"""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

from cells import is_demo
from sanitize import inert_cell, inert_outputs


def _course_root(preprocessor) -> Path:
    """The course folder nbgrader runs in (CourseDirectory.root in the config; else the working folder)."""
    root = preprocessor.config.get("CourseDirectory", {}).get("root")
    return Path(root) if root else Path.cwd()


class SkipDemoCells(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, index):
        if is_demo(cell):
            cell.source = "# (demo cell: not run while grading)"
        return cell, resources


class InertStudentText(NbGraderPreprocessor):
    """Before execution: markdown and raw cells that are not the release's own become inert HTML
    (sanitize.py), so neither formgrader nor the feedback renders a student's script."""

    def preprocess(self, nb, resources):
        name = str(resources.get("nbgrader", {}).get("assignment"))
        release = _course_root(self) / "release" / name / f"{name}.ipynb"
        self._trusted = {c.source for c in nbformat.read(release, as_version=4).cells
                         if c.cell_type == "markdown"} if release.is_file() else set()
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type in ("markdown", "raw") and cell.source not in self._trusted:
            inert_cell(cell)
        return cell, resources


class InertOutputs(NbGraderPreprocessor):
    """After execution: every output inert (sanitize.inert_outputs), the verdict marks kept."""

    def preprocess_cell(self, cell, resources, index):
        from verdict import VERDICT_MARK

        inert_outputs(cell, keep_metadata=(VERDICT_MARK,))
        return cell, resources


class CapOutputs(NbGraderPreprocessor):
    max_chars = Integer(20_000, help="longest text kept per output").tag(config=True)
    max_rich_bytes = Integer(300_000, help="largest image / HTML / JSON output kept").tag(config=True)
    max_notebook_bytes = Integer(3_000_000, help="all outputs of the notebook together").tag(config=True)

    def _cap(self, text: str) -> str:
        if len(text) <= self.max_chars:
            return text
        return text[: self.max_chars] + f"\n… [输出过长：共 {len(text)} 个字符，只保留前 {self.max_chars} 个]\n"

    def preprocess(self, nb, resources):
        self._total = 0
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        kept = []
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                output.text = self._cap(output.text)
            elif output.output_type == "error":
                output.evalue = self._cap(str(output.get("evalue", "")))
                output.traceback = [self._cap(line) for line in output.get("traceback", [])[:50]]
            for key, value in list(output.get("data", {}).items()):
                size = len(value) if isinstance(value, str) else len(json.dumps(value))
                if key.startswith("text/plain") and isinstance(value, str):
                    output.data[key] = self._cap(value)
                elif size > self.max_rich_bytes:
                    del output.data[key]
                    output.data.setdefault("text/plain", f"[{key} 输出过大（{size} 字节），评分时没有保留]")
            size = len(json.dumps(output))
            if self._total + size > self.max_notebook_bytes:
                kept.append(nbformat.v4.new_output(
                    "stream", name="stdout", text="[整本 notebook 的输出过大，这之后的输出没有保留]\n"))
                self._total = self.max_notebook_bytes
                break
            self._total += size
            kept.append(output)
        if cell.cell_type == "code":
            cell.outputs = kept
        return cell, resources


class SandboxedExecute(NbGraderPreprocessor):
    """`nbgrader autograde`'s execution step for this course: sandboxed kernel + trusted verdict.

    The reference records of an assignment come from running its instructor notebook the same way
    (cached in <course>/.grading/expected/, keyed by what they depend on)."""

    timeout = Integer(60, help="seconds per cell").tag(config=True)
    notebook_timeout = Integer(600, help="seconds per notebook").tag(config=True)

    def preprocess(self, nb, resources):
        import execute

        course = _course_root(self)
        assignment = resources["nbgrader"]["assignment"]
        grading = course / ".grading"
        runner = execute.runner_for(assignment, grading, cell_timeout=self.timeout,
                                    notebook_timeout=self.notebook_timeout)
        expected = execute.expected_for(assignment, course / "source", runner, grading)
        workdir = grading / "work" / f"{resources['nbgrader']['student']}-{assignment}"
        result = runner.run(nb, workdir, expected)
        resources.setdefault("agentrl", {})["result"] = result
        return result.nb, resources
