"""Random cloze practice ("MLM 代码训练模式"): hide random tokens of a compact snippet, recall them.

One definition serves both front ends, the static site's JavaScript (book/_ext/static/course/cloze.js,
fed at build time with `export()`) and the JupyterLab widget (agentrl_ref.cloze_widget):

- a snippet is real code, read when it is needed from its source: the solution cell(s) of an
  instructor notebook (grader/source/<exercise>/<exercise>.ipynb) or a module of agentrl_ref. It is
  made compact by dropping comments (the `# BLANK` markers with them) and docstrings, nothing else;
- the maskable tokens are what the standard `tokenize` module calls NAME (identifiers and keywords),
  NUMBER and STRING (an f-string counts as one literal); brackets, commas, colons, operators and
  comments are never hidden;
- the blanks for (n maskable tokens, k blanks, seed) come from a partial Fisher-Yates shuffle driven
  by mulberry32, a 32-bit PRNG written identically in Python and JavaScript: same seed, same blanks.
"""
from __future__ import annotations

import ast
import io
import json
import tokenize
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COURSE_SOURCE = ROOT / "grader" / "source"

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
    the chosen source is an error, never a silent fallback.
    """

    key: str
    title: str
    exercise: str
    sources: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def source(self) -> str:
        return self._resolved()[0]

    @property
    def names(self) -> tuple[str, ...]:
        return self._resolved()[1]

    def _resolved(self) -> tuple[str, tuple[str, ...]]:
        for source, names in self.sources:
            kind, _, ref = source.partition(":")
            if kind != "notebook" or (COURSE_SOURCE / ref / f"{ref}.ipynb").is_file():
                return source, tuple(names)
        raise FileNotFoundError(f"cloze snippet {self.key!r}: none of its sources exists")


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
    Snippet("loss_mask", "多轮轨迹 Loss Mask", "ex3_loss_mask", (
        ("notebook:ex3_loss_mask", ("build_loss_mask", "shift_mask_for_clm", "is_trainable")),
        ("module:agentrl_ref.loss_mask", ("build_loss_mask", "shift_mask_for_clm")),
    )),
    Snippet("rollout_buffer", "异步 Rollout Buffer", "ex4_async_rollout", (
        ("notebook:ex4_async_rollout", ("AsyncRolloutBuffer",)),
        ("module:agentrl_ref.rollout_buffer", ("AsyncRolloutBuffer.put", "AsyncRolloutBuffer.get_batch")),
    )),
    Snippet("composite_reward", "Composite Reward 工厂", "ex5_composite_reward", (
        ("notebook:ex5_composite_reward", ("cosine_length_reward", "make_reward_fn")),
        ("module:agentrl_ref.composite_reward", ("cosine_scaled", "make_reward_fn")),
    )),
    Snippet("token_credit", "Trajectory→Token Reward 分配", "ex6_token_credit", (
        ("notebook:ex6_token_credit", ("assign_reward_last_token", "assign_reward_uniform", "assign_reward_kl_weighted")),
        ("module:agentrl_ref.token_credit", ("assign_reward_last_token", "assign_reward_uniform",
                                             "assign_reward_kl_weighted")),
    )),
)


def get_snippet(key: str) -> Snippet:
    for snippet in SNIPPETS:
        if snippet.key == key or snippet.title == key:
            return snippet
    raise KeyError(f"no cloze snippet {key!r}; known: {[s.key for s in SNIPPETS]}")


# ---------------------------------------------------------------- reading the source


def notebook_solution_code(assignment: str, course: Path = COURSE_SOURCE) -> str:
    """The code of every nbgrader solution cell of an instructor notebook, joined by blank lines."""
    path = course / assignment / f"{assignment}.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    parts = []
    for cell in cells:
        grading = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and grading.get("solution"):
            source = cell["source"]
            parts.append("".join(source) if isinstance(source, list) else source)
    if not parts:
        raise ValueError(f"{path} has no solution cell")
    return "\n\n".join(parts)


def source_code(source: str) -> str:
    """The full text behind a Snippet.source."""
    kind, _, ref = source.partition(":")
    if kind == "notebook":
        return notebook_solution_code(ref)
    if kind == "module":
        module = import_module(ref)
        return Path(module.__file__).read_text(encoding="utf-8")
    raise ValueError(f"snippet source must be 'notebook:<assignment>' or 'module:<module>', got {source!r}")


def _defined_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _import_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.Import):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.ImportFrom) and node.module != "__future__":
        return {a.asname or a.name for a in node.names}
    return set()


def _lines(text: str, node: ast.AST) -> list[str]:
    """Whole source lines of node, decorators included."""
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return text.split("\n")[first - 1: node.end_lineno]


def _find(tree: ast.Module, name: str) -> ast.stmt:
    for node in tree.body:
        if name in _defined_names(node):
            return node
    raise KeyError(f"{name!r} is not defined at the top level of the source")


def selected_nodes(snippet: Snippet) -> list[tuple[str, ast.AST]]:
    """(name, AST node in the original source) for every name the snippet shows."""
    tree = ast.parse(source_code(snippet.source))
    out = []
    for name in snippet.names:
        owner, _, member = name.partition(".")
        node = _find(tree, owner)
        if member:
            node = next((n for n in node.body if _defined_names(n) == {member}), None)
            if node is None:
                raise KeyError(f"{name!r} not found in {snippet.source}")
        out.append((name, node))
    return out


def raw_snippet(snippet: Snippet) -> str:
    """The snippet's definitions copied line for line from the source, the imports they use first."""
    text = source_code(snippet.source)
    lines = text.split("\n")
    tree = ast.parse(text)
    blocks: list[list[str]] = []
    class_blocks: dict[str, list[str]] = {}
    for name, node in selected_nodes(snippet):
        owner, _, member = name.partition(".")
        if not member:
            blocks.append(_lines(text, node))
            continue
        if owner not in class_blocks:  # the class header: its lines before the first body statement
            cls = _find(tree, owner)
            first = min([cls.lineno] + [d.lineno for d in cls.decorator_list])
            class_blocks[owner] = lines[first - 1: max(cls.lineno, cls.body[0].lineno - 1)]
            blocks.append(class_blocks[owner])
        else:
            class_blocks[owner].append("")
        class_blocks[owner].extend(_lines(text, node))
    definitions = "\n\n".join("\n".join(block) for block in blocks)
    used = {n.id for n in ast.walk(ast.parse(definitions)) if isinstance(n, ast.Name)}
    imports = [ast.get_source_segment(text, n) for n in tree.body if _import_names(n) & used]
    return "\n".join(imports) + "\n\n" + definitions if imports else definitions


