"""Visible tests of exercise 1 (format reward): the seed page's table, multi-line content, text before the
tags, repeated groups. Each test returns what it observed (the scores), which run_test records for grading."""
from agentrl_ref.checks import expect, visible_test

EX = "ex1_format_reward"

SEED_TABLE = [
    ("<think>Let me compute 2+3</think><answer>5</answer>", 1.0),  # ok
    ("The answer is 5", 0.0),                                      # no tags at all
    ("<answer>5</answer><think>oops</think>", 0.0),                # wrong order
    ("<think>halfway", 0.0),                                       # unclosed tag
    ("  <think>x</think>\n\n<answer>y</answer>", 1.0),             # surrounding whitespace: accepted
]
PREAMBLE = "Sure! <think>a</think><answer>1</answer>"  # text before <think>: only a search finds a match
REPEATED = "<think>a</think><answer>1</answer><think>b</think><answer>2</answer>"

SEARCH_HINT = ("用 re.match（或在正则开头加 \\A），不要用 re.search：re.search 会从后面任何一个位置开始找，"
               "开头的多余文字、前面的第一组标签都会被跳过。")


def _expect_score(format_reward, text: str, expected: float, hint: str) -> float:
    got = format_reward(text)
    expect(got == expected, f"输入 {text!r} 得到 {got!r}，期望 {expected}", hint=hint)
    return got


def _searches_anywhere(format_reward) -> bool:
    """The symptom of re.search: a valid answer after some leading text still scores 1."""
    try:
        return format_reward(PREAMBLE) == 1.0
    except Exception:
        return False


@visible_test(EX, "format_reward", "原页面的测试表（5 个输入）")
def seed_table(format_reward):
    hints = {
        1.0: "合格的回答应得 1.0：开头、结尾和两段之间的空白都要允许（\\s*）。",
        0.0: "这个回答不合格，应得 0.0：检查标签顺序和是否要求整段匹配到结尾（\\Z）。",
    }
    for text, expected in SEED_TABLE:
        print(f"  {format_reward(text)!s:>4}  期望 {expected}  | {text[:40]!r}")
    return [_expect_score(format_reward, text, expected, hints[expected]) for text, expected in SEED_TABLE]


@visible_test(EX, "format_reward", "推理内容跨行")
def multi_line(format_reward):
    text = "<think>\nStep 1: 2+3\nStep 2: =5\n</think>\n<answer>\n5\n</answer>"
    return _expect_score(format_reward, text, 1.0, "默认情况下 . 不匹配换行；re.DOTALL 让它匹配。")


@visible_test(EX, "format_reward", "<think> 前面有多余的文字")
def text_before_think(format_reward):
    return _expect_score(format_reward, PREAMBLE, 0.0, SEARCH_HINT)


@visible_test(EX, "format_reward", "重复输出两组标签")
def repeated_groups(format_reward):
    hint = SEARCH_HINT if _searches_anywhere(format_reward) else \
        "内容部分不能用 .*?，要用 NO_TAG：.*? 会把第二组标签当成内容吞下去，NO_TAG 不允许内容里出现任何标签。"
    return _expect_score(format_reward, REPEATED, 0.0, hint)
