"""Exercise 6: sequence reward -> tokens (last / uniform / KL-weighted), batched versions, GRPO advantages (E8)."""
from __future__ import annotations

import statistics

import pytest
import torch
from hypothesis import given, settings, strategies as st

from conftest import STRICT_WARNINGS
from agentrl_ref.token_credit import (
    assign_reward_kl_weighted, assign_reward_kl_weighted_batched, assign_reward_last_token,
    assign_reward_last_token_batched, assign_reward_uniform, assign_reward_uniform_batched, broadcast_to_tokens,
    group_normalize, reward_to_go,
)

pytestmark = STRICT_WARNINGS  # no torch or matplotlib warning on any path (see conftest)
PROPS = settings(max_examples=100, deadline=None)

MASK = torch.tensor([0, 0, 1, 1, 0, 1, 1, 1, 0])
KL = torch.tensor([0.0, 0.0, 0.1, 0.5, 0.0, 2.0, 0.1, 0.3, 0.0])
PER_SAMPLE = [assign_reward_last_token, assign_reward_uniform,
              lambda r, m: assign_reward_kl_weighted(r, m, torch.rand(m.shape))]


def test_seed_expectations():
    last = assign_reward_last_token(1.0, MASK)
    assert last.tolist() == [0, 0, 0, 0, 0, 0, 0, 1, 0]
    uniform = assign_reward_uniform(1.0, MASK)
    assert torch.allclose(uniform, MASK * 0.2)
    weighted = assign_reward_kl_weighted(1.0, MASK, KL)
    assert weighted[5].item() == pytest.approx(2.0 / 3.0, abs=1e-6)
    assert weighted.argmax().item() == 5
    for out in (last, uniform, weighted):
        assert out.dtype == torch.float32 and out.shape == MASK.shape


def test_all_zero_mask_gives_zeros():
    zeros = torch.zeros(5, dtype=torch.long)
    for fn in PER_SAMPLE:
        assert fn(3.0, zeros).tolist() == [0.0] * 5
    assert assign_reward_kl_weighted(3.0, zeros, torch.ones(5)).tolist() == [0.0] * 5
    assert assign_reward_last_token(1.0, torch.zeros(0)).shape == (0,)


def test_kl_fallback_is_uniform():
    assert torch.equal(assign_reward_kl_weighted(1.0, MASK, torch.zeros(9)), assign_reward_uniform(1.0, MASK))
    only_off_mask = torch.tensor([5.0, 5, 0, 0, 5, 0, 0, 0, 5])  # KL only where the mask is 0
    assert torch.equal(assign_reward_kl_weighted(1.0, MASK, only_off_mask), assign_reward_uniform(1.0, MASK))


def test_bool_and_float_masks_work():
    for mask in (MASK.bool(), MASK.float(), MASK.double()):
        assert torch.equal(assign_reward_uniform(1.0, mask), assign_reward_uniform(1.0, MASK))


def test_misuse_raises_value_error():
    with pytest.raises(ValueError):
        assign_reward_kl_weighted(1.0, MASK, KL[:-1])
    with pytest.raises(ValueError):
        assign_reward_kl_weighted(1.0, MASK, -KL)
    with pytest.raises(ValueError):
        assign_reward_kl_weighted(1.0, MASK, KL * float("nan"))
    with pytest.raises(ValueError):
        assign_reward_uniform(1.0, MASK.unsqueeze(0))
    with pytest.raises(ValueError):
        assign_reward_uniform(1.0, MASK * 2)
    with pytest.raises(ValueError):
        assign_reward_last_token(1.0, [0, 1])
    with pytest.raises(ValueError):
        assign_reward_uniform_batched(torch.ones(3), MASK.repeat(2, 1))
    with pytest.raises(ValueError):
        assign_reward_last_token_batched(torch.ones(2, 1), MASK.repeat(2, 1))
    with pytest.raises(ValueError):
        assign_reward_kl_weighted_batched(torch.ones(2), MASK.repeat(2, 1), KL.repeat(3, 1))
    with pytest.raises(ValueError):
        broadcast_to_tokens(torch.ones(2), MASK)


