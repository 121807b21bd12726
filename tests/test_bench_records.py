"""The benchmarks page (book/benchmarks.md) is drawn from the benchmark scripts' own records and types no number.

Every bench script writes its results as a record (bench/record.py: bench/results/<name>.json, the rows it prints
plus when, at which commit, on what machine, under what load, by which command); the page shows each record through
bench/report.py. Checked here, without running a benchmark: the records the scripts write are the sections the page
shows; a record made by the scripts' own data functions (or shaped as the script writes it) renders, its figures fit
the book's column; the committed records render; a missing record names the command that makes it; the page's prose
has no number of its own. (The page built in Chromium and a real run of bench/page_weight.py: tests/test_site.py.)
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
from types import SimpleNamespace

import matplotlib
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import record  # noqa: E402  (bench/, on sys.path from tests/conftest.py)
import report  # noqa: E402

from course import ROOT  # noqa: E402

BENCH = ROOT / "bench"
PAGE = ROOT / "book" / "benchmarks.md"


# ---------------------------------------------------------------- records shaped as the scripts write them

def _run_data() -> dict:
    import run  # bench/run.py: its own record_data

    rows = [("format_reward", "7 ordinary completions (per call)", 1.7e-6, 2.5e-6, "seed regex")]
    rows += [("format_reward", f"degenerate n={n} ({n * 26 // 1000} KB)", 2.6e-8 * n, 1.1e-10 * n * n, "seed regex")
             for n in (500, 1000, 2000)]
    rows += [("accuracy_reward", "answer-forms table, 63 rows (per call)", 4.5e-6, 1e-2, "math-verify"),
             ("accuracy_reward", "200 KB degenerate: \\boxed{ x 28600", 3e-7, 1.68, "math-verify")]
    for benchmark, case in (("loss mask", "B=64, T=8192, from (role, start, end) spans"),
                            ("loss mask", "B=64, T=8192, from per-token role ids"),
                            ("credit: uniform", "B=64, T=8192")):
        for k, name in enumerate((run.LOOP_TENSOR, run.LOOP_LISTS, run.ROW_TORCH)):
            rows.append((benchmark, f"{case}: batched vs {name}", 4e-4, 4e-4 * (100, 10, 2)[k], name))
    rows.append(("rollout buffer", "128000 trajectories, batch 8 (per trajectory)", 9e-7, 7e-7, "asyncio.Queue"))
    forms = [SimpleNamespace(completion="\\boxed{5}", gold="5", note="plain", expected_equal=True, toy_equal=True,
                             toy_ok=True, toy_seconds=2e-5, math_verify_equal=True, math_verify_ok=True,
                             math_verify_seconds=3e-3),
             SimpleNamespace(completion="\\boxed{½}", gold="1/2", note="unicode fraction", expected_equal=True,
                             toy_equal=False, toy_ok=False, toy_seconds=2e-5, math_verify_equal=False,
                             math_verify_ok=False, math_verify_seconds=3e-3)]
    return run.record_data(rows, forms, [("{}", 3.2), ("1,000", 4.5)])


class FakeAblations:
    """What bench/capstone.py's ablation_data reads from agentrl_ref.agent.Ablations, with made-up numbers."""

    def __init__(self, seeds=(0, 1, 2)):
        self.seeds, self.runs, self.processes = seeds, {i: None for i in range(12)}, 2
        self.wall_seconds, self.cpu_seconds, self.idle_seconds = 300.0, 340.0, 170.0

    def compare(self, a: str, b: str, metric: str = "accuracy"):
        from agentrl_ref.agent.verdicts import SeedDiff

        step = len(a + b + metric) % 5 - 2
        return [SeedDiff(s, 0.9, 0.9 + 0.02 * step + 0.01 * s, 0.0 if metric == "sim_seconds" else 0.015)
                for s in self.seeds]


def _main_run(seed: int):
    ev = lambda acc, tool: SimpleNamespace(accuracy=acc, tool_rate=tool, copy_rate=0.98)  # noqa: E731
    return SimpleNamespace(seed=seed, seconds={"sft": 19.5, "grpo": 13.8, "eval": 2.0},
                           cpu_seconds={"sft": 15.2, "grpo": 13.5, "eval": 1.9}, sft_copy_rate=0.986,
                           before={"sampled": ev(0.27, 0.27), "greedy": ev(0.01, 0.0)},
                           after={"sampled": ev(0.97, 0.99), "greedy": ev(1.0, 1.0)})


