"""Which outputs of a graded notebook are the grader's own (its verdicts and marks), and only those.

The grader's outputs are the last `n` of a cell, with n in the cell's metadata (VERDICT_MARK): not in the outputs'
own metadata, which the kernel writes (a student's display(..., metadata=...) could claim to be a verdict and put
anything on the student's page) and which nbformat's schema does not allow on an error output. A cell's metadata
comes from the submission: unmark() drops every claim before the grader writes its own (verdict.judge_notebook).
The student's page keeps only these outputs (feedback.student_facing); capping never cuts them (outputs.py).
"""
from __future__ import annotations

import nbformat

VERDICT_MARK = "agentrl_verdict"  # in a cell's metadata: how many of its last outputs the grader wrote


def unmark(nb: nbformat.NotebookNode) -> None:
    """No cell or output of nb says it holds a verdict (what a submission or its kernel claimed is gone)."""
    for cell in nb.cells:
        cell.get("metadata", {}).pop(VERDICT_MARK, None)
        for output in cell.get("outputs", []):
            if isinstance(output.get("metadata"), dict):
                output["metadata"].pop(VERDICT_MARK, None)


def mark(cell, count: int = 1) -> None:
    """The last `count` outputs of cell are the grader's."""
    cell.setdefault("metadata", {})[VERDICT_MARK] = count


def verdict_outputs(cell) -> list:
    """The grader's outputs of cell (its last ones, as mark() says), in order."""
    count = cell.get("metadata", {}).get(VERDICT_MARK)
    outputs = cell.get("outputs", [])
    if type(count) is not int or count <= 0:
        return []
    return list(outputs[-count:])
