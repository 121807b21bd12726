"""The site as a reader meets it, in headless Chromium at a desktop, a tablet and a phone width (issue 34).

Navigation: the chapter list (primary sidebar) and the page's contents (secondary sidebar) open with a click on
their header buttons and close again (on a desktop a second click on the same button; below the theme's
breakpoint they open as a drawer, closed by a click beside it or Escape). Screenshots of the open drawers go to
test-artifacts/reader-*.png.
"""
from __future__ import annotations

import pytest

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
