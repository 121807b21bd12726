"""Every exercise runs end to end from the course's wheel, once; the pages that promise it print the same twice.

One execution of each exercise serves every test here (`executed`, once per module and exercise): its instructor
notebook (answers, visible and hidden tests, every demo cell, the page's seeds) in a fresh venv outside the repository
that has only the course's wheel installed (tests/fresh_venv.py), after a first cell that proves where agentrl_ref
comes from and before a last one that opens the exercise's cloze card. From it:

- every notebook runs clean: no error, no test cell writes to stderr (nbgrader scores such a cell 0), no missing glyph;
- what a student gets from the wheel works: every check() passes, the plots render, cloze_practice shows its widget;
- the capstone's page and exercise 8's print what the book build's execution of them printed, except what a clock
  measured: this is their second execution. The notebook's own cells (answers, checks, tests) run in between, so
  nothing on a page may depend on them. The capstone's cells tagged measured are left out (the build executes
  them, tests/test_two_process.py tests their engine).

Hidden tests count where they decide, in nbgrader's grading of the reference answer (tests/test_nbgrader.py)."""
import re
from pathlib import Path

import nbformat
import pytest

from agentrl_ref.teaching.cloze import cards as cloze
from course import ASSIGNMENTS, ROOT, SOURCE
from fresh_venv import KERNEL_STDERR, expose, fresh_venv, install, kernelspec, printed, run_in, where_am_i

CAPSTONE = "ex7_agent_grpo"
MEASURED_TAG = "measured"  # a cell whose every output comes from a clock (agentrl_ref.teaching.shared.progress)
PAGE_SEED_VARIABLES = ("AGENTRL_CAPSTONE_SEEDS", "AGENTRL_DAPO_SEEDS")  # unset: each page's own seeds
SKIPPED_TAG = "skip-execution"   # on a page: answers, checks and tests, shown but not run by the book build
PAGE = ROOT / "book" / f"{CAPSTONE}.ipynb"
CHECK_CALL = re.compile(r"^\s*(await )?check\(", re.M)


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


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    """A fresh venv with the course's wheel installed and nothing of the checkout; its kernel folder."""
    import sysconfig

    import course_assets  # book/_ext (tests/conftest.py puts it on the path)

    wheel = course_assets.build_wheel(tmp_path_factory.mktemp("dist"))
    tmp = tmp_path_factory.mktemp("wheel-venv")
    venv = fresh_venv(tmp / "venv", with_pip=False)
    install(venv, str(wheel))  # into the bare venv first: nothing else is visible to pip yet
    expose(venv, Path(sysconfig.get_path("purelib")))  # then the course venv's packages, as dependencies
    return venv, kernelspec(tmp, venv, {})


@pytest.fixture(scope="module")
def executed(wheel_venv, tmp_path_factory):
    """name -> the exercise's instructor notebook executed from the wheel (see the module's docstring), each once."""
    venv, jupyter_path = wheel_venv
    done: dict[str, nbformat.NotebookNode] = {}
    folders: dict[str, Path] = {}

    def run(name: str) -> nbformat.NotebookNode:
        if name not in done:
            nb = nbformat.read(SOURCE / name / f"{name}.ipynb", as_version=4)
            nb.cells = [c for c in nb.cells if MEASURED_TAG not in c.metadata.get("tags", [])]
            nb.cells.insert(0, where_am_i(venv))
            card = next(s.key for s in cloze.SNIPPETS if s.exercise == name)
            nb.cells.append(nbformat.v4.new_code_cell(
                f"from agentrl_ref import cloze_practice\ncloze_practice({card!r})"))
            # the page's seeds, whatever this shell asks for
            folders[name] = tmp_path_factory.mktemp(name)
            done[name] = run_in(nb, folders[name], jupyter_path, unset=PAGE_SEED_VARIABLES)
        return done[name]

    def kernel_stderr(name: str) -> str:
        """The end of what the kernel of that execution wrote to its stderr (see course.run_notebook)."""
        path = folders[name] / KERNEL_STDERR
        return path.read_text(encoding="utf-8", errors="replace")[-3000:] if path.exists() else ""

    run.kernel_stderr = kernel_stderr
    return run


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


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_instructor_notebook_executes(name, executed):
    _clean(executed(name))


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_wheel_runs_every_student_notebook(name, executed):
    """What a student runs, from the wheel: every check() says all passed, the plots render, the cloze card shows."""
    nb = executed(name)
    checks = [c for c in nb.cells if c.cell_type == "code" and CHECK_CALL.search(c.source)]
    assert checks
    for cell in checks:
        out = printed(cell)
        assert "全部通过" in out and "✗" not in out, out
    demo = [c for c in nb.cells if "demo" in c.metadata.get("tags", [])]
    figures = [o for c in demo for o in c.outputs if "image/png" in o.get("data", {})]
    if any("plot" in c.source for c in demo):
        assert figures, f"{name}: no plot rendered"
    widget = nb.cells[-1]
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in widget.outputs), widget


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


