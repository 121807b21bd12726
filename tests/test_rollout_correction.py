"""Exercise 9's reference (agentrl_ref.rollout_correction): importance weights at three levels, TIS, MIS and the
mismatch report, checked against the formulas written out here (TRL 1.16's vllm_importance_sampling_* modes, verl's
rollout_corr_helper.py), on random batches."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from agentrl_ref.rollout_correction import (
    LEVELS, importance_weights, log_importance_weights, masked_weights, mismatch_report, truncated_weights,
)


@st.composite
def batches(draw, max_b=3, max_t=6):
    """(trainer, sampler, mask): float32 log-probs (B, T) and a 0/1 mask; masked positions hold junk."""
    b, t = draw(st.integers(1, max_b)), draw(st.integers(1, max_t))
    lp = st.floats(-8, 0, width=32)
    trainer = torch.tensor(draw(st.lists(st.lists(lp, min_size=t, max_size=t), min_size=b, max_size=b)))
    delta = torch.tensor(draw(st.lists(st.lists(st.floats(-1, 1, width=32), min_size=t, max_size=t),
                                       min_size=b, max_size=b)))
    mask = torch.tensor(draw(st.lists(st.lists(st.integers(0, 1), min_size=t, max_size=t), min_size=b, max_size=b)))
    sampler = trainer - delta
    junk = draw(st.sampled_from([0.0, -1e4, float("-inf"), float("nan")]))
    sampler = torch.where(mask.bool(), sampler, torch.full_like(sampler, junk))
    return trainer, sampler, mask


def _by_hand(trainer, sampler, mask, level):
    """The weights written out sequence by sequence, in float64."""
    out = torch.zeros(trainer.shape, dtype=torch.float64)
    for i in range(trainer.shape[0]):
        trained = [t for t in range(trainer.shape[1]) if mask[i, t]]
        logs = [float(trainer[i, t]) - float(sampler[i, t]) for t in trained]
        for k, t in enumerate(trained):
            if level == "token":
                out[i, t] = math.exp(logs[k])
            elif level == "sequence":
                out[i, t] = math.prod(math.exp(x) for x in logs)
            else:
                out[i, t] = math.prod(math.exp(x) for x in logs) ** (1 / len(logs))
    return out


@settings(max_examples=150, deadline=None)
@given(batches(), st.sampled_from(LEVELS))
def test_weights_are_the_ratios_at_each_level_and_zero_off_the_mask(batch, level):
    trainer, sampler, mask = batch
    w = importance_weights(trainer, sampler, mask, level)
    assert w.shape == trainer.shape and w.dtype == torch.float32 and not w.requires_grad
    assert torch.isfinite(w).all()
    assert (w[~mask.bool()] == 0).all()
    torch.testing.assert_close(w.double(), _by_hand(trainer, sampler, mask, level), rtol=1e-4, atol=1e-6)


@settings(max_examples=100, deadline=None)
@given(batches())
def test_sequence_is_the_token_product_and_geometric_its_root(batch):
    trainer, sampler, mask = batch
    tok = log_importance_weights(trainer, sampler, mask, "token")
    seq = log_importance_weights(trainer, sampler, mask, "sequence")
    geo = log_importance_weights(trainer, sampler, mask, "geometric")
    n = mask.sum(-1, keepdim=True)
    for i in range(mask.shape[0]):
        row = mask[i].bool()
        if row.any():
            assert torch.allclose(seq[i][row], tok[i].sum().expand(int(n[i])), atol=1e-5)
            assert torch.allclose(geo[i][row] * n[i], seq[i][row], atol=1e-5)


@settings(max_examples=100, deadline=None)
@given(batches(), st.sampled_from(LEVELS))
def test_what_is_not_trained_never_enters_a_weight(batch, level):
    trainer, sampler, mask = batch
    other = torch.where(mask.bool(), sampler, torch.full_like(sampler, -3.0))
    other_trainer = torch.where(mask.bool(), trainer, torch.full_like(trainer, -7.0))
    assert torch.equal(importance_weights(trainer, sampler, mask, level),
                       importance_weights(other_trainer, other, mask, level))


@settings(max_examples=100, deadline=None)
@given(batches(), st.sampled_from(LEVELS), st.floats(0.05, 10))
def test_tis_truncates_the_ratio_at_the_cap(batch, level, cap):
    trainer, sampler, mask = batch
    log_w = log_importance_weights(trainer, sampler, mask, level)
    w = importance_weights(trainer, sampler, mask, level)
    tis = truncated_weights(log_w, mask, cap)
    assert not tis.requires_grad and (tis[~mask.bool()] == 0).all()
    assert (tis <= cap * (1 + 1e-6)).all()
    torch.testing.assert_close(tis, torch.minimum(w, torch.tensor(cap, dtype=w.dtype)) * mask, rtol=1e-5, atol=1e-7)


@settings(max_examples=100, deadline=None)
@given(batches(), st.sampled_from(LEVELS), st.floats(0, 1.5), st.floats(0, 2))
def test_mis_keeps_exactly_the_ratios_inside_the_range(batch, level, low, extra):
    trainer, sampler, mask = batch
    high = low + extra
    log_w = log_importance_weights(trainer, sampler, mask, level)
    w = log_w.exp()
    mis = masked_weights(log_w, mask, low, high)
    inside = mask.bool() & (w >= low) & (w <= high)
    assert torch.equal(mis != 0, inside & (w != 0))
    assert torch.equal(mis[inside], w[inside])


def test_no_gradient_flows_through_the_weights():
    trainer = torch.tensor([[-1.0, -0.5, -2.0]], requires_grad=True)
    sampler = torch.tensor([[-1.1, -0.4, -2.5]])
    mask = torch.tensor([[1, 1, 0]])
    for level in LEVELS:
        w = importance_weights(trainer, sampler, mask, level)
        assert not w.requires_grad and w.grad_fn is None
        loss = (w * trainer).sum()   # the weight multiplies a loss term that does carry the gradient
        (grad,) = torch.autograd.grad(loss, trainer)
        torch.testing.assert_close(grad, w)   # d/dtrainer of w * trainer is w: nothing through w itself
    assert trainer.grad is None


def test_sequence_weight_grows_with_length_while_the_token_weight_does_not():
    t = torch.arange(1, 201)
    trainer = torch.full((1, 200), -1.0)
    sampler = trainer - 0.01 * (t % 2 * 2 - 1 + 0.5)   # a small bias of +0.005 per token on average
    mask = torch.ones(1, 200, dtype=torch.long)
    seq = importance_weights(trainer, sampler, mask, "sequence")[0, 0]
    geo = importance_weights(trainer, sampler, mask, "geometric")[0, 0]
    assert math.isclose(float(seq), math.exp(200 * 0.005), rel_tol=1e-4)
    assert math.isclose(float(geo), math.exp(0.005), rel_tol=1e-4)


def test_the_safety_bound_keeps_long_sequences_finite():
    trainer = torch.zeros(1, 1000)
    sampler = torch.full((1, 1000), -0.5)   # log-ratio 500 over the sequence
    w = importance_weights(trainer, sampler, torch.ones(1, 1000), "sequence")
    assert torch.isfinite(w).all() and math.isclose(float(w[0, 0]), math.exp(20), rel_tol=1e-5)
    log_w = log_importance_weights(trainer, sampler, torch.ones(1, 1000), "sequence")
    assert (truncated_weights(log_w, torch.ones(1, 1000), 2.0) == 2.0).all()
    assert (masked_weights(log_w, torch.ones(1, 1000), 0.5, 2.0) == 0).all()


@settings(max_examples=100, deadline=None)
@given(batches(), st.floats(0.1, 1), st.floats(1, 4))
def test_report_matches_the_formulas(batch, low, high):
    trainer, sampler, mask = batch
    report = mismatch_report(trainer, sampler, mask, low, high)
    keep = mask.bool()
    d = (trainer - sampler)[keep].double()
    assert report["tokens"] == int(keep.sum())
    if report["tokens"] == 0:
        assert report == {"tokens": 0, "k3_kl": 0.0, "max_abs_diff": 0.0, "out_of_range": 0.0}
        return
    assert report["k3_kl"] >= 0
    assert math.isclose(report["k3_kl"], float((d.exp() - 1 - d).mean()), rel_tol=1e-6, abs_tol=1e-9)
    assert math.isclose(report["max_abs_diff"], float(d.abs().max()), rel_tol=1e-9)
    r = d.exp()
    assert math.isclose(report["out_of_range"], float(((r < low) | (r > high)).double().mean()))


def test_matched_engines_report_nothing():
    lp = torch.log_softmax(torch.randn(2, 5, 7, generator=torch.Generator().manual_seed(0)), -1)[..., 0]
    report = mismatch_report(lp, lp.clone(), torch.ones(2, 5))
    assert report == {"tokens": 10, "k3_kl": 0.0, "max_abs_diff": 0.0, "out_of_range": 0.0}
    assert (importance_weights(lp, lp, torch.ones(2, 5), "sequence") == 1).all()


def test_one_dimensional_input_is_one_sequence():
    w = importance_weights([-1.0, -2.0], [-1.5, -2.0], [1, 1], "sequence")
    assert w.shape == (2,) and math.isclose(float(w[0]), math.exp(0.5), rel_tol=1e-6)


@pytest.mark.parametrize("call", [
    lambda: importance_weights(torch.zeros(2, 3), torch.zeros(2, 4), torch.ones(2, 3)),
    lambda: importance_weights(torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(3, 2)),
    lambda: importance_weights(torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(2, 3), "batch"),
    lambda: importance_weights(torch.zeros(2, 3), torch.zeros(2, 3), torch.full((2, 3), 2)),
    lambda: importance_weights(torch.tensor(0.0), torch.tensor(0.0), torch.tensor(1)),
    lambda: importance_weights(torch.tensor([float("nan")]), torch.tensor([0.0]), torch.tensor([1])),
    lambda: truncated_weights(torch.zeros(1, 2), torch.ones(1, 2), 0.0),
    lambda: truncated_weights(torch.zeros(1, 2), torch.ones(1, 2), -1.0),
    lambda: truncated_weights(torch.zeros(1, 2), torch.ones(1, 2), float("inf")),
    lambda: truncated_weights(torch.zeros(1, 2), torch.ones(1, 3), 2.0),
    lambda: masked_weights(torch.zeros(1, 2), torch.ones(1, 2), 2.0, 0.5),
    lambda: masked_weights(torch.zeros(1, 2), torch.ones(1, 2), -0.1, 2.0),
    lambda: mismatch_report(torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2), 3.0, 2.0),
])
def test_misuse_is_a_clear_value_error(call):
    with pytest.raises(ValueError):
        call()


# correct answers a student may write instead of the instructor's: each passes every visible test of exercise 9
ALTERNATIVES = {
    "log_importance_weights": """
