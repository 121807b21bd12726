"""Length-shaped rewards side by side, and the per-component log of a composite reward (exercise 5).

Backs the executed plot and tables of exercise 5:
- this course's cosine length reward (clamped at max_len), the same formula without the clamp,
  open-r1's get_cosine_scaled_reward with its function defaults (characters, no clamp) and DAPO's
  linear soft overlong punishment (Eq. 13) added to a +/-1 correctness reward;
- the dict a composite reward returns for a handful of completions, as a training log would record it.
Text inside figures is Chinese where a CJK font is installed, English elsewhere (cjk.zh).
"""
from __future__ import annotations

import math
from typing import Callable

from agentrl_ref.composite_reward import cosine_scaled, soft_overlong_punishment
from agentrl_ref.teaching.shared.md_table import markdown_table

# (value at L = 0, value at L = max_len). open-r1's function defaults are min/max_value_correct =
# 0.5/1.0 and min/max_value_wrong = -1.0/-0.5; for wrong answers it swaps the pair, so short wrong
# answers get -1.0 and long ones -0.5.
COURSE_CORRECT = (1.0, 0.0)
COURSE_WRONG = (-1.0, 0.0)
OPEN_R1_CORRECT = (1.0, 0.5)
OPEN_R1_WRONG = (-1.0, -0.5)

# DAPO's panel is drawn for an illustrative budget: the shape only depends on cache_len / max_len.
DAPO_MAX_LEN = 1000
DAPO_CACHE_FRACTION = 0.25


def unclamped_cosine(ratio: float, r_short: float, r_long: float) -> float:
    """The cosine schedule as open-r1 computes it: no clamp, so past ratio 1 the cosine comes back up."""
    return r_long + 0.5 * (r_short - r_long) * (1.0 + math.cos(math.pi * ratio))


def dapo_reward(ratio: float, correct: bool, max_len: int = DAPO_MAX_LEN,
                cache_fraction: float = DAPO_CACHE_FRACTION) -> float:
    """+1 / -1 for correctness plus DAPO's soft overlong punishment at length round(ratio * max_len)."""
    cache_len = max(1, round(cache_fraction * max_len))
    length = round(ratio * max_len)
    return (1.0 if correct else -1.0) + soft_overlong_punishment(length, max_len, cache_len)


# curve name -> function of L / max_len; the order is the legend's and the value table's
CURVES: dict[str, Callable[[float], float]] = {
    "course correct": lambda x: cosine_scaled(x, *COURSE_CORRECT),
    "course wrong": lambda x: cosine_scaled(x, *COURSE_WRONG),
    "course correct, no clamp": lambda x: unclamped_cosine(x, *COURSE_CORRECT),
    "course wrong, no clamp": lambda x: unclamped_cosine(x, *COURSE_WRONG),
    "open-r1 correct": lambda x: unclamped_cosine(x, *OPEN_R1_CORRECT),
    "open-r1 wrong": lambda x: unclamped_cosine(x, *OPEN_R1_WRONG),
    "DAPO correct": lambda x: dapo_reward(x, True),
    "DAPO wrong": lambda x: dapo_reward(x, False),
}


def length_curves(x_max: float = 1.5, points: int = 301) -> dict[str, list[float]]:
    """{'ratio': [L / max_len ...], curve name: [reward ...]} on an even grid from 0 to x_max."""
    ratios = [x_max * i / (points - 1) for i in range(points)]
    out: dict[str, list[float]] = {"ratio": ratios}
    out.update({name: [f(x) for x in ratios] for name, f in CURVES.items()})
    return out


# the curves as the Chinese page's value table names them (the figure keeps the ASCII names above)
CURVE_LABELS_ZH: dict[str, str] = {
    "course correct": "本题，答对",
    "course wrong": "本题，答错",
    "course correct, no clamp": "本题，答对，不截断",
    "course wrong, no clamp": "本题，答错，不截断",
    "open-r1 correct": "open-r1 默认参数，答对",
    "open-r1 wrong": "open-r1 默认参数，答错",
    "DAPO correct": "DAPO，答对",
    "DAPO wrong": "DAPO，答错",
}


def values_table(at: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 0.875, 1.0, 1.5, 2.0)) -> str:
    """Markdown table: every curve's reward at a few values of L / max_len (rows labelled in Chinese)."""
    header = ["L/max_len =", *(f"{x:g}" for x in at)]
    rows = [[CURVE_LABELS_ZH[name], *(f"{f(x) + 0.0:.3f}" for x in at)] for name, f in CURVES.items()]
    return markdown_table(header, rows, ["", *["r"] * len(at)])


