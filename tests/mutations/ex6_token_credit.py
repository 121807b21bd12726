"""Realistic wrong answers to exercise 6: blank index -> wrong text, and the test cell that must catch it.

Blanks: 0 `nz = _____`, 1 `n = _____`, 2 `out[_____] = seq_reward / n`, 3 `weights = _____`.
"""
MUTATIONS = {
    # TODO 1
    "nonzero()[0]: the first index (a NumPy habit)": ({0: "loss_mask.nonzero()[0]"}, "test_last_token"),
    "nonzero(as_tuple=True): a tuple, not indices": ({0: "loss_mask.nonzero(as_tuple=True)"}, "test_last_token"),
    "the mask itself instead of its nonzero indices": ({0: "loss_mask"}, "test_last_token"),
    # pass the seed example (five trained tokens), fail on hidden masks:
    "squeeze(): a 0-dim tensor when one token is trained": ({0: "loss_mask.nonzero().squeeze()"}, "test_last_token"),
    "nonzero()[-1]: IndexError on an all-zero mask": ({0: "loss_mask.nonzero()[-1]"}, "test_last_token"),
    # TODO 2a
    "divide by T instead of the mask sum": ({1: "len(loss_mask)"}, "test_uniform"),
    # TODO 2b
    "index with the int mask (positions 0 and 1)": ({2: "loss_mask"}, "test_uniform"),
    # TODO 3
    "normalise KL over all tokens, not the trained ones": ({3: "kl_per_token / kl_per_token.sum()"},
                                                           "test_kl_weighted"),
    "masked KL over the KL sum of all tokens": ({3: "masked_kl / kl_per_token.sum()"}, "test_kl_weighted"),
    "softmax instead of a proportional split": ({3: "torch.softmax(masked_kl, dim=0)"}, "test_kl_weighted"),
}

# The one hint every failing visible test gives for each mistake (tests/test_hints.py, tests/test_nbgrader.py).
HINTS = {
    "nonzero()[0]: the first index (a NumPy habit)": "[0] 取的是第一个下标那一行",
    "nonzero(as_tuple=True): a tuple, not indices": "返回的是一个元组",
    "the mask itself instead of its nonzero indices": "不是 mask 本身",
    "squeeze(): a 0-dim tensor when one token is trained": "squeeze() 把它压成 0 维",
    "nonzero()[-1]: IndexError on an all-zero mask": "不能在这里取 [-1]",
    "divide by T instead of the mask sum": "不是序列长度 T",
    "index with the int mask (positions 0 and 1)": "选位置要用布尔张量",
    "normalise KL over all tokens, not the trained ones": "不用 kl_per_token",
    "masked KL over the KL sum of all tokens": "分母是 total",
    "softmax instead of a proportional split": "不是 softmax",
}
