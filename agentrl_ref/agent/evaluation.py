"""Held-out evaluation: accuracy, tool-call rate and copy rate, sampled (temperature 1) or greedy.

The measurement is the course's, not the student's: episodes are always scored with agentrl_ref's
accuracy_reward and format_reward, whatever parts the policy was trained with (a wrong reward in
MY_PARTS changes what GRPO learns, never how it is measured).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from agentrl_ref.agent.episode import Episode
from agentrl_ref.agent.parts import reference_part
from agentrl_ref.agent.rollout import sample_episodes
from agentrl_ref.agent.task import Problem
from agentrl_ref.agent.concurrency import torch_threads


@dataclass
class EvalResult:
    """Rates over n episodes (one per problem); copy_rate = accuracy among the episodes that called the tool."""

    n: int
    accuracy: float
    tool_rate: float
    copy_rate: float          # NaN when no episode called the tool
    no_tool_accuracy: float   # NaN when every episode called the tool
    format_rate: float
    mean_response_tokens: float
    mean_correct_answer_chars: float  # length of the final answer turn of the correct episodes (NaN if none)
    temperature: float
    episodes: list[Episode] = field(default_factory=list, repr=False)
    correct: list[int] = field(default_factory=list, repr=False)  # per problem, in the order of the problems
    tool: list[int] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("episodes", "correct", "tool")}


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def score_episodes(episodes: list[Episode]) -> list[dict]:
    """Per episode: {"correct", "format", "tool"} with agentrl_ref's accuracy_reward (ex2) and format_reward (ex1)."""
    accuracy_reward, format_reward = reference_part("accuracy_reward"), reference_part("format_reward")
    return [{"correct": accuracy_reward(e.answer_text, e.problem.answer) == 1.0,
             "format": format_reward(e.answer_text) == 1.0, "tool": e.tool_calls > 0} for e in episodes]


def summarize(episodes: list[Episode], temperature: float) -> EvalResult:
    """EvalResult of already sampled episodes."""
    scores = score_episodes(episodes)
    tool = [s["correct"] for s in scores if s["tool"]]
    no_tool = [s["correct"] for s in scores if not s["tool"]]
    return EvalResult(
        n=len(episodes),
        accuracy=_mean(s["correct"] for s in scores),
        tool_rate=_mean(s["tool"] for s in scores),
        copy_rate=_mean(tool),
        no_tool_accuracy=_mean(no_tool),
        format_rate=_mean(s["format"] for s in scores),
        mean_response_tokens=_mean(e.assistant_tokens() for e in episodes),
        mean_correct_answer_chars=_mean(len(e.answer_text) for e, s in zip(episodes, scores) if s["correct"]),
        temperature=temperature,
        episodes=episodes,
        correct=[int(s["correct"]) for s in scores],
        tool=[int(s["tool"]) for s in scores],
    )


def evaluate(policy, problems: list[Problem] | tuple[Problem, ...], temperature: float = 1.0, seed: int = 0,
             chunk: int = 256) -> EvalResult:
    """One episode per problem at `temperature` (0 = greedy), sampled with torch.Generator seeded by `seed`."""
    gen = torch.Generator().manual_seed(seed)
    episodes: list[Episode] = []
    with torch_threads():
        for i in range(0, len(problems), chunk):
            episodes += sample_episodes(policy, list(problems[i:i + chunk]), temperature=temperature, generator=gen)
    return summarize(episodes, temperature)
