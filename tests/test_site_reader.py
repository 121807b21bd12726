"""The site as a reader meets it, in headless Chromium at a desktop, a tablet and a phone width (issue 34).

Navigation: the chapter list (primary sidebar) and the page's contents (secondary sidebar) open with a click on
their header buttons and close again (on a desktop a second click on the same button; below the theme's
breakpoint they open as a drawer, closed by a click beside it or Escape). Screenshots of the open drawers go to
test-artifacts/reader-*.png.
"""
from __future__ import annotations

import pytest

from course import ROOT

WIDTHS = {"desktop": 1366, "tablet": 900, "phone": 390}
HEIGHT = 844
PAGE = "book/ex1_format_reward.html"
CHAPTER_LINK = 'a.reference.internal[href$="ex2_verifiable_reward.html"]'  # an entry of the chapter list
CONTENTS_LINK = "nav.page-toc a.nav-link"                                 # an entry of the page's contents

SHOWN = """selector => [...document.querySelectorAll(selector)].some(e => {
    const box = e.getBoundingClientRect();
    return e.checkVisibility({visibilityProperty: true, opacityProperty: true}) && box.width > 0
        && box.right > 0 && box.left < innerWidth && box.bottom > 0 && box.top < innerHeight;
})"""


def shown(page, selector: str) -> bool:
    """True if some element matching selector is rendered inside the viewport (not hidden, not off-screen)."""
    page.wait_for_timeout(400)  # the drawers slide in and out
    return page.evaluate(SHOWN, selector)


def open_page(browser, site_url, width: int, rel: str = PAGE):
    page = browser.new_page(viewport={"width": width, "height": HEIGHT})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{site_url}/{rel}", wait_until="load")
    page.wait_for_load_state("networkidle")
    return page, errors