def _capstone_data(name: str) -> dict:
    import capstone  # bench/capstone.py: its own data functions

    from agentrl_ref.agent import ABLATIONS

    if name == "capstone-main":
        return {"page_seeds": [0, 1, 2], "runs": [capstone.main_run_data(_main_run(s)) for s in (0, 1)]}
    if name == "capstone-ablations":
        return {**capstone.ablation_data(FakeAblations(), ABLATIONS), "cliff_table": "| 种子 |\n|---:|\n| 0 |"}
    return {**capstone.ablation_data(FakeAblations(), ("offpolicy", "offpolicy_slow")),
            "details": "| 种子 | 臂 |\n|---:|---|\n| 0 | 不修正 |", "decoupled_checks": ["解耦 PPO 一臂：……"]}


SHAPED = {   # records whose data the scripts assemble inline: the same keys, made-up numbers
    "versus": {"head": "abc1234", "base": "b6bf7aa", "rounds": 3, "target_ratio": 1.05,
               "sides": {"this": [{"cpu": 29.3, "accuracy": 0.971}] * 3,
                         "base": [{"cpu": 30.5, "accuracy": 0.971}] * 3}},
    "capstone-processes": {
        "seed": 0, "steps": 12, "batch_size": 256, "target": 1.3, "bound": 1.95, "bound_steps": 1.81, "t_gen": 0.164,
        "t_train": 0.156, "runs": [{"max_staleness": ms, "seconds": 6.9 / r, "step_seconds": 0.57 / r,
                                    "throughput": 448 * r, "ratio": r, "mean_staleness": min(ms, 1) * 0.9,
                                    "trainer_idle": 0.2, "load_after": [3.9, 3.9, 3.2]}
                                   for ms, r in ((0, 1.0), (1, 1.11), (2, 0.93), (4, 0.71))],
        "transfer": {"bytes": 294912, "cpu": {"shared memory": 0.0037, "pipe": 0.0044},
                     "wall": {"shared memory": 0.0055, "pipe": 0.0065}}},
    "capstone-page": {"wall_seconds": 175.5, "cpu_seconds": 200.1, "target_seconds": 120,
                      "page_account": ["本页执行（从 SFT 到这里）：墙钟 170.1 s"]},
    "grading": {
        "students": 6, "assignments": 7, "notebooks": 42, "jobs": 2, "cores": 2,
        "targets": {"total_s": 300, "base_ratio": 1.05, "shard_cpu_ratio": 1.15},
        "projection": {"students": 10000, "node_cores": 32},
        "runs": [{"label": "this commit, sandboxed", "kind": "this", "commit": None, "wall": 61.0, "cpu": 72.0,
                  "grades": "same"},
                 {"label": "commit b6bf7aa", "kind": "base", "commit": "b6bf7aa", "wall": 71.0, "cpu": None,
                  "grades": "same but ex7_agent_grpo (its instructor notebook changed since)"},
                 {"label": "this commit, --unsafe-no-sandbox", "kind": "unsandboxed", "commit": None, "wall": 80.0,
                  "cpu": None, "grades": "same"},
                 {"label": "2 shards on Slurm (1 core each, cgroup1) + report", "kind": "shards", "commit": None,
                  "wall": 141.0, "cpu": 80.0, "grades": "same"}],
        "shard_pairs": [{"one_cpu": 72.0, "shards_cpu": 80.0, "grades_byte_for_byte": "identical"}]},
    "levels": {"assignment": "ex1_format_reward", "notebooks": 6, "jobs": 2, "repeat": 1, "guest": True,
               "target": 1.1, "kernels": [
                   {"kernel": "this machine (6.1, cgroup v1)", "where": "this",
                    "levels": [{"level": "cgroup1", "cpu_per_notebook": 1.55, "ratio": 1.039},
                               {"level": "none", "cpu_per_notebook": 1.5, "ratio": 1.0}]},
                   {"kernel": "guest (cgroup v2, qemu)", "where": "guest",
                    "levels": [{"level": "cgroup2", "cpu_per_notebook": 33.6, "ratio": 0.935},
                               {"level": "none", "cpu_per_notebook": 35.9, "ratio": 1.0}]}]},
    "sandbox-overhead": {"rounds": 5, "setup_seconds": 0.45, "plain": {"execute": 0.535, "with_shutdown": 0.652},
                         "sandboxed": {"execute": 0.562, "with_shutdown": 0.573}},
    "serve-latency": {"idle": 10, "burst": 60, "over_s": 60.0, "cores": 2,
                      "targets": {"idle_p50_s": 15.0, "idle_p95_s": 30.0, "burst_all_s": 180.0},
                      "services": [{"jobs": j, "idle_p50": 1.2 * j, "idle_p95": 1.4 * j, "burst_p50": 2.9,
                                    "burst_p95": 4.0 * j, "burst_all": 60.0 + j} for j in (1, 2)]},
    "serve-junk": {"idle": 10, "junk_folders": 100000, "pending_rows": 20000, "made_s": 4.0, "target_ratio": 1.5,
                   "quiet_p50": 1.4, "quiet_p95": 2.1, "junk_p50": 1.4, "junk_p95": 1.6,
                   "status": "status: last scan 0.2 s ago"},
    "page-weight": {"kinds": ["script", "stylesheet", "font", "image", "mathjax", "other"],
                    "theme_fontawesome_bytes": 80000,
                    "pages": [{"page": f"book/{p}.html", "script": 300000, "stylesheet": 90000, "font": 120000 * i,
                               "image": 20000 * i, "mathjax": 0, "other": 30000}
                              for i, p in enumerate(("intro", "ex1_format_reward", "ex7_agent_grpo"))]},
    "suite-lanes": {"seconds": 1200.0, "groups": [
        {"group": "quick", "seconds": 300.0, "exit": 0, "result": "500 passed in 300s",
         "lanes": [{"lane": "quick", "tests": 500, "seconds": 290.0}]}]},
}


