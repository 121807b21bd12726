"""The built site works from its own folder with no network: every page, every request, MathJax, console.

Every page is loaded in headless Chromium with each request recorded; a request that does not go to
the local server is aborted and fails the test. Screenshots (desktop 1280 px, phone 390 px) of the
intro, an exercise and the cloze page go to test-artifacts/.
"""
from __future__ import annotations

import re
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from grader.publish import release
from course import ASSIGNMENTS, ROOT

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
TOC_PAGES = [TOC["root"]] + [ch["file"] for part in TOC["parts"] for ch in part["chapters"]]
PAGES = [f"{page}.html" for page in TOC_PAGES] + ["index.html", "genindex.html", "search.html"]
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}
SCREENSHOT_PAGES = {"intro": "book/intro.html", "exercise": "book/ex1_format_reward.html", "cloze": "book/cloze.html",
                    "capstone": "book/ex7_agent_grpo.html", "frameworks": "book/frameworks.html"}
PROJECTS = ["huggingface/open-r1", "hkust-nlp/simpleRL-reason", "THUDM/slime", "volcengine/verl", "OpenRLHF/OpenRLHF"]
PAPERS = ["2402.03300", "2501.12948", "2503.14476", "2502.03373"]  # DeepSeekMath, DeepSeek-R1, DAPO, Yeo et al.


def _socratic_assignments() -> list[str]:
    """Every page with a Socratic question (exercises and the book's own notebook pages), by file stem."""
    return [page.rsplit(".", 1)[0] for page, _ in release.socratic_sources()]


def _is_local(url: str, base: str) -> bool:
    return url.startswith(base + "/") or url.startswith(("data:", "blob:", "about:", "file://"))


def open_recorded(tabs, url: str, base: str, viewport=(1280, 900)):
    """A page loaded with every request recorded and non-local ones aborted; returns (page, log)."""
    page = tabs.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    log = {"requests": [], "outside": [], "errors": [], "failed": []}
    page.on("request", lambda request: log["requests"].append(request.url))
    page.on("console", lambda msg: log["errors"].append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: log["errors"].append(str(exc)))
    page.on("requestfailed", lambda request: log["failed"].append(request.url))

    def route(route):
        if _is_local(route.request.url, base):
            route.continue_()
        else:
            log["outside"].append(route.request.url)
            route.abort()

    page.route("**/*", route)
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    return page, log


def wait_for_mathjax(page) -> None:
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")


def test_every_page_of_the_build_is_checked(built_site):
    pages = {str(p.relative_to(built_site)) for p in built_site.rglob("*.html")
             if not p.relative_to(built_site).parts[0].startswith("_")}
    assert pages == set(PAGES), "pages built but not listed here (or listed but missing)"


def test_pages_load_no_third_party_script_or_stylesheet(built_site):
    for rel in PAGES:
        text = (built_site / rel).read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|link)\b[^>]*>", text):
            url = re.search(r'\b(?:src|href)="([^"]*)"', tag)
            if url and ("<script" in tag or 'rel="stylesheet"' in tag or "preload" in tag):
                assert "://" not in url.group(1) and not url.group(1).startswith("//"), f"{rel}: {tag}"


@pytest.mark.parametrize("rel", PAGES)
def test_page_works_offline(rel, site_url, site_tabs, built_site):
    page, log = open_recorded(site_tabs, f"{site_url}/{rel}", site_url)
    html = (built_site / rel).read_text(encoding="utf-8")
    if 'class="math' in html:
        wait_for_mathjax(page)
        assert page.locator("mjx-container").count() >= html.count('class="math'), "formula not rendered"
        assert page.locator("mjx-merror").count() == 0, "MathJax reported a TeX error"
    assert not log["outside"], f"requests left 127.0.0.1: {log['outside']}"
    assert all(urlsplit(u).hostname in (None, "127.0.0.1") for u in log["requests"]), log["requests"]
    assert not log["failed"], f"failed requests: {log['failed']}"
    assert not log["errors"], f"console errors: {log['errors']}"
    page.close()


def test_formulas_render_from_the_local_mathjax(site_url, site_tabs):
    page, log = open_recorded(site_tabs, f"{site_url}/book/resources.html", site_url)
    wait_for_mathjax(page)
    assert page.locator("mjx-container").count() >= 4
    assert any("/_static/offline/mathjax/tex-mml-chtml.js" in u for u in log["requests"])
    assert any(u.endswith(".woff") or ".woff" in u for u in log["requests"]), "MathJax fonts come from the site"
    page.close()


@pytest.mark.parametrize("rel", ["book/cloze.html", "book/resources.html"])
def test_site_works_from_its_folder_over_file_urls(rel, built_site, browser):
    """Opened straight from _build/html (file://), with any network request refused."""
    page = browser.new_page()
    outside, errors = [], []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file://", "data:"))
               else (outside.append(route.request.url), route.abort()))
    page.goto((built_site / rel).as_uri(), wait_until="load")
    if rel == "book/cloze.html":
        from agentrl_ref.teaching.cloze.cards import SNIPPETS

        assert page.locator(".cloze-card.cloze-ready").count() == len(SNIPPETS)
    else:
        wait_for_mathjax(page)
        assert page.locator("mjx-container").count() >= 4
    assert not outside and not errors, (outside, errors)
    page.close()


@pytest.mark.parametrize("name", list(SCREENSHOT_PAGES))
@pytest.mark.parametrize("width", list(WIDTHS))
def test_screenshots(name, width, site_url, site_tabs, artifacts):
    page, log = open_recorded(site_tabs, f"{site_url}/{SCREENSHOT_PAGES[name]}?seed=20250101", site_url, WIDTHS[width])
    if page.locator(".math").count():
        wait_for_mathjax(page)
    page.screenshot(path=str(artifacts / f"offline-{name}-{width}.png"), full_page=True)
    # nothing wider than the viewport: long code scrolls inside its own block, the page never sideways
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"{name} scrolls sideways at {width} width by {overflow}px"
    assert not log["outside"] and not log["errors"], log
    page.close()


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_exercise_page_offers_download_and_launch(name, site_url, site_tabs, built_site):
    page, _ = open_recorded(site_tabs, f"{site_url}/book/{name}.html", site_url)
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))")
    # downloads: the page's own notebook and the student notebook, both shipped with the site
    for wanted in (f"_sources/book/{name}.ipynb", f"notebooks/{name}.ipynb"):
        local = [h for h in hrefs if h.endswith(wanted) and "://" not in h]
        assert local, f"no download link to {wanted}"
        assert (built_site / "book" / local[0]).resolve().is_file(), local[0]
    student = (built_site / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8")
    assert student == (ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8")
    # one download with every student notebook: a real file of the build
    zips = [h for h in hrefs if h.endswith("dist/agentrl-notebooks.zip") and "://" not in h]
    assert zips, "no link to the zip of all student notebooks"
    with zipfile.ZipFile((built_site / "book" / zips[0]).resolve()) as zf:
        assert sorted(zf.namelist()) == sorted(f"agentrl-notebooks/{a}.ipynb" for a in ASSIGNMENTS)
        assert zf.read(f"agentrl-notebooks/{name}.ipynb").decode("utf-8") == student
    # the wheel the setup cell installs in Colab is where the cell looks for it
    site, version = release.course_settings()
    assert (built_site / "dist" / f"agentrl_ref-{version}-py3-none-any.whl").is_file()
    assert f"AGENTRL_REF_VERSION = {version!r}" in student and repr(site) in student
    # the notebook links download (a site read from disk would otherwise open their JSON)
    for label in ("download-student-notebook-button", "download-all-notebooks-button", "download-source-button"):
        link = page.locator(f"a.btn-{label}")
        assert link.count() == 1 and link.get_attribute("download") is not None, label
    # launch buttons: only those whose addresses _config.yml sets (as shipped: none), never at a placeholder
    launch_links = _launch_links(hrefs)
    assert not launch_links or CONFIG["repository"]["url"], launch_links
    assert all(f"notebooks/{name}.ipynb" in h and f"book/{name}.ipynb" not in h for h in launch_links), launch_links
    assert (ROOT / "notebooks" / f"{name}.ipynb").is_file()
    page.close()


SERVICE_KEYS = ("binderhub_url", "colab_url", "jupyterhub_url")
PLACEHOLDER_HOSTS = ("example.org", "example.com", "example.net", "localhost", "agentrl-course")


def _launch_links(hrefs: list[str]) -> list[str]:
    services = [CONFIG["launch_buttons"][key].rstrip("/") for key in SERVICE_KEYS if CONFIG["launch_buttons"][key]]
    return [h for h in hrefs if any(h.startswith(service + "/") for service in services)
            or "/hub/user-redirect/git-pull" in h]


def test_no_launch_button_points_at_a_placeholder_address(built_site):
    """Every launch link of every page opens a service with a repository _config.yml sets; as shipped (the three
    addresses empty) there is no launch button at all, and no page links a placeholder host."""
    import re

    for page in built_site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        hrefs = re.findall(r'href="([^"]+)"', text)
        links = _launch_links(hrefs)
        assert "dropdown-launch-buttons" not in text or links, page
        for link in links:
            assert CONFIG["repository"]["url"] and CONFIG["html"]["baseurl"], (page, link)
            assert not any(host in link for host in PLACEHOLDER_HOSTS), (page, link)
        assert not [h for h in hrefs if any(f"//{host}" in h or f".{host}" in h for host in PLACEHOLDER_HOSTS)], page
    if not (CONFIG["repository"]["url"] and CONFIG["html"]["baseurl"]):
        assert not any("dropdown-launch-buttons" in p.read_text(encoding="utf-8") for p in built_site.rglob("*.html"))


def test_frameworks_page_serves_its_gpu_script(site_url, site_tabs, built_site):
    """The GPU script is a file the page links, the site serves, and a click saves (not opens)."""
    page, log = open_recorded(site_tabs, f"{site_url}/book/frameworks.html", site_url)
    link = page.locator("a.download", has_text="trl_grpo_gsm8k.py")
    assert link.count() == 1 and link.get_attribute("download") is not None
    served = (built_site / "book" / link.get_attribute("href")).resolve()
    assert served.read_bytes() == (ROOT / "book" / "scripts" / "trl_grpo_gsm8k.py").read_bytes()
    with page.expect_download() as download:
        link.click()
    assert download.value.suggested_filename == "trl_grpo_gsm8k.py"
    text = page.inner_text("main")
    assert "没有在这里执行过" in text and "pip install trl==" in text and "--smoke" in text
    assert not log["outside"] and not log["errors"], log
    page.close()


def test_notebook_page_without_exercise_has_no_launch_buttons(built_site):
    """book/frameworks.md runs TRL: no hosted service in _config.yml could run it as it is (Colab opens no .md,
    Binder's environment has no TRL), so it offers downloads only."""
    text = (built_site / "book" / "frameworks.html").read_text(encoding="utf-8")
    assert "dropdown-launch-buttons" not in text
    launch = CONFIG["launch_buttons"]
    for url in (launch["binderhub_url"], launch["colab_url"], launch["jupyterhub_url"]):
        assert not url or url not in text, url
    assert (built_site / "_sources" / "book" / "frameworks.ipynb").is_file()  # the executed page, downloadable


def test_socratic_page_gathers_every_question(site_url, site_tabs, built_site):
    page, log = open_recorded(site_tabs, f"{site_url}/book/socratic.html", site_url)
    names = _socratic_assignments()
    assert names, "exercise 1 has a socratic cell"
    hrefs = page.eval_on_selector_all("main a[href]", "links => links.map(a => a.getAttribute('href'))")
    for name in names:
        assert any(h.split("#")[0] == f"{name}.html" for h in hrefs), f"no link to {name}"
        assert (built_site / "book" / f"{name}.html").is_file()
    details = page.locator("main details")
    hints = sum(cell.source.count("<details>") for _, nb in release.socratic_sources() for cell in nb.cells
                if release.SOCRATIC_TAG in cell.metadata.get("tags", []))
    assert hints >= len(names) and details.count() == hints, "every question's hints, and nothing else, folded"
    for i in range(details.count()):
        hint = details.nth(i)
        assert hint.locator("summary").inner_text().strip().startswith("讨论提示")
        assert hint.get_attribute("open") is None, "hints start collapsed"
    assert not log["errors"], log["errors"]
    page.close()


def test_resources_page_lists_projects_and_papers(built_site):
    text = (built_site / "book" / "resources.html").read_text(encoding="utf-8")
    for project in PROJECTS:
        assert f'href="https://github.com/{project}"' in text, project
    for paper in PAPERS:
        assert f'href="https://arxiv.org/abs/{paper}"' in text, paper


def test_toc_reaches_the_new_pages(built_site):
    intro = (built_site / "book" / "intro.html").read_text(encoding="utf-8")
    for page in ("cloze", "socratic", "resources"):
        assert f'href="{page}.html"' in intro, f"{page} not in the navigation"


def test_every_page_names_an_icon_that_exists(built_site):
    """Without a <link rel="icon">, a browser asks for /favicon.ico, a 404 in the console (the redirecting
    index.html included: the request can start before the redirect; there the icon is inline, a request
    for a file would be cut off by the redirect now and then)."""
    for rel in PAGES:
        page = built_site / rel
        hrefs = re.findall(r'<link rel="(?:shortcut )?icon" href="([^"]+)"', page.read_text(encoding="utf-8"))
        assert hrefs, f"{rel} names no icon"
        assert all(href.startswith("data:image/") or (page.parent / href).is_file() for href in hrefs), (rel, hrefs)


@pytest.fixture(scope="module")
def widget_site(tmp_path_factory) -> Path:
    """A two-page book with the course's own Sphinx settings and an embedded ipywidgets slider.

    No course page embeds a widget today; this proves the local require.js + embed manager (and
    its icon fonts) work the day one does."""
    import subprocess
    import sys

    import nbformat

    book = tmp_path_factory.mktemp("widget_book")
    config = {
        "title": "widgets",
        "only_build_toc_files": True,
        "execute": {"execute_notebooks": "force", "stderr_output": "warn"},
        "html": {"favicon": str(ROOT / CONFIG["html"]["favicon"])},
        "sphinx": {"local_extensions": {"course_assets": str(ROOT / "book" / "_ext")},
                   "config": CONFIG["sphinx"]["config"]},
    }
    (book / "_config.yml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    (book / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n  - file: deep/widgets\n")
    (book / "index.md").write_text("# Widgets\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Slider"),
                nbformat.v4.new_code_cell("import ipywidgets as w\nw.IntSlider(value=3, description='k')"),
                nbformat.v4.new_code_cell("w.Button(description='ok', icon='check')")]
    (book / "deep").mkdir()
    nbformat.write(nb, book / "deep" / "widgets.ipynb")
    jb = Path(sys.executable).parent / "jupyter-book"
    proc = subprocess.run([str(jb), "build", "--all", "-W", "-n", "--keep-going", str(book)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return book / "_build" / "html"


def test_embedded_widgets_render_offline(widget_site, browser, artifacts):
    page = browser.new_page()
    outside, errors, failed, requests = [], [], [], []
    page.on("request", lambda request: requests.append(request.url))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file://", "data:"))
               else (outside.append(route.request.url), route.abort()))
    page.goto((widget_site / "deep" / "widgets.html").as_uri(), wait_until="load")
    page.wait_for_selector(".widget-slider")
    page.wait_for_selector("button.jupyter-button")
    page.wait_for_load_state("networkidle")
    assert page.locator(".widget-readout").first.inner_text().strip() == "3"
    fonts = [u for u in requests if u.endswith((".woff2", ".woff", ".ttf"))]
    assert any("/_static/offline/html-manager/" in u for u in fonts), "the widget icon font is the local copy"
    assert all("/_static/" in u for u in fonts), fonts
    page.screenshot(path=str(artifacts / "offline-embedded-widget.png"))
    assert not outside and not errors and not failed, (outside, errors, failed)
    page.close()
