"""Realistic wrong answers to exercise 2: blank index -> wrong text, and the test cell that must catch it.

Blanks: 0 `start = _____`, 1 `if _____:` (brace counter), 2 `return _____` (Fraction), 3 `if _____:` (None check).
"""
MUTATIONS = {
    # TODO 1a
    "the first box instead of the last": ({0: "text.find(BOX)"}, "test_extract"),
    "str.rindex raises when there is no box": ({0: "text.rindex(BOX)"}, "test_never_raises"),
    "rfind of \\boxed without its brace": ({0: 'text.rfind("\\\\boxed")'}, "test_extract"),
    # TODO 1b
    "stop at the first } (no counting, like [^{}]*)": ({1: 'text[i] == "}"'}, "test_extract"),
    "counter compared with 1": ({1: "depth == 1"}, "test_extract"),
    # TODO 2
    "the seed page's float fallback (E2)": (
        {2: "Fraction(s)\n    except ValueError:\n        return Fraction(float(s))"}, "test_never_raises"),
    "through float (loses exactness)": ({2: "Fraction(float(s))"}, "test_exact_values"),
    # TODO 3
    "truthiness: Fraction(0) is falsy": ({3: "not pred or not gold_v"}, "test_zero_answer"),
}

# The one hint every failing visible test gives for each mistake (tests/test_hints.py, tests/test_nbgrader.py).
HINTS = {
    "the first box instead of the last": "取最后一个",
    "str.rindex raises when there is no box": "str.rfind 找不到返回 -1",
    "rfind of \\boxed without its brace": "要找的是 BOX（带着 {）",
    "stop at the first } (no counting, like [^{}]*)": "回到 0 的那个 }",
    "counter compared with 1": "回到 0 的那个 }",
    "the seed page's float fallback (E2)": "不要经过 float",
    "through float (loses exactness)": "不要经过 float",
    "truthiness: Fraction(0) is falsy": "要写 is None",
}
