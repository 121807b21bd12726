"""Pages that share one renderer process: see SharedTabs. Used by the site's tests (conftest.site_tabs) and the
feedback pages' (tests/test_feedback_pages.py)."""
from __future__ import annotations


class SharedTabs:
    """Pages opened in one browser context that keeps a page of the same site open while it lives (anchor_url: a folder
    listing is the cheapest): every page opened here shares that page's renderer process. A page in a context of its own
    (browser.new_page) starts a renderer of its own, which costs more CPU than loading the page does (measured on
    this 2-core machine with the book's pages loaded one after the other: 2.4 times the CPU). Each page still gets
    the window size and colour scheme it asks for. Shared: the context's storage and HTTP cache (a routed page has
    none: Playwright turns the cache off for routing). A test that needs a reader's first visit (empty storage) uses
    browser.new_page.
    """

    def __init__(self, browser, anchor_url: str):
        self.context = browser.new_context()
        self._anchor = self.context.new_page()
        self._anchor.goto(anchor_url, wait_until="load")

    def close(self) -> None:
        self.context.close()

    def new_page(self, viewport: dict | None = None, color_scheme: str | None = None):
        page = self.context.new_page()
        if viewport:
            page.set_viewport_size(viewport)
        if color_scheme:
            page.emulate_media(color_scheme=color_scheme)
        return page