@st.composite
def batches(draw):
    b, t = draw(st.integers(1, 6)), draw(st.integers(0, 24))
    mask = torch.tensor(draw(st.lists(st.lists(st.integers(0, 1), min_size=t, max_size=t), min_size=b, max_size=b)),
                        dtype=torch.long).reshape(b, t)
    finite = st.floats(-10, 10, allow_nan=False, width=32)
    rewards = torch.tensor(draw(st.lists(finite, min_size=b, max_size=b)), dtype=torch.float32)
    kl_values = st.floats(0, 5, width=32) | st.just(0.0)
    kl = torch.tensor(draw(st.lists(kl_values, min_size=b * t, max_size=b * t)), dtype=torch.float32).reshape(b, t)
    return rewards, mask, kl


@PROPS
@given(batches())
def test_spreading_sums_to_the_reward_on_the_mask_and_is_zero_off_it(batch):
    rewards, mask, kl = batch
    for r, m, k in zip(rewards.tolist(), mask, kl):
        for out in (assign_reward_uniform(r, m), assign_reward_kl_weighted(r, m, k)):
            assert out.dtype == torch.float32
            assert (out[m == 0] == 0).all()
            expected = r if m.any() else 0.0
            assert out.sum().item() == pytest.approx(expected, rel=1e-4, abs=1e-4)


@PROPS
@given(batches())
def test_last_token_is_nonzero_only_at_the_last_mask_position(batch):
    rewards, mask, _ = batch
    for r, m in zip(rewards.tolist(), mask):
        out = assign_reward_last_token(r, m)
        ones = [i for i, v in enumerate(m.tolist()) if v]
        expected = [0.0] * len(m)
        if ones:
            expected[ones[-1]] = r
        assert out.tolist() == pytest.approx(expected)


@PROPS
@given(batches())
def test_batched_equals_per_sample(batch):
    rewards, mask, kl = batch
    pairs = [
        (assign_reward_last_token_batched(rewards, mask),
         [assign_reward_last_token(r, m) for r, m in zip(rewards, mask)]),
        (assign_reward_uniform_batched(rewards, mask),
         [assign_reward_uniform(r, m) for r, m in zip(rewards, mask)]),
        (assign_reward_kl_weighted_batched(rewards, mask, kl),
         [assign_reward_kl_weighted(r, m, k) for r, m, k in zip(rewards, mask, kl)]),
    ]
    for batched, rows in pairs:
        assert batched.dtype == torch.float32 and batched.shape == mask.shape
        assert torch.allclose(batched, torch.stack(rows) if rows else batched, rtol=1e-6, atol=1e-6)


@PROPS
@given(batches())
def test_e8_last_token_reward_to_go_equals_broadcast(batch):
    """gamma = 1: reward stored at the last trained token gives every trained token the same return."""
    rewards, mask, _ = batch
    returns = reward_to_go(assign_reward_last_token_batched(rewards, mask)) * mask
    assert torch.allclose(returns, broadcast_to_tokens(rewards, mask))


def test_reward_to_go_with_discount():
    out = reward_to_go(torch.tensor([0.0, 0.0, 1.0]), gamma=0.5)
    assert out.tolist() == [0.25, 0.5, 1.0]
    assert torch.equal(reward_to_go(torch.tensor([[1.0, 2.0]])), torch.tensor([[3.0, 2.0]]))


def test_group_normalize():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    adv = group_normalize(rewards, 4)
    assert adv.dtype == torch.float32
    scale = torch.tensor([1.0, 0.0, 0.0, 1.0]).std().item() + 1e-6  # unbiased std, as verl / TRL
    assert adv[:4].tolist() == pytest.approx([0.5 / scale, -0.5 / scale, -0.5 / scale, 0.5 / scale])
    assert adv[4:].tolist() == [0.0] * 4  # all-equal group: no signal
    for bad_size in (0, 1, 3, 2.0):
        with pytest.raises(ValueError):
            group_normalize(rewards, bad_size)
    with pytest.raises(ValueError):
        group_normalize(rewards.view(2, 4), 4)


