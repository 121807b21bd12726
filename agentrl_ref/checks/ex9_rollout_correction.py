"""Visible tests of exercise 9 (rollout-training mismatch): importance weights at token, sequence and geometric level,
TIS, MIS and the mismatch report. Each test returns what it observed, which run_test records for grading.

The expected values are written out here in plain Python floats (agentrl_ref.rollout_correction, the answer, is not
in exercise 9's grading sandbox). The batch is what a trainer holds: a prompt (mask 0; the sampler gave no log-prob
there, 0.0, while the trainer's forward pass did), sampled tokens (mask 1) and padding (mask 0).

Every failing test gives the hint of the mistake its part's diagnosis finds first (diagnose_weights, diagnose_tis,
diagnose_mis, diagnose_report).
"""
from __future__ import annotations

import math

import torch

from agentrl_ref.checks import expect, visible_test

EX = "ex9_rollout_correction"

# two sequences of 7 positions: 2 prompt tokens, the sampled tokens, padding
TRAINER = [[-2.3, -0.7, -0.20, -1.10, -0.05, -3.00, 0.0],
           [-1.9, -0.4, -0.60, -2.50, -0.90, 0.0, 0.0]]
SAMPLER = [[0.0, 0.0, -0.25, -1.00, -0.06, -1.20, 0.0],
           [0.0, 0.0, -0.50, -2.60, -0.70, 0.0, 0.0]]
MASK = [[0, 0, 1, 1, 1, 1, 0],
        [0, 0, 1, 1, 1, 0, 0]]
LEVELS = ("token", "sequence", "geometric")


def batch(requires_grad: bool = False):
    trainer = torch.tensor(TRAINER, requires_grad=requires_grad)
    return trainer, torch.tensor(SAMPLER), torch.tensor(MASK)


def expected_log_weights(trainer, sampler, mask, level: str) -> list[list[float]]:
    """log(pi_train / pi_sampler) per position at the level, 0.0 off the mask, written out row by row."""
    out = []
    for t_row, s_row, m_row in zip(trainer, sampler, mask):
        diffs = [float(a) - float(b) for a, b, m in zip(t_row, s_row, m_row) if m]
        total = sum(diffs)
        value = {"sequence": total, "geometric": total / len(diffs) if diffs else 0.0}.get(level)
        out.append([(float(a) - float(b) if value is None else value) if m else 0.0
                    for a, b, m in zip(t_row, s_row, m_row)])
    return out


def _rows(x) -> list[list[float]]:
    return [[round(float(v), 5) for v in row] for row in torch.as_tensor(x).detach().tolist()]


def _close(got, want, tol: float = 1e-5) -> bool:
    got = torch.as_tensor(got).detach().double()
    want = torch.as_tensor(want, dtype=torch.float64)
    return got.shape == want.shape and bool(torch.allclose(got, want, rtol=tol, atol=1e-6))


GRAD_HINT = ("TODO 1：权重不带梯度：它只改变 loss 按什么分布求平均，不是要优化的目标。"
             "(trainer_logprobs - sampler_logprobs).detach()，"
             "或者在 torch.no_grad() 里算。")
MASK_HINT = ("TODO 2：mask 为 0 的位置（prompt、工具结果、padding）不是采样出来的，两边的 log-prob 对不上"
             "（采样器在 prompt 上没有 log-prob）：先用 torch.where(keep, diff, 0) 把它们的差记 0，再求和。")
MEAN_HINT = ("TODO 3：序列级的比率是每个 token 比率的**乘积**，在 log 空间里是**求和**（sum），不是求平均："
             "平均是几何平均（geometric），那是另一个级别。")
GEO_HINT = ("TODO 4：几何平均是 log 比率的和除以这条序列**训练的 token 数**（keep.sum），"
            "不是除以序列长度 T：prompt 和 padding 不算；一个也没有时除数记 1（clamp(min=1)）。")
TOKEN_HINT = ("TODO 1、2：token 级的 log 比率是 trainer 的 log-prob 减去采样器的 log-prob（方向别反），"
              "不训练的位置记 0。")


