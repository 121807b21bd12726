"""The MLM cloze page in headless Chromium: same counts, same seeded blanks as Python; 刷新, 检查, 显示答案,
keyboard."""
from __future__ import annotations

import json
import random

import pytest

from agentrl_ref.teaching.cloze import cards as cloze

SEED = 20250101
KEYS = [s.key for s in cloze.SNIPPETS]


def _n(key: str) -> int:
    return len(cloze.maskable_tokens(cloze.snippet_code(key)))


def _default_k(key: str) -> int:
    return next(lv["k"] for lv in cloze.levels(_n(key)) if lv["name"] == cloze.DEFAULT_LEVEL)


@pytest.fixture
def cloze_page(site_url, site_tabs):
    page = site_tabs.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(f"{site_url}/book/cloze.html?seed={SEED}", wait_until="load")
    page.wait_for_selector(".cloze-card.cloze-ready")
    yield page
    assert not errors, errors
    page.close()


def card(page, key):
    return page.locator(f'.cloze-card[data-cloze-key="{key}"]')


def blank_indices(page, key) -> list[int]:
    return [int(i) for i in card(page, key).locator("input.cloze-blank").evaluate_all(
        "inputs => inputs.map(i => i.dataset.index)")]


def test_every_snippet_has_a_card_with_the_python_count(cloze_page):
    assert cloze_page.locator(".cloze-card").count() == len(KEYS)
    titles = cloze_page.locator("article h2").all_inner_texts()
    assert [t.strip().rstrip("#").strip() for t in titles] == [s.title for s in cloze.SNIPPETS]
    for key in KEYS:
        counter = card(cloze_page, key).locator(".cloze-counter").inner_text()
        assert counter == f"共 {_n(key)} 个可挖空位 | 已挖 {_default_k(key)} 个"


def test_page_data_is_generated_from_the_source(cloze_page):
    for snippet in cloze.SNIPPETS:
        island = card(cloze_page, snippet.key).locator("script.cloze-data").text_content()
        assert json.loads(island) == cloze.export_snippet(snippet), f"{snippet.key}: page data differs from the source"


def test_same_seed_same_blanks_as_python(cloze_page):
    for key in KEYS:
        assert card(cloze_page, key).get_attribute("data-seed") == str(SEED)
        assert blank_indices(cloze_page, key) == cloze.choose_blanks(_n(key), _default_k(key), SEED), key


def test_javascript_prng_is_the_python_prng(cloze_page):
    rng = random.Random(7)
    seeds = [0, 1, 2**31 - 1, 2**31, 2**32 - 1] + [rng.randrange(2**32) for _ in range(20)]
    js = cloze_page.evaluate(
        """seeds => seeds.map(s => { const r = CourseCloze.mulberry32(s); return [r(), r(), r(), r()]; })""", seeds)
    for seed, values in zip(seeds, js):
        rand = cloze.mulberry32(seed)
        assert values == [next(rand) for _ in range(4)], seed
    cases = [(n, rng.randint(0, n), rng.randrange(2**32)) for n in (1, 5, 24, 99, 123, 400) for _ in range(5)]
    got = cloze_page.evaluate(
        """cases => cases.map(([n, k, s]) => [CourseCloze.chooseBlanks(n, k, s), CourseCloze.nextSeed(s),
                                              CourseCloze.refreshSeed(n, k, s)])""", cases)
    for (n, k, s), (blanks, nxt, refreshed) in zip(cases, got):
        assert blanks == cloze.choose_blanks(n, k, s), (n, k, s)
        assert nxt == cloze.next_seed(s) and refreshed == cloze.refresh_seed(n, k, s)


def test_refresh_changes_the_blanks(cloze_page):
    key = "format_reward"
    n, k = _n(key), _default_k(key)
    before = blank_indices(cloze_page, key)
    card(cloze_page, key).get_by_role("button", name="刷新").click()
    after = blank_indices(cloze_page, key)
    new_seed = cloze.refresh_seed(n, k, SEED)
    assert after != before
    assert after == cloze.choose_blanks(n, k, new_seed)
    assert card(cloze_page, key).locator("input.cloze-seed").input_value() == str(new_seed)


def test_typing_the_right_tokens_and_enter_marks_all_right(cloze_page):
    key = "loss_mask"
    answers = cloze.pieces(cloze.snippet_code(key))[1::2]
    blanks = blank_indices(cloze_page, key)
    inputs = card(cloze_page, key).locator("input.cloze-blank")
    inputs.first.click()
    for position, index in enumerate(blanks):
        focused = cloze_page.evaluate("() => document.activeElement.dataset.index")
        assert focused == str(index), "Tab moves from blank to blank"
        cloze_page.keyboard.type(answers[index])
        if position < len(blanks) - 1:
            cloze_page.keyboard.press("Tab")
    cloze_page.keyboard.press("Enter")
    classes = inputs.evaluate_all("inputs => inputs.map(i => i.className)")
    assert all("cloze-right" in c and "cloze-wrong" not in c for c in classes), classes
    assert card(cloze_page, key).locator(".cloze-result").inner_text().startswith("全部正确")

    # one wrong token is marked wrong, the others stay right
    inputs.nth(1).fill(answers[blanks[1]] + "_oops")
    inputs.nth(1).press("Enter")
    classes = inputs.evaluate_all("inputs => inputs.map(i => i.className)")
    assert "cloze-wrong" in classes[1] and inputs.nth(1).get_attribute("aria-invalid") == "true"
    assert all("cloze-right" in c for i, c in enumerate(classes) if i != 1)
    assert "错 1 个" in card(cloze_page, key).locator(".cloze-result").inner_text()


