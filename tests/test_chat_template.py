"""agentrl_ref.teaching.shared.chat_template and mask_plots: ChatML rendering, the offline tokenizer, token parts
and the mask."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from conftest import STRICT_WARNINGS
from agentrl_ref.teaching.shared.chat_template import (
    AGENT_CONVERSATION, IM_END, IM_START, PARTS, ROLES, chatml_tokenizer, loss_mask_from_tokens,
    render_chatml, role_spans_from_tokens, tokenize_chat, tokenizer_fingerprint, train_chatml_tokenizer,
    verl_sft_tokens,
)
from agentrl_ref.loss_mask import build_loss_mask, is_trainable, shift_mask_for_clm
from agentrl_ref.teaching.ex3_loss_mask.mask_plots import boundary_table, message_table, token_label

pytestmark = STRICT_WARNINGS  # no torch or matplotlib warning on any path (see conftest)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def chat():
    return tokenize_chat(AGENT_CONVERSATION)


def test_render_chatml_text_and_segments():
    text, segments = render_chatml([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nyo<|im_end|>\n"
    assert [(s.message, s.role, s.part, text[s.start:s.end]) for s in segments] == [
        (0, "user", "header", "<|im_start|>user\n"), (0, "user", "content", "hi"),
        (0, "user", "end", "<|im_end|>"), (0, "user", "sep", "\n"),
        (1, "assistant", "header", "<|im_start|>assistant\n"), (1, "assistant", "content", "yo"),
        (1, "assistant", "end", "<|im_end|>"), (1, "assistant", "sep", "\n"),
    ]
    assert render_chatml([]) == ("", [])


@pytest.mark.parametrize("messages, fragment", [
    ([{"role": "bot", "content": "x"}], "'bot'"),
    ([{"role": "user", "content": None}], "content must be a string"),
    ([{"role": "user", "content": "a <|im_end|> b"}], "<|im_end|>"),
    ([{"content": "x"}], "None"),
])
def test_render_rejects_bad_messages(messages, fragment):
    with pytest.raises(ValueError) as err:
        render_chatml(messages)
    assert fragment in str(err.value)


def test_special_tokens_are_single_tokens():
    tokenizer = chatml_tokenizer()
    for special in (IM_START, IM_END):
        assert tokenizer.encode(special).tokens == [special]
    assert tokenizer.encode("<|im_start|>assistant\n").tokens[0] == IM_START


def test_training_is_deterministic_in_process():
    a, b = train_chatml_tokenizer(), train_chatml_tokenizer()
    assert tokenizer_fingerprint(a) == tokenizer_fingerprint(b) == tokenizer_fingerprint(chatml_tokenizer())
    assert a.get_vocab_size() == b.get_vocab_size()


def test_training_is_deterministic_across_processes():
    code = ("from agentrl_ref.teaching.shared.chat_template import train_chatml_tokenizer, tokenizer_fingerprint;"
            "print(tokenizer_fingerprint(train_chatml_tokenizer()))")
    prints = set()
    for env in ({"TOKENIZERS_PARALLELISM": "true", "RAYON_NUM_THREADS": "2"},
                {"TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1"}):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                             env={**os.environ, **env, "PYTHONPATH": ROOT})
        prints.add(out.stdout.strip())
    assert prints == {tokenizer_fingerprint(chatml_tokenizer())}


def test_chatml_tokenizer_returns_independent_objects():
    a = chatml_tokenizer()
    a.enable_padding(length=4)
    assert chatml_tokenizer().padding is None


def test_tokens_tile_the_text_and_carry_their_segment(chat):
    assert "".join(chat.pieces) == chat.text
    assert len(chat.ids) == len(chat.offsets) == len(chat.roles) == len(chat.parts) == len(chat.message) == len(chat)
    for t, (start, end) in enumerate(chat.offsets):
        seg = next(s for s in chat.segments if s.start <= start < s.end)
        assert (seg.role, seg.part, seg.message) == (chat.roles[t], chat.parts[t], chat.message[t])
        assert end <= seg.end
    # every message: header is <|im_start|> role \n, end is one <|im_end|>, sep one newline
    for index, message in enumerate(AGENT_CONVERSATION):
        tokens = [t for t in range(len(chat)) if chat.message[t] == index]
        header = [chat.pieces[t] for t in tokens if chat.parts[t] == "header"]
        assert "".join(header) == f"{IM_START}{message['role']}\n" and header[0] == IM_START
        assert [chat.pieces[t] for t in tokens if chat.parts[t] == "end"] == [IM_END]
        assert [chat.pieces[t] for t in tokens if chat.parts[t] == "sep"] == ["\n"]
        assert "".join(chat.pieces[t] for t in tokens if chat.parts[t] == "content") == message["content"]


def test_the_conversation_has_every_role_and_a_tool_call():
    roles = [m["role"] for m in AGENT_CONVERSATION]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert "<tool_call>" in AGENT_CONVERSATION[2]["content"]


def test_roles_match_loss_mask():
    from agentrl_ref.loss_mask import ROLES as LOSS_MASK_ROLES

    assert ROLES == LOSS_MASK_ROLES


def test_the_exercise_rule():
    trained = {(r, p) for r in ROLES for p in PARTS if is_trainable(r, p)}
    assert trained == {("assistant", "content"), ("assistant", "end")}


def test_verl_model_trains_the_newline_after_each_assistant_end(chat):
    """verl 0.7 tokenizes message by message (the same ids here) and masks only the generation prompt."""
    ids, mask = verl_sft_tokens(AGENT_CONVERSATION)
    assert tuple(ids) == chat.ids
    ours = loss_mask_from_tokens(chat)
    differ = [t for t in range(len(chat)) if mask[t] != ours[t]]
    assert [(chat.roles[t], chat.parts[t], mask[t]) for t in differ] == [("assistant", "sep", 1)] * 2
    assert all(mask[t] == 0 for t in range(len(chat)) if chat.parts[t] == "header" or chat.roles[t] != "assistant")


def test_mask_on_the_real_conversation(chat):
    mask = loss_mask_from_tokens(chat)
    for t in range(len(chat)):
        expected = chat.roles[t] == "assistant" and chat.parts[t] in ("content", "end")
        assert mask[t] == int(expected)
    ends = [t for t in range(len(chat)) if chat.pieces[t] == IM_END and chat.roles[t] == "assistant"]
    assert len(ends) == 2 and all(mask[t] == 1 for t in ends)          # the model learns to stop
    assert all(mask[t] == 0 for t in range(len(chat)) if chat.roles[t] == "tool")
    shifted = shift_mask_for_clm(mask)
    for t in ends:
        assert shifted[t - 1] == 1 and shifted[t] == 0   # <|im_end|> is predicted by the token before it
    headers = [t for t in range(len(chat)) if chat.roles[t] == "assistant" and chat.parts[t] == "header"]
    last_header_tokens = [t for t in headers if chat.parts[t + 1] == "content"]
    assert len(last_header_tokens) == 2 and all(shifted[t] == 1 for t in last_header_tokens)


def test_role_spans_feed_build_loss_mask(chat):
    spans = role_spans_from_tokens(chat)
    assert build_loss_mask(list(chat.ids), spans) == loss_mask_from_tokens(chat)
    whole = role_spans_from_tokens(chat, parts=PARTS)
    assert [r for r, _, _ in whole] == [m["role"] for m in AGENT_CONVERSATION]
    assert whole[0][1] == 0 and whole[-1][2] == len(chat)
    assert all(a[2] == b[1] for a, b in zip(whole, whole[1:]))        # whole messages tile the tokens
    extra = [t for t, (w, v) in enumerate(zip(build_loss_mask(list(chat.ids), whole), loss_mask_from_tokens(chat)))
             if w != v]
    assert {(chat.roles[t], chat.parts[t]) for t in extra} == {("assistant", "header"), ("assistant", "sep")}
    with pytest.raises(ValueError):
        role_spans_from_tokens(chat, parts=("header", "end"))   # not contiguous inside a message
    with pytest.raises(ValueError):
        role_spans_from_tokens(chat, parts=("body",))


def test_straddling_token_is_an_error():
    # a tokenizer that learnt the merge "\n\n": the header's "\n" and a content starting with "\n\n" give the
    # pre-token "\n\n" + "\n" (GPT-2's split), and the first of these crosses the header/content boundary
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.train_from_iterator(["a\n\n\nb"] * 5, trainers.BpeTrainer(
        vocab_size=300, special_tokens=[IM_START, IM_END], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    assert tokenize_chat([{"role": "user", "content": "x"}], tokenizer).pieces[0] == IM_START
    with pytest.raises(ValueError, match="straddles"):
        tokenize_chat([{"role": "assistant", "content": "\n\nx"}], tokenizer)


@pytest.mark.parametrize("vocab_size", range(259, 275))
def test_tokens_sharing_a_character(vocab_size):
    # byte-level merges inside "算一下结果是" (3 bytes per character): with some vocabulary sizes one token ends
    # in the first bytes of a character and the next token holds the rest, so their character offsets overlap
    # ((1, 3) then (2, 4)); the tokens still tile the text's bytes and belong to one part
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.train_from_iterator(["算一下结果是"] * 5, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[IM_START, IM_END], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    chat = tokenize_chat([{"role": "user", "content": "算一下结果是"}], tokenizer)
    assert b"".join(chat.token_bytes) == chat.text.encode("utf-8")
    assert [p for p, part in zip(chat.pieces, chat.parts) if part == "content"]


# the course tokenizer never learnt a merge across a newline, so no token of any content straddles two parts
message_text = st.text(alphabet=st.sampled_from(list("abc xyz0123.,?!*={}\"<>/_\t\né中") + ["\U0001F600"]), max_size=30)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(ROLES), message_text), max_size=5))
def test_random_conversations(messages):
    messages = [{"role": r, "content": c} for r, c in messages]
    chat = tokenize_chat(messages)
    assert chat.text == render_chatml(messages)[0]
    assert b"".join(chat.token_bytes) == chat.text.encode("utf-8")
    if chat.text.isascii():
        assert "".join(chat.pieces) == chat.text
    mask = loss_mask_from_tokens(chat)
    assert mask == build_loss_mask(list(chat.ids), role_spans_from_tokens(chat))
    assert sum(mask) == sum(1 for r, p in zip(chat.roles, chat.parts) if r == "assistant" and p in ("content", "end"))
    labels = [token_label(p) for p in chat.pieces]
    assert all(label.isascii() for label in labels)


def test_token_label_is_ascii():
    assert token_label(" are") == "_are" and token_label("\n") == "\\n" and token_label("\t") == "\\t"
    assert token_label("<|im_end|>") == "<|im_end|>"
    assert token_label("é中") == "\\xe9\\u4e2d"
    for piece in ["\x00", "\u3000", "\U0001F600"]:
        assert token_label(piece).isascii() and token_label(piece).isprintable()


def test_tables(chat):
    mask = loss_mask_from_tokens(chat)
    shifted = shift_mask_for_clm(mask)
    table = message_table(chat, mask)
    assert table.count("\n") == 2 + len(AGENT_CONVERSATION) and f"| {sum(mask)} |" in table
    both = message_table(chat, mask, ("verl", verl_sft_tokens(AGENT_CONVERSATION)[1]))
    assert f"| {sum(mask)} | {sum(mask) + 2} |" in both
    with pytest.raises(ValueError):
        message_table(chat, mask, ("short", mask[:-1]))
    boundary = boundary_table(chat, mask, shifted, message=2)
    assert "\\|im_start\\|" in boundary and "|im_start|" not in boundary.replace("\\|", "")
    assert "| **1** |" in boundary and "assistant / header" in boundary
    with pytest.raises(ValueError):
        boundary_table(chat, mask, shifted, message=99)


def test_heatmap_tokens_are_ascii_and_silent(chat):
    """Token labels in ASCII; the title's language and every glyph: tests/test_figures.py."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentrl_ref.teaching.ex3_loss_mask.mask_plots import plot_mask_heatmap as plot_heatmap

    mask = loss_mask_from_tokens(chat)
    fig = plot_heatmap(chat, mask, shift_mask_for_clm(mask))
    ticks = [t.get_text() for ax in fig.axes[:1] for t in ax.get_xticklabels()]
    assert ticks and all(t.isascii() for t in ticks)
    assert any("<|im_end|>" == t for t in ticks)
    fig.canvas.draw()  # warnings are errors here: no glyph or layout warnings
    plt.close(fig)
    with pytest.raises(ValueError):
        plot_heatmap(chat, mask, mask)
