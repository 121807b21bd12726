"""Visible tests of exercise 2 (verifiable reward): the seed page's table, box extraction, answers that must not
crash. Each test returns what it observed (the student's outputs), which run_test records for grading.

Every failing test gives the hint of the mistake `diagnose` finds first: each classic mistake of the three functions
has an input of DIAGNOSIS that shows it and nothing else, in the order the functions depend on each other
(accuracy_reward calls the other two), so a test of accuracy_reward that fails because extract_boxed_answer is wrong
names extract_boxed_answer's TODO, not its own.

An unfilled `_____` anywhere below accuracy_reward (say in extract_boxed_answer) raises NameError inside a
call these tests make; they let that NameError through (_call), so that run_test and check() show
"第 N 行还有空没填" instead of a row that "raised NameError".
"""
from fractions import Fraction

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

COUNT_HINT = ("TODO 1b：框里还有大括号，要数括号：计数器从 1 开始（\\boxed{ 自己的那个），回到 0 的那个 } 才和 "
              "\\boxed{ 配对，第一个 } 不一定是。")
NO_BOX_HINT = ("TODO 1a：找不到 \\boxed{ 时要得到 -1、返回 None，不能抛异常：str.rfind 找不到返回 -1，"
               "str.index、str.rindex 找不到抛 ValueError。")
LAST_BOX_HINT = "TODO 1a：模型可能写了好几个 \\boxed：取最后一个（str.rfind 从右边找，str.find 找到的是第一个）。"
BOX_BRACE_HINT = "TODO 1a：要找的是 BOX（带着 {）：只找 \\boxed 的话，框后面再提一句 \\boxed 就会把真正的框盖掉。"
FLOAT_HINT = ("TODO 2：直接把字符串交给 Fraction(s)，不要经过 float：0.1 经过 float 就成了一个和 1/10 差一点点的"
              "二进制分数，"
              "只差最后一位的 20 位整数会变得相等；float('inf') 能解析，Fraction(float('inf')) 却抛 OverflowError，"
              "下面的 except 接不住。")
FRACTION_HINT = "TODO 2：Fraction(s) 自己就认识 '3'、'-0.5'、'.5'、'1/2' 这些写法：返回 Fraction(s)。"
NONE_HINT = ("TODO 3：判断“没化成数”要写 is None：pred is None or gold_v is None。Fraction(0) 的真值是 False，"
             "写成 not pred 会把答案 0 当成没化出来。")
TRUNCATED_HINT = ("TODO 1b：最后一个 \\boxed{ 到结尾都没闭合（输出被截断）：循环走完还没配对就返回 None，"
                  "不要退回前面的框。")
EXCEPTION_HINTS = {
    ("TODO 1a", "ValueError"): NO_BOX_HINT,
    ("TODO 2", "OverflowError"): FLOAT_HINT,
    ("TODO 3", "TypeError"): NONE_HINT,
}

# (which function, its arguments, what it must return, the hint when it does not): the first row a student's
# functions get wrong names the mistake. Each row shows one mistake and passes every other.
DIAGNOSIS = (
    ("extract_boxed_answer", ("\\boxed{7}",), "7", COUNT_HINT),
    ("extract_boxed_answer", ("\\boxed{\\frac{1}{2}}",), "\\frac{1}{2}", COUNT_HINT),
    ("extract_boxed_answer", ("没有答案",), None, NO_BOX_HINT),
    ("extract_boxed_answer", ("\\boxed{2}\n\\boxed{3}",), "3", LAST_BOX_HINT),
    ("extract_boxed_answer", ("\\boxed{5}，这个命令叫 \\boxed",), "5", BOX_BRACE_HINT),
    ("extract_boxed_answer", ("\\boxed{1}，不对，应该是 \\boxed{2",), None, TRUNCATED_HINT),
    ("normalize_to_fraction", ("inf",), None, FLOAT_HINT),
    ("normalize_to_fraction", ("0.1",), Fraction(1, 10), FLOAT_HINT),
    ("normalize_to_fraction", ("1/2",), Fraction(1, 2), FRACTION_HINT),
    ("accuracy_reward", ("\\boxed{0}", "0"), 1.0, NONE_HINT),
    ("accuracy_reward", ("\\boxed{abc}", "5"), 0.0, NONE_HINT),
)


