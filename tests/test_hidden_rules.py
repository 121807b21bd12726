"""Validate never promises what grading takes back (issue 26).

Every hidden test of every exercise (each probe between BEGIN/END HIDDEN TESTS in grader/source) is listed
below with the sentence of the student's notebook that states its rule, and the visible check that runs the
same rule in the same test cell, so that check() and nbgrader's Validate fail where grading would take the
point; or, where there is none, the reason. Hidden tests may check more *cases* of a rule; a rule they check
must be one the student can read and, when it is cheap to check, one a visible test checks too.

And what a student meets: every realistic mistake of tests/mutations/ fails a visible test of the very cell
whose point grading takes (run here on the answer cells as a student fills them, without a kernel), and the
instructor's own answers pass every visible test.
"""
from __future__ import annotations

import asyncio
import contextlib
import io
import re
from typing import NamedTuple

import nbformat
import pytest

from agentrl_ref.checks import _REGISTRY, _is_async, _load_all, _run_one, _run_one_async
from course import (ASSIGNMENTS, cell_namespace, filled, mutated_fills, mutations, reference_fills, source_notebook,
                    student_notebook)


class Rule(NamedTuple):
    sentence: str                 # verbatim from the student's notebook (a markdown cell, a docstring or a comment)
    visible: tuple[str, ...] = ()  # visible tests (run in the same test cell) that check this rule
    why: str = ""                 # required when there is no visible check: why not