def sample_record(name: str) -> dict:
    """A record of `name` as its script writes it (its envelope from bench/record.py), with made-up numbers."""
    if name == "run":
        data = _run_data()
    elif name in ("capstone-main", "capstone-ablations", "capstone-offpolicy-lr"):
        data = _capstone_data(name)
    else:
        data = SHAPED[name]
    return record.make(name, data, record.now(), argv=["bench/x.py", "--flag"])


def _write(folder, name: str) -> None:
    (folder / f"{name}.json").write_text(json.dumps(sample_record(name), ensure_ascii=False), encoding="utf-8")


def _fit(fig) -> list[str]:
    from agentrl_ref.teaching.shared.page_figure import page_problems

    fig.canvas.draw()
    try:
        return page_problems(fig)
    finally:
        plt.close(fig)


# ---------------------------------------------------------------- the page and the scripts agree

def _saved_by(path) -> list[str]:
    """The record names a bench script writes: the string constants given to record.save(...)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "save"
                and getattr(node.func.value, "id", "") == "record"):
            assert node.args and isinstance(node.args[0], ast.Constant), f"{path.name}:{node.lineno}: a name"
            names.append(node.args[0].value)
    return names


def test_every_record_a_script_writes_is_a_section_of_the_page():
    written = {name: f"bench/{path.name}" for path in sorted(BENCH.glob("*.py")) for name in _saved_by(path)}
    assert written == {name: script for name, (_, script) in report.SOURCES.items()}
    assert set(report.MARKDOWN) == set(report.SOURCES) and set(report.FIGURES) <= set(report.SOURCES)
    shown = re.findall(r'report\.show\("([\w-]+)"\)', PAGE.read_text(encoding="utf-8"))
    assert shown == list(report.SOURCES), "the page shows each record once, in SOURCES's order"


def _cells(text: str) -> tuple[str, list[str]]:
    """(the prose, the code cells) of a MyST Markdown notebook, without its front matter."""
    body = text.split("\n---\n", 1)[1]
    code = re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", body, flags=re.S | re.M)
    prose = re.sub(r"^```\{code-cell\}.*?^```\s*$", " ", body, flags=re.S | re.M)
    return prose, code


def test_the_page_types_no_number():
    """Numbers go stale: the prose says what each benchmark measures and why; every number comes from a record
    (names such as ex7, 练习 7, p50 or cgroup v2 are words). The code cells only call report.show."""
    prose, code = _cells(PAGE.read_text(encoding="utf-8"))
    assert report.numbers(prose) == [], report.numbers(prose)
    assert report.numbers("练习 7 要 120 秒，p50 1.2 s，ex7 与 cgroup v2，共 3 个") == ["120", "1.2", "3"]
    assert len(code) == len(report.SOURCES) + 1
    for cell in code[1:]:
        assert re.fullmatch(r':tags: \[remove-input\]\n\nreport\.show\("[\w-]+"\)\n', cell), cell
    assert not re.search(r"\d", code[0].replace("remove-input", "")), code[0]


def test_the_page_is_executed_at_every_build():
    """Its outputs depend on bench/results, which the execution cache's key does not cover: the page opts out of the
    cache, and the site's build stamp covers what the page reads (book/_ext/site_build.py)."""
    import site_build  # book/_ext

    front = PAGE.read_text(encoding="utf-8").split("\n---\n", 1)[0]
    assert "mystnb:\n  execution_mode: force" in front
    assert {"bench/report.py", "bench/results/"} <= set(site_build.ALSO_READ)


