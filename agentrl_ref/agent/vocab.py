"""The fixed vocabulary of the capstone: one token per role marker, tag, digit and operator.

Every token has a distinct text and no token's text is a prefix of another's, so a token string
decodes to exactly one text and encode(decode(ids)) == ids for any ids.
"""
from __future__ import annotations

PAD, BOS = "<pad>", "<bos>"
ROLE_MARKERS = {"system": "<|system|>", "user": "<|user|>", "assistant": "<|assistant|>", "tool": "<|tool|>"}
END_OF_TURN = "<|im_end|>"  # ends every turn; the end of the last assistant turn ends the episode (the EOS)
THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE = "<think>", "</think>", "<answer>", "</answer>"
TOOL_OPEN, TOOL_CLOSE = "<tool>", "</tool>"
BOXED_OPEN, BRACE_CLOSE = "\\boxed{", "}"

TOKENS: tuple[str, ...] = (
    PAD, BOS, *ROLE_MARKERS.values(), END_OF_TURN,
    THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE, TOOL_OPEN, TOOL_CLOSE, BOXED_OPEN, BRACE_CLOSE,
    *"0123456789", "+", "*", "=",
)


class Vocab:
    """Token <-> id maps for TOKENS; encode() is greedy longest match and raises ValueError on unknown text."""

    def __init__(self, tokens: tuple[str, ...] = TOKENS):
        if len(set(tokens)) != len(tokens):
            raise ValueError("tokens must be distinct")
        for a in tokens:
            for b in tokens:
                if a != b and b.startswith(a):
                    raise ValueError(f"token {a!r} is a prefix of {b!r}: decoding would be ambiguous")
        self.tokens = tuple(tokens)
        self.id = {tok: i for i, tok in enumerate(tokens)}
        self._by_first: dict[str, list[str]] = {}
        for tok in sorted(tokens, key=len, reverse=True):
            self._by_first.setdefault(tok[0], []).append(tok)
        self.pad, self.bos, self.eot = self.id[PAD], self.id[BOS], self.id[END_OF_TURN]
        self.role = {role: self.id[marker] for role, marker in ROLE_MARKERS.items()}

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        """Ids of text, read left to right by longest matching token; ValueError at the first unknown character."""
        ids, pos = [], 0
        while pos < len(text):
            for tok in self._by_first.get(text[pos], ()):
                if text.startswith(tok, pos):
                    ids.append(self.id[tok])
                    pos += len(tok)
                    break
            else:
                raise ValueError(f"cannot tokenize {text[pos:pos + 12]!r} at position {pos} of {text!r}")
        return ids

    def decode(self, ids) -> str:
        """The concatenated texts of ids (ints or a 1-D tensor)."""
        return "".join(self.tokens[int(i)] for i in ids)


VOCAB = Vocab()
