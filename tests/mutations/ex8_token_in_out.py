"""Realistic wrong answers to exercise 8: blank index -> wrong text, and the test cell that must catch it.

Blanks: 0 = TODO 1 (before), 1 = TODO 2 (after), 2 = TODO 3 (the prefix check), 3 = TODO 4 (message_ids' return);
4 = TODO 5 (the prompt's mask), 5 = TODO 6 (a sampled turn's mask), 6 = TODO 7 (its log-probs), 7 = TODO 8 (when the
separator follows), 8 = TODO 9 (an observation's mask); 9 = TODO 10 (the round trip), 10 = TODO 11 (the comparison),
11 = TODO 12 (the length case), 12 = TODO 13 (its position).
"""
MUTATIONS = {
    "the full conversation rendered (retokenized)": ({1: "render_ids(messages)"}, "test_message_ids"),
    "the message rendered alone": ({3: "render_ids([messages[index]])"}, "test_message_ids"),
    "no append-only check": ({2: "False"}, "test_not_append_only"),
    "lengths compared, not ids": ({2: "len(after) < len(before)"}, "test_not_append_only"),
    "prompt trained": ({4: "[1] * len(ids)"}, "test_trajectory"),
    "log-probs shifted by one": ({6: "list(turn_logprobs[1:]) + [0.0]"}, "test_trajectory"),
    "separator forgotten": ({7: "False"}, "test_trajectory"),
    "separator after the last turn too": ({7: "True"}, "test_trajectory"),
    "observation tokens trained": ({8: "[1] * len(turn_ids)"}, "test_trajectory"),
    "prefix case missed (None)": ({11: "False"}, "test_drift"),
    "prefix case at len(ids)": ({12: "len(ids)"}, "test_drift"),
    "token texts compared, not ids": ({10: "decode([a]) != decode([b])"}, "test_drift"),
}

# The one hint every failing visible test gives for each mistake (tests/test_hints.py, tests/test_nbgrader.py).
HINTS = {
    "the full conversation rendered (retokenized)": "不是整段对话的渲染",
    "the message rendered alone": "不是把它单独渲染一遍",
    "no append-only check": "要检查 before 是不是 after 的前缀",
    "lengths compared, not ids": "要检查 before 是不是 after 的前缀",
    "prompt trained": "prompt 是输入",
    "log-probs shifted by one": "不要挪一位",
    "separator forgotten": "把 separator_ids 接上",
    "separator after the last turn too": "最后一轮后面什么也没有",
    "observation tokens trained": "observation（工具结果",
    "prefix case missed (None)": "别漏掉这种情况",
    "prefix case at len(ids)": "min(len(ids), len(again))",
    "token texts compared, not ids": "逐位比较两串 id，不是 id 的文本",
}
