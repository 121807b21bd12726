"""The book's benchmarks page, drawn from the benchmarks' records (bench/results/*.json, written by bench/record.py).

    import report                      # book/benchmarks.md puts bench/ on sys.path
    report.show("run")                 # where the record came from, its tables and figures; or how to make it

Every number the page shows is read from a record here: a section says which command wrote its record, at which
commit, on what machine and under what load; a record that does not exist yet is named with the command that makes
it. Tables are Markdown (the book renders them), figures are drawn for the book's column
(agentrl_ref.teaching.shared.page_figure) with Chinese text where a CJK font is installed (cjk.zh). The capstone's
ablation tables, verdicts and difference plot are the course's own functions (agentrl_ref.teaching.ex7_agent_grpo)
run on the recorded per-seed numbers (RecordedAblations), so each verdict is computed here, not copied.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"

# record -> (the make target that writes it, or None; the script), in the page's order
SOURCES = {
    "run": ("make bench", "bench/run.py"),
    "versus": ("make bench BASE=<提交>", "bench/versus.py"),
    "capstone-main": ("make bench", "bench/capstone.py"),
    "capstone-processes": ("make bench", "bench/capstone.py"),
    "capstone-ablations": ("make bench", "bench/capstone.py"),
    "capstone-offpolicy-lr": ("make bench", "bench/capstone.py"),
    "capstone-page": ("make bench", "bench/capstone.py"),
    "grading": ("make bench-grading", "bench/grading.py"),
    "sandbox-overhead": (None, "bench/sandbox_overhead.py"),
    "levels": ("make bench-grading", "bench/levels.py"),
    "serve-latency": ("make bench-serve", "bench/serve_latency.py"),
    "serve-junk": ("make bench-serve", "bench/serve_latency.py"),
    "page-weight": ("make bench-site", "bench/page_weight.py"),
    "suite-lanes": (None, "bench/suite_lanes.py"),
}


# ---------------------------------------------------------------- records

def load(name: str, folder: Path | None = None) -> dict | None:
    """The record `name` (bench/results/<name>.json), or None where no run has written it."""
    path = Path(folder or RESULTS) / f"{name}.json"
    if not path.is_file():
        return None
    rec = json.loads(path.read_text(encoding="utf-8"))
    if rec.get("name") != name or "data" not in rec:
        raise ValueError(f"{path} is not a benchmark record of {name!r}")
    return rec


def _loads(load: list[float]) -> str:
    return "/".join(f"{x:.2f}" for x in load)


def provenance(rec: dict) -> str:
    """One paragraph: the command, the commit, when, the machine, the versions and the load, all from the record."""
    m = rec["machine"]
    commit = (rec["commit"] or "（不在 git 里）")[:7]
    edits = rec["edited"]   # the paths that differed from the commit (older records: only whether any did)
    edited = ("" if not edits else "，工作区另有未提交的改动"
              + (f"（{'、'.join(f'`{e}`' for e in edits)}）" if isinstance(edits, list) else ""))
    when = dt.datetime.fromisoformat(rec["started"]).astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = " · ".join(x for x in (f"{m['system']} {m['kernel']}", m["cpu"], f"{m['cores']} 核",
                                      f"{m['memory_gb']:g} GB 内存" if m.get("memory_gb") else "",
                                      f"cgroup {m['cgroup']}") if x)
    versions = f"Python {rec['python']}" + (f"，torch {rec['torch']}" if rec.get("torch") else "")
    text = (f"**这一节的记录** `bench/results/{rec['name']}.json`：命令 `{rec['command']}`，提交 `{commit}`{edited}；"
            f"{when} 开始，用时 {rec['seconds']:.0f} 秒；{machine}；{versions}；load average（1/5/15 分钟）"
            f"运行前 {_loads(rec['load_before'])}，运行后 {_loads(rec['load_after'])}。")
    busy = max(rec["load_before"][0], rec["load_after"][0])
    if m.get("cores") and busy > m["cores"] / 2:
        text += (f" 1 分钟 load average 到过 {busy:.2f}（这台机器 {m['cores']} 个核）：当时还有别的程序在跑，"
                 "墙钟时间偏长，并排比较的两边也未必受到同样的影响。")
    return text


def missing(name: str) -> str:
    target, script = SOURCES[name]
    how = f"`{target}`（`{script}`）" if target else f"`python {script}`"
    space = "" if target else " "   # `make x`（`bench/x.py`）会写出 / `python bench/x.py` 会写出
    return (f"**这一节还没有记录**：运行 {how}{space}会写出 `bench/results/{name}.json`；提交它、重新构建网站以后，"
            "这里就是它的表和图。")


def table(header, rows, align="") -> str:
    from agentrl_ref.teaching.shared.md_table import markdown_table

    return markdown_table(header, rows, align)


def duration(seconds: float | None) -> str:
    """'1.7 µs', '27.16 ms', '1.68 s' (as bench/run.py prints), '—' for an unknown time."""
    if seconds is None:
        return "—"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def met(ok: bool) -> str:
    return "达到" if ok else "**没有达到**"


# ---------------------------------------------------------------- make bench: bench/run.py

def _run_groups(data: dict) -> list[tuple[str, dict[str, float]]]:
    """The batched rows: (what, {baseline: baseline time / ours}) per batched function and input."""
    groups: dict[str, dict[str, float]] = {}
    for r in data["rows"]:
        if r["benchmark"].startswith(("loss mask", "credit")):
            what = r["benchmark"]
            if what == "loss mask":
                what += " (spans)" if "spans" in r["case"] else " (role ids)"
            groups.setdefault(what, {})[r["baseline"]] = r["baseline_s"] / r["ours_s"]
    return list(groups.items())


def _case(r: dict) -> str:
    """The input of a row of bench/run.py, without what its table's title says."""
    return (r["case"].removeprefix("degenerate ").replace("200 KB degenerate: ", "200 KB 退化输入：")
            .replace(" (per call)", "（每次调用）").replace(" (per trajectory)", "（每条轨迹）"))