def plot_length_rewards(curves: dict[str, list[float]] | None = None):
    """Two panels over L / max_len: the cosine rewards (course vs open-r1) and DAPO's linear punishment."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.shared.cjk import zh
    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    curves = curves or length_curves()
    x = curves["ratio"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(WIDTH_IN, 5.6), dpi=DPI, sharey=True)
    green, red = "tab:green", "tab:red"

    left.plot(x, curves["course correct"], color=green, lw=2.2,
              label=zh("本题，答对（截断）", "this exercise, correct (clamped)"))
    left.plot(x, curves["course wrong"], color=red, lw=2.2,
              label=zh("本题，答错（截断）", "this exercise, wrong (clamped)"))
    beyond = [i for i, r in enumerate(x) if r >= 1.0]
    for name, color, branch in (("course correct, no clamp", green, "答对"), ("course wrong, no clamp", red, "答错")):
        left.plot([x[i] for i in beyond], [curves[name][i] for i in beyond], color=color, lw=1.2, ls=":",
                  label=zh(f"本题，{branch}，不截断（超过 max_len）",
                           name.replace("course", "this exercise,") + " (past max_len)"))
    left.plot(x, curves["open-r1 correct"], color=green, lw=1.4, ls="--",
              label=zh("open-r1 的默认值，答对", "open-r1 defaults, correct"))
    left.plot(x, curves["open-r1 wrong"], color=red, lw=1.4, ls="--",
              label=zh("open-r1 的默认值，答错", "open-r1 defaults, wrong"))
    left.set_title(zh("cosine 长度奖励（Yeo et al. 2025）", "Cosine length reward (Yeo et al. 2025)"))

    right.plot(x, curves["DAPO correct"], color=green, lw=2.2, label=zh("+1 + 超长惩罚", "+1 + overlong punishment"))
    right.plot(x, curves["DAPO wrong"], color=red, lw=2.2, label=zh("-1 + 超长惩罚", "-1 + overlong punishment"))
    right.axvspan(1.0 - DAPO_CACHE_FRACTION, 1.0, color="0.85", label=f"L_cache = {DAPO_CACHE_FRACTION:g} L_max")
    right.set_title(zh("DAPO 的软超长惩罚（线性，式 13）", "DAPO soft overlong punishment (linear, Eq. 13)"))

    for ax, xlabel in ((left, zh("L / max_len（字符）", "L / max_len (characters)")),
                       (right, zh("|y| / L_max（token）", "|y| / L_max (tokens)"))):
        ax.axvline(1.0, color="0.4", lw=1.0)
        ax.axhline(0.0, color="0.6", lw=0.8)
        ax.set_xlabel(xlabel)
        ax.set_xlim(0.0, x[-1])
        ax.set_ylim(-2.15, 1.15)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(-0.02, -0.16), frameon=False)  # off the curves
    left.set_ylabel(zh("奖励", "reward"))
    fig.tight_layout()
    return fig


# --- the training-log table -------------------------------------------------------------------

_STEP = "23*17 = 20*17 + 3*17 = 340 + 51 = 391. "
_WRONG_STEP = "23*17 = 20*17 + 3*17 = 340 + 41 = 381. "


def _r1(think: str, answer: str) -> str:
    return f"<think>{think}</think><answer>{answer}</answer>"


# (label shown in the table, completion, gold answer); the first one is the seed page's example
LOG_EXAMPLES: list[tuple[str, str, str]] = [
    ("原页面的例子：答对，很短", _r1("23*17 = 23*17 = 391", "\\boxed{391}"), "391"),
    ("答对，推理较长", _r1(_STEP * 6, "\\boxed{391}"), "391"),
    ("答对，超过 max_len", _r1(_STEP * 16, "\\boxed{391}"), "391"),
    ("答错，很短", _r1("23*17 = 381", "\\boxed{381}"), "391"),
    ("答错，推理较长", _r1(_WRONG_STEP * 6, "\\boxed{381}"), "391"),
    ("答对，但没有 think/answer 标签", "23*17 = 391, so \\boxed{391}", "391"),
    ("答对，但答案不在 `\\boxed{}` 里", _r1("23*17 = 391", "391"), "391"),
]


def reward_log_rows(reward_fn: Callable[[str, str], dict[str, float]],
                    examples: list[tuple[str, str, str]] = LOG_EXAMPLES,
                    max_len: int = 512) -> list[dict[str, object]]:
    """One row per example: label, length, L / max_len, then the dict reward_fn returns (components, total)."""
    rows = []
    for label, completion, gold in examples:
        row: dict[str, object] = {"completion": label, "L": len(completion), "L/max_len": len(completion) / max_len}
        row.update(reward_fn(completion, gold))
        rows.append(row)
    return rows


def _log_cell(key: str, value: object) -> str:
    text = f"{value + 0.0:.3f}" if isinstance(value, float) else str(value)
    return f"**{text}**" if key == "total" else text


def log_markdown_table(rows: list[dict[str, object]]) -> str:
    """Rows of equal keys as a Markdown table; floats with three decimals, the total in bold.

    The label column ("completion") is headed 回答 on the Chinese page; the other keys are the reward's own names."""
    keys = list(rows[0])
    header = ["回答" if key == "completion" else key for key in keys]
    return markdown_table(header, [[_log_cell(key, row[key]) for key in keys] for row in rows])
