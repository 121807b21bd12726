"""Visible tests of exercise 1 (format reward): the seed page's table, multi-line content, text before the
tags and after them, repeated and nested groups, the edge cases of the rule (empty, \\r\\n, full-width space, case,
a long run of tags). Each test returns what it observed (the scores), which run_test records for grading."""
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


def _short(text: str) -> str:
    return repr(text) if len(text) <= 100 else repr(text[:40]) + f"…（共 {len(text)} 个字符）"


def _expect_score(format_reward, text: str, expected: float, hint: str) -> float:
    got = format_reward(text)
    expect(got == expected, f"输入 {_short(text)} 得到 {got!r}，期望 {expected}", hint=hint)
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


@visible_test(EX, "format_reward", "</answer> 后面有多余的文字")
def text_after_answer(format_reward):
    hint = "正则要一直匹配到字符串的结尾：最后是 \\s*\\Z。re.match 只管开头，结尾要自己锚住。"
    return [_expect_score(format_reward, text, 0.0, hint)
            for text in ("<think>a</think><answer>1</answer> 以上。", "<think>a</think><answer>1</answer>\nP.S. hi")]


@visible_test(EX, "format_reward", "嵌套的标签")
def nested_tags(format_reward):
    hint = SEARCH_HINT if _searches_anywhere(format_reward) else \
        "标签里的内容不能再出现任何一个标签：用 NO_TAG，不要用 .*? 或 .*。"
    return [_expect_score(format_reward, text, 0.0, hint)
            for text in ("<think>x</think><answer>see <answer>2</answer></answer>",
                         "<think>1 <think>2</think></think><answer>3</answer>")]


# (text, expected, hint): the rule's edge cases a model really produces; the last one is a few KB of repeated tags
ROBUST_CASES = (
    ("", 0.0, "空字符串也是一条模型输出：应得 0.0，不能抛异常。"),
    ("<think>x\r\ny</think>\r\n<answer>2</answer>\r\n", 1.0, "Windows 换行 \\r\\n 也是空白：\\s 匹配 \\r。"),
    ("\u3000<think>想一想</think>\u3000<answer>3</answer>", 1.0,
     "全角空格 \\u3000 也是空白：Python 的 \\s 在 str 上匹配它，不要自己列一张空白字符表。"),
    ("<THINK>a</THINK><ANSWER>1</ANSWER>", 0.0, "标签区分大小写：不要加 re.IGNORECASE。"),
    (" <think></think> <answer></answer>", 1.0, "标签里的内容可以是空的：内容部分用 *（零个或多个），不要用 +。"),
    ("<think>" + "</think><answer></answer>y" * 300, 0.0,
     "一长串重复的标签：只有一组 <think>…</think><answer>…</answer> 才合格。"),
)


@visible_test(EX, "format_reward", "空字符串、\\r\\n、全角空格、大写标签、空的内容、一长串重复标签")
def robust_inputs(format_reward):
    got = []
    for text, expected, hint in ROBUST_CASES:
        print(f"  {format_reward(text)!s:>4}  期望 {expected}  | {_short(text)}")
        got.append(_expect_score(format_reward, text, expected, hint))
    return got