# assignment -> "<test cell>.<hidden probe name>" (the name as written in the notebook) -> its rule
AUDIT: dict[str, dict[str, Rule]] = {
    "ex1_format_reward": {
        "test_seed_table.seed_table_variants": Rule(
            "去掉首尾空白后，全文恰好是**一段** `<think>…</think>`，紧跟**一段** `<answer>…</answer>`",
            ("seed_table",)),
        "test_multiline.multiline": Rule(
            "标签里的内容可以跨行，也可以是空的。",
            ("multi_line",)),
        "test_repeated_nested.nested_and_repeated": Rule(
            "四个标签区分大小写，各出现**恰好一次**：重复的组、嵌套的标签都不合格",
            ("repeated_groups", "nested_tags")),
        "test_anchored_both_ends.anchored_both_ends": Rule(
            "规则的边界：回答开头和结尾的多余文字",
            ("text_before_think", "text_after_answer")),
        "test_robust_inputs.robust_inputs": Rule(
            "Windows 换行（`\\r\\n`）、中文和全角空白、大小写不同的标签、空字符串，以及一长串重复的标签",
            ("robust_inputs",)),
        "test_matches_reference.random_strings": Rule(
            "你的函数要在一批随机拼出来的字符串上和本题的规则给出相同的分数。",
            why="不是新规则，是同一组规则的更多输入：它比较的每一条规则（整段匹配、开头结尾、空白、大小写、重复和嵌套）上面几格"
                "都有可见测试；可见的随机比较需要一份参考规则，而本题的评分环境里不能有参考实现。"),
    },
    "ex2_verifiable_reward": {
        "test_seed_table.seed_table_variants": Rule(
            "`\\frac{a}{b}`（也认 `\\dfrac`、`\\tfrac` 和前面的负号）化成 `Fraction`",
            ("seed_table", "frac_forms")),
        "test_extract.extract_cases": Rule(
            "找到 `text` 里**最后一个** `\\boxed{`，返回它和**与之配对的** `}` 之间的内容（大括号可以嵌套）",
            ("extract_boxes", "extract_edge_cases")),
        "test_extract.bare_boxed_after_the_box": Rule(
            "一个完整的框后面又出现了不带 `{` 的 `\\boxed`（比如回答里提到这个命令的名字），"
            "这时答案仍然是前面那个框里的内容",
            ("extract_edge_cases",)),
        "test_extract.random_texts": Rule(
            "没有 `\\boxed{`，或者最后一个 `\\boxed{` 直到结尾都没闭合（输出被截断），返回 `None`。",
            ("extract_boxes", "extract_edge_cases")),
        "test_extract.long_answer": Rule(
            "隐藏测试再换一批输入，外加一批随机拼出来的字符串和一条很长的回答。",
            ("extract_boxes",),
            why="同一条抽取规则，一条很长的输入；可见测试查规则本身。"),
        "test_never_raises.not_numbers": Rule(
            "其他任何东西（`inf`、`nan`、`1/0`、文字……）返回 `None`，从不抛异常。",
            ("never_raises",)),
        "test_never_raises.weird_completions": Rule(
            "奖励函数面对的是策略模型的**任意**输出，所以还有一条硬要求：**绝不抛异常**",
            ("never_raises",)),
        "test_exact_values.exact_comparisons": Rule(
            "一格检查比较是**精确**的（不经过浮点数）",
            ("exact",)),
        "test_exact_values.exact_values": Rule(
            "本题用 Python 的 `Fraction`：精确的有理数，没有浮点误差。",
            ("exact",)),
        "test_zero_answer.zero_answers": Rule(
            "一格检查标准答案恰好是 0 的题",
            ("zero_answer",)),
        "test_zero_answer.zero_values": Rule(
            "`Fraction(0)` 的真值是 `False`。",
            ("zero_answer",)),
    },
    "ex3_loss_mask": {
        "test_raw_mask.other_trajectories": Rule(
            "模型自己生成的 token（assistant 的段）记 1；",
            ("seed_raw_mask", "roles_from_data")),
        "test_raw_mask.roles_built_at_run_time": Rule(
            "从文件、分词器或网络读进来的角色名却不是，`is` 就会判成不相等",
            ("roles_from_data",)),
        "test_shift.short_masks": Rule(
            "shifted[t] = mask[t+1]",
            ("seed_shifted_mask",)),
        "test_shift.random_masks": Rule(
            "shifted[t] = mask[t+1]",
            ("seed_shifted_mask",)),
        "test_mask_edge_cases.edge_cases": Rule(
            "空轨迹、长度为 0 的段、首尾相接的两段 assistant、不在任何段里的 token",
            ("edge_cases",)),
        "test_mask_edge_cases.mask_of_a_kept_input": Rule(
            "以及函数不能改动传进来的列表。",
            ("edge_cases",)),
        "test_mask_edge_cases.inputs_after_the_call": Rule(
            "以及函数不能改动传进来的列表。",
            ("edge_cases",)),
        "test_chatml_rule.every_role_and_part": Rule(
            "其他角色的任何部分都不训练",
            ("chatml_rule", "names_from_data")),
        "test_chatml_rule.names_built_at_run_time": Rule(
            "第一格检查规则本身，也用运行时读进来的名字查",
            ("names_from_data",)),
        "test_real_conversation.two_tool_calls_per_token": Rule(
            "第二格把你的规则用到上面那段真实对话的每个 token 上，和本题的规则逐个比较",
            ("real_conversation",)),
    },
    "ex4_async_rollout": {
        "test_seed_harness.harness_2_workers": Rule(
            "消费端：get_batch() 挂起，直到队列里攒了 batch_size 条或更多，再按先进先出交出 batch_size 条",
            ("seed_harness",)),
        "test_seed_harness.harness_3_workers": Rule(
            "消费端：get_batch() 挂起，直到队列里攒了 batch_size 条或更多，再按先进先出交出 batch_size 条",
            ("seed_harness",)),
        "test_seed_harness.harness_overflow_after_training": Rule(
            "容量上限 max_capacity：已满时再 put，队头（进来最早的）那条被挤出去",
            ("seed_harness",)),
        "test_fifo_oldest_first.fifo_ten_items": Rule(
            "`popleft()` 从左边取，拿到的是**最早**放进去的",
            ("fifo_oldest_first",)),
        "test_fifo_oldest_first.fifo_waiting_trainer": Rule(
            "`popleft()` 从左边取，拿到的是**最早**放进去的",
            ("fifo_oldest_first",)),
        "test_drops_oldest_when_full.drops": Rule(
            "队列满了以后再放：挤掉的应该是最老的那一条，而且只在真的满了时才挤。",
            ("drops_oldest_when_full",)),
        "test_no_partial_batch.partial_one_by_one": Rule(
            "trainer 不能拿到残缺的 batch：数据不够时它必须接着等",
            ("no_partial_batch",)),
        "test_no_partial_batch.partial_with_leftover": Rule(
            "trainer 不能拿到残缺的 batch：数据不够时它必须接着等",
            ("no_partial_batch",)),
        "test_spurious_wakeup.extra_wakeups": Rule(
            "被多余地叫醒（数据还不够，或者被别的 trainer 抢先拿走）时必须接着等",
            ("extra_wakeups",)),
        "test_spurious_wakeup.batch_taken_by_another_trainer": Rule(
            "被多余地叫醒（数据还不够，或者被别的 trainer 抢先拿走）时必须接着等",
            ("extra_wakeups",)),
        "test_producers_finish.finish_%d_producers_%d_each_batch_%d": Rule(
            "rollout worker 放完最后一条轨迹时，如果队列里正好够一个 batch，trainer 必须拿到它",
            ("last_batch_when_producers_finish",)),
        "test_several_trainers.observer_batch_1": Rule(
            '同一个 Condition 上还有一个等别的条件的协程（只等"队列非空"），它也必须按时被叫醒',
            ("observer_on_same_condition",)),
        "test_several_trainers.observer_batch_3": Rule(
            '同一个 Condition 上还有一个等别的条件的协程（只等"队列非空"），它也必须按时被叫醒',
            ("observer_on_same_condition",)),
        "test_several_trainers.two_of_three_cancelled": Rule(
            "被叫醒的那个 trainer 恰好在同一时刻被取消（停机、超时都会这样），另一个 trainer 仍然必须拿到数据",
            ("several_trainers",)),
        "test_several_trainers.four_trainers_batch_1": Rule(
            "被叫醒的那个 trainer 恰好在同一时刻被取消（停机、超时都会这样），另一个 trainer 仍然必须拿到数据",
            ("several_trainers",)),
        "test_several_producers.many_seed_%d": Rule(
            "轨迹一条不丢、一条不重复，每个 worker 的轨迹按放入的顺序被训练",
            ("several_workers_and_trainers",)),
    },
    "ex5_composite_reward": {
        "test_cosine_endpoints.endpoints_128_characters": Rule(
            "答对 (acc = 1)：L = 0 时 1.0，沿半个余弦降到 L >= max_len 时的 0.0",
            ("cosine_endpoints",)),
        "test_wrong_branch.wrong_branch_by_length": Rule(
            "始终在 −1 和 0 之间、随长度单调上升、和答对的一支互为相反数",
            ("wrong_branch",)),
        "test_wrong_branch.correct_branch_by_length": Rule(
            "始终在 −1 和 0 之间、随长度单调上升、和答对的一支互为相反数",
            ("wrong_branch",)),
        "test_wrong_branch.wrong_branch_other_max_len": Rule(
            "答错 (acc = 0)：L = 0 时 -1.0，沿半个余弦升到 L >= max_len 时的 0.0",
            ("wrong_branch",)),
        "test_ratio_clamped.past_max_len": Rule(
            "超过 `max_len` 的回答按 `max_len` 算，余弦不会掉头",
            ("past_max_len",)),
        "test_seed_example.wrong_answer_256_characters": Rule(
            'R(completion, gold) 返回一个 dict：各分量的分数，再加上加权总分 "total"。',
            ("seed_example",)),
        "test_seed_example.right_answer_384_characters": Rule(
            'R(completion, gold) 返回一个 dict：各分量的分数，再加上加权总分 "total"。',
            ("seed_example",)),
        "test_seed_example.three_components": Rule(
            'R(completion, gold) 返回一个 dict：各分量的分数，再加上加权总分 "total"。',
            ("seed_example",)),
        "test_key_mismatch.mismatched_keys": Rule(
            '下一格检查"有权重、没函数"、"有函数、没权重"和"个数相同但名字不同"',
            ("key_mismatch", "key_mismatch_other_ways")),
        "test_key_mismatch.same_keys_other_order": Rule(
            "不能少、不能多，书写顺序不算数",
            ("key_mismatch_other_ways",)),
        "test_total_weighted.negative_weight": Rule(
            "检查 `total` 真的是按名字逐项加权，而不是把分量直接相加、或者按位置配对",
            ("total_by_name",)),
        "test_total_weighted.zero_weights": Rule(
            "检查 `total` 真的是按名字逐项加权，而不是把分量直接相加、或者按位置配对",
            ("total_by_name",)),
        "test_total_weighted.one_component": Rule(
            "总分 = 每个分量的分数乘以它名下的权重，再全部加起来",
            ("total_by_name",)),
    },
    "ex6_token_credit": {
        "test_last_token.other_masks": Rule(
            "loss_mask: 形状 [T]，取值只有 0 和 1（整数、bool、float 张量都行）",
            ("seed_last_token", "last_token_masks")),
        "test_uniform.other_masks": Rule(
            "loss_mask: 形状 [T]，取值只有 0 和 1（整数、bool、float 张量都行）",
            ("seed_uniform", "uniform_masks")),
        "test_last_token.random_masks": Rule(
            "策略 1：整份奖励只记在最后一个参与训练的 token 上，其余位置都是 0。",
            ("seed_last_token", "last_token_masks")),
        "test_kl_weighted.other_inputs": Rule(
            "每个位置的权重 = 它的 masked_kl 占总和的比例（训练位置上的权重合起来是 1）",
            ("seed_kl_weighted", "kl_outside_mask")),
        "test_conservation.random_last_token": Rule(
            "`seq_reward` 要一分不差地分完，mask 为 0 的位置一律是 0。",
            ("conservation",)),
        "test_conservation.random_uniform": Rule(
            "`seq_reward` 要一分不差地分完，mask 为 0 的位置一律是 0。",
            ("conservation",)),
        "test_conservation.random_kl_weighted": Rule(
            "`seq_reward` 要一分不差地分完，mask 为 0 的位置一律是 0。",
            ("conservation",)),
    },
    "ex7_agent_grpo": {
        "test_clip_branches.random_batches": Rule(
            "被裁剪的是概率比（限制在 [1 - clip_eps, 1 + clip_eps] 内），advantage 原样乘上去",
            ("clip_branches",)),
        "test_clip_branches.one_token_at_a_time": Rule(
            "逐 token 的损失：两项里取较小（更保守）的一项，再取相反数",
            ("clip_branches",)),
        "test_token_mean.padded_batches": Rule(
            "只累加 mask 为 1 的 token，除以这些 token 的个数（整批一起数；个数为 0 时按 1 算）",
            ("token_mean",)),
        "test_token_mean.short_and_long": Rule(
            "只累加 mask 为 1 的 token，除以这些 token 的个数（整批一起数；个数为 0 时按 1 算）",
            ("token_mean",)),
        "test_gradient.gradients": Rule(
            "logp_new:   [B, T]，当前策略下每个目标 token 的 log-prob（带梯度）",
            ("gradient",)),
        "test_contract.contract": Rule(
            "形状不一致时抛 `ValueError`，mask 全为 0 时返回 0，mask 是 float、int 还是 bool 结果都一样，"
            "输入是 float64 时结果也是 float64。",
            ("contract",)),
        "test_token_advantages.random_groups": Rule(
            "rewards:   [B]，每条轨迹的总奖励；相邻的 group_size 条是同一道题的一组回答",
            ("group_broadcast",),
            why="可见测试查组内标准化和广播；隐藏的几组还换了组大小、bool 和 int 的 mask，以及 6 条回答按 4"
                " 条一组（ValueError）。这几种由题目给的练习 6 的 group_normalize、broadca"
                "st_to_tokens 处理（导入格写明了“下面的填空直接调用”），只改这两个空的答案碰不到它们；Value"
                "Error 这一条在本题的文字里没有写明。"),
    },
    "ex8_token_in_out": {
        "test_message_ids.other_conversations": Rule(
            "结果是带上这条消息（到它为止）的渲染里，接在不带它的渲染后面的那部分。",
            ("chatml_deltas", "default_system_prompt")),
        "test_message_ids.strip_think_before_the_last_user": Rule(
            "拼起来就是整段对话的渲染；模板会看上下文，单独渲染一条消息不等于它添的 id",
            ("chatml_deltas",)),
        "test_not_append_only.think_boundaries": Rule(
            "不带这条消息的渲染不是带上它的渲染的前缀时（模板不是 append-only），报 ValueError。",
            ("not_append_only",)),
        "test_trajectory.random_trajectories": Rule(
            "把一条多轮 rollout 拼成 (ids, loss_mask, logprobs)，三个列表一样长、逐位对齐。",
            ("agent_trajectory",)),
        "test_trajectory_edges.edge_trajectories": Rule(
            "没有回合（只有 prompt）、只有一轮采样（后面不接分隔符）、连着两段 observation、空的分隔符、空的 prompt",
            ("trajectory_edges",)),
        "test_drift.random_ids": Rule(
            "encode(decode(ids)) 和 ids 第一个不同的位置；两者相同时返回 None。",
            ("drift_cases", "drift_types")),
    },
    "ex9_rollout_correction": {
        "test_weights.random_batches": Rule(
            "权重不带梯度，mask 为 0 的位置不算进任何一个权重。",
            ("token_weights", "sequence_weights", "weight_edges")),
        "test_no_grad.grad_on_random_batches": Rule(
            "三个级别的权重都不能带上它",
            ("no_gradient",)),
        "test_tis.random_caps": Rule(
            "TIS：截断的重要性权重 min(w, cap)，w = exp(log_weights)；mask 为 0 的位置是 0。",
            ("tis_cases",)),
        "test_mis.random_ranges": Rule(
            "MIS：比率 w = exp(log_weights) 落在 [low, high] 里的位置保留 w，之外的记 0；mask 为 0 的位置是 0。",
            ("mis_cases",)),
        "test_report.random_reports": Rule(
            '两个引擎在训练的 token 上差多远：{"tokens", "k3_kl", "max_abs_diff", "out_of_range"}。',
            ("report_cases",)),
    },
    "ex10_partial_rollout": {
        "test_extend.random_segments": Rule(
            "每个生成的 token 记下它的行为 log-prob（采样时的 log-prob）和生成它的策略版本，三个列表一样长、逐位对齐。",
            ("segments_in_order",)),
        "test_misuse.random_misuse": Rule(
            "用错的时候要报 `ValueError`，而且轨迹保持原样：",
            ("misuse",)),
        "test_staleness.random_versions": Rule(
            "版本比 `current_version` 还新的 token 不可能存在（trainer 还没发布那个版本），遇到就报 `ValueError`。",
            ("per_token", "from_the_future")),
        "test_oldest.random_oldest": Rule(
            "整条轨迹**最旧的** token 落后几个版本（还没有生成的 token 时是 0）。",
            ("oldest",)),
        "test_admit.random_admission": Rule(
            "一条轨迹能用，当且仅当它最旧的 token 落后不超过 `max_staleness` 个版本：`current_version - min(versions) "
            "<= max_staleness`。",
            ("admission_table",)),
    },
    "ex11_dapo_sampling": {
        "test_informative.random_groups": Rule(
            "每组一个 bool：组内奖励不全相同（最大值 - 最小值 > 0）时为 True。",
            ("spread_cases", "layout_cases")),
        "test_fill.random_scripts": Rule(
            "只留下有信息的组，直到凑够 target_groups 个，或者已经调用了 max_draws 次。",
            ("fills_and_counts",)),
        "test_fill_bound.never_informative": Rule(
            "已经调用了 `max_draws` 次：不再抽，返回手上有的，`full=False`",
            ("gives_up",)),
        "test_clip.random_losses": Rule(
            "每个 token 的 -min(r·A, clip(r, 1 - eps_low, 1 + eps_high)·A)，r = exp(logp_new - logp_old)，",
            ("token_cases", "batch_mean")),
        "test_entropy.random_logits": Rule(
            "每个位置上下一个 token 的分布的熵 -Σ p log p（p = softmax(logits)），在 loss_mask 为 1 的位置上平均。",
            ("entropy_cases",)),
    },
}

