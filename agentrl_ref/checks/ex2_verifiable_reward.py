"""Visible tests of exercise 2 (verifiable reward): the seed page's table, box extraction, answers that must not
crash. Each test returns what it observed (the student's outputs), which run_test records for grading.

An unfilled `_____` anywhere below accuracy_reward (say in extract_boxed_answer) raises NameError inside a
call these tests make; they let that NameError through (_call), so that run_test and check() show
"第 N 行还有空没填" instead of a row that "raised NameError".
"""
from agentrl_ref.checks import _is_blank, expect, visible_test

EX = "ex2_verifiable_reward"

# The seed page's test table. Its expected values are right; the seed's *answer* scores 0.0 on
# case 2 (its regex cannot match a box holding braces), which is why this exercise counts braces.
SEED_TABLE = [
    ("思考...所以\\boxed{0.5}", "1/2", 1.0),   # same value, two notations
    ("\\boxed{\\frac{1}{2}}", "0.5", 1.0),     # LaTeX fraction vs decimal: braces inside the box
    ("\\boxed{2}\n\\boxed{3}", "3", 1.0),      # the last box is the answer
    ("没有答案", "5", 0.0),                     # nothing to extract
    ("\\boxed{abc}", "5", 0.0),                # extracted, but not a number
]

SEED_HINTS = [
    "'0.5' 和 '1/2' 都应化成 Fraction(1, 2)：Fraction 自己就认识这两种写法。",
    "框里还有大括号。要数括号：计数器回到 0 的那个 } 才和 \\boxed{ 配对，第一个 } 不是。",
    "模型可能写了好几个 \\boxed：取最后一个（str.rfind 从右边找）。",
    "找不到 \\boxed{ 时应返回 None 而不是抛异常（str.index 找不到会抛 ValueError，str.rfind 返回 -1）。",
    "抠到的不是数：normalize_to_fraction 返回 None，accuracy_reward 返回 0.0。",
]

NEVER_RAISES_HINT = ("直接把字符串交给 Fraction：它对 'inf'、'nan' 抛 ValueError，正好被 except 接住。"
                     "别再退回 float：Fraction(float('inf')) 抛的是 OverflowError，没人接。")


def _call(fn, *args):
    """(value, None) or (None, the exception fn raised); an unfilled blank is re-raised, so that the report
    says which line still has a blank."""
    try:
        return fn(*args), None
    except Exception as exc:  # the row is shown, the failure reported after the table
        if _is_blank(exc):
            raise
        return None, exc


def _extract_each(extract_boxed_answer, cases) -> list:
    """extract_boxed_answer on each (text, expected, hint), checked in turn; what it returned."""
    observed = []
    for text, expected, hint in cases:
        got = extract_boxed_answer(text)
        observed.append(got)
        expect(got == expected, f"extract_boxed_answer({text!r}) 得到 {got!r}，期望 {expected!r}", hint=hint)
    return observed


@visible_test(EX, "accuracy_reward", "原页面的测试表（5 个输入）")
def seed_table(accuracy_reward):
    results = []
    for completion, gold, expected in SEED_TABLE:
        got, exc = _call(accuracy_reward, completion, gold)
        results.append((got, exc))
        shown = type(exc).__name__ if exc is not None else f"{got:.1f}" if isinstance(got, (int, float)) else repr(got)
        print(f"  {shown:>4}  期望 {expected:.1f}  | {completion[:30]!r}")
    for (completion, gold, expected), (got, exc), hint in zip(SEED_TABLE, results, SEED_HINTS):
        expect(exc is None, f"输入 {completion!r}（标准答案 {gold!r}）时抛出了 {type(exc).__name__}: {exc}", hint=hint)
        expect(got == expected, f"输入 {completion!r}（标准答案 {gold!r}）得到 {got!r}，期望 {expected}", hint=hint)
    return [got for got, _ in results]


@visible_test(EX, "accuracy_reward", "抽取：嵌套的大括号、最后一个 \\boxed、没有 \\boxed")
def extract_boxes(extract_boxed_answer):
    cases = [
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}", SEED_HINTS[1]),
        ("\\boxed{2}\n\\boxed{3}", "3", SEED_HINTS[2]),
        ("First \\boxed{1}, then \\boxed{\\frac{3}{4}}.", "\\frac{3}{4}", SEED_HINTS[2]),
        ("没有答案", None, SEED_HINTS[3]),
    ]
    return _extract_each(extract_boxed_answer, cases)