def run_markdown(rec: dict) -> str:
    d = rec["data"]
    rows = d["rows"]
    parts = [f"{d['torch_threads']} 个 torch 线程；时间是测量线程自己的 CPU 时间，本课实现取 {d['best_of']} 次里最好的"
             "一次，很慢的对照（种子页的正则在长输入上、math-verify）只量一次。"]
    for benchmark, title, baseline in (("format_reward", "格式奖励对种子页的回溯正则", "种子页的正则"),
                                       ("accuracy_reward", "accuracy_reward 对 math-verify", "math-verify")):
        mine = [r for r in rows if r["benchmark"] == benchmark]
        if mine:
            parts += [f"**{title}**", table(["输入", "本课实现", baseline, "倍数"],
                                            [[_case(r), duration(r["ours_s"]), duration(r["baseline_s"]),
                                              f"{r['baseline_s'] / r['ours_s']:,.1f}×"] for r in mine],
                                            ["", "r", "r", "r"])]
    batched: dict[str, dict] = {}
    for r in rows:
        if r["benchmark"].startswith(("loss mask", "credit")):
            what = r["benchmark"] + (("（spans）" if "spans" in r["case"] else "（role ids）")
                                     if r["benchmark"] == "loss mask" else "")
            batched.setdefault(what, {"ours": r["ours_s"], "size": ", ".join(r["case"].split(", ")[:2])})
            batched[what][r["baseline"]] = r["baseline_s"]
    if batched:
        names = [d["baselines"][k] for k in ("tensor", "lists", "row_torch")]
        cells = [[what, duration(b["ours"]), *(f"{duration(b[n])}（{b[n] / b['ours']:,.1f}×）" if n in b else "—"
                                                for n in names)] for what, b in batched.items()]
        size = next(iter(batched.values()))["size"]
        parts += [f"**批量的 loss mask 与 credit 对逐条样本的循环**（{size}；括号里是对照用时 / 批量用时）",
                  table(["函数", "批量", "Python 循环再转张量", "Python 循环，只有列表", "逐行调用 torch"], cells,
                        ["", "r", "r", "r", "r"])]
    buffer = [r for r in rows if r["benchmark"] == "rollout buffer"]
    if buffer:
        parts += ["**rollout buffer 对 asyncio.Queue**",
                  table(["输入", "本课的 buffer", "asyncio.Queue", "倍数"],
                        [[_case(r), duration(r["ours_s"]), duration(r["baseline_s"]),
                          f"{r['baseline_s'] / r['ours_s']:,.1f}×"] for r in buffer], ["", "r", "r", "r"])]
    version = {"math-verify": f" {d['math_verify']}" if d.get("math_verify") else ""}
    vrows = [[v["verifier"] + version.get(v["verifier"], ""), f"{v['agree']}/{v['rows']}", str(v["false_negatives"]),
              str(v["false_positives"]), duration(v["mean_seconds"])] for v in d["verifiers"]]
    parts += ["**答案写法表上的判定**（人工判定为准）",
              table(["验证器", "与人工一致", "漏判", "误判", "平均每次"], vrows, ["", "r", "r", "r", "r"])]
    if d["math_verify_differs"]:
        from agentrl_ref.teaching.ex2_verifiable_reward.verifier_table import NOTE_ZH  # as exercise 2 says them

        differs = table(["写法", "标准答案", "说明"],
                        [[f"`{x['completion'].replace(chr(10), ' ⏎ ')}`", f"`{x['gold']}`",
                          NOTE_ZH.get(x["note"], x["note"])] for x in d["math_verify_differs"]], ["", "", ""])
        parts.append(f"<details>\n<summary>math-verify 与人工判定不同的写法</summary>\n\n{differs}\n\n</details>")
    parts.append("**目标**\n\n" + "\n".join(f"- {line}" for line in run_targets(d)))
    return "\n\n".join(parts)