PROBE = re.compile(r'\bprobe(?:_calls|_async)?\(\s*"([^"]+)"')
RUN_TEST = re.compile(r'run_test\(\s*"([\w.]+)"')


def _hidden_probes(assignment: str) -> list[str]:
    """"<test cell>.<probe name>" of every hidden test of the instructor notebook."""
    found = []
    for cell in source_notebook(assignment).cells:
        if "### BEGIN HIDDEN TESTS" in cell.source:
            hidden = cell.source.split("### BEGIN HIDDEN TESTS", 1)[1].split("### END HIDDEN TESTS", 1)[0]
            found += [f"{cell.metadata.nbgrader.grade_id}.{name}" for name in PROBE.findall(hidden)]
    assert len(found) == len(set(found)), f"{assignment}: two hidden probes of one cell share a name"
    return found


def _visible_tests(assignment: str) -> dict[str, list[str]]:
    """grade_id of each test cell -> the visible tests it runs (short names)."""
    return {cell.metadata.nbgrader.grade_id: [t.split(".", 1)[1] for t in RUN_TEST.findall(cell.source)]
            for cell in source_notebook(assignment).cells if cell.metadata.get("nbgrader", {}).get("grade")}


def _student_text(assignment: str) -> str:
    return "\n".join(cell.source for cell in student_notebook(assignment).cells)


