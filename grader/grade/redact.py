"""No string of a hidden test reaches a student, by any route.

A failing visible test quotes the value the student's function returned (its inputs are public). But a
function can remember the hidden inputs it was called with in an earlier cell and return them here, so
a quoted value may carry them out. Every quote of a student's value is checked against the strings of the
assignment's hidden tests first: if it holds one of them, or any WINDOW characters in a row of one (raw,
or as repr() escapes them), the value is not quoted, only its kind. Hidden strings shorter than
MIN_LENGTH ("7", "a") are ordinary text and not looked for. An encoding the student invents (base64,
reversed text) is not recognised: book/guide_instructors.md says so.

    redactor = Redactor(hidden_strings(source_notebook))
    redactor.leaks(text)     # True: text holds something of a hidden test
"""
from __future__ import annotations

import ast

from grader.cells import is_test

BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
MIN_LENGTH = 4
WINDOW = 8


def hidden_code(source: str) -> str:
    """The lines of a test cell between BEGIN and END HIDDEN TESTS."""
    lines, inside = [], False
    for line in source.split("\n"):
        if BEGIN in line:
            inside = True
        elif END in line:
            inside = False
        elif inside:
            lines.append(line)
    return "\n".join(lines)


RECORDERS = ("probe", "probe_calls", "run_test")   # their first argument names a record: not test data


def hidden_strings(notebook) -> list[str]:
    """Every string constant of the notebook's hidden tests that is long enough to recognise, but for the
    names of the records they write (the first argument of probe() and probe_calls(): feedback names a
    hidden record only by its position)."""
    found = set()
    for cell in notebook.cells:
        if cell.get("cell_type") != "code" or not is_test(cell):
            continue
        code = hidden_code(cell.source)
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        names = {id(node.args[0]) for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
                 and getattr(node.func, "id", getattr(node.func, "attr", None)) in RECORDERS}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) >= MIN_LENGTH \
                    and id(node) not in names:
                found.add(node.value)
    return sorted(found)


class Redactor:
    def __init__(self, strings=()):
        forms = {form for s in strings for form in (s, repr(s)[1:-1]) if len(form) >= MIN_LENGTH}
        self.short = {f for f in forms if len(f) < WINDOW}
        self.windows = {f[i:i + WINDOW] for f in forms if len(f) >= WINDOW for i in range(len(f) - WINDOW + 1)}

    def leaks(self, text: str) -> bool:
        if any(s in text for s in self.short):
            return True
        return any(text[i:i + WINDOW] in self.windows for i in range(len(text) - WINDOW + 1))


NOTHING = Redactor()
