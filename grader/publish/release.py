"""make release: instructor notebooks -> student notebooks and book pages.

    grader/source/<a>/<a>.ipynb  --nbgrader generate_assignment-->  release notebook
        -> notebooks/<a>.ipynb   the student version: blanks, visible tests, no cells tagged "answer"
        -> book/<a>.ipynb        the web page: the same plus the collapsed 答案, and the blank
                                 and test cells tagged skip-execution so the site never shows a
                                 NameError from `_____`
    plus book/socratic.md (every notebook's 苏格拉底时刻) and the cloze cards' code,
    agentrl_ref/teaching/cloze/cloze_snippets.json (cloze_snippets.py)

nbgrader runs in a temporary copy of the course, so releasing never touches the
instructor's gradebook. Usage: python -m grader release [--out DIR] [assignment ...]
"""
from __future__ import annotations

import argparse
import copy
import json
import re
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

import nbformat

from grader.course import GRADER, ROOT, assignments, copy_course, generate_assignments
from grader.publish import cloze_snippets

CLOZE_DATA = Path("agentrl_ref") / "teaching" / "cloze" / "cloze_snippets.json"  # the cloze cards, cut from the answers
ANSWER_TAG = "answer"
SKIP_TAG = "skip-execution"
REMOVE_TAG = "remove-cell"  # myst-nb: run, not shown


SETUP_ID = "setup"  # grade_id of the read-only setup cell, right below the title of every notebook
SETUP_TEMPLATE = """\
# 环境准备（只读）：在 Colab 或还没装课程包的 Jupyter 里，从课程网站装上 agentrl_ref；在 make lab 里什么也不做。
# 评分时这一格不运行，评分环境里也没有本题的参考答案：答案里调用 agentrl_ref 的参考实现，评分时会失败。
from importlib import invalidate_caches, metadata
from os import environ
from subprocess import check_call
from sys import executable

COURSE_SITE = environ.get("AGENTRL_COURSE_SITE", {site!r})  # 课程网站：_config.yml 的 html.baseurl
AGENTRL_REF_VERSION = {version!r}
if AGENTRL_REF_VERSION not in {{d.version for d in metadata.distributions(name="agentrl-ref")}}:
    if not COURSE_SITE:
        raise RuntimeError("没有装课程包 agentrl_ref：在课程仓库里运行 make lab，或者 pip install 课程仓库。")
    _wheel = f"{{COURSE_SITE}}dist/agentrl_ref-{{AGENTRL_REF_VERSION}}-py3-none-any.whl"
    print(f"正在安装课程包：{{_wheel}}")
    check_call([executable, "-m", "pip", "install", "--quiet", f"agentrl-ref[course] @ {{_wheel}}"])
    invalidate_caches()
"""
TEST_TAG = "raises-exception"   # JupyterLab's Run All and nbclient go on past a failing test cell (it still scores 0)


def course_settings(root: Path = ROOT) -> tuple[str, str]:
    """(site base URL from _config.yml's html.baseurl, package version from pyproject.toml)."""
    import tomllib

    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    site = config["html"]["baseurl"] or ""  # "": not published yet (the setup cell then says so)
    if site and not site.endswith("/"):
        raise ValueError(f"_config.yml html.baseurl must end with '/', got {site!r}")
    version = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    return site, version


def setup_cell_source(root: Path = ROOT) -> str:
    site, version = course_settings(root)
    return SETUP_TEMPLATE.format(site=site, version=version).rstrip("\n")


def _title_index(nb: nbformat.NotebookNode) -> int:
    """The index of the notebook's title cell (the first markdown cell with a `# ` heading), or -1."""
    return next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
                 and any(line.startswith("# ") for line in c.source.splitlines())), -1)


def with_setup_cell(nb: nbformat.NotebookNode, source: str) -> bool:
    """Make the cell right below the title of an instructor notebook the read-only setup cell (tagged demo: not
    run while grading); return True if the notebook changed."""
    found = next((i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == SETUP_ID),
                 None)
    if found is None:
        cell = nbformat.v4.new_code_cell(source)
        cell.id = SETUP_ID
        cell.metadata = {"nbgrader": {"grade": False, "grade_id": SETUP_ID, "locked": True, "schema_version": 3,
                                      "solution": False}, "tags": ["demo"]}
    else:
        cell = nb.cells.pop(found)
    changed = found is None or cell.source != source
    cell.source = source
    at = _title_index(nb) + 1
    nb.cells.insert(at, cell)
    return changed or at != found


def with_test_tags(nb: nbformat.NotebookNode) -> bool:
    """Every test cell tagged TEST_TAG (a failing one no longer stops Run All); True if the notebook changed."""
    changed = False
    for cell in nb.cells:
        grading = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and grading.get("grade") and not grading.get("solution") \
                and TEST_TAG not in _tags(cell):
            cell.metadata["tags"] = _tags(cell) + [TEST_TAG]
            changed = True
    return changed


def refresh_setup_cells(names: list[str], course: Path = GRADER, root: Path = ROOT) -> list[Path]:
    """Write the current setup cell, below the title, into every instructor notebook that lacks it or has an old one
    (or has it elsewhere), and tag every test cell TEST_TAG."""
    source, changed = setup_cell_source(root), []
    for name in names:
        path = course / "source" / name / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        if with_setup_cell(nb, source) | with_test_tags(nb):
            nbformat.write(nb, path)
            changed.append(path)
    return changed


def nbgrader_release(names: list[str], course: Path = GRADER) -> dict[str, nbformat.NotebookNode]:
    """nbgrader's generate_assignment (its converter, in this process, as grading runs it) in a scratch copy of the
    course with a scratch gradebook; return the release notebooks."""
    with tempfile.TemporaryDirectory() as tmp:
        work = copy_course(Path(tmp) / "course", course)
        generate_assignments(work, names, f"sqlite:///{Path(tmp) / 'gradebook.db'}")
        return {name: nbformat.read(work / "release" / name / f"{name}.ipynb", as_version=4) for name in names}


