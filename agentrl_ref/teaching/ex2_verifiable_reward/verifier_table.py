"""Tables behind exercise 2: the seed page's answer on its own test table, and the reference verifier vs math-verify.

`seed_accuracy_reward` is the seed page's answer, verbatim in behaviour (regex `[^{}]*`, then
Fraction with a float fallback): it scores 0.0 on its own `\\frac` case and raises
OverflowError on `\\boxed{inf}`. `verifier_summary` measures the false-negative rate of the course's
reference verifier (agentrl_ref.verifiable_reward, which knows more answer forms than the exercise's blanks
require) against math-verify on answer_forms.ANSWER_FORMS (E12). The tables are shown on a Chinese page:
their headers, row labels and the notes (NOTE_ZH) are Chinese; the figure stays ASCII.
"""
from __future__ import annotations

import re
import statistics
from fractions import Fraction
from typing import Callable, NamedTuple, Sequence

from agentrl_ref.teaching.ex2_verifiable_reward.answer_forms import (
    ANSWER_FORMS, AnswerForm, VerifierComparison, compare_verifiers,
)
from agentrl_ref.teaching.shared.md_table import markdown_table
from agentrl_ref.verifiable_reward import accuracy_reward

_SEED_BOX = re.compile(r"\\boxed\{([^{}]*)\}")


# The two verifiers as the Chinese tables name them. The reference is agentrl_ref.accuracy_reward, the course's
# own implementation: it accepts more forms than the exercise's blanks require (`1,000`, `\\frac12`, `1 / 2`, `$...$`).
REFERENCE_NAME = "参考实现 agentrl_ref.accuracy_reward"


