"""The sidebar buttons: one chapter-list button and one page-contents button per page, named in Chinese.

pydata-sphinx-theme 0.17.1 fills `navbar_persistent` with its search field whenever the user's
html_theme_options do not name it (its __init__.py), overriding sphinx-book-theme's empty default. The site
then also carries pydata's own header (<header id="pst-header">) with a second `.primary-toggle` and
`.secondary-toggle`, hidden by sphinx-book-theme's CSS, ahead of the article header's visible ones. Both themes
attach their click handlers to document.querySelector(".primary-toggle") (the first one), so the visible
buttons did nothing at any width. With navbar_persistent set to [] the header is not rendered: the article
header's buttons are the only ones, and the theme's handlers find them (the search stays in the article header
and in the sidebar).

templates/toggle-primary-sidebar.html and toggle-secondary-sidebar.html give the buttons Chinese names instead
of the theme's "Toggle primary sidebar"; the search box's placeholder is Chinese too (jupyter-book sets
"Search this book...").
"""
from __future__ import annotations

SEARCH_PLACEHOLDER = "搜索本书……"


def single_header(app, config) -> None:
    options = dict(config.html_theme_options or {})
    options["navbar_persistent"] = []
    options["search_bar_text"] = SEARCH_PLACEHOLDER
    config.html_theme_options = options


def setup(app) -> None:
    app.connect("config-inited", single_header)
