"""Every instructor notebook runs end to end, every test cell passes and writes nothing to stderr; the capstone's page
prints the same thing twice, except what a clock measured.

The capstone is the one heavy page (three seeds of ablations): its first execution is the book build's (built_site,
the page as readers get it, with the page's seeds), its second one is here. Exercise 11's page trains three arms on
three seeds: its instructor notebook runs once here, both as the notebook that must run clean and as the page's
second execution. Its hidden tests run where they count,
in nbgrader's grading of the reference answer (tests/test_nbgrader.py: a test cell writing to stderr scores 0)."""
import os
from unittest import mock

import nbformat
import pytest

from course import ASSIGNMENTS, ROOT, SOURCE, run_notebook

CAPSTONE = "ex7_agent_grpo"
DAPO = "ex11_dapo_sampling"  # executed once here, as the second execution of its page (see its test below)
MEASURED_TAG = "measured"  # a cell whose every output comes from a clock (agentrl_ref.teaching.shared.progress)
PAGE = ROOT / "book" / f"{CAPSTONE}.ipynb"


def execute(path, drop_tag: str | None = None) -> nbformat.NotebookNode:
    """The notebook at path executed in its folder (cells tagged drop_tag left out), with the page's seeds."""
    nb = nbformat.read(path, as_version=4)
    if drop_tag:
        nb.cells = [c for c in nb.cells if drop_tag not in c.metadata.get("tags", [])]
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTRL_CAPSTONE_SEEDS", "AGENTRL_DAPO_SEEDS")}
    with mock.patch.dict(os.environ, env, clear=True):  # the kernel inherits this process's environment
        run_notebook(nb, cwd=path.parent, timeout=300)  # raises CellExecutionError on any failing cell
    return nb


def built_page(built_site, path) -> nbformat.NotebookNode:
    """The page at path as the book build executed it: its outputs from the build's execution cache (the folder of
    this checkout's fingerprint, book/_ext/execution_cache.py), matched to the page's code by jupyter-cache as myst-nb
    matches it. (The copy myst-nb writes to jupyter_execute/ can lack the outputs of a page it executed.)"""
    import execution_cache  # book/_ext (tests/conftest.py puts it on the path)
    from jupyter_cache import get_cache

    key = execution_cache.fingerprint(ROOT, execution_cache.DEFAULT_SOURCES)[:16]
    cache = get_cache(str(built_site.parent / ".jupyter_cache" / key))
    _, executed = cache.merge_match_into_notebook(nbformat.read(path, as_version=4))
    return executed


@pytest.fixture(scope="module")
def capstone_page(built_site):
    """The capstone page as the book build executed it."""
    return built_page(built_site, PAGE)


