"""Figures a reader can refer to: every figure a notebook page's code draws gets a numbered caption, and its
alt text is the figure's own title, not the image's file path.

The title travels inside the PNG (agentrl_ref/teaching/shared/figure_title.py writes it as the PNG's "Title"
text when the kernel shows a figure). After a page is read, each image output of its cells becomes a figure:
the image with alt "图 N：<title>" and the caption "图 N：<title>", N counting the page's figures from 1. An image
with no title is numbered all the same ("图 N"); the build says which, so a figure without a title is fixed at
its source.
"""
from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.util import logging

from agentrl_ref.teaching.shared.figure_title import read_title

LOGGER = logging.getLogger(__name__)
LABEL = "图 {n}"


def _image_file(app, node) -> Path | None:
    uri = node.get("candidates", {}).get("*") or node.get("uri", "")
    for base in (Path(app.srcdir), Path(app.srcdir) / Path(node.source or "").parent):
        path = (base / uri).resolve()
        if path.is_file():
            return path
    return None


def caption_figures(app, doctree) -> None:
    docname = app.env.docname
    outputs = [node for node in doctree.findall(nodes.image)
               if any("cell_output" in (parent.get("classes") or []) for parent in _parents(node))]
    for n, image in enumerate(outputs, start=1):
        path = _image_file(app, image)
        title = read_title(path.read_bytes()) if path and path.suffix == ".png" else ""
        if not title:
            print(f"{docname}: {LABEL.format(n=n)} has no title (set one on the figure at its source)")
        label = LABEL.format(n=n) + (f"：{title}" if title else "")
        image["alt"] = label
        figure = nodes.figure("", classes=["course-figure"])
        figure["ids"] = [f"fig-{n}"]
        image.replace_self(figure)
        figure += image
        figure += nodes.caption(label, "", nodes.strong(LABEL.format(n=n), LABEL.format(n=n)),
                                nodes.Text(f"：{title}" if title else ""))


def _parents(node):
    while node.parent is not None:
        node = node.parent
        yield node


def setup(app) -> None:
    app.connect("doctree-read", caption_figures)
