"""Figures drawn for the page that shows them: the book's column width, text one can read there, legends off
the data, and a title that becomes the figure's caption and alt text.

    COLUMN_PX, MIN_TEXT_PX   the width the book shows a figure at on a desktop (757 px at 1366 px, measured in
                             tests/test_site_reader.py) and the smallest text a reader should meet there
    WIDTH_IN, DPI            what the course's figures are drawn at: 7.5 in at 100 dpi fit the column unscaled
    title_of(fig)            the figure's own title: its suptitle, else its axes' titles joined with "；"
    saved_width_px(fig)      the width of the PNG Jupyter's inline backend saves (bbox_inches="tight")
    text_as_shown(fig)       (text, px) for every visible text, at the size the page shows it
    legends_on_data(fig)     the legends that cover a line, a bar or a point of their own axes
    caption_figures()        in IPython, a figure's text/plain is its title: the book's figure_captions.py
                             makes it the numbered caption and the alt text (the PNG itself carries no words)
"""
from __future__ import annotations

COLUMN_PX = 757
MIN_TEXT_PX = 11.0
WIDTH_IN = 7.5
DPI = 100
SAVE_PAD_IN = 0.1  # matplotlib's savefig.pad_inches, used with bbox_inches="tight"


def title_of(fig) -> str:
    """The figure's suptitle, else the titles of its axes (in order, joined with "；"), else ""."""
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text().strip():
        return " ".join(suptitle.get_text().split())
    titles = [" ".join(ax.get_title(loc).split()) for ax in fig.get_axes() for loc in ("left", "center", "right")]
    return "；".join(title for title in titles if title)


def saved_width_px(fig) -> float:
    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()
    box = fig.get_tightbbox(renderer)
    return (box.width + 2 * SAVE_PAD_IN) * fig.dpi


def text_as_shown(fig, column_px: int = COLUMN_PX, width_px: float | None = None) -> list[tuple[str, float]]:
    """Every visible, non-empty text of fig with its height in CSS px as a desktop reader sees it (width_px: the
    saved width, when the caller has it already)."""
    import matplotlib.text

    scale = min(1.0, column_px / (width_px or saved_width_px(fig)))
    shown = []
    for text in fig.findobj(matplotlib.text.Text):
        if text.get_visible() and text.get_text().strip() and _drawn(text):
            shown.append((text.get_text(), text.get_fontsize() * fig.dpi / 72 * scale))
    return shown


def _drawn(text) -> bool:
    """False for texts matplotlib keeps but does not draw (tick labels outside the axis' view)."""
    axes = text.axes
    if axes is None or text.get_clip_on() is False:
        return True
    for axis in (axes.xaxis, axes.yaxis):
        for tick in axis.get_major_ticks() + axis.get_minor_ticks():
            if text in (tick.label1, tick.label2):
                lo, hi = sorted(axis.get_view_interval())
                return tick.get_visible() and lo - 1e-9 <= tick.get_loc() <= hi + 1e-9
    return True


def legends_on_data(fig) -> list[str]:
    """'<axes title>: <legend texts>' for each legend drawn over a line, bar or point of its axes."""
    import numpy as np
    from matplotlib.collections import PathCollection, PolyCollection
    from matplotlib.patches import Rectangle

    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()
    found = []
    for ax in fig.get_axes():
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        if not box.overlaps(ax.get_window_extent(renderer)):
            continue  # placed outside the axes
        inside = box.padded(-1)
        hits = 0
        for line in ax.get_lines():
            xy = line.get_xydata()
            if not line.get_visible() or len(xy) == 0:
                continue
            pts = line.get_transform().transform(_densify(np.asarray(xy, float)))
            hits += int(inside.count_contains(pts))
        for patch in ax.patches:
            if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_height() and patch.get_width():
                hits += int(inside.overlaps(patch.get_window_extent(renderer)))
        for coll in ax.collections:
            if isinstance(coll, PathCollection) and len(coll.get_offsets()):
                hits += int(inside.count_contains(coll.get_offset_transform().transform(coll.get_offsets())))
            elif isinstance(coll, PolyCollection):
                for path in coll.get_paths():
                    hits += int(inside.count_contains(coll.get_transform().transform(path.vertices)))
        if hits:
            labels = ", ".join(t.get_text() for t in legend.get_texts())
            found.append(f"{ax.get_title() or '(untitled axes)'}: {labels}")
    return found


def _densify(xy, per_segment: int = 12):
    """Points along a polyline (a legend may sit on a segment between two data points)."""
    import numpy as np

    xy = xy[np.isfinite(xy).all(axis=1)]
    if len(xy) < 2:
        return xy
    steps = np.linspace(0, 1, per_segment, endpoint=False)[:, None, None]
    segments = xy[:-1][None] + steps * (xy[1:] - xy[:-1])[None]
    return np.concatenate([segments.reshape(-1, 2), xy[-1:]])


def _title_text(fig, printer, cycle) -> None:
    printer.text(title_of(fig) or repr(fig))


def _register_title_text() -> None:
    import sys

    from matplotlib.figure import Figure

    shell = sys.modules["IPython"].get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["text/plain"].for_type(Figure, _title_text)


def caption_figures() -> bool:
    """In IPython, show a figure's title as its text/plain (what the book's caption and alt text come from)."""
    import sys

    ipython = sys.modules.get("IPython")  # not imported: no IPython shell runs this process
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    _register_title_text()
    # The inline backend, set up at the first figure, drops every formatter registered for Figure (IPython's
    # select_figure_formats), and it shows a cell's figures after the cell (a post_execute callback): register
    # again after every cell, ahead of the callback that shows them.
    callbacks = shell.events.callbacks["post_execute"]
    if _register_title_text not in callbacks:
        callbacks.insert(0, _register_title_text)
    return True


# At import: every plot module imports this one, so the book's pages get their captions.
caption_figures()


def page_problems(fig) -> list[str]:
    """What a reader of the book would trip on in fig: wider than the column (shrunk), text smaller than
    MIN_TEXT_PX as shown, a legend on the data, no title to caption it with. Empty when it is fit for the page."""
    width = saved_width_px(fig)
    problems = [f"{width:.0f} px wide, the column {COLUMN_PX}: shown shrunk"] if width > COLUMN_PX + 2 else []
    problems += [f"text {px:.1f} px as shown: {text!r}" for text, px in text_as_shown(fig, width_px=width)
                 if px < MIN_TEXT_PX - 1e-6]
    problems += [f"legend on the data: {where}" for where in legends_on_data(fig)]
    if not title_of(fig):
        problems.append("no title (the caption and the alt text come from it)")
    return problems
