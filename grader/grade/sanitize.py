"""Nothing active leaves the grader: student text is made inert before it is stored or rendered.

The notebooks the grader writes into the course folder are read by people: the feedback page a student
opens, and formgrader, where the instructor (logged in, on the Jupyter origin) reads every submission.
nbconvert renders markdown and HTML outputs as they are, so a `<script>`, an `onerror=` or a
`javascript:` link written by a student would run in the instructor's browser. Here every piece of
student-controlled content becomes inert, in the notebook itself, so every renderer is safe:

    inert_markdown(source, attachments)  markdown cell -> sanitized HTML on one line (no script, no event
                                         handler, no javascript:/data: link; attachments embedded as images)
    inert_raw(source)                    raw cell -> escaped <pre> (raw HTML cells render unsanitized)
    inert_outputs(cell)                  outputs: MIME types allowlisted, HTML sanitized, markdown rendered and
                                         sanitized, SVG shown as an image, metadata reduced to numbers

The sanitizer is nh3 (Python bindings of the Rust crate ammonia): an allowlist sanitizer that is
maintained and fast, applied to student content only. nbconvert's own `sanitize_html` was the other
candidate; it runs bleach (deprecated by its maintainers in 2023) over every markdown cell and HTML output
with an allowlist that has no headings, paragraphs, images or details, so the instructor's own text in a
feedback page would lose its structure; and formgrader renders without it anyway. Sanitizing the content
once, before it is stored, protects every renderer (feedback, formgrader, a notebook opened in JupyterLab).
MathJax runs over the rendered text in both pages; its TeX commands that make links, attributes or load
code (\\href, \\url, \\class, \\cssId, \\style, \\data, \\require, \\unicode) are broken up so it shows them
as errors instead.
"""
from __future__ import annotations

import base64
import html
import re

import nh3
import nbformat

SAFE_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2",
    "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "ol", "p", "pre", "q", "s", "samp", "small",
    "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul",
}
SAFE_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title", "width", "height"},
                   "td": {"colspan", "rowspan", "align"}, "th": {"colspan", "rowspan", "align"},
                   "ol": {"start"}, "details": {"open"}}
REMOVED_WITH_CONTENT = {"script", "style", "template", "noscript", "iframe", "object", "embed", "svg", "math"}
SAFE_SCHEMES = {"http", "https", "mailto", "data"}    # data: only survives on <img src> (see _attribute)
IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=\s]*\Z")
MATHJAX_ACTIVE = re.compile(r"\\(href|url|class|cssId|style|data|require|unicode)(?![A-Za-z])")

KEPT_MIME = {"text/plain", "text/html", "text/latex", "image/png", "image/jpeg", "image/gif",
             "application/json"}
IMAGE_MIME = {"image/png", "image/jpeg", "image/gif"}


def _attribute(tag: str, name: str, value: str) -> str | None:
    """Per-attribute rules on top of the allowlist: an image only from the page itself (data:image, so
    opening a page makes no request), data: URLs nowhere else, sizes only as numbers."""
    if tag == "img" and name == "src":
        return value if IMAGE_DATA.match(value.strip()) else None
    if name == "href" and value.strip().lower().startswith("data:"):
        return None
    if name in ("width", "height", "colspan", "rowspan", "start"):
        return value if value.strip().isdigit() else None
    return value


def clean_html(fragment: str) -> str:
    """An HTML fragment with only safe tags and attributes, no active URL, no MathJax link commands."""
    cleaned = nh3.clean(fragment, tags=SAFE_TAGS, clean_content_tags=REMOVED_WITH_CONTENT,
                        attributes=SAFE_ATTRIBUTES, attribute_filter=_attribute, url_schemes=SAFE_SCHEMES,
                        strip_comments=True, link_rel="noopener noreferrer nofollow")
    return MATHJAX_ACTIVE.sub(lambda m: "\\\u200b" + m.group(1), cleaned)


def _one_block(fragment: str) -> str:
    """One line of HTML inside a <div>: a markdown renderer passes it through as a single HTML block
    (a blank line would end the block and let the rest be read as markdown again)."""
    return '<div class="agentrl-student-text">' + fragment.replace("\r", "").replace("\n", "&#10;") + "</div>"


