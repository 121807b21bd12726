"""What exercise 10's page prints: the three answers on the simulated clock (a table and computed verdicts), the same
runs measured in the real two processes (a table and verdicts), and the cost model beside what this machine measured.
Every number comes from the study it is given; every verdict is the capstone's paired t-test across seeds
(teaching/ex7_agent_grpo/verdicts.py)."""
from __future__ import annotations

from agentrl_ref.agent.schedule import COST_MODEL
from agentrl_ref.teaching.ex7_agent_grpo.verdicts import seed_verdict
from agentrl_ref.teaching.ex10_partial_rollout.interrupt_study import LABELS, SHORT, RealStudy, Study
from agentrl_ref.teaching.shared.md_table import markdown_table

# (metric, label, unit, higher, lower, arm A, arm B): what the page judges on the simulated clock
SIM_COMPARISONS = (
    ("staleness", "每个训练 token 平均落后几个版本", "num", "多", "少", "wait", "continue"),
    ("throughput", "每模拟秒训练的轨迹", "num", "多", "少", "wait", "continue"),
    ("throughput", "每模拟秒训练的轨迹", "num", "多", "少", "wait", "abort"),
    ("time_accuracy", "同一模拟时刻的留出题准确率（按时间平均）", "pct", "高", "低", "wait", "continue"),
    ("time_accuracy", "同一模拟时刻的留出题准确率（按时间平均）", "pct", "高", "低", "wait", "abort"),
    ("final_accuracy", "训练同样步数之后的留出题准确率", "pct", "高", "低", "wait", "continue"),
    ("final_accuracy", "训练同样步数之后的留出题准确率", "pct", "高", "低", "wait", "abort"),
)
REAL_COMPARISONS = (("throughput", "每墙钟秒训练的轨迹（两个真实进程）", "wait", "continue"),
                    ("throughput", "每墙钟秒训练的轨迹（两个真实进程）", "wait", "abort"))


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def _per_seed(values, fmt: str) -> str:
    return " / ".join(format(v, fmt) for v in values)


def sim_table(study: Study) -> str:
    cfg = study.config
    seeds = cfg.seeds
    rows = []
    for i in cfg.interrupts:
        sims = [study.arms[i, s].sim for s in seeds]
        fresh = _mean(x.token_staleness.get(0, 0) / sum(x.token_staleness.values()) for x in sims)
        rows.append([LABELS[i], f"{_mean(x.seconds for x in sims):.3f}", f"{_mean(x.throughput for x in sims):.0f}",
                     f"{_mean(x.generated for x in sims):.0f} / {_mean(x.kept for x in sims):.0f}",
                     f"{_mean(x.mean_token_staleness for x in sims):.2f}（{fresh:.0%}）",
                     _per_seed([study.value(i, s, "time_accuracy") for s in seeds], ".1%"),
                     _per_seed([study.value(i, s, "final_accuracy") for s in seeds], ".1%")])
    header = ["做法", f"{cfg.steps} 步的模拟秒", "轨迹 / 模拟秒", "生成 / 留下的 token",
              "每 token 平均版本差（为 0 的占比）", "同一时刻的准确率（每个种子）",
              f"{cfg.steps} 步后的准确率（每个种子）"]
    before = _per_seed([_mean(study.before[s]) for s in seeds], ".1%")
    return (markdown_table(header, rows) + f"\n\n种子 {', '.join(map(str, seeds))}；前四列是几个种子的平均。SFT 之后、"
            f"GRPO 之前的准确率（每个种子）：{before}。")


def sim_verdicts(study: Study) -> list:
    out = []
    for metric, label, unit, higher, lower, a, b in SIM_COMPARISONS:
        out.append(seed_verdict(study.compare(a, b, metric), label, SHORT[a], SHORT[b], unit=unit, higher=higher,
                                lower=lower))
    return out


def sim_verdicts_markdown(study: Study) -> str:
    return "\n".join(f"- **判断**：{v.text}" for v in sim_verdicts(study))


