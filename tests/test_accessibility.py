"""Accessibility of the built site, checked by a standard tool: axe-core on every page.

axe-core (pinned version and sha512 in book/_ext/offline_assets.py, TEST_PACKAGES; fetched once with
`npm pack` into _vendor/npm/, like the site's offline assets) is injected into each page by Playwright
(`add_script_tag`) and run on the whole document. No page of the build loads it.

Every page (the pages of _toc.yml plus index, genindex and search) is checked in headless Chromium at
desktop width (1280 px) in the theme's light and dark modes (the site follows the reader's system:
html_context default_mode "auto") and at phone width (390 px, light; the phone layout hides the
sidebar and shows other header buttons). The cloze page is checked once more after its buttons were
used (right, wrong and revealed blanks have their own colours).

A check fails on a violation of impact "serious" or "critical", or of a rule in KEEP_FIXED (rules
of lower impact that were fixed and must stay fixed), apart from the exceptions in ALLOWED. Every
violation, whatever its impact, is listed per page in the failure message and, for all pages, in
test-artifacts/accessibility-axe.md.
"""
from __future__ import annotations

import re

import pytest

from test_offline_site import PAGES, WIDTHS, wait_for_mathjax

import offline_assets  # book/_ext (tests/conftest.py puts it on the path)

AXE_VERSION = offline_assets.TEST_PACKAGES["axe-core"][0]
FAILING_IMPACTS = ("serious", "critical")
# moderate rules the course fixed (book/_ext/templates/navbar-logo.html): a regression fails too
KEEP_FIXED = {"region"}
VIEWS = [("desktop", "light"), ("desktop", "dark"), ("phone", "light")]

# rule id -> pages (built paths) where a failing violation of that rule is accepted, with the reason.
# Only for what cannot be fixed from the course's side (theme markup with no hook). Today: none.
ALLOWED: dict[str, set[str]] = {}

# every run, for the summary written when the module is done: (page, view) -> violations
RESULTS: dict[tuple[str, str], list[dict]] = {}


@pytest.fixture(scope="module")
def axe_source() -> str:
    return offline_assets.read_test_asset("axe-core", "axe.min.js")


@pytest.fixture(scope="module", autouse=True)
def summary_file(artifacts):
    yield
    if RESULTS:
        (artifacts / "accessibility-axe.md").write_text(summary_markdown(RESULTS), encoding="utf-8")


def run_axe(page, axe_source: str) -> list[dict]:
    """axe.run on the whole document; its violations, reduced to what the report needs."""
    page.add_script_tag(content=axe_source)
    return page.evaluate(
        """async () => {
            const result = await axe.run(document, {resultTypes: ["violations"]});
            return result.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => ({target: n.target.join(" "), summary: n.failureSummary,
                                          html: n.html.slice(0, 200)})),
            }));
        }""")


def _rank(impact: str | None) -> int:
    return {"minor": 1, "moderate": 2, "serious": 3, "critical": 4}.get(impact or "", 0)


def _serious(violation: dict) -> bool:
    return violation["impact"] in FAILING_IMPACTS or violation["id"] in KEEP_FIXED


def _allowed(violation: dict, page: str) -> bool:
    return page in ALLOWED.get(violation["id"], set())


def _fails(violation: dict, page: str) -> bool:
    return _serious(violation) and not _allowed(violation, page)


def table(violations: list[dict], page: str) -> list[str]:
    """Markdown rows: rule id, impact, number of nodes, and whether the rule fails the check here."""
    rows = []
    for v in sorted(violations, key=lambda v: (-_rank(v["impact"]), v["id"])):
        verdict = "FAIL" if _fails(v, page) else ("allowed" if _serious(v) else "")
        rows.append(f"| {v['id']} | {v['impact']} | {len(v['nodes'])} | {verdict} |")
    return rows


def summary_markdown(results) -> str:
    lines = [f"# axe-core {AXE_VERSION} on every page of the built site", "",
             "| page | view | rule | impact | nodes | |", "|---|---|---|---|---:|---|"]
    for (page, view), violations in sorted(results.items()):
        rows = table(violations, page) or ["| (none) | | | |"]
        lines += [f"| {page} | {view} " + row for row in rows]
    return "\n".join(lines) + "\n"