def test_the_audit_covers_every_exercise():
    assert set(AUDIT) == set(ASSIGNMENTS)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_hidden_test_is_audited(assignment):
    """The table lists exactly the hidden tests the instructor notebook has: a new hidden test needs its line."""
    assert set(_hidden_probes(assignment)) == set(AUDIT[assignment])


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_hidden_rule_is_written_where_the_student_reads_it(assignment):
    text = _student_text(assignment)
    missing = {name: rule.sentence for name, rule in AUDIT[assignment].items() if rule.sentence not in text}
    assert not missing, f"not in notebooks/{assignment}.ipynb: {missing}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_hidden_rule_has_a_visible_check_in_its_own_cell_or_a_reason(assignment):
    _load_all()
    visible = _visible_tests(assignment)
    for name, rule in AUDIT[assignment].items():
        cell = name.split(".", 1)[0]
        assert rule.visible or len(rule.why) > 40, f"{name}: neither a visible check nor a reason"
        for test in rule.visible:
            assert f"{assignment}.{test}" in _REGISTRY, f"{name}: no visible test {test}"
            assert test in visible[cell], f"{name}: {test} is not run in {cell}, where the hidden test is"


def test_a_hidden_test_without_a_visible_check_is_rare():
    """The exceptions, counted: one cell of random strings (exercise 1). A new one needs a reason and this number."""
    without = [(a, name) for a, rules in AUDIT.items() for name, rule in rules.items() if not rule.visible]
    assert without == [("ex1_format_reward", "test_matches_reference.random_strings")]


