"""One Chinese term per concept: the prose of every page avoids the variants book/glossary.md rules out.

Prose = the Markdown cells of the instructor notebooks (the pages and the student notebooks are made from
them) and the hand-written book/*.md pages, without fenced code, inline code, URLs and HTML comments.
"""
from __future__ import annotations

import functools
import re

import pytest

from course import ASSIGNMENTS, ROOT, source_notebook

GLOSSARY = ROOT / "book" / "glossary.md"


def _rows() -> list[list[str]]:
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[1:]  # without the header


@functools.cache
def _avoided() -> dict[str, str]:
    """variant -> the preferred term."""
    out = {}
    for term, _english, _meaning, _first, avoid in _rows():
        for variant in filter(None, (v.strip() for v in avoid.split("、"))):
            out[variant] = term
    return out


def _prose(text: str) -> str:
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    return re.sub(r"\(?https?://\S+", " ", text)


@functools.cache
def _pages() -> dict[str, str]:
    pages = {f"grader/source/{a}": "\n".join(c.source for c in source_notebook(a).cells if c.cell_type == "markdown")
             for a in ASSIGNMENTS}
    for path in sorted((ROOT / "book").glob("*.md")):
        if path != GLOSSARY:
            pages[f"book/{path.name}"] = path.read_text(encoding="utf-8")
    return pages


def test_glossary_rows_are_complete():
    rows = _rows()
    assert len(rows) >= 15
    for row in rows:
        assert len(row) == 5 and all(row[:4]), row
        assert re.fullmatch(r"练习 \d+", row[3]), row


@pytest.mark.parametrize("page", sorted(_pages()))
def test_prose_uses_the_preferred_terms(page):
    text = _prose(_pages()[page])
    found = [f"{variant!r} (use {term!r})" for variant, term in _avoided().items() if variant in text]
    assert not found, f"{page}: {found}"


def test_the_glossary_is_in_the_book():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert "book/glossary" in toc
