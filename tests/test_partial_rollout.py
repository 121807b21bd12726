"""Exercise 10's reference (agentrl_ref.partial_rollout): a trajectory extended segment by segment by several policy
versions, its per-token versions, behaviour log-probs and staleness, and admission by the oldest token; checked on
random segment sequences against the rules written out here."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from agentrl_ref.partial_rollout import (
    PROMPT_VERSION, PartialTrajectory, admit, newest_staleness, oldest_staleness, staleness_histogram,
    token_staleness,
)
from course import hidden_records, visible_failures


@st.composite
def segments(draw, max_segments=5, max_len=6):
    """[(ids, logps, version)] with versions that never go backwards (some segments empty, some versions repeated)."""
    version = draw(st.integers(0, 5))
    out = []
    for _ in range(draw(st.integers(0, max_segments))):
        version += draw(st.integers(0, 2))
        n = draw(st.integers(0, max_len))
        ids = draw(st.lists(st.integers(0, 300), min_size=n, max_size=n))
        logps = draw(st.lists(st.floats(-20, 0, allow_nan=False), min_size=n, max_size=n))
        out.append((ids, logps, version))
    return out


def _built(prompt, segs) -> PartialTrajectory:
    traj = PartialTrajectory(prompt)
    for ids, logps, version in segs:
        assert traj.extend(ids, logps, version) is traj
    return traj


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 300), max_size=4), segments())
def test_every_token_keeps_its_own_version_and_behaviour_log_prob(prompt, segs):
    traj = _built(prompt, segs)
    want_ids = [i for ids, _, _ in segs for i in ids]
    want_logps = [x for _, logps, _ in segs for x in logps]
    want_versions = [v for ids, _, v in segs for _ in ids]
    assert traj.prompt_ids == prompt and traj.ids == want_ids and len(traj) == len(want_ids)
    assert traj.token_versions.dtype == torch.long and traj.token_versions.tolist() == want_versions
    assert traj.behaviour_logp.dtype == torch.float32
    assert traj.behaviour_logp.tolist() == pytest.approx(want_logps, rel=1e-6, abs=1e-5)
    assert traj.full_versions().tolist() == [PROMPT_VERSION] * len(prompt) + want_versions
    # the runs of one version, in order, add up to the tokens
    runs = traj.segments
    assert sum(n for _, n in runs) == len(want_ids)
    assert [v for v, _ in runs] == sorted({v for v in want_versions})
    assert all(a[0] < b[0] for a, b in zip(runs, runs[1:]))


@settings(max_examples=200, deadline=None)
@given(segments(), st.integers(0, 3), st.integers(0, 4))
def test_staleness_is_per_token_against_the_trainers_version_and_admission_goes_by_the_oldest(segs, ahead, ms):
    traj = _built([1], segs)
    versions = traj.versions
    current = (max(versions) if versions else 0) + ahead
    per_token = token_staleness(traj, current)
    assert per_token.dtype == torch.long and per_token.tolist() == [current - v for v in versions]
    assert token_staleness(versions, current).tolist() == per_token.tolist()  # a list works as the trajectory does
    assert token_staleness(torch.tensor(versions, dtype=torch.long), current).tolist() == per_token.tolist()
    oldest = current - min(versions) if versions else 0
    newest = current - max(versions) if versions else 0
    assert oldest_staleness(traj, current) == oldest and newest_staleness(traj, current) == newest
    assert isinstance(oldest_staleness(traj, current), int)
    assert admit(traj, current, ms) is (oldest <= ms) and traj.admitted(current, ms) is (oldest <= ms)
    assert traj.staleness(current).tolist() == per_token.tolist()
    if versions and newest <= ms < oldest:  # admitting by the newest token would let this one through
        assert not admit(traj, current, ms)


def test_a_version_from_the_future_is_a_bug():
    traj = PartialTrajectory([1]).extend([5, 6], [-0.1, -0.2], 3).extend([7], [-0.3], 4)
    with pytest.raises(ValueError, match="newer than the trainer"):
        token_staleness(traj, 3)
    with pytest.raises(ValueError):
        admit(traj, 3, 10)
    assert token_staleness(traj, 4).tolist() == [1, 1, 0]


@pytest.mark.parametrize("ids, logps, version, match", [
    ([1, 2], [-0.5], 3, "log-prob"),             # a token without its log-prob
    ([1], [-0.5, -0.1], 3, "log-prob"),
    ([1], [-0.5], 1, "older"),                   # versions never go backwards
    ([1], [0.5], 3, "<= 0"),                     # not a log-probability
    ([1], [float("nan")], 3, "finite"),
    ([1], [-0.5], -1, "int >= 0"),
    ([1], [-0.5], 2.0, "int >= 0"),
    ([1], [-0.5], True, "int >= 0"),
])
def test_misuse_is_a_clear_value_error_and_changes_nothing(ids, logps, version, match):
    traj = PartialTrajectory([9]).extend([4], [-1.0], 2)
    with pytest.raises(ValueError, match=match):
        traj.extend(ids, logps, version)
    assert traj.ids == [4] and traj.logps == [-1.0] and traj.versions == [2]


def test_empty_trajectories_and_bad_arguments():
    empty = PartialTrajectory([1, 2])
    assert token_staleness(empty, 0).tolist() == [] and oldest_staleness(empty, 7) == 0
    assert newest_staleness([], 3) == 0 and admit(empty, 5, 0)
    assert empty.extend([], [], 4).versions == [] and empty.segments == []
    for bad in ([[1, 2]], [0.5, 1.0], [-1, 2]):
        with pytest.raises(ValueError):
            token_staleness(bad, 3)
    with pytest.raises(ValueError):
        admit([1], 2, -1)
    with pytest.raises(ValueError):
        token_staleness([1], -1)


def test_the_histogram_counts_every_token_at_its_own_staleness():
    a = PartialTrajectory([0]).extend([1, 2, 3], [-0.1] * 3, 4).extend([4, 5], [-0.2] * 2, 5)
    b = PartialTrajectory([0]).extend([6], [-0.3], 5)
    assert staleness_histogram([(a, 5), (b, 5), ([3, 3], 6)]) == {0: 3, 1: 3, 3: 2}
    assert math.isclose(sum(staleness_histogram([(a, 6)]).values()), len(a))


# --- the notebook: the reference module passes its visible tests; another right way of filling it passes them too ---

# a student's own, tensor-based wording of every blank of the notebook (blank index -> text): right, and graded as right
ALTERNATIVE_FILLS = {
    0: "len(logps) != len(ids)",
    1: "len(self.versions) > 0 and version < int(self.versions[-1])",
    2: "torch.cat([torch.as_tensor(self.logps, dtype=torch.float64), torch.as_tensor(logps, dtype=torch.float64)])",
    3: "torch.cat([torch.as_tensor(self.versions, dtype=torch.long), torch.full((len(ids),), version)])",
    4: "torch.full_like(versions, current_version) - versions",
    5: "(staleness < 0).any().item()",
    6: "int(torch.max(staleness))",
    7: "not (oldest_staleness(versions, current_version) > max_staleness)",
}
NAME = "ex10_partial_rollout"


def _filled_namespace(fills) -> dict:
    import nbformat

    from course import answer_namespace, filled

    return answer_namespace(NAME, nbformat.reads(filled(NAME, fills), as_version=4))


def _visible_failures(objects_of) -> dict[str, str]:
    from agentrl_ref.checks import _REGISTRY, _load_all

    _load_all()
    assert sum(t.test_id.startswith(NAME + ".") for t in _REGISTRY.values()) == 6
    return visible_failures(lambda test: test.test_id.startswith(NAME + "."), objects_of)


def test_the_checks_agree_with_the_reference_module():
    """The visible tests' written-out expectations (checks/ex10_partial_rollout.py) and agentrl_ref.partial_rollout
    are one set of rules: the reference module passes every visible test."""
    from agentrl_ref import partial_rollout

    assert _visible_failures(lambda name: getattr(partial_rollout, name)) == {}


def test_a_tensor_based_trajectory_passes_every_visible_test_and_leaves_the_references_records():
    """Another right way (tensors instead of lists): check() says so, and nbgrader's verdict, which compares the
    hidden tests' records with the reference notebook's, gives it the same points."""
    from course import mutated_fills, reference_fills

    alternative = _filled_namespace(mutated_fills(NAME, ALTERNATIVE_FILLS))
    assert isinstance(_built_with(alternative["PartialTrajectory"]).versions, torch.Tensor)  # really tensor-based
    assert _visible_failures(alternative.__getitem__) == {}
    reference = hidden_records(NAME, _filled_namespace(reference_fills(NAME)))
    assert len(reference) == 5 and all(reference.values()), sorted(reference)
    assert hidden_records(NAME, alternative) == reference


def _built_with(cls):
    return cls([1]).extend([2, 3], [-0.5, -0.25], 1).extend([4], [-1.0], 2)
