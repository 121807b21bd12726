"""MLM cloze practice, Python side: what is maskable, the seeded choice, snippets that match their source."""
from __future__ import annotations

import ast
import io
import json
import tokenize

import pytest

from grader.publish import cloze_snippets as build  # grader/: cuts the snippets from their sources at `make release`
from agentrl_ref.teaching.cloze import cards as cloze
from course import reference_fills

KEYS = [s.key for s in cloze.SNIPPETS]

# The seed page's compact format_reward snippet; the page says "共 22 个可挖空位".
SEED_FORMAT_SNIPPET = '''import re

def format_reward(completion: str) -> float:
    pattern = r"^\\s*<think>.*?</think>\\s*<answer>.*?</answer>\\s*$"
    match = re.match(pattern, completion, re.DOTALL)
    return 1.0 if match else 0.0
'''


def test_seed_page_count_is_reproduced():
    assert len(cloze.maskable_tokens(SEED_FORMAT_SNIPPET)) == 22


def test_maskable_tokens_are_names_keywords_and_literals_only():
    code = 'def f(x, y=2):  # note\n    return {"a": x[0] if x else None, **y}\n'
    texts = [t.text for t in cloze.maskable_tokens(code)]
    assert texts == ["def", "f", "x", "y", "2", "return", '"a"', "x", "0", "if", "x", "else", "None", "y"]
    for tok in cloze.maskable_tokens(code):
        assert code[tok.start:tok.end] == tok.text


def test_an_f_string_is_one_literal():
    code = 'name = "x"\ns = rf"a{name}b\\s"\n'
    assert [t.text for t in cloze.maskable_tokens(code)] == ["name", '"x"', "s", 'rf"a{name}b\\s"']


def test_pieces_round_trip():
    for key in KEYS:
        code = cloze.snippet_code(key)
        parts = cloze.pieces(code)
        assert "".join(parts) == code
        assert len(parts) == 2 * len(cloze.maskable_tokens(code)) + 1
        assert all(p.strip() == p and p for p in parts[1::2])


def test_mulberry32_reference_values():
    # the first outputs for seed 1, as computed by the JavaScript version (tests/test_cloze_browser.py
    # compares the two implementations in Chromium for many seeds)
    rand = cloze.mulberry32(1)
    assert [next(rand) for _ in range(3)] == [0.6270739405881613, 0.002735721180215478, 0.5274470399599522]


@pytest.mark.parametrize("n,k", [(0, 0), (1, 1), (5, 0), (24, 8), (24, 24), (123, 43)])
def test_choose_blanks_is_deterministic_and_valid(n, k):
    for seed in (0, 1, 42, 2**32 - 1):
        blanks = cloze.choose_blanks(n, k, seed)
        assert blanks == cloze.choose_blanks(n, k, seed)
        assert blanks == sorted(set(blanks)) and len(blanks) == k
        assert all(0 <= i < n for i in blanks)


def test_different_seeds_give_different_blanks():
    sets = {tuple(cloze.choose_blanks(60, 10, seed)) for seed in range(50)}
    assert len(sets) == 50


def test_choose_blanks_rejects_bad_k():
    with pytest.raises(ValueError):
        cloze.choose_blanks(3, 4, 0)


def test_refresh_always_changes_the_blank_set():
    for seed in range(200):
        n, k = 6, 5  # only 6 possible sets: collisions happen, refresh must skip them
        new = cloze.refresh_seed(n, k, seed)
        assert cloze.choose_blanks(n, k, new) != cloze.choose_blanks(n, k, seed)


def test_levels_are_increasing_and_reach_every_token():
    for key in KEYS:
        n = len(cloze.maskable_tokens(cloze.snippet_code(key)))
        ks = [lv["k"] for lv in cloze.levels(n)]
        assert ks == sorted(ks) and ks[0] >= 1 and ks[-1] == n
        assert cloze.DEFAULT_LEVEL in [lv["name"] for lv in cloze.levels(n)]


def test_cloze_text_hides_exactly_the_chosen_tokens():
    code = cloze.snippet_code("format_reward")
    blanks = cloze.choose_blanks(len(cloze.maskable_tokens(code)), 5, 9)
    text = cloze.cloze_text(code, blanks)
    assert text.count("_____") == 5


# ---------------------------------------------------------------- snippets match their source


