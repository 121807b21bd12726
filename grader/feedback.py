"""Step 6, feedback: the HTML page a student gets back, written by nbgrader's feedback template.

    write_feedback(nb, resources, dest)   # nb: the judged notebook; resources: nbgrader's (student, db_url…)

The page is what `nbgrader generate_feedback` writes (its template, its grade lookup), built by the same
preprocessors the course's nbgrader_config.py gives GenerateFeedback (preprocessors.FEEDBACK): the scores
from the gradebook, no hidden tests, no kernel output but the verdicts. One notebook at a time, so a
notebook nbconvert cannot render loses its own page and nothing else.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

import nbformat
import nbgrader.converters
from nbconvert import HTMLExporter
from traitlets.config import Config

from grader.preprocessors import FEEDBACK

_TEMPLATES = Path(nbgrader.converters.__file__).resolve().parent.parent / "server_extensions" / "formgrader"


def feedback_config() -> Config:
    """HTMLExporter settings of nbgrader's GenerateFeedback: its feedback template and bootstrap's CSS."""
    config = Config()
    config.HTMLExporter.template_name = "feedback"
    config.HTMLExporter.extra_template_basedirs = [str(_TEMPLATES / "templates")]
    config.HTMLExporter.extra_template_paths = [str(_TEMPLATES / "static" / "node_modules" / "bootstrap" / "dist"
                                                    / "css")]
    return config


_per_thread = threading.local()


def _exporter() -> HTMLExporter:
    """One exporter per thread (its templates compiled once; its preprocessors keep per-call state)."""
    if not hasattr(_per_thread, "exporter"):
        exporter = HTMLExporter(config=feedback_config())
        for preprocessor in FEEDBACK:
            exporter.register_preprocessor(preprocessor, enabled=True)
        _per_thread.exporter = exporter
    return _per_thread.exporter


def write_feedback(nb: nbformat.NotebookNode, resources: dict, dest: Path) -> None:
    body, _ = _exporter().from_notebook_node(nbformat.from_dict(nb), resources=resources)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + f".{os.getpid()}.tmp")
    tmp.write_text(body, encoding="utf-8")
    os.replace(tmp, dest)