def _installed_math_verify() -> str:
    """The math-verify version this run measures (the course pins 0.9.0; open-r1 pins 0.5.2)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("math-verify")
    except PackageNotFoundError:
        return "?"


MATH_VERIFY_LABEL = f"math-verify {_installed_math_verify()}"  # ASCII, for the figure
MATH_VERIFY_NAME = f"{MATH_VERIFY_LABEL}（本课安装的版本，open-r1 的设置）"
# the two verifiers compared: (name in the tables, label in the figure, verdict field, seconds field)
VERIFIERS = ((REFERENCE_NAME, "reference (agentrl_ref)", "toy_equal", "toy_seconds"),
             (MATH_VERIFY_NAME, MATH_VERIFY_LABEL, "math_verify_equal", "math_verify_seconds"))

# answer_forms.ANSWER_FORMS notes (English: bench/run.py and book/benchmarks.md quote them) as the Chinese table
# shows them
NOTE_ZH: dict[str, str] = {
    "integer": "整数",
    "negative integer": "负整数",
    "leading zeros": "前导零",
    "plainly wrong": "明显错误",
    "integer written as a decimal": "整数写成小数",
    "trailing zero": "末尾多一个 0",
    "no leading zero": "省略整数部分的 0",
    "decimal vs slash fraction (seed case 1)": "小数对斜线分数（原页面第 1 例）",
    "20-digit integers differ in the last digit; floats cannot tell": "两个 20 位整数只差最后一位：浮点数分不出来",
    "close is not equal": "接近不等于相等",
    "latex frac, nested braces (seed case 2, E1)": "LaTeX 分数，框里有嵌套的大括号（原页面第 2 例）",
    "\\dfrac": "`\\dfrac`",
    "\\tfrac": "`\\tfrac`",
    "TeX shorthand \\frac12": "TeX 简写 `\\frac12`",
    "minus before \\frac": "负号在 `\\frac` 前面",
    "minus inside \\frac": "负号在 `\\frac` 里面",
    "unreduced fraction": "没约分的分数",
    "spaces around the slash": "斜线两边有空格",
    "gold written in LaTeX": "标准答案用 LaTeX 写",
    "rounded decimal is not equal": "四舍五入的小数不相等",
    "truncated decimal is not equal": "截断的小数不相等",
    "six-digit decimal is still not equal": "六位小数也还是不相等",
    "unicode vulgar fraction": "Unicode 分数字符",
    "division by zero is no number": "除以 0 不是数",
    "comma thousands separator": "逗号千位分隔",
    "several thousands separators": "多个千位分隔符",
    "LaTeX thousands separator {,}": "LaTeX 千位分隔 `{,}`",
    "LaTeX thin space as separator": "LaTeX 细空格 `\\,` 作千位分隔",
    "thin-space thousand is not zero": "细空格写的一千不等于 0",
    "a comma list is not a thousands separator": "逗号隔开的两个数不是千位分隔",
    "percent vs fraction": "百分数对小数",
    "percent vs bare number (judgement: the question asked for a percent)":
        "百分数对不带 % 的数（有争议：题目问的是百分数）",
    "scientific E notation": "科学计数法 e",
    "power": "乘方",
    "power with braced exponent": "指数带大括号的乘方",
    "unevaluated sum (a float trap)": "没算出来的和（浮点数陷阱）",
    "unicode minus sign U+2212": "Unicode 减号 U+2212",
    "surd": "根式",
    "decimal approximation of a surd is not equal": "根式的小数近似不相等",
    "surd in a fraction, shorthand \\sqrt3": "分数里的根式，简写 `\\sqrt3`",
    "pi expression": "含 π 的式子",
    "approximation of pi is not equal": "π 的近似值不相等",
    "expanded vs factored polynomial": "展开式对因式分解式",
    "infinity": "无穷大",
    "infinity spelled inf": "无穷大写成 inf",
    "tuple / open interval": "元组 / 开区间",
    "half-open interval": "半开区间",
    "open vs closed interval": "开区间对闭区间",
    "set: order does not matter": "集合：顺序无关",
    "two boxes: the last is final (seed case 3)": "两个框：以最后一个为准（原页面第 3 例）",
    "self-correction, last box final (judgement)": "中途改口，以最后一个框为准（有争议）",
    "no box: a human reads it, a box-only verifier cannot": "没有框：人读得出来，只认框的验证器读不出",
    "box inside inline math": "框在行内公式里",
    "inline math inside the box": "行内公式在框里",
    "space between \\boxed and {": "`\\boxed` 和 `{` 之间有空格",
    "last box unclosed: truncated output, no final answer (judgement)":
        "最后一个框没闭合：输出被截断，没有最终答案（有争议）",
    "no answer at all (seed case 4)": "根本没有答案（原页面第 4 例）",
    "text that is no number (seed case 5)": "不是数的文字（原页面第 5 例）",
    "number word": "用英文单词写的数",
    "unit in the box": "框里带单位",
    "currency sign": "货币符号",
    "answer given as an equation": "答案写成等式",
    "multiple-choice letter": "选择题的字母",
}


def seed_accuracy_reward(completion: str, gold: str) -> float:
    """The seed page's answer to exercise 2 (may raise: that is the point)."""
    def extract(text):
        matches = _SEED_BOX.findall(text)
        return matches[-1] if matches else None

    def normalize(s):
        s = s.strip().replace(r"\frac{", "").replace("}{", "/").replace("}", "")
        try:
            try:
                return Fraction(s)
            except ValueError:
                return Fraction(float(s))
        except (ValueError, ZeroDivisionError):
            return None

    pred_str = extract(completion)
    if pred_str is None:
        return 0.0
    pred, gold_v = normalize(pred_str), normalize(gold)
    if pred is None or gold_v is None:
        return 0.0
    return 1.0 if pred == gold_v else 0.0


# (completion, gold, true reward, what the row shows): the seed's five cases, then three of ours
SEED_AND_TRAPS: list[tuple[str, str, float, str]] = [
    ("思考...所以\\boxed{0.5}", "1/2", 1.0, "原页面 1：跨表示等价"),
    ("\\boxed{\\frac{1}{2}}", "0.5", 1.0, "原页面 2：框里有嵌套的大括号"),
    ("\\boxed{2}\n\\boxed{3}", "3", 1.0, "原页面 3：取最后一个"),
    ("没有答案", "5", 0.0, "原页面 4：抠不出"),
    ("\\boxed{abc}", "5", 0.0, "原页面 5：不是数"),
    ("\\boxed{inf}", "1", 0.0, "模型写了 inf"),
    ("\\boxed{nan}", "1", 0.0, "模型写了 nan"),
    ("\\boxed{2\\frac{1}{2}}", "21/2", 0.0, "带分数 2½ 不等于 21/2"),
]