def sim_summary(study: Study) -> str:
    """One computed paragraph: how much abort threw away, where continue switched, what the trainer waited."""
    cfg = study.config
    seeds = cfg.seeds
    wasted = _mean(study.value("abort", s, "wasted") for s in seeds)
    aborts = _mean(sum(c["aborts"] for c in study.arms["abort", s].sim.chunks) for s in seeds)
    at = [(time - c["began"]) / (c["end"] - c["began"]) for s in seeds for c in study.arms["continue", s].sim.chunks
          for _, _, time in c["switches"]]
    idle = {i: _mean(study.arms[i, s].sim.trainer_idle for s in seeds) for i in cfg.interrupts}
    text = f"abort 平均每次运行丢掉重来 {aborts:.1f} 块，多生成了留下的 token 的 {wasted:.0%}；"
    if at:
        text += (f"continue 有 {len(at)} 块（{len(seeds)} 个种子合计）在生成中途换了权重，平均在这一块的 "
                 f"{_mean(at):.0%} 处（按模拟时间）；")
    else:
        text += "continue 这次没有一块在生成中途遇上更新；"
    return text + "trainer 等数据的时间占比：" + "，".join(f"{SHORT[i]} {idle[i]:.0%}" for i in cfg.interrupts) + "。"


def real_table(real: RealStudy) -> str:
    cfg = real.config
    seeds = cfg.seeds
    rows = []
    for i in cfg.interrupts:
        runs = [real.runs[i, s] for s in seeds]
        ratio = _mean(real.runs[i, s].throughput / real.runs["wait", s].throughput for s in seeds)
        caught = f"{sum(r.aborts for r in runs)} 块丢掉重来" if i == "abort" else (
            f"{sum(r.switches for r in runs)} 块中途换权重" if i == "continue" else "—")
        rows.append([LABELS[i], _per_seed([r.throughput for r in runs], ".0f"), f"{ratio:.2f}",
                     f"{_mean(r.seconds for r in runs):.2f}",
                     f"{_mean(r.generated for r in runs):.0f} / {_mean(r.kept for r in runs):.0f}", caught,
                     f"{_mean(r.mean_token_staleness for r in runs):.2f}"])
    header = ["做法", "轨迹 / 墙钟秒（每个种子）", "相对 wait", "墙钟秒", "生成 / 留下的 token", "被更新赶上的块",
              "每 token 平均版本差"]
    load = max(r.loadavg for r in real.runs.values())
    return (markdown_table(header, rows) + f"\n\n后四列是几个种子的平均（被更新赶上的块是合计）；"
            f"开始前 load average {real.loadavg_before:.1f}，运行结束时最高 {load:.1f}。")


def real_verdicts_markdown(real: RealStudy) -> str:
    lines = []
    for metric, label, a, b in REAL_COMPARISONS:
        verdict = seed_verdict(real.compare(a, b, metric), label, SHORT[a], SHORT[b], unit="num", higher="多",
                               lower="少")
        lines.append(f"- **判断（实测）**：{verdict.text}")
    return "\n".join(lines)


def cost_lines(study: Study, real: RealStudy) -> str:
    """The cost model's seconds per step beside this machine's CPU seconds (the wait runs)."""
    cfg = study.config
    seeds = cfg.seeds
    sims = [study.arms["wait", s].sim for s in seeds]
    gen_model = _mean(sum(c["end"] - c["began"] for c in x.chunks) / len(x.history) for x in sims)
    train_model = _mean(sum(row["train_cost"] for row in x.history) / len(x.history) for x in sims)
    runs = [real.runs["wait", s] for s in seeds]
    gen_real = _mean(r.worker_cpu for r in runs) / cfg.steps
    train_real = _mean(r.trainer_cpu for r in runs) / cfg.steps
    prefill = COST_MODEL.prefill(cfg.prompts_per_step * cfg.group_size, 30)
    return (f"模拟时钟的成本模型：每步生成 {gen_model * 1000:.1f} 模拟毫秒、训练 {train_model * 1000:.1f} 模拟毫秒"
            f"（生成是训练的 {gen_model / train_model:.1f} 倍）；换一次权重重算 30 个位置的缓存 "
            f"{prefill * 1000:.1f} 模拟毫秒。这台机器上 wait 那几次实测：worker 每步 CPU {gen_real * 1000:.1f} ms、"
            f"trainer 每步 {train_real * 1000:.1f} ms（进程启动和收发也算在里面）。")
