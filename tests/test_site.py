"""The built site, as a reader sees it in a real headless Chromium."""

import pytest

from course import ASSIGNMENTS, hidden_test_lines, reference_fills


def _site_text(root) -> str:
    parts = []
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in {".html", ".ipynb", ".txt", ".js", ".json", ".md", ".py"}:
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def test_site_has_no_hidden_tests(built_site):
    import html

    text = html.unescape(_site_text(built_site))
    for name in ASSIGNMENTS:
        for line in hidden_test_lines(name):
            assert line not in text, f"hidden test of {name} on the site: {line!r}"


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_exercise_page_in_chromium(name, site_url, browser, artifacts):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{site_url}/book/{name}.html", wait_until="load")

    # the blanks are shown, not executed: no traceback from `_____`
    code = page.locator("div.cell").all_inner_texts()
    assert any("_____" in block for block in code), "blank not visible"
    assert "NameError" not in page.inner_text("main")

    # the answer is collapsed until its summary is clicked
    summary = page.locator("details > summary", has_text="答案").first
    details = summary.locator("xpath=..")
    answer = details.locator("pre").first
    first_fill = reference_fills(name)[0]
    assert first_fill.split("{")[0] in answer.text_content()
    assert not answer.is_visible()
    summary.click()
    assert answer.is_visible()

    # every image (the executed plots) loaded
    images = page.locator("main img")
    assert images.count() >= 1
    for i in range(images.count()):
        assert images.nth(i).evaluate("img => img.complete && img.naturalWidth > 0"), f"image {i} did not load"

    page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)
    assert not errors, errors
    page.close()
