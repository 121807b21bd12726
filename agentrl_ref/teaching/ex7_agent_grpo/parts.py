"""Where each plug-in of the capstone comes from, as the page prints it: the student's code or the reference.

    print(describe_parts(MY_PARTS))   # one line per plug-in, with origin()
    print(parts_summary(MY_PARTS))    # one short line beside a training result
"""
from __future__ import annotations

from agentrl_ref.agent.parts import EXERCISE_OF, SFT_PARTS, chosen, default_loss_fn, is_reference, resolve_parts


def origin(obj) -> str:
    """Where a function or class comes from: "你的代码（__main__.name）" or "参考实现（agentrl_ref.module.name）"."""
    module, name = getattr(obj, "__module__", None) or "?", getattr(obj, "__qualname__", None) or repr(obj)
    return f"{'参考实现' if is_reference(obj) else '你的代码'}（{module}.{name}）"


def describe_parts(parts=None) -> str:
    """One line per plug-in the trainer will call, with origin(): what the student sees after filling MY_PARTS."""
    resolved = resolve_parts(parts)
    lines = [f"损失（本题 TODO 1–4）：       {origin(resolved.loss or default_loss_fn())}"]
    if resolved.advantages is None:
        lines.append("advantage（本题 TODO 5–6）：  参考接法："
                     "练习 6 的 group_normalize，再 broadcast_to_tokens（见下）")
    else:
        lines.append(f"advantage（本题 TODO 5–6）：  {origin(resolved.advantages)}")
        for name in ("group_normalize", "broadcast_to_tokens"):
            used = getattr(resolved.advantages, "__globals__", {}).get(name)
            if used is not None:
                lines.append(f"    它调用的 {name}：{origin(used)}")
    for name, exercise in EXERCISE_OF.items():
        lines.append(f"练习 {exercise} {name}：{' ' * max(1, 26 - len(name))}{origin(getattr(resolved, name))}")
    return "\n".join(lines)


def parts_summary(parts=None) -> str:
    """One short line for beside a training result: which of the student's plug-ins ran (or: only references)."""
    given = chosen(parts)
    own = [name for name, part in given.items() if name in EXERCISE_OF and not is_reference(part)]
    loss, advantages = given.get("loss"), given.get("advantages")
    if loss is not None and not is_reference(loss):
        own.insert(0, "损失 " + getattr(loss, "__name__", "?"))
    if advantages is not None and not is_reference(advantages):
        own.insert(1 if own and own[0].startswith("损失") else 0, "advantage " + getattr(advantages, "__name__", "?"))
    return "用到的零件：" + ("你的 " + "、".join(own) + "，其余是参考实现" if own else "全部是参考实现")


def sft_parts_summary(parts=None) -> str:
    """parts_summary() for the SFT, which calls only exercise 3's mask functions: says so when the student's loss,
    advantage wiring or other parts are set (they take part from GRPO on)."""
    given = chosen(parts)
    line = parts_summary({name: part for name, part in given.items() if name in SFT_PARTS})
    later = [name for name, part in given.items()
             if name in EXERCISE_OF and name not in SFT_PARTS and not is_reference(part)]
    if given.get("advantages") is not None and not is_reference(given["advantages"]):
        later.insert(0, "advantage 接法（advantages）")
    if given.get("loss") is not None and not is_reference(given["loss"]):
        later.insert(0, "损失（loss）")
    if later:
        line += f"（SFT 只用练习 3 的两个 mask 函数；你换上的{'、'.join(later)}从 GRPO 起才用到）"
    return line
