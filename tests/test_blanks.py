"""The fill-in-the-blank release: marked solution lines become `_____` and nothing else changes."""
import pytest

from grader.publish.blanks import BLANK, blank_line, blank_source, solution_fills


@pytest.mark.parametrize("line, expected", [
    ('    pattern = r"^x$"  # BLANK', "    pattern = _____"),
    ("    match = re.match(p, s, re.DOTALL)  # BLANK", "    match = _____"),
    ("    return mask[1:]  # BLANK", "    return _____"),
    ('        if role == "assistant":  # BLANK: role == "assistant"', "        if _____:"),
    ("    out[mask.bool()] = r / n  # BLANK: mask.bool()", "    out[_____] = r / n"),
    ('    scores["total"] = sum(w[k] * s[k] for k in w)  # BLANK', '    scores["total"] = _____'),
    ("    x = 1  # an ordinary comment", "    x = 1  # an ordinary comment"),
])
def test_blank_line(line, expected):
    assert blank_line(line) == expected


def test_fills_restore_the_solution():
    source = 'def f(s):\n    p = r"a+"  # BLANK\n    if p in s:  # BLANK: p in s\n        return 1\n    return 0'
    blanked = blank_source(source)
    assert blanked.count(BLANK) == 2 and "# BLANK" not in blanked
    restored = blanked
    for fill in solution_fills(source):
        restored = restored.replace(BLANK, fill, 1)
    assert restored == source.replace("  # BLANK: p in s", "").replace("  # BLANK", "")


def test_unknown_blank_text_is_an_error():
    with pytest.raises(ValueError):
        blank_line("    x = 1  # BLANK: y")
    with pytest.raises(ValueError):
        blank_line("    print(x)  # BLANK")
