"""What a student plugs into the capstone, in one object: exercise 7's loss and advantage wiring and the six course
parts, with agentrl_ref's references wherever a field is left None.

    MY_PARTS = Parts(loss=clipped_pg_loss, advantages=token_advantages, format_reward=format_reward)
    parts = resolve_parts(MY_PARTS)     # the ten course parts filled in with the references

Exercise 7: loss(logp_new, logp_old, advantages, loss_mask, clip_eps) -> scalar (None: agent/loss.py's
clipped_pg_loss, which the grading sandbox hides) and advantages(rewards [B], group_size, loss_mask [B, T]) -> [B, T]
(None: group_normalize then broadcast_to_tokens, as the arm's credit and scaling say).
The course parts keep the notebooks' names and signatures:
format_reward(completion) (ex1), accuracy_reward(completion, gold) (ex2),
build_loss_mask(token_ids, role_spans) and shift_mask_for_clm(mask) on lists (ex3),
AsyncRolloutBuffer(batch_size, max_capacity[, max_staleness=]) (ex4),
cosine_length_reward(completion, gold, max_len) and make_reward_fn(weights, funcs) (ex5),
group_normalize(rewards, group_size), broadcast_to_tokens(advantages, loss_mask) and the per-sequence
assign_reward_last_token(seq_reward, loss_mask) (ex6).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

EXERCISE_OF = {
    "format_reward": 1, "accuracy_reward": 2, "build_loss_mask": 3, "shift_mask_for_clm": 3,
    "AsyncRolloutBuffer": 4, "cosine_length_reward": 5, "make_reward_fn": 5,
    "group_normalize": 6, "broadcast_to_tokens": 6, "assign_reward_last_token": 6,
}
SFT_PARTS = ("build_loss_mask", "shift_mask_for_clm")  # what sft_trainer calls; the rest enters with GRPO

# The composite reward of the capstone (ex5's seed weights): 0.1 format + 1.0 accuracy + 0.2 cosine length.
REWARD_WEIGHTS = {"fmt": 0.1, "acc": 1.0, "cos_len": 0.2}
COS_MAX_LEN = 64  # characters of the final answer turn: a well-formed one has 44 (empty think) to 49


@dataclass(frozen=True)
class Parts:
    """One callable (or class) per plug-in point; None: agentrl_ref's reference (see resolve_parts)."""

    loss: Callable | None = None                 # exercise 7, TODO 1-4
    advantages: Callable | None = None           # exercise 7, TODO 5-6
    format_reward: Callable | None = None
    accuracy_reward: Callable | None = None
    build_loss_mask: Callable | None = None
    shift_mask_for_clm: Callable | None = None
    AsyncRolloutBuffer: Any = None
    cosine_length_reward: Callable | None = None
    make_reward_fn: Callable | None = None
    group_normalize: Callable | None = None
    broadcast_to_tokens: Callable | None = None
    assign_reward_last_token: Callable | None = None


PLUG_INS = tuple(f.name for f in fields(Parts))  # loss, advantages, then the course parts in exercise order


def chosen(parts: dict[str, Any] | Parts | None = None) -> dict[str, Any]:
    """The plug-ins that are set (a dict's entries, a Parts' fields that are not None); ValueError for unknown names."""
    if isinstance(parts, Parts):
        return {name: getattr(parts, name) for name in PLUG_INS if getattr(parts, name) is not None}
    parts = dict(parts or {})
    unknown = sorted(set(parts) - set(PLUG_INS))
    if unknown:
        raise ValueError(f"unknown part(s) {unknown}; the parts are {sorted(PLUG_INS)}")
    return {name: part for name, part in parts.items() if part is not None}


def resolve_parts(overrides: dict[str, Any] | Parts | None = None, **kwargs: Any) -> Parts:
    """Parts with agentrl_ref's references for every course part not given (a dict, a Parts or keywords); loss and
    advantages stay None when not given (the trainer's defaults). ValueError for unknown names."""
    given = {**chosen(overrides), **chosen(kwargs)}
    return Parts(**{name: given.get(name, reference_part(name) if name in EXERCISE_OF else None) for name in PLUG_INS})


def reference_part(name: str):
    """agentrl_ref's public `name` (agentrl_ref/__init__.py keeps format_reward the function, not its module)."""
    import agentrl_ref

    return getattr(agentrl_ref, name)


def default_loss_fn():
    """agentrl_ref.agent.loss.clipped_pg_loss, the loss when parts.loss is None (imported only then: the grading
    sandbox hides loss.py)."""
    from agentrl_ref.agent.loss import clipped_pg_loss

    return clipped_pg_loss


def is_reference(obj) -> bool:
    """True for a function or class of agentrl_ref itself (not the student's)."""
    return (getattr(obj, "__module__", None) or "?").split(".")[0] == "agentrl_ref"


def uses_own_parts(parts: dict[str, Any] | Parts | None = None) -> bool:
    """True when any plug-in (a course part, the loss or the advantage wiring) is not agentrl_ref's."""
    return any(not is_reference(part) for part in chosen(parts).values())


def build_reward_fn(parts: Parts, weights: dict[str, float] | None = None, cos_max_len: int = COS_MAX_LEN):
    """R(answer_text, gold) -> {"fmt", "acc", "cos_len", "total"} via parts.make_reward_fn (weight 0: logged only)."""
    funcs = {
        "fmt": lambda completion, gold: parts.format_reward(completion),
        "acc": parts.accuracy_reward,
        "cos_len": lambda completion, gold: parts.cosine_length_reward(completion, gold, cos_max_len),
    }
    return parts.make_reward_fn(dict(REWARD_WEIGHTS if weights is None else weights), funcs)
