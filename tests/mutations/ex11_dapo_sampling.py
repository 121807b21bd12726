"""Realistic wrong answers to exercise 11: blank index -> wrong text, and the test cell that must catch it.

Blanks: 0 = TODO 1 (one group per row), 1 = TODO 2 (the spread), 2 = TODO 3 (informative: spread > 0);
3 = TODO 4 (the refill loop's condition), 4 = TODO 5 (groups counted), 5 = TODO 6 (informative groups kept),
6 = TODO 7 (at most target_groups); 7 = TODO 8 (the ratio), 8 = TODO 9 (the clip range), 9 = TODO 10 (the pessimistic
bound), 10 = TODO 11 (the token mean); 11 = TODO 12 (log-probs), 12 = TODO 13 (entropy per position),
13 = TODO 14 (its mean over the loss mask).
"""
MUTATIONS = {
    "groups laid out across": ({0: "r.view(group_size, -1)"}, "test_informative"),
    "groups dropped by mean reward": ({1: "groups.mean(dim=1)", 2: "(spread > 0) & (spread < 1)"}, "test_informative"),
    "std instead of the spread": ({1: "groups.std(dim=1)"}, "test_informative"),
    "refill loop without a bound": ({3: "len(kept) < target_groups"}, "test_fill_bound"),
    "one draw past the bound": ({3: "len(kept) < target_groups and draws <= max_draws"}, "test_fill_bound"),
    "samples counted as groups": ({4: "len(rewards)"}, "test_fill"),
    "every group kept": ({5: "list(groups)"}, "test_fill"),
    "surplus groups kept": ({6: "kept"}, "test_fill"),
    "ratio upside down": ({7: "torch.exp(logp_old - logp_new)"}, "test_clip"),
    "eps_high on negative advantages": ({8: "torch.clamp(ratio, 1 - eps_high, 1 + eps_high)"}, "test_clip"),
    "eps_low and eps_high swapped": ({8: "torch.clamp(ratio, 1 - eps_high, 1 + eps_low)"}, "test_clip"),
    "max of the two objectives": ({9: "-torch.maximum(ratio * advantages, clipped * advantages)"}, "test_clip"),
    "mean over padding": ({10: "per_token.mean()"}, "test_clip"),
    "sequence mean first": ({10: "((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1)).mean()"}, "test_clip"),
    "logits taken as log-probs": ({11: "logits"}, "test_entropy"),
    "entropy summed over positions": ({12: "-(logp.exp() * logp).sum(dim=1)"}, "test_entropy"),
    "entropy averaged over the vocabulary": ({12: "-(logp.exp() * logp).mean(dim=-1)"}, "test_entropy"),
    "entropy over padding": ({13: "entropy.mean()"}, "test_entropy"),
}

# The one hint every failing visible test gives for each mistake (tests/test_hints.py, tests/test_nbgrader.py).
HINTS = {
    "groups laid out across": "view(-1, group_size) 一行一组",
    "groups dropped by mean reward": "不要看组内平均奖励",
    "std instead of the spread": "std > 0（或 var > 0）在浮点里不可靠",
    "refill loop without a bound": "循环还要一个上限",
    "one draw past the bound": "写成 <= 会多抽一批",
    "samples counted as groups": "drawn_groups 数的是组",
    "every group kept": "只留下 keep 为真的组",
    "surplus groups kept": "只要前 target_groups 个",
    "ratio upside down": "概率比是新策略比旧策略",
    "eps_high on negative advantages": "ε_high 只管上界",
    "eps_low and eps_high swapped": "别反了",
    "max of the two objectives": "**较小**的",
    "mean over padding": "per_token.mean() 把 padding 也算进去了",
    "sequence mean first": "不是先每条序列平均",
    "logits taken as log-probs": "logits 不是 log 概率",
    "entropy summed over positions": "dim=1 是对序列里的位置求和",
    "entropy averaged over the vocabulary": "mean 会除以词表大小",
    "entropy over padding": "entropy.mean() 把 padding",
}
