"""Exercise 3: build_loss_mask, shift_mask_for_clm and the batched [B, T] version."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings, strategies as st

from conftest import STRICT_WARNINGS
from agentrl_ref.loss_mask import (
    ASSISTANT_ID, PAD_ID, ROLES, build_loss_mask, build_loss_mask_batched, build_loss_mask_batched_from_spans,
    role_ids_from_spans, shift_mask_for_clm,
)

pytestmark = STRICT_WARNINGS  # no torch or matplotlib warning on any path (see conftest)

SEED_SPANS = [("system", 0, 2), ("user", 2, 5), ("assistant", 5, 8), ("tool", 8, 10), ("assistant", 10, 12)]


def test_seed_example():
    mask = build_loss_mask(list(range(12)), SEED_SPANS)
    assert mask == [0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
    shifted = shift_mask_for_clm(mask)
    assert shifted == [0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
    assert len(shifted) == 11 and sum(shifted) == 5
    assert shifted[4] == mask[5] == 1  # the last user token's logits predict the first assistant token


def test_shift_on_tensors_shifts_the_last_dim():
    mask = torch.tensor([[0, 1, 1], [1, 0, 1]])
    assert shift_mask_for_clm(mask).tolist() == [[1, 1], [0, 1]]
    assert shift_mask_for_clm(torch.tensor([0, 1])).tolist() == [1]
    assert shift_mask_for_clm([]) == []


def test_gaps_and_empty_spans():
    assert build_loss_mask([7] * 6, [("assistant", 1, 3), ("user", 4, 4)]) == [0, 1, 1, 0, 0, 0]
    assert build_loss_mask([], []) == []


@pytest.mark.parametrize("spans, fragment", [
    ([("bot", 0, 2)], "'bot'"),
    ([("Assistant", 0, 2)], "'Assistant'"),
    ([("user", 3, 2)], "('user', 3, 2)"),
    ([("user", -1, 2)], "('user', -1, 2)"),
    ([("user", 0, 13)], "('user', 0, 13)"),
    ([("user", 0, 5), ("assistant", 4, 6)], "('user', 0, 5)"),
    ([("assistant", 4, 6), ("user", 0, 12)], "('assistant', 4, 6)"),
    ([("user", 0.0, 2)], "0.0"),
    ([("user", 0)], "('user', 0)"),
])
def test_bad_spans_raise_with_the_span_in_the_message(spans, fragment):
    with pytest.raises(ValueError) as err:
        build_loss_mask(list(range(12)), spans)
    assert fragment in str(err.value)
    with pytest.raises(ValueError):
        role_ids_from_spans(12, spans)
    with pytest.raises(ValueError) as err:
        build_loss_mask_batched_from_spans(12, [SEED_SPANS, spans])
    assert fragment in str(err.value)


@pytest.mark.parametrize("bad", [
    torch.zeros(3, dtype=torch.long), torch.zeros(1, 2, 3, dtype=torch.long), torch.zeros(2, 3),
    torch.tensor([[0, 4]]), torch.tensor([[-2, 0]]), [[0, 1]],
])
def test_batched_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        build_loss_mask_batched(bad)


@st.composite
def trajectories(draw, max_tokens=40):
    """(n_tokens, spans): consecutive spans with random roles, possibly leaving a padded tail."""
    n_tokens = draw(st.integers(0, max_tokens))
    cuts = sorted(draw(st.lists(st.integers(0, n_tokens), max_size=8)) + [0])
    spans = [(draw(st.sampled_from(ROLES)), a, b) for a, b in zip(cuts, cuts[1:])]
    return n_tokens, spans


@settings(max_examples=100, deadline=None)
@given(st.lists(trajectories(), min_size=1, max_size=6))
def test_batched_equals_per_sample(batch):
    width = max(n for n, _ in batch)
    rows = []
    for n, spans in batch:
        ids = role_ids_from_spans(n, spans)
        rows.append(torch.cat([ids, torch.full((width - n,), PAD_ID, dtype=torch.long)]))
    got = build_loss_mask_batched(torch.stack(rows))
    assert got.dtype == torch.long
    for row, (n, spans) in zip(got, batch):
        assert row[:n].tolist() == build_loss_mask(list(range(n)), spans)
        assert row[n:].sum() == 0  # padding is never trained
    for row, (n, spans) in zip(rows, batch):
        assert (row[:n] == ASSISTANT_ID).long().tolist() == build_loss_mask(list(range(n)), spans)


@settings(max_examples=100, deadline=None)
@given(st.lists(trajectories(), max_size=6), st.integers(0, 3))
def test_batched_from_spans_equals_per_sample(batch, extra_padding):
    width = max((n for n, _ in batch), default=0) + extra_padding  # tokens in no span (padding) get 0
    got = build_loss_mask_batched_from_spans(width, [spans for _, spans in batch])
    assert got.dtype == torch.long and got.shape == (len(batch), width)
    for row, (_, spans) in zip(got, batch):
        assert row.tolist() == build_loss_mask(list(range(width)), spans)


def test_batched_from_spans_seed_example_and_misuse():
    got = build_loss_mask_batched_from_spans(12, [SEED_SPANS, [], [["assistant", 0, 12]]])
    assert got.tolist() == [build_loss_mask(list(range(12)), SEED_SPANS), [0] * 12, [1] * 12]
    for n_tokens, batch in [(-1, []), (2.0, []), (3, "abc"), (3, [("assistant", 0, 1)]), (3, [None])]:
        with pytest.raises(ValueError):
            build_loss_mask_batched_from_spans(n_tokens, batch)
