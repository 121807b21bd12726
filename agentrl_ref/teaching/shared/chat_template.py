"""A real multi-turn agent conversation: ChatML rendering, a real tokenizer, and which tokens are trained.

Backs the second half of exercise 3. The seed page marks whole role spans on made-up token
positions; here the spans come from a rendered conversation and a real byte-level BPE tokenizer:

    render_chatml(messages)      -> text + character segments (message, role, part, start, end),
                                    part in PARTS: "header" = "<|im_start|>{role}\\n", "content",
                                    "end" = "<|im_end|>", "sep" = the "\\n" between turns
    chatml_tokenizer()           -> a tiny byte-level BPE trained in-process on CORPUS (shipped
                                    below; nothing is downloaded), with <|im_start|> and
                                    <|im_end|> as single special tokens (train_chatml_tokenizer
                                    trains a new one; tokenizer_fingerprint compares two)
    tokenize_chat(messages)      -> token ids, offsets, and the (role, part) of every token
    loss_mask_from_tokens(chat)  -> the 0/1 mask over the tokens, by default with the exercise's rule
                                    (agentrl_ref.loss_mask.is_trainable): assistant content and its
                                    <|im_end|> are trained
    verl_sft_tokens(messages)    -> a model of verl 0.7's multi-turn SFT dataset: each message tokenized
                                    alone, an assistant message trained except its generation prompt
                                    (so it also trains the "\\n" after <|im_end|>)
    role_spans_from_tokens(chat) -> (role, start, end) token spans for agentrl_ref.build_loss_mask
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

ROLES = ("system", "user", "assistant", "tool")  # as agentrl_ref.loss_mask.ROLES (not imported: that needs torch)
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = (IM_START, IM_END)
PARTS = ("header", "content", "end", "sep")
TRAINED_PARTS = ("content", "end")
VOCAB_SIZE = 448

# The conversation of the notebook: a math agent that calls a calculator tool once.
AGENT_CONVERSATION: list[dict[str, str]] = [
    {"role": "system", "content": "You are a math agent. Use the calculator tool for arithmetic."},
    {"role": "user", "content": "What is 23 * 17?"},
    {"role": "assistant", "content": 'Let me use the calculator.\n'
                                     '<tool_call>{"name": "mul", "arguments": {"a": 23, "b": 17}}</tool_call>'},
    {"role": "tool", "content": "391"},
    {"role": "assistant", "content": "23 * 17 = 391."},
]

# The tokenizer's training text (written for this course). Plain text only: special tokens are
# added by the trainer, so they never appear here.
CORPUS = """\
system
You are a math agent. Use the calculator tool for arithmetic.
You are a helpful assistant. Use a tool when you need one, then answer briefly.
user
What is 23 * 17?
What is 12 + 30? What is 45 / 9? What is 6 * 7? What is 100 - 58?
Please compute 19 * 21 for me. How much is 3 * 14?
assistant
Let me use the calculator.
Let me use the calculator tool for this.
<tool_call>{"name": "mul", "arguments": {"a": 23, "b": 17}}</tool_call>
<tool_call>{"name": "add", "arguments": {"a": 12, "b": 30}}</tool_call>
<tool_call>{"name": "div", "arguments": {"a": 45, "b": 9}}</tool_call>
<tool_call>{"name": "sub", "arguments": {"a": 100, "b": 58}}</tool_call>
<tool_call>{"name": "mul", "arguments": {"a": 19, "b": 21}}</tool_call>
tool
391
42
5
399
assistant
23 * 17 = 391.
12 + 30 = 42.
45 / 9 = 5.
The calculator says 19 * 21 = 399, so the answer is 399.
The answer is 42.
user
Thanks! Now add 1 to the result.
assistant
Sure, let me call the tool again.
"""


@dataclass(frozen=True)
class Segment:
    """Characters text[start:end] of the rendered conversation: one part of one message."""
    message: int
    role: str
    part: str
    start: int
    end: int


@dataclass(frozen=True)
class TokenizedChat:
    """A rendered, tokenized conversation with the (role, part) of every token."""
    text: str
    segments: tuple[Segment, ...]
    ids: tuple[int, ...]
    tokens: tuple[str, ...]                # the tokenizer's token strings (byte-level: "Ġare" for " are")
    offsets: tuple[tuple[int, int], ...]   # character offsets of each token in text
    message: tuple[int, ...]               # index of the message each token belongs to
    roles: tuple[str, ...]
    parts: tuple[str, ...]

    @property
    def token_bytes(self) -> list[bytes]:
        """The UTF-8 bytes of every token; they concatenate to text.encode()."""
        return [token.encode("utf-8") if token in SPECIAL_TOKENS else bytes(_BYTE_OF[ch] for ch in token)
                for token in self.tokens]

    @property
    def pieces(self) -> list[str]:
        """The text of every token. A token holding part of a multi-byte character shows its bytes as \\xNN."""
        return [b.decode("utf-8", errors="backslashreplace") for b in self.token_bytes]

    def __len__(self) -> int:
        return len(self.ids)


def _bytes_to_unicode() -> dict[int, str]:
    """The byte -> printable character table of byte-level BPE (GPT-2's, used by tokenizers' ByteLevel)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


