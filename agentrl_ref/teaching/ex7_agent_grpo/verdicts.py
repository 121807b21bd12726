"""The verdicts the capstone page prints, in one place: what per-seed differences support (agent/verdicts.py's paired
t-test across seeds) as one computed Chinese sentence, for one comparison (seed_verdict) or for every comparison of
an ablation (comparison_verdicts, verdicts_markdown).

    cmp = paired(seeds, a_per_seed, b_per_seed)     # agent/verdicts.py
    seed_verdict(cmp, "准确率", "屏蔽", "也训练")     # a SeedVerdict: its kind and one sentence, never typed by hand
    verdicts_markdown(abl, "tool_mask")             # one bullet per comparison of an ablation

The kinds (SeedVerdict.kind) are described in agent/verdicts.py. (Not grader/grade/verdict.py, which judges a
student's notebook.)
"""
from __future__ import annotations

from dataclasses import dataclass

from agentrl_ref.agent.arms import ABLATION_SPECS
from agentrl_ref.agent.verdicts import ALPHA, NOISE_Z, AcrossSeeds, SeedDiff, across_seeds, sign_chance
from agentrl_ref.teaching.ex7_agent_grpo.tables import METRICS, arm_zh


@dataclass(frozen=True)
class SeedVerdict:
    kind: str     # "agree" | "lean" | "noise" | "disagree" | "no_se" | "single"
    sign: int     # +1: B above A on every seed, -1: below, 0: no common direction
    text: str
    test: AcrossSeeds | None = None


def _p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def seed_verdict(diffs: list[SeedDiff], metric: str, a_label: str, b_label: str, *, unit: str = "pct",
          higher: str = "高", lower: str = "低") -> SeedVerdict:
    """The verdict of arm B against arm A over the seeds in diffs, as one sentence (the kinds: see the module)."""
    n = len(diffs)
    if n == 0:
        raise ValueError("no seeds to judge")
    # quoted, with spaces outside the quotes: a browser may not break a line next to a straight quote, and
    # '是"max_staleness=2"比"max_staleness=0"短' would be one unbreakable run, wider than a phone
    a_label, b_label = f'"{a_label}"', f'"{b_label}"'
    signs = [(d.diff > 0) - (d.diff < 0) for d in diffs]
    spread = _range(diffs, unit)
    if any(d.se is None for d in diffs):
        return SeedVerdict("no_se", 0, f"{metric}：{b_label} 与 {a_label} 之差 {spread}；这个量没有标准误，"
                                   "不知道评估噪声有多大，所以只列出数字，不下判断。")
    if n == 1:  # e.g. AGENTRL_CAPSTONE_SEEDS=0: a number, not a verdict
        d = diffs[0]
        noise = "，超出评估噪声" if d.beyond_noise else "，在评估噪声之内"
        return SeedVerdict("single", signs[0], f"{metric}：只有 1 个种子，{b_label} 与 {a_label} 之差 {spread}{noise}："
                                           "一个种子说明不了训练本身的波动，不下结论。")
    test = across_seeds(diffs)
    mean = f"平均 {_number(test.mean, unit)} ± {_number(NOISE_Z * test.se, unit, signed=False)}{UNITS[unit]}"
    same = signs[0] != 0 and all(s == signs[0] for s in signs)
    if test.p < ALPHA and test.mean != 0:
        sign = 1 if test.mean > 0 else -1
        word = higher if sign > 0 else lower
        along = signs.count(sign)
        who = (f"{n} 个种子全部是 {b_label} 比 {a_label} {word}" if along == n else
               f"{n} 个种子里 {along} 个是 {b_label} 比 {a_label} {word}，{n - along} 个不是")
        return SeedVerdict("agree", sign, f"{metric}：{who}（差 {spread}，{mean}），"
                                      f"平均差超出了种子之间的波动和评估噪声（配对 t 检验，{_p_text(test.p)}）。", test)
    if all(not d.beyond_noise for d in diffs):
        if all(d.diff == 0 for d in diffs):
            return SeedVerdict("noise", 0, f"{metric}：{n} 个种子上 {b_label} 与 {a_label} 的结果完全相同。", test)
        return SeedVerdict("noise", 0, f"{metric}：{n} 个种子上 {b_label} 与 {a_label} 之差（{spread}）都在评估噪声"
                                   f"（±{NOISE_Z:g} 个标准误）之内：这个规模上看不出差别。", test)
    if same:
        word = higher if signs[0] > 0 else lower
        return SeedVerdict("lean", signs[0], f"{metric}：{n} 个种子都是 {b_label} 比 {a_label} {word}（差 {spread}，"
                                         f"{mean}），但平均差没有超出种子之间的波动和评估噪声"
                                         f"（配对 t 检验，{_p_text(test.p)}；"
                                         f"两臂毫无差别时，{n} 个种子方向碰巧一致的概率也有 {sign_chance(n):.0%}）："
                                         "是倾向，不是定论。", test)
    up, down = signs.count(1), signs.count(-1)
    zero = n - up - down
    parts = [f"{up} 个种子 {b_label} 更{higher}", f"{down} 个更{lower}"] + ([f"{zero} 个相同"] if zero else [])
    return SeedVerdict("disagree", 0, f"{metric}：种子之间方向不一致（{'，'.join(parts)}；差 {spread}）："
                                  "这个规模上得不出结论。", test)


def _number(value: float, unit: str, signed: bool = True) -> str:
    sign = "+" if signed else ""
    if unit == "pct":
        return f"{100 * value:{sign}.1f}"
    if unit == "nat":  # entropies (exercise 11): a tenth of a nat is a large difference
        return f"{value:{sign}.3f}"
    return f"{value:{sign}.2f}"


UNITS = {"pct": " 个百分点", "s": " 模拟秒", "num": "", "nat": " nat"}


def _range(diffs: list[SeedDiff], unit: str) -> str:
    """'-10.2 到 -3.7 个百分点' (or one value when all seeds give the same difference)."""
    lo, hi = min(d.diff for d in diffs), max(d.diff for d in diffs)
    low, high = _number(lo, unit), _number(hi, unit)
    text = low if low == high else f"{low} 到 {high}"
    return text + UNITS[unit]


def comparison_verdicts(abl, name: str) -> list:
    """The SeedVerdict of every comparison of ablation `name`, computed from abl's per-seed results."""
    out = []
    for metric, a, b in ABLATION_SPECS[name].comparisons:
        label, unit = METRICS[metric]
        if metric == "start_tool_rate":  # one arm against its own start
            out.append(seed_verdict(abl.compare(a, b, metric), f"{arm_zh(name, b)}：{label}", "GRPO 之前", "GRPO 之后",
                             unit=unit))
        else:
            higher, lower = ("长", "短") if metric == "sim_seconds" else ("高", "低")
            out.append(seed_verdict(abl.compare(a, b, metric), label, arm_zh(name, a), arm_zh(name, b), unit=unit,
                             higher=higher, lower=lower))
    return out


def verdicts_markdown(abl, name: str) -> str:
    """One bullet per computed verdict of ablation `name`."""
    return "\n".join(f"- **判断**：{verdict.text}" for verdict in comparison_verdicts(abl, name))
