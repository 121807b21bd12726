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

SEARCH_HINT = ("TODO 2：用 re.match（或在正则开头加 \\A），不要用 re.search：re.search 会从后面任何一个位置开始找，"
               "开头的多余文字、前面的第一组标签都会被跳过。")
WHITESPACE_HINT = "TODO 1：开头、结尾和两段之间的空白都要允许：正则的这三处各写 \\s*。"
DOTALL_HINT = "TODO 2：默认情况下 . 不匹配换行，推理内容一跨行就匹配不上：re.match 的第三个参数写 re.DOTALL。"
END_HINT = "TODO 1：正则要一直匹配到字符串的结尾：最后是 \\s*\\Z。re.match 只管开头，结尾要自己锚住。"
NO_TAG_HINT = ("TODO 1：标签里的内容要用 NO_TAG，不要用 .* 或 .*?：它们会把第二组标签、嵌套的标签当成内容吞下去，"
               "NO_TAG 不允许内容里出现任何一个标签。")
EXCEPTION_HINTS = {
    ("TODO 1", "error"): "TODO 1 的正则编译不了（re.error）：检查括号是否成对、rf 字符串里的 { } 和反斜杠。",
    ("TODO 2", "error"): "TODO 1 的正则编译不了（re.error）：检查括号是否成对、rf 字符串里的 { } 和反斜杠。",
    ("TODO 2", "TypeError"): "TODO 2：re.match(pattern, completion, re.DOTALL)：先正则，再要匹配的文本，最后是标志。",
}

# The mistakes a student makes in this exercise, each with one input that shows it and nothing else: the first
# input a function gets wrong names the mistake, and every failing test then gives that one hint.
DIAGNOSIS = (
    (" <think>a</think>\n<answer>1</answer>\n", 1.0, WHITESPACE_HINT),   # whitespace around and between
    ("<think>a\nb</think><answer>1</answer>", 1.0, DOTALL_HINT),          # a newline inside, none between
    ("Sure! <think>a</think><answer>1</answer>", 0.0, SEARCH_HINT),        # text before: only a search matches
    ("<think>a</think><answer>1</answer> 以上。", 0.0, END_HINT),           # text after: nothing anchors the end
    ("<think>a</think><answer>1</answer><think>b</think><answer>2</answer>", 0.0, NO_TAG_HINT),
    ("<think>x</think><answer>see <answer>2</answer></answer>", 0.0, NO_TAG_HINT),
)


def diagnose(format_reward) -> str | None:
    """The hint of the first mistake in DIAGNOSIS the function makes (None: none of them, or a function that gets even
    the plainest answer wrong, which is no one mistake of the list)."""
    try:
        if format_reward("<think>a</think><answer>1</answer>") != 1.0 or format_reward("5") != 0.0:
            return None
    except Exception:
        return None
    for text, want, hint in DIAGNOSIS:
        try:
            if format_reward(text) != want:
                return hint
        except Exception:  # the failing test reports what the student's code raised
            return None
    return None


def _short(text: str) -> str:
    return repr(text) if len(text) <= 100 else repr(text[:40]) + f"…（共 {len(text)} 个字符）"


def _expect_score(format_reward, text: str, expected: float, hint: str) -> float:
    """format_reward(text) must be expected; the hint is the diagnosed mistake's, else the case's own."""
    got = format_reward(text)
    if got != expected:
        expect(False, "输入 {text} 得到 {got!r}，期望 {expected}", hint=diagnose(format_reward) or hint,
               text=_short(text), got=got, expected=expected)
    return got


@visible_test(EX, "format_reward", "原页面的测试表（5 个输入）")
def seed_table(format_reward):
    hints = {1.0: WHITESPACE_HINT, 0.0: "这个回答不合格，应得 0.0：检查标签顺序和是否要求整段匹配到结尾（\\Z）。"}
    for text, expected in SEED_TABLE:
        print(f"  {format_reward(text)!s:>4}  期望 {expected}  | {text[:40]!r}")
    return [_expect_score(format_reward, text, expected, hints[expected]) for text, expected in SEED_TABLE]


@visible_test(EX, "format_reward", "推理内容跨行")
def multi_line(format_reward):
    text = "<think>\nStep 1: 2+3\nStep 2: =5\n</think>\n<answer>\n5\n</answer>"
    return _expect_score(format_reward, text, 1.0, DOTALL_HINT)


@visible_test(EX, "format_reward", "<think> 前面有多余的文字")
def text_before_think(format_reward):
    return _expect_score(format_reward, PREAMBLE, 0.0, SEARCH_HINT)


@visible_test(EX, "format_reward", "重复输出两组标签")
def repeated_groups(format_reward):
    return _expect_score(format_reward, REPEATED, 0.0, NO_TAG_HINT)


@visible_test(EX, "format_reward", "</answer> 后面有多余的文字")
def text_after_answer(format_reward):
    return [_expect_score(format_reward, text, 0.0, END_HINT)
            for text in ("<think>a</think><answer>1</answer> 以上。", "<think>a</think><answer>1</answer>\nP.S. hi")]


@visible_test(EX, "format_reward", "嵌套的标签")
def nested_tags(format_reward):
    return [_expect_score(format_reward, text, 0.0, NO_TAG_HINT)
            for text in ("<think>x</think><answer>see <answer>2</answer></answer>",
                         "<think>1 <think>2</think></think><answer>3</answer>")]


# (text, expected, hint): the rule's edge cases a model really produces; the last one is a few KB of repeated tags
ROBUST_CASES = (
    ("", 0.0, "空字符串也是一条模型输出：应得 0.0，不能抛异常。"),
    ("<think>x\r\ny</think>\r\n<answer>2</answer>\r\n", 1.0, "TODO 1：Windows 换行 \\r\\n 也是空白：\\s 匹配 \\r。"),
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