def diagnose_weights(log_importance_weights) -> str | None:
    """The first mistake found on the course's batch: gradient, mask, sequence as a mean, geometric over T."""
    try:
        trainer, sampler, mask = batch(requires_grad=True)
        got = {level: log_importance_weights(trainer, sampler, mask, level) for level in LEVELS}
    except Exception:
        return None
    if not _close(got["token"], expected_log_weights(TRAINER, SAMPLER, MASK, "token")):
        return TOKEN_HINT
    sums = [[sum(a - b for a, b in zip(t, s)) * m for m in mr] for t, s, mr in zip(TRAINER, SAMPLER, MASK)]
    if _close(got["sequence"], sums):   # the sum taken over every position, prompt and padding included
        return MASK_HINT
    if not _close(got["sequence"], expected_log_weights(TRAINER, SAMPLER, MASK, "sequence")):
        return MEAN_HINT
    if not _close(got["geometric"], expected_log_weights(TRAINER, SAMPLER, MASK, "geometric")):
        return GEO_HINT
    if any(bool(getattr(g, "requires_grad", False)) for g in got.values()):
        return GRAD_HINT
    return None


@visible_test(EX, "log_importance_weights", "token 级：每个训练的 token 一个 log 比率，不训练的位置是 0")
def token_weights(log_importance_weights):
    trainer, sampler, mask = batch()
    got = log_importance_weights(trainer, sampler, mask, "token")
    want = expected_log_weights(TRAINER, SAMPLER, MASK, "token")
    print(f"  得到 {_rows(got)}")
    print(f"  期望 {_rows(want)}")
    expect(_close(got, want), "token 级的 log 权重得到 {got}，期望 {want}",
           hint=diagnose_weights(log_importance_weights) or TOKEN_HINT, got=_rows(got), want=_rows(want))
    return got


@visible_test(EX, "log_importance_weights", "sequence 级是 token 比率的乘积，geometric 级是它的几何平均")
def sequence_weights(log_importance_weights):
    trainer, sampler, mask = batch()
    observed = []
    for level in ("sequence", "geometric"):
        got = log_importance_weights(trainer, sampler, mask, level)
        want = expected_log_weights(TRAINER, SAMPLER, MASK, level)
        observed.append(got)
        print(f"  {level}：得到 {_rows(got)[0][:4]}…   期望 {_rows(want)[0][:4]}…")
        expect(_close(got, want), "{level} 级的 log 权重得到 {got}，期望 {want}",
               hint=diagnose_weights(log_importance_weights) or MEAN_HINT, level=level, got=_rows(got),
               want=_rows(want))
    return observed


@visible_test(EX, "log_importance_weights", "没有训练的 token 的序列、一维输入（一条序列）")
def weight_edges(log_importance_weights):
    observed = []
    cases = [(torch.tensor([[-1.0, -2.0]]), torch.tensor([[0.0, 0.0]]), torch.tensor([[0, 0]])),
             (torch.tensor([-1.0, -0.5, -2.0]), torch.tensor([-1.5, -0.5, -1.0]), torch.tensor([1, 1, 0]))]
    for trainer, sampler, mask in cases:
        for level in LEVELS:
            got = log_importance_weights(trainer, sampler, mask, level)
            want = expected_log_weights(trainer.view(-1, trainer.shape[-1]).tolist(),
                                        sampler.view(-1, trainer.shape[-1]).tolist(),
                                        mask.view(-1, trainer.shape[-1]).tolist(), level)
            want_t = torch.tensor(want).view(trainer.shape)
            observed.append(got)
            expect(_close(got, want_t), "mask {mask}、{level} 级：得到 {got}，期望 {want}",
                   hint=diagnose_weights(log_importance_weights) or GEO_HINT, mask=mask.tolist(), level=level,
                   got=torch.as_tensor(got).detach().tolist(), want=want_t.tolist())
    return observed


@visible_test(EX, "log_importance_weights", "权重不带梯度：trainer 的 log-prob 要梯度，权重也不要")
def no_gradient(log_importance_weights):
    trainer, sampler, mask = batch(requires_grad=True)
    flags = []
    for level in LEVELS:
        got = log_importance_weights(trainer, sampler, mask, level)
        flags.append(bool(got.requires_grad))
        print(f"  {level}：requires_grad = {got.requires_grad}")
        expect(not got.requires_grad, "{level} 级的权重 requires_grad = True：梯度会经过权重流回 trainer",
               hint=diagnose_weights(log_importance_weights) or GRAD_HINT, level=level)
    return flags