def close(page, button, width: int, side: str) -> None:
    """The way a reader closes what the button opened: the button again where it can be clicked (the desktop's
    sidebar), else a tap beside the drawer (on the other side of the screen)."""
    drawer = page.locator("dialog[open]")
    if drawer.count() == 0:
        button.click()
        return
    page.mouse.click(width - 5 if side == "left" else 5, HEIGHT // 2)


@pytest.mark.parametrize("width_name", WIDTHS)
def test_sidebar_buttons_open_and_close(width_name, site_url, browser, artifacts):
    width = WIDTHS[width_name]
    page, errors = open_page(browser, site_url, width)
    toggles = page.locator(".primary-toggle")
    assert toggles.count() == 1, "one chapter-list button per page (the themes' script takes the first)"
    assert page.locator(".secondary-toggle").count() == 1, "one page-contents button per page"

    for button_selector, target, side in ((".primary-toggle", CHAPTER_LINK, "left"),
                                          (".secondary-toggle", CONTENTS_LINK, "right")):
        button = page.locator(button_selector)
        if not button.is_visible():
            # the theme shows the page's contents beside the text on wide screens, without a button
            assert width >= 1200 and shown(page, target), f"{button_selector} hidden and {target} not shown"
            continue
        name = button.get_attribute("aria-label") or ""   # Bootstrap moves the title into its tooltip
        assert name and not name.isascii(), f"{button_selector} is named {name!r}, not in Chinese"
        was_shown = shown(page, target)
        button.click()
        assert shown(page, target) != was_shown, f"{width}px: clicking {button_selector} changed nothing"
        if not was_shown:
            page.screenshot(path=str(artifacts / f"reader-{button_selector[1:]}-{width}.png"))
        close(page, button, width, side)
        assert shown(page, target) == was_shown, f"{width}px: {target} did not go back after a second click"
        if not was_shown:  # the drawer also closes with Escape
            button.click()
            assert shown(page, target)
            page.keyboard.press("Escape")
            assert not shown(page, target)
    assert not errors, errors
    page.close()


# ---------------------------------------------------------------- search

QUERIES = ["裁剪", "验证器", "组内标准化", "练习 3", "错位"]
ABSENT = "不存在的词汇"  # in no page: the search must say it found nothing


def page_texts(built_site) -> dict[str, str]:
    """The text of every page's article (what the reader searches), spaces removed, by page path."""
    import html
    import re

    texts = {}
    for path in sorted((built_site / "book").glob("*.html")):
        body = path.read_text(encoding="utf-8")
        main = body[body.find("<article"):body.rfind("</article>")]
        main = re.sub(r"<(script|style)\b.*?</\1>", " ", main, flags=re.S)
        texts[f"book/{path.name}"] = re.sub(r"\s+", "", html.unescape(re.sub(r"<[^>]+>", " ", main)))
    return texts


def search(page, site_url, query: str) -> list[str]:
    """The pages the site's search lists for query (as typed in the search box), in its order."""
    from urllib.parse import quote

    page.goto(f"{site_url}/search.html?q={quote(query)}", wait_until="load")
    page.wait_for_function("() => document.querySelector('#search-results .search-summary')?.textContent.trim()")
    hrefs = page.eval_on_selector_all("#search-results ul.search li a", "as => as.map(a => a.getAttribute('href'))")
    return list(dict.fromkeys(href.split("#")[0] for href in hrefs))


@pytest.mark.parametrize("query", QUERIES)
def test_chinese_search_finds_the_pages_that_say_it(query, site_url, browser, built_site):
    texts = page_texts(built_site)
    saying = {rel for rel, text in texts.items() if query.replace(" ", "") in text}
    assert saying, f"no page says {query!r}: pick another query"
    page, errors = open_page(browser, site_url, WIDTHS["phone"], "search.html")
    found = search(page, site_url, query)
    assert saying <= set(found), f"{query!r}: pages that say it but were not found: {sorted(saying - set(found))}"
    assert len(found) < len(texts), f"{query!r} lists every page: the search does not tell pages apart"
    assert not errors, errors
    page.close()


def test_search_for_words_no_page_has_finds_nothing(site_url, browser, built_site):
    assert not any(ABSENT in text for text in page_texts(built_site).values())
    page, _ = open_page(browser, site_url, WIDTHS["desktop"], "search.html")
    assert search(page, site_url, ABSENT) == []
    page.close()


def test_search_box_speaks_chinese(site_url, browser):
    page, _ = open_page(browser, site_url, WIDTHS["phone"])
    page.locator(".search-button").first.click()
    box = page.locator("#pst-search-dialog input[name=q]")
    box.wait_for(state="visible")
    placeholder = box.get_attribute("placeholder")
    assert placeholder and not placeholder.isascii(), placeholder
    box.fill("组内标准化")
    box.press("Enter")
    page.wait_for_url("**/search.html?q=*")
    page.wait_for_function("() => document.querySelector('#search-results .search-summary')?.textContent.trim()")
    assert page.locator("#search-results ul.search li").count() > 0
    page.close()


# ---------------------------------------------------------------- code and tables that fit

BOOK_PAGES = sorted(path.stem for path in (ROOT / "book").glob("*.*") if path.suffix in {".md", ".ipynb"})

FIT = """() => {
  const visible = (e) => e.checkVisibility() && e.getBoundingClientRect().width > 0;
  const code = [...document.querySelectorAll("article pre")].filter(visible);
  const output = (pre) => pre.closest(".cell_output") !== null;
  const cut = (pre) => pre.scrollWidth > pre.clientWidth + 1;
  const em = (e) => parseFloat(getComputedStyle(e).fontSize);
  const cells = [...document.querySelectorAll("article table td, article table th")].filter(visible);
  return {
    page: document.documentElement.scrollWidth, screen: innerWidth,
    cutCode: code.filter(pre => !output(pre) && cut(pre)).map(pre => pre.textContent.trim().split("\\n")[0]),
    cutTodo: code.filter(pre => !output(pre) && cut(pre) && pre.textContent.includes("TODO"))
      .map(pre => pre.textContent.trim().split("\\n").find(line => line.includes("TODO"))),
    unscrolledOutput: code.filter(pre => output(pre) && cut(pre)
      && !["auto", "scroll"].includes(getComputedStyle(pre).overflowX)).length,
    squeezed: cells.filter(c => c.textContent.trim().length > 2 && c.getBoundingClientRect().width < 3 * em(c))
      .map(c => c.textContent.trim().slice(0, 20)),
    brokenNames: [...document.querySelectorAll("article table code.literal span.pre")].filter(visible)
      .filter(c => c.getClientRects().length > 1).map(c => c.textContent),
    unscrolledTables: [...document.querySelectorAll("article table")].filter(visible).filter(t => {
      const box = t.closest(".pst-scrollable-table-container");
      return !box || box.getBoundingClientRect().right > innerWidth + 1
        || (t.scrollWidth > box.clientWidth + 1 && !["auto", "scroll"].includes(getComputedStyle(box).overflowX));
    }).length,
  };
}"""


@pytest.mark.parametrize("name", BOOK_PAGES)
def test_code_and_tables_fit_a_phone(name, site_url, browser):
    page, errors = open_page(browser, site_url, WIDTHS["phone"], f"book/{name}.html")
    fit = page.evaluate(FIT)
    assert fit["page"] <= fit["screen"], f"{name}: the page is {fit['page']} px wide on a {fit['screen']} px screen"
    assert not fit["cutTodo"], f"{name}: TODO lines cut at the block's edge: {fit['cutTodo']}"
    assert not fit["cutCode"], f"{name}: code cut at the block's edge: {fit['cutCode']}"
    assert not fit["unscrolledOutput"], f"{name}: outputs wider than their box that cannot be scrolled"
    assert not fit["squeezed"], f"{name}: table cells squeezed to a few letters a line: {fit['squeezed']}"
    assert not fit["brokenNames"], f"{name}: identifiers split across lines in tables: {fit['brokenNames']}"
    assert not fit["unscrolledTables"], f"{name}: tables wider than the screen outside a scrolling box"
    assert not errors, errors
    page.close()


# ---------------------------------------------------------------- figures

FIGURES = """() => [...document.querySelectorAll("article img")].map(img => ({
    alt: img.getAttribute("alt") || "",
    caption: img.closest("figure")?.querySelector("figcaption")?.textContent.trim() || "",
    id: img.closest("figure")?.id || "",
    loaded: img.complete && img.naturalWidth > 0,
}))"""


@pytest.mark.parametrize("name", BOOK_PAGES)
def test_every_figure_has_a_numbered_caption_and_its_title_as_alt(name, site_url, browser):
    import re

    page, _ = open_page(browser, site_url, WIDTHS["desktop"], f"book/{name}.html")
    figures = page.evaluate(FIGURES)
    page.close()
    for n, figure in enumerate(figures, start=1):
        assert figure["loaded"], f"{name}: image {n} did not load"
        assert not re.search(r"\.(png|jpe?g|svg)\b|_images/", figure["alt"]), f"{name}: alt is a path: {figure}"
        assert figure["alt"].startswith(f"图 {n}："), f"{name}: figure {n} has no title as its alt text: {figure}"
        assert len(figure["alt"]) > len(f"图 {n}：") + 1, figure
        assert figure["caption"] == figure["alt"], f"{name}: caption and alt differ: {figure}"
        assert figure["id"] == f"fig-{n}", figure


# ---------------------------------------------------------------- the interface in Chinese

INTERFACE_TEXT = """() => {
  const english = (text) => /[A-Za-z]{3,}/.test(text) && !/[\\u4e00-\\u9fff]/.test(text);
  const found = new Set();
  const names = ["title", "aria-label", "data-bs-title", "data-bs-original-title", "placeholder"];
  for (const e of document.querySelectorAll(names.map(name => `[${name}]`).join(","))) {
    if (e.closest("article .cell, article pre, article code")) continue;
    for (const name of names) {
      const value = e.getAttribute(name);
      if (value && english(value)) found.add(`${e.tagName.toLowerCase()} ${name}="${value}"`);
    }
  }
  for (const part of document.querySelectorAll("footer, .bd-sidebar-primary, .prev-next-area, .bd-header-article")) {
    const walker = document.createTreeWalker(part, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const text = walker.currentNode.textContent.trim();
      if (english(text) && !/^\\.[a-z]+$/.test(text)) found.add(`text "${text}"`);  // file types (.pdf) stay
    }
  }
  return [...found];
}"""


@pytest.mark.parametrize("rel", ["book/intro.html", "book/ex1_format_reward.html", "book/cloze.html", "search.html"])
def test_interface_speaks_chinese(rel, site_url, browser):
    for width in (WIDTHS["desktop"], WIDTHS["phone"]):
        page, _ = open_page(browser, site_url, width, rel)
        english = page.evaluate(INTERFACE_TEXT)
        page.close()
        assert not english, f"{rel} at {width}px: English in the interface: {english}"