def check(page_name: str, view: str, violations: list[dict]) -> None:
    """Record the result; fail with the page's table and the failing nodes."""
    RESULTS[(page_name, view)] = violations
    failing = [v for v in violations if _fails(v, page_name)]
    if not failing:
        return
    lines = [f"axe-core {AXE_VERSION} on {page_name} ({view}):", "",
             "| rule | impact | nodes | |", "|---|---|---:|---|", *table(violations, page_name), ""]
    for v in failing:
        lines.append(f"{v['id']} ({v['impact']}): {v['help']}")
        for node in v["nodes"][:5]:
            lines.append(f"    {node['target']}: {node['html']}")
            lines += ["      " + s for s in (node["summary"] or "").splitlines()[:4]]
        if len(v["nodes"]) > 5:
            lines.append(f"    ... and {len(v['nodes']) - 5} more")
    pytest.fail("\n".join(lines), pytrace=False)


def open_page(tabs, url: str, width: str, scheme: str):
    """The page as a reader with that window width and system colour scheme sees it, fully rendered."""
    w, h = WIDTHS[width]
    page = tabs.new_page(viewport={"width": w, "height": h}, color_scheme=scheme)
    errors = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # the console says only "404", the response says which file
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(url, wait_until="load")
    if url.endswith("/index.html"):  # a redirect to the root page: check where the reader lands
        page.wait_for_url("**/book/intro.html")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("() => document.documentElement.dataset.theme") == scheme, "theme ignores the system"
    if page.locator(".math").count():
        wait_for_mathjax(page)
    if page.locator(".cloze-card").count():
        page.wait_for_selector(".cloze-card.cloze-ready")
    return page, errors


@pytest.mark.parametrize("view", VIEWS, ids=[f"{w}-{s}" for w, s in VIEWS])
@pytest.mark.parametrize("rel", PAGES)
def test_axe_finds_no_serious_violation(rel, view, site_url, site_tabs, axe_source):
    page, errors = open_page(site_tabs, f"{site_url}/{rel}", *view)
    try:
        violations = run_axe(page, axe_source)
    finally:
        page.close()
    check(rel, "-".join(view), violations)
    assert not errors, errors


def test_axe_on_the_cloze_page_after_checking(site_url, site_tabs, axe_source):
    """Right, wrong and revealed blanks, the result line, a focused blank: all with their own colours."""
    page, errors = open_page(site_tabs, f"{site_url}/book/cloze.html?seed=20250101", "desktop", "light")
    try:
        first = page.locator(".cloze-card").nth(0)
        blanks = first.locator("input.cloze-blank")
        for i in range(blanks.count()):
            blanks.nth(i).fill("wrong")
        first.get_by_role("button", name="检查").click()
        page.locator(".cloze-card").nth(1).get_by_role("button", name="显示答案").click()
        third = page.locator(".cloze-card").nth(2)
        third.get_by_role("button", name="显示答案").click()
        third.get_by_role("button", name="检查").click()
        page.locator(".cloze-card").nth(3).locator("input.cloze-blank").first.focus()
        assert first.locator("input.cloze-wrong").count() == blanks.count()
        assert page.locator(".cloze-card").nth(1).locator("input.cloze-revealed").count() > 0
        assert third.locator("input.cloze-right").count() == third.locator("input.cloze-blank").count()
        violations = run_axe(page, axe_source)
    finally:
        page.close()
    check("book/cloze.html (after 检查, 显示答案)", "desktop-light", violations)
    assert not errors, errors


def test_index_page_is_a_page_without_its_redirect(site_url, site_tabs, axe_source):
    """index.html only redirects to the root page; where a browser blocks automatic redirects (an
    accessibility setting in some browsers) the reader sees it: a titled page with a link."""
    page = site_tabs.new_page()

    def without_refresh(route):
        response = route.fetch()
        body = re.sub(r'<meta http-equiv="Refresh"[^>]*>', "", response.text(), flags=re.I)
        assert body != response.text(), "index.html redirects with a meta refresh"
        route.fulfill(response=response, body=body)

    page.route("**/index.html", without_refresh)
    page.goto(f"{site_url}/index.html", wait_until="load")
    try:
        assert page.url.endswith("/index.html")
        assert page.locator('main a[href="book/intro.html"]').count() == 1
        violations = run_axe(page, axe_source)
    finally:
        page.close()
    check("index.html (redirect blocked)", "desktop-light", violations)


def test_axe_is_not_part_of_the_site(built_site):
    """The checker is injected by the tests only: no file or page of the build carries it."""
    assert not list(built_site.rglob("axe*")), "axe-core was copied into the site"
    for rel in PAGES:
        scripts = re.findall(r"<script\b[^>]*>", (built_site / rel).read_text(encoding="utf-8"))
        assert not [tag for tag in scripts if "axe" in tag], rel