import torch

def log_importance_weights(trainer_logprobs, sampler_logprobs, mask, level="token"):
    with torch.no_grad():
        keep = mask.bool()
        log_ratio = (trainer_logprobs - sampler_logprobs).masked_fill(~keep, 0.0)
        if level == "token":
            return log_ratio
        total = log_ratio.sum(-1, keepdim=True)
        if level == "geometric":
            total = total / torch.clamp(mask.sum(-1, keepdim=True), min=1)
        return total * keep
""",
    "truncated_weights": """
import math
import torch

def truncated_weights(log_weights, mask, cap):
    return torch.exp(torch.clamp(log_weights, max=math.log(cap))) * mask
""",
    "masked_weights": """
import torch

def masked_weights(log_weights, mask, low, high):
    w = log_weights.exp()
    outside = (w < low) | (w > high)
    return w.masked_fill(outside | (mask == 0), 0.0)
""",
    "mismatch_report": """
import torch

def mismatch_report(trainer_logprobs, sampler_logprobs, mask, low=0.5, high=2.0):
    d = (trainer_logprobs.double() - sampler_logprobs.double())[mask == 1]
    n = len(d)
    if n == 0:
        return {"tokens": 0, "k3_kl": 0.0, "max_abs_diff": 0.0, "out_of_range": 0.0}
    r = d.exp()
    return {"tokens": n, "k3_kl": (torch.expm1(d) - d).sum().item() / n,
            "max_abs_diff": max(d.max().item(), -d.min().item()),
            "out_of_range": ((r < low).sum() + (r > high).sum()).item() / n}
