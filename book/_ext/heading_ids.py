"""Headings get ids made of their own words: #练习-3-多轮-loss-mask instead of docutils' #id1.

docutils builds a section's id from its title's ASCII letters; a Chinese title has none, so every such heading
became id1, id2, ...: a link to one says nothing and changes when a heading is added above it. This transform
(run while the page is read, before Sphinx collects the page's contents) gives such a section an id from its
title, Chinese kept, spaces and punctuation turned into "-", made unique in the page; the old idN stays as a
second id, so a link someone already copied still lands.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms import SphinxTransform

AUTO_ID = re.compile(r"id\d*")


def slug(title: str) -> str:
    words = re.findall(r"[0-9A-Za-z_\u3400-\u4dbf\u4e00-\u9fff]+", title.lower())
    return "-".join(words)


class HeadingIds(SphinxTransform):
    default_priority = 810

    def apply(self, **kwargs) -> None:
        taken = set(self.document.ids)
        for section in self.document.findall(nodes.section):
            if not section["ids"] or not AUTO_ID.fullmatch(section["ids"][0]) or not section.children:
                continue
            base = slug(section[0].astext()) if isinstance(section[0], nodes.title) else ""
            if not base:
                continue
            new, n = base, 1
            while new in taken:
                n += 1
                new = f"{base}-{n}"
            taken.add(new)
            section["ids"].insert(0, new)
            self.document.ids[new] = section


def setup(app):
    app.add_transform(HeadingIds)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