_BYTE_OF = {ch: b for b, ch in _bytes_to_unicode().items()}


def render_chatml(messages: Sequence[dict]) -> tuple[str, list[Segment]]:
    """ChatML text of the messages and its segments, which tile the text in order.

    Each message renders as "<|im_start|>{role}\\n" (header) + content + "<|im_end|>" (end) + "\\n" (sep).
    ValueError for an unknown role, non-string content, or content containing a special token.
    """
    text, segments = [], []
    position = 0
    for index, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise ValueError(f"message {index}: unknown role {role!r}; roles are {ROLES}")
        if not isinstance(content, str):
            raise ValueError(f"message {index}: content must be a string, got {type(content).__name__}")
        for special in SPECIAL_TOKENS:
            if special in content:
                raise ValueError(f"message {index}: content contains the special token {special!r}")
        for part, piece in zip(PARTS, (f"{IM_START}{role}\n", content, IM_END, "\n")):
            segments.append(Segment(index, role, part, position, position + len(piece)))
            text.append(piece)
            position += len(piece)
    return "".join(text), segments


def train_chatml_tokenizer(vocab_size: int = VOCAB_SIZE, corpus: str = CORPUS):
    """Train a new tokenizers.Tokenizer: byte-level BPE on corpus, <|im_start|> and <|im_end|> special.

    Deterministic (same vocab_size and corpus -> the same JSON, see tokenizer_fingerprint) and
    fast (milliseconds). Offline: the corpus ships in this module.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(corpus.splitlines(), trainer)
    return tokenizer


@lru_cache(maxsize=4)
def _tokenizer_json(vocab_size: int, corpus: str) -> str:
    return train_chatml_tokenizer(vocab_size, corpus).to_str()


def chatml_tokenizer(vocab_size: int = VOCAB_SIZE, corpus: str = CORPUS):
    """The course tokenizer: like train_chatml_tokenizer, trained once per process.

    Every call returns a new Tokenizer object (built from the cached JSON), so callers may change
    its settings (padding, truncation) without affecting anyone else.
    """
    from tokenizers import Tokenizer

    return Tokenizer.from_str(_tokenizer_json(vocab_size, corpus))


def tokenizer_fingerprint(tokenizer) -> str:
    """sha256 of the tokenizer's JSON: equal fingerprints mean identical vocabularies and merges."""
    return hashlib.sha256(tokenizer.to_str().encode("utf-8")).hexdigest()