def _differences(page, again) -> tuple[int, list[str]]:
    """Over the page's cells the book build executed (not skipped, not measured): how many printed something, and a
    report of those whose outputs differ in `again` (matched by cell id)."""
    ran = {c.id: c for c in again.cells if c.cell_type == "code"}
    compared = 0
    report = []
    for cell in page.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type != "code" or SKIPPED_TAG in tags or MEASURED_TAG in tags:
            continue
        if cell.id not in ran:
            report.append(f"{cell.id}: not in the second execution")
            continue
        a, b = _deterministic_outputs(cell), _deterministic_outputs(ran[cell.id])
        compared += bool(a)
        if a != b:
            report.append(f"{cell.id}: {_where_they_differ(a, b)}")
    return compared, report


def _said(report: list[str], executed, name: str) -> str:
    """The failure message of a comparison: the cells that differ, and what the second execution's kernel wrote to its
    own stderr (ipykernel writes there when its output thread fell behind a cell: "IOStream.flush timed out")."""
    return (f"{len(report)} cells differ between two executions:\n" + "\n".join(report)
            + f"\nthe second execution's kernel wrote to its stderr:\n{executed.kernel_stderr(name) or '(nothing)'}")


def test_the_capstone_page_prints_the_same_twice_except_what_a_clock_measured(capstone_page, executed):
    """The page promises: the single-process training, every ablation and every verdict come out the same when the page
    runs again on the same machine; only lines that report measured time (and the two-process section, tagged
    "measured") change. The second execution (`executed`) leaves the measured cells out: nothing else may depend on
    them."""
    again = executed(CAPSTONE)
    compared, report = _differences(capstone_page, again)
    assert not report, _said(report, executed, CAPSTONE)
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


def test_exercise_8s_page_prints_the_same_twice_except_what_a_clock_measured(built_site, executed):
    """Exercise 8's measurement (the sampled completions, how many drift, every ratio), its figure and the template
    demo come out the same in a second execution; only the line with the seconds it took is measured."""
    path = ROOT / "book" / "ex8_token_in_out.ipynb"
    first_run = built_page(built_site, path)
    _clean(first_run)
    compared, report = _differences(first_run, executed("ex8_token_in_out"))
    assert not report, _said(report, executed, "ex8_token_in_out")
    assert compared >= 4, compared  # the table, the examples, the figure, the template demo
    drawn = [c for c in first_run.cells if c.cell_type == "code" and "fig = plot_" in c.source]
    assert drawn and all(any("image/png" in o.get("data", {}) for o in c.outputs) for c in drawn)


# Chapter 2's pages whose tables, figures and verdicts this module's execution checks against the build's (their
# second execution: nothing runs a third time), with how many computed verdicts ("**判断**") and figures each shows
PAGES_COMPARED = {"ex10_partial_rollout": (7, 2), "ex11_dapo_sampling": (4, 2)}


@pytest.mark.parametrize("name", sorted(PAGES_COMPARED))
def test_a_chapter_2_page_prints_the_same_twice_except_what_a_clock_measured(name, built_site, executed):
    page = built_page(built_site, ROOT / "book" / f"{name}.ipynb")
    _clean(page)
    compared, report = _differences(page, executed(name))
    assert not report, _said(report, executed, name)
    demo = [c for c in page.cells if c.cell_type == "code" and "demo" in c.metadata.get("tags", [])]
    verdicts = sum(str(_deterministic_outputs(c)).count("**判断**") for c in demo)
    figures = [c for c in demo if any("image/png" in o.get("data", {}) for o in c.outputs)]
    assert compared >= 4 and (verdicts, len(figures)) == PAGES_COMPARED[name], (compared, verdicts, len(figures))
