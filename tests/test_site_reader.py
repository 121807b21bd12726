"""The site as a reader meets it on a desktop, a tablet and a phone: the chapter list and the page's contents
open from the buttons one sees, search finds Chinese words, the interface speaks Chinese. Real Chromium."""
from __future__ import annotations

import re

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


def _open(browser, site_url, size, path=PAGE):
    width, height = WIDTHS[size]
    page = browser.new_page(viewport={"width": width, "height": height})
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
def test_the_chapter_list_opens_and_closes_from_the_button_one_sees(size, browser, site_url, artifacts):
    page, errors = _open(browser, site_url, size)
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
def test_the_page_contents_are_reachable_at_every_width(size, browser, site_url, artifacts):
    page, errors = _open(browser, site_url, size)
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
        assert page.url.endswith(target)
    assert not errors, errors
    page.close()


def _search(browser, site_url, query: str) -> list[str]:
    page, errors = _open(browser, site_url, "desktop", "search.html?q=" + query.replace(" ", "+"))
    # searchtools.js writes the summary ("搜索完成……" or "没有匹配……") once the last result is listed
    page.wait_for_function("() => (document.querySelector('#search-results p.search-summary') || {})"
                           ".textContent")
    hrefs = [re.sub(r"\?.*$", "", href) for href in
             page.locator("#search-results ul.search li a").evaluate_all("links => links.map(a => a.href)")]
    assert not errors, errors
    page.close()
    return hrefs


@pytest.mark.parametrize("query", QUERIES)
def test_chinese_search_finds_its_page(query, browser, site_url, built_site):
    expected = QUERIES[query]
    page_text = (built_site / expected).read_text(encoding="utf-8")
    assert query in page_text, f"the table is stale: {expected} does not say {query!r}"
    found = _search(browser, site_url, query)
    assert f"{site_url}/{expected}" in found, f"searching {query!r} found {found}"


def test_a_word_the_book_never_uses_finds_nothing(browser, site_url, built_site):
    word = "蛋白质折叠"
    assert not any(word in path.read_text(encoding="utf-8") for path in built_site.rglob("*.html")
                   if path.name != "search.html")
    assert _search(browser, site_url, word) == []


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_search_box_and_sidebar_buttons_speak_chinese(size, browser, site_url):
    page, errors = _open(browser, site_url, size)
    page.keyboard.press("Control+k")
    box = page.locator("dialog#pst-search-dialog input[name=q], .search-button__wrapper.show input[name=q]").first
    box.wait_for(state="visible")
    assert box.get_attribute("placeholder") == chinese_search.PLACEHOLDER
    titles = page.locator(".sidebar-toggle").evaluate_all("bs => bs.map(b => b.title || b.ariaLabel || '')")
    assert all(re.search(r"[\u4e00-\u9fff]", t) for t in titles), titles
    assert not errors, errors
    page.close()
