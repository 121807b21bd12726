"""Local Sphinx extension: keep every page's <script> list free of duplicates.

sphinx-thebe registers its inline configuration script on `env-before-read-docs`,
which Jupyter Book 1 fires more than once, so every page declared
`const THEBE_JS_URL` twice and the browser threw "Identifier 'THEBE_JS_URL' has
already been declared". We drop repeated scripts (same file, same inline body).

It also makes the site work from its own folder with no network and wires the course's pages:

- offline assets (offline_assets.py): MathJax, require.js and the ipywidgets embed manager are
  fetched once from the npm registry (pinned), cached in _vendor/ and served from _static/offline/;
  mathjax_path and nb_ipywidgets_js in _config.yml point there;
- the `cloze` directive and its script (cloze_directive.py, static/course/);
- the execution cache is keyed on the course package and the pins too, not only on each page's code
  (execution_cache.py);
- exercise pages: the launch buttons (Binder, JupyterHub, Colab; URLs in _config.yml) open the
  student notebook notebooks/<a>.ipynb, and the download menu offers it next to the page's .ipynb,
  and all student notebooks in one zip (dist/agentrl-notebooks.zip); other notebook pages
  (book/frameworks.md) have no launch buttons; a button that needs an address _config.yml does not
  set yet is left out, and the notebook links download (launch.py);
- the header buttons' tooltips in the site's own Simplified Chinese (the theme's zh_CN catalogue
  mixes in Traditional usage: "列印成 PDF");
- the sidebar buttons a reader sees open the chapter list and the page's contents at every width
  (static/course/sidebar-toggles.js; templates/toggle-*-sidebar.html name them in Chinese);
- search finds Chinese words and says so in Chinese (chinese_search.py: jieba in the index, the query
  cut against it, the search box's placeholder);
- dist/agentrl_ref-<version>-py3-none-any.whl: the course package, which the setup cell of every
  student notebook installs from the site (html.baseurl in _config.yml) where it is missing;
- accessibility (checked with axe-core by tests/test_accessibility.py): three theme components
  overridden in templates/ (the search button's and the colour-mode button's accessible names, the
  sidebar's site title inside a landmark); every scrollable table wrapper a named, focusable region
  (label_scrollable_tables); index.html a real page (lang, title, a link) that redirects to the
  root page instead of a bare meta refresh (write_index_page).
"""
from __future__ import annotations

import base64
import html
import mimetypes
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import chinese_search  # noqa: E402
import cloze_directive  # noqa: E402
import execution_cache  # noqa: E402
import figure_captions  # noqa: E402
import heading_ids  # noqa: E402
import launch  # noqa: E402
import offline_assets  # noqa: E402

STUDENT_DIR = "notebooks"  # the student notebooks, in the repository and in the built site
DIST_DIR = "dist"  # in the built site: the course package's wheel and the zip of all student notebooks
NOTEBOOKS_ZIP = "agentrl-notebooks.zip"


def _script_key(script) -> tuple:
    # Sphinx stores an inline script's filename as None or "" depending on who added it
    attributes = getattr(script, "attributes", {}) or {}
    return (getattr(script, "filename", script) or "", attributes.get("body"))


def dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


def use_offline_assets(app, config) -> None:
    """Fetch (once) the pinned offline assets and serve them and the course's own static files."""
    # pydata-sphinx-theme logs a console error on every page when no default mode is set
    config.html_context = {"default_mode": "auto", **config.html_context}
    # the page's contents (right sidebar, 本页目录) list the sections' subsections too, not the top level alone
    config.html_theme_options = {**config.html_theme_options, "show_toc_level": 2}
    # our component overrides (templates/) come before the themes' own
    config.templates_path = [str(HERE / "templates")] + list(config.templates_path)
    static = offline_assets.ensure()
    config.html_static_path = list(config.html_static_path) + [str(static), str(HERE / "static")]
    wanted = {"mathjax_path": offline_assets.MATHJAX_PATH}
    for key, path in wanted.items():
        if config[key] != path:
            raise ValueError(f"_config.yml: sphinx.config.{key} must be {path!r} (the local copy), got {config[key]!r}")
    local = [offline_assets.REQUIRE_JS, offline_assets.WIDGETS_CONFIG_JS, offline_assets.EMBED_AMD_JS]
    if list(config["nb_ipywidgets_js"]) != local:
        raise ValueError(f"_config.yml: sphinx.config.nb_ipywidgets_js must name exactly {local}, in this order")


def _exercise(app, pagename: str) -> str | None:
    """The assignment name if pagename is an exercise page with a student notebook."""
    folder, _, name = pagename.partition("/")
    if folder == "book" and (ROOT / STUDENT_DIR / f"{name}.ipynb").is_file():
        return name
    return None