def run_targets(d: dict) -> list[str]:
    t = d["targets"]
    fmt = [r for r in d["rows"] if r["benchmark"] == "format_reward" and "degenerate" in r["case"]]
    biggest = max(fmt, key=lambda r: r["ours_s"]) if fmt else None
    acc = [r for r in d["rows"] if r["benchmark"] == "accuracy_reward" and "degenerate" in r["case"]]
    worst = max(acc, key=lambda r: r["ours_s"]) if acc else None
    growth = d["growth"]
    tensor = [ratios[d["baselines"]["tensor"]] for _, ratios in _run_groups(d) if d["baselines"]["tensor"] in ratios]
    lines = []
    if biggest:
        lines.append(f"format_reward 在最长的退化输入（{biggest['case'].removeprefix('degenerate ')}）上 "
                     f"{duration(biggest['ours_s'])}（目标 < {duration(t['format_max_s'])}）："
                     f"{met(biggest['ours_s'] < t['format_max_s'])}")
    if worst:
        lines.append(f"accuracy_reward 在最慢的退化输入（{worst['case'].split(': ', 1)[-1]}）上 "
                     f"{duration(worst['ours_s'])}（目标 < {duration(t['accuracy_max_s'])}）："
                     f"{met(worst['ours_s'] < t['accuracy_max_s'])}")
    if growth:
        lines.append("accuracy_reward 的输入长 4 倍时用时的倍数（线性约 4，平方约 16；目标 < "
                     f"{t['growth_max']:g}）：" + "，".join(f"`{g['unit']}` × n {g['ratio']:.1f}×" for g in growth)
                     + f"：{met(max(g['ratio'] for g in growth) < t['growth_max'])}")
    if tensor:
        lines.append(f"批量的 loss mask 与 credit 对“Python 循环再转成张量”：{min(tensor):,.1f}× 到 {max(tensor):,.1f}×"
                     f"（目标 ≥ {t['batched_min']:g}×）：{met(min(tensor) >= t['batched_min'])}")
    for key, what in (("lists", "对只返回列表的 Python 循环（不能直接替换：训练要的是张量）"),
                      ("row_torch", "对逐行调用 torch")):
        ratios = [r[d["baselines"][key]] for _, r in _run_groups(d) if d["baselines"][key] in r]
        if ratios:
            lines.append(f"批量的 loss mask 与 credit {what}：{min(ratios):,.1f}× 到 {max(ratios):,.1f}×（没有目标）")
    return lines


def plot_format_scaling(rec: dict):
    """format_reward on degenerate input of growing length: ours against the seed page's regex (log-log)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    from agentrl_ref.teaching.shared.cjk import zh
    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    rows = [r for r in rec["data"]["rows"] if r["benchmark"] == "format_reward" and r.get("n")]
    n = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.2), dpi=DPI)
    ax.plot(n, [r["baseline_s"] for r in rows], "o-", color="#c25a00",
            label=zh("种子页的正则", "seed page's regex"))
    ax.plot(n, [r["ours_s"] for r in rows], "o-", color="#1f4fbf",
            label=zh("本课的 format_reward", "our format_reward"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(n)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: duration(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(zh("退化输入的重复次数 n（对数坐标）", "repetitions n of the degenerate input (log)"))
    ax.set_ylabel(zh("每次调用的 CPU 时间（对数）", "CPU time per call (log)"))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(zh("格式奖励在退化输入上：输入越长，两者差得越远",
                    "format reward on degenerate input of growing length"), fontsize=10, loc="left")
    fig.tight_layout()
    return fig


def plot_batched(rec: dict):
    """Batched loss mask and credit: how many times faster than each per-sample loop (log x), one row per function."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    from agentrl_ref.teaching.shared.cjk import zh
    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    d = rec["data"]
    groups = _run_groups(d)
    names = [(d["baselines"]["tensor"], "#c25a00", zh("Python 循环再转张量", "Python loop -> tensor")),
             (d["baselines"]["lists"], "#7a3fb0", zh("Python 循环，只有列表", "Python loop, lists only")),
             (d["baselines"]["row_torch"], "#1b7f3b", zh("逐行调用 torch", "per-row torch loop"))]
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 1.2 + 0.55 * len(groups)), dpi=DPI)
    height = 0.26
    for k, (base, color, label) in enumerate(names):
        ys = [len(groups) - 1 - i + (1 - k) * height for i in range(len(groups))]
        ax.barh(ys, [ratios.get(base, 0.0) for _, ratios in groups], height=height, color=color, label=label)
    ax.set_yticks(range(len(groups) - 1, -1, -1), [what for what, _ in groups], fontsize=8)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.axvline(d["targets"]["batched_min"], color="#6b6b6b", linestyle="--", linewidth=1)
    ax.axvline(1, color="black", linewidth=0.8)
    ax.set_xlabel(zh(f"对照用时 / 批量用时（对数坐标；虚线：目标 {d['targets']['batched_min']:g} 倍）",
                     f"baseline time / batched time (log; dashed: target {d['targets']['batched_min']:g}x)"),
                  fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=3, frameon=False, borderaxespad=0.2)
    ax.set_title(zh("批量实现比逐条循环快多少倍", "how much faster the batched functions are"), fontsize=10,
                 loc="left", pad=22)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- make bench BASE=...: bench/versus.py

def versus_markdown(rec: dict) -> str:
    import statistics

    d = rec["data"]
    med = {side: statistics.median(x["cpu"] for x in runs) for side, runs in d["sides"].items()}
    rows = [[label, f"{med[side]:.2f}", "，".join(f"{x['cpu']:.2f}" for x in d["sides"][side]),
             pct(d["sides"][side][0]["accuracy"])]
            for label, side in ((f"这个提交（{d['head']}）", "this"), (f"提交 {d['base']}", "base"))]
    ratio = med["this"] / med["base"]
    same = len({x["accuracy"] for runs in d["sides"].values() for x in runs}) == 1
    return "\n\n".join([
        table(["提交", "CPU 秒（中位数）", "每一轮", "GRPO 后留出集准确率"], rows, ["", "r", "", "r"]),
        f"- 这个提交 / 提交 {d['base']}，CPU：{ratio:.3f}（目标 ≤ {d['target_ratio']:g}）："
        f"{met(ratio <= d['target_ratio'])}\n"
        f"- 两边做的是同一件事（每一轮的留出集准确率都相同）：{'是' if same else '**否**'}"])