def _clean(nb) -> None:
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.get("id")
        stderr = [o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"]
        if cell.metadata.get("nbgrader", {}).get("grade"):
            # nbgrader scores a test cell that writes to stderr 0, even when it passed
            assert not stderr, f"{cell.metadata.nbgrader.grade_id} writes to stderr: {stderr}"
        assert not any("Glyph" in s and "missing" in s for s in stderr), stderr


@pytest.mark.parametrize("name", [a for a in ASSIGNMENTS if a not in (CAPSTONE, DAPO)])
def test_instructor_notebook_executes(name):
    _clean(execute(SOURCE / name / f"{name}.ipynb"))


def test_the_capstone_page_runs_clean(capstone_page):
    _clean(capstone_page)
    assert sum(c.cell_type == "code" and bool(c.outputs) for c in capstone_page.cells) >= 20


def _deterministic_outputs(cell) -> list:
    """What a cell printed and displayed, without the displays marked as measured (their metadata) and without
    execution counts."""
    from agentrl_ref.teaching.shared.progress import MEASURED

    out = []
    for o in cell.outputs:
        if o.get("metadata", {}).get("agentrl") == MEASURED["agentrl"]:
            continue
        if o.output_type == "stream":
            out.append((o.name, o.text))
        elif o.output_type in ("display_data", "execute_result"):
            out.append((o.output_type, dict(o.data)))
        else:
            out.append((o.output_type, o.get("ename"), o.get("evalue")))
    return out


def _where_they_differ(a: list, b: list) -> str:
    """The first output that differs, and its two texts around the first character where they part."""
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            if isinstance(x[1], dict) and isinstance(y[1], dict) and x[0] == y[0]:
                keys = sorted(set(x[1]) | set(y[1]))
                if set(x[1]) != set(y[1]):
                    return f"output {k} ({x[0]}): mime types {sorted(x[1])} and {sorted(y[1])}"
                key = next(key for key in keys if x[1][key] != y[1][key])
                x, y, what = str(x[1][key]), str(y[1][key]), f"output {k} ({x[0]}, {key})"
            else:
                x, y, what = str(x), str(y), f"output {k}"
            at = next((i for i, (c, d) in enumerate(zip(x, y)) if c != d), min(len(x), len(y)))
            return (f"{what} parts at character {at}:\n  first:  …{x[max(0, at - 150):at + 150]!r}\n"
                    f"  second: …{y[max(0, at - 150):at + 150]!r}")
    return f"{len(a)} outputs against {len(b)}: the extra ones {str(a[len(b):] or b[len(a):])[:600]}"


def _differences(first_run, again) -> tuple[int, list[str]]:
    """How many code cells of the second execution printed something, and a report of those that differ."""
    first = {c.id: c for c in first_run.cells if c.cell_type == "code"}
    compared = 0
    report = []
    for cell in again.cells:
        if cell.cell_type != "code":
            continue
        a, b = _deterministic_outputs(first[cell.id]), _deterministic_outputs(cell)
        compared += bool(a)
        if a != b:
            report.append(f"{cell.id}: {_where_they_differ(a, b)}")
    return compared, report


def test_the_capstone_page_prints_the_same_twice_except_what_a_clock_measured(capstone_page):
    """The page promises: the single-process training, every ablation and every verdict come out the same when the page
    runs again on the same machine; only lines that report measured time (and the two-process section, tagged
    "measured") change. The second execution leaves the measured cells out: nothing else may depend on them."""
    again = execute(PAGE, drop_tag=MEASURED_TAG)
    compared, report = _differences(capstone_page, again)
    assert not report, f"{len(report)} cells differ between two executions:\n" + "\n".join(report)
    verdicts = [c for c in again.cells if c.cell_type == "code" and "**判断**" in str(_deterministic_outputs(c))]
    assert compared >= 15 and len(verdicts) >= 6, (compared, len(verdicts))  # 19 cells print, 7 verdicts
    measured_cells = [c.id for c in capstone_page.cells if MEASURED_TAG in c.metadata.get("tags", [])]
    assert measured_cells == ["e7-real-async-runs", "e7-real-async-timeline", "e7-real-async-versions", "e7-page-time"]


def test_every_figure_of_the_capstone_shows(capstone_page):
    """Each cell that draws a figure displays it (a figure drawn with the CJK fonts must not switch the inline
    backend's display off for the cells after it)."""
    drawn = {c.metadata.nbgrader.grade_id: any("image/png" in o.get("data", {}) for o in c.outputs)
             for c in capstone_page.cells if c.cell_type == "code" and "fig = plot_" in c.source}
    assert len(drawn) >= 7 and all(drawn.values()), drawn


def test_exercise_8s_page_prints_the_same_twice_except_what_a_clock_measured(built_site):
    """Exercise 8's measurement (the sampled completions, how many drift, every ratio), its figure and the template
    demo come out the same in a second execution; only the line with the seconds it took is measured."""
    path = ROOT / "book" / "ex8_token_in_out.ipynb"
    first_run = built_page(built_site, path)
    _clean(first_run)
    compared, report = _differences(first_run, execute(path))
    assert not report, f"{len(report)} cells differ between two executions:\n" + "\n".join(report)
    assert compared >= 4, compared  # the table, the examples, the figure, the template demo
    drawn = [c for c in first_run.cells if c.cell_type == "code" and "fig = plot_" in c.source]
    assert drawn and all(any("image/png" in o.get("data", {}) for o in c.outputs) for c in drawn)


def test_exercise_11s_notebook_runs_clean_and_its_page_prints_the_same_twice(built_site):
    """Exercise 11's instructor notebook runs end to end (every test cell passes, nothing on stderr), and it is the
    second execution of the page: every cell the book build executed (the training of three arms on three seeds, its
    tables, figures and computed verdicts, the float demo) prints the same; only the line with the seconds is
    measured."""
    first_run = built_page(built_site, ROOT / "book" / f"{DAPO}.ipynb")
    _clean(first_run)
    instructor = execute(SOURCE / DAPO / f"{DAPO}.ipynb")
    _clean(instructor)
    on_the_page = {c.id for c in first_run.cells if c.cell_type == "code"
                   and not {"skip-execution", "remove-cell"} & set(c.metadata.get("tags", []))}
    again = nbformat.from_dict({**instructor, "cells": [c for c in instructor.cells if c.id in on_the_page]})
    compared, report = _differences(first_run, again)
    assert not report, f"{len(report)} cells differ between two executions:\n" + "\n".join(report)
    verdicts = [c for c in again.cells if "**判断**" in str(_deterministic_outputs(c))]
    drawn = [c for c in first_run.cells if c.cell_type == "code" and "fig = plot_" in c.source]
    assert compared >= 6 and len(verdicts) == 1 and str(_deterministic_outputs(verdicts[0])).count("**判断**") == 4
    assert len(drawn) == 2 and all(any("image/png" in o.get("data", {}) for o in c.outputs) for c in drawn)