# ---- TIS and MIS ------------------------------------------------------------------------------------------------

RATIOS = [[0.1, 0.5, 1.0, 1.9, 2.0, 5.0, 1.0]]      # token ratios; the last position is not trained (log 0)
RATIO_MASK = [[1, 1, 1, 1, 1, 1, 0]]


def _log_weights():
    return torch.tensor([[math.log(r) for r in RATIOS[0]]])


def expected_tis(ratios, mask, cap) -> list[list[float]]:
    return [[min(r, cap) if m else 0.0 for r, m in zip(row, mrow)] for row, mrow in zip(ratios, mask)]


def expected_mis(ratios, mask, low, high) -> list[list[float]]:
    return [[r if m and low <= r <= high else 0.0 for r, m in zip(row, mrow)] for row, mrow in zip(ratios, mask)]


TIS_HINT = ("TODO 5：截断的是比率 w = exp(log_weights) 本身：exp(log_weights).clamp(max=cap)。"
            "截断 log 比率（log_weights.clamp(max=cap)）"
            "等于把比率截在 e^cap，cap = 2 时是 7.4，不是 2。")
SIDE_HINT = ("TODO 6：MIS 保留的是落在 [low, high] **里面**的比率：(w >= low) & (w <= high)；"
             "落在外面的 token 两个引擎差得太远，不参与更新（IcePop）。")
KEEP_HINT = ("TODO 7：不训练的位置（mask 为 0）的权重是 0：它们的 log 比率是 0，比率 1 正好落在区间里，"
             "所以要和 mask 一起：mask.bool() & inside。")


def diagnose_tis(truncated_weights) -> str | None:
    try:
        got = truncated_weights(_log_weights(), torch.tensor(RATIO_MASK), 2.0)
    except Exception:
        return None
    if not _close(got, expected_tis(RATIOS, RATIO_MASK, 2.0)):
        return TIS_HINT
    return None


def diagnose_mis(masked_weights) -> str | None:
    try:
        got = masked_weights(_log_weights(), torch.tensor(RATIO_MASK), 0.5, 2.0)
    except Exception:
        return None
    want = expected_mis(RATIOS, RATIO_MASK, 0.5, 2.0)
    if _close(got, want):
        return None
    everywhere = expected_mis(RATIOS, [[1] * len(RATIOS[0])], 0.5, 2.0)
    if _close(got, everywhere):
        return KEEP_HINT
    return SIDE_HINT


@visible_test(EX, "truncated_weights", "TIS：比率大于 cap 的截在 cap，小的原样保留，不训练的位置是 0")
def tis_cases(truncated_weights):
    observed = []
    for cap in (2.0, 1.0, 10.0):
        got = truncated_weights(_log_weights(), torch.tensor(RATIO_MASK), cap)
        want = expected_tis(RATIOS, RATIO_MASK, cap)
        observed.append(got)
        print(f"  cap = {cap:g}：得到 {_rows(got)[0]}   期望 {_rows(want)[0]}")
        expect(_close(got, want), "比率 {ratios}、cap = {cap}：得到 {got}，期望 {want}",
               hint=diagnose_tis(truncated_weights) or TIS_HINT, ratios=RATIOS[0], cap=cap, got=_rows(got)[0],
               want=_rows(want)[0])
    return observed


@visible_test(EX, "masked_weights", "MIS：比率在 [low, high] 里的保留，之外的记 0，不训练的位置是 0")
def mis_cases(masked_weights):
    observed = []
    for low, high in ((0.5, 2.0), (0.0, 1.0), (0.2, 5.0)):
        got = masked_weights(_log_weights(), torch.tensor(RATIO_MASK), low, high)
        want = expected_mis(RATIOS, RATIO_MASK, low, high)
        observed.append(got)
        print(f"  [{low:g}, {high:g}]：得到 {_rows(got)[0]}   期望 {_rows(want)[0]}")
        expect(_close(got, want), "比率 {ratios}、区间 [{low}, {high}]：得到 {got}，期望 {want}",
               hint=diagnose_mis(masked_weights) or SIDE_HINT, ratios=RATIOS[0], low=low, high=high,
               got=_rows(got)[0], want=_rows(want)[0])
    return observed


# ---- the mismatch report ----------------------------------------------------------------------------------------

