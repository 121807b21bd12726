"""Markdown tables for the notebook: before/after GRPO, ablations, seeds (labels may be Chinese)."""
from __future__ import annotations

import math
import re

from agentrl_ref.teaching.md_table import markdown_table

BEFORE_AFTER_ROWS = (
    ("准确率（采样，T=1）", "sampled", "accuracy", "pct"),
    ("准确率（贪心）", "greedy", "accuracy", "pct"),
    ("工具调用率（采样）", "sampled", "tool_rate", "pct"),
    ("工具调用率（贪心）", "greedy", "tool_rate", "pct"),
    ("调用工具时答对的比例（复制率，采样）", "sampled", "copy_rate", "pct"),
    ("不调用工具时的准确率（采样）", "sampled", "no_tool_accuracy", "pct"),
    ("格式奖励为 1 的比例（采样）", "sampled", "format_rate", "pct"),
    ("平均回复 token 数（采样）", "sampled", "mean_response_tokens", "num"),
)


def fmt(value: float, kind: str = "pct") -> str:
    """'97.3%' / '19.4' / '—' for NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{100 * value:.1f}%" if kind == "pct" else f"{value:.1f}"


def before_after_table(run) -> str:
    """Held-out metrics after SFT and after GRPO (n = len(run.task.test) problems each)."""
    rows = []
    for label, mode, key, kind in BEFORE_AFTER_ROWS:
        rows.append([label, fmt(getattr(run.before[mode], key), kind),
                     fmt(getattr(run.after[mode], key), kind) if run.after else "—"])
    return markdown_table(["指标（留出集）", "SFT 后", "GRPO 后"], rows, ["", "r", "r"])


# Chinese names for the ablations and their arms (the figures keep the English labels: ASCII only)
ABLATION_ZH = {"tool_mask": "tool 结果", "staleness": "版本差上限", "cosine": "cosine 长度项",
               "credit": "advantage 分配", "cliff": "悬崖：SFT 步数"}
ARM_ZH = {"tool result masked": "屏蔽（默认）", "tool result trained": "也训练",
          "cosine on": "开（默认）", "cosine off": "关",
          "broadcast": "广播到每个训练 token（默认）", "last token only": "只给最后一个训练 token"}


def arm_label_zh(label: str) -> str:
    """The Chinese label of an ablation arm ("SFT 60 steps" -> "SFT 60 步"); unknown labels come back unchanged."""
    match = re.fullmatch(r"SFT (\d+) steps", label)
    return f"SFT {match[1]} 步" if match else ARM_ZH.get(label, label)


def ablation_table(results: dict, compact: bool = False) -> str:
    """One row per arm: starting copy rate, final sampled accuracy and tool rate, lengths, staleness, simulated time.

    "模拟用时" is schedule.replay()'s total: rollout workers and trainer on devices of their own.
    compact: only the final accuracy and tool rate, the length of correct answers and the mean version lag
    (a table narrow enough for a book page; the notebook prints the rest next to each ablation).
    """
    rows = []
    for res in results.values():
        for i, arm in enumerate(res.arms):
            s = arm.summary
            name = ABLATION_ZH.get(res.name, res.name) if i == 0 else None
            start = fmt(arm.before.copy_rate) if arm.before is not None else "—"
            if compact:
                rows.append([name, arm_label_zh(arm.label), fmt(s["accuracy"]), fmt(s["tool_rate"]),
                             fmt(s["correct_answer_chars"], "num"), f"{s['mean_staleness']:.2f}"])
                continue
            rows.append([name, arm_label_zh(arm.label), start, fmt(s["accuracy"]), fmt(s["tool_rate"]),
                         fmt(s["correct_answer_chars"], "num"), fmt(s["response_tokens"], "num"),
                         f"{s['mean_staleness']:.2f}", f"{s['sim_seconds']:.1f} s", str(s["steps_waited"])])
    if compact:
        header = ["消融", "设置", "准确率（采样）", "工具调用率", "答对时答案字符数", "平均版本差"]
        return markdown_table(header, rows, ["", "", "r", "r", "r", "r"])
    header = ["消融", "设置", "起点复制率", "准确率（采样）", "工具调用率", "答对时答案字符数", "平均回复 token 数",
              "平均版本差", "模拟用时", "训练器等待步数"]
    return markdown_table(header, rows, ["", "", "r", "r", "r", "r", "r", "r", "r", "r"])


def timing_table(run) -> str:
    """Wall-clock and CPU seconds of SFT, GRPO and evaluation, with os.getloadavg() at the end of the run.

    One torch thread: on an idle machine the two columns agree; on a busy one the wall clock grows.
    """
    s, c = run.seconds, run.cpu_seconds
    rows = [[label, f"{s.get(key, 0):.1f} s", f"{c.get(key, 0):.1f} s"]
            for label, key in (("SFT", "sft"), ("GRPO", "grpo"), ("评估（4 次，各 n 题）", "eval"))]
    rows.append(["load average (1, 5, 15 min)", ", ".join(f"{x:.2f}" for x in run.loadavg), None])
    return markdown_table(["阶段", "墙钟时间", "CPU 时间"], rows, ["", "r", "r"])
