"""Realistic wrong answers to exercise 1: blank index -> wrong text, and the test cell that must catch it."""
MUTATIONS = {
    "re.search instead of re.match": ({1: "re.search(pattern, completion, re.DOTALL)"}, "test_anchored_both_ends"),
    "no re.DOTALL": ({1: "re.match(pattern, completion)"}, "test_multiline"),
    "greedy .* instead of NO_TAG": ({0: r'r"\s*<think>.*</think>\s*<answer>.*</answer>\s*\Z"'}, "test_repeated_nested"),
    "the seed page's answer": ({0: r'r"^\s*<think>.*?</think>\s*<answer>.*?</answer>\s*$"'}, "test_repeated_nested"),
    "no whitespace allowed around blocks": ({0: r'rf"<think>{NO_TAG}</think><answer>{NO_TAG}</answer>\Z"'},
                                            "test_seed_table"),
}
