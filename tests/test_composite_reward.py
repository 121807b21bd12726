"""Exercise 5: cosine length reward (E5), the composite factory (E6), DAPO's soft overlong punishment."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from agentrl_ref.composite_reward import (
    cosine_length_reward, cosine_scaled, make_reward_fn, seed_reward_fn, soft_overlong_punishment,
)
from agentrl_ref.verifiable_reward import accuracy_reward

SEED_COMPLETION = "<think>23*17 = 23*17 = 391</think><answer>\\boxed{391}</answer>"
SEED_COS_LEN = 0.5 + 0.5 * math.cos(math.pi * 62 / 512)  # 0.96425...


def padded(answer: str, length: int) -> str:
    """A completion of exactly `length` characters whose last box holds answer."""
    text = f"\\boxed{{{answer}}}"
    return " " * (length - len(text)) + text


def test_e6_seed_composite():
    scores = seed_reward_fn()(SEED_COMPLETION, "391")
    assert len(SEED_COMPLETION) == 62
    assert scores["fmt"] == 1.0 and scores["acc"] == 1.0
    assert scores["cos_len"] == pytest.approx(0.964, abs=5e-4)  # the seed says "≈ 0": wrong
    assert scores["total"] == pytest.approx(1.293, abs=5e-4)  # the seed says "≈ 1.1": wrong
    assert scores["cos_len"] == pytest.approx(SEED_COS_LEN)
    assert list(scores) == ["fmt", "acc", "cos_len", "total"]


def test_e5_short_correct_is_best_short_wrong_is_worst():
    assert cosine_length_reward(padded("5", 9), "5", max_len=10**6) == pytest.approx(1.0, abs=1e-9)
    assert cosine_length_reward(padded("4", 9), "5", max_len=10**6) == pytest.approx(-1.0, abs=1e-9)
    assert cosine_length_reward(padded("5", 512), "5") == pytest.approx(0.0, abs=1e-12)
    assert cosine_length_reward(padded("4", 512), "5") == pytest.approx(0.0, abs=1e-12)
    assert cosine_length_reward(padded("5", 256), "5") == pytest.approx(0.5)
    assert cosine_length_reward(padded("4", 256), "5") == pytest.approx(-0.5)


def test_e5_ratio_is_clamped_so_the_cosine_does_not_wrap():
    for length in (513, 1024, 2048, 5000):
        assert cosine_length_reward(padded("5", length), "5") == pytest.approx(0.0, abs=1e-12)
        assert cosine_length_reward(padded("4", length), "5") == pytest.approx(0.0, abs=1e-12)


def test_seed_formula_and_open_r1_values():
    for ratio in (0.0, 0.1, 0.37, 0.5, 0.9, 1.0):
        factor = 0.5 * (1 - math.cos(math.pi * ratio))
        assert cosine_scaled(ratio, 1.0, 0.0) == pytest.approx(1.0 - factor)
        assert cosine_scaled(ratio, -1.0, 0.0) == pytest.approx(-1.0 + factor)
    open_r1 = dict(correct=(1.0, 0.5), wrong=(-1.0, -0.5))
    assert cosine_length_reward(padded("5", 100), "5", 100, **open_r1) == pytest.approx(0.5)
    assert cosine_length_reward(padded("4", 100), "5", 100, **open_r1) == pytest.approx(-0.5)
    assert cosine_scaled(-3.0, 2.0, 7.0) == 2.0 and cosine_scaled(9.0, 2.0, 7.0) == 7.0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300) | st.builds(padded, st.integers(0, 9).map(str), st.integers(9, 700)),
       st.sampled_from(["5", "1/2", "abc", ""]), st.integers(1, 1000))
def test_cosine_length_reward_stays_in_range_and_follows_accuracy(completion, gold, max_len):
    r = cosine_length_reward(completion, gold, max_len)
    if accuracy_reward(completion, gold) == 1.0:
        assert 0.0 <= r <= 1.0
    else:
        assert -1.0 <= r <= 0.0


@pytest.mark.parametrize("max_len", [0, -5, 2.5])
def test_cosine_bad_max_len(max_len):
    with pytest.raises(ValueError):
        cosine_length_reward("x", "5", max_len)


def test_make_reward_fn_names_missing_and_extra_keys():
    with pytest.raises(ValueError) as err:
        make_reward_fn({"fmt": 0.1, "acc": 1.0}, {"acc": accuracy_reward, "len": lambda c, g: 0.0})
    message = str(err.value)
    assert "fmt" in message and "len" in message
    with pytest.raises(ValueError):
        make_reward_fn({"total": 1.0}, {"total": accuracy_reward})


def test_make_reward_fn_weights_are_copied():
    weights = {"one": 2.0}
    reward = make_reward_fn(weights, {"one": lambda c, g: 1.0})
    weights["one"] = 100.0
    assert reward("", "") == {"one": 1.0, "total": 2.0}


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.floats(-5, 5), min_size=1), st.text(max_size=50))
def test_total_is_the_weighted_sum(weights, completion):
    funcs = {name: (lambda c, g, k=i: float(len(c) % (k + 2))) for i, name in enumerate(weights)}
    scores = make_reward_fn(weights, funcs)(completion, "5")
    assert set(scores) == set(weights) | {"total"}
    assert scores["total"] == pytest.approx(sum(w * scores[k] for k, w in weights.items()))


@pytest.mark.parametrize("length, expected", [
    (0, 0.0), (80, 0.0), (81, -1 / 20), (90, -0.5), (99, -19 / 20), (100, -1.0), (101, -1.0), (10**9, -1.0),
])
def test_soft_overlong_punishment_dapo_eq13(length, expected):
    assert soft_overlong_punishment(length, max_len=100, cache_len=20) == pytest.approx(expected)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 2000), st.data())
def test_soft_overlong_is_monotone_and_in_range(max_len, data):
    cache_len = data.draw(st.integers(1, max_len))
    values = [soft_overlong_punishment(n, max_len, cache_len) for n in range(0, max_len + 3, max(1, max_len // 50))]
    assert all(-1.0 <= v <= 0.0 for v in values)
    assert all(a >= b for a, b in zip(values, values[1:]))


@pytest.mark.parametrize("args", [(5, 100, 0), (5, 100, 101), (-1, 100, 20), (5.0, 100, 20), (5, 100.0, 20)])
def test_soft_overlong_misuse(args):
    with pytest.raises(ValueError):
        soft_overlong_punishment(*args)
