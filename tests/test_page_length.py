"""Every page of the book is short enough to read: its prose in Chinese characters, and its main line without what
is folded away in <details>.

Prose = the Markdown cells of a notebook page (book/*.ipynb, made by `make release`) or the text of a Markdown page
(book/*.md), without fenced code and code cells; what code prints is not counted. Targets from issue 37: at most
12,000 Chinese characters of prose on a page, at most 8,000 in its main line (exercise 7's page was 18,000 and ran to
some 40 screens).
"""
from __future__ import annotations

import re

import nbformat
import pytest

from course import ROOT

PAGE_LIMIT = 12_000
MAIN_LIMIT = 8_000
PAGES = sorted([*(ROOT / "book").glob("*.ipynb"), *(ROOT / "book").glob("*.md")])


def han(text: str) -> int:
    return len(re.findall(r"[\u4e00-\u9fff]", text))


def prose(path) -> str:
    if path.suffix == ".ipynb":
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    return re.sub(r"^(`{3,}).*?^\1\s*$", " ", text, flags=re.S | re.M)


def main_line(text: str) -> str:
    return re.sub(r"<details>.*?</details>", " ", text, flags=re.S)


def test_counting_sees_prose_and_skips_code_and_folds():
    text = "正文五个字\n\n```python\n# 代码里的注释\n```\n\n<details>\n<summary>折起</summary>\n\n细节\n\n</details>\n"
    page = re.sub(r"^(`{3,}).*?^\1\s*$", " ", text, flags=re.S | re.M)
    assert han(page) == 9 and han(main_line(page)) == 5


@pytest.mark.parametrize("path", PAGES, ids=[p.name for p in PAGES])
def test_page_is_short_enough_to_read(path):
    text = prose(path)
    assert han(text) <= PAGE_LIMIT, f"{path.name}: {han(text)} Chinese characters of prose (limit {PAGE_LIMIT})"
    main = han(main_line(text))
    assert main <= MAIN_LIMIT, (f"{path.name}: its main line (outside <details>) has {main} Chinese characters "
                                f"(limit {MAIN_LIMIT}); fold details or give them a page of their own")


def test_exercise_7_keeps_its_folded_details():
    """Shortening the main line folded the details; it did not drop them."""
    text = prose(ROOT / "book" / "ex7_agent_grpo.ipynb")
    folds = re.findall(r"<details>.*?</details>", text, flags=re.S)
    assert len(folds) >= 12 and sum(han(f) for f in folds) >= 3_000