def diagnose(**functions) -> str | None:
    """The hint of the first row of DIAGNOSIS the given functions get wrong (raising counts as wrong; rows of a
    function not given are skipped); None if they get every row right."""
    for name, args, want, hint in DIAGNOSIS:
        fn = functions.get(name)
        if fn is None:
            continue
        try:
            got = fn(*args)
        except Exception as exc:
            if _is_blank(exc):
                return None   # the failing test says which line still has a blank
            return hint
        if type(got) is not type(want) and not (isinstance(got, (int, float)) and isinstance(want, float)) \
                or got != want:
            return hint
    return None


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
        got, exc = _call(extract_boxed_answer, text)
        observed.append(got)
        hint = diagnose(extract_boxed_answer=extract_boxed_answer) or hint
        expect(exc is None, "extract_boxed_answer({text!r}) 抛出了 {error}", hint=hint, text=text,
               error=type(exc).__name__)
        expect(got == expected, "extract_boxed_answer({text!r}) 得到 {got!r}，期望 {expected!r}", hint=hint,
               text=text, got=got, expected=expected)
    return observed


def _expect_reward(functions: dict, completion: str, gold: str, want: float, hint: str) -> float:
    """accuracy_reward(completion, gold) must be want; the hint is the diagnosed mistake's, else the case's own."""
    got, exc = _call(functions["accuracy_reward"], completion, gold)
    if exc is not None or got != want:
        hint = diagnose(**functions) or hint
        expect(exc is None, "accuracy_reward({completion!r}, {gold!r}) 抛出了 {error}", hint=hint,
               completion=completion, gold=gold, error=type(exc).__name__)
        expect(False, "accuracy_reward({completion!r}, {gold!r}) 得到 {got!r}，期望 {want}", hint=hint,
               completion=completion, gold=gold, got=got, want=want)
    return got


def _expect_fraction(functions: dict, s: str, want, hint: str):
    """normalize_to_fraction(s) must be want (a Fraction, or None)."""
    got, exc = _call(functions["normalize_to_fraction"], s)
    if exc is not None or got != want or type(got) is not type(want):
        hint = diagnose(**functions) or hint
        expect(exc is None, "normalize_to_fraction({s!r}) 抛出了 {error}", hint=hint, s=s, error=type(exc).__name__)
        expect(False, "normalize_to_fraction({s!r}) 得到 {got!r}，期望 {want!r}", hint=hint, s=s, got=got, want=want)
    return got


@visible_test(EX, "accuracy_reward", "原页面的测试表（5 个输入）")
def seed_table(accuracy_reward, extract_boxed_answer, normalize_to_fraction):
    functions = dict(accuracy_reward=accuracy_reward, extract_boxed_answer=extract_boxed_answer,
                     normalize_to_fraction=normalize_to_fraction)
    results = [_call(accuracy_reward, completion, gold) for completion, gold, _ in SEED_TABLE]
    for (completion, gold, expected), (got, exc) in zip(SEED_TABLE, results):
        shown = type(exc).__name__ if exc is not None else f"{got:.1f}" if isinstance(got, (int, float)) else repr(got)
        print(f"  {shown:>4}  期望 {expected:.1f}  | {completion[:30]!r}")
    hints = (FRACTION_HINT, COUNT_HINT, LAST_BOX_HINT, NO_BOX_HINT, NONE_HINT)
    return [_expect_reward(functions, completion, gold, expected, hint)
            for (completion, gold, expected), hint in zip(SEED_TABLE, hints)]