# ---- what a student meets: the answer cells run as filled, the visible tests of each test cell ---------------------

def _namespace(assignment: str, fills: list[str]) -> dict:
    """The student notebook's own code cells (answers and read-only imports; no checks, tests or demos), filled, run."""
    nb = nbformat.reads(filled(assignment, fills), as_version=4)
    namespace = cell_namespace(assignment)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if (cell.cell_type != "code" or meta.get("grade") or "demo" in cell.metadata.get("tags", [])
                or "check(" in cell.source):
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(cell.source, meta.get("grade_id", "cell"), "exec"), namespace)
    return namespace


def _failures(assignment: str, grade_id: str, namespace: dict) -> dict[str, str]:
    """The visible tests of one test cell that fail on the namespace: short name -> the report's failure line."""
    failed = {}
    for test in _visible_tests(assignment)[grade_id]:
        spec = _REGISTRY[f"{assignment}.{test}"]
        objects = [namespace[name] for name in spec.needs]
        ok, message, _, _ = asyncio.run(_run_one_async(spec, objects)) if _is_async(spec) else _run_one(spec, objects)
        if not ok:
            failed[test] = message
    return failed


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # exercise 3's `is` mistakes: Python warns at compile time
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_realistic_mistake_fails_a_visible_test_of_the_cell_that_grades_it(assignment):
    _load_all()
    reference = _namespace(assignment, reference_fills(assignment))
    for grade_id in _visible_tests(assignment):
        assert _failures(assignment, grade_id, reference) == {}, f"the instructor's answers fail {grade_id}"
    missed = []
    for label, (changes, target) in mutations(assignment).items():
        if not _failures(assignment, target, _namespace(assignment, mutated_fills(assignment, changes))):
            missed.append(f"{label} (graded in {target})")
    assert not missed, "Validate says 'Success!' and grading takes a point:\n" + "\n".join(missed)
