"""The `cloze` directive: one MLM practice card, built from agentrl_ref.teaching.cloze.cards at build time.

    ```{cloze} format_reward
    ```

writes the card's data (the snippet cut into gaps and maskable tokens, N and k per level) as a JSON
island for _static/course/cloze.js, plus the plain code and the counter for readers without
JavaScript. The snippet is read from its source (notebook answer or agentrl_ref) during the build,
so the page cannot drift from it. Pages with a card get cloze.js and cloze.css, no other page does.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

CARD_CLASS = "cloze-raw"
JS_FILE = "course/cloze.js"
CSS_FILE = "course/cloze.css"


def _source_label(snippet) -> str:
    kind, _, ref = snippet.source.partition(":")
    names = "、".join(snippet.names)
    if kind == "notebook":
        return f"来源：练习 {ref} 参考答案中的 {names}"
    return f"来源：参考实现 {ref} 中的 {names}"


def card_html(key: str) -> str:
    from agentrl_ref.teaching.cloze import cards as cloze

    snippet = cloze.get_snippet(key)
    data = cloze.export_snippet(snippet)
    code = "".join(data["pieces"])
    # JSON inside <script>: "</" and "<!--" must not appear literally (both are valid JSON escapes)
    island = json.dumps(data, ensure_ascii=False).replace("</", "<\\/").replace("<!--", "<\\u0021--")
    source = html.escape(_source_label(snippet))
    return (
        f'<div class="cloze-card" id="cloze-{html.escape(key)}" data-cloze-key="{html.escape(key)}">\n'
        f'<script type="application/json" class="cloze-data">{island}</script>\n'
        f'<p class="cloze-source">{source}</p>\n'
        f'<p class="cloze-counter">共 {data["n"]} 个可挖空位 | 已挖 0 个</p>\n'
        f'<pre class="cloze-static"><code>{html.escape(code)}</code></pre>\n'
        "</div>\n"
    )


def _source_files(key: str) -> list[Path]:
    """What the card is made of: the cloze module and the snippets `make release` cut into the package."""
    from agentrl_ref.teaching.cloze import cards as cloze

    return [Path(cloze.__file__), cloze.DATA]


class ClozeDirective(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self):
        key = self.arguments[0]
        try:
            markup = card_html(key)
        except (KeyError, ValueError, SyntaxError, OSError) as err:
            raise self.error(f"cloze {key!r}: {err}") from err
        for path in _source_files(key):
            self.env.note_dependency(str(path))
        node = nodes.raw("", markup, format="html", classes=[CARD_CLASS])
        return [node]


def add_page_assets(app, pagename, templatename, context, doctree) -> None:
    """cloze.js and cloze.css on the pages that hold a card, and only there."""
    if doctree is None:
        return
    if any(CARD_CLASS in node.get("classes", []) for node in doctree.findall(nodes.raw)):
        app.add_css_file(CSS_FILE)
        app.add_js_file(JS_FILE)


def setup(app) -> None:
    app.add_directive("cloze", ClozeDirective)
    app.connect("html-page-context", add_page_assets)
