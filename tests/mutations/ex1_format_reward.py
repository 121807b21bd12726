"""Realistic wrong answers to exercise 1: blank index -> wrong text, and the test cell that must catch it."""
MUTATIONS = {
    "re.search instead of re.match": ({1: "re.search(pattern, completion, re.DOTALL)"}, "test_anchored_both_ends"),
    "no re.DOTALL": ({1: "re.match(pattern, completion)"}, "test_multiline"),
    "greedy .* instead of NO_TAG": ({0: r'r"\s*<think>.*</think>\s*<answer>.*</answer>\s*\Z"'}, "test_repeated_nested"),
    "the seed page's answer": ({0: r'r"^\s*<think>.*?</think>\s*<answer>.*?</answer>\s*$"'}, "test_repeated_nested"),
    "no whitespace allowed around blocks": ({0: r'rf"<think>{NO_TAG}</think><answer>{NO_TAG}</answer>\Z"'},
                                            "test_seed_table"),
}

# The one hint every failing visible test gives for each mistake (tests/test_hints.py; the feedback page says it too,
# tests/test_nbgrader.py): a piece of it that names the mistake's own line.
HINTS = {
    "re.search instead of re.match": "不要用 re.search",
    "no re.DOTALL": "re.DOTALL",
    "greedy .* instead of NO_TAG": "要用 NO_TAG",
    "the seed page's answer": "要用 NO_TAG",
    "no whitespace allowed around blocks": "各写 \\s*",
}
