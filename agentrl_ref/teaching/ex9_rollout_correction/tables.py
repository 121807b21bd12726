"""What exercise 9's page prints about its measurement: the gap table, the arms' table, and the verdicts (the capstone
page's paired t-test across seeds, teaching/ex7_agent_grpo/verdicts.py), every number from the study it is given.

    gap_table(study)          Markdown: the two low-precision samplers against the float32 trainer
    arms_table(study)         Markdown: held-out accuracy per arm and seed, how the weights were spread
    arm_verdicts(study)       Markdown bullets: one computed sentence per comparison
"""
from __future__ import annotations

from agentrl_ref.agent.verdicts import paired
from agentrl_ref.teaching.ex7_agent_grpo.verdicts import seed_verdict
from agentrl_ref.teaching.ex9_rollout_correction.mismatch_study import Study
from agentrl_ref.teaching.shared.md_table import markdown_table

ARM_ZH = {"matched": "同精度采样", "mismatched": "bf16 采样，不修正", "token_tis": "bf16 采样 + token 级 TIS",
          "sequence_mis": "bf16 采样 + sequence 级 MIS"}
SAMPLER_ZH = {"bf16": "bf16 副本", "fp8": "fp8 权重副本"}
COMPARISONS = (("matched", "mismatched"), ("mismatched", "token_tis"), ("mismatched", "sequence_mis"))


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def gap_table(study: Study) -> str:
    rows = []
    for name, gap in study.gaps.items():
        r = gap.report
        long = gap.longest
        rows.append([SAMPLER_ZH[name], f"{r['tokens']}", f"{_mean(gap.abs_diffs):.2e}", f"{r['max_abs_diff']:.3f}",
                     f"{r['k3_kl']:.1e}", f"{r['out_of_range']:.1%}", f"{long}"])
    return markdown_table(["采样器", "训练的 token", "平均 \\|Δ log p\\|", "最大 \\|Δ log p\\|", "k3 KL（每 token）",
                           "比率在 [0.5, 2] 之外", "最长的回答（token）"], rows)


def arms_table(study: Study) -> str:
    cfg = study.config
    rows = [["SFT 之后（GRPO 之前）", *[f"{_mean(study.before[s]):.1%}" for s in cfg.seeds],
             f"{_mean(_mean(study.before[s]) for s in cfg.seeds):.1%}", "", ""]]
    for arm in cfg.arms:
        runs = [study.runs[(arm, s)] for s in cfg.seeds]
        accuracy = [_mean(r.correct) for r in runs]
        rows.append([ARM_ZH[arm], *[f"{a:.1%}" for a in accuracy], f"{_mean(accuracy):.1%}",
                     f"{_mean(r.weight_mean for r in runs):.5f}", f"{_mean(r.weight_zero for r in runs):.2%}"])
    header = ["臂", *[f"种子 {s}" for s in cfg.seeds], "平均", "训练 token 的平均权重", "权重为 0 的 token"]
    return markdown_table(header, rows)


def arm_verdicts(study: Study) -> list:
    """One SeedVerdict per comparison (COMPARISONS), on held-out accuracy per problem, paired by seed."""
    seeds = list(study.config.seeds)
    out = []
    for a, b in COMPARISONS:
        diffs = paired(seeds, [study.runs[(a, s)].correct for s in seeds], [study.runs[(b, s)].correct for s in seeds])
        out.append(seed_verdict(diffs, "留出题准确率（温度 1）", ARM_ZH[a], ARM_ZH[b]))
    return out


def verdicts_markdown(study: Study) -> str:
    return "\n".join(f"- {v.text}" for v in arm_verdicts(study))


def gap_summary(study: Study) -> str:
    """One computed paragraph: how big the gap is at this scale and whether the corrections acted at all."""
    cfg = study.config
    bf16, fp8 = study.gaps["bf16"], study.gaps["fp8"]
    seq = bf16.seq_log_ratio[-1]
    mis_zero = _mean(study.runs[("sequence_mis", s)].weight_zero for s in cfg.seeds)
    tis_mean = _mean(study.runs[("token_tis", s)].weight_mean for s in cfg.seeds)
    acted = mis_zero > 0 or abs(tis_mean - 1) > 1e-3
    text = (f"bf16 副本给训练的 token 的 log-prob 平均只差 {_mean(bf16.abs_diffs):.1e}，"
            f"最大 {bf16.report['max_abs_diff']:.3f}；"
            f"一半的回答至少有 {bf16.lengths[-1]} 个训练 token，它们前 {bf16.lengths[-1]} 个 token 的序列级 "
            f"|log 比率| 平均是 {seq:.3f}"
            f"（比率约 {2.718281828 ** seq:.3f}）。fp8 权重的副本差得多一些"
            f"（最大 {fp8.report['max_abs_diff']:.3f}，k3 KL {fp8.report['k3_kl']:.1e}，是 bf16 的 "
            f"{fp8.report['k3_kl'] / max(bf16.report['k3_kl'], 1e-30):.0f} 倍），"
            f"但比率落在 [0.5, 2] 之外的 token 也只占 {fp8.report['out_of_range']:.1%}。")
    if acted:
        text += (f"训练时 sequence 级 MIS 丢掉了 {mis_zero:.2%} 的 token，token 级 TIS 的平均权重是 {tis_mean:.5f}。")
    else:
        text += (f"所以训练时两种修正几乎什么也没做：token 级 TIS 的平均权重是 {tis_mean:.5f}"
                 f"（cap = {cfg.cap:g} 从未触到），"
                 f"sequence 级 MIS 丢掉的 token 占 {mis_zero:.2%}。在这个规模上，差距小到修正无事可做，几个臂之间"
                 "的差别来自训练本身的波动：这是本页量到的结果，不是 TIS 和 MIS 没用的证据。框架们报告的问题出在"
                 "几千个 token 的回答、大模型和 MoE 上（IcePop 的报告讲的是 MoE），本页没有复现那样的规模。")
    return text
