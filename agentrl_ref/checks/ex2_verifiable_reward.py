"""Visible tests of exercise 2 (verifiable reward): the seed page's table, box extraction, answers that must not
crash."""
from agentrl_ref.checks import expect, visible_test

EX = "ex2_verifiable_reward"

# The seed page's test table. Its expected values are right; the seed's *answer* scores 0.0 on
# case 2 (ERRATA E1), which is why the extraction in this exercise counts braces.
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


@visible_test(EX, "accuracy_reward", "原页面的测试表（5 个输入）")
def seed_table(accuracy_reward):
    results = []
    for completion, gold, expected in SEED_TABLE:
        try:
            got = accuracy_reward(completion, gold)
            shown = f"{got:.1f}"
        except Exception as exc:  # show the row, report below
            got, shown = exc, type(exc).__name__
        results.append(got)
        print(f"  {shown:>4}  期望 {expected:.1f}  | {completion[:30]!r}")
    for (completion, gold, expected), got, hint in zip(SEED_TABLE, results, SEED_HINTS):
        if isinstance(got, Exception):
            expect(False, f"输入 {completion!r}（标准答案 {gold!r}）时抛出了 {type(got).__name__}: {got}", hint=hint)
        expect(got == expected, f"输入 {completion!r}（标准答案 {gold!r}）得到 {got!r}，期望 {expected}", hint=hint)


@visible_test(EX, "accuracy_reward", "抽取：嵌套的大括号、最后一个 \\boxed、没有 \\boxed")
def extract_boxes(extract_boxed_answer):
    cases = [
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}", SEED_HINTS[1]),
        ("\\boxed{2}\n\\boxed{3}", "3", SEED_HINTS[2]),
        ("First \\boxed{1}, then \\boxed{\\frac{3}{4}}.", "\\frac{3}{4}", SEED_HINTS[2]),
        ("没有答案", None, SEED_HINTS[3]),
    ]
    for text, expected, hint in cases:
        got = extract_boxed_answer(text)
        expect(got == expected, f"extract_boxed_answer({text!r}) 得到 {got!r}，期望 {expected!r}", hint=hint)


@visible_test(EX, "accuracy_reward", "模型写出 inf、nan、1/0 时返回 None / 0.0，不抛异常")
def never_raises(normalize_to_fraction, accuracy_reward):
    hint = ("直接把字符串交给 Fraction：它对 'inf'、'nan' 抛 ValueError，正好被 except 接住。"
            "别再退回 float：Fraction(float('inf')) 抛的是 OverflowError，没人接。")
    for s in ["inf", "nan", "1/0"]:
        try:
            got = normalize_to_fraction(s)
        except Exception as exc:
            expect(False, f"normalize_to_fraction({s!r}) 抛出了 {type(exc).__name__}: {exc}", hint=hint)
        expect(got is None, f"normalize_to_fraction({s!r}) 得到 {got!r}，期望 None", hint=hint)
    try:
        got = accuracy_reward("\\boxed{inf}", "1")
    except Exception as exc:
        expect(False, f"accuracy_reward('\\\\boxed{{inf}}', '1') 抛出了 {type(exc).__name__}: {exc}", hint=hint)
    expect(got == 0.0, f"accuracy_reward('\\\\boxed{{inf}}', '1') 得到 {got!r}，期望 0.0", hint=hint)