def tokenize_chat(messages: Sequence[dict], tokenizer=None) -> TokenizedChat:
    """Render with ChatML, tokenize, and give every token the role and part of the segment it lies in.

    ValueError when a token straddles two segments (its mask would be ambiguous); tokenize the
    messages one by one instead, as verl's multi-turn SFT dataset does, if that happens.
    """
    tokenizer = tokenizer if tokenizer is not None else chatml_tokenizer()
    text, segments = render_chatml(messages)
    encoding = tokenizer.encode(text, add_special_tokens=False)
    message, roles, parts = [], [], []
    k = 0
    previous = (0, 0)
    for token, (start, end) in zip(encoding.tokens, encoding.offsets):
        # consecutive tokens either follow each other or share one multi-byte character, the last one of
        # the previous token (a merge may join a whole character to the first bytes of the next one)
        if start not in (previous[1], max(previous[1] - 1, previous[0])) or end < start:
            raise ValueError(f"token {token!r} at characters {start}:{end} does not follow {previous}")
        previous = (start, end)
        while k < len(segments) and segments[k].end <= start:
            k += 1
        if k == len(segments) or not (segments[k].start <= start and end <= segments[k].end):
            raise ValueError(f"token {token!r} at characters {start}:{end} straddles a segment boundary "
                             f"({text[start:end]!r}); tokenize each message separately")
        segment = segments[k]
        message.append(segment.message)
        roles.append(segment.role)
        parts.append(segment.part)
    if previous[1] != len(text):
        raise ValueError("the tokens do not cover the whole text")
    chat = TokenizedChat(text, tuple(segments), tuple(encoding.ids), tuple(encoding.tokens),
                         tuple(map(tuple, encoding.offsets)), tuple(message), tuple(roles), tuple(parts))
    if b"".join(chat.token_bytes) != text.encode("utf-8"):
        raise ValueError("the tokens do not spell the text (not a byte-level BPE tokenizer?)")
    return chat


def loss_mask_from_tokens(chat: TokenizedChat, rule: Callable[[str, str], bool] | None = None) -> list[int]:
    """0/1 per token: rule(role, part); the default rule is agentrl_ref.loss_mask.is_trainable (the exercise's)."""
    if rule is None:
        from agentrl_ref.loss_mask import is_trainable as rule
    return [int(bool(rule(role, part))) for role, part in zip(chat.roles, chat.parts)]


def verl_sft_tokens(messages: Sequence[dict], tokenizer=None) -> tuple[list[int], list[int]]:
    """(ids, loss mask) as verl 0.7.0's multi-turn SFT dataset builds them, modelled on this ChatML template.

    verl/utils/dataset/multiturn_sft_dataset.py (v0.7.0, _process_single_message, L166-216) renders every
    message alone with apply_chat_template([message]); an assistant message gets loss mask 1 on all its tokens
    except the first len(generation_prompt) ones, other roles 0. The generation prompt is what
    add_generation_prompt=True appends (verl/utils/chat_template.py L31-44): "<|im_start|>assistant\\n" here.
    A message renders as header + content + <|im_end|> + "\\n", so verl also trains the "\\n" after the
    assistant's <|im_end|>; the exercise's rule (is_trainable) does not. (verl also strips a default system
    prompt that some templates add to every message; this template adds none.)
    """
    tokenizer = tokenizer if tokenizer is not None else chatml_tokenizer()
    generation_prompt = len(tokenizer.encode(f"{IM_START}assistant\n", add_special_tokens=False).ids)
    ids, mask = [], []
    for message in messages:
        text, _ = render_chatml([message])
        piece = tokenizer.encode(text, add_special_tokens=False).ids
        trained = [0] * len(piece)
        if message["role"] == "assistant":
            trained[generation_prompt:] = [1] * (len(piece) - generation_prompt)
        ids += piece
        mask += trained
    return ids, mask


def role_spans_from_tokens(chat: TokenizedChat, parts: Sequence[str] = TRAINED_PARTS) -> list[tuple[str, int, int]]:
    """(role, start, end) token spans, one per message, covering that message's tokens whose part is in parts.

    With the default parts, build_loss_mask(chat.ids, spans) equals loss_mask_from_tokens(chat): headers
    and separators fall in no span. With parts=PARTS each span is the whole message (the seed's picture).
    """
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"unknown parts {sorted(unknown)}; parts are {PARTS}")
    spans = []
    for index in range(max(chat.message, default=-1) + 1):
        positions = [t for t, (m, p) in enumerate(zip(chat.message, chat.parts)) if m == index and p in parts]
        if positions:
            if positions != list(range(positions[0], positions[-1] + 1)):
                raise ValueError(f"message {index}: the tokens of parts {tuple(parts)} are not contiguous")
            spans.append((chat.roles[positions[0]], positions[0], positions[-1] + 1))
    return spans
