"""What each ablation section of the page shows under its per-seed table, as Markdown (it wraps on a book page, where
printed lines would be cut): the verdicts, and the per-seed numbers behind each section's explanation."""
from __future__ import annotations

import statistics

from agentrl_ref.agent.parts import reference_part
from agentrl_ref.agent.vocab import ANSWER_CLOSE as END
from agentrl_ref.teaching.ex7_agent_grpo.tables import fmt
from agentrl_ref.teaching.ex7_agent_grpo.verdicts import comparison_verdicts
from agentrl_ref.teaching.shared.md_table import markdown_table


def _history_mean(run, key: str) -> float:
    """The mean of `key` over a run's training steps (NaN if a step lacks it)."""
    return sum(row.get(key, float("nan")) for row in run.history) / len(run.history)


def staleness_details(abl) -> str:
    """Per seed and arm: simulated throughput, steps before which the trainer waited (the first one included), mean
    version lag, clipped share, approx KL."""
    rows = []
    for seed in abl.seeds:
        for i, arm in enumerate(("stale0", "stale2")):
            r = abl.runs[arm, seed]
            s, h = r.summary, r.history
            clip, kl = _history_mean(r, "clip_frac"), _history_mean(r, "approx_kl")
            rows.append([str(seed) if i == 0 else None, r.label, f"{s['throughput']:.0f}",
                         f"{s['steps_waited']} / {len(h)}", f"{s['mean_staleness']:.2f}", f"{clip:.4f}", f"{kl:.1e}"])
    return markdown_table(["种子", "臂", "吞吐（条轨迹/模拟秒）", "trainer 等过批次的步数（含第 0 步）", "平均版本差",
                           "被裁剪的 token 比例", "近似 KL"], rows, ["r", "", "r", "r", "r", "r", "r"])


def cost_model_line(abl, arm: str = "stale0") -> str:
    """The cost model's seconds per step for generation and training in `arm` (all seeds), beside the CPU seconds the
    same work measured in this run (which go into no verdict), and the ceiling (t_gen + t_train) / max(...) of each."""
    from agentrl_ref.agent.throughput import ceiling

    runs = abl.runs_of(arm)
    steps = sum(len(r.history) for r in runs)
    n = runs[0].config.n_workers  # rollout devices on the simulated clock: they share each step's generation
    model = {k: sum(r.work[k] for r in runs) / steps for k in ("gen_cost", "train_cost")}
    measured = {k: sum(r.work[k] for r in runs) / steps for k in ("gen_seconds", "train_seconds")}
    return (f"成本模型（`agentrl_ref/agent/schedule.py`）给 {runs[0].label} 这一臂每步的生成 "
            f"{model['gen_cost']:.3f} 模拟秒（由 {n} 个 rollout 设备分担，每个设备 {model['gen_cost'] / n:.3f}）、"
            f"训练 {model['train_cost']:.3f} 模拟秒，两者完全重叠时的上限是 "
            f"{ceiling(model['gen_cost'], model['train_cost'], devices=n):.2f} 倍；这次运行里同样的工作实测的 CPU "
            f"时间是生成 {measured['gen_seconds']:.3f} s、训练 {measured['train_seconds']:.3f} s（上限 "
            f"{ceiling(measured['gen_seconds'], measured['train_seconds'], devices=n):.2f} 倍）。"
            "实测的数随机器和负载变，"
            "不进入任何判断；模拟时钟只用成本模型，所以上面的判断每次重跑都一样。")


def cosine_details(abl, shortest: int) -> str:
    """Per seed (cosine on): correct answers, how many are well formatted, how many have the shortest well-formatted
    length, and the correct ones that are not well formatted (the verifier reads only the box)."""
    format_reward = reference_part("format_reward")
    rows = []
    for seed in abl.seeds:
        after = abl.runs["baseline", seed].after
        right = [e.answer_text for e, c in zip(after.episodes, after.correct) if c]
        formatted = [text for text in right if format_reward(text) == 1.0]
        loose = [text for text in right if format_reward(text) != 1.0]
        rows.append([str(seed), str(len(right)), str(len(formatted)),
                     str(sum(len(text) == shortest for text in formatted)), str(len(loose)),
                     f"{sum(map(len, loose)) / len(loose):.1f}" if loose else "—"])
    return markdown_table(["种子", "答对", "其中格式合格", f"正好 {shortest} 个字符（最短的合格写法）",
                           "格式不合格但答对", "它们的平均字符数"], rows, ["r"] * 6)