def expected_report(trainer, sampler, mask, low, high) -> dict:
    diffs = [float(a) - float(b) for tr, sr, mr in zip(trainer, sampler, mask) for a, b, m in zip(tr, sr, mr) if m]
    if not diffs:
        return {"tokens": 0, "k3_kl": 0.0, "max_abs_diff": 0.0, "out_of_range": 0.0}
    return {"tokens": len(diffs), "k3_kl": sum(math.expm1(d) - d for d in diffs) / len(diffs),
            "max_abs_diff": max(abs(d) for d in diffs),
            "out_of_range": sum(not low <= math.exp(d) <= high for d in diffs) / len(diffs)}


REPORT_MASK_HINT = ("TODO 8：只看训练的 token：(trainer_logprobs - sampler_logprobs)[keep]。"
                    "prompt 和 padding 上两边的 log-prob 本来就对不上（采样器在 prompt 上没有 log-prob），"
                    "算进来就把差距说大了。")
K3_HINT = ("TODO 9：k3 是每个 token 的 r - 1 - log r（r = exp(log_ratio)，trainer 比采样器）再取平均；"
           "它对每个 token 都 ≥ 0，方向反了就是另一个 KL。")
MAX_HINT = "TODO 10：要的是差的**绝对值**的最大值：log_ratio.abs().max()，采样器给的 log-prob 偏高偏低都算。"
SHARE_HINT = "TODO 11：要的是比率落在 [low, high] 之外的 token 的**比例**：条件的 .double().mean()，不是个数（sum）。"


def diagnose_report(mismatch_report) -> str | None:
    trainer, sampler, mask = batch()
    try:
        got = dict(mismatch_report(trainer, sampler, mask, 0.9, 1.1))
    except Exception:
        return None
    want = expected_report(TRAINER, SAMPLER, MASK, 0.9, 1.1)
    every = expected_report(TRAINER, SAMPLER, [[1] * len(row) for row in MASK], 0.9, 1.1)
    if got.get("tokens") == every["tokens"] or _near(got.get("k3_kl"), every["k3_kl"]):
        return REPORT_MASK_HINT
    if not _near(got.get("k3_kl"), want["k3_kl"]):
        return K3_HINT
    if not _near(got.get("max_abs_diff"), want["max_abs_diff"]):
        return MAX_HINT
    if not _near(got.get("out_of_range"), want["out_of_range"]):
        return SHARE_HINT
    return None


def _near(got, want) -> bool:
    try:
        return math.isclose(float(got), want, rel_tol=1e-5, abs_tol=1e-7)
    except (TypeError, ValueError):
        return False


REPORT_CASES = [((TRAINER, SAMPLER, MASK), 0.9, 1.1), ((TRAINER, SAMPLER, MASK), 0.5, 2.0),
                (([[-1.0, -1.0]], [[-1.0, -1.0]], [[1, 1]]), 0.5, 2.0),
                (([[-1.0, -1.0]], [[0.0, 0.0]], [[0, 0]]), 0.5, 2.0)]


@visible_test(EX, "mismatch_report", "差距报告：k3 KL、最大的 |Δ log p|、区间外 token 的比例，只看训练的 token")
def report_cases(mismatch_report):
    observed = []
    for (trainer, sampler, mask), low, high in REPORT_CASES:
        got = dict(mismatch_report(torch.tensor(trainer), torch.tensor(sampler), torch.tensor(mask), low, high))
        want = expected_report(trainer, sampler, mask, low, high)
        observed.append(got)
        print(f"  [{low:g}, {high:g}]：得到 {_short(got)}")
        print(f"  {' ' * len(f'[{low:g}, {high:g}]')}  期望 {_short(want)}")
        for key in ("tokens", "k3_kl", "max_abs_diff", "out_of_range"):
            expect(key in got and _near(got[key], want[key]), "区间 [{low}, {high}]：{key} 得到 {got}，期望 {want}",
                   hint=diagnose_report(mismatch_report) or K3_HINT, low=low, high=high, key=key,
                   got=_short(got).get(key), want=_short(want)[key])
    return observed


def _short(report: dict) -> dict:
    return {k: (v if type(v) is int else round(float(v), 6) if isinstance(v, float) or hasattr(v, "item")
                else repr(v))
            for k, v in report.items()}
