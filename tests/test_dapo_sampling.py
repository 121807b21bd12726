"""Exercise 11's reference (agentrl_ref.dapo_sampling): the mask of informative groups, the bounded batch filler, the
loss with a decoupled clip range and the mean token entropy, checked against the rules written out here on random
inputs (hypothesis), and its clear errors on misuse."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from agentrl_ref.dapo_sampling import (
    FilledBatch, clip_fractions, clip_higher_loss, fill_batch, informative_groups, mean_token_entropy,
)

REWARDS = st.one_of(st.sampled_from([0.0, 1.0]), st.sampled_from([-1.0, 1.0]),
                    st.floats(-5, 5, allow_nan=False, width=64))


@st.composite
def reward_groups(draw):
    """(rewards, group_size): some groups all equal (any value, 0.35 and 1.3 among them), some mixed."""
    g = draw(st.integers(2, 8))
    rewards = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            rewards += [draw(st.one_of(REWARDS, st.sampled_from([0.35, 0.7, 1.1, 1.3, 0.123456])))] * g
        else:
            rewards += draw(st.lists(REWARDS, min_size=g, max_size=g))
    return rewards, g


@settings(max_examples=50)
@given(reward_groups())
def test_a_group_is_informative_exactly_when_its_rewards_differ(case):
    rewards, g = case
    got = informative_groups(rewards, g)
    assert got.dtype == torch.bool and got.shape == (len(rewards) // g,)
    assert got.tolist() == [len(set(rewards[i:i + g])) > 1 for i in range(0, len(rewards), g)]


def test_the_informative_groups_are_those_with_an_advantage():
    """With 0/1 rewards, exactly the groups whose GRPO advantages (exercise 6's group normalisation) are not all 0."""
    from agentrl_ref.token_credit import group_normalize

    rewards = [1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1]
    adv = group_normalize(torch.tensor(rewards, dtype=torch.float32), 4).view(-1, 4)
    assert [bool((row != 0).any()) for row in adv] == informative_groups(rewards, 4).tolist() == [False, False,
                                                                                                   True, True]


def test_the_mean_rule_and_std_are_not_the_rule():
    """DAPO's +-1 rewards and the capstone's composite reward break 'mean strictly between 0 and 1'; std > 0 keeps a
    group of equal non-dyadic rewards (float rounding), max - min does not."""
    assert informative_groups([1, -1, -1, -1, 1, 1, 1, 1], 4).tolist() == [True, False]
    assert informative_groups([1.3] * 4 + [0.1, 0.1, 1.3, 0.1], 4).tolist() == [False, True]
    assert float(torch.tensor([0.35] * 3, dtype=torch.float64).std()) > 0
    assert informative_groups([0.35] * 3, 3).tolist() == [False]


@pytest.mark.parametrize("rewards,g", [([1, 0, 1], 2), ([[1, 0], [1, 1]], 2), ([1, 0], 1), ([1, 0], True),
                                       ([1.0, float("nan")], 2), ([1, 0], 2.0)])
def test_informative_groups_refuses_misuse(rewards, g):
    with pytest.raises(ValueError):
        informative_groups(rewards, g)


class Script:
    """Generation batches of random 0/1 groups; counts its calls."""

    def __init__(self, rng, n_groups, g, p_mixed):
        self.rng, self.n, self.g, self.p, self.calls = rng, n_groups, g, p_mixed, 0

    def __call__(self):
        self.calls += 1
        groups, rewards = [], []
        for i in range(self.n):
            mixed = self.rng.random() < self.p
            groups.append((self.calls, i, mixed))
            rewards += [1.0] + [0.0] * (self.g - 1) if mixed else [float(self.rng.random() < 0.5)] * self.g
        return groups, torch.tensor(rewards)


@given(st.integers(0, 10_000), st.integers(1, 5), st.integers(2, 4), st.sampled_from([0.0, 0.3, 1.0]),
       st.integers(1, 9), st.integers(1, 6))
def test_the_filler_keeps_informative_groups_in_order_and_stops_at_the_bound(seed, n, g, p, target, max_draws):
    import random

    draw = Script(random.Random(seed), n, g, p)
    batch = fill_batch(draw, target, g, max_draws)
    assert isinstance(batch, FilledBatch)
    assert draw.calls == batch.draws <= max_draws
    assert batch.drawn_groups == batch.draws * n and batch.drawn_samples == batch.drawn_groups * g
    assert all(mixed for _, _, mixed in batch.groups) and batch.kept <= target
    assert batch.groups == sorted(batch.groups)                   # the order drawn
    assert batch.full == (batch.kept == target)
    if not batch.full:
        assert batch.draws == max_draws                           # it gave up only at the bound
    else:                                                         # and drew no batch it did not need
        assert sum(1 for call, _, _ in batch.groups if call < batch.draws) < target


def test_a_sampler_that_never_helps_ends_at_the_bound():
    calls = []

    def never():
        calls.append(1)
        if len(calls) > 10:
            raise AssertionError("no bound")
        return ["a", "b"], torch.zeros(4)

    batch = fill_batch(never, 3, 2, 4)
    assert (batch.groups, batch.draws, batch.drawn_groups, batch.drawn_samples, batch.full) == ([], 4, 8, 16, False)


@pytest.mark.parametrize("args", [(0, 2, 1), (1, 2, 0), (1, 2, 1.5), (True, 2, 1)])
def test_fill_batch_refuses_misuse(args):
    with pytest.raises(ValueError):
        fill_batch(lambda: (["a"], torch.tensor([0.0, 1.0])), *args)


def test_fill_batch_refuses_a_draw_whose_groups_and_rewards_disagree():
    with pytest.raises(ValueError):
        fill_batch(lambda: (["a", "b"], torch.tensor([0.0, 1.0])), 1, 2, 3)


def _token_loss(r, a, low, high):
    return -min(r * a, min(max(r, 1 - low), 1 + high) * a)


@st.composite
def loss_batches(draw):
    b, t = draw(st.integers(1, 3)), draw(st.integers(1, 6))

    def grid(values):
        return torch.tensor(draw(st.lists(st.lists(values, min_size=t, max_size=t), min_size=b, max_size=b)))
    old = grid(st.floats(-6, 0, width=32))
    new = old + grid(st.floats(-0.75, 0.75, width=32))
    adv = grid(st.floats(-3, 3, width=32))
    mask = grid(st.integers(0, 1)).float()
    return new, old, adv, mask


@given(loss_batches(), st.floats(0.01, 0.5), st.floats(0.01, 1.0))
def test_the_loss_is_the_token_mean_of_the_one_sided_clip(batch, low, high):
    new, old, adv, mask = batch
    got = float(clip_higher_loss(new, old, adv, mask, low, high))
    losses = [_token_loss(math.exp(float(n) - float(o)), float(a), low, high)
              for n, o, a, m in zip(new.flatten(), old.flatten(), adv.flatten(), mask.flatten()) if m]
    want = sum(losses) / len(losses) if losses else 0.0
    assert math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-5)