def test_empty_blanks_are_not_marked(cloze_page):
    key = "token_credit"
    card(cloze_page, key).get_by_role("button", name="检查").click()
    classes = card(cloze_page, key).locator("input.cloze-blank").evaluate_all("i => i.map(x => x.className)")
    assert not any("cloze-right" in c or "cloze-wrong" in c for c in classes)
    assert f"未填 {_default_k(key)} 个" in card(cloze_page, key).locator(".cloze-result").inner_text()


def test_show_answers_fills_every_blank(cloze_page):
    key = "rollout_buffer"
    answers = cloze.pieces(cloze.snippet_code(key))[1::2]
    card(cloze_page, key).get_by_role("button", name="显示答案").click()
    inputs = card(cloze_page, key).locator("input.cloze-blank")
    values = inputs.evaluate_all("inputs => inputs.map(i => [Number(i.dataset.index), i.value, i.className])")
    assert len(values) == _default_k(key)
    for index, value, classes in values:
        assert value == answers[index] and "cloze-revealed" in classes


def test_level_and_seed_controls(cloze_page):
    key = "composite_reward"
    n = _n(key)
    c = card(cloze_page, key)
    c.locator("select.cloze-level").select_option("全部")
    assert blank_indices(cloze_page, key) == list(range(n))
    assert c.locator(".cloze-counter").inner_text() == f"共 {n} 个可挖空位 | 已挖 {n} 个"
    c.locator("select.cloze-level").select_option("入门")
    k = next(lv["k"] for lv in cloze.levels(n) if lv["name"] == "入门")
    seed_box = c.locator("input.cloze-seed")
    seed_box.fill("42")
    seed_box.press("Enter")
    assert blank_indices(cloze_page, key) == cloze.choose_blanks(n, k, 42)
    seed_box.fill("not a seed")
    seed_box.press("Enter")
    assert seed_box.input_value() == "42"


def test_without_a_seed_each_visit_is_random_but_valid(site_url, site_tabs):
    page = site_tabs.new_page()
    page.goto(f"{site_url}/book/cloze.html", wait_until="load")
    page.wait_for_selector(".cloze-card.cloze-ready")
    seeds = page.locator(".cloze-card").evaluate_all("cards => cards.map(c => Number(c.dataset.seed))")
    assert all(0 <= s < 2**32 for s in seeds)
    for key, seed in zip(KEYS, seeds):
        assert blank_indices(page, key) == cloze.choose_blanks(_n(key), _default_k(key), seed)
    page.close()


def test_screenshot_after_checking(cloze_page, artifacts):
    key = "format_reward"
    answers = cloze.pieces(cloze.snippet_code(key))[1::2]
    blanks = blank_indices(cloze_page, key)
    inputs = card(cloze_page, key).locator("input.cloze-blank")
    for position, index in enumerate(blanks):
        inputs.nth(position).fill(answers[index] if position % 3 else "wrong")
    inputs.first.press("Enter")
    card(cloze_page, key).screenshot(path=str(artifacts / "cloze-card-checked.png"))


@pytest.mark.parametrize("width", [1280, 390])
def test_seed_box_shows_the_largest_seed_whole(width, site_url, site_tabs, artifacts):
    """The seed box is wide enough for any 32-bit seed (10 digits): nothing scrolls out of sight."""
    largest = 2**32 - 1
    page = site_tabs.new_page(viewport={"width": width, "height": 900})
    page.goto(f"{site_url}/book/cloze.html?seed={largest}", wait_until="load")
    page.wait_for_selector(".cloze-card.cloze-ready")
    boxes = page.locator("input.cloze-seed")
    assert boxes.count() == len(KEYS)
    sizes = boxes.evaluate_all("boxes => boxes.map(b => [b.value, b.scrollWidth, b.clientWidth])")
    for value, scroll_width, client_width in sizes:
        assert value == str(largest)
        assert scroll_width <= client_width, f"seed cut: {scroll_width}px of text in a {client_width}px box"
    # typed in (the caret at the end) and applied: still whole
    box = card(page, "loss_mask").locator("input.cloze-seed")
    box.fill("")
    box.type(str(largest))
    assert box.evaluate("b => [b.scrollWidth <= b.clientWidth, b.scrollLeft]") == [True, 0]
    box.press("Enter")
    assert box.input_value() == str(largest)
    card(page, "format_reward").locator(".cloze-controls").screenshot(
        path=str(artifacts / f"cloze-seed-box-{width}.png"))
    page.close()