# ---------------------------------------------------------------- make bench: bench/capstone.py

def capstone_main_markdown(rec: dict) -> str:
    d = rec["data"]
    rows = []
    for r in d["runs"]:
        s, c = r["seconds"], r["cpu_seconds"]
        rows.append([str(r["seed"]), f"{s['sft']:.1f} s（{c['sft']:.1f}）", f"{s['grpo']:.1f} s（{c['grpo']:.1f}）",
                     f"{pct(r['before_sampled']['accuracy'])} → {pct(r['after_sampled']['accuracy'])}",
                     f"{pct(r['before_greedy']['accuracy'])} → {pct(r['after_greedy']['accuracy'])}",
                     f"{pct(r['before_sampled']['tool_rate'])} → {pct(r['after_sampled']['tool_rate'])}",
                     pct(r["sft_copy_rate"]), _loads(r["load_after"])])
    return table(["种子", "SFT 墙钟（CPU）", "GRPO 墙钟（CPU）", "准确率（采样）", "准确率（贪心）",
                  "工具调用率（采样）", "SFT 后复制率", "结束时 load average"], rows, ["r"] * 7 + [""])


def capstone_processes_markdown(rec: dict) -> str:
    d = rec["data"]
    rows = [[str(r["max_staleness"]), f"{r['seconds']:.2f} s", f"{r['throughput']:.0f}", f"{r['ratio']:.2f}×",
             f"{r['mean_staleness']:.2f}", pct(r["trainer_idle"]), _loads(r["load_after"])] for r in d["runs"]]
    best = max((r for r in d["runs"] if r["max_staleness"]), key=lambda r: r["ratio"], default=None)
    t = d["transfer"]
    lines = [f"种子 {d['seed']} 的 SFT 权重上，GRPO {d['steps']} 步、每步 {d['batch_size']} 条轨迹；同步那次每步生成 "
             f"{d['t_gen']:.3f} CPU 秒、训练并发布权重 {d['t_train']:.3f} CPU 秒，上限 (t_gen + t_train) / max(…) 是 "
             f"{d['bound']:.2f}×（这么多步、算上流水线填满：{d['bound_steps']:.2f}×）。",
             table(["max_staleness", "墙钟", "轨迹 / 秒", "吞吐量 / 同步", "平均版本差", "trainer 等待",
                    "结束时 load average"], rows, ["r", "r", "r", "r", "r", "r", ""]),
             f"交一版权重（{t['bytes'] / 1024:.0f} KiB）给 fork 出来的 worker，两个进程的 CPU："
             f"共享内存 {1000 * t['cpu']['shared memory']:.2f} ms，管道传 state dict {1000 * t['cpu']['pipe']:.2f} ms；"
             f"墙钟往返 {1000 * t['wall']['shared memory']:.2f} ms 和 {1000 * t['wall']['pipe']:.2f} ms。"]
    if best:
        lines.append(f"- 目标：某个 max_staleness ≥ 1 的吞吐量至少是同步的 {d['target']:g} 倍（在空闲的核上）："
                     f"最好的是 max_staleness={best['max_staleness']}，{best['ratio']:.2f}×："
                     f"{met(best['ratio'] >= d['target'])}"
                     f"（运行前 load average {_loads(rec['load_before'])}）")
    return "\n\n".join(lines)


def plot_throughput(rec: dict):
    """Two processes: throughput against the synchronous run per max_staleness, beside the ceiling and the target."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.shared.cjk import zh
    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    d = rec["data"]
    runs = d["runs"]
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.0), dpi=DPI)
    xs = range(len(runs))
    ax.bar(xs, [r["ratio"] for r in runs], width=0.55, color="#1f4fbf")
    for x, r in zip(xs, runs):
        ax.annotate(f"{r['ratio']:.2f}×", (x, r["ratio"]), xytext=(0, 3), textcoords="offset points", ha="center",
                    fontsize=8)
    lines = [(d["bound"], "#c25a00", "-", zh("上限", "ceiling")), (d["target"], "#6b6b6b", "--", zh("目标", "target"))]
    for y, color, style, label in lines:
        ax.axhline(y, color=color, linestyle=style, linewidth=1.2, label=f"{label} {y:.2f}×")
    ax.set_xticks(list(xs), [str(r["max_staleness"]) for r in runs])
    ax.set_xlabel("max_staleness")
    ax.set_ylabel(zh("吞吐量 / 同步", "throughput / synchronous"))
    ax.set_ylim(0, max([d["bound"], d["target"]] + [r["ratio"] for r in runs]) * 1.18)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(zh("两个进程：每个 max_staleness 的吞吐量相对同步运行",
                    "two processes: throughput against synchronous"), fontsize=10, loc="left")
    fig.tight_layout()
    return fig


class RecordedAblations:
    """What the course's ablation tables, verdicts and plot_differences read from agentrl_ref.agent.Ablations
    (its seeds and compare(a, b, metric)), from a record's per-seed numbers."""

    def __init__(self, data: dict):
        from agentrl_ref.agent.verdicts import SeedDiff

        self.seeds = tuple(data["seeds"])
        self._diffs = {(c["metric"], c["a"], c["b"]): [SeedDiff(s["seed"], s["a"], s["b"], s["se"]) for s in c["seeds"]]
                       for comparisons in data["ablations"].values() for c in comparisons}

    def compare(self, a: str, b: str, metric: str = "accuracy"):
        return self._diffs[metric, a, b]


