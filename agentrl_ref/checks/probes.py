"""Probes: a test cell records what the student's code returned; trusted code outside the kernel judges it.

At grading time the student's kernel is hostile: it can patch anything in its own process, so a test
cell that asserts in the kernel can be made to "pass". A graded test cell therefore also records raw
outputs, and the grader compares them, outside the kernel, with the outputs the reference notebook
recorded for the same cell (grader/grade/verdict.py). The expected values never enter the kernel.

Records are written only while grading (AGENTRL_GRADING=1 in the kernel's environment, set by the
grader); elsewhere the probe functions compute their outcomes and write nothing.

    probe("name", value)             record one value (encoded below) as an output of this cell
    probe_calls("name", fn, inputs)  record fn's outcome on every input (an input is an args tuple
                                     or a single argument): {"ok": value} or {"raised": "ValueError"}
    await probe_async("name", coro)  record an awaited outcome; a hang becomes {"stuck": turns} (a budget of
                                     event-loop turns, not of seconds: see finish_within)
    spin, cancel_all, task_state     for tests of async code: let other tasks run, clean up, and what a
                                     task came to ("waiting", "cancelled", "raised <Error>" or its result)

Encoding (plain JSON, nothing the student's classes can fake through __eq__): None, bool, int, float
(NaN and infinities as {"float": "nan"|"inf"|"-inf"}), str; lists and tuples as lists; dicts with str
keys; Fraction as {"fraction": [numerator, denominator]}; a torch tensor as
{"tensor": nested lists, "dtype": "float32", "shape": [...]}; a numpy array likewise ("ndarray");
numpy scalars as the Python number they hold. Subclasses of the basic types are reduced to the base
value (a float subclass whose == is always True is just its float). Anything else is
{"unsupported": "module.Class"}, which never matches an expected value.
"""
from __future__ import annotations

import asyncio
import math
from fractions import Fraction
from typing import Any, Callable, Iterable

MIME = "application/vnd.agentrl.probe+json"
MAX_ITEMS = 100_000  # a longer list or string is recorded as too large (a probe stays small)


def _number(value: Any) -> Any:
    if isinstance(value, bool):
        return bool.__bool__(value) if type(value) is bool else bool(int.__int__(value))
    if isinstance(value, int):
        return int.__int__(value)
    value = float.__float__(value)
    if math.isnan(value):
        return {"float": "nan"}
    if math.isinf(value):
        return {"float": "inf" if value > 0 else "-inf"}
    return value


def encode(value: Any, depth: int = 0) -> Any:
    """value as plain JSON data (see the module docstring)."""
    if depth > 20:
        return {"unsupported": "nesting deeper than 20"}
    if value is None or isinstance(value, (bool, int, float)):
        return value if value is None else _number(value)
    if isinstance(value, str):
        text = str.__str__(value)
        return text if len(text) <= MAX_ITEMS else {"unsupported": f"str of {len(text)} characters"}
    if isinstance(value, Fraction):
        return {"fraction": [int(value.numerator), int(value.denominator)]}
    if isinstance(value, (list, tuple)):
        items = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
        items = list(items)
        if len(items) > MAX_ITEMS:
            return {"unsupported": f"sequence of {len(items)} items"}
        return [encode(item, depth + 1) for item in items]
    if isinstance(value, dict):
        pairs = list(dict.items(value))
        if not all(isinstance(k, str) for k, _ in pairs):
            return {"unsupported": "dict with non-str keys"}
        return {"dict": {str.__str__(k): encode(v, depth + 1) for k, v in pairs}}
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    if kind.startswith("torch.") and hasattr(value, "detach"):
        import torch

        if isinstance(value, torch.Tensor):
            tensor = torch.Tensor.detach(value).cpu()
            if tensor.numel() > MAX_ITEMS:
                return {"unsupported": f"tensor of {tensor.numel()} elements"}
            return {"tensor": _nested(tensor.tolist() if tensor.dim() else tensor.item()),
                    "dtype": str(tensor.dtype).replace("torch.", ""), "shape": list(tensor.shape)}
    if kind.startswith("numpy."):
        import numpy as np

        if isinstance(value, np.ndarray):
            if value.size > MAX_ITEMS:
                return {"unsupported": f"ndarray of {value.size} elements"}
            return {"ndarray": _nested(value.tolist()), "dtype": str(value.dtype), "shape": list(value.shape)}
        if isinstance(value, np.generic):
            return encode(value.item(), depth + 1)
    return {"unsupported": kind}