def _tags(cell) -> list[str]:
    return list(cell.metadata.get("tags", []))


def kernel_language_info() -> dict:
    """What the course's kernel (ipykernel, this interpreter) reports as language_info. JupyterLab writes
    the kernel's value into a notebook as soon as the kernel connects: a notebook that already carries it
    does not open as modified."""
    return copy.deepcopy(_kernel_language_info())


@lru_cache(maxsize=1)
def _kernel_language_info() -> dict:
    # Asked of a child interpreter: importing ipykernel here would swap the process's comm manager
    # (ipykernel replaces comm.create_comm on import), and widgets made before the swap then fail to close.
    code = "import json; from ipykernel.ipkernel import IPythonKernel; print(json.dumps(IPythonKernel.language_info))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)


def student_notebook(release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(release)
    nb.cells = [cell for cell in nb.cells if ANSWER_TAG not in _tags(cell)]
    nb.metadata["language_info"] = kernel_language_info()
    return nb


SELF_CHECK = re.compile(r"^\s*check\(", re.MULTILINE)  # a student self-check call


def book_page(release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The web page: blanks, tests and self-checks shown but not run (they need the reader's answers)."""
    nb = nbformat.from_dict(release)
    for cell in nb.cells:
        grading = cell.metadata.get("nbgrader", {})
        needs_answers = grading.get("solution") or grading.get("grade") or SELF_CHECK.search(cell.source)
        if cell.cell_type == "code" and needs_answers:
            if SKIP_TAG not in _tags(cell):
                cell.metadata["tags"] = _tags(cell) + [SKIP_TAG]
        if grading.get("grade_id") == SETUP_ID and REMOVE_TAG not in _tags(cell):
            cell.metadata["tags"] = _tags(cell) + [REMOVE_TAG]  # readers of the site install nothing
    return nb


SOCRATIC_TAG = "socratic"
SOCRATIC_HEADING = "## 苏格拉底时刻"


def book_notebooks(root: Path = ROOT) -> list[Path]:
    """The book's pages that are notebooks written as MyST text (not generated from grader/source), in the
    order of _toc.yml."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    files = [root / f"{chapter['file']}.md" for part in toc.get("parts", []) for chapter in part["chapters"]]
    return [f for f in files if f.is_file() and f.read_text(encoding="utf-8").startswith("---\njupytext:")]


def socratic_sources(course: Path = GRADER, root: Path = ROOT) -> list[tuple[str, nbformat.NotebookNode]]:
    """(the page's file name in book/, its notebook) for every page with a Socratic question: each
    assignment's instructor notebook, then the book's own notebook pages (book_notebooks)."""
    from myst_nb.core.read import read_myst_markdown_notebook

    pages = [(f"{name}.ipynb", nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4))
             for name in assignments(course)]
    pages += [(path.name, read_myst_markdown_notebook(path.read_text(encoding="utf-8")))
              for path in book_notebooks(root)]
    return [(page, nb) for page, nb in pages
            if any(c.cell_type == "markdown" and SOCRATIC_TAG in _tags(c) for c in nb.cells)]


def socratic_page(course: Path = GRADER, root: Path = ROOT) -> str:
    """book/socratic.md: the cell tagged `socratic` of every instructor notebook and book notebook page,
    in the order of the course."""
    lines = [
        "# 苏格拉底时刻",
        "",
        "% Generated by `make release` (grader/publish/release.py, socratic_page) from the cells tagged",
        "% `socratic` in grader/source and in the book's own notebook pages. Do not edit by hand.",
        "",
        "每道练习的最后都留了一个问题，没有唯一的标准答案。这里把它们收在一起，方便复习和课堂讨论："
        "先自己想清楚，再展开“讨论提示”。",
    ]
    sources = socratic_sources(course, root)
    for page, nb in sources:
        cells = [c for c in nb.cells if c.cell_type == "markdown" and SOCRATIC_TAG in _tags(c)]
        title = next((line[2:].strip() for c in nb.cells if c.cell_type == "markdown"
                      for line in c.source.splitlines() if line.startswith("# ")), page)
        body = "\n\n".join(c.source.strip() for c in cells)
        if body.startswith(SOCRATIC_HEADING):
            body = body[len(SOCRATIC_HEADING):].strip()
        lines += ["", f"## {title}", "", f"出自[{title}]({page})。", "", body]
    if not sources:
        lines += ["", "（还没有练习带苏格拉底时刻。）"]
    return "\n".join(lines) + "\n"


def render(names: list[str], course: Path = GRADER) -> dict[Path, str]:
    """Relative output path -> file text: every assignment's notebooks in names, and book/socratic.md."""
    out = {}
    for name, release in nbgrader_release(names, course).items():
        out[Path("notebooks") / f"{name}.ipynb"] = nbformat.writes(student_notebook(release)) + "\n"
        out[Path("book") / f"{name}.ipynb"] = nbformat.writes(book_page(release)) + "\n"
    out[Path("book") / "socratic.md"] = socratic_page(course)
    out[CLOZE_DATA] = cloze_snippets.render_json(course / "source")
    return out


def main(args: argparse.Namespace) -> None:
    names = args.names or assignments()
    for path in refresh_setup_cells(names):
        print(f"updated the setup cell of {path}")
    for rel, text in render(names).items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    if getattr(args, "exchange", None):
        import os

        from grader.publish.exchange import publish

        for folder in publish(args.exchange, args.course, names, os.environ.get("AGENTRL_DB_URL") or None):
            print(f"released {folder}")
