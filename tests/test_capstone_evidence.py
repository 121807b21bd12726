"""Exercise 7's evidence: verdict sentences computed from per-seed results (fed fabricated results here), the paired
standard error, the loss aggregations, the time-fair async comparison, the worker pool and where each part comes from.

Fast by design: no training except one tiny GRPO run for the student-part printout.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import signal
import socket
import threading

import pytest
import torch

from agentrl_ref.agent import GRPOConfig, aggregated, clipped_pg_loss, group_center, paired, paired_se, run_jobs
from agentrl_ref.agent.concurrency import forked_child
from agentrl_ref.agent.ablations import VersionEval, _time_weights
from agentrl_ref.agent.verdicts import (
    ALPHA, SeedDiff, across_seeds, sign_chance, t_critical, t_two_sided_p, unpaired, unpaired_se,
)
from agentrl_ref.teaching.ex7_agent_grpo import describe_parts, seed_verdict, origin, parts_summary


# --- verdicts from fabricated per-seed results: one test per outcome ------------------------------

def diffs(*pairs, se=0.01):
    return [SeedDiff(seed, a, b, se) for seed, (a, b) in enumerate(pairs)]


def test_a_mean_difference_beyond_the_seed_to_seed_spread_is_a_result():
    v = seed_verdict(diffs((0.93, 0.83), (0.95, 0.86), (0.97, 0.88)), "准确率", "屏蔽", "也训练")
    assert v.kind == "agree" and v.sign == -1
    # differences -10, -9, -9 points: their spread gives a standard error of 0.333 points, less than the evaluation
    # noise alone, sqrt(3 * 1^2) / 3 = 0.577 points, which is taken instead; t = -9.33 / 0.577 = -16.2 on 2 df
    assert v.test.se == pytest.approx(math.sqrt(3) * 0.01 / 3)
    assert v.test.p == pytest.approx(t_two_sided_p(-0.09333 / (math.sqrt(3) * 0.01 / 3), 2), rel=1e-3)
    assert v.text == ('准确率：3 个种子全部是 "也训练" 比 "屏蔽" 低（差 -10.0 到 -9.0 个百分点，'
                      "平均 -9.3 ± 1.2 个百分点），"
                      f"平均差超出了种子之间的波动和评估噪声（配对 t 检验，p = {v.test.p:.3f}）。")


def test_with_many_seeds_one_pointing_the_other_way_does_not_hide_a_mean_beyond_the_spread():
    """Six seeds, five of them far above (the bench's off-policy arms at a quarter of the learning rate looked like
    this): the t-test across seeds decides, and the sentence says that one seed points the other way."""
    v = seed_verdict(diffs((0.65, 0.543), (0.635, 0.879), (0.689, 0.891), (0.605, 0.939), (0.451, 0.834),
                           (0.467, 0.672), se=0.025), "准确率", "A", "B")
    assert v.kind == "agree" and v.sign == 1 and v.test.p < ALPHA
    assert '6 个种子里 5 个是 "B" 比 "A" 高，1 个不是（差 -10.7 到 +38.3 个百分点' in v.text


def test_every_seed_beyond_its_noise_but_a_wide_spread_is_only_a_tendency():
    """The rule the page used before: -10.2, -4.7 and -3.7 points, each beyond 2 SE, all the same sign; with three
    seeds that happens for a change with no effect 25% of the time, and the spread is as large as the mean."""
    v = seed_verdict(diffs((0.934, 0.832), (0.949, 0.902), (0.969, 0.932), se=0.015), "准确率", "屏蔽", "也训练")
    assert all(d.beyond_noise for d in diffs((0.934, 0.832), (0.949, 0.902), (0.969, 0.932), se=0.015))
    assert v.kind == "lean" and v.sign == -1 and v.test.p > ALPHA
    assert "但平均差没有超出种子之间的波动和评估噪声（配对 t 检验，p = " in v.text
    assert "两臂毫无差别时，3 个种子方向碰巧一致的概率也有 25%）：是倾向，不是定论。" in v.text


def test_differences_all_inside_the_noise_are_no_visible_difference():
    v = seed_verdict(diffs((0.90, 0.905), (0.90, 0.895), (0.90, 0.91)), "准确率", "A", "B")
    assert v.kind == "noise" and v.sign == 0
    assert v.text == ('准确率：3 个种子上 "B" 与 "A" 之差（-0.5 到 +1.0 个百分点）都在评估噪声（±2 个标准误）之内：'
                      "这个规模上看不出差别。")
    same = seed_verdict([SeedDiff(s, 0.9, 0.9, 0.0) for s in range(3)], "准确率", "A", "B")
    assert same.kind == "noise" and same.text == '准确率：3 个种子上 "B" 与 "A" 的结果完全相同。'


def test_seeds_pointing_both_ways_give_no_conclusion():
    v = seed_verdict(diffs((0.90, 0.80), (0.90, 0.95), (0.90, 0.90)), "准确率", "A", "B")
    assert v.kind == "disagree" and v.sign == 0
    assert v.text == ('准确率：种子之间方向不一致（1 个种子 "B" 更高，1 个更低，1 个相同；差 -10.0 到 +5.0 个百分点）：'
                      "这个规模上得不出结论。")


def test_without_a_standard_error_there_is_no_verdict_whatever_the_signs():
    for values in ((2.5, 1.7), (2.5, 3.0)):
        v = seed_verdict([SeedDiff(s, *values, None) for s in range(4)], "字符数", "开", "关", unit="num")
        assert v.kind == "no_se" and v.sign == 0 and v.test is None
        assert v.text.endswith("这个量没有标准误，不知道评估噪声有多大，所以只列出数字，不下判断。")
    with pytest.raises(ValueError, match="standard error"):
        SeedDiff(0, 1.0, 2.0, None).beyond_noise
    with pytest.raises(ValueError):
        seed_verdict([], "x", "a", "b")
    one = seed_verdict([SeedDiff(0, 0.9, 0.8, 0.01)], "准确率", "A", "B")
    assert one.kind == "single" and "只有 1 个种子" in one.text and "不下结论" in one.text
    assert sign_chance(3) == 0.25 and sign_chance(1) == 1.0


def test_a_computed_quantity_has_standard_error_zero_and_is_judged_on_the_seeds_alone():
    """The simulated time comes from the cost model: no evaluation noise, only the spread across seeds."""
    steady = seed_verdict([SeedDiff(s, 2.5, 2.5 - d, 0.0) for s, d in enumerate((0.80, 0.82, 0.81))], "模拟用时",
                   "max_staleness=0", "max_staleness=2", unit="s", higher="长", lower="短")
    assert steady.kind == "agree" and steady.sign == -1 and "比 \"max_staleness=0\" 短" in steady.text
    wild = seed_verdict([SeedDiff(s, 2.5, 2.5 - d, 0.0) for s, d in enumerate((0.1, 0.9, 0.05))], "模拟用时",
                 "max_staleness=0", "max_staleness=2", unit="s", higher="长", lower="短")
    assert wild.kind == "lean"


def test_the_t_distribution_matches_its_table():
    for df, t in ((1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228)):  # two-sided 5% critical values
        assert t_two_sided_p(t, df) == pytest.approx(0.05, abs=2e-4)
        assert t_critical(df) == pytest.approx(t, abs=2e-3)
    assert t_two_sided_p(1.0, 2) == pytest.approx(1 - 1 / math.sqrt(3))  # df 2 in closed form
    assert t_two_sided_p(0.0, 5) == pytest.approx(1.0) and t_two_sided_p(math.inf, 3) == 0.0
    with pytest.raises(ValueError):
        across_seeds(diffs((0.5, 0.6)))


def test_the_paired_standard_error_is_that_of_the_per_problem_differences():
    a, b = [1, 1, 0, 0, 1, 0, 1, 1], [1, 0, 0, 1, 1, 0, 0, 1]
    d = [y - x for x, y in zip(a, b)]
    mean = sum(d) / len(d)
    want = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d))
    assert paired_se(a, b) == pytest.approx(want)
    assert paired_se(a, a) == 0.0  # the same answers on both arms: no evaluation noise in the difference
    seeds = paired([0, 1], [a, a], [b, a])
    assert [s.diff for s in seeds] == [pytest.approx(mean), 0.0] and seeds[1].beyond_noise is False
    assert paired([0], [0.5], [0.7])[0].se is None  # one number per seed: no SE
    # two independent samples (e.g. the lengths of each arm's correct answers): Welch's standard error
    x, y = [44, 44, 45, 47], [44, 46, 44]
    var = lambda v: sum((u - sum(v) / len(v)) ** 2 for u in v) / (len(v) - 1)  # noqa: E731
    assert unpaired_se(x, y) == pytest.approx(math.sqrt(var(x) / 4 + var(y) / 3))
    assert unpaired([0], [x], [y])[0].se == pytest.approx(unpaired_se(x, y))
    assert unpaired([0], [[44]], [y])[0].se is None  # one answer: its variance is unknown


# --- loss aggregations and Dr. GRPO's advantage ----------------------------------------------------

def _batch():
    gen = torch.Generator().manual_seed(3)
    logp_old = -torch.rand(3, 6, generator=gen, dtype=torch.float64)
    logp_new = logp_old + 0.3 * torch.randn(3, 6, generator=gen, dtype=torch.float64)
    adv = torch.randn(3, 6, generator=gen, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]], dtype=torch.float64)
    per_token = -torch.minimum(torch.exp(logp_new - logp_old) * adv,
                               torch.clamp(torch.exp(logp_new - logp_old), 0.8, 1.2) * adv)
    return (logp_new, logp_old, adv, mask, 0.2), per_token, mask


def test_the_three_aggregations_match_their_formulas():
    args, per_token, mask = _batch()
    token_mean = (per_token * mask).sum() / mask.sum()
    seq_mean = ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1)).mean()  # TRL "grpo"; an empty row counts 0
    constant = (per_token * mask).sum() / (3 * 48)                            # TRL "dr_grpo": B x max length
    assert aggregated(clipped_pg_loss, "token_mean") is clipped_pg_loss
    assert aggregated(clipped_pg_loss, "token_mean")(*args).item() == pytest.approx(token_mean.item())
    assert aggregated(clipped_pg_loss, "seq_mean")(*args).item() == pytest.approx(seq_mean.item())
    assert aggregated(clipped_pg_loss, "constant", 48)(*args).item() == pytest.approx(constant.item())
    with pytest.raises(ValueError, match="aggregation"):
        aggregated(clipped_pg_loss, "sum")
    with pytest.raises(ValueError, match="max_tokens"):
        aggregated(clipped_pg_loss, "constant")
    with pytest.raises(ValueError, match="loss_agg"):
        GRPOConfig(loss_agg="mean")


def test_dr_grpo_centres_within_the_group_without_dividing_by_its_std():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.07, 0.05, 0.05, 0.05])
    assert group_center(rewards, 4).tolist() == pytest.approx([0.5, -0.5, -0.5, 0.5, 0.015, -0.005, -0.005, -0.005])
    with pytest.raises(ValueError, match="scale_rewards"):
        GRPOConfig(scale_rewards="batch")
    assert GRPOConfig().default_advantages and not GRPOConfig(scale_rewards="none").default_advantages


# --- the async comparison at equal simulated time --------------------------------------------------

def _cliff_runs(pairs):
    """Fabricated ablations: per seed, the full reward arm's and the no-std arm's mean tool advantage."""
    from types import SimpleNamespace

    runs = {}
    for seed, (full, no_std) in enumerate(pairs):
        runs["cliff_full", seed] = SimpleNamespace(history=[{"tool_advantage": full}] * 4)
        runs["cliff_no_std", seed] = SimpleNamespace(history=[{"tool_advantage": no_std}] * 4)
    return SimpleNamespace(seeds=tuple(range(len(pairs))), runs=runs)


@pytest.mark.parametrize("pairs, says", [
    ([(-0.4, -0.04), (-0.2, -0.01), (-0.5, -0.05)], "5% 到 10%；3 个种子中符号和完整奖励时相同的有 3 个"),
    ([(-0.125, 0.032), (-0.2, -0.006)], "3% 到 26%；2 个种子中符号和完整奖励时相同的有 1 个"),
    ([(0.0, 0.01), (0.0, -0.01)], "完整奖励时它是 0，无从比较大小；2 个种子中符号和完整奖励时相同的有 0 个"),
])
def test_the_cliff_says_how_much_smaller_the_no_std_advantage_is_and_where_its_sign_stays(pairs, says):
    from agentrl_ref.teaching.ex7_agent_grpo.tables import _scaling_line

    line = _scaling_line(_cliff_runs(pairs), "cliff_full", "cliff_no_std", 4)
    assert line.startswith("不除以标准差时，调用工具的回答的平均 advantage ") and line.endswith(says + "。"), line


@pytest.mark.parametrize("advantage, before, after, fell", [
    (+0.03, 0.2, 0.03, 1), (-0.02, 0.2, 0.03, 0), (+0.03, 0.2, 0.5, 0), (0.0, 0.2, 0.1, 1)])
def test_the_cliff_counts_seeds_where_the_advantage_sign_does_not_explain_the_fall(advantage, before, after, fell):
    from types import SimpleNamespace

    from agentrl_ref.teaching.ex7_agent_grpo.tables import _sign_line

    runs = {("cliff_no_std", 0): SimpleNamespace(history=[{"tool_advantage": advantage}] * 4,
                                                  before=SimpleNamespace(tool_rate=before),
                                                  after=SimpleNamespace(tool_rate=after))}
    line = _sign_line(SimpleNamespace(seeds=(0,), runs=runs), "cliff_no_std", 4)
    assert line.endswith(f"种子：1 个中有 {fell} 个。"), line


def test_time_averaged_accuracy_weights_each_version_by_how_long_it_was_the_newest():
    versions = [VersionEval(0, 0.0, [0, 0]), VersionEval(1, 1.0, [1, 0]), VersionEval(2, 3.0, [1, 1])]
    assert _time_weights(versions, 4.0) == pytest.approx([0.75, 0.25])  # problem 0 right from t=1, problem 1 from t=3
    assert _time_weights(versions, 2.0) == pytest.approx([0.5, 0.0])    # the horizon cuts the last versions off


# --- the worker pool -------------------------------------------------------------------------------

def test_jobs_get_a_lambda_from_the_notebook_and_give_the_same_results_on_one_or_two_processes():
    offset = 10
    shift = lambda x: x + offset  # noqa: E731  a notebook's function: never pickled, inherited by fork

    def job(x, *, fn):
        torch.manual_seed(x)
        return fn(x), torch.rand(2).tolist(), os.getpid()

    two, stats = run_jobs(job, [(i,) for i in range(4)], context={"fn": shift}, processes=2)
    one, _ = run_jobs(job, [(i,) for i in range(4)], context={"fn": shift}, processes=1)
    assert [r[:2] for r in two] == [r[:2] for r in one] and [r[0] for r in one] == [10, 11, 12, 13]
    assert stats.cpu_seconds >= 0 and stats.busiest_worker <= stats.cpu_seconds + 1e-9
    if stats.processes == 2:
        assert os.getpid() not in {r[2] for r in two}


def _set_up_then_block(ready) -> None:
    forked_child()
    ready.set()
    threading.Event().wait()  # a worker waiting for work (on a lock, a queue) when the run is torn down


def _signals_received(sock) -> bytes:
    try:
        return sock.recv(64)
    except (BlockingIOError, TimeoutError):
        return b""


@pytest.mark.parametrize("set_up", [True, False])
def test_a_forked_worker_ends_on_sigterm_and_its_signals_stay_its_own(set_up):
    """An event loop in the parent (nbclient's, a notebook's) leaves a do-nothing SIGTERM handler and its wake-up
    socket (signal.set_wakeup_fd), and a forked worker inherits both: Pool.terminate() and stop_process() would wait
    forever for it, and each signal it gets would be written into the parent's loop, which would then take it for its
    own (nbclient's loop stops its kernel on SIGTERM). forked_child(), the first call of every worker (run_jobs,
    start_jobs, the two-process worker), lets go of the socket and puts SIGTERM back to its default.

    The parent's loop here is a socket pair of the test's own, so that no worker of the test, the control included,
    can reach the loop of this test process (the control once left a SIGTERM there, and the next kernel this process
    started was stopped at once)."""
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    loop_side, wakeup = socket.socketpair()
    loop_side.setblocking(False)
    wakeup.setblocking(False)
    old_handler = signal.signal(signal.SIGTERM, lambda *_: None)
    old_wakeup = signal.set_wakeup_fd(wakeup.fileno())
    try:
        worker = ctx.Process(target=_set_up_then_block if set_up else ready.set, args=(ready,) if set_up else (),
                             daemon=True)
        worker.start()
        assert ready.wait(60)
        if not set_up:  # the control: the same handler and socket kept, the process ignores SIGTERM
            worker.join(60)
            worker = ctx.Process(target=lambda: (ready.set(), threading.Event().wait()), daemon=True)
            ready.clear()
            worker.start()
            assert ready.wait(60)
        worker.terminate()
        worker.join(30 if set_up else 3)  # a hang, not a speed: a process that takes SIGTERM ends within milliseconds
        survived = worker.is_alive()
        if survived:   # it handles the SIGTERM it got (writing it, if it still holds the socket), then is killed
            loop_side.settimeout(60)
        received = _signals_received(loop_side)   # one that died of SIGTERM has written all it ever will
        if survived:
            worker.kill()
            worker.join()
    finally:
        signal.set_wakeup_fd(old_wakeup)
        signal.signal(signal.SIGTERM, old_handler)
        loop_side.close()
        wakeup.close()
    assert survived == (not set_up)
    if set_up:
        assert worker.exitcode == -signal.SIGTERM
        assert received == b"", received
    else:
        assert received == bytes([signal.SIGTERM]), received   # what forked_child() keeps from the parent's loop


# --- where each part comes from --------------------------------------------------------------------

def test_the_printout_names_the_students_function_and_the_references():
    def format_reward(completion):  # a student's ex1, pasted into the notebook
        return 0.0
    format_reward.__module__ = "__main__"
    text = describe_parts({"format_reward": format_reward})
    assert "练习 1 format_reward" in text and "你的代码（__main__." in text
    assert "参考实现（agentrl_ref.verifiable_reward.accuracy_reward）" in text
    assert origin(clipped_pg_loss) == "参考实现（agentrl_ref.agent.loss.clipped_pg_loss）"
    assert parts_summary({"format_reward": format_reward}) == "用到的零件：你的 format_reward，其余是参考实现"
    assert parts_summary() == "用到的零件：全部是参考实现"


def test_no_demo_cell_shadows_a_pasted_part_with_the_reference():
    """A demo cell that ran `from agentrl_ref import format_reward` would replace the function a student pasted, and
    MY_PARTS run again afterwards would quietly pick the reference: demo cells reach the references as ref.<name>."""
    import ast

    from agentrl_ref.agent import EXERCISE_OF
    from course import source_notebook

    cells = source_notebook("ex7_agent_grpo").cells
    start = next(i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "my_parts")
    for cell in cells[start:]:
        if cell.cell_type != "code":
            continue
        tree = ast.parse("\n".join(line for line in cell.source.splitlines() if not line.startswith("await ")))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "agentrl_ref":
                shadowed = {alias.asname or alias.name for alias in node.names} & set(EXERCISE_OF)
                assert not shadowed, (cell.metadata.nbgrader.grade_id, shadowed)
    assert "import agentrl_ref as ref" in cells[start].source and "describe_parts(MY_PARTS" in cells[start].source


def test_a_students_run_far_from_the_reference_is_told_so_in_one_line():
    from types import SimpleNamespace

    from agentrl_ref.teaching.ex7_agent_grpo import reference_line
    from agentrl_ref.agent.evaluation import EvalResult

    def ev(correct):
        n = len(correct)
        return EvalResult(n, sum(correct) / n, 0.0, float("nan"), float("nan"), 0.0, 0.0, float("nan"), 1.0,
                          correct=correct)

    reference = ev([1] * 90 + [0] * 10)
    far = SimpleNamespace(after={"sampled": ev([0] * 100)})
    near = SimpleNamespace(after={"sampled": ev([1] * 89 + [0] * 11)})
    line = reference_line(far, reference)
    assert "参考实现训练后留出集准确率（采样）是 90.0%，你的是 0.0%" in line and "超出了评估噪声" in line
    assert "逐个换回参考实现" in line
    assert "在评估噪声" in reference_line(near, reference) and "之内" in reference_line(near, reference)
    assert reference_line(far, None) == ""


def test_the_benchmarks_page_says_its_capstone_numbers_come_from_one_run():
    """Numbers on the benchmarks page that come from a run say so (they differ from the executed page's and between
    machines): its capstone sections show bench/capstone.py's records, each with its run's command, commit, machine
    and load (bench/report.py, tests/test_bench_records.py), and it runs more seeds than the page's PAGE_SEEDS."""
    from course import ROOT

    page = (ROOT / "book" / "benchmarks.md").read_text(encoding="utf-8")
    start = page.index("## 综合练习：`bench/capstone.py`")
    section = page[start:page.index("\n## ", start + 1)]
    assert "make bench" in section and "PAGE_SEEDS" in section
    for name in ("capstone-main", "capstone-processes", "capstone-ablations", "capstone-offpolicy-lr", "capstone-page"):
        assert f'report.show("{name}")' in section, name