@given(loss_batches(), st.floats(0.01, 0.5), st.floats(0.01, 1.0), st.floats(0.01, 1.0))
def test_eps_high_acts_only_where_the_advantage_is_positive(batch, low, high, other_high):
    """Tokens with A <= 0 lose the same whatever eps_high; tokens with A >= 0 whatever eps_low."""
    new, old, adv, mask = batch
    neg = mask * (adv <= 0)
    assert math.isclose(float(clip_higher_loss(new, old, adv, neg, low, high)),
                        float(clip_higher_loss(new, old, adv, neg, low, other_high)), rel_tol=1e-6, abs_tol=1e-7)
    pos = mask * (adv >= 0)
    assert math.isclose(float(clip_higher_loss(new, old, adv, pos, low, high)),
                        float(clip_higher_loss(new, old, adv, pos, min(other_high, 0.9), high)),
                        rel_tol=1e-6, abs_tol=1e-7)


def test_a_token_cut_at_the_upper_bound_gets_no_gradient_and_one_inside_does():
    old = torch.zeros(1, 2)
    new = torch.log(torch.tensor([[1.25, 1.40]])).requires_grad_(True)
    clip_higher_loss(new, old, torch.ones(1, 2), torch.ones(1, 2), 0.2, 0.28).backward()
    assert new.grad[0, 0] < 0 and new.grad[0, 1] == 0             # 1.25 < 1.28 still rises; 1.40 is cut
    new.grad = None
    clip_higher_loss(new, old, torch.ones(1, 2), torch.ones(1, 2), 0.2, 0.2).backward()
    assert new.grad[0, 0] == 0 and new.grad[0, 1] == 0             # symmetric 0.2 cuts both


def test_clip_fractions_count_each_bound_on_its_own_side():
    old = torch.zeros(1, 5)
    new = torch.log(torch.tensor([[1.4, 1.4, 0.7, 0.7, 1.0]]))
    adv = torch.tensor([[1.0, -1.0, -1.0, 1.0, 1.0]])
    got = clip_fractions(new, old, adv, torch.ones(1, 5), 0.2, 0.28)
    assert got == {"clip_high": pytest.approx(0.2), "clip_low": pytest.approx(0.2)}


@pytest.mark.parametrize("change", [{"adv": torch.zeros(2, 2)}, {"mask": [[1, 1]]}, {"low": 1.0}, {"low": 0.0},
                                    {"high": -0.1}, {"high": True}])
def test_the_loss_refuses_misuse(change):
    args = {"new": torch.zeros(1, 2), "old": torch.zeros(1, 2), "adv": torch.zeros(1, 2), "mask": torch.ones(1, 2),
            "low": 0.2, "high": 0.28, **change}
    with pytest.raises(ValueError):
        clip_higher_loss(args["new"], args["old"], args["adv"], args["mask"], args["low"], args["high"])


