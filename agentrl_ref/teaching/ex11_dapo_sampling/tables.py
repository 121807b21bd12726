"""What exercise 11's page prints about its runs: the arms' table, what the clip cut, where dynamic sampling's samples
went, the verdicts (the capstone page's paired t-test across seeds) and two computed paragraphs; every number comes
from the study it is given (agent/dapo_arms.py).

    arms_table(study)         Markdown: held-out accuracy and entropy per arm and seed, steps, samples drawn
    clip_table(study)         Markdown: the shares cut at each bound, the old probability of the tokens cut at the top
    sampling_table(study)     Markdown: per step, what the plain and the dynamic arm drew and kept
    verdicts_markdown(study)  Markdown bullets: one computed sentence per comparison (DAPO_COMPARISONS)
    clip_summary(study), sampling_summary(study)    one computed paragraph each
"""
from __future__ import annotations

import math

from agentrl_ref.agent.dapo_arms import ARM_LABELS, DAPO_COMPARISONS, EQUAL_COST, DAPOStudy
from agentrl_ref.teaching.ex7_agent_grpo.verdicts import seed_verdict
from agentrl_ref.teaching.shared.md_table import markdown_table

METRIC_LABELS = {"accuracy": ("留出题准确率（温度 1）", "pct"), "entropy": ("留出题上的平均 token 熵", "nat")}
ARMS_SHOWN = ("symmetric", "clip_higher", "dynamic", EQUAL_COST)


def _mean(values) -> float:
    values = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
    return sum(values) / len(values) if values else float("nan")


def _sum(rows, key) -> float:
    return sum(r[key] for r in rows)


def arms_table(study: DAPOStudy) -> str:
    seeds = study.seeds
    rows = [["SFT 之后（训练之前）", *[f"{study.before[s].accuracy:.1%}" for s in seeds],
             f"{_mean(study.before[s].accuracy for s in seeds):.1%}",
             f"{_mean(study.before[s].mean_entropy for s in seeds):.3f}", "", "", ""]]
    for arm in ARMS_SHOWN:
        runs = study.runs_of(arm)
        rows.append([ARM_LABELS[arm], *[f"{r.after.accuracy:.1%}" for r in runs],
                     f"{_mean(r.after.accuracy for r in runs):.1%}", f"{_mean(r.after.mean_entropy for r in runs):.3f}",
                     f"{_mean(len(r.history) for r in runs):.1f}", f"{_mean(r.samples for r in runs):.0f}",
                     f"{_mean(_sum(r.history, 'informative') / len(r.history) for r in runs):.1f}"])
    header = ["臂", *[f"种子 {s}" for s in seeds], "平均", "留出题 token 熵", "训练步数", "共抽样本",
              "每步训练的有信息的组"]
    return markdown_table(header, rows)


def _clip_stats(runs) -> dict[str, float]:
    rows = [row for r in runs for row in r.history if row["trained_tokens"]]
    return {"clip_high": _mean(row["clip_high"] for row in rows), "clip_low": _mean(row["clip_low"] for row in rows),
            "positive_p": _sum(rows, "positive_old_p") / max(_sum(rows, "positive_tokens"), 1.0),
            "cut_p": _sum(rows, "cut_old_p") / max(_sum(rows, "cut_tokens"), 1.0),
            "cut_tokens": _sum(rows, "cut_tokens"), "positive_tokens": _sum(rows, "positive_tokens")}


def clip_table(study: DAPOStudy) -> str:
    rows = []
    for arm in ("symmetric", "clip_higher"):
        c = _clip_stats(study.runs_of(arm))
        rows.append([ARM_LABELS[arm], f"{c['clip_high']:.2%}", f"{c['clip_low']:.2%}", f"{c['positive_p']:.3f}",
                     f"{c['cut_p']:.3f}"])
    header = ["臂", "在上界被截的 token（A > 0）", "在下界被截的 token（A < 0）", "A > 0 的 token 的旧概率（平均）",
              "其中在上界被截的（平均）"]
    return markdown_table(header, rows)


def _sampling(runs) -> dict[str, float]:
    rows = [row for r in runs for row in r.history]
    drawn = _sum(rows, "drawn_groups")
    informative = _sum(rows, "drawn_informative")
    kept = _sum(rows, "groups")
    return {"samples": _sum(rows, "drawn_samples") / len(rows), "draws": _sum(rows, "draws") / len(rows),
            "drawn": drawn, "kept": kept, "uninformative": (drawn - informative) / drawn,
            "surplus": (informative - _sum(rows, "informative")) / drawn, "trained_share": kept / drawn,
            "informative_trained": _sum(rows, "informative") / len(rows),
            "gave_up": sum(not row["full"] for row in rows), "steps": len(rows),
            "composite": _mean(row["informative_composite"] for row in rows)}