# The theme's zh_CN tooltips, by button label, in the words the course uses ("notebook", "打印"); the theme
# says "列印成 PDF" (Traditional usage) and "笔记本文件".
TOOLTIPS = {
    "download-buttons": "下载本页",
    "download-notebook-button": "下载本页的 notebook（网页版，带运行结果）",
    "download-source-button": "下载本页的源文件",
    "download-pdf-button": "打印成 PDF",
    "launch-buttons": "在线运行学生版",
    "fullscreen-button": "全屏",
}


# What each entry of the download menu is, in its own words (the theme shows the bare suffix: ".ipynb" beside
# 学生版 .ipynb, with nothing to say that the first one holds the answers).
TEXTS = {
    "download-notebook-button": "本页 .ipynb（带运行结果）",
    "download-source-button": "本页源文件（{text}）",
    "download-pdf-button": "打印成 PDF",
}
# an exercise page's source is the page's notebook: the answers in it, unlike the student notebook beside it
EXERCISE_SOURCE = {"text": "网页版 .ipynb（含答案）", "tooltip": "下载本页的 notebook（含答案，不是学生版）"}


LAUNCH_SERVICES = ("Binder", "JupyterHub", "Colab")  # the theme's launch buttons (no label): "Launch on <text>"


def _chinese_tooltips(buttons: list[dict]) -> None:
    for button in buttons:
        if button.get("label") in TOOLTIPS:
            button["tooltip"] = TOOLTIPS[button["label"]]
        elif button.get("text") in LAUNCH_SERVICES:
            button["tooltip"] = f"在 {button['text']} 上打开学生版 notebook"
        if button.get("label") in TEXTS:
            button["text"] = TEXTS[button["label"]].format(text=button.get("text", "").strip())
        _chinese_tooltips(button.get("buttons", []))


def student_notebook_buttons(app, pagename, templatename, context, doctree) -> None:
    """Exercise pages: launch buttons open notebooks/<a>.ipynb; the download menu offers it too. Every page: the
    header buttons' tooltips in the course's Chinese."""
    _chinese_tooltips(context.get("header_buttons", []))
    name = _exercise(app, pagename)
    if name is None:
        # A notebook page that is no exercise (book/frameworks.md) has no student notebook, and the hosted
        # services cannot run it as it is (Colab opens no .md, Binder's environment has no TRL): no launch.
        if "header_buttons" in context:
            context["header_buttons"] = [group for group in context["header_buttons"]
                                         if group.get("label") != "launch-buttons"]
        return
    page_nb, student_nb = f"{pagename}.ipynb", f"{STUDENT_DIR}/{name}.ipynb"
    for group in context.get("header_buttons", []):
        buttons = group.get("buttons", [])
        if group.get("label") == "launch-buttons":
            for button in buttons:
                button["url"] = button["url"].replace(page_nb, student_nb)
        if group.get("label") == "download-buttons":
            for button in buttons:
                if button.get("label") == "download-source-button":
                    button.update(EXERCISE_SOURCE)
            buttons.insert(0, {
                "type": "link",
                "url": context["pathto"](student_nb, 1),
                "text": "学生版 .ipynb（填空，不含答案）",
                "tooltip": "下载学生版 notebook（不含答案）",
                "icon": "fas fa-file-arrow-down",
                "label": "download-student-notebook-button",
            })
            buttons.insert(1, {
                "type": "link",
                "url": context["pathto"](f"{DIST_DIR}/{NOTEBOOKS_ZIP}", 1),
                "text": "全部学生版 (.zip)",
                "tooltip": "下载所有练习的学生版 notebook，打成一个 zip",
                "icon": "fas fa-file-zipper",
                "label": "download-all-notebooks-button",
            })


TABLE_WRAPPER = '<div class="pst-scrollable-table-container">'  # pydata-sphinx-theme's translator


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _table_label(table_html: str) -> str:
    """A table's accessible name: its caption, else "表格：" and its first column headings."""
    caption = re.search(r"<caption\b[^>]*>(.*?)</caption>", table_html, re.S)
    if caption and _text(caption.group(1)):
        return _text(caption.group(1))
    head = re.search(r"<thead\b.*?</thead>", table_html, re.S)
    cells = [_text(c) for c in re.findall(r"<th\b[^>]*>(.*?)</th>", head.group(0) if head else "", re.S)]
    cells = [c for c in cells if c]
    if not cells:
        return "表格"
    return "表格：" + "、".join(cells[:3]) + ("……" if len(cells) > 3 else "")


def label_scrollable_tables(app, pagename, templatename, context, doctree) -> None:
    """Every table sits in the theme's horizontally scrolling wrapper. Make each wrapper a region
    that a keyboard can reach (tabindex 0: arrow keys then scroll it) and a screen reader can name
    (axe-core: scrollable-region-focusable). The theme's script drops the wrapper from the tab order
    again (tabindex -1) while its table fits, so only tables that really scroll are tab stops."""
    body = context.get("body")
    if not body or TABLE_WRAPPER not in body:
        return
    first, *rest = body.split(TABLE_WRAPPER)
    seen: Counter = Counter()
    out = [first]
    for part in rest:
        label = _table_label(part.split("</table>", 1)[0])
        seen[label] += 1
        if seen[label] > 1:  # landmarks of one page need distinct names
            label = f"{label}（{seen[label]}）"
        out.append(TABLE_WRAPPER.replace(">", f' role="region" tabindex="0" aria-label="{html.escape(label)}">', 1)
                   + part)
    context["body"] = "".join(out)