# ---------------------------------------------------------------- records

def test_a_record_says_where_it_came_from_and_touches_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_RESULTS", str(tmp_path))
    (tmp_path / "other.json").write_text("not ours", encoding="utf-8")
    since = record.now()
    path = record.save("run", {"seconds": float("nan"), "pair": (1, 2.5)}, since=since, argv=["bench/run.py", "-x"])
    assert path == tmp_path / "run.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.json", "run.json"]
    assert (tmp_path / "other.json").read_text(encoding="utf-8") == "not ours"
    rec = json.loads(path.read_text(encoding="utf-8"))
    git = lambda *args: subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout  # noqa: E731
    changed = {*git("diff", "--name-only", "HEAD").split(), *git("ls-files", "--others", "--exclude-standard").split()}
    assert rec["commit"] == git("rev-parse", "HEAD").strip()
    assert rec["edited"] == sorted(p for p in changed if not p.startswith("bench/results/"))
    assert rec["name"] == "run" and rec["command"] == "python bench/run.py -x"
    assert rec["load_before"] == list(since.load) and len(rec["load_after"]) == 3
    assert rec["machine"]["cores"] and rec["python"] and rec["started"] and rec["seconds"] >= 0
    assert rec["data"] == {"seconds": None, "pair": [1, 2.5]}   # JSON has no NaN and no tuples


@pytest.mark.parametrize("name", list(report.SOURCES))
def test_a_record_as_its_script_writes_it_renders(name, tmp_path):
    _write(tmp_path, name)
    text = report.markdown(name, tmp_path)
    rec = report.load(name, tmp_path)
    assert text.startswith(report.provenance(rec))
    assert f"`{rec['command']}`" in text and f"`{rec['commit'][:7]}`" in text
    assert "load average" in text and "运行前" in text
    for fig in report.figures(name, tmp_path):
        assert not _fit(fig), (name, _fit(fig))


@pytest.mark.parametrize("name", list(report.SOURCES))
def test_a_missing_record_says_how_to_make_it(name, tmp_path):
    text = report.markdown(name, tmp_path)
    target, script = report.SOURCES[name]
    assert "还没有记录" in text and f"bench/results/{name}.json" in text and script in text
    assert (target or script) in text and report.figures(name, tmp_path) == []


def test_a_loaded_machine_is_said_to_be_loaded(tmp_path):
    rec = sample_record("versus")
    rec["machine"]["cores"], rec["load_before"] = 2, [5.09, 1.81, 1.02]
    assert "当时还有别的程序在跑" in report.provenance(rec)
    rec["load_before"] = rec["load_after"] = [0.1, 0.2, 0.3]
    assert "别的程序" not in report.provenance(rec)


COMMITTED = sorted(p.stem for p in (BENCH / "results").glob("*.json"))


@pytest.mark.parametrize("name", COMMITTED)
def test_a_committed_record_renders(name):
    """What the page shows today: every record in bench/results is a section's, and renders with its figures."""
    assert name in report.SOURCES, f"bench/results/{name}.json is no section of the page"
    rec = report.load(name)
    assert rec["commit"] and rec["command"].startswith("python bench/")
    report.markdown(name)
    for fig in report.figures(name):
        assert not _fit(fig), (name, _fit(fig))


def test_the_ablation_verdicts_are_computed_from_the_recorded_numbers():
    """ablation_data -> JSON -> RecordedAblations gives back every per-seed difference: the page's tables and
    verdicts are the course's functions on the same numbers as the run's."""
    from agentrl_ref.agent import ABLATIONS
    from agentrl_ref.teaching.ex7_agent_grpo import comparison_verdicts, seed_table

    fake = FakeAblations()
    recorded = report.RecordedAblations(json.loads(json.dumps(sample_record("capstone-ablations")))["data"])
    for name, ablation in ABLATIONS.items():
        for metric, a, b in ablation.comparisons:
            assert recorded.compare(a, b, metric) == fake.compare(a, b, metric)
        texts = [v.text for v in comparison_verdicts(recorded, name)]
        assert texts == [v.text for v in comparison_verdicts(fake, name)]
        assert seed_table(recorded, name) == seed_table(fake, name)
