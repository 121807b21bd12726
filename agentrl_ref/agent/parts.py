"""The six course parts the trainer is built from, with agentrl_ref's references as defaults.

    parts = resolve_parts({"format_reward": my_format_reward, "AsyncRolloutBuffer": MyBuffer})

A student pastes their own exercise functions in; the names and signatures are the notebooks':
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

# The composite reward of the capstone (ex5's seed weights): 0.1 format + 1.0 accuracy + 0.2 cosine length.
REWARD_WEIGHTS = {"fmt": 0.1, "acc": 1.0, "cos_len": 0.2}
COS_MAX_LEN = 64  # characters of the final answer turn: a well-formed one has 44 (empty think) to 49


@dataclass(frozen=True)
class Parts:
    """One callable (or class) per part; build with resolve_parts()."""

    format_reward: Callable
    accuracy_reward: Callable
    build_loss_mask: Callable
    shift_mask_for_clm: Callable
    AsyncRolloutBuffer: Any
    cosine_length_reward: Callable
    make_reward_fn: Callable
    group_normalize: Callable
    broadcast_to_tokens: Callable
    assign_reward_last_token: Callable


def resolve_parts(overrides: dict[str, Any] | Parts | None = None, **kwargs: Any) -> Parts:
    """Parts with agentrl_ref's references, replaced by overrides (a dict or keywords); ValueError for unknown names."""
    if isinstance(overrides, Parts):
        overrides = {f.name: getattr(overrides, f.name) for f in fields(Parts)}
    chosen = {**(overrides or {}), **kwargs}
    unknown = sorted(set(chosen) - set(EXERCISE_OF))
    if unknown:
        raise ValueError(f"unknown part(s) {unknown}; the parts are {sorted(EXERCISE_OF)}")
    return Parts(**{name: chosen[name] if name in chosen else reference_part(name) for name in EXERCISE_OF})


def reference_part(name: str):
    """agentrl_ref's public `name` (agentrl_ref/__init__.py keeps format_reward the function, not its module)."""
    import agentrl_ref

    return getattr(agentrl_ref, name)


def origin(obj) -> str:
    """Where a function or class comes from: "你的代码（__main__.name）" or "参考实现（agentrl_ref.module.name）"."""
    module, name = getattr(obj, "__module__", None) or "?", getattr(obj, "__qualname__", None) or repr(obj)
    where = "参考实现" if module.split(".")[0] == "agentrl_ref" else "你的代码"
    return f"{where}（{module}.{name}）"


def describe_parts(parts=None, loss_fn=None, advantage_fn=None) -> str:
    """One line per part the trainer will call, with origin(): what the student sees after setting MY_* ."""
    from agentrl_ref.agent.grpo_trainer import default_loss_fn

    resolved = resolve_parts(parts)
    lines = [f"损失（本题 TODO 1–4）：       {origin(loss_fn or default_loss_fn())}"]
    if advantage_fn is None:
        lines.append("advantage（本题 TODO 5–6）：  参考接法："
                     "练习 6 的 group_normalize，再 broadcast_to_tokens（见下）")
    else:
        lines.append(f"advantage（本题 TODO 5–6）：  {origin(advantage_fn)}")
        for name in ("group_normalize", "broadcast_to_tokens"):
            used = getattr(advantage_fn, "__globals__", {}).get(name)
            if used is not None:
                lines.append(f"    它调用的 {name}：{origin(used)}")
    for name, exercise in EXERCISE_OF.items():
        lines.append(f"练习 {exercise} {name}：{' ' * max(1, 26 - len(name))}{origin(getattr(resolved, name))}")
    return "\n".join(lines)


def uses_own_parts(parts=None, loss_fn=None, advantage_fn=None) -> bool:
    """True when any part, the loss or the advantage wiring is not agentrl_ref's."""
    return not parts_summary(parts, loss_fn, advantage_fn).endswith("全部是参考实现")


def sft_parts_summary(parts=None, loss_fn=None, advantage_fn=None) -> str:
    """parts_summary() for the SFT, which calls only exercise 3's mask functions: says so when the student's loss,
    advantage wiring or other parts are set (they take part from GRPO on)."""
    used = {name: part for name, part in (parts or {}).items() if name in SFT_PARTS}
    line = parts_summary(used)
    later = [name for name in (parts or {}) if name not in SFT_PARTS and not origin(parts[name]).startswith("参考")]
    if advantage_fn is not None and not origin(advantage_fn).startswith("参考"):
        later.insert(0, "advantage 接法（MY_ADVANTAGES）")
    if loss_fn is not None and not origin(loss_fn).startswith("参考"):
        later.insert(0, "损失（MY_LOSS）")
    if later:
        line += f"（SFT 只用练习 3 的两个 mask 函数；你换上的{'、'.join(later)}从 GRPO 起才用到）"
    return line


SFT_PARTS = ("build_loss_mask", "shift_mask_for_clm")  # what sft_trainer calls; the rest enters with GRPO


def parts_summary(parts=None, loss_fn=None, advantage_fn=None) -> str:
    """One short line for beside a training result: which of the student's parts ran (or: only references)."""
    own = [name for name in (parts or {}) if not origin((parts or {})[name]).startswith("参考")]
    if loss_fn is not None and not origin(loss_fn).startswith("参考"):
        own.insert(0, "损失 " + getattr(loss_fn, "__name__", "?"))
    if advantage_fn is not None and not origin(advantage_fn).startswith("参考"):
        own.insert(1 if own and own[0].startswith("损失") else 0, "advantage " + getattr(advantage_fn, "__name__", "?"))
    return "用到的零件：" + ("你的 " + "、".join(own) + "，其余是参考实现" if own else "全部是参考实现")


def build_reward_fn(parts: Parts, weights: dict[str, float] | None = None, cos_max_len: int = COS_MAX_LEN):
    """R(answer_text, gold) -> {"fmt", "acc", "cos_len", "total"} via parts.make_reward_fn (weight 0: logged only)."""
    funcs = {
        "fmt": lambda completion, gold: parts.format_reward(completion),
        "acc": parts.accuracy_reward,
        "cos_len": lambda completion, gold: parts.cosine_length_reward(completion, gold, cos_max_len),
    }
    return parts.make_reward_fn(dict(REWARD_WEIGHTS if weights is None else weights), funcs)
