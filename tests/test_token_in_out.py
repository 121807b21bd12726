"""Exercise 8: message_ids, build_trajectory, first_drift (the reference), and correct alternative answers pass
every visible test of the notebook and leave the reference's records in every hidden one."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from agentrl_ref.checks.ex8_token_in_out import (
    CONVERSATION, NOT_APPEND_ONLY_AT, chatml_ids, decode, decode_skip_special, default_system_ids, encode,
    strip_think_ids,
)
from agentrl_ref.token_in_out import build_trajectory, first_drift, message_ids

texts = st.text(alphabet="ab10 \nx中", max_size=12)
messages = st.lists(st.builds(lambda r, c: {"role": r, "content": c},
                              st.sampled_from(["system", "user", "assistant", "tool"]), texts), max_size=6)


@settings(max_examples=100, deadline=None)
@given(messages)
def test_deltas_of_an_append_only_template_concatenate_to_the_rendering(msgs):
    for render in (chatml_ids, default_system_ids):
        assert [x for i in range(len(msgs)) for x in message_ids(render, msgs, i)] == render(msgs)


def test_not_append_only_names_the_message():
    with pytest.raises(ValueError, match=f"message {NOT_APPEND_ONLY_AT}"):
        message_ids(strip_think_ids, CONVERSATION, NOT_APPEND_ONLY_AT)


@pytest.mark.parametrize("index", [-1, 6, 1.0, True])
def test_message_ids_rejects_a_bad_index(index):
    with pytest.raises(ValueError):
        message_ids(chatml_ids, CONVERSATION, index)


ids_ = st.lists(st.integers(0, 301), max_size=6)
turns_ = st.lists(st.one_of(
    ids_.flatmap(lambda ids: st.tuples(st.just("sampled"), st.just(ids),
                                       st.lists(st.floats(-20, 0), min_size=len(ids), max_size=len(ids)))),
    st.tuples(st.just("observation"), ids_, st.none())), max_size=5)


@settings(max_examples=200, deadline=None)
@given(ids_, turns_, ids_)
def test_trajectory_is_aligned_and_trains_exactly_the_sampled_ids(prompt, turns, sep):
    ids, mask, lps = build_trajectory(prompt, turns, sep)
    assert len(ids) == len(mask) == len(lps)
    assert sum(mask) == sum(len(t[1]) for t in turns if t[0] == "sampled")
    assert [lp for lp, m in zip(lps, mask) if m] == [x for t in turns if t[0] == "sampled" for x in t[2]]
    assert all(lp == 0.0 for lp, m in zip(lps, mask) if not m)
    n_seps = sum(1 for i, t in enumerate(turns) if t[0] == "sampled" and i + 1 < len(turns))
    assert len(ids) == len(prompt) + sum(len(t[1]) for t in turns) + n_seps * len(sep)


@pytest.mark.parametrize("turns", [
    [("bad", [1], None)], [("sampled", [1, 2], [-0.1])], [("sampled", [1], [0.5])],
    [("sampled", [1], [float("nan")])], [("sampled", [1], None)], [("observation", "ab", None)], "ab", [(1, 2)],
])
def test_trajectory_rejects_misuse(turns):
    with pytest.raises(ValueError):
        build_trajectory([0], turns, [10])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([97, 98, 49, 48, 10, 32, 0xE4, 256, 257, 258, 300, 301]), max_size=10),
       st.sampled_from([decode, decode_skip_special]))
def test_first_drift_is_the_first_difference(ids, dec):
    again = encode(dec(ids))
    t = first_drift(ids, encode, dec)
    if t is None:
        assert again == ids
    else:
        assert ids[:t] == again[:t] and (t == len(ids) or t == len(again) or ids[t] != again[t])
    assert first_drift(again, encode, decode) is None   # what encode gives is canonical


def test_canonical_ids_never_drift():
    assert first_drift(encode("ab 10\n\n中"), encode, decode) is None


# correct answers a student may write instead of the instructor's: each passes every visible test
ALTERNATIVES = {
    "message_ids": """
def message_ids(render_ids, messages, index):
    before = list(render_ids(messages[:index]))
    after = list(render_ids(messages[:index + 1]))
    if before != after[:len(before)]:
        raise ValueError(f"not append-only at message {index}")
    return after[len(before):]
""",
    "build_trajectory": """
def build_trajectory(prompt_ids, turns, separator_ids):
    ids, loss_mask, logprobs = list(prompt_ids), [0] * len(prompt_ids), [0.0] * len(prompt_ids)
    for i, (kind, turn_ids, turn_logprobs) in enumerate(turns):
        trained = kind == "sampled"
        ids.extend(turn_ids)
        loss_mask.extend([int(trained)] * len(turn_ids))
        logprobs.extend(turn_logprobs if trained else [0.0] * len(turn_ids))
        if trained and i < len(turns) - 1:
            ids.extend(separator_ids)
            loss_mask.extend(0 for _ in separator_ids)
            logprobs.extend(0.0 for _ in separator_ids)
    return ids, loss_mask, logprobs
""",
    "first_drift": """
def first_drift(ids, encode, decode):
    again = encode(decode(ids))
    n = min(len(ids), len(again))
    for t in range(n):
        if ids[t] != again[t]:
            return t
    return None if len(ids) == len(again) else n
""",
}


@pytest.mark.parametrize("part", sorted(ALTERNATIVES))
def test_correct_alternatives_pass_every_visible_test(part):
    from course import visible_failures

    namespace: dict = {}
    exec(ALTERNATIVES[part], namespace)
    assert visible_failures(lambda test: test.part == part, namespace.__getitem__) == {}


def test_correct_alternatives_leave_the_records_of_the_reference_in_every_hidden_test():
    """nbgrader's verdict compares a submission's hidden-test records with the reference notebook's
    (grader/grade/verdict.py): the alternatives above must leave the same ones as the module's reference."""
    from course import hidden_records

    reference = hidden_records("ex8_token_in_out", {"message_ids": message_ids, "build_trajectory": build_trajectory,
                                 "first_drift": first_drift})
    namespace: dict = {}
    for code in ALTERNATIVES.values():
        exec(code, namespace)
    alternative = hidden_records("ex8_token_in_out", {name: namespace[name] for name in ALTERNATIVES})
    assert len(reference) == 6 and all(reference.values()), sorted(reference)
    assert alternative == reference
