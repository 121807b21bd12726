"""Realistic wrong answers to exercise 5: blank index -> wrong text, and the test cell that must catch it.

Blanks: 0 correct branch, 1 wrong branch (cosine_length_reward); 2 the key check, 3 the total (make_reward_fn).
"""
_RAW = "0.5 * (1 - math.cos(math.pi * len(completion) / max_len))"  # cos_factor without the clamp

MUTATIONS = {
    "the seed page's docstring (long is best)": ({0: "cos_factor", 1: "-cos_factor"}, "test_cosine_endpoints"),
    "the two cosine branches swapped": ({0: "-1.0 + cos_factor", 1: "1.0 - cos_factor"}, "test_cosine_endpoints"),
    "wrong branch sign flipped": ({1: "-1.0 - cos_factor"}, "test_wrong_branch"),
    "wrong answers get 0": ({1: "0.0"}, "test_wrong_branch"),
    "length ratio not clamped": ({0: f"1.0 - {_RAW}", 1: f"-1.0 + {_RAW}"}, "test_ratio_clamped"),
    "subset check accepts extra funcs": ({2: "set(weights) <= set(funcs)"}, "test_key_mismatch"),
    "only the number of keys compared": ({2: "len(weights) == len(funcs)"}, "test_key_mismatch"),
    "plain sum of the components": ({3: "sum(scores.values())"}, "test_total_weighted"),
    "weights zipped by position": ({3: "sum(w * s for w, s in zip(weights.values(), scores.values()))"},
                                   "test_total_weighted"),
    "mean of the components": ({3: "sum(scores.values()) / len(scores)"}, "test_total_weighted"),
}

# The one hint every failing visible test gives for each mistake (tests/test_hints.py, tests/test_nbgrader.py).
HINTS = {
    "the seed page's docstring (long is best)": "docstring 写的方向是反的",
    "the two cosine branches swapped": "两支写反了",
    "wrong branch sign flipped": "答错的一支是 -1.0 + cos_factor",
    "wrong answers get 0": "答错的一支是 -1.0 + cos_factor",
    "length ratio not clamped": "两支都只用 cos_factor",
    "subset check accepts extra funcs": "set(weights) == set(funcs)",
    "only the number of keys compared": "set(weights) == set(funcs)",
    "plain sum of the components": "不是分量的直接求和或平均",
    "weights zipped by position": "按位置 zip 会配错",
    "mean of the components": "不是分量的直接求和或平均",
}