def credit_details(abl) -> tuple[str, str | None]:
    """Per seed (last token only): how the answers that lost the format broke, and the tool-call rate after GRPO of
    both arms; then one answer that went on after its first </answer> (None if there is none)."""
    format_reward = reference_part("format_reward")
    rows, example = [], None
    for seed in abl.seeds:
        ev = abl.runs["last_token", seed].after
        broken = [e for e in ev.episodes if format_reward(e.answer_text) == 0.0]
        cut = [e for e in broken if e.truncated]
        went_on = [e for e in broken if not e.truncated and END in e.answer_text
                   and e.answer_text.index(END) + len(END) < len(e.answer_text)]
        example = example or next((e.answer_text for e in went_on), None)
        rows.append([str(seed), fmt(ev.format_rate), f"{ev.mean_response_tokens:.1f}", str(len(broken)),
                     str(len(went_on)), str(len(cut)), str(len(broken) - len(went_on) - len(cut)),
                     fmt(abl.runs["baseline", seed].after.tool_rate), fmt(ev.tool_rate)])
    table = markdown_table(["种子", "格式合格", "平均回复 token 数", "格式不合格", f"其中第一个 `{END}` 之后还在写",
                            "写到长度上限被截断", "另有毛病", "工具调用率：默认", "工具调用率：只给最后一个"],
                           rows, ["r"] * 9)
    return table, example


def largest_gap(abl, comparisons) -> str:
    """Which accuracy comparison differs most, averaged over the seeds."""
    from agentrl_ref.teaching.ex7_agent_grpo.tables import ABLATION_ZH, ARM_ZH

    gaps = {(name, a, b): sum(abs(d.diff) for d in abl.compare(a, b)) / len(abl.seeds) for name, _, a, b in comparisons}
    name, a, b = max(gaps, key=gaps.get)
    return (f"图里各组比较中，各种子平均差距最大的是\"{ABLATION_ZH[name]}\"一组的 {ARM_ZH[b]} 对 {ARM_ZH[a]}"
            f"（{100 * gaps[name, a, b]:.1f} 个百分点）。")


def length_details(abl) -> str:
    """Per seed (token mean arm): how many tokens the policy wrote per trajectory, and how much that varies."""
    rows = []
    for seed in abl.seeds:
        lengths = [e.assistant_tokens() for e in abl.runs["baseline", seed].after.episodes]
        mean, spread = statistics.fmean(lengths), statistics.pstdev(lengths)
        rows.append([str(seed), f"{mean:.1f}", f"{spread:.1f}", str(min(lengths)), str(max(lengths))])
    return markdown_table(["种子", "每条轨迹策略写的 token 数：平均", "标准差", "最少", "最多"], rows, ["r"] * 5)


def cliff_components(abl, reward_fn) -> tuple[str, dict[str, int]]:
    """At the short SFT's start, per seed: the reward's terms averaged over the episodes that called the tool and
    those that did not; and on how many seeds the tool callers score lower on the format and the length term."""
    rows, behind = [], {"fmt": 0, "cos_len": 0}
    for seed in abl.seeds:
        means = {}
        for called in (True, False):
            group = [reward_fn(e.answer_text, e.problem.answer)
                     for e in abl.starts["short_sft", seed].episodes if bool(e.tool_calls) == called]
            keys = ("fmt", "acc", "cos_len", "total")
            means[called] = {k: sum(x[k] for x in group) / max(1, len(group)) for k in keys}
            m = means[called]
            rows.append([str(seed) if called else None, "调用工具" if called else "不调用工具", str(len(group)),
                         f"{m['fmt']:.3f}", f"{m['acc']:.3f}", f"{m['cos_len']:+.3f}", f"{m['total']:+.3f}"])
        for key in behind:
            behind[key] += means[True][key] < means[False][key]
    table = markdown_table(["种子", "起点上", "条数", "格式分", "正确", "长度项", "总奖励"], rows,
                           ["r", "", "r", "r", "r", "r", "r"])
    return table, behind