@visible_test(EX, "accuracy_reward", "模型写出 inf、nan、1/0 或者没写框时返回 None / 0.0，不抛异常")
def never_raises(normalize_to_fraction, accuracy_reward):
    observed = []
    for s in ["inf", "nan", "1/0"]:
        got, exc = _call(normalize_to_fraction, s)
        expect(exc is None, f"normalize_to_fraction({s!r}) 抛出了 {type(exc).__name__}: {exc}", hint=NEVER_RAISES_HINT)
        expect(got is None, f"normalize_to_fraction({s!r}) 得到 {got!r}，期望 None", hint=NEVER_RAISES_HINT)
        observed.append(got)
    got, exc = _call(accuracy_reward, "答案是 7，但是没写框", "7")
    expect(exc is None, f"accuracy_reward('答案是 7，但是没写框', '7') 抛出了 {type(exc).__name__}: {exc}",
           hint=SEED_HINTS[3])
    expect(got == 0.0, f"accuracy_reward('答案是 7，但是没写框', '7') 得到 {got!r}，期望 0.0", hint=SEED_HINTS[3])
    observed.append(got)
    got, exc = _call(accuracy_reward, "\\boxed{inf}", "1")
    expect(exc is None, f"accuracy_reward('\\\\boxed{{inf}}', '1') 抛出了 {type(exc).__name__}: {exc}",
           hint=NEVER_RAISES_HINT)
    expect(got == 0.0, f"accuracy_reward('\\\\boxed{{inf}}', '1') 得到 {got!r}，期望 0.0", hint=NEVER_RAISES_HINT)
    observed.append(got)
    return observed


@visible_test(EX, "accuracy_reward", "\\frac 的几种写法：\\dfrac、\\tfrac、前面的负号")
def frac_forms(normalize_to_fraction, accuracy_reward):
    from fractions import Fraction

    hint = "\\dfrac、\\tfrac 和负号由格子里写好的 FRAC 正则改写成 a/b，再交给 Fraction：TODO 2 只要 Fraction(s)。"
    observed = []
    forms = (("\\dfrac{3}{4}", Fraction(3, 4)), ("-\\frac{1}{2}", Fraction(-1, 2)), ("\\tfrac{2}{6}", Fraction(1, 3)))
    for s, want in forms:
        got, exc = _call(normalize_to_fraction, s)
        expect(exc is None, f"normalize_to_fraction({s!r}) 抛出了 {type(exc).__name__}: {exc}", hint=hint)
        expect(got == want, f"normalize_to_fraction({s!r}) 得到 {got!r}，期望 {want!r}", hint=hint)
        observed.append(got)
    got, exc = _call(accuracy_reward, "所以 \\boxed{-\\dfrac{1}{4}}", "-0.25")
    expect(exc is None and got == 1.0, f"accuracy_reward('所以 \\\\boxed{{-\\\\dfrac{{1}}{{4}}}}', '-0.25') 得到 "
           f"{type(exc).__name__ if exc else repr(got)}，期望 1.0", hint=hint)
    return observed + [got]


@visible_test(EX, "accuracy_reward", "框后面又提到 \\boxed、最后一个框没闭合、空框")
def extract_edge_cases(extract_boxed_answer):
    cases = [
        ("\\boxed{5}，这个命令叫 \\boxed", "5",
         "要找的是 BOX（带着 {）：只找 \\boxed 的话，框后面再提一句 \\boxed 就会把真正的框盖掉。"),
        ("\\boxed{1}，不对，应该是 \\boxed{2", None,
         "最后一个 \\boxed{ 到结尾都没闭合（输出被截断）：返回 None，不要退回前面的框。"),
        ("答：\\boxed{}", "", "空框的内容是空字符串：计数器在紧跟着的 } 上就回到 0。"),
    ]
    return _extract_each(extract_boxed_answer, cases)


EXACT_HINT = ("比较要精确：Fraction(s) 直接读字符串。经过 float 的话，只差最后一位的 20 位整数会变得相等，"
              "0.1 也变成一个和 1/10 差一点点的二进制分数。")


@visible_test(EX, "accuracy_reward", "精确比较：不经过浮点数")
def exact(normalize_to_fraction, accuracy_reward):
    from fractions import Fraction

    got = normalize_to_fraction("0.1")
    expect(got == Fraction(1, 10), f"normalize_to_fraction('0.1') 得到 {got!r}，期望 Fraction(1, 10)", hint=EXACT_HINT)
    big = accuracy_reward("\\boxed{10000000000000000001}", "10000000000000000000")
    expect(big == 0.0, f"accuracy_reward('\\\\boxed{{10000000000000000001}}', '10000000000000000000') 得到 {big!r}，"
           "期望 0.0（两个数差 1）", hint=EXACT_HINT)
    return [got, big]


@visible_test(EX, "accuracy_reward", "标准答案是 0 的题")
def zero_answer(accuracy_reward):
    hint = "Fraction(0) 的真值是 False：判断“没化出来”要写 is None，不能写 not pred。"
    observed = []
    for completion, gold, want in (("答：\\boxed{0}", "0.0", 1.0), ("\\boxed{0}", "3", 0.0)):
        got = accuracy_reward(completion, gold)
        observed.append(got)
        expect(got == want, f"accuracy_reward({completion!r}, {gold!r}) 得到 {got!r}，期望 {want}", hint=hint)
    return observed
