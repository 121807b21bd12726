"""The theme files the course overrides (book/_ext/templates/) stay what the installed theme ships, but for the
change each one is there for: a theme upgrade that changes the original fails here, not silently on the site."""
from __future__ import annotations

import re
from pathlib import Path

import pydata_sphinx_theme

TEMPLATES = Path(__file__).resolve().parents[1] / "book" / "_ext" / "templates"
THEME = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
FONTAWESOME_JS = re.compile(r"  <!-- So that users can add custom icons -->\n"
                            r"  <script defer src=\"\{\{ pathto\('_static/scripts/fontawesome\.js', 1\) \}\}"
                            r"\?digest=\w+\"></script>\n")


def _without_leading_comment(text: str) -> str:
    return re.sub(r"\A<!--.*?-->\n", "", text, flags=re.S)


def test_the_webpack_macros_are_the_themes_without_fontawesome_js():
    ours = (TEMPLATES / "static" / "webpack-macros.html").read_text(encoding="utf-8")
    theirs = (THEME / "static" / "webpack-macros.html").read_text(encoding="utf-8")
    assert FONTAWESOME_JS.search(theirs), "the theme no longer loads fontawesome.js this way: redo the override"
    assert _without_leading_comment(ours) == _without_leading_comment(FONTAWESOME_JS.sub("", theirs))
    assert "fontawesome.js" not in _without_leading_comment(ours)


def test_the_theme_css_draws_the_icons_without_the_script():
    """What replaces fontawesome.js: the theme's own CSS, its @font-face and a rule for every icon a page uses."""
    css = (THEME / "static" / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    assert "fa-solid-900.woff2" in css and "Font Awesome 6 Free" in css.replace("\\ ", " ")
    used = ("fa-magnifying-glass", "fa-bars", "fa-list", "fa-sun", "fa-moon", "fa-circle-half-stroke", "fa-expand",
            "fa-arrow-up", "fa-file-pdf", "fa-file", "fa-download", "fa-angle-right", "fa-angle-left", "fa-outdent",
            "fa-file-zipper", "fa-file-arrow-down", "fa-code")
    assert [icon for icon in used if f".{icon}:before" not in css] == []