INDEX_PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Refresh" content="0; url={url}">
<link rel="canonical" href="{url}">{icon}
<title>{title}</title>
</head>
<body>
<main>
<h1>{title}</h1>
<p>正在打开课程首页：<a href="{url}">{title}</a></p>
</main>
</body>
</html>
"""


def write_index_page(app, exception) -> None:
    """index.html when the root page is elsewhere (book/intro): sphinx-external-toc writes a bare
    meta refresh, a blank page with no language, title or link when a browser blocks automatic
    redirects (axe-core: document-title, html-has-lang). This one redirects the same way and is
    a real page otherwise. Runs before sphinx-external-toc's handler, which then keeps it."""
    if exception is not None or app.builder.name != "html" or app.config.root_doc == "index":
        return
    url = html.escape(f"{app.config.root_doc}.html")
    lang = (app.config.language or "en").replace("_", "-")
    title = html.escape(app.config.html_title or app.config.project)
    # Without an icon link a browser asks for /favicon.ico (a 404); with a link to the file, the request is
    # cut off by the redirect now and then. The icon inline costs no request at all.
    icon = ""
    favicon = Path(app.outdir) / "_static" / Path(app.config.html_favicon or "none").name
    if favicon.is_file():
        mime = mimetypes.guess_type(favicon.name)[0] or "image/x-icon"
        data = base64.b64encode(favicon.read_bytes()).decode("ascii")
        icon = f'\n<link rel="icon" href="data:{mime};base64,{data}">'
    page = INDEX_PAGE.format(lang=html.escape(lang), url=url, title=title, icon=icon)
    (Path(app.outdir) / "index.html").write_text(page, encoding="utf-8")


def build_wheel(dest: Path) -> Path:
    """The course package as a wheel in dest (the setup cell of every student notebook installs it
    from <html.baseurl>dist/). Built from this checkout with the venv's setuptools, offline, in a
    temporary copy so the checkout gets no build/ or *.egg-info folders."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        shutil.copy2(ROOT / "pyproject.toml", src / "pyproject.toml")
        shutil.copy2(ROOT / "README.md", src / "README.md")
        shutil.copytree(ROOT / "agentrl_ref", src / "agentrl_ref",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        wheels = Path(tmp) / "wheels"
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                               "--wheel-dir", str(wheels), str(src)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"building the agentrl_ref wheel failed:\n{proc.stdout}\n{proc.stderr}")
        (wheel,) = wheels.glob("agentrl_ref-*.whl")
        dest.mkdir(parents=True, exist_ok=True)
        for old in dest.glob("agentrl_ref-*.whl"):
            old.unlink()
        return Path(shutil.copy2(wheel, dest / wheel.name))


def zip_notebooks(dest: Path, names: list[str]) -> Path:
    """One download with every student notebook (fixed timestamps: the same notebooks give the same zip)."""
    import zipfile

    path = dest / NOTEBOOKS_ZIP
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in names:
            info = zipfile.ZipInfo(f"agentrl-notebooks/{name}.ipynb", date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, (ROOT / STUDENT_DIR / f"{name}.ipynb").read_bytes())
    return path


def copy_site_files(app, exception) -> None:
    """After an HTML build: the student notebooks next to the pages that offer them, all of them in
    one zip, and the course package's wheel, both in dist/."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    names = []
    for pagename in sorted(app.env.found_docs):
        name = _exercise(app, pagename)
        if name is not None:
            names.append(name)
            (out / STUDENT_DIR).mkdir(exist_ok=True)
            shutil.copy2(ROOT / STUDENT_DIR / f"{name}.ipynb", out / STUDENT_DIR / f"{name}.ipynb")
    zip_notebooks(out / DIST_DIR, names)
    build_wheel(out / DIST_DIR)


def setup(app):
    app.connect("html-page-context", dedupe_scripts)
    app.connect("config-inited", use_offline_assets)
    app.connect("html-page-context", student_notebook_buttons, priority=600)
    app.connect("html-page-context", label_scrollable_tables)
    app.connect("build-finished", copy_site_files)
    app.connect("build-finished", write_index_page, priority=400)  # before sphinx-external-toc's
    app.add_css_file("course/site.css")
    app.add_js_file("course/sidebar-toggles.js")
    chinese_search.setup(app)
    cloze_directive.setup(app)
    execution_cache.setup(app)
    figure_captions.setup(app)
    heading_ids.setup(app)
    launch.setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
