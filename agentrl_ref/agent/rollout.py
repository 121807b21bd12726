"""The environment loop: sample multi-turn episodes from the policy, executing tool calls in between.

All B sequences advance one position per step with a key/value cache. A sequence's next token is
either *forced* (the prompt, and the tool turn plus the next `<|assistant|>` header that the
environment writes after a tool call) or *sampled* from the policy. When a sampled `<|im_end|>`
closes an assistant turn whose content is exactly `<tool>expr</tool>` (and the episode has tool calls
left), the calculator's result is written as a tool turn; any other closed turn ends the episode.
Every token's log-probability under the sampling policy (temperature 1) is recorded, forced ones too.

Interruptible generation (exercise 10): with a `watch`, the sampler asks it between decode steps whether the weights
changed. watch.poll(t) is called before the distribution of position t is computed and answers "go", "switch" (the
watch has loaded newer weights into the policy: the key/value cache is computed again with them, the earlier tokens
keep the log-probs they were sampled with) or "abort" (Interrupted is raised: the chunk is dropped). Each sampled
token then records watch.version, the version of the weights that sampled it (Episode.versions; PROMPT_VERSION on
the tokens no policy sampled). Without a watch nothing of this runs.
"""
from __future__ import annotations

import torch

from agentrl_ref.agent.episode import Episode, EpisodeBuilder
from agentrl_ref.agent.task import Problem, calculator
from agentrl_ref.agent.vocab import TOOL_CLOSE, TOOL_OPEN, VOCAB, Vocab

PROMPT_VERSION = -1  # Episode.versions of a token no policy sampled (agentrl_ref.partial_rollout's convention)


class Interrupted(Exception):
    """sample_episodes was told to abort by its watch; `sampled` tokens had been sampled (and are wasted)."""

    def __init__(self, sampled: int):
        super().__init__(f"generation aborted after {sampled} sampled tokens")
        self.sampled = sampled


def _prompt(problem: Problem, vocab: Vocab) -> tuple[list[int], list[tuple[str, int, int]]]:
    """<bos> <|user|> expr <|im_end|> <|assistant|>, and the user span."""
    start = EpisodeBuilder(problem, vocab)
    return start.tokens + [vocab.role["assistant"]], start.spans


@torch.no_grad()
def sample_episodes(policy, problems: list[Problem], *, group_size: int = 1, temperature: float = 1.0,
                    generator: torch.Generator | None = None, max_tool_calls: int = 1,
                    vocab: Vocab = VOCAB, watch=None) -> list[Episode]:
    """group_size episodes per problem (problem-major order); temperature 0 = greedy; deterministic per generator.
    watch: see the module docstring (interruptible generation)."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    was_training = policy.training
    policy.eval()
    try:
        return _sample(policy, problems, group_size, temperature, generator, max_tool_calls, vocab, watch)
    finally:
        policy.train(was_training)


def _sample(policy, problems, group_size, temperature, generator, max_tool_calls, vocab, watch=None):
    L = policy.max_len
    items = [p for p in problems for _ in range(group_size)]
    B = len(items)
    if B == 0:
        return []
    tokens = torch.full((B, L), vocab.pad, dtype=torch.long)
    logp = torch.zeros(B, L)
    forced_until = torch.zeros(B, dtype=torch.long)
    spans: list[list[tuple[str, int, int]]] = []
    turn_start, tool_calls, answer, truncated = [0] * B, [0] * B, [""] * B, [False] * B
    for b, problem in enumerate(items):
        prompt, prompt_spans = _prompt(problem, vocab)
        tokens[b, : len(prompt)] = torch.tensor(prompt)
        forced_until[b] = turn_start[b] = len(prompt)
        spans.append(list(prompt_spans))
    done = torch.zeros(B, dtype=torch.bool)
    if watch is not None:  # the version that sampled each token (interruptible generation)
        versions = torch.full((B, L), PROMPT_VERSION, dtype=torch.long)
        n_sampled = 0
    cache = policy.new_cache(B)
    prefix = int(forced_until.min())  # every sequence's first `prefix` tokens are forced: one prefill call
    logits = policy.extend(tokens[:, :prefix], 0, cache)
    logp[:, 1:prefix] = torch.log_softmax(logits[:, :-1], -1).gather(2, tokens[:, 1:prefix, None])[..., 0]
    last = logits[:, -1]
    open_, close = vocab.id[TOOL_OPEN], vocab.id[TOOL_CLOSE]
    for t in range(prefix, L):  # choose tokens[:, t] from `last` (the logits at position t - 1)
        log_probs = torch.log_softmax(last, -1)
        if temperature == 0:
            sampled = last.argmax(-1)
        else:
            sampled = torch.multinomial(torch.softmax(last / temperature, -1), 1, generator=generator)[:, 0]
        forced = t < forced_until
        nxt = torch.where(forced | done, tokens[:, t], sampled)
        tokens[:, t] = nxt
        logp[:, t] = log_probs.gather(1, nxt[:, None])[:, 0]
        if watch is not None:
            chosen = ~forced & ~done
            versions[chosen, t] = watch.version
            n_sampled += int(chosen.sum())
        for b in ((nxt == vocab.eot) & ~forced & ~done).nonzero()[:, 0].tolist():
            content = tokens[b, turn_start[b]:t].tolist()
            spans[b].append(("assistant", turn_start[b], t + 1))
            if len(content) >= 2 and content[0] == open_ and content[-1] == close and tool_calls[b] < max_tool_calls:
                result = calculator(vocab.decode(content[1:-1]))
                turn = [vocab.role["tool"], *vocab.encode(result), vocab.eot, vocab.role["assistant"]]
                if t + 1 + len(turn) >= L:  # no room left for an answer
                    truncated[b], done[b] = True, True
                    continue
                tokens[b, t + 1: t + 1 + len(turn)] = torch.tensor(turn)
                spans[b].append(("tool", t + 1, t + len(turn)))
                forced_until[b] = turn_start[b] = t + 1 + len(turn)
                tool_calls[b] += 1
            else:
                answer[b] = vocab.decode(content)
                done[b] = True
        if bool(done.all()) or t == L - 1:
            break
        if watch is not None:
            action = watch.poll(t + 1)
            if action == "abort":
                raise Interrupted(n_sampled)
            if action == "switch":  # new weights: their own keys and values for every position so far
                cache = policy.new_cache(B)
                last = policy.extend(tokens[:, :t + 1], 0, cache)[:, -1]
                continue
            if action != "go":
                raise ValueError(f"watch.poll must answer 'go', 'switch' or 'abort', got {action!r}")
        last = policy.extend(tokens[:, t:t + 1], t, cache)[:, 0]
    episodes = []
    for b, problem in enumerate(items):
        if not done[b]:  # ran out of positions inside an assistant turn: it counts, unfinished
            truncated[b] = True
            spans[b].append(("assistant", turn_start[b], L))
        end = spans[b][-1][2]
        episodes.append(Episode(problem, tokens[b, :end].tolist(), spans[b], answer[b], tool_calls[b],
                                truncated[b], logp[b, :end].tolist()))
        if watch is not None:
            episodes[-1].versions = versions[b, :end].tolist()
    return episodes