@settings(max_examples=40)
@given(st.integers(1, 3), st.integers(1, 5), st.integers(2, 7), st.floats(0.1, 8), st.integers(0, 10_000))
def test_the_entropy_is_averaged_over_the_mask_only(b, t, v, scale, seed):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(b, t, v, generator=gen) * scale
    mask = (torch.rand(b, t, generator=gen) < 0.6).float()
    got = float(mean_token_entropy(logits, mask))
    per = torch.distributions.Categorical(logits=logits).entropy()
    want = float((per * mask).sum() / mask.sum()) if mask.sum() else 0.0
    assert math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6)
    padded = logits.clone()
    padded[mask == 0] = torch.randn(int((mask == 0).sum()), v, generator=gen) * 50   # padding never counts
    assert math.isclose(float(mean_token_entropy(padded, mask)), got, rel_tol=1e-6, abs_tol=1e-7)
    assert 0.0 <= got <= math.log(v) + 1e-5


def test_the_entropy_of_an_impossible_token_is_zero_not_nan():
    logits = torch.tensor([[[0.0, float("-inf")], [0.0, 0.0]]], requires_grad=True)
    got = mean_token_entropy(logits, torch.ones(1, 2))
    assert math.isclose(float(got.detach()), math.log(2) / 2, rel_tol=1e-6)
    got.backward()
    assert torch.isfinite(logits.grad).all()


@pytest.mark.parametrize("logits,mask", [(torch.zeros(2, 3), torch.ones(2, 3)),
                                         (torch.zeros(1, 2, 3), torch.ones(2, 2)), ([[[0.0]]], torch.ones(1, 1)),
                                         (torch.zeros(1, 1, 2, dtype=torch.long), torch.ones(1, 1))])
def test_the_entropy_refuses_misuse(logits, mask):
    with pytest.raises(ValueError):
        mean_token_entropy(logits, mask)


# correct answers a student may write instead of the instructor's: each passes every visible test, and the hidden
# tests record what they record for the reference (within the grader's tolerance)
ALTERNATIVES = {
    "informative_groups": """
def informative_groups(rewards, group_size):
    r = [float(x) for x in rewards]
    if group_size < 2 or len(r) % group_size:
        raise ValueError("rewards must split into groups of group_size >= 2")
    return torch.tensor([len(set(r[i:i + group_size])) > 1 for i in range(0, len(r), group_size)])
""",
    "fill_batch": """
def fill_batch(draw, target_groups, group_size, max_draws, informative=None):
    informative = informative or informative_groups
    kept, drawn = [], 0
    for draws in range(1, max_draws + 1):
        groups, rewards = draw()
        drawn += len(groups)
        kept.extend(g for g, k in zip(groups, informative(rewards, group_size)) if k)
        if len(kept) >= target_groups:
            break
    return FilledBatch(kept[:target_groups], draws, drawn, drawn * group_size, len(kept) >= target_groups)
""",
    "clip_higher_loss": """
def clip_higher_loss(logp_new, logp_old, advantages, loss_mask, eps_low=0.2, eps_high=0.28):
    ratio = (logp_new - logp_old).exp()
    bound = torch.where(advantages > 0, ratio.clamp(max=1 + eps_high), ratio.clamp(min=1 - eps_low))
    per_token = -advantages * bound
    keep = loss_mask.bool()
    return per_token[keep].sum() / max(int(keep.sum()), 1)
""",
    "mean_token_entropy": """
def mean_token_entropy(logits, loss_mask):
    p = torch.softmax(logits, dim=-1)
    entropy = torch.logsumexp(logits, dim=-1) - (p * logits).sum(dim=-1)   # verl's entropy_from_logits
    keep = loss_mask.bool()
    return entropy[keep].mean() if keep.any() else entropy.new_zeros(())
""",
}


NAME = "ex11_dapo_sampling"


def _alternatives() -> dict:
    namespace: dict = {"torch": torch, "FilledBatch": FilledBatch}
    for code in ALTERNATIVES.values():
        exec(code, namespace)
    return {name: namespace[name] for name in ALTERNATIVES}


@pytest.mark.parametrize("part", sorted(ALTERNATIVES))
def test_correct_alternatives_pass_every_visible_test(part):
    from course import visible_failures

    assert visible_failures(lambda test: test.part == part, _alternatives().__getitem__) == {}


def test_correct_alternatives_leave_the_records_of_the_reference_in_every_hidden_test():
    """nbgrader's verdict compares a submission's hidden records with the reference notebook's, within its tolerance
    (grader/grade/verdict.py difference): the alternatives must leave what the module's reference leaves."""
    from grader.grade.verdict import difference

    from course import answer_namespace, hidden_records, source_notebook

    reference = hidden_records(NAME, {"informative_groups": informative_groups, "fill_batch": fill_batch,
                                 "clip_higher_loss": clip_higher_loss, "mean_token_entropy": mean_token_entropy})
    answers = answer_namespace(NAME, source_notebook(NAME))   # the instructor's answers: what grading expects
    assert len(reference) == 5 and all(reference.values()), sorted(reference)
    for functions in (_alternatives(), {name: answers[name] for name in ALTERNATIVES}):
        records = hidden_records(NAME, functions)
        assert sorted(records) == sorted(reference)
        for name in reference:
            assert difference(records[name], reference[name], name) is None, difference(records[name],
                                                                                       reference[name], name)