def _docstring_lines(tree: ast.Module) -> set[int]:
    """1-based line numbers of every docstring whose removal leaves a non-empty body."""
    drop: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if (len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                drop.update(range(body[0].lineno, body[0].end_lineno + 1))
    return drop


def compact(code: str) -> str:
    """code without comments and docstrings, trailing spaces, doubled or leading blank lines."""
    lines = code.split("\n")
    drop = _docstring_lines(ast.parse(code))
    in_string: set[int] = set()  # lines inside a multi-line string: never touched
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            in_string.update(range(tok.start[0] + 1, tok.end[0] + 1))
        elif tok.type == tokenize.COMMENT:
            row, col = tok.start
            before = lines[row - 1][:col]
            if before.strip():
                lines[row - 1] = before.rstrip()
            else:
                drop.add(row)
    rows = [(line if row in in_string else line.rstrip(), row in in_string)
            for row, line in enumerate(lines, start=1) if row not in drop]
    out: list[str] = []
    for i, (line, literal) in enumerate(rows):
        if literal or line:
            out.append(line)
            continue
        following = next((text for text, _ in rows[i + 1:] if text), None)
        if following is None or not out or not out[-1] or out[-1].endswith(":"):
            continue  # no leading, trailing or doubled blank line, none right after a block opener
        if following.startswith((" ", "\t")) and not following.lstrip().startswith(("def ", "async def ", "class ", "@")):
            continue  # inside a block, a blank line only before a nested def/class (as the seed's snippets)
        out.append(line)
    return "\n".join(out) + "\n"


@lru_cache(maxsize=None)
def snippet_code(key: str) -> str:
    """The compact code shown for a snippet (read from its source every time the process starts)."""
    return compact(raw_snippet(get_snippet(key)))


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