""",
}


@pytest.mark.parametrize("part", sorted(ALTERNATIVES))
def test_correct_alternatives_pass_every_visible_test(part):
    from agentrl_ref.checks import _REGISTRY, _load_all, _run_one

    _load_all()
    namespace: dict = {}
    exec(ALTERNATIVES[part], namespace)
    tests = [t for t in _REGISTRY.values() if t.part == part and t.test_id.startswith("ex9_rollout_correction.")]
    assert tests
    for test in tests:
        ok, message, _, _ = _run_one(test, [namespace[name] for name in test.needs])
        assert ok, f"{test.test_id}: {message}"


def test_the_checks_agree_with_the_reference_module():
    """The visible tests' written-out formulas (checks/ex9_rollout_correction.py) and agentrl_ref.rollout_correction
    are one set of formulas: the reference passes every visible test."""
    from agentrl_ref import rollout_correction
    from agentrl_ref.checks import _REGISTRY, _load_all, _run_one

    _load_all()
    for test in (t for t in _REGISTRY.values() if t.test_id.startswith("ex9_rollout_correction.")):
        ok, message, _, _ = _run_one(test, [getattr(rollout_correction, name) for name in test.needs])
        assert ok, f"{test.test_id}: {message}"


# a student's own wording of every blank of the notebook (blank index -> text): right, and graded as right
ALTERNATIVE_FILLS = {
    0: "trainer_logprobs.detach() - sampler_logprobs",
    1: "diff.masked_fill(~keep, 0.0)",
    3: "log_ratio.sum(-1, keepdim=True) / torch.clamp(keep.sum(-1, keepdim=True), min=1)",
    4: "torch.minimum(torch.exp(log_weights), torch.tensor(float(cap)))",
    5: "~((w < low) | (w > high))",
    6: "inside & (mask == 1)",
    7: "torch.masked_select(trainer_logprobs - sampler_logprobs, keep)",
    8: "(torch.expm1(log_ratio) - log_ratio).mean()",
    9: "torch.max(log_ratio.max(), -log_ratio.min())",
    10: "((ratio < low) | (ratio > high)).double().sum() / n",
}


def test_the_notebook_filled_another_right_way_passes_every_visible_test():
    import nbformat

    from agentrl_ref.checks import _REGISTRY, _load_all
    from course import answer_namespace, filled, mutated_fills, visible_failures

    name = "ex9_rollout_correction"
    nb = nbformat.reads(filled(name, mutated_fills(name, ALTERNATIVE_FILLS)), as_version=4)
    namespace = answer_namespace(name, nb)
    _load_all()
    assert sum(t.test_id.startswith(name + ".") for t in _REGISTRY.values()) == 7
    assert visible_failures(lambda test: test.test_id.startswith(name + "."), namespace.__getitem__) == {}
