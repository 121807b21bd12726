"""Realistic wrong answers to exercise 9: blank index -> wrong text, and the test cell that must catch it.

Blanks: 0 = TODO 1 (the log-prob difference, detached), 1 = TODO 2 (masked positions set to 0), 2 = TODO 3 (the
sequence level), 3 = TODO 4 (the geometric level); 4 = TODO 5 (TIS); 5 = TODO 6 (MIS: inside the range), 6 = TODO 7
(MIS: and trained); 7 = TODO 8 (the report's trained tokens), 8 = TODO 9 (k3), 9 = TODO 10 (max |delta|),
10 = TODO 11 (the share out of range).
"""
MUTATIONS = {
    "gradient through the weights": ({0: "trainer_logprobs - sampler_logprobs"}, "test_no_grad"),
    "loss mask ignored": ({1: "diff"}, "test_weights"),
    "sequence weight as a mean": ({2: "log_ratio.mean(dim=-1, keepdim=True)"}, "test_weights"),
    "geometric mean over the sequence length": ({3: "log_ratio.mean(dim=-1, keepdim=True)"}, "test_weights"),
    "log-ratio truncated, not the ratio": ({4: "torch.exp(log_weights.clamp(max=cap))"}, "test_tis"),
    "MIS keeps the wrong side": ({5: "(w < low) | (w > high)"}, "test_mis"),
    "MIS ignores the loss mask": ({6: "inside"}, "test_mis"),
    "report over every position": ({7: "(trainer_logprobs - sampler_logprobs).flatten()"}, "test_report"),
    "k3 in the other direction": ({8: "(1 / ratio - 1 + log_ratio).mean()"}, "test_report"),
    "max of the signed difference": ({9: "log_ratio.max()"}, "test_report"),
    "a count, not a share": ({10: "((ratio < low) | (ratio > high)).double().sum()"}, "test_report"),
}

# The one hint every failing visible test gives for each mistake (tests/test_hints.py, tests/test_nbgrader.py).
HINTS = {
    "gradient through the weights": "权重不带梯度",
    "loss mask ignored": "先用 torch.where(keep, diff, 0)",
    "sequence weight as a mean": "不是求平均",
    "geometric mean over the sequence length": "不是除以序列长度 T",
    "log-ratio truncated, not the ratio": "截断的是比率 w = exp(log_weights) 本身",
    "MIS keeps the wrong side": "**里面**的比率",
    "MIS ignores the loss mask": "要和 mask 一起",
    "report over every position": "只看训练的 token",
    "k3 in the other direction": "方向反了就是另一个 KL",
    "max of the signed difference": "差的**绝对值**的最大值",
    "a count, not a share": "不是个数（sum）",
}