@PROPS
@given(st.integers(1, 5), st.integers(2, 6), st.data())
def test_group_normalize_has_zero_mean_per_group(groups, size, data):
    values = data.draw(st.lists(st.floats(-100, 100, width=32), min_size=groups * size, max_size=groups * size))
    adv = group_normalize(torch.tensor(values), size).view(groups, size)
    assert torch.allclose(adv.mean(dim=1), torch.zeros(groups), atol=1e-4)
    assert (adv.abs() <= size).all()  # |z| <= (n-1)/sqrt(n) < n for the unbiased std


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_group_normalize_tiny_spread_next_to_a_large_mean(dtype):
    # found by hypothesis: in float32 the spread cancels and the advantages no longer sum to 0
    adv = group_normalize(torch.tensor([42.875, 42.875, 42.890625], dtype=dtype), 3)
    assert adv.dtype == torch.float32
    assert abs(adv.double().sum().item()) < 1e-6
    values = [42.875, 42.875, 42.890625]
    mean, std = statistics.fmean(values), statistics.stdev(values)
    assert adv.tolist() == pytest.approx([(v - mean) / (std + 1e-6) for v in values], rel=1e-6)


def test_long_sums_do_not_drift():
    # 1M tokens: float32 running sums would lose about 1e-3 of the total; float64 sums keep 1e-6
    n = 1_000_000
    kl = torch.full((n,), 0.1)
    mask = torch.ones(n, dtype=torch.long)
    assert assign_reward_kl_weighted(1.0, mask, kl).double().sum().item() == pytest.approx(1.0, abs=1e-5)
    batched = assign_reward_kl_weighted_batched(torch.tensor([1.0]), mask.view(1, -1), kl.view(1, -1))
    assert batched.double().sum().item() == pytest.approx(1.0, abs=1e-5)
    returns = reward_to_go(torch.full((n,), 0.1))
    assert returns[0].item() == pytest.approx(0.1 * n, rel=1e-6)


def test_broadcast_to_tokens():
    mask = torch.stack([MASK, torch.zeros(9, dtype=torch.long)])
    out = broadcast_to_tokens(torch.tensor([0.5, -1.0]), mask)
    assert out.dtype == torch.float32
    assert out[0].tolist() == (MASK * 0.5).tolist() and out[1].tolist() == [0.0] * 9


DTYPES = [torch.bool, torch.uint8, torch.int32, torch.long, torch.float16, torch.float32, torch.float64]


def _column_major(t):
    """Same values, not contiguous: the batched functions' torch path instead of the numpy one."""
    return t.T.contiguous().T


