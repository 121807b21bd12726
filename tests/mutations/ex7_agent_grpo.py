"""Realistic wrong answers to exercise 7: blank index -> wrong text, and the test cell that must catch it.

Blanks: 0 `ratio = _____`, 1 `clipped = _____`, 2 `per_token = _____`, 3 `return _____` (the reduction),
4 `advantages = _____` (group normalisation), 5 `return _____` (broadcast to tokens).
"""
MUTATIONS = {
    # TODO 1: the probability ratio
    "log-ratio without exp": ({0: "logp_new - logp_old"}, "test_clip_branches"),
    "ratio of the two log-probs": ({0: "logp_new / logp_old"}, "test_clip_branches"),
    "ratio upside down (old over new)": ({0: "torch.exp(logp_old - logp_new)"}, "test_clip_branches"),
    # the values are right, the gradient is gone
    "ratio detached from the graph": ({0: "torch.exp(logp_new - logp_old).detach()"}, "test_gradient"),
    # TODO 2: what is clipped
    "clip the advantage instead of the ratio": ({1: "ratio * torch.clamp(advantages, 1 - clip_eps, 1 + clip_eps)"},
                                                "test_clip_branches"),
    "clip only from above": ({1: "torch.clamp(ratio, max=1 + clip_eps) * advantages"}, "test_clip_branches"),
    # TODO 3: min, sign
    "max instead of min": ({2: "-torch.maximum(unclipped, clipped)"}, "test_clip_branches"),
    "missing minus sign": ({2: "torch.minimum(unclipped, clipped)"}, "test_clip_branches"),
    # TODO 4: the reduction
    "mean over all positions instead of the mask": ({3: "(per_token * mask).mean()"}, "test_token_mean"),
    "per-sequence mean, then batch mean": (
        {3: "((per_token * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)).mean()"}, "test_token_mean"),
    "no mask in the numerator": ({3: "per_token.sum() / mask.sum().clamp(min=1.0)"}, "test_token_mean"),
    "divide by the sequence length T": ({3: "(per_token * mask).sum() / mask.shape[1]"}, "test_token_mean"),
    # NaN when nothing is trained (issue 26: once caught by a hidden test only, now by the visible contract test too)
    "no guard for an all-zero mask": ({3: "(per_token * mask).sum() / mask.sum()"}, "test_contract"),
    # TODO 5-6: the wiring
    "normalise the whole batch as one group": ({4: "group_normalize(rewards, len(rewards))"},
                                               "test_token_advantages"),
    "broadcast the raw rewards": ({5: "broadcast_to_tokens(rewards, loss_mask)"}, "test_token_advantages"),
}

# What the first ✗ line of check() says for each mistake (tests/test_capstone_hints.py): the hint names the mistake,
# and every other ✗ line of the same part says the same. None: the visible tests pass (a hidden test catches it).
FIRST_HINT = {
    "log-ratio without exp": "没有取 exp",
    "ratio of the two log-probs": "相除",
    "ratio upside down (old over new)": "上下颠倒",
    "ratio detached from the graph": "不带梯度",
    "clip the advantage instead of the ratio": "裁剪的是 advantage",
    "clip only from above": "只裁剪了上界",
    "max instead of min": "较大的一个",
    "missing minus sign": "负号",
    "mean over all positions instead of the mask": "所有位置的个数",
    "per-sequence mean, then batch mean": "先在每条序列里求了平均",
    "no mask in the numerator": "没有乘 mask",
    "divide by the sequence length T": "所有位置的个数",
    "no guard for an all-zero mask": "mask 全为 0",
    "normalise the whole batch as one group": "整批被当成了一组",
    "broadcast the raw rewards": "没有先做组内标准化",
}
HINTS = FIRST_HINT   # the one hint of each mistake (tests/test_hints.py, tests/test_nbgrader.py)