def _strip_docstrings(node: ast.AST) -> ast.AST:
    for sub in ast.walk(node):
        body = getattr(sub, "body", None)
        if (isinstance(body, list) and len(body) > 1 and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            sub.body = body[1:]
    return node


def _shown_nodes(snippet: cloze.Snippet) -> dict[str, ast.AST]:
    tree = ast.parse(cloze.snippet_code(snippet.key))
    shown = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                shown[f"{node.name}.{member.name}"] = member
        names = build._defined_names(node)
        for name in names:
            shown[name] = node
    return shown


@pytest.mark.parametrize("key", KEYS)
def test_snippet_is_its_source_without_comments_and_docstrings(key):
    """Every definition shown is, statement for statement, the one in its source today."""
    snippet = cloze.get_snippet(key)
    shown = _shown_nodes(snippet)
    for name, original in build.selected_nodes(snippet):  # from the source today, not from the package
        assert name in shown, f"{name} missing from the {key} snippet"
        assert ast.dump(shown[name]) == ast.dump(_strip_docstrings(original)), f"{key}: {name} differs from its source"
    code = cloze.snippet_code(key)
    comments = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.COMMENT]
    assert not comments, f"{key}: comments (and # BLANK markers) must be stripped"


@pytest.mark.parametrize("key", KEYS)
def test_snippet_imports_what_it_uses(key):
    code = cloze.snippet_code(key)
    tree = ast.parse(code)
    imported = set().union(*(build._import_names(n) for n in tree.body)) if tree.body else set()
    source_imports = set().union(*(build._import_names(n) for n in ast.parse(
        build.source_code(cloze.get_snippet(key).source)).body))
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert used & source_imports <= imported


def test_notebook_snippets_are_the_exercise_answers():
    """A snippet taken from a notebook shows that exercise's answer: every blank's fill is in it."""
    notebook_snippets = [s for s in cloze.SNIPPETS if s.source.startswith("notebook:")]
    assert notebook_snippets, "exercise 1's answer is a notebook snippet"
    for snippet in notebook_snippets:
        code = cloze.snippet_code(snippet.key)
        fills = reference_fills(snippet.source.partition(":")[2])
        assert fills
        for fill in fills:
            assert fill in code, f"{snippet.key}: answer {fill!r} is not in the snippet"


def test_format_reward_snippet_runs_like_the_reference():
    from agentrl_ref import format_reward

    namespace: dict = {}
    exec(compile(cloze.snippet_code("format_reward"), "<cloze>", "exec"), namespace)
    for text in ["<think>a</think><answer>1</answer>", " <think>\nx\n</think>\n<answer>y</answer>\n",
                 "<think>a</think><answer>1</answer><think>b</think><answer>2</answer>", "no tags", ""]:
        assert namespace["format_reward"](text) == format_reward(text), text


def test_every_snippet_source_resolves_and_is_listed_once():
    assert len(set(KEYS)) == len(KEYS) == 11
    assert len({s.title for s in cloze.SNIPPETS}) == 11
    for snippet in cloze.SNIPPETS:
        assert snippet.source.split(":")[0] in {"notebook", "module"}
        assert cloze.snippet_code(snippet.key).strip()


def test_a_source_is_one_config_line_and_notebooks_win_once_they_exist():
    """A snippet names a notebook's answer first and a module second: the first that exists is used."""
    missing_nb = ("notebook:ex0_does_not_exist", ("format_reward",))
    module = ("module:agentrl_ref.format_reward", ("format_reward",))
    snippet = cloze.Snippet("x", "x", "ex0", (missing_nb, module))
    assert build.resolve(snippet)[0] == module[0]
    code = build.compact(build.raw_snippet(snippet))
    assert code.startswith("def format_reward(") and '"""' not in code
    existing_nb = ("notebook:ex1_format_reward", ("format_reward",))
    assert build.resolve(cloze.Snippet("y", "y", "ex1", (existing_nb, module)))[0] == existing_nb[0]
    with pytest.raises(FileNotFoundError):
        build.resolve(cloze.Snippet("z", "z", "ex0", (missing_nb,)))
    with pytest.raises(ValueError):
        build.source_code("file:somewhere")
    with pytest.raises(KeyError):  # a name missing from the chosen source is an error, not a fallback
        build.raw_snippet(cloze.Snippet("w", "w", "ex1", (("notebook:ex1_format_reward", ("no_such_name",)),)))