def ablation_markdown(data: dict, name: str) -> str:
    """One ablation: its verdicts, computed here from the recorded numbers, and its per-seed table folded."""
    from agentrl_ref.teaching.ex7_agent_grpo import ABLATION_ZH, comparison_verdicts, seed_table

    abl = RecordedAblations(data)
    verdicts = "\n".join(f"- {v.text}" for v in comparison_verdicts(abl, name))
    details = data.get("cliff_table") if name == "cliff" else seed_table(abl, name)
    return (f"**{ABLATION_ZH[name]}**（`{name}`）\n\n{verdicts}\n\n<details>\n<summary>每个种子的数字</summary>\n\n"
            f"{details}\n\n</details>")


def capstone_ablations_markdown(rec: dict) -> str:
    d = rec["data"]
    head = (f"种子 {'、'.join(map(str, d['seeds']))}，{d['arm_runs']} 次训练分给 {d['processes']} 个进程："
            f"墙钟 {d['wall_seconds']:.0f} 秒，所有进程的 CPU 合计 {d['cpu_seconds']:.0f} 秒，最忙的进程 "
            f"{d['busiest_seconds']:.0f} 秒。")
    return "\n\n".join([head, *(ablation_markdown(d, name) for name in d["ablations"])])


def plot_ablation_differences(rec: dict):
    """The course's plot_differences (exercise 7's page) on the recorded per-seed accuracy differences."""
    from agentrl_ref.teaching.ex7_agent_grpo import plot_differences

    d = rec["data"]
    comparisons = [(name, c["metric"], c["a"], c["b"]) for name, cs in d["ablations"].items() for c in cs
                   if c["metric"] == "accuracy"]
    return plot_differences(RecordedAblations(d), comparisons)


def capstone_offpolicy_markdown(rec: dict) -> str:
    d = rec["data"]
    return "\n\n".join([*(ablation_markdown(d, name) for name in d["ablations"]),
                        "<details>\n<summary>每一臂离行为策略多远</summary>\n\n" + d["details"] + "\n\n</details>",
                        "\n".join(f"- {line}" for line in d["decoupled_checks"])])


def capstone_page_markdown(rec: dict) -> str:
    d = rec["data"]
    text = table(["墙钟", "CPU（内核与工作进程，user + system）", "运行前 load average", "运行后 load average"],
                 [[f"{d['wall_seconds']:.1f} s", f"{d['cpu_seconds']:.1f} s", _loads(rec["load_before"]),
                   _loads(rec["load_after"])]], ["r", "r", "", ""])
    text += f"\n\n目标：空闲的核上 ≤ {d['target_seconds']} 秒。"
    return text + "".join(f"\n\n页面自己的估计：{line}" for line in d["page_account"])


# ---------------------------------------------------------------- make bench-grading: bench/grading.py, levels.py

GRADING_KINDS = {"this": "这个提交，沙箱里", "base": "提交 {commit}", "unsandboxed": "这个提交，不加沙箱",
                 "shards": "{shards} 片 Slurm 分片（各 1 核）+ 汇总"}


def _grading_label(r: dict) -> str:
    return GRADING_KINDS[r["kind"]].format(commit=r.get("commit"), shards=r["label"].split()[0])


def grading_markdown(rec: dict) -> str:
    d = rec["data"]
    this = d["runs"][0]
    rows = [[_grading_label(r), f"{r['wall']:.0f} s", f"{r['wall'] / this['wall']:.3f}",
             "—" if r["cpu"] is None else f"{r['cpu']:.0f}",
             "—" if r["cpu"] is None or this["cpu"] is None else f"{r['cpu'] / this['cpu']:.3f}",
             f"{60 * d['notebooks'] / r['wall']:.1f}", r["grades"]] for r in d["runs"]]
    t = d["targets"]
    lines = [f"{d['students']} 名学生 × {d['assignments']} 份作业 = {d['notebooks']} 份 notebook，"
             f"一次评 {d['jobs']} 份，{d['cores']} 个核。",
             table(["评法", "墙钟", "墙钟 / 这个提交", "CPU 秒", "CPU / 这个提交", "每分钟评完", "grades.csv"], rows,
                   ["", "r", "r", "r", "r", "r", ""])]
    bullets = []
    if this["cpu"] is not None:
        bullets.append(f"每份 notebook 的 CPU 秒（评分进程加上每个沙箱）：{this['cpu'] / d['notebooks']:.2f}；"
                       f"每份占用的核秒（墙钟 × 核数 / 份数，集群要准备的容量）："
                       f"{this['wall'] * d['cores'] / d['notebooks']:.2f}")
    bullets.append(f"沙箱里评完全班：{this['wall']:.0f} 秒（目标 ≤ {t['total_s']} 秒）："
                   f"{met(this['wall'] <= t['total_s'])}")
    for r in d["runs"]:
        if r["kind"] == "base":
            ratio = this["wall"] / r["wall"]
            bullets.append(f"这个提交 / 提交 {r['commit']}，墙钟：{ratio:.3f}（目标 ≤ {t['base_ratio']:g}）："
                           f"{met(ratio <= t['base_ratio'])}")
    if d.get("projection"):
        import math

        proj = d["projection"]
        hours = proj["students"] * d["assignments"] * this["wall"] * d["cores"] / d["notebooks"] / 3600
        nodes = math.ceil(hours / proj["node_cores"])
        bullets.append(f"按这个容量，{proj['students']:,} 名学生 × {d['assignments']} 份作业要 {hours:.0f} 核时："
                       f"一小时评完要 {hours:.0f} 个核，即 {nodes} 台 {proj['node_cores']} 核的机器"
                       f"（--jobs {proj['node_cores']}），或 {math.ceil(hours / 2)} 台双核的")
    pairs = [p for p in d["shard_pairs"] if p["one_cpu"] and p["shards_cpu"]]
    if d["shard_pairs"] and not pairs:
        bullets.append("分片的 CPU 代价：不知道（分片在作业级别运行，这台 cgroup v1 的机器上没有东西计它的沙箱的 CPU）")
    elif pairs:
        import statistics

        ratio = statistics.median(p["shards_cpu"] / p["one_cpu"] for p in pairs)
        bullets.append(f"分片的 CPU / 一次评完：{ratio:.3f}（{len(pairs)} 对的中位数；"
                       f"目标 ≤ {t['shard_cpu_ratio']:g}）：{met(ratio <= t['shard_cpu_ratio'])}")
    bullets += [f"分片的 grades.csv 与一次评完的逐字节比较：{p['grades_byte_for_byte']}" for p in d["shard_pairs"]]
    lines.append("\n".join(f"- {b}" for b in bullets))
    return "\n\n".join(lines)