def _outcome(reward: Callable[[str, str], float], completion: str, gold: str) -> str:
    try:
        return f"{reward(completion, gold):.1f}"
    except Exception as exc:  # the seed's answer crashes on some inputs: show which exception
        return f"抛出 {type(exc).__name__}"


def _code(text: str) -> str:
    """text as an inline code span for a Markdown table cell (newlines shown as \\n)."""
    return "`" + text.replace("\n", "\\n").replace("|", "\\|") + "`"


def seed_answer_table(cases: Sequence[tuple[str, str, float, str]] = SEED_AND_TRAPS,
                      ours: Callable[[str, str], float] = accuracy_reward) -> str:
    """Markdown: each case's true reward, the seed page's answer and ours; wrong cells bold with ✗."""
    rows = []
    for completion, gold, expected, note in cases:
        cells = []
        for reward in (seed_accuracy_reward, ours):
            got = _outcome(reward, completion, gold)
            cells.append(got if got == f"{expected:.1f}" else f"**{got}** ✗")
        rows.append([_code(completion), _code(gold), f"{expected:.1f}", cells[0], cells[1], f"{note}"])
    return markdown_table(["输入", "标准答案", "正确的奖励", "原页面的答案", "参考实现", "说明"], rows)


# Answer forms that are not in ANSWER_FORMS, one of each kind, to pay math-verify's one-off start-up
# (imports, sympy and parser initialisation: about a second) before anything is timed.
WARM_UP: list[AnswerForm] = [
    AnswerForm(r"\boxed{7}", "7", True, "integer"),
    AnswerForm(r"\boxed{\frac{2}{5}}", "0.4", True, "fraction"),
    AnswerForm(r"\boxed{\sqrt{5}}", r"\sqrt{5}", True, "surd"),
    AnswerForm(r"\boxed{3\pi}", r"3\pi", True, "pi"),
    AnswerForm(r"\boxed{(3, 4]}", "(3,4]", True, "interval"),
    AnswerForm(r"\boxed{\{3, 4\}}", r"\{4, 3\}", True, "set"),
    AnswerForm(r"\boxed{y^2-1}", "(y-1)(y+1)", True, "polynomial"),
    AnswerForm(r"\boxed{\text{(C)}}", "C", True, "choice"),
]


def run_comparison(rows: Sequence[AnswerForm] = ANSWER_FORMS) -> list[VerifierComparison]:
    """compare_verifiers on rows, after a warm-up on WARM_UP so that one-off start-up costs are not timed."""
    compare_verifiers(WARM_UP)
    return compare_verifiers(list(rows))


class VerifierStats(NamedTuple):
    name: str
    agree: int           # verdicts equal to the human's
    total: int
    false_negatives: int  # human: equal, verifier: not equal
    positives: int
    false_positives: int  # human: not equal, verifier: equal
    negatives: int
    median_seconds: float  # one call per sample; the median is robust to a busy machine

    @property
    def false_negative_rate(self) -> float:
        return self.false_negatives / self.positives if self.positives else 0.0

    @property
    def false_positive_rate(self) -> float:
        return self.false_positives / self.negatives if self.negatives else 0.0


def verifier_summary(results: Sequence[VerifierComparison]) -> list[VerifierStats]:
    """Agreement, false-negative / false-positive counts and time per sample of both verifiers."""
    out = []
    for name, _label, verdict, seconds in VERIFIERS:
        said = [getattr(r, verdict) for r in results]
        times = [getattr(r, seconds) for r in results]
        out.append(VerifierStats(
            name=name,
            agree=sum(s == r.expected_equal for s, r in zip(said, results)),
            total=len(results),
            false_negatives=sum(r.expected_equal and not s for s, r in zip(said, results)),
            positives=sum(r.expected_equal for r in results),
            false_positives=sum(s and not r.expected_equal for s, r in zip(said, results)),
            negatives=sum(not r.expected_equal for r in results),
            median_seconds=statistics.median(times),
        ))
    return out


