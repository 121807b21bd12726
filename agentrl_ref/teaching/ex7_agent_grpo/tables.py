"""Markdown tables for the notebook: before/after GRPO, ablations per seed, the cliff (labels may be Chinese)."""
from __future__ import annotations

import math

from agentrl_ref.agent.arms import ARMS
from agentrl_ref.teaching.shared.md_table import markdown_table

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


# Chinese names for the ablations; the arms' names are arms.ARMS's labels (tables, verdicts and figures alike),
# without the "短 SFT，" the cliff's three arms share (their tables say it once)
ABLATION_ZH = {"tool_mask": "tool 结果", "staleness": "版本差上限", "cosine": "cosine 长度项",
               "credit": "advantage 分配", "loss_agg": "损失的聚合方式", "cliff": "悬崖：SFT 太短",
               "offpolicy": "旧数据的修正", "offpolicy_slow": "旧数据的修正，学习率 1/4"}
ARM_ZH = {arm: spec.label.removeprefix("短 SFT，") for arm, spec in ARMS.items()}
# the reference arm of each ablation, as the comparison names it
REFERENCE_ZH = {("tool_mask", "baseline"): "屏蔽 tool 结果（默认）", ("cosine", "baseline"): "cosine 项开（默认）",
                ("credit", "baseline"): "广播到每个训练 token（默认）",
                ("loss_agg", "baseline"): "整批 token 平均（默认）"}
# metric -> (Chinese name, unit of verdicts.seed_verdict)
METRICS = {"accuracy": ("留出集准确率", "pct"), "tool_rate": ("GRPO 之后的工具调用率", "pct"),
           "response_tokens": ("平均回复 token 数", "num"), "answer_chars": ("答对时最终回答的字符数", "num"),
           "sim_seconds": ("模拟用时", "s"),
           "time_accuracy": ("两臂都在训练的那段模拟时间里，最新发布版本的平均准确率", "pct"),
           "start_tool_rate": ("工具调用率", "pct")}


def arm_zh(name: str, arm: str) -> str:
    """The Chinese label of an arm inside ablation `name`."""
    return REFERENCE_ZH.get((name, arm), ARM_ZH[arm])


def _cell(value: float, unit: str) -> str:
    if unit == "pct":
        return fmt(value)
    return f"{value:.2f}" + (" s" if unit == "s" else "")


def _diff_cell(d, unit: str) -> str:
    scale = 100 if unit == "pct" else 1
    text = f"{scale * d.diff:+.1f}" if unit == "pct" else f"{d.diff:+.2f}"
    if d.se == 0.0 and unit == "s":
        return text + "（算出的，不是抽样）"
    if d.se is not None:
        text += f" ± {scale * 2 * d.se:.1f}" if unit == "pct" else f" ± {2 * d.se:.2f}"
    return text


def seed_table(abl, name: str) -> str:
    """Every comparison of ablation `name`, one row per seed: both arms and B − A ± 2 SE (the SE is paired over the
    held-out problems; missing where a metric has one number per seed)."""
    from agentrl_ref.agent.arms import ABLATION_SPECS

    rows = []
    for metric, a, b in ABLATION_SPECS[name].comparisons:
        if metric == "start_tool_rate":
            continue
        label, unit = METRICS[metric]
        for i, d in enumerate(abl.compare(a, b, metric)):
            what = f"{label.split('，')[-1]}：{arm_zh(name, b)} 对 {arm_zh(name, a)}" if i == 0 else None
            rows.append([what, str(d.seed), _cell(d.a, unit), _cell(d.b, unit), _diff_cell(d, unit)])
    header = ["比较", "种子", "对照的一臂", "改动的一臂", "差（±2 标准误）"]
    return markdown_table(header, rows, ["", "r", "r", "r", "r"])


def _mean(values) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else float("nan")


def cliff_table(abl, first_steps: int = 4) -> str:
    """The cliff in two tables: where GRPO started on each seed (the short SFT), and per seed and arm where the
    advantages came from in the first steps and the tool-call rate after GRPO."""
    from agentrl_ref.agent.arms import ABLATIONS

    arms = ABLATIONS["cliff"].arms
    starts = [[str(seed), fmt(r.before.tool_rate), fmt(r.before.copy_rate), fmt(r.before.accuracy)]
              for seed in abl.seeds for r in [abl.runs[arms[0], seed]]]
    rows = []
    for seed in abl.seeds:
        for i, arm in enumerate(arms):
            r = abl.runs[arm, seed]
            h = r.history[:first_steps]
            rows.append([str(seed) if i == 0 else None, ARM_ZH[arm], fmt(_mean(x["groups_acc_differ"] for x in h)),
                         fmt(_mean(x["groups_reward_differ"] for x in h)),
                         f"{_mean(x['tool_advantage'] for x in h):+.3f}", fmt(r.after.tool_rate)])
    start_table = markdown_table(["种子", "工具调用率", "复制率", "准确率"], starts, ["r", "r", "r", "r"])
    header = ["种子", "奖励", "正确性有差别的组", "总奖励有差别的组", "调用工具的回答的平均 advantage",
              "GRPO 后工具调用率"]
    arm_table = markdown_table(header, rows, ["r", "", "r", "r", "r", "r"])
    return (f"**GRPO 的起点**（短 SFT 之后，留出集采样）\n\n{start_table}\n\n"
            f"**三臂**（中间三列是 GRPO 前 {first_steps} 步的平均）\n\n{arm_table}\n\n"
            + _scaling_line(abl, arms[0], arms[2], first_steps) + _sign_line(abl, arms[2], first_steps))


