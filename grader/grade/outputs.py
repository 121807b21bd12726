"""Cap outputs: every output of a judged notebook capped in size and made inert.

    cap_outputs(nb, OutputCaps())           # nbgrader's step for it: CapOutputs (lists.EXECUTE)

Every output of every MIME type is capped (text, images, HTML, JSON), and so is the whole notebook, so one
print of 50 MB or a 40 MB image ends up neither in the gradebook's folder nor in every feedback page.
Then every output is made inert (sanitize.py): nothing a student's code displayed runs in a browser.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

from grader.grade.sanitize import inert_outputs
from grader.grade.marks import verdict_outputs


@dataclass(frozen=True)
class OutputCaps:
    max_chars: int = 20_000             # longest text kept per output
    max_rich_bytes: int = 300_000       # largest image / HTML / JSON output kept
    max_notebook_bytes: int = 3_000_000  # all outputs of the notebook together


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [输出过长：共 {len(text)} 个字符，只保留前 {limit} 个]\n"


def cap_outputs(nb: nbformat.NotebookNode, caps: OutputCaps = OutputCaps()) -> None:
    """Cap every output and the notebook's total (in place), then make every output inert. The grader's own
    outputs (verdict.verdict_outputs: short, and what the student's page must show) are kept whole, after the rest."""
    total = 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        ours = verdict_outputs(cell)
        theirs = cell.get("outputs", [])[:len(cell.get("outputs", [])) - len(ours)]
        kept = []
        for output in theirs:
            if output.output_type == "stream":
                output.text = _cap(output.text, caps.max_chars)
            elif output.output_type == "error":
                output.evalue = _cap(str(output.get("evalue", "")), caps.max_chars)
                output.traceback = [_cap(line, caps.max_chars) for line in output.get("traceback", [])[:50]]
            for key, value in list(output.get("data", {}).items()):
                size = len(value) if isinstance(value, str) else len(json.dumps(value))
                if key.startswith("text/plain") and isinstance(value, str):
                    output.data[key] = _cap(value, caps.max_chars)
                elif size > caps.max_rich_bytes:
                    del output.data[key]
                    output.data.setdefault("text/plain", f"[{key} 输出过大（{size} 字节），评分时没有保留]")
            size = len(json.dumps(output))
            if total + size > caps.max_notebook_bytes:
                kept.append(nbformat.v4.new_output(
                    "stream", name="stdout", text="[整本 notebook 的输出过大，这之后的输出没有保留]\n"))
                total = caps.max_notebook_bytes
                break
            total += size
            kept.append(output)
        cell.outputs = kept + ours
        inert_outputs(cell)


class CapOutputs(NbGraderPreprocessor):
    """Every output capped and made inert (cap_outputs), with the caps as nbgrader settings."""

    zh = "整理输出"   # what the step does, for a note if it fails
    max_chars = Integer(OutputCaps.max_chars, help="longest text kept per output").tag(config=True)
    max_rich_bytes = Integer(OutputCaps.max_rich_bytes, help="largest image / HTML / JSON output kept").tag(
        config=True)
    max_notebook_bytes = Integer(OutputCaps.max_notebook_bytes, help="all outputs of the notebook").tag(config=True)

    def preprocess(self, nb, resources):
        cap_outputs(nb, OutputCaps(self.max_chars, self.max_rich_bytes, self.max_notebook_bytes))
        return nb, resources
