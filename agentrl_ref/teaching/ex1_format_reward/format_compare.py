"""How other format checks judge the same completions, and how long they take to reject.

Backs the executed table and plot of exercise 1. The patterns are the public ones
(see ANCHORS.md §1); each is applied with the flags its project uses.
"""
from __future__ import annotations

import math
import re
import statistics
import time
from typing import Callable

from agentrl_ref.teaching.shared import md_table
from agentrl_ref.format_reward import SEED_FORMAT_PATTERN, STRICT_FORMAT_PATTERN, format_reward

OPEN_R1_PATTERN = r"^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$"
TRL_THINK_PATTERN = r"^<think>(?!.*<think>)(.*?)</think>.*$"


def _matcher(pattern: str, flags: int) -> Callable[[str], float]:
    compiled = re.compile(pattern, flags)
    return lambda text: 1.0 if compiled.match(text) else 0.0


# name -> reward function on one completion; the order is the table's column order
CHECKERS: dict[str, Callable[[str], float]] = {
    "seed page": _matcher(SEED_FORMAT_PATTERN, re.DOTALL),
    "open-r1": _matcher(OPEN_R1_PATTERN, re.DOTALL | re.MULTILINE),
    "TRL think": _matcher(TRL_THINK_PATTERN, re.DOTALL | re.MULTILINE),
    "tempered regex": _matcher(STRICT_FORMAT_PATTERN, re.DOTALL),
    "agentrl_ref": format_reward,
}

# (label shown on the page, completion, does this exercise's rule accept it?)
CASES: list[tuple[str, str, bool]] = [
    ("单行写法", "<think>2+3=5</think><answer>5</answer>", True),
    ("open-r1 要求的换行", "<think>\n2+3=5\n</think>\n<answer>\n5\n</answer>", True),
    ("前后有空白", "  <think>x</think>\n\n<answer>y</answer>\n", True),
    ("Windows 换行 `\\r\\n`", "<think>a\r\nb</think>\r\n<answer>1</answer>\r\n", True),
    ("两组标签", "<think>a</think><answer>1</answer><think>b</think><answer>2</answer>", False),
    ("嵌套的 `<think>`", "<think>a<think>b</think>c</think><answer>1</answer>", False),
    ("两组标签，带 open-r1 的换行",
     "<think>\na\n</think>\n<answer>\n1\n</answer>\n<think>\nb\n</think>\n<answer>\n2\n</answer>", False),
    ("嵌套的 `<think>`，带 open-r1 的换行", "<think>\na<think>b</think>c\n</think>\n<answer>\n1\n</answer>", False),
    ("`</answer>` 换行后还有文字", "<think>\na\n</think>\n<answer>\n1\n</answer>\nP.S. more", False),
    ("`</answer>` 后紧跟文字", "<think>\na\n</think>\n<answer>\n1\n</answer> P.S. more", False),
    ("`<think>` 前有文字", "Sure! <think>a</think><answer>1</answer>", False),
    ("没有 `<answer>`", "<think>\nreasoning\n</think>\nThe answer is 5.", False),
    ("`<think>` 没有闭合", "<think>halfway", False),
]
# the table's column headers on the (Chinese) page
HEADERS = {"case": "输入", "expected": "本题规则", "seed page": "原页面", "open-r1": "open-r1",
           "TRL think": "TRL think_format_reward", "tempered regex": "回火正则（本题答案）",
           "agentrl_ref": "agentrl_ref"}


def compare_checkers(cases=CASES, checkers=CHECKERS) -> list[dict[str, object]]:
    """One row per case: the expected verdict and every checker's reward."""
    rows = []
    for label, text, expected in cases:
        row: dict[str, object] = {"case": label, "expected": float(expected)}
        row.update({name: check(text) for name, check in checkers.items()})
        rows.append(row)
    return rows


def _cell(row: dict[str, object], key: str) -> str:
    value = row[key]
    if not isinstance(value, float):
        return str(value)
    text = f"{value:g}"
    if key not in ("expected",) and "expected" in row and value != row["expected"]:
        text = f"**{text}** ✗"
    return text


def markdown_table(rows: list[dict[str, object]]) -> str:
    """Render rows of equal keys as a Markdown table (numbers as 0/1, mismatches marked)."""
    keys = list(rows[0])
    cells = [[_cell(row, key) for key in keys] for row in rows]
    return md_table.markdown_table([HEADERS.get(k, k) for k in keys], cells)


def degenerate_completion(repeats: int) -> str:
    """Adversarial text for the original page's backtracking regex: one <think>, then many
    closed-but-misplaced groups."""
    return "<think>" + "</think><answer></answer>x" * repeats


def time_reject(check: Callable[[str], float], text: str, min_seconds: float = 0.02) -> float:
    """Seconds per call of check(text): best of a few rounds, each long enough to time."""
    best = math.inf
    for _ in range(3):
        calls, start = 0, time.perf_counter()
        while True:
            check(text)
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        best = min(best, elapsed / calls)
        if elapsed > 0.5:  # one slow call is its own measurement
            break
    return best


def measure_reject_times(repeats=(125, 250, 500, 1000, 2000), names=("seed page", "tempered regex", "agentrl_ref")):
    """{'length': [...chars], name: [...seconds]} for degenerate completions of growing size."""
    texts = [degenerate_completion(n) for n in repeats]
    result: dict[str, list[float]] = {"length": [float(len(t)) for t in texts]}
    for name in names:
        check = CHECKERS[name]
        assert all(check(t) == 0.0 for t in texts), name
        result[name] = [time_reject(check, t) for t in texts]
    return result


def growth_exponent(lengths: list[float], seconds: list[float]) -> float:
    """Growth exponent k in seconds ~ length**k: the median slope of log(seconds) against log(length)
    over all pairs of points (Theil-Sen). One point slowed down by a busy machine moves a two-point
    slope a lot (a linear check once showed -0.5); it barely moves the median of ten slopes."""
    slopes = [math.log(seconds[j] / seconds[i]) / math.log(lengths[j] / lengths[i])
              for i in range(len(lengths)) for j in range(i + 1, len(lengths))]
    return statistics.median(slopes)


PLOT_NAMES = {"seed page": ("原页面的正则", "seed page"), "tempered regex": ("回火正则", "tempered regex")}


def plot_reject_times(times: dict[str, list[float]]):
    """Log-log plot of reject time against input length (Chinese text where a CJK font is installed: cjk.zh)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    from agentrl_ref.teaching.shared.cjk import zh

    from agentrl_ref.teaching.shared.page_figure import DPI

    fig, ax = plt.subplots(figsize=(6.6, 4.2), dpi=DPI)
    lengths = times["length"]
    for name, seconds in times.items():
        if name == "length":
            continue
        k = growth_exponent(lengths, seconds)
        label = zh(*PLOT_NAMES.get(name, (name, name)))
        ax.loglog([x / 1000 for x in lengths], seconds, marker="o",
                  label=zh(f"{label}（增长指数 {0.0 if abs(k) < 0.05 else k:.1f}）",
                           f"{label} (slope {0.0 if abs(k) < 0.05 else k:.1f})"))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks([x / 1000 for x in lengths])
    ax.set_xlabel(zh("畸形回答的长度（千字符）", "degenerate completion length (thousand chars)"))
    ax.set_ylabel(zh("拒绝一条回答的秒数", "seconds to reject one completion"))
    ax.set_title(zh("拒绝时间随长度增长：回溯正则与线性检查",
                    "Reject time vs length: backtracking regex vs linear checks"))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig
