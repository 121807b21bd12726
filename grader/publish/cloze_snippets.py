"""Build time: the cloze snippets of agentrl_ref.teaching.cloze.cards, cut from their sources.

A snippet shows real code: the solution cells of an instructor notebook (grader/source/<a>/<a>.ipynb)
or a module of agentrl_ref, made compact by dropping comments (the `# BLANK` markers with them) and
docstrings, nothing else. `make release` writes the result into the package
(agentrl_ref/teaching/cloze/cloze_snippets.json), so the installed package never reads grader/ at run
time; tests/test_release.py fails when that file drifts from the sources.
"""
from __future__ import annotations

import ast
import io
import json
import tokenize
from importlib import import_module
from pathlib import Path

from agentrl_ref.teaching.cloze.cards import SNIPPETS, Snippet
from grader.course import GRADER

COURSE_SOURCE = GRADER / "source"


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


def source_code(source: str, course: Path = COURSE_SOURCE) -> str:
    """The full text behind a snippet source ("notebook:<assignment>" or "module:<dotted.module>")."""
    kind, _, ref = source.partition(":")
    if kind == "notebook":
        return notebook_solution_code(ref, course)
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


def resolve(snippet: Snippet, course: Path = COURSE_SOURCE) -> tuple[str, tuple[str, ...]]:
    """(source, names) of the first candidate of snippet.sources that exists (a module always does)."""
    for source, names in snippet.sources:
        kind, _, ref = source.partition(":")
        if kind != "notebook" or (course / ref / f"{ref}.ipynb").is_file():
            return source, tuple(names)
    raise FileNotFoundError(f"cloze snippet {snippet.key!r}: none of its sources exists")


def selected_nodes(snippet: Snippet, course: Path = COURSE_SOURCE) -> list[tuple[str, ast.AST]]:
    """(name, AST node in the original source) for every name the snippet shows."""
    source, names = resolve(snippet, course)
    tree = ast.parse(source_code(source, course))
    out = []
    for name in names:
        owner, _, member = name.partition(".")
        node = _find(tree, owner)
        if member:
            node = next((n for n in node.body if _defined_names(n) == {member}), None)
            if node is None:
                raise KeyError(f"{name!r} not found in {source}")
        out.append((name, node))
    return out


def raw_snippet(snippet: Snippet, course: Path = COURSE_SOURCE) -> str:
    """The snippet's definitions copied line for line from the source, the imports they use first."""
    text = source_code(resolve(snippet, course)[0], course)
    lines = text.split("\n")
    tree = ast.parse(text)
    blocks: list[list[str]] = []
    class_blocks: dict[str, list[str]] = {}
    for name, node in selected_nodes(snippet, course):
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
        nested_def = following.lstrip().startswith(("def ", "async def ", "class ", "@"))
        if following.startswith((" ", "\t")) and not nested_def:
            continue  # inside a block, a blank line only before a nested def/class (as the seed's snippets)
        out.append(line)
    return "\n".join(out) + "\n"


def build(course: Path = COURSE_SOURCE) -> dict[str, dict]:
    """key -> {"source", "names", "code"} for every snippet: what the package ships."""
    out = {}
    for snippet in SNIPPETS:
        source, names = resolve(snippet, course)
        out[snippet.key] = {"source": source, "names": list(names), "code": compact(raw_snippet(snippet, course))}
    return out


def render_json(course: Path = COURSE_SOURCE) -> str:
    return json.dumps(build(course), ensure_ascii=False, indent=1, sort_keys=True) + "\n"