def _duration(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def summary_table(stats: Sequence[VerifierStats]) -> str:
    """Markdown: one row per verifier."""
    header = ["验证器", "与人工一致", "漏判（false negative）", "误判（false positive）", "每个样本的时间（中位数）"]
    rows = [[f"{s.name}", f"{s.agree}/{s.total}", f"{s.false_negatives}/{s.positives} = {s.false_negative_rate:.0%}",
             f"{s.false_positives}/{s.negatives} = {s.false_positive_rate:.0%}", _duration(s.median_seconds)]
            for s in stats]
    return markdown_table(header, rows)


def _verdict(said: bool, expected: bool) -> str:
    text = "1" if said else "0"
    return text if said == expected else f"**{text}** ✗"


def forms_table(results: Sequence[VerifierComparison]) -> str:
    """Markdown: every answer form with the human verdict and both verifiers' (1 = equal); disagreements bold with ✗.

    The narrow verdict columns come first, so that they stay on screen when long code spans widen the table.
    """
    rows = [[str(i), "1" if r.expected_equal else "0", _verdict(r.toy_equal, r.expected_equal),
             _verdict(r.math_verify_equal, r.expected_equal), _code(r.completion), _code(r.gold),
             NOTE_ZH.get(r.note, r.note)]
            for i, r in enumerate(results, 1)]
    header = ["#", "人工", "参考实现", "math-verify（open-r1 的设置）", "模型输出", "标准答案", "写法"]
    return markdown_table(header, rows)


def default_settings_line(results: Sequence[VerifierComparison]) -> str:
    """Markdown: the rows where math-verify with its own defaults says something else than with open-r1's settings."""
    changed = [(i, r) for i, r in enumerate(results, 1) if r.math_verify_default_equal != r.math_verify_equal]
    if not changed:
        return "换成 math-verify 自己的默认设置，每一行的判定都不变。"
    cells = "；".join(f"第 {i} 行 {_code(r.completion)} 对 {_code(r.gold)}："
                     f"open-r1 的设置判 {int(r.math_verify_equal)}，默认设置判 {int(r.math_verify_default_equal)}"
                     for i, r in changed)
    return (f"换成 math-verify 自己的默认设置（`parse` 和 `verify` 都不带参数），"
            f"判定不同的有 {len(changed)} 行：{cells}。")


def plot_verifiers(results: Sequence[VerifierComparison]):
    """One dot per answer form and verifier: time per call (log x), coloured by agreement with the human verdict.
    Chinese text where a CJK font is installed (cjk.zh)."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.shared.cjk import zh

    kinds = {"agrees with human": ("0.6", zh("与人工一致", "agrees with human")),
             "false negative": ("tab:orange", zh("漏判", "false negative")),
             "false positive": ("tab:red", zh("误判", "false positive"))}
    labels = {REFERENCE_NAME: zh("参考实现（agentrl_ref）", "reference (agentrl_ref)")}
    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.4), dpi=DPI)
    for row, (_name, _label, verdict, seconds) in enumerate(VERIFIERS):
        times = [getattr(r, seconds) for r in results]
        for k, (r, t) in enumerate(zip(results, times)):
            said = getattr(r, verdict)
            kind = ("agrees with human" if said == r.expected_equal
                    else "false negative" if r.expected_equal else "false positive")
            y = row + ((k % 7) - 3) * 0.06  # deterministic jitter, so that dots do not hide each other
            color, label = kinds[kind]
            ax.scatter(t, y, s=18, color=color, zorder=3 if kind != "agrees with human" else 2, label=label)
        median = statistics.median(times)
        ax.plot([median, median], [row - 0.3, row + 0.3], color="black", linewidth=1.5)
        duration = _duration(median)
        ax.annotate(zh(f"中位数 {duration}", f"median {duration}"), (median, row + 0.32), ha="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(VERIFIERS)), [labels.get(name, label) for name, label, _verdict, _seconds in VERIFIERS])
    ax.set_ylim(-0.5, 1.6)
    ax.set_xlabel(zh("每次调用的秒数（对数坐标）", "seconds per call (log scale)"))
    ax.set_title(zh(f"{len(results)} 种答案写法：每次调用的时间，以及和人工阅卷的判定是否一致",
                    f"{len(results)} answer forms: time per call and verdict vs a human grader"))
    ax.grid(True, axis="x", which="both", alpha=0.3)
    unique = {label: handle for handle, label in zip(*ax.get_legend_handles_labels())}  # one entry per kind
    ax.legend(unique.values(), unique.keys(), fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig
