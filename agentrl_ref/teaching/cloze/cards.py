"""Random cloze practice ("MLM 代码训练模式"): hide random tokens of a compact snippet, recall them.

One definition serves both front ends, the static site's JavaScript (book/_ext/static/course/cloze.js,
fed at build time with `export()`) and the JupyterLab widget (agentrl_ref.teaching.cloze.widget):

- a snippet is real code: the solution cell(s) of an instructor notebook or a module of agentrl_ref,
  made compact by dropping comments (the `# BLANK` markers with them) and docstrings, nothing else.
  `make release` cuts it from its source (grader/publish/cloze_snippets.py) into cloze_snippets.json next to
  this file, so the package reads nothing outside itself;
- the maskable tokens are what the standard `tokenize` module calls NAME (identifiers and keywords),
  NUMBER and STRING (an f-string counts as one literal); brackets, commas, colons, operators and
  comments are never hidden;
- the blanks for (n maskable tokens, k blanks, seed) come from a partial Fisher-Yates shuffle driven
  by mulberry32, a 32-bit PRNG written identically in Python and JavaScript: same seed, same blanks.
"""
from __future__ import annotations

import io
import json
import tokenize
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).with_name("cloze_snippets.json")  # written by `make release`

_MASKABLE = {tokenize.NAME, tokenize.NUMBER, tokenize.STRING}
# Python 3.12+ splits an f-string into FSTRING_START ... FSTRING_END; we keep it one literal.
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)

# Difficulty levels: (label, percent of the maskable tokens hidden). k is computed here once and
# exported, so both front ends hide the same number of tokens.
LEVELS: tuple[tuple[str, int], ...] = (("入门", 15), ("进阶", 35), ("挑战", 60), ("全部", 100))
DEFAULT_LEVEL = "进阶"


@dataclass(frozen=True)
class Snippet:
    """One practice snippet.

    sources: candidates in order of preference, each (source, names):
      source "notebook:<assignment>" (its nbgrader solution cells) or "module:<dotted.module>";
      names  the top-level definitions to show, in this order ("Class.method" picks one method);
             the imports they use are added in front automatically.
    The first candidate whose notebook exists is used (a module always exists). A name missing from
    the chosen source is an error, never a silent fallback. The cutting happens at build time
    (grader/publish/cloze_snippets.py); `source` and `names` say which candidate it used.
    """

    key: str
    title: str
    exercise: str
    sources: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def source(self) -> str:
        return _entry(self.key)["source"]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(_entry(self.key)["names"])


# The seed page's six snippets are the exercises' answers: an exercise's answer (the solution cells of
# its instructor notebook) is used as soon as the notebook exists; until then the reference
# implementation in agentrl_ref is. Changing a source is one line.
SNIPPETS: tuple[Snippet, ...] = (
    Snippet("format_reward", "格式奖励", "ex1_format_reward", (
        ("notebook:ex1_format_reward", ("NO_TAG", "format_reward")),
    )),
    Snippet("verifiable_reward", "可验证奖励", "ex2_verifiable_reward", (
        ("notebook:ex2_verifiable_reward", ("extract_boxed_answer", "normalize_to_fraction", "accuracy_reward")),
        ("module:agentrl_ref.verifiable_reward", ("_BOX_OPEN", "extract_boxed_answer", "accuracy_reward")),
    )),
    Snippet("loss_mask", "多轮轨迹的 loss mask", "ex3_loss_mask", (
        ("notebook:ex3_loss_mask", ("build_loss_mask", "shift_mask_for_clm", "is_trainable")),
        ("module:agentrl_ref.loss_mask", ("build_loss_mask", "shift_mask_for_clm")),
    )),
    Snippet("rollout_buffer", "异步 rollout 缓冲区", "ex4_async_rollout", (
        ("notebook:ex4_async_rollout", ("AsyncRolloutBuffer",)),
        ("module:agentrl_ref.rollout_buffer", ("AsyncRolloutBuffer.put", "AsyncRolloutBuffer.get_batch")),
    )),
    Snippet("composite_reward", "组合奖励工厂", "ex5_composite_reward", (
        ("notebook:ex5_composite_reward", ("cosine_length_reward", "make_reward_fn")),
        ("module:agentrl_ref.composite_reward", ("cosine_scaled", "make_reward_fn")),
    )),
    Snippet("token_credit", "把轨迹奖励分到 token 上", "ex6_token_credit", (
        ("notebook:ex6_token_credit", ("assign_reward_last_token", "assign_reward_uniform",
                                       "assign_reward_kl_weighted")),
        ("module:agentrl_ref.token_credit", ("assign_reward_last_token", "assign_reward_uniform",
                                             "assign_reward_kl_weighted")),
    )),
    Snippet("clipped_pg_loss", "GRPO 的裁剪损失", "ex7_agent_grpo", (
        ("notebook:ex7_agent_grpo", ("clipped_pg_loss", "token_advantages")),
        ("module:agentrl_ref.agent.loss", ("clipped_pg_loss",)),
    )),
    Snippet("token_in_out", "Token in, token out：多轮轨迹", "ex8_token_in_out", (
        ("notebook:ex8_token_in_out", ("message_ids", "build_trajectory", "first_drift")),
        ("module:agentrl_ref.token_in_out", ("message_ids", "build_trajectory", "first_drift")),
    )),
    Snippet("rollout_correction", "TIS 和 MIS：训练–推理差距的修正", "ex9_rollout_correction", (
        ("notebook:ex9_rollout_correction", ("log_importance_weights", "truncated_weights", "masked_weights",
                                             "mismatch_report")),
        ("module:agentrl_ref.rollout_correction", ("log_importance_weights", "truncated_weights", "masked_weights",
                                                   "mismatch_report")),
    )),
    Snippet("partial_rollout", "可中断的生成：一条轨迹，几个版本", "ex10_partial_rollout", (
        ("notebook:ex10_partial_rollout", ("PartialTrajectory", "token_staleness", "oldest_staleness", "admit")),
        ("module:agentrl_ref.partial_rollout", ("PartialTrajectory", "token_staleness", "oldest_staleness", "admit")),
    )),
    Snippet("dapo_sampling", "DAPO 的动态采样和 clip-higher", "ex11_dapo_sampling", (
        ("notebook:ex11_dapo_sampling", ("informative_groups", "fill_batch", "clip_higher_loss",
                                         "mean_token_entropy")),
        ("module:agentrl_ref.dapo_sampling", ("informative_groups", "fill_batch", "clip_higher_loss",
                                              "mean_token_entropy")),
    )),
)


def get_snippet(key: str) -> Snippet:
    for snippet in SNIPPETS:
        if snippet.key == key or snippet.title == key:
            return snippet
    raise KeyError(f"no cloze snippet {key!r}; known: {[s.key for s in SNIPPETS]}")


@lru_cache(maxsize=None)
def _built() -> dict[str, dict]:
    """The snippets as `make release` cut them from their sources (grader/publish/cloze_snippets.py)."""
    return json.loads(DATA.read_text(encoding="utf-8"))


def _entry(key: str) -> dict:
    try:
        return _built()[key]
    except KeyError:
        raise KeyError(f"cloze snippet {key!r} is not in {DATA.name}: run `make release`") from None


def snippet_code(key: str) -> str:
    """The compact code shown for a snippet."""
    return _entry(get_snippet(key).key)["code"]


# ---------------------------------------------------------------- maskable tokens


@dataclass(frozen=True)
class Token:
    text: str
    start: int  # character offsets into the code
    end: int


def maskable_tokens(code: str) -> list[Token]:
    """Identifiers, keywords and literals of code, in order (tokenize's NAME, NUMBER, STRING)."""
    starts = [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(pos: tuple[int, int]) -> int:
        return starts[pos[0] - 1] + pos[1]

    tokens: list[Token] = []
    depth, fstring_start = 0, 0
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if _FSTRING_START is not None and tok.type == _FSTRING_START:
            if depth == 0:
                fstring_start = offset(tok.start)
            depth += 1
        elif _FSTRING_END is not None and tok.type == _FSTRING_END:
            depth -= 1
            if depth == 0:
                end = offset(tok.end)
                tokens.append(Token(code[fstring_start:end], fstring_start, end))
        elif depth == 0 and tok.type in _MASKABLE:
            start, end = offset(tok.start), offset(tok.end)
            tokens.append(Token(code[start:end], start, end))
    return tokens


def pieces(code: str) -> list[str]:
    """[gap, token, gap, token, ..., gap]: odd positions are the maskable tokens; "".join() == code."""
    out, pos = [], 0
    for tok in maskable_tokens(code):
        out += [code[pos:tok.start], tok.text]
        pos = tok.end
    out.append(code[pos:])
    return out


# ---------------------------------------------------------------- seeded choice (mirrored in cloze.js)

_M32 = 0xFFFFFFFF


def _imul(a: int, b: int) -> int:
    return (a * b) & _M32


def mulberry32(seed: int):
    """Infinite iterator of floats in [0, 1): mulberry32, bit for bit as the JavaScript version."""
    a = seed & _M32
    while True:
        a = (a + 0x6D2B79F5) & _M32
        t = _imul(a ^ (a >> 15), 1 | a)
        t = ((t + _imul(t ^ (t >> 7), 61 | t)) & _M32) ^ t
        yield ((t ^ (t >> 14)) & _M32) / 4294967296


def choose_blanks(n: int, k: int, seed: int) -> list[int]:
    """k distinct indices in range(n), sorted: the first k of a Fisher-Yates shuffle driven by mulberry32(seed)."""
    if not (0 <= k <= n):
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    rand = mulberry32(seed)
    order = list(range(n))
    for i in range(k):
        j = i + int(next(rand) * (n - i))
        order[i], order[j] = order[j], order[i]
    return sorted(order[:k])


def next_seed(seed: int) -> int:
    """The seed 刷新 moves to: the first 32-bit output of mulberry32(seed)."""
    return int(next(mulberry32(seed)) * 4294967296)


def refresh_seed(n: int, k: int, seed: int) -> int:
    """The next seed whose blanks differ from seed's (the same seed if no other choice exists)."""
    current, candidate = choose_blanks(n, k, seed), seed
    for _ in range(64):
        candidate = next_seed(candidate)
        if 0 < k < n and choose_blanks(n, k, candidate) == current:
            continue
        return candidate
    return candidate


def blank_count(n: int, percent: int) -> int:
    """How many of n tokens a level hides: percent of n rounded half up, at least 1 (0 if n is 0)."""
    return 0 if n == 0 else max(1, (n * percent + 50) // 100)


def levels(n: int) -> list[dict]:
    return [{"name": name, "percent": p, "k": blank_count(n, p)} for name, p in LEVELS]


def cloze_text(code: str, blanks: list[int], blank: str = "_____") -> str:
    """code with the chosen maskable tokens replaced by `blank`."""
    parts = pieces(code)
    for i in blanks:
        parts[2 * i + 1] = blank
    return "".join(parts)


# ---------------------------------------------------------------- export for the static site


def export_snippet(snippet: Snippet) -> dict:
    code = snippet_code(snippet.key)
    parts = pieces(code)
    n = len(parts) // 2
    return {
        "key": snippet.key,
        "title": snippet.title,
        "exercise": snippet.exercise,
        "source": snippet.source,
        "names": list(snippet.names),
        "pieces": parts,
        "n": n,
        "levels": levels(n),
        "defaultLevel": DEFAULT_LEVEL,
    }


def export() -> dict:
    """Everything cloze.js needs, as JSON-ready data."""
    return {"snippets": [export_snippet(s) for s in SNIPPETS]}
