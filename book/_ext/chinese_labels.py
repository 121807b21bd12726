"""The last English words of the interface, in Chinese: labels that neither theme nor Sphinx translates.

Sphinx 7.4's zh_CN catalogue has no text for the permalinks' tooltips ("Link to this heading", "... image",
"... table", "... code", ...), and sphinx-book-theme 1.3.0 names two landmarks in English in its templates
(the chapter list `<nav aria-label="Main">`, the printed table of contents `<nav aria-label="Page">`). They are
replaced in every written page after the build (build-finished); a screen reader reads the landmarks' names out.
"""
from __future__ import annotations

import re
from pathlib import Path

PERMALINK = {"heading": "标题", "image": "图", "table": "表格", "code": "代码", "equation": "公式",
             "definition": "定义"}
LANDMARKS = {'aria-label="Main"': 'aria-label="章节列表"', 'aria-label="Page"': 'aria-label="本页目录"'}
_LINK_TO = re.compile(r'title="Link to this (\w+)"')


def chinese(page: str) -> str:
    page = _LINK_TO.sub(lambda m: f'title="链接到这个{PERMALINK.get(m.group(1), m.group(1))}"', page)
    for english, zh in LANDMARKS.items():
        page = page.replace(english, zh)
    return page


def translate_pages(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.html"):
        page = path.read_text(encoding="utf-8")
        new = chinese(page)
        if new != page:
            path.write_text(new, encoding="utf-8")


def setup(app) -> None:
    app.connect("build-finished", translate_pages)
