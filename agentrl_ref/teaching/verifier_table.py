"""Tables behind exercise 2: the seed page's answer on its own test table, and toy verifier vs math-verify.

`seed_accuracy_reward` is the seed page's answer, verbatim in behaviour (regex `[^{}]*`, then
Fraction with a float fallback): it scores 0.0 on its own `\\frac` case (ERRATA E1) and raises
OverflowError on `\\boxed{inf}` (E2). `verifier_summary` measures the false-negative rate of our toy
verifier (agentrl_ref.verifiable_reward) against math-verify on answer_forms.ANSWER_FORMS (E12).
"""
from __future__ import annotations

import re
import statistics
from fractions import Fraction
from typing import Callable, NamedTuple, Sequence

from agentrl_ref.teaching.answer_forms import ANSWER_FORMS, AnswerForm, VerifierComparison, compare_verifiers
from agentrl_ref.teaching.md_table import markdown_table
from agentrl_ref.verifiable_reward import accuracy_reward

_SEED_BOX = re.compile(r"\\boxed\{([^{}]*)\}")


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
    ("\\boxed{\\frac{1}{2}}", "0.5", 1.0, "原页面 2：框里有嵌套的大括号（E1）"),
    ("\\boxed{2}\n\\boxed{3}", "3", 1.0, "原页面 3：取最后一个"),
    ("没有答案", "5", 0.0, "原页面 4：抠不出"),
    ("\\boxed{abc}", "5", 0.0, "原页面 5：不是数"),
    ("\\boxed{inf}", "1", 0.0, "模型写了 inf（E2）"),
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
    return markdown_table(["输入", "标准答案", "正确的奖励", "原页面的答案", "本课的实现", "说明"], rows)


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
    for name, verdict, seconds in (("toy (agentrl_ref)", "toy_equal", "toy_seconds"),
                                   ("math-verify 0.9.0", "math_verify_equal", "math_verify_seconds")):
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
    header = ["判分器", "与人工一致", "漏判（false negative）", "误判（false positive）", "每个样本的时间（中位数）"]
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
             _verdict(r.math_verify_equal, r.expected_equal), _code(r.completion), _code(r.gold), f"{r.note}"]
            for i, r in enumerate(results, 1)]
    return markdown_table(["#", "人工", "toy", "math-verify", "模型输出", "标准答案", "写法"], rows)


def plot_verifiers(results: Sequence[VerifierComparison]):
    """One dot per answer form and verifier: time per call (log x), coloured by agreement with the human verdict."""
    import matplotlib.pyplot as plt

    kinds = {"agrees with human": "0.6", "false negative": "tab:orange", "false positive": "tab:red"}
    fig, ax = plt.subplots(figsize=(8, 3.2), dpi=110)
    for row, (name, verdict, seconds) in enumerate((("toy (agentrl_ref)", "toy_equal", "toy_seconds"),
                                                    ("math-verify 0.9.0", "math_verify_equal", "math_verify_seconds"))):
        times = [getattr(r, seconds) for r in results]
        for k, (r, t) in enumerate(zip(results, times)):
            said = getattr(r, verdict)
            kind = ("agrees with human" if said == r.expected_equal
                    else "false negative" if r.expected_equal else "false positive")
            y = row + ((k % 7) - 3) * 0.06  # deterministic jitter, so that dots do not hide each other
            ax.scatter(t, y, s=18, color=kinds[kind], zorder=3 if kind != "agrees with human" else 2, label=kind)
        median = statistics.median(times)
        ax.plot([median, median], [row - 0.3, row + 0.3], color="black", linewidth=1.5)
        ax.annotate(f"median {_duration(median).replace('µ', 'u')}", (median, row + 0.32), ha="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_yticks([0, 1], ["toy (agentrl_ref)", "math-verify 0.9.0"])
    ax.set_ylim(-0.5, 1.6)
    ax.set_xlabel("seconds per call (log scale)")
    ax.set_title(f"{len(results)} answer forms: time per call and verdict vs a human grader")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    unique = {label: handle for handle, label in zip(*ax.get_legend_handles_labels())}  # one entry per kind
    ax.legend(unique.values(), unique.keys(), fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig
