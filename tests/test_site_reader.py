"""The site as a reader meets it on a desktop, a tablet and a phone: the chapter list and the page's contents
open from the buttons one sees, search finds Chinese words, the interface speaks Chinese. Real Chromium."""
from __future__ import annotations

import re
from urllib.parse import unquote

import chinese_search  # book/_ext
import pytest

WIDTHS = {"desktop": (1366, 900), "tablet": (900, 1000), "phone": (390, 844)}
THEMES_WIDE = 992  # from this width the chapter list is part of the page (both themes' breakpoint)
PAGE = "book/ex3_loss_mask.html"

# Chinese words a reader searches for, each with a page that is about it (the page must contain the word:
# checked below, so the table cannot go stale).
QUERIES = {
    "验证器": "book/ex2_verifiable_reward.html",
    "错位": "book/ex3_loss_mask.html",
    "裁剪": "book/ex7_agent_grpo.html",
    "组内标准化": "book/ex7_agent_grpo.html",
    "练习 3": "book/ex3_loss_mask.html",
    "异步": "book/ex4_async_rollout.html",
}


def _open(tabs, site_url, size, path=PAGE):
    width, height = WIDTHS[size]
    page = tabs.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{site_url}/{path}", wait_until="load")
    return page, errors


def _visible_toggles(page, kind: str) -> list:
    toggles = page.locator(f".{kind}-toggle")
    return [toggles.nth(i) for i in range(toggles.count()) if toggles.nth(i).is_visible()]


def _chapter_link(page):
    """The chapter list's link to exercise 1, wherever the theme put the list (sidebar or dialog)."""
    return page.locator("nav.bd-docs-nav a.reference", has_text="练习 1").first


@pytest.mark.parametrize("size", WIDTHS)
def test_the_chapter_list_opens_and_closes_from_the_button_one_sees(size, site_tabs, site_url, artifacts):
    page, errors = _open(site_tabs, site_url, size)
    (button,) = _visible_toggles(page, "primary")
    assert button.get_attribute("aria-label") == "章节目录"
    shown_before = _chapter_link(page).is_visible()
    assert shown_before == (WIDTHS[size][0] >= THEMES_WIDE), "the chapter list's place at this width"
    button.click()
    page.wait_for_timeout(400)  # the theme's transition
    assert _chapter_link(page).is_visible() != shown_before, f"{size}: the button changed nothing"
    page.screenshot(path=str(artifacts / f"reader-{size}-chapters.png"))
    if shown_before:
        button.click()
    else:  # a dialog: closed with Escape, as a reader closes it (or a tap outside)
        page.keyboard.press("Escape")
    page.wait_for_timeout(400)
    assert _chapter_link(page).is_visible() == shown_before, f"{size}: the chapter list did not close again"
    if not shown_before:  # a reader who closed it can go on: the link in it works
        button.click()
        page.wait_for_timeout(400)
        _chapter_link(page).click()
        page.wait_for_load_state("load")
        assert page.url.endswith("book/ex1_format_reward.html")
    assert not errors, errors
    page.close()


@pytest.mark.parametrize("size", WIDTHS)
def test_the_page_contents_are_reachable_at_every_width(size, site_tabs, site_url, artifacts):
    page, errors = _open(site_tabs, site_url, size)
    contents = page.locator("nav.page-toc a.nav-link").first
    shown = _visible_toggles(page, "secondary")
    if contents.is_visible():  # wide: the contents sit beside the page, no button needed
        assert not shown
    else:
        (button,) = shown
        assert button.get_attribute("aria-label") == "本页目录"
        button.click()
        page.wait_for_timeout(400)
        assert contents.is_visible(), f"{size}: the contents button opened nothing"
        page.screenshot(path=str(artifacts / f"reader-{size}-contents.png"))
        target = contents.get_attribute("href")
        contents.click()
        page.wait_for_timeout(400)
        assert not contents.is_visible(), f"{size}: following a heading of the contents left the dialog open"
        assert unquote(page.url).endswith(target)
    assert not errors, errors
    page.close()


def _search(site_tabs, site_url, query: str) -> list[str]:
    page, errors = _open(site_tabs, site_url, "desktop", "search.html?q=" + query.replace(" ", "+"))
    # searchtools.js writes the summary ("搜索完成……" or "没有匹配……") once the last result is listed
    page.wait_for_function("() => (document.querySelector('#search-results p.search-summary') || {})"
                           ".textContent")
    hrefs = [re.sub(r"\?.*$", "", href) for href in
             page.locator("#search-results ul.search li a").evaluate_all("links => links.map(a => a.href)")]
    assert not errors, errors
    page.close()
    return hrefs


@pytest.mark.parametrize("query", QUERIES)
def test_chinese_search_finds_its_page(query, site_tabs, site_url, built_site):
    expected = QUERIES[query]
    page_text = (built_site / expected).read_text(encoding="utf-8")
    assert query in page_text, f"the table is stale: {expected} does not say {query!r}"
    found = _search(site_tabs, site_url, query)
    assert f"{site_url}/{expected}" in found, f"searching {query!r} found {found}"


def test_a_word_the_book_never_uses_finds_nothing(site_tabs, site_url, built_site):
    word = "蛋白质折叠"
    assert not any(word in path.read_text(encoding="utf-8") for path in built_site.rglob("*.html")
                   if path.name != "search.html")
    assert _search(site_tabs, site_url, word) == []


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_search_box_and_sidebar_buttons_speak_chinese(size, site_tabs, site_url):
    page, errors = _open(site_tabs, site_url, size)
    page.keyboard.press("Control+k")
    box = page.locator("dialog#pst-search-dialog input[name=q], .search-button__wrapper.show input[name=q]").first
    box.wait_for(state="visible")
    assert box.get_attribute("placeholder") == chinese_search.PLACEHOLDER
    titles = page.locator(".sidebar-toggle").evaluate_all("bs => bs.map(b => b.title || b.ariaLabel || '')")
    assert all(re.search(r"[\u4e00-\u9fff]", t) for t in titles), titles
    assert not errors, errors
    page.close()


def _exercise_pages(built_site) -> list[str]:
    return sorted(p.relative_to(built_site).as_posix() for p in (built_site / "book").glob("ex*.html"))


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_no_line_of_code_one_is_asked_to_read_is_clipped(size, site_tabs, site_url, built_site):
    """Code on the pages (TODOs, hints, answers) wraps at the block's edge; only cell outputs keep their columns
    and scroll inside their own box (a table of numbers must not wrap)."""
    clipped = {}
    for path in _exercise_pages(built_site) + ["book/cloze.html", "book/frameworks.html", "book/benchmarks.html"]:
        page, errors = _open(site_tabs, site_url, size, path)
        cut = page.evaluate("""() => [...document.querySelectorAll('article pre')]
            .filter(pre => !pre.closest('.cell_output') && pre.scrollWidth > pre.clientWidth + 1)
            .map(pre => pre.textContent.split('\\n').find(line => line.length > 40) || pre.textContent.slice(0, 60))""")
        if cut:
            clipped[path] = cut[:3]
        assert not errors, (path, errors)
        page.close()
    assert not clipped, clipped


