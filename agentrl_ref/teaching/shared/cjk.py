"""Chinese text in the course's figures, and never a missing glyph.

    cjk_font()            the CJK font matplotlib draws figure text with ('Noto Sans CJK SC': Debian's
                          fonts-noto-cjk, which `make deps`, `make book` and `make lab` install), or None where
                          there is none (Colab, Binder, a laptop without it)
    zh(chinese, english)  the Chinese text where that font exists, the English one elsewhere

A figure with Chinese text and no CJK font shows empty boxes, and matplotlib says "Glyph ... missing" on stderr
(which fails the book's -W build and makes nbgrader score a test cell 0). So every Chinese string of a figure
goes through zh(): Chinese when a CJK font is there, the English original otherwise. The first call appends the font
to font.family: Latin letters, digits and the minus sign keep the first family (DejaVu Sans by default), and
matplotlib takes every character that font lacks from the CJK font (its font fallback runs along font.family,
not along the font.sans-serif list).

A font installed after matplotlib built its font cache is not in the cache: cjk_font() then looks for the font
files among the system's fonts and adds them (milliseconds, once).
"""
from __future__ import annotations

from functools import lru_cache

CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei")
_FILE_HINTS = ("notosanscjk", "sourcehansans", "notosanssc", "wqy")


def _known(names) -> str | None:
    from matplotlib import font_manager

    present = {entry.name for entry in font_manager.fontManager.ttflist}
    return next((name for name in names if name in present), None)


@lru_cache(maxsize=1)
def cjk_font() -> str | None:
    """The CJK font for figure text (and font.sans-serif set to use it), or None."""
    import matplotlib
    from matplotlib import font_manager

    font = _known(CJK_FONTS)
    if font is None:  # installed after matplotlib's font cache was built
        for path in font_manager.findSystemFonts():
            if any(hint in path.replace("-", "").replace("_", "").lower() for hint in _FILE_HINTS):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    continue
        font = _known(CJK_FONTS)
    if font is not None:
        families = [name for name in matplotlib.rcParams["font.family"] if name != font]
        matplotlib.rcParams["font.family"] = families + [font]
    return font


def zh(chinese: str, english: str) -> str:
    """chinese where figures can show it (a CJK font is installed), english elsewhere."""
    return chinese if cjk_font() else english


# At import, not at the first zh(): a text object takes its fonts from rcParams when it is created (an axes'
# title is created with the axes), so the font must be in font.family before a plot function makes its figure.
cjk_font()

# Every course figure module imports this one: its figures carry their title into the PNG (figure_title.py).
from agentrl_ref.teaching.shared import figure_title  # noqa: E402

figure_title.install()