def plot_grading(rec: dict):
    """The class graded every way: wall seconds per run, with the end-to-end target."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.shared.cjk import zh
    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    d = rec["data"]
    runs = d["runs"]
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 1.3 + 0.5 * len(runs)), dpi=DPI)
    ys = range(len(runs) - 1, -1, -1)
    ax.barh(list(ys), [r["wall"] for r in runs], height=0.5, color="#1f4fbf")
    for y, r in zip(ys, runs):
        ax.annotate(f"{r['wall']:.0f} s", (r["wall"], y), xytext=(3, 0), textcoords="offset points", va="center",
                    fontsize=8)
    english = {"this": "this commit, sandboxed", "base": "commit {commit}", "unsandboxed": "this commit, no sandbox",
               "shards": "{shards} Slurm shards + report"}
    labels = [zh(_grading_label(r), english[r["kind"]].format(commit=r.get("commit"), shards=r["label"].split()[0]))
              for r in runs]
    ax.set_yticks(list(ys), labels, fontsize=8)
    ax.axvline(d["targets"]["total_s"], color="#6b6b6b", linestyle="--", linewidth=1)
    ax.set_xlim(0, max([d["targets"]["total_s"]] + [r["wall"] for r in runs]) * 1.15)
    ax.set_xlabel(zh(f"墙钟秒（虚线：目标 {d['targets']['total_s']} 秒）",
                     f"wall seconds (dashed: target {d['targets']['total_s']} s)"), fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(zh(f"全班 {d['notebooks']} 份 notebook 评一遍要多久", f"grading {d['notebooks']} notebooks"),
                 fontsize=10, loc="left")
    fig.tight_layout()
    return fig


def levels_markdown(rec: dict) -> str:
    d = rec["data"]
    rows = [[_kernel(k), lv["level"], f"{lv['cpu_per_notebook']:.2f}", f"{lv['ratio']:.3f}"]
            for k in d["kernels"] for lv in k["levels"]]
    times = "评一遍" if d["repeat"] == 1 else f"轮流评 {d['repeat']} 遍，取中位数"
    text = (f"同一班 {d['notebooks']} 份 `{d['assignment']}`，一次评 {d['jobs']} 份，每一级{times}。\n\n"
            + table(["内核", "隔离级别", "每份的 CPU 秒", "/ 同一内核上不加沙箱"], rows, ["", "", "r", "r"]))
    ratio = {(k["where"], lv["level"]): lv["ratio"] for k in d["kernels"] for lv in k["levels"]}
    v1, v2 = ratio.get(("this", "cgroup1")), ratio.get(("guest", "cgroup2"))
    if v1 and v2:
        text += (f"\n\n- cgroup v2 一级的代价对 cgroup v1 一级的（各自对同一内核上不加沙箱）：{v2:.3f} / {v1:.3f} = "
                 f"{v2 / v1:.3f}（目标 ≤ {d['target']:g}）：{met(v2 / v1 <= d['target'])}")
    elif not d["guest"]:
        text += "\n\n- 这次没有跑 cgroup v2 的虚拟机（`--no-guest`，或这台机器上没有 qemu）：v2 对 v1 的比值这次没有。"
    return text


def _kernel(k: dict) -> str:
    """'本机（6.1.0, cgroup v1）' / '虚拟机（cgroup v2, qemu …）' from bench/levels.py's English kernel label."""
    inside = k["kernel"].split("(", 1)[-1].rstrip(")") if "(" in k["kernel"] else k["kernel"]
    return f"{'本机' if k['where'] == 'this' else '虚拟机'}（{inside}）"