def _scaling_line(abl, full: str, no_std: str, first_steps: int) -> str:
    """How the mean advantage of the tool-calling answers changes without the division by the group's std: its size
    against the full reward's, and on how many seeds its sign stays."""
    def tool_advantage(arm, seed):
        return _mean(x["tool_advantage"] for x in abl.runs[arm, seed].history[:first_steps])

    pairs = [(tool_advantage(full, s), tool_advantage(no_std, s)) for s in abl.seeds]
    ratios = [abs(b) / abs(a) for a, b in pairs if a]
    same = sum(1 for a, b in pairs if a * b > 0)
    size = (f"绝对值是{ARM_ZH[full]}时的 {min(ratios):.0%} 到 {max(ratios):.0%}" if ratios
            else f"{ARM_ZH[full]}时它是 0，无从比较大小")
    return (f"{ARM_ZH[no_std]}时，调用工具的回答的平均 advantage {size}；"
            f"{len(pairs)} 个种子中符号和{ARM_ZH[full]}时相同的有 {same} 个。")


def _sign_line(abl, arm: str, first_steps: int) -> str:
    """On how many seeds the arm's tool-calling answers got a mean advantage of at least 0 in the first steps and the
    tool-call rate still fell: seeds where that mean's sign does not explain the outcome."""
    fell = [s for s in abl.seeds
            if _mean(x["tool_advantage"] for x in abl.runs[arm, s].history[:first_steps]) >= 0
            and abl.runs[arm, s].after.tool_rate < abl.runs[arm, s].before.tool_rate]
    return (f"{ARM_ZH[arm]}一臂里，前 {first_steps} 步调用工具的回答平均 advantage 不为负、"
            "GRPO 之后工具调用率却比起点低的"
            f"种子：{len(abl.seeds)} 个中有 {len(fell)} 个。")


def reference_line(run, reference) -> str:
    """One line for a run that used the student's parts: where the reference would have ended from the same weights,
    and whether the student's run is within the evaluation noise of it (paired over the held-out problems)."""
    from agentrl_ref.agent.verdicts import NOISE_Z, paired_se

    if reference is None:
        return ""
    mine = run.after["sampled"]
    diff = mine.accuracy - reference.accuracy
    noise = NOISE_Z * paired_se(reference.correct, mine.correct)
    if mine.correct == reference.correct:
        return (f"同一份 SFT 权重、同样的 GRPO，参考实现训练后留出集准确率（采样）是 {fmt(reference.accuracy)}，"
                f"你的也是：{len(mine.correct)} 道留出题上对错逐题相同。")
    start = (f"同一份 SFT 权重、同样的 GRPO，参考实现训练后留出集准确率（采样）是 {fmt(reference.accuracy)}，"
             f"你的是 {fmt(mine.accuracy)}：差 {100 * diff:+.1f} 个百分点，")
    if abs(diff) <= noise:
        return start + f"在评估噪声（±{100 * noise:.1f}）之内。"
    return (start + f"超出了评估噪声（±{100 * noise:.1f}）。你的零件和参考实现的结果差得多；下面的图是你这次的训练，"
            "图下的文字却是按参考实现的训练写的。对照上面打印的零件来源，逐个换回参考实现，找出是哪一个。")


def timing_table(run) -> str:
    """Wall-clock and CPU seconds of SFT, GRPO and evaluation, with os.getloadavg() at the end of the run.

    One torch thread: on an idle machine the two columns agree; on a busy one the wall clock grows.
    """
    s, c = run.seconds, run.cpu_seconds
    rows = [[label, f"{s.get(key, 0):.1f} s", f"{c.get(key, 0):.1f} s"]
            for label, key in (("SFT", "sft"), ("GRPO", "grpo"),
                               (f"评估（4 次，各 {len(run.task.test)} 题）", "eval"))]
    rows.append(["load average (1, 5, 15 min)", ", ".join(f"{x:.2f}" for x in run.loadavg), None])
    return markdown_table(["阶段", "墙钟时间", "CPU 时间"], rows, ["", "r", "r"])


def throughput_table(real) -> str:
    """One row per max_staleness of measure_throughput: wall clock, per step, trajectories per second, the ratio to
    the synchronous run, the mean version lag, the trainer's idle share, and held-out accuracy (the newest version
    averaged over the time all runs trained, and the last version), with the load average at the end of each run."""
    accuracy = real.time_accuracy()
    rows = []
    for ms, r in sorted(real.results.items()):
        versions = real.versions[ms]
        rows.append([str(ms), f"{r.seconds:.2f} s", f"{r.step_seconds:.3f} s", f"{r.throughput:.0f}",
                     f"{real.ratio(ms):.2f}×", f"{r.mean_staleness:.2f}", fmt(r.trainer_idle), fmt(accuracy[ms]),
                     fmt(versions[-1].accuracy), f"{r.loadavg[0]:.2f}"])
    header = ["max_staleness", "墙钟", "每步墙钟", "轨迹 / 秒", "吞吐是同步的", "平均版本差", "trainer 等数据的时间",
              f"前 {real.horizon:.1f} s 最新版本的平均准确率", "最后一版的准确率", "load average"]
    return markdown_table(header, rows, ["r"] * len(header))
