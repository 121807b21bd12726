"""Realistic wrong answers to exercise 3: blank index -> wrong text, and the test cell that must catch it.

Blanks: 0 = TODO 1 (the condition in build_loss_mask), 1 = TODO 2 (shift_mask_for_clm's return),
2 = TODO 3 (is_trainable on the ChatML parts).

The `is` mutations pass the seed page's tests (literals in one process are one interned object) and
fail on role names built at run time, as a tokenizer or a file hands them over (visible: roles_from_data,
names_from_data; hidden: more of them). Python warns about `is` with a literal when it
compiles the answer cell: that SyntaxWarning goes to the answer cell's stderr, not a test cell's.
"""
MUTATIONS = {
    'role != "user" (trains system and tool)': ({0: 'role != "user"'}, "test_raw_mask"),
    "tool output trained too": ({0: 'role in ("assistant", "tool")'}, "test_raw_mask"),
    'role is "assistant" (identity, not equality)': ({0: 'role is "assistant"'}, "test_raw_mask"),
    "mask[:-1]: shifted the wrong way": ({1: "mask[:-1]"}, "test_shift"),
    "mask not shifted at all": ({1: "mask"}, "test_shift"),
    "shift, then pad back to full length": ({1: "mask[1:] + [0]"}, "test_shift"),
    "whole assistant message (header trained)": ({2: 'role == "assistant"'}, "test_real_conversation"),
    "<|im_end|> not trained (never stops)": ({2: 'role == "assistant" and part == "content"'}, "test_chatml_rule"),
    "tool content trained": ({2: 'role in ("assistant", "tool") and part in ("content", "end")'}, "test_chatml_rule"),
    "everything but headers": ({2: 'part != "header"'}, "test_chatml_rule"),
    'role is "assistant" in the ChatML rule': ({2: 'role is "assistant" and part in ("content", "end")'},
                                               "test_chatml_rule"),
}

# The one hint every failing visible test gives for each mistake (tests/test_hints.py, tests/test_nbgrader.py).
HINTS = {
    'role != "user" (trains system and tool)': "只有 assistant 段是 1",
    "tool output trained too": "只有 assistant 段是 1",
    'role is "assistant" (identity, not equality)': "不要用 is",
    "mask[:-1]: shifted the wrong way": "去掉 mask 的第一个元素",
    "mask not shifted at all": "结果比 mask 短 1",
    "shift, then pad back to full length": "结果比 mask 短 1",
    "whole assistant message (header trained)": "是模板写的（生成提示）",
    "<|im_end|> not trained (never stops)": "<|im_end|> 要训练",
    "tool content trained": "tool 的输出是环境给的 observation",
    "everything but headers": "tool 的输出是环境给的 observation",
    'role is "assistant" in the ChatML rule': "不要用 is",
}
