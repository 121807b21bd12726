"""One multi-turn episode as tokens plus (role, start, end) spans, the input of ex3's build_loss_mask.

Layout (one token per role marker, `<|im_end|>` closes every turn):

    <bos> <|user|> 123*45 <|im_end|>
          <|assistant|> <tool>123*45</tool> <|im_end|>             (optional tool call)
          <|tool|> 5535 <|im_end|>                                  (written by the environment)
          <|assistant|> <think>...</think><answer>\\boxed{5535}</answer> <|im_end|>

Spans follow verl's multi-turn rule (ANCHORS §3): a user or tool span covers its whole turn; an
assistant span covers the content and its `<|im_end|>` but not the `<|assistant|>` header, which the
environment writes (the generation prompt). <bos> is in no span. So the loss mask is 1 exactly on
the tokens the policy wrote.
"""
from __future__ import annotations

from dataclasses import dataclass

from agentrl_ref.agent.task import Problem
from agentrl_ref.agent.vocab import (
    ANSWER_CLOSE, ANSWER_OPEN, BOXED_OPEN, BRACE_CLOSE, THINK_CLOSE, THINK_OPEN, TOOL_CLOSE, TOOL_OPEN, VOCAB, Vocab,
)


@dataclass
class Episode:
    """tokens, role spans, the problem, and what the policy did (filled by the sampler or the builder)."""

    problem: Problem
    tokens: list[int]
    spans: list[tuple[str, int, int]]
    answer_text: str = ""          # content of the last assistant turn: what the rewards read
    tool_calls: int = 0            # tool calls the environment executed
    truncated: bool = False        # ran out of room before the final <|im_end|>
    logp: list[float] | None = None  # logp[t] = log pi(tokens[t] | tokens[:t]) under the sampling policy; logp[0] = 0
    # versions[t]: the policy version that sampled token t, -1 where no policy sampled it (interruptible generation,
    # exercise 10); None: every sampled token comes from the one version the trajectory carries
    versions: list[int] | None = None

    def __len__(self) -> int:
        return len(self.tokens)

    def role_of(self, t: int) -> str | None:
        """The role whose span holds token t, None for <bos> and assistant headers."""
        for role, start, end in self.spans:
            if start <= t < end:
                return role
        return None

    def assistant_tokens(self) -> int:
        """How many tokens the policy wrote (the sum of the assistant spans)."""
        return sum(end - start for role, start, end in self.spans if role == "assistant")

    def sampled_versions(self, policy_version: int) -> list[int]:
        """The version that sampled each token the policy wrote, in order (policy_version for all of them when the
        episode records no versions of its own)."""
        if self.versions is None:
            return [policy_version] * self.assistant_tokens()
        return [v for v in self.versions if v >= 0]


def tool_call_text(problem: Problem) -> str:
    """The assistant's tool-call turn content."""
    return f"{TOOL_OPEN}{problem.expr}{TOOL_CLOSE}"


def answer_text(think: str, answer: str) -> str:
    """ex1's format with ex2's box: <think>think</think><answer>\\boxed{answer}</answer>."""
    return f"{THINK_OPEN}{think}{THINK_CLOSE}{ANSWER_OPEN}{BOXED_OPEN}{answer}{BRACE_CLOSE}{ANSWER_CLOSE}"


class EpisodeBuilder:
    """Appends turns and records spans: start(problem), then assistant(text) / tool(text) turns."""

    def __init__(self, problem: Problem, vocab: Vocab = VOCAB):
        self.vocab, self.problem = vocab, problem
        self.tokens = [vocab.bos]
        self.spans: list[tuple[str, int, int]] = []
        self.turn("user", problem.expr)

    def turn(self, role: str, content: str) -> "EpisodeBuilder":
        """Append <|role|> content <|im_end|>; the assistant's span leaves its header out."""
        start = len(self.tokens)
        self.tokens += [self.vocab.role[role], *self.vocab.encode(content), self.vocab.eot]
        self.spans.append((role, start + 1 if role == "assistant" else start, len(self.tokens)))
        return self

    def build(self) -> Episode:
        answers = [s for s in self.spans if s[0] == "assistant"]
        text = self.vocab.decode(self.tokens[answers[-1][1]:answers[-1][2] - 1]) if answers else ""
        tool_calls = sum(role == "tool" for role, _, _ in self.spans)
        return Episode(self.problem, list(self.tokens), list(self.spans), text, tool_calls)


def demo_episode(problem: Problem, use_tool: bool, think: str = "", answer: str | None = None,
                 vocab: Vocab = VOCAB) -> Episode:
    """A well-formed episode: optional tool call and tool result, then the answer (default: the gold result)."""
    from agentrl_ref.agent.task import calculator

    b = EpisodeBuilder(problem, vocab)
    if use_tool:
        b.turn("assistant", tool_call_text(problem)).turn("tool", calculator(problem.expr))
    b.turn("assistant", answer_text(think, problem.answer if answer is None else answer))
    return b.build()