@pytest.mark.parametrize("layout", [lambda t: t, _column_major], ids=["contiguous", "column-major"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_never_write_into_their_inputs(dtype, layout):
    mask = layout(torch.stack([MASK, torch.zeros(9, dtype=torch.long), torch.ones(9, dtype=torch.long)]).to(dtype))
    kl = torch.stack([KL, KL, torch.zeros(9)])  # row 2 falls back to uniform
    rewards = torch.tensor([1.0, -2.0, 3.0])
    before = (mask.clone(), kl.clone(), rewards.clone())
    outs = [assign_reward_last_token_batched(rewards, mask), assign_reward_uniform_batched(rewards, mask),
            assign_reward_kl_weighted_batched(rewards, mask, kl), broadcast_to_tokens(rewards, mask)]
    for got, want in zip((mask, kl, rewards), before):
        assert torch.equal(got, want)
    expected = [torch.stack([assign_reward_last_token(r, m) for r, m in zip(rewards, mask)]),
                torch.stack([assign_reward_uniform(r, m) for r, m in zip(rewards, mask)]),
                torch.stack([assign_reward_kl_weighted(r, m, k) for r, m, k in zip(rewards, mask, kl)])]
    for got, want in zip(outs, expected):
        assert got.dtype == torch.float32 and torch.allclose(got, want, rtol=1e-6, atol=1e-6)
    assert outs[2][2].tolist() == pytest.approx([3.0 / 9] * 9)  # the fallback row is uniform


def test_kl_fallback_rows_mixed_with_weighted_rows():
    mask = MASK.repeat(4, 1)
    kl = torch.stack([KL, torch.zeros(9), KL * 3, torch.tensor([1.0, 1, 0, 0, 1, 0, 0, 0, 1])])
    rewards = torch.tensor([1.0, 2.0, 3.0, 4.0])
    got = assign_reward_kl_weighted_batched(rewards, mask, kl)
    for b in range(4):
        assert torch.allclose(got[b], assign_reward_kl_weighted(rewards[b], mask[b], kl[b]), rtol=1e-6, atol=1e-7)
    assert torch.equal(got[1], assign_reward_uniform(2.0, MASK))
    assert torch.equal(got[3], assign_reward_uniform(4.0, MASK))


@pytest.mark.parametrize("bad", [
    MASK.double() * (1 - 1e-12),  # rounds to 1.0 in float32: checked in its own dtype
    MASK.float() * 0.5, MASK.float() * float("nan"), MASK.float() - 1, MASK * 2, MASK - 1,
    MASK.to(torch.complex64), MASK.long() * 2**40, MASK.long() * 2**32 + 1, (MASK - 1).to(torch.int8),
    (MASK * 2).to(torch.uint8), (MASK - 1).to(torch.int16), MASK.int() * -(2**31),
])
def test_masks_other_than_0_1_are_rejected(bad):
    with pytest.raises(ValueError):
        assign_reward_uniform(1.0, bad)
    for batch in (bad.repeat(2, 1), _column_major(bad.repeat(2, 1))):  # numpy path, torch path
        for fn in (assign_reward_last_token_batched, assign_reward_uniform_batched):
            with pytest.raises(ValueError):
                fn(torch.ones(2), batch)


def test_last_index_in_float64_beyond_float32_integers(monkeypatch):
    from agentrl_ref import token_credit

    mask = torch.stack([MASK, torch.zeros(9, dtype=torch.long), torch.ones(9, dtype=torch.long)]).float()
    want = assign_reward_last_token_batched(torch.tensor([1.0, 2.0, 3.0]), mask)
    monkeypatch.setattr(token_credit, "_F32_EXACT", 4)
    assert torch.equal(assign_reward_last_token_batched(torch.tensor([1.0, 2.0, 3.0]), mask), want)
    assert torch.equal(token_credit._last_one_index(mask.float()), torch.tensor([7, -1, 8]))


@PROPS
@given(batches())
def test_numpy_and_torch_paths_agree(batch):
    rewards, mask, kl = batch
    for dtype in (torch.long, torch.bool, torch.uint8):
        m = mask.to(dtype)
        for fn in (assign_reward_last_token_batched, assign_reward_uniform_batched):
            assert torch.equal(fn(rewards, m), fn(rewards, _column_major(m)))
        as_float = assign_reward_last_token_batched(rewards, m.float())
        assert torch.equal(assign_reward_last_token_batched(rewards, m), as_float)


def test_empty_batches():
    for dtype in (torch.long, torch.float32):
        for shape in ((0, 5), (3, 0), (0, 0)):
            mask = torch.zeros(shape, dtype=dtype)
            rewards = torch.ones(shape[0])
            for out in (assign_reward_last_token_batched(rewards, mask), assign_reward_uniform_batched(rewards, mask),
                        assign_reward_kl_weighted_batched(rewards, mask, torch.zeros(shape))):
                assert out.shape == shape and out.dtype == torch.float32
