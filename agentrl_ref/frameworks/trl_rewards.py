"""TRL reward functions from the course's parts (contract checked against trl 1.16.0's GRPOTrainer).

GRPOTrainer calls every reward function with keyword arguments only:

    f(prompts=[...], completions=[...], completion_ids=[...], trainer_state=..., log_extra=...,
      log_metric=..., **every other dataset column, one value per completion)

(plus environments=[...] when the trainer was given an environment_factory)

and wants one float per completion back (None means "cannot score": TRL makes it NaN and leaves it out
of the sums). A completion is a str when the dataset's prompts are plain text, and a list of messages,
e.g. [{"role": "assistant", "content": "..."}], when they are conversations; either way it was decoded
with skip_special_tokens=True, so special tokens (<|im_end|>, <|endoftext|>) never reach a reward. So a
reward function takes **kwargs, and the course's format tags must be ordinary tokens of the tokenizer.

Here the gold answer comes from a dataset column named `answer`.
"""
from __future__ import annotations


from agentrl_ref.composite_reward import CompositeFn, seed_reward_fn
from agentrl_ref.format_reward import format_reward
from agentrl_ref.verifiable_reward import accuracy_reward



def completion_text(completion) -> str:
    """The text a reward judges: a str as it is; a conversation -> the content of its last assistant message.

    With tools a conversational completion holds several messages (assistant, tool, assistant, ...); the
    answer is in the last assistant message. ValueError for anything else (no assistant message, content
    that is neither a str nor a list of {"type": "text", "text": str} parts).
    """
    if isinstance(completion, str):
        return completion
    if not isinstance(completion, (list, tuple)):
        raise ValueError(f"a completion is a str or a list of messages, got {type(completion).__name__}")
    replies = [m for m in completion if isinstance(m, dict) and m.get("role") == "assistant"]
    if not replies:
        raise ValueError(f"the conversational completion has no assistant message: {completion!r:.200}")
    content = replies[-1].get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text"
                                         and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    raise ValueError(f"assistant content must be a str or a list of text parts, got {content!r:.200}")


def _golds(completions, answer) -> list[str]:
    if answer is None:
        raise ValueError("this reward needs the gold answers: give the dataset a column named 'answer'")
    if len(answer) != len(completions):
        raise ValueError(f"{len(completions)} completions but {len(answer)} answers")
    return list(answer)


def trl_format_reward(completions, **kwargs) -> list[float]:
    """Exercise 1's format_reward on every completion's text (1.0 or 0.0)."""
    return [format_reward(completion_text(c)) for c in completions]


def trl_accuracy_reward(completions, answer=None, **kwargs) -> list[float]:
    """Exercise 2's accuracy_reward of every completion's text against the dataset column `answer`."""
    return [accuracy_reward(completion_text(c), gold) for c, gold in zip(completions, _golds(completions, answer))]


def make_trl_composite_reward(reward_fn: CompositeFn | None = None, name: str = "composite_reward"):
    """A TRL reward function named `name` that returns exercise 5's "total" and logs every component.

    reward_fn is a composite built with agentrl_ref.make_reward_fn (default: the seed page's 0.1 format
    + 1.0 accuracy + 0.2 cosine length). TRL logs the mean total as rewards/<name>/mean; each component's
    batch mean goes to log_metric as <name>/<component>, the way verl logs the extra keys of a dict score.
    """
    score = reward_fn if reward_fn is not None else seed_reward_fn()

    def composite(completions, answer=None, log_metric=None, **kwargs) -> list[float]:
        scores = [score(completion_text(c), gold) for c, gold in zip(completions, _golds(completions, answer))]
        if log_metric is not None and scores:
            for key in scores[0]:
                if key != "total":
                    log_metric(f"{name}/{key}", sum(s[key] for s in scores) / len(scores))
        return [s["total"] for s in scores]

    composite.__name__ = composite.__qualname__ = name  # TRL names the logged reward after __name__
    return composite


trl_composite_reward = make_trl_composite_reward()
