"""Launch buttons that can work, and downloads that download.

_config.yml names three addresses of the course's own copy: html.baseurl (where the site is published: the
setup cell of every student notebook installs the course package from there), repository.url (where Binder,
Colab and JupyterHub fetch the notebook) and launch_buttons.jupyterhub_url (the school's hub). As shipped they
are empty: nobody can check an address for a copy that does not exist yet. A launch button that needs an unset
address would lead nowhere, so the build leaves it out and says which address to set:

    Binder      needs repository.url (binder/postBuild installs the course package from the repository)
    Colab       needs repository.url and html.baseurl (the setup cell installs the package from the site)
    JupyterHub  needs launch_buttons.jupyterhub_url, repository.url and html.baseurl

The notice is printed, not a Sphinx warning: `make book` builds with -W, and an unset address is a fact about
this copy, not a fault of the build.

A MyST-markdown notebook page keeps its .ipynb download without launch buttons (keep_notebook_download).

Downloads: the header's notebook links (the student notebook, the page's own notebook, the zip of all student
notebooks) carry the `download` attribute, so a served site saves the file instead of opening its JSON. (Chromium
ignores the attribute on a page read from disk, file://: there a .ipynb still opens as JSON in a new tab.)
The theme's link macro has no such parameter; the attribute is added to the written pages (mark_downloads).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from sphinx.util import logging
from sphinx.util.console import bold, red

LOGGER = logging.getLogger(__name__)

ADDRESSES = ("html.baseurl", "repository.url", "launch_buttons.jupyterhub_url")
NEEDS = {  # launch_buttons key -> the addresses its button needs
    "binderhub_url": ("repository.url",),
    "colab_url": ("repository.url", "html.baseurl"),
    "jupyterhub_url": ("launch_buttons.jupyterhub_url", "repository.url", "html.baseurl"),
}
# header buttons (sphinx-book-theme labels) whose links are files to save: label -> the download attribute's value
DOWNLOAD_LABELS = ("download-student-notebook-button", "download-all-notebooks-button", "download-notebook-button",
                   "download-source-button")


def addresses(config) -> dict[str, str]:
    """The three addresses as the build sees them ('' when unset)."""
    theme = config.html_theme_options or {}
    return {"html.baseurl": (config.html_baseurl or "").strip(),
            "repository.url": (theme.get("repository_url") or "").strip(),
            "launch_buttons.jupyterhub_url": ((theme.get("launch_buttons") or {}).get("jupyterhub_url") or "").strip()}


def working_launch_buttons(config) -> dict[str, str]:
    """launch_buttons with every service whose button needs an unset address removed."""
    launch = dict((config.html_theme_options or {}).get("launch_buttons") or {})
    have = addresses(config)
    for key, needs in NEEDS.items():
        if launch.get(key) and not all(have[name] for name in needs):
            launch[key] = ""
    return launch


def notice(config) -> str:
    """What the build says about unset addresses ('' when all three are set)."""
    have = addresses(config)
    unset = [name for name in ADDRESSES if not have[name]]
    if not unset:
        return ""
    configured = (config.html_theme_options or {}).get("launch_buttons") or {}
    left_out = [key.removesuffix("_url") for key, needs in NEEDS.items()
                if (configured.get(key) or key == "jupyterhub_url") and not all(have[n] for n in needs)]
    return (f"提醒：_config.yml 里还没设置 {', '.join(unset)}，所以网页上不显示这些启动按钮：{', '.join(left_out)}。"
            f"发布你自己的一份以后，把这几个地址填上（见讲师指南 book/guide_instructors.md 的“发布网站”一节）。")


_NOTICES: dict[int, str] = {}  # id(app) -> the notice, worked out before the launch buttons are trimmed


def keep_working_launch_buttons(app, config) -> None:
    """config-inited: drop the launch buttons that cannot work (and remember what to say about them)."""
    _NOTICES[id(app)] = notice(config)
    if config.html_theme_options and "launch_buttons" in config.html_theme_options:
        config.html_theme_options["launch_buttons"] = working_launch_buttons(config)


def say_what_is_unset(app, exception) -> None:
    """build-finished: the notice, at the end of the build where it is seen."""
    message = _NOTICES.pop(id(app), "")
    if message and exception is None:
        LOGGER.info(bold(red(message)))


def keep_notebook_download(app, pagename, templatename, context, doctree) -> None:
    """html-page-context, before the theme's header buttons (priority 501): a MyST-markdown notebook page
    (book/frameworks.md) offers its executed notebook as .ipynb. sphinx-book-theme copies that notebook to _sources/
    only while it builds launch buttons; with none left for the page (unset addresses), do the same here."""
    if not context.get("sourcename", "").endswith((".md", ".md.txt")) or context.get("ipynb_source"):
        return
    if "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.is_file():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(executed, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def _with_download(page: str) -> str:
    """Every header link of DOWNLOAD_LABELS with a download attribute (once)."""
    def add(match: re.Match) -> str:
        tag = match.group(0)
        return tag if " download" in tag else tag.replace("<a ", "<a download ", 1)

    labels = "|".join(re.escape(label) for label in DOWNLOAD_LABELS)
    return re.sub(rf'<a [^>]*class="[^"]*\bbtn-(?:{labels})\b[^"]*"[^>]*>', add, page)


def mark_downloads(app, exception) -> None:
    """build-finished: add the download attribute to the notebook links of every written page."""
    if exception is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.html"):
        page = path.read_text(encoding="utf-8")
        marked = _with_download(page)
        if marked != page:
            path.write_text(marked, encoding="utf-8")


def setup(app) -> None:
    app.connect("config-inited", keep_working_launch_buttons)
    app.connect("html-page-context", keep_notebook_download, priority=500)
    app.connect("build-finished", mark_downloads)
    app.connect("build-finished", say_what_is_unset, priority=900)
