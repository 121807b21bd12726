"""agentrl_ref.format_reward: the seed table, ERRATA E3/E4, and properties on arbitrary text."""
import re
import time

import pytest
from hypothesis import given, settings, strategies as st

from agentrl_ref import format_reward, tag_count_reward
from agentrl_ref.format_reward import SEED_FORMAT_PATTERN, STRICT_FORMAT_PATTERN, format_reward_regex
from agentrl_ref.teaching.ex1_format_reward.format_compare import CASES, compare_checkers, degenerate_completion

SEED_TABLE = [
    ("<think>Let me compute 2+3</think><answer>5</answer>", 1.0),
    ("The answer is 5", 0.0),
    ("<answer>5</answer><think>oops</think>", 0.0),
    ("<think>halfway", 0.0),
    ("  <think>x</think>\n\n<answer>y</answer>", 1.0),  # ERRATA: bad4 is accepted, as the seed says
]

E3_CASES = [
    "<think>a</think><answer>1</answer><think>b</think><answer>2</answer>",
    "<think>a<think>b</think>c</think><answer>1</answer>",
]


@pytest.mark.parametrize("text, expected", SEED_TABLE)
def test_seed_table(text, expected):
    assert format_reward(text) == expected


@pytest.mark.parametrize("text", E3_CASES)
def test_e3_repeated_and_nested_groups_score_zero(text):
    assert re.match(SEED_FORMAT_PATTERN, text, re.DOTALL), "the seed's pattern accepts it (ERRATA E3)"
    assert format_reward(text) == 0.0


@pytest.mark.parametrize("text, expected", [
    ("<think>a\nb</think>\n<answer>c\nd</answer>", 1.0),        # multi-line content
    ("<think>a\r\nb</think>\r\n<answer>1</answer>\r\n", 1.0),   # CRLF
    ("\u3000<think>思考</think>\u3000<answer>答案</answer>", 1.0),  # full-width space, CJK
    ("<THINK>a</THINK><ANSWER>1</ANSWER>", 0.0),               # tags are case-sensitive
    ("<think><THINK>x</THINK></think><answer>1</answer>", 1.0),  # ...so these are content
    ("<think></think><answer></answer>", 1.0),                 # empty blocks are well formed
    ("Sure! <think>a</think><answer>1</answer>", 0.0),
    ("<think>a</think><answer>1</answer> P.S.", 0.0),
    ("<think>a</think>so<answer>1</answer>", 0.0),
    ("<think>a</answer></think><answer>1</answer>", 0.0),
    ("", 0.0),
])
def test_edge_cases(text, expected):
    assert format_reward(text) == expected


def test_rejects_non_strings_clearly():
    with pytest.raises(ValueError, match="str"):
        format_reward(None)
    with pytest.raises(ValueError, match="str"):
        tag_count_reward(b"<think>")


def test_e4_degenerate_800kb_is_rejected_without_hanging():
    # ERRATA E4 at four times the 208 KB of the errata: the seed regex (quadratic) would need minutes
    # here, the linear checks about a millisecond. This is a hang guard with a margin of thousands
    # either way, not a benchmark: `make bench` measures the ratios side by side.
    text = degenerate_completion(32_000)
    assert len(text) > 800_000
    start = time.perf_counter()
    assert format_reward(text) == 0.0
    assert format_reward_regex(text) == 0.0
    assert time.perf_counter() - start < 10


def test_tag_count_reward():
    assert tag_count_reward("<think>a</think><answer>1</answer>") == 1.0
    assert tag_count_reward("<think>a</think>") == 0.5
    assert tag_count_reward("<think><think></think>") == 0.25
    assert tag_count_reward("plain text") == 0.0


def test_comparison_table_matches_expectations_for_ours():
    rows = compare_checkers()
    assert len(rows) == len(CASES)
    for row in rows:
        assert row["agentrl_ref"] == row["expected"] == row["tempered regex"], row
    # the seed's pattern is the one that accepts repeated and nested groups (E3)
    repeated = {"两组标签", "嵌套的 `<think>`", "两组标签，带 open-r1 的换行", "嵌套的 `<think>`，带 open-r1 的换行"}
    assert {r["case"] for r in rows if r["seed page"] != r["expected"]} == repeated
    # open-r1 rejects the one-line repeats only for their missing newlines: with them it accepts both
    by_case = {r["case"]: r for r in rows}
    assert by_case["两组标签"]["open-r1"] == by_case["嵌套的 `<think>`"]["open-r1"] == 0.0
    two, nested = by_case["两组标签，带 open-r1 的换行"], by_case["嵌套的 `<think>`，带 open-r1 的换行"]
    assert two["open-r1"] == nested["open-r1"] == 1.0
    # open-r1's `$` with re.MULTILINE: text after </answer> passes only on a later line
    assert by_case["`</answer>` 换行后还有文字"]["open-r1"] == 1.0
    assert by_case["`</answer>` 后紧跟文字"]["open-r1"] == 0.0


TAGGY = st.lists(st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", "a", " ", "\n", "\r",
                                  "\u3000", "<", ">", "/", "think", "<Think>", "x"]), max_size=12).map("".join)


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.text(), TAGGY))
def test_never_raises_and_is_binary(text):
    assert format_reward(text) in (0.0, 1.0)
    assert tag_count_reward(text) in (0.0, 0.25, 0.5, 0.75, 1.0)


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.text(), TAGGY))
def test_regex_and_string_scan_agree(text):
    """The exercise's regex answer and the reference scan are the same function."""
    assert format_reward_regex(text, STRICT_FORMAT_PATTERN) == format_reward(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30).filter(
    lambda s: not any(t in s for t in ("<think>", "</think>", "<answer>", "</answer>"))),
    st.text(max_size=30).filter(lambda s: not any(t in s for t in ("<think>", "</think>", "<answer>", "</answer>"))),
    st.sampled_from(["", " ", "\n", "\r\n", "\t \n"]))
def test_well_formed_completions_score_one(think, answer, gap):
    assert format_reward(f"{gap}<think>{think}</think>{gap}<answer>{answer}</answer>{gap}") == 1.0


def test_package_exports_resolve_and_format_reward_does_not_import_torch():
    import subprocess
    import sys

    import agentrl_ref

    for name in agentrl_ref.__all__:
        assert getattr(agentrl_ref, name) is not None, name
    code = "import sys; from agentrl_ref import format_reward; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
