"""The toy task: multiply two two-digit numbers; a calculator tool gets it right, a 70k-parameter model cannot.

A problem is `a*b` with a and b in [32, 99], so every product has four digits; its gold answer is the
product as a string. make_task(seed) fixes the held-out test problems; training problems are drawn
from the rest. (With products of three or four digits, a 2-layer model trained for a few seconds
copies the four-digit ones well and the three-digit ones badly: it learns one fixed distance between
the tool's result and its answer. One length keeps the capstone about RL, not about copying.)
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

_EXPR = re.compile(r"([0-9]{1,6})([+*])([0-9]{1,6})")


@dataclass(frozen=True)
class Problem:
    """One question `a op b`; .expr is its text, .answer the gold string."""

    a: int
    op: str
    b: int

    @property
    def expr(self) -> str:
        return f"{self.a}{self.op}{self.b}"

    @property
    def answer(self) -> str:
        return calculator(self.expr)


def calculator(expr: str) -> str:
    """The tool: 'a+b' or 'a*b' (non-negative integers of up to 6 digits) -> the exact result; '' for anything else."""
    m = _EXPR.fullmatch(expr)
    if m is None:
        return ""
    a, op, b = int(m[1]), m[2], int(m[3])
    return str(a + b if op == "+" else a * b)


@dataclass(frozen=True)
class Task:
    """The problem distribution and the held-out problems (never drawn by sample())."""

    seed: int
    ops: str
    a_range: tuple[int, int]
    b_range: tuple[int, int]
    test: tuple[Problem, ...]

    def draw(self, rng: random.Random) -> Problem:
        """One problem from the full distribution (may be a test problem)."""
        return Problem(rng.randint(*self.a_range), rng.choice(self.ops), rng.randint(*self.b_range))

    def sample(self, rng: random.Random, n: int) -> list[Problem]:
        """n training problems: drawn with rng, skipping the held-out ones."""
        held_out = self._held_out
        out = []
        while len(out) < n:
            p = self.draw(rng)
            if p not in held_out:
                out.append(p)
        return out

    @property
    def _held_out(self) -> frozenset[Problem]:
        cached = self.__dict__.get("_held_out_set")
        if cached is None:
            cached = frozenset(self.test)
            object.__setattr__(self, "_held_out_set", cached)
        return cached


def make_task(seed: int = 0, n_test: int = 512, ops: str = "*",
              a_range: tuple[int, int] = (32, 99), b_range: tuple[int, int] = (32, 99)) -> Task:
    """The task with n_test distinct held-out problems drawn with random.Random(seed)."""
    if not ops or set(ops) - {"+", "*"}:
        raise ValueError(f"ops must be a non-empty string of '+' and '*', got {ops!r}")
    rng = random.Random(f"capstone-test-{seed}")
    task = Task(seed, ops, a_range, b_range, ())
    test: dict[Problem, None] = {}
    while len(test) < n_test:
        test[task.draw(rng)] = None
    return Task(seed, ops, a_range, b_range, tuple(test))
