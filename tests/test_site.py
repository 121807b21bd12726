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
def test_exercise_page_in_chromium(name, site_url, site_tabs, artifacts):
    page = site_tabs.new_page(viewport={"width": 1280, "height": 900})
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


def test_the_benchmarks_page_shows_each_record_or_how_to_make_it(site_url, site_tabs, built_site, artifacts):
    """book/benchmarks.md is drawn from bench/results at every build: each section names its record's commit and
    command, or the command that makes the missing record; its figures load (tests/test_bench_records.py)."""
    import report  # bench/

    page = site_tabs.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{site_url}/book/benchmarks.html", wait_until="load")
    text = page.inner_text("main")
    assert "Traceback" not in text
    figures = 0
    for name in report.SOURCES:
        assert f"bench/results/{name}.json" in text, name
        rec = report.load(name)
        if rec is None:
            continue
        assert rec["commit"][:7] in text and rec["command"] in text, name
        figures += len(report.FIGURES.get(name, []))
    images = page.locator("main img")
    assert images.count() == figures
    for i in range(images.count()):
        assert images.nth(i).evaluate("img => img.complete && img.naturalWidth > 0"), f"image {i} did not load"
    page.screenshot(path=str(artifacts / "benchmarks.png"), full_page=True)
    assert not errors, errors
    page.close()


def test_a_page_weight_run_writes_the_record_the_page_draws(tmp_path):
    """bench/page_weight.py's smallest run (a one-page site) writes bench/results/page-weight.json's format, which
    the page's functions render (here into a folder of the test's own: BENCH_RESULTS)."""
    import os
    import subprocess
    import sys

    import report  # bench/
    from course import ROOT

    site = tmp_path / "site"
    (site / "book").mkdir(parents=True)
    (site / "book" / "a.html").write_text("<!doctype html><title>a</title><p>页</p>", encoding="utf-8")
    results = tmp_path / "results"
    subprocess.run([sys.executable, str(ROOT / "bench" / "page_weight.py"), "--site", str(site)], check=True,
                   capture_output=True, env={**os.environ, "BENCH_RESULTS": str(results)})
    assert [p.name for p in results.iterdir()] == ["page-weight.json"]
    rec = report.load("page-weight", results)
    assert [p["page"] for p in rec["data"]["pages"]] == ["book/a.html"] and rec["data"]["pages"][0]["other"] > 0
    assert "| a |" in report.markdown("page-weight", results)
    for fig in report.figures("page-weight", results):
        from agentrl_ref.teaching.shared.page_figure import page_problems

        assert not page_problems(fig)