def _nested(data: Any) -> Any:
    """Numbers inside tensor.tolist() / ndarray.tolist() (plain Python already), NaN/inf encoded."""
    if isinstance(data, list):
        return [_nested(x) for x in data]
    return encode(data)


GRADING_ENV = "AGENTRL_GRADING"  # set to "1" by the grader in the sandboxed kernel's environment


def grading() -> bool:
    """True in the grader's kernel: only there do probes write records (a student running a test cell
    in JupyterLab sees no extra output)."""
    import os

    return os.environ.get(GRADING_ENV) == "1"


def _emit(name: str, data: Any) -> None:
    if not grading():
        return
    from IPython.display import display

    display({MIME: {"name": str(name), "value": data}, "text/plain": f"[评分记录 {name}]"}, raw=True)


def probe(name: str, value: Any) -> None:
    """Record value (encoded) under name as an output of the running cell."""
    _emit(name, encode(value))


def outcome(fn: Callable, *args: Any, **kwargs: Any) -> dict:
    """{"ok": encoded return value} or {"raised": exception class name} (Exceptions only)."""
    try:
        return {"ok": encode(fn(*args, **kwargs))}
    except Exception as exc:  # noqa: BLE001 - any exception is an outcome to compare
        return {"raised": type(exc).__name__}


def probe_calls(name: str, fn: Callable, inputs: Iterable[Any]) -> None:
    """Record fn's outcome on each input; a tuple input is the argument list, anything else one argument."""
    _emit(name, [outcome(fn, *(x if isinstance(x, tuple) else (x,))) for x in inputs])


TURNS = 20_000  # event-loop turns a scenario may take before it counts as stuck


async def finish_within(awaitable, turns: int = TURNS) -> asyncio.Future | None:
    """Run awaitable as a task and let the event loop turn (asyncio.sleep(0)) until it is done, at most
    `turns` times: the finished task, or None (and the task cancelled) if it is stuck.

    A budget of loop turns, not of seconds: a deadlock is found in a fraction of a second and a correct
    scenario never runs out of turns because the machine is busy. Scenarios therefore wait with
    asyncio.sleep(0), never with real sleeps."""
    task = asyncio.ensure_future(awaitable)
    for _ in range(turns):
        if task.done():
            return task
        await asyncio.sleep(0)
    if task.done():
        return task
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return None


async def outcome_async(awaitable, turns: int = TURNS) -> dict:
    """outcome() of an awaitable; {"stuck": turns} if it is not done after that many event-loop turns."""
    task = await finish_within(awaitable, turns)
    if task is None:
        return {"stuck": turns}
    if task.cancelled():
        return {"raised": "CancelledError"}
    if task.exception() is not None:
        return {"raised": type(task.exception()).__name__}
    return {"ok": encode(task.result())}


async def probe_async(name: str, awaitable, turns: int = TURNS) -> None:
    """Record an awaited outcome (see outcome_async)."""
    _emit(name, await outcome_async(awaitable, turns))


# helpers for tests of async code (visible and hidden test cells): what a task came to, recordable -------

async def spin(turns: int = 20) -> None:
    """Let every other task run for a few turns of the event loop."""
    for _ in range(turns):
        await asyncio.sleep(0)


async def cancel_all(*tasks: asyncio.Future) -> None:
    """Cancel the tasks and wait until they are gone (whatever they raised)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def task_state(task: asyncio.Future):
    """What a task came to, as a recordable value: "waiting", "cancelled", "raised <Error>" or its result."""
    if not task.done():
        return "waiting"
    if task.cancelled():
        return "cancelled"
    if task.exception() is not None:
        return "raised " + type(task.exception()).__name__
    return task.result()