def offpolicy_details(abl, last_steps: int = 4) -> str:
    """Per seed and arm of the off-policy ablation: the mean version lag of the trained data, how far the weights being
    trained were from the behaviour policy (k3 KL, mean over steps), how far each batch's four updates moved the policy
    (k3 KL between the weights before and after the batch, on its tokens), the share of tokens the loss clipped, the
    training batches' accuracy over the last steps (sampled by older weights) and the held-out accuracy after GRPO;
    for the decoupled arm, the share of tokens its importance-weight cap left out and the effective share of the kept
    weights. Then the lag of every step, and, counted over the seeds: which arm was furthest from its behaviour
    policy, which moved furthest and least per batch, which clipped most, and where the last training batches looked
    better than the weights trained on them."""
    from agentrl_ref.agent.arms import ABLATIONS
    from agentrl_ref.agent.grpo_config import DECOUPLED_WEIGHT_CAP
    from agentrl_ref.teaching.ex7_agent_grpo.tables import ARM_ZH

    arms = ABLATIONS["offpolicy"].arms

    def mean(arm, seed, key):
        return _history_mean(abl.runs[arm, seed], key)

    def tail(arm, seed):
        h = abl.runs[arm, seed].history[-last_steps:]
        return sum(r["accuracy"] for r in h) / len(h)

    rows = []
    for seed in abl.seeds:
        for i, arm in enumerate(arms):
            decoupled = arm == "stale_decoupled"
            rows.append([str(seed) if i == 0 else None, ARM_ZH[arm], f"{mean(arm, seed, 'staleness'):.2f}",
                         f"{mean(arm, seed, 'behave_kl'):.3f}", f"{mean(arm, seed, 'step_kl'):.4f}",
                         fmt(mean(arm, seed, "clip_frac")),
                         fmt(mean(arm, seed, "capped_share")) if decoupled else "—",
                         f"{mean(arm, seed, 'weight_ess'):.2f}" if decoupled else "—",
                         fmt(tail(arm, seed)), fmt(abl.runs[arm, seed].after.accuracy)])
    table = markdown_table(["种子", "臂", "平均版本差", "当前权重与行为策略的近似 KL", "每一批 4 次更新前后的近似 KL",
                            "被裁剪的 token 比例", f"权重超过 {DECOUPLED_WEIGHT_CAP:g} 被去掉的 token",
                            "留下的权重的有效比例", f"最后 {last_steps} 步训练批的准确率", "GRPO 后留出集准确率"], rows,
                           ["r", "", "r", "r", "r", "r", "r", "r", "r", "r"])
    n = len(abl.seeds)

    def firsts(key, pick=max):
        chosen = [pick(arms, key=lambda arm: mean(arm, seed, key)) for seed in abl.seeds]
        return "，".join(f"{ARM_ZH[arm]} {chosen.count(arm)} 个" for arm in arms if chosen.count(arm))

    lags = {tuple(abl.runs[arm, seed].lags) for arm in arms for seed in abl.seeds}
    if len(lags) == 1:
        lag = "、".join(f"{x:g}" for x in next(iter(lags)))
        lag_line = f"每一步训练批的平均版本差（三臂、{n} 个种子都一样）：{lag}"
    else:
        lag_line = "每一步训练批的平均版本差：" + "；".join(
            f"{ARM_ZH[arm]} 种子 {seed}：" + "、".join(f"{x:g}" for x in abl.runs[arm, seed].lags)
            for arm in arms for seed in abl.seeds)
    closest_best = sum(min(arms, key=lambda arm: mean(arm, s, "behave_kl"))
                       == max(arms, key=lambda arm: abl.runs[arm, s].after.accuracy) for s in abl.seeds)
    looked_better = "，".join(
        f"{ARM_ZH[arm]} {sum(tail(arm, s) > abl.runs[arm, s].after.accuracy for s in abl.seeds)} / {n}" for arm in arms)
    counts = [lag_line,
              f"当前权重离行为策略最远（近似 KL 最大）的一臂，{n} 个种子里：{firsts('behave_kl')}",
              f"每一批把策略推得最远（更新前后的近似 KL 最大）的一臂：{firsts('step_kl')}；"
              f"最近的一臂：{firsts('step_kl', min)}",
              f"被裁剪的 token 比例最高的一臂，{n} 个种子里：{firsts('clip_frac')}",
              f"离行为策略最近（近似 KL 最小）的一臂同时也是留出集上最准的一臂：{n} 个种子里有 {closest_best} 个",
              f"最后 {last_steps} 步训练批的准确率高于 GRPO 后留出集准确率的种子：{looked_better}"]
    return table + "\n\n" + "\n".join(f"- {line}" for line in counts)