@visible_test(EX, "accuracy_reward", "抽取：嵌套的大括号、最后一个 \\boxed、没有 \\boxed")
def extract_boxes(extract_boxed_answer):
    cases = [
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}", COUNT_HINT),
        ("\\boxed{2}\n\\boxed{3}", "3", LAST_BOX_HINT),
        ("First \\boxed{1}, then \\boxed{\\frac{3}{4}}.", "\\frac{3}{4}", LAST_BOX_HINT),
        ("没有答案", None, NO_BOX_HINT),
    ]
    return _extract_each(extract_boxed_answer, cases)


@visible_test(EX, "accuracy_reward", "模型写出 inf、nan、1/0 或者没写框时返回 None / 0.0，不抛异常")
def never_raises(normalize_to_fraction, accuracy_reward, extract_boxed_answer):
    functions = dict(accuracy_reward=accuracy_reward, extract_boxed_answer=extract_boxed_answer,
                     normalize_to_fraction=normalize_to_fraction)
    observed = [_expect_fraction(functions, s, None, FLOAT_HINT) for s in ["inf", "nan", "1/0"]]
    observed.append(_expect_reward(functions, "答案是 7，但是没写框", "7", 0.0, NO_BOX_HINT))
    observed.append(_expect_reward(functions, "\\boxed{inf}", "1", 0.0, FLOAT_HINT))
    return observed


FRAC_HINT = "\\dfrac、\\tfrac 和负号由格子里写好的 FRAC 正则改写成 a/b，再交给 Fraction：TODO 2 只要 Fraction(s)。"


@visible_test(EX, "accuracy_reward", "\\frac 的几种写法：\\dfrac、\\tfrac、前面的负号")
def frac_forms(normalize_to_fraction, accuracy_reward, extract_boxed_answer):
    functions = dict(accuracy_reward=accuracy_reward, extract_boxed_answer=extract_boxed_answer,
                     normalize_to_fraction=normalize_to_fraction)
    forms = (("\\dfrac{3}{4}", Fraction(3, 4)), ("-\\frac{1}{2}", Fraction(-1, 2)), ("\\tfrac{2}{6}", Fraction(1, 3)))
    observed = [_expect_fraction(functions, s, want, FRAC_HINT) for s, want in forms]
    return observed + [_expect_reward(functions, "所以 \\boxed{-\\dfrac{1}{4}}", "-0.25", 1.0, FRAC_HINT)]


@visible_test(EX, "accuracy_reward", "框后面又提到 \\boxed、最后一个框没闭合、空框")
def extract_edge_cases(extract_boxed_answer):
    cases = [
        ("\\boxed{5}，这个命令叫 \\boxed", "5", BOX_BRACE_HINT),
        ("\\boxed{1}，不对，应该是 \\boxed{2", None, TRUNCATED_HINT),
        ("答：\\boxed{}", "", "TODO 1b：空框的内容是空字符串：计数器在紧跟着的 } 上就回到 0。"),
    ]
    return _extract_each(extract_boxed_answer, cases)


@visible_test(EX, "accuracy_reward", "精确比较：不经过浮点数")
def exact(normalize_to_fraction, accuracy_reward, extract_boxed_answer):
    functions = dict(accuracy_reward=accuracy_reward, extract_boxed_answer=extract_boxed_answer,
                     normalize_to_fraction=normalize_to_fraction)
    got = _expect_fraction(functions, "0.1", Fraction(1, 10), FLOAT_HINT)
    big = _expect_reward(functions, "\\boxed{10000000000000000001}", "10000000000000000000", 0.0, FLOAT_HINT)
    return [got, big]


@visible_test(EX, "accuracy_reward", "标准答案是 0 的题")
def zero_answer(accuracy_reward, extract_boxed_answer, normalize_to_fraction):
    functions = dict(accuracy_reward=accuracy_reward, extract_boxed_answer=extract_boxed_answer,
                     normalize_to_fraction=normalize_to_fraction)
    return [_expect_reward(functions, completion, gold, want, NONE_HINT)
            for completion, gold, want in (("答：\\boxed{0}", "0.0", 1.0), ("\\boxed{0}", "3", 0.0))]