def test_every_figure_has_a_numbered_caption_and_its_title_as_alt_text(site_tabs, site_url, built_site, artifacts):
    """A figure drawn by a page's code: inside a <figure> numbered 图 N whose caption is the figure's own title,
    the same words as the image's alt text (not its file name), drawn no wider than the column it is shown in
    (agentrl_ref.teaching.shared.page_figure: its text is then at least MIN_TEXT_PX on a desktop)."""
    from agentrl_ref.teaching.shared.page_figure import COLUMN_PX

    seen = 0
    for path in _exercise_pages(built_site) + ["book/benchmarks.html"]:   # the benchmarks page: its records' figures
        page, errors = _open(site_tabs, site_url, "desktop", path)
        column = page.evaluate("""() => { const a = document.querySelector('article.bd-article');
            const s = getComputedStyle(a);
            return a.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); }""")
        assert abs(column - COLUMN_PX) <= 1, f"the book's column is {column} px, page_figure says {COLUMN_PX}"
        figures = page.evaluate("""() => [...document.querySelectorAll('article img')]
            .filter(img => img.getAttribute('src').includes('_images/'))
            .map(img => { const fig = img.closest('figure'), cap = fig && fig.querySelector('figcaption');
                return {alt: img.alt, natural: img.naturalWidth, shown: img.clientWidth, id: fig && fig.id,
                        number: cap && cap.querySelector('.caption-number')?.textContent.trim(),
                        text: cap && cap.querySelector('.caption-text')?.textContent.trim()}; })""")
        for fig in figures:
            fig["text"] = (fig["text"] or "").removeprefix(fig["number"] or "").strip()
        assert figures or path == "book/benchmarks.html", f"{path}: no figure"
        numbers = []
        for fig in figures:
            assert fig["text"] and re.fullmatch(r"图 \d+", fig["number"] or ""), (path, fig)
            assert fig["alt"] == fig["text"] and "_images" not in fig["alt"], (path, fig)
            assert fig["id"] and fig["id"].startswith("figure-"), (path, fig)  # a link names the figure, not #id1
            assert fig["natural"] <= COLUMN_PX + 2 and fig["shown"] == fig["natural"], (path, fig)
            numbers.append(int(fig["number"].split()[1]))
        assert numbers == list(range(1, len(figures) + 1)), (path, numbers)  # per page: 图 1, 图 2, ...
        seen += len(figures)
        if path.endswith("ex4_async_rollout.html"):
            page.locator("figure.course-figure").first.screenshot(path=str(artifacts / "reader-figure-ex4.png"))
        assert not errors, (path, errors)
        page.close()
    assert seen >= 10


def test_headings_have_ids_made_of_their_words(site_tabs, site_url, built_site):
    """A link to a section says where it goes (#练习-3-...), not docutils' #id1; the contents link to the same ids."""
    from heading_ids import AUTO_ID  # book/_ext

    linked = 0
    for path in _exercise_pages(built_site) + ["book/intro.html", "book/glossary.html"]:
        page, _ = _open(site_tabs, site_url, "desktop", path)
        ids = page.evaluate("() => [...document.querySelectorAll('article section')].map(s => s.id)")
        assert ids and not [i for i in ids if AUTO_ID.fullmatch(i)], (path, ids)
        targets = page.evaluate("() => [...document.querySelectorAll('nav.page-toc a.nav-link')].map(a => a.hash)")
        assert all(page.locator(f"[id='{unquote(t)[1:]}']").count() == 1 for t in targets), (path, targets)
        linked += len(targets)
        page.close()
    assert linked > 50  # the exercise pages have contents (a page of one section, the glossary, has none)


def test_the_download_menu_says_which_file_holds_the_answers(site_tabs, site_url):
    page, errors = _open(site_tabs, site_url, "desktop")
    page.locator(".dropdown-download-buttons button").first.click()
    page.wait_for_timeout(300)
    items = [" ".join(t.split()) for t in page.locator(".dropdown-download-buttons .dropdown-item").all_inner_texts()]
    assert items[0] == "学生版 .ipynb（填空，不含答案）", items
    assert "网页版 .ipynb（含答案）" in items and not [i for i in items if i in (".ipynb", ".md", ".pdf")], items
    assert page.locator("footer .copyright").inner_text().strip().startswith("© 2026 Agent-RL 代码填空"), "footer"
    assert not errors, errors
    page.close()