def against_the_paper(abl) -> str:
    """One sentence: what the decoupled-against-behaviour verdict says next to the AReaL paper, which reports the
    decoupled objective keeping its accuracy under staleness where PPO against the behaviour policy loses it."""
    verdict = comparison_verdicts(abl, "offpolicy")[0]  # accuracy: decoupled against the behaviour ratio
    if verdict.kind == "agree":
        return ("这几个种子上解耦 PPO 比对行为策略取比值更准：和 AReaL 论文一致。" if verdict.sign > 0 else
                "这几个种子上解耦 PPO 比对行为策略取比值更差，而且超出了种子之间的波动和评估噪声："
                "这和 AReaL 论文的结论相反。")
    if verdict.kind == "lean":
        return ("方向和 AReaL 论文一致（解耦 PPO 更准），但没有超出种子之间的波动和评估噪声：不是定论。"
                if verdict.sign > 0 else
                "方向和 AReaL 论文相反（解耦 PPO 更差），但没有超出种子之间的波动和评估噪声：不是定论，"
                "也没有重现论文报告的好处。")
    return "这几个种子上没有重现 AReaL 论文报告的好处（上面的判断没有给出解耦 PPO 更准的结论）。"


def decoupled_check(abl, arm: str = "stale_decoupled") -> str:
    """The numbers the page's hypothesis about the decoupled arm predicts, over the seeds: how far the weights being
    trained are from the behaviour policy (k3 KL per token, beside the k3 of a token sitting on the clip range's edge),
    the share of tokens the importance-weight cap left out, and the effective share of the kept weights."""
    import math

    from agentrl_ref.agent.grpo_config import DECOUPLED_WEIGHT_CAP

    runs = abl.runs_of(arm)
    kl = [_history_mean(r, "behave_kl") for r in runs]
    capped = [_history_mean(r, "capped_share") for r in runs]
    ess = [_history_mean(r, "weight_ess") for r in runs]
    eps = runs[0].config.clip_eps

    def k3(ratio):
        return ratio - 1 - math.log(ratio)

    def span(values, form):
        low, high = format(min(values), form), format(max(values), form)
        return low if low == high else f"{low} 到 {high}"

    return (f"{runs[0].label}一臂，{len(runs)} 个种子上：当前权重与行为策略的近似 KL 平均每个 token "
            f"{span(kl, '.2f')} nat"
            f"（对照：概率比正好在裁剪边界 1 ± {eps:g} 上的一个 token，k3 只有 {k3(1 + eps):.3f} 到 "
            f"{k3(1 - eps):.3f}）；权重超过 {DECOUPLED_WEIGHT_CAP:g} 被去掉的 token 占 {span(capped, '.1%')}；"
            f"留下的权重的有效比例 {span(ess, '.2f')}（1 表示权重都一样大）。")