def sampling_table(study: DAPOStudy) -> str:
    rows = []
    for arm in ("clip_higher", "dynamic"):
        s = _sampling(study.runs_of(arm))
        rows.append([ARM_LABELS[arm], f"{s['draws']:.2f}", f"{s['samples']:.0f}", f"{s['informative_trained']:.1f}",
                     f"{s['uninformative']:.1%}", f"{s['surplus']:.1%}", f"{s['gave_up']} / {s['steps']}"])
    header = ["臂", "每步生成几批", "每步抽的样本", "每步训练的有信息的组", "抽到的组里全对或全错的",
              "有信息但凑满后多出来、没用上的", "到了上限还没凑满的步"]
    return markdown_table(header, rows)


def study_verdicts(study: DAPOStudy) -> list:
    out = []
    for metric, a, b in DAPO_COMPARISONS:
        label, unit = METRIC_LABELS[metric]
        out.append(seed_verdict(study.compare(a, b, metric), label, ARM_LABELS[a], ARM_LABELS[b], unit=unit))
    return out


def verdicts_markdown(study: DAPOStudy) -> str:
    return "\n".join(f"- **判断**：{v.text}" for v in study_verdicts(study))


def clip_summary(study: DAPOStudy) -> str:
    """What the upper bound cut, computed; the page's reading of the entropy verdict as a hypothesis."""
    sym, high = _clip_stats(study.runs_of("symmetric")), _clip_stats(study.runs_of("clip_higher"))
    entropy = study_verdicts(study)[0]
    text = (f"对称裁剪时，训练 token 里只有 {sym['clip_high']:.2%} 是 advantage 为正、比率越过 1.2 被截住的"
            f"（clip-higher 把上界挪到 1.28 以后是 {high['clip_high']:.2%}）；advantage 为负、在下界被截的占 "
            f"{sym['clip_low']:.2%}。在上界被截的 token 旧概率平均只有 {sym['cut_p']:.2f}，而所有 advantage 为正的 "
            f"token 平均是 {sym['positive_p']:.2f}：和 DAPO 的论证一致，上界拦住的是本来概率就不高的 token"
            f"（旧概率 p 的 token 比率最多到 1/p，p > 1/1.2 ≈ 0.83 的 token 根本碰不到上界）。")
    if entropy.kind == "agree" and entropy.sign > 0:
        text += "留出题上的熵也如 DAPO 所说，clip-higher 更高（见下面的判断）。"
    else:
        text += (f"但留出题上的熵没有因此变高（见下面的判断）。一个假设：这里被截的 token 旧概率平均 "
                 f"{sym['cut_p']:.2f}，是两三个选项之间的分岔，让好的那个多涨一点，分布反而更尖；DAPO 说的是长回答里"
                 "概率很低的探索性 token。检验它：按旧概率分桶，分别比较两臂在这些位置上的熵变化，"
                 "或者换一个有更多低概率好 token 的任务。")
    return text


def sampling_summary(study: DAPOStudy) -> str:
    """Where the dynamic arm's extra samples went, computed."""
    plain, dyn = _sampling(study.runs_of("clip_higher")), _sampling(study.runs_of("dynamic"))
    equal = study.runs_of(EQUAL_COST)
    return (f"不做动态采样时，每步训练的 {study.base.groups} 组里平均只有 {plain['informative_trained']:.1f} 组有信息，"
            f"其余全对或全错，advantage 为 0，却照样算进 token 平均的分母。动态采样每步平均生成 "
            f"{dyn['draws']:.2f} 批、{dyn['samples']:.0f} 个样本（不做时是 {plain['samples']:.0f} 个）：抽到的组里"
            f" {dyn['uninformative']:.1%} 全对或全错被丢掉，{dyn['surplus']:.1%} 有信息、但这一步已经凑满、也被丢掉"
            f"（verl 的 batch[:traj_bsz] 一样丢），真正进了训练的只有 {dyn['trained_share']:.1%}。"
            f"同样的抽样数下，动态采样那一臂只走了 {_mean(len(r.history) for r in equal):.1f} 步"
            f"（另外两臂各 {study.base.steps} 步）。用练习 7 的综合奖励（格式 + 正确性 + 长度）判断，抽到的组里"
            f" {dyn['composite']:.1%} 组内奖励不全相同，几乎不会被丢：按哪个量过滤（verl 的 filter_groups.metric）"
            "决定了动态采样丢掉什么。")