def sandbox_overhead_markdown(rec: dict) -> str:
    d = rec["data"]
    rows = [[what, f"{d['plain'][key]:.3f} s", f"{d['sandboxed'][key]:.3f} s",
             f"{d['sandboxed'][key] - d['plain'][key]:+.3f} s"]
            for what, key in (("启动内核 + 执行", "execute"), ("…… + 关内核", "with_shutdown"))]
    return (f"一个很小的 notebook，不加沙箱和加沙箱交替运行 {d['rounds']} 轮，墙钟中位数（一次性的准备："
            f"{d['setup_seconds']:.2f} 秒）。\n\n"
            + table(["阶段", "不加沙箱", "沙箱里", "差"], rows, ["", "r", "r", "r"]))


# ---------------------------------------------------------------- make bench-serve: bench/serve_latency.py

def serve_latency_markdown(rec: dict) -> str:
    d = rec["data"]
    t = d["targets"]
    rows = [[f"一个进程，--jobs {s['jobs']}", f"{s['idle_p50']:.1f} s", f"{s['idle_p95']:.1f} s",
             f"{s['burst_p50']:.1f} s", f"{s['burst_p95']:.1f} s", f"{s['burst_all']:.0f} s"] for s in d["services"]]
    best = min(d["services"], key=lambda s: s["burst_all"])
    idle50, idle95 = min(s["idle_p50"] for s in d["services"]), min(s["idle_p95"] for s in d["services"])
    return "\n\n".join([
        f"空闲时一份接一份交 {d['idle']} 份；突发时 {d['over_s']:.0f} 秒里均匀地交 {d['burst']} 份。",
        table(["服务", "空闲 p50", "空闲 p95", "突发 p50", "突发 p95", "突发：第一份交上到最后一份有反馈"], rows,
              ["", "r", "r", "r", "r", "r"]),
        f"- 空闲时 p50 {idle50:.1f} 秒（目标 ≤ {t['idle_p50_s']:g}）、"
        f"p95 {idle95:.1f} 秒（目标 ≤ {t['idle_p95_s']:g}）："
        f"{met(idle50 <= t['idle_p50_s'] and idle95 <= t['idle_p95_s'])}\n"
        f"- 突发的全部评完：{best['burst_all']:.0f} 秒（--jobs {best['jobs']}；目标 ≤ {t['burst_all_s']:g}）："
        f"{met(best['burst_all'] <= t['burst_all_s'])}"])


def plot_latency(rec: dict):
    """Submit -> feedback: p50 and p95, idle and in a burst, for each --jobs."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.shared.cjk import zh
    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    d = rec["data"]
    kinds = [("idle_p50", zh("空闲 p50", "idle p50")), ("idle_p95", zh("空闲 p95", "idle p95")),
             ("burst_p50", zh("突发 p50", "burst p50")), ("burst_p95", zh("突发 p95", "burst p95"))]
    colors = ("#1f4fbf", "#c25a00", "#1b7f3b", "#7a3fb0")
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.0), dpi=DPI)
    width = 0.8 / len(d["services"])
    for j, s in enumerate(d["services"]):
        xs = [i + (j - (len(d["services"]) - 1) / 2) * width for i in range(len(kinds))]
        ax.bar(xs, [s[k] for k, _ in kinds], width=width * 0.9, color=colors[j % len(colors)],
               label=f"--jobs {s['jobs']}")
    ax.set_xticks(range(len(kinds)), [label for _, label in kinds])
    ax.set_ylabel(zh("交上到有反馈的秒数", "seconds, submit to feedback"))
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(zh("交上来就评：多久能看到反馈（练习 1）", "graded on arrival: submit to feedback (exercise 1)"),
                 fontsize=10, loc="left")
    fig.tight_layout()
    return fig


def serve_junk_markdown(rec: dict) -> str:
    d = rec["data"]
    ratio = d["junk_p50"] / d["quiet_p50"]
    rows = [["安静时", f"{d['quiet_p50']:.1f} s", f"{d['quiet_p95']:.1f} s"],
            ["有垃圾时", f"{d['junk_p50']:.1f} s", f"{d['junk_p95']:.1f} s"]]
    return "\n\n".join([
        f"同样 {d['idle']} 份诚实的提交，先在安静的 exchange 里交，再在 `inbound/` 里放进 {d['junk_folders']:,} 个"
        f"捏造的学生的空文件夹、队列里放进 {d['pending_rows']:,} 行等限流的提交"
        f"（{d['made_s']:.0f} 秒造好）之后再交一遍。",
        table(["同样的提交，一份接一份", "p50", "p95"], rows, ["", "r", "r"]),
        f"- 有垃圾 / 安静，p50：{ratio:.2f}（目标 ≤ {d['target_ratio']:g}）：{met(ratio <= d['target_ratio'])}\n"
        f"- 服务最后一行状态：`{d['status']}`"])


# ---------------------------------------------------------------- make bench-site: bench/page_weight.py

KIND_ZH = {"script": "脚本", "stylesheet": "样式表", "font": "字体", "image": "图片", "mathjax": "MathJax",
           "other": "其他"}


def page_weight_markdown(rec: dict) -> str:
    import statistics

    d = rec["data"]
    kinds = d["kinds"]
    rows = []
    for p in d["pages"]:
        total = sum(p[k] for k in kinds)
        rows.append([Path(p["page"]).stem, *(f"{p[k] / 1024:.0f}" for k in kinds), f"{total / 1024:.0f}",
                     f"{(total + d['theme_fontawesome_bytes']) / total:.2f}×"])
    totals = [sum(p[k] for k in kinds) for p in d["pages"]]
    return "\n\n".join([
        "每一页冷启动下载的 KB，按类型分；最后一列：加上主题自带的 fontawesome.js 会是现在的几倍。",
        table(["页面", *(KIND_ZH.get(k, k) for k in kinds), "合计", "加 fa.js"], rows,
              ["", *["r"] * (len(kinds) + 2)]),
        f"- 冷启动打开一页的中位数：{statistics.median(totals) / 1024:.0f} KB；主题自带的 fontawesome.js（本站不加载）"
        f"会给每一页加 {d['theme_fontawesome_bytes'] / 1024:.0f} KB"])


def plot_page_weight(rec: dict):
    """Bytes a reader downloads per page, stacked by kind (KB)."""
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.shared.cjk import zh
    from agentrl_ref.teaching.shared.page_figure import DPI, WIDTH_IN

    d = rec["data"]
    pages, kinds = d["pages"], d["kinds"]
    colors = ("#1f4fbf", "#c25a00", "#1b7f3b", "#7a3fb0", "#b8860b", "#6b6b6b")
    english = {"script": "scripts", "stylesheet": "stylesheets", "font": "fonts", "image": "images",
               "mathjax": "MathJax", "other": "other"}
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 1.4 + 0.26 * len(pages)), dpi=DPI)
    ys = list(range(len(pages) - 1, -1, -1))
    left = [0.0] * len(pages)
    for kind, color in zip(kinds, colors):
        widths = [p[kind] / 1024 for p in pages]
        ax.barh(ys, widths, left=left, height=0.7, color=color,
                label=zh(KIND_ZH.get(kind, kind), english.get(kind, kind)))
        left = [a + b for a, b in zip(left, widths)]
    ax.set_yticks(ys, [Path(p["page"]).stem for p in pages], fontsize=8)
    ax.set_xlabel(zh("冷启动打开一页下载的 KB", "KB downloaded, page opened cold"), fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=len(kinds), frameon=False,
              borderaxespad=0.2)
    ax.set_title(zh("读者打开每一页要下载多少", "what a reader downloads per page"), fontsize=10, loc="left", pad=22)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- bench/suite_lanes.py

def suite_lanes_markdown(rec: dict) -> str:
    d = rec["data"]
    rows = []
    for n, g in enumerate(d["groups"]):
        lanes = "；".join(f"{lane['lane']} {lane['tests']} 个测试 {lane['seconds']:.0f} s" for lane in g["lanes"])
        rows.append([str(n), g["group"], f"{g['seconds']:.0f} s", str(g["exit"]), lanes, g["result"] or "—"])
    return (table(["组", "车道", "墙钟", "退出码", "每条车道", "pytest 的结果行"], rows, ["r", "", "r", "r", "", ""])
            + f"\n\n- 几组并排，一共 {d['seconds']:.0f} 秒（{d['seconds'] / 60:.1f} 分钟）墙钟")


# ---------------------------------------------------------------- what the page calls

MARKDOWN = {"run": run_markdown, "versus": versus_markdown, "capstone-main": capstone_main_markdown,
            "capstone-processes": capstone_processes_markdown, "capstone-ablations": capstone_ablations_markdown,
            "capstone-offpolicy-lr": capstone_offpolicy_markdown, "capstone-page": capstone_page_markdown,
            "grading": grading_markdown, "levels": levels_markdown, "sandbox-overhead": sandbox_overhead_markdown,
            "serve-latency": serve_latency_markdown, "serve-junk": serve_junk_markdown,
            "page-weight": page_weight_markdown, "suite-lanes": suite_lanes_markdown}
FIGURES = {"run": [plot_format_scaling, plot_batched], "capstone-processes": [plot_throughput],
           "capstone-ablations": [plot_ablation_differences], "grading": [plot_grading],
           "serve-latency": [plot_latency], "page-weight": [plot_page_weight]}


def markdown(name: str, folder: Path | None = None) -> str:
    """A section as Markdown: where its record came from and its tables, or how to make the record."""
    rec = load(name, folder)
    return missing(name) if rec is None else provenance(rec) + "\n\n" + MARKDOWN[name](rec)


def figures(name: str, folder: Path | None = None) -> list:
    rec = load(name, folder)
    return [] if rec is None else [plot(rec) for plot in FIGURES.get(name, [])]


def show(name: str, folder: Path | None = None) -> None:
    """In the page: a section's Markdown, then its figures. The figures are left open: the notebook's inline backend
    shows them after the cell, with their titles as captions (page_figure.caption_figures)."""
    from IPython.display import Markdown, display

    display(Markdown(markdown(name, folder)))
    figures(name, folder)


def numbers(text: str) -> list[str]:
    """The numbers written in a text (what tests/test_bench_records.py looks for in the page's prose); digits in a
    name are not numbers: ex7, p50, cgroup v2, 练习 7."""
    return re.findall(r"(?<![A-Za-z_\d.])(?<!练习 )\d[\d,.]*", text)


if __name__ == "__main__":   # python bench/report.py: every section as Markdown, as the page shows it
    for section in SOURCES:
        print(f"\n<!-- {section} -->\n{markdown(section)}")
    if os.environ.get("BENCH_FIGURES"):
        import matplotlib

        matplotlib.use("Agg")
        for section in FIGURES:
            for i, fig in enumerate(figures(section)):
                fig.savefig(Path(os.environ["BENCH_FIGURES"]) / f"{section}-{i}.png")