def test_snippets_use_the_exercise_answer_where_the_notebook_exists():
    for snippet in cloze.SNIPPETS:
        if (build.COURSE_SOURCE / snippet.exercise / f"{snippet.exercise}.ipynb").is_file():
            assert snippet.source == f"notebook:{snippet.exercise}", snippet.key


def test_compact_keeps_strings_and_drops_comments_and_docstrings():
    code = ('import re  # regex\n\n\ndef f(x):\n    """Doc."""\n    # explain\n    s = """a\n\n# not a comment\n"""\n'
            '\n    return s  # BLANK\n')
    out = build.compact(code)
    assert out == 'import re\n\ndef f(x):\n    s = """a\n\n# not a comment\n"""\n    return s\n'


def test_export_is_json_and_consistent():
    data = json.loads(json.dumps(cloze.export(), ensure_ascii=False))
    assert [s["key"] for s in data["snippets"]] == KEYS
    for item in data["snippets"]:
        assert "".join(item["pieces"]) == cloze.snippet_code(item["key"])
        assert item["n"] == len(item["pieces"]) // 2 == len(cloze.maskable_tokens(cloze.snippet_code(item["key"])))


# ---------------------------------------------------------------- the JupyterLab widget


def test_widget_blanks_check_refresh_and_reveal():
    pytest.importorskip("ipywidgets")
    from agentrl_ref import cloze_practice

    w = cloze_practice("format_reward", seed=123)
    assert w.blanks == cloze.choose_blanks(w.n, w.k, 123)
    assert sorted(w.inputs) == w.blanks
    assert w.counter.value == f"共 {w.n} 个可挖空位 | 已挖 {w.k} 个"

    for index, box in w.inputs.items():
        box.value = w.answers[index]
    assert w.check() == {"right": w.k, "wrong": 0, "empty": 0}
    assert set(w.states().values()) == {"cloze-right"}

    wrong = w.blanks[0]
    w.inputs[wrong].value = w.answers[wrong] + "x"
    assert w.check()["wrong"] == 1 and w.states()[wrong] == "cloze-wrong"

    before = list(w.blanks)
    w.refresh()
    assert w.blanks != before and w.blanks == cloze.choose_blanks(w.n, w.k, w.seed)
    assert all(box.value == "" for box in w.inputs.values())

    w.reveal()
    assert all(box.value == w.answers[i] for i, box in w.inputs.items())
    assert set(w.states().values()) == {"cloze-revealed"}

    w.level_select.value = "全部"
    assert len(w.inputs) == w.n
    w.seed_box.value = 5
    assert w.seed == 5


def test_widget_accepts_titles_and_rejects_unknown_levels():
    pytest.importorskip("ipywidgets")
    from agentrl_ref.teaching.cloze.widget import ClozeWidget

    assert ClozeWidget("格式奖励", seed=1).snippet.key == "format_reward"
    with pytest.raises(ValueError):
        ClozeWidget("format_reward", level="impossible")
    with pytest.raises(KeyError):
        ClozeWidget("no_such_snippet")


def test_importing_the_widget_module_does_not_import_ipywidgets():
    import subprocess
    import sys

    code = "import sys, agentrl_ref.teaching.cloze.widget; print('ipywidgets' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_card_opens_a_few_hundred_widget_models_at_most_and_a_refresh_closes_the_old_ones():
    """Every widget model is a comm_open (or more) on the kernel's IOPub socket, and a client that falls a few
    thousand messages behind loses some, the cell's idle status among them: nbclient then waits out its IOPub
    timeout (measured with the old card: two of exercise 9's in one cell, read 6 s late, lost nothing of 3,279
    messages; four, read 12 s late, lost some 300 of 6,500, the idle among them). One HTML per run of code text
    and shared layouts keep the largest card, every blank open, under 700 models (one widget per token once made
    it 1,641 messages at the default level; now 348)."""
    pytest.importorskip("ipywidgets")
    from ipywidgets.widgets.widget import _instances

    from agentrl_ref.teaching.cloze.widget import ClozeWidget

    for snippet in cloze.SNIPPETS:
        for level in cloze.levels(len(cloze.maskable_tokens(cloze.snippet_code(snippet.key)))):
            before = len(_instances)
            card = ClozeWidget(snippet.key, seed=3, level=level["name"])
            opened = len(_instances) - before
            assert opened < 700, (snippet.key, level["name"], opened)
            card.refresh()
            card.refresh()
            assert len(_instances) - before < opened + 60, (snippet.key, "a refresh left the old rows open")
