"""Every figure a page's code draws gets a numbered caption (图 N) and alt text: the figure's own title.

The course's plot modules make a figure's text/plain its title (agentrl_ref.teaching.shared.page_figure,
caption_figures). myst-nb keeps every mime type of an output in the doctree until its SelectMimeType post-transform
picks one for the builder, so this transform, which runs while the page is read, still sees both parts: it wraps
the output in a figure node (ids figure-1, figure-2, ... instead of id1) with the
title as caption and puts the title on the image as its alt text (a screen reader read out a file hash before).
Figures are numbered per page, 图 1 on every page's first figure (the prose can say 图 2); Sphinx's numfig is off
(numbers_per_page): it counts across the whole book (图 9 on exercise 7's first figure).
A figure whose text/plain is matplotlib's own "<Figure size ...>" has no title: it is left as it is, and
tests/test_site_reader.py fails on it.
"""
from __future__ import annotations

from docutils import nodes
from sphinx.transforms import SphinxTransform


def _parts(bundle: nodes.container) -> dict[str, nodes.container]:
    return {child["mime_type"]: child for child in bundle.children
            if isinstance(child, nodes.container) and "mime_type" in child}


def figure_title(bundle: nodes.container) -> str | None:
    """The title a plot module gave its figure, or None (not an image, or matplotlib's default repr)."""
    parts = _parts(bundle)
    if "image/png" not in parts or "text/plain" not in parts:
        return None
    title = " ".join(parts["text/plain"].astext().split()).strip("'\"")
    return None if not title or title.startswith("<Figure") else title


class CaptionFigures(SphinxTransform):
    default_priority = 800

    def apply(self, **kwargs) -> None:
        bundles = [node for node in self.document.findall(nodes.container) if node.get("nb_element") == "mime_bundle"]
        titled = [(bundle, title) for bundle in bundles if (title := figure_title(bundle))]
        for number, (bundle, title) in enumerate(titled, start=1):
            for image in _parts(bundle)["image/png"].findall(nodes.image):
                image["alt"] = title
            if isinstance(bundle.parent, nodes.figure):  # a cell that asked myst-nb for a figure itself
                continue
            figure = nodes.figure(ids=[f"figure-{number}"], classes=["course-figure"])
            bundle.replace_self(figure)
            figure += bundle
            label = f"图 {number}"
            figure += nodes.caption(f"{label} {title}", "", nodes.inline(label, label, classes=["caption-number"]),
                                    nodes.Text(" " + title))


def numbers_per_page(app, config) -> None:
    """numfig off: it numbers figures across the book. sphinx-jupyterbook-latex (which Jupyter Book loads) turns it
    on in its own config-inited handler, whatever _config.yml says; this one runs after it."""
    config.numfig = False


def setup(app):
    app.add_transform(CaptionFigures)
    app.connect("config-inited", numbers_per_page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
