"""Markdown tables for the notebook: before/after GRPO, ablations, seeds (labels may be Chinese)."""
from __future__ import annotations

import math

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


def ablation_table(results: dict) -> str:
    """One row per arm: starting copy rate, final sampled accuracy and tool rate, lengths, staleness, simulated time.

    "模拟用时" is schedule.replay()'s total: rollout workers and trainer on devices of their own.
    """
    rows = []
    for res in results.values():
        for i, arm in enumerate(res.arms):
            s = arm.summary
            start = fmt(arm.before.copy_rate) if arm.before is not None else "—"
            rows.append([res.name if i == 0 else None, arm.label, start, fmt(s["accuracy"]), fmt(s["tool_rate"]),
                         fmt(s["correct_answer_chars"], "num"), fmt(s["response_tokens"], "num"),
                         f"{s['mean_staleness']:.2f}", f"{s['sim_seconds']:.1f} s", str(s["steps_waited"])])
    header = ["消融", "设置", "起点复制率", "准确率（采样）", "工具调用率", "答对时答案字符数", "平均回复 token 数",
              "平均陈旧度", "模拟用时", "训练器等待步数"]
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