def _attachments(attachments) -> dict:
    """The cell's attachments that are images, as nbconvert's renderer expects them."""
    kept = {}
    if isinstance(attachments, dict):
        for name, bundle in attachments.items():
            if isinstance(name, str) and isinstance(bundle, dict):
                images = {k: v for k, v in bundle.items() if k in IMAGE_MIME and isinstance(v, str)}
                if images:
                    kept[name] = images
    return kept


ATTACHMENT_LINK = re.compile(r"attachment:([^\s)\"'>]*)")


def inert_markdown(source: str, attachments=None) -> tuple[str, list[str]]:
    """A student's markdown as inert HTML (one block), and what was missing (attachment names)."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    images = _attachments(attachments)
    missing = sorted({name for name in ATTACHMENT_LINK.findall(source) if name not in images})
    for name in missing:   # a copy-pasted image whose attachment did not come along: a text placeholder
        source = source.replace(f"attachment:{name}", "#missing-attachment")
    try:
        renderer = IPythonRenderer(escape=False, attachments=images, exclude_anchor_links=True)
        rendered = MarkdownWithMath(renderer=renderer).render(source)
    except Exception:  # noqa: BLE001 - whatever the renderer trips over, the text is still shown
        rendered = f"<pre>{html.escape(source)}</pre>"
    return _one_block(clean_html(rendered)), missing


def inert_raw(source: str) -> str:
    return _one_block(f"<pre>{html.escape(source)}</pre>")


def _number_metadata(meta) -> dict:
    """Output metadata reduced to what templates may print (numbers), per image type."""
    kept = {}
    if isinstance(meta, dict):
        for mime in IMAGE_MIME:
            sizes = meta.get(mime)
            if isinstance(sizes, dict):
                numbers = {k: v for k, v in sizes.items() if k in ("width", "height")
                           and isinstance(v, int) and not isinstance(v, bool) and 0 < v < 100_000}
                if numbers:
                    kept[mime] = numbers
    return kept


def inert_output(output):
    """The output with only inert content; None if nothing inert is left of it."""
    kind = output.get("output_type")
    if kind not in ("display_data", "execute_result"):
        return output
    data, out = output.get("data") or {}, {}
    for mime, value in data.items():
        if not isinstance(value, (str, dict, list)):
            continue
        if mime == "text/html" and isinstance(value, str):
            out["text/html"] = clean_html(value)
        elif mime == "text/markdown" and isinstance(value, str):
            out.setdefault("text/html", inert_markdown(value)[0])
        elif mime == "image/svg+xml" and isinstance(value, str):
            encoded = base64.b64encode(value.encode("utf-8", "replace")).decode("ascii")
            out.setdefault("text/html", f'<img src="data:image/svg+xml;base64,{encoded}" alt="SVG">')
        elif mime == "text/latex" and isinstance(value, str):
            out[mime] = MATHJAX_ACTIVE.sub(lambda m: "\\\u200b" + m.group(1), value)
        elif mime in KEPT_MIME:
            out[mime] = value
    if not out:
        if not data:
            return output
        dropped = ", ".join(sorted(str(k) for k in data))[:200]
        out = {"text/plain": f"[这个输出的类型（{dropped}）在评分结果里不显示]"}
    output["data"] = out
    output["metadata"] = _number_metadata(output.get("metadata"))
    return output


def inert_outputs(cell) -> None:
    """Every output of a code cell made inert (see inert_output); outputs nothing is left of are dropped."""
    if cell.get("cell_type") != "code":
        return
    kept = []
    for output in cell.get("outputs", []):
        output = inert_output(output)
        if output is not None:
            kept.append(output)
    cell["outputs"] = kept


def inert_cell(cell) -> list[str]:
    """Make one student-controlled cell inert in place (markdown, raw); return notes (Chinese)."""
    notes = []
    if cell.get("cell_type") == "markdown":
        cell["source"], missing = inert_markdown(cell.get("source", ""), cell.get("attachments"))
        cell.pop("attachments", None)
        if missing:
            notes.append(f"文字单元引用了不存在的附件（{', '.join(missing)[:100]}）：显示为占位")
    elif cell.get("cell_type") == "raw":
        text = cell.get("source", "")
        new = nbformat.v4.new_markdown_cell(inert_raw(text))
        cell.clear()
        cell.update(new)
    return notes
