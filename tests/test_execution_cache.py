"""The book's execution cache (book/_ext/execution_cache.py): an unchanged rebuild takes the outputs from the cache,
and an edit to the package the pages import shows up on the page (jupyter-cache alone keys on a page's code only).

The real book takes minutes to execute, so the end-to-end test builds a one-page book with the same two pieces
(myst-nb in `cache` mode and the extension) around a throw-away package.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import nbformat

import execution_cache  # book/_ext (tests/conftest.py puts it on the path)
from course import ROOT


def test_the_fingerprint_covers_the_package_the_pins_and_the_course_variables_but_not_bytecode(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("X = 1\n")
    (tmp_path / "requirements.txt").write_text("torch==2.13.0\n")
    sources = ["pkg", "requirements.txt"]
    first = execution_cache.fingerprint(tmp_path, sources)
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    assert execution_cache.fingerprint(tmp_path, sources) == first
    (tmp_path / "pkg" / "mod.py").write_text("X = 2\n")
    second = execution_cache.fingerprint(tmp_path, sources)
    assert second != first
    (tmp_path / "requirements.txt").write_text("torch==2.14.0\n")
    third = execution_cache.fingerprint(tmp_path, sources)
    assert third != second
    monkeypatch.setenv("AGENTRL_CAPSTONE_SEEDS", "0")
    assert execution_cache.fingerprint(tmp_path, sources) != third
    assert execution_cache.DEFAULT_SOURCES == ["agentrl_ref", "requirements.txt", "pyproject.toml"]


def test_the_book_uses_the_cache_and_the_extension():
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert re.search(r"^\s*execute_notebooks:\s*cache\b", config, re.M)
    assert "execution_cache.setup(app)" in (ROOT / "book" / "_ext" / "course_assets.py").read_text(encoding="utf-8")


CONF = """
import sys
sys.path.insert(0, {ext!r})
extensions = ["myst_nb", "execution_cache"]
nb_execution_mode = "cache"
execution_cache_sources = ["demo_pkg"]
exclude_patterns = ["_build", "demo_pkg"]
"""


def _build(project) -> str:
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", str(project), str(project / "_build" / "html")]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return (project / "_build" / "html" / "page.html").read_text(encoding="utf-8")


def test_an_edit_to_a_package_function_shows_up_on_the_page_and_an_unchanged_rebuild_does_not_execute(tmp_path):
    project = tmp_path / "book"
    (project / "demo_pkg").mkdir(parents=True)
    (project / "conf.py").write_text(CONF.format(ext=str(ROOT / "book" / "_ext")))
    (project / "index.md").write_text("# demo\n\n```{toctree}\npage\n```\n")
    package = project / "demo_pkg" / "__init__.py"
    package.write_text("def value():\n    return 'VALUE-ONE'\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# page"), nbformat.v4.new_code_cell(textwrap.dedent("""
        import uuid
        import demo_pkg
        print(demo_pkg.value(), "run", uuid.uuid4().hex)
        """))]
    nbformat.write(nb, project / "page.ipynb")

    def shown(html):
        match = re.search(r"(VALUE-\w+) run ([0-9a-f]{32})", html)
        assert match, html[-2000:]
        return match.groups()

    value, run = shown(_build(project))
    assert value == "VALUE-ONE"
    assert shown(_build(project)) == (value, run)  # nothing changed: the outputs come from the cache
    package.write_text("def value():\n    return 'VALUE-TWO'\n")  # the page's code is unchanged
    value, again = shown(_build(project))
    assert value == "VALUE-TWO" and again != run
    caches = [p for p in (project / "_build" / ".jupyter_cache").iterdir() if p.is_dir()]
    assert len(caches) == 1  # the old fingerprint's cache is gone


def test_the_build_kernels_use_unix_sockets_and_print_no_tcp_warning(tmp_path):
    """ipykernel 7 warns at every kernel start over TCP without encryption (`make book` printed it once a page):
    the build's kernels listen on IPC sockets in the Jupyter runtime folder instead (book/_ext/kernel_transport.py),
    the warning is gone and a real warning of a page's code still reaches the build's output."""
    project = tmp_path / "book"
    (project / "demo_pkg").mkdir(parents=True)
    (project / "conf.py").write_text(CONF.format(ext=str(ROOT / "book" / "_ext")))
    (project / "index.md").write_text("# demo\n\n```{toctree}\npage\n```\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# page"), nbformat.v4.new_code_cell(textwrap.dedent("""
        import os, sys
        from ipykernel.kernelapp import IPKernelApp
        app = IPKernelApp.instance()
        print("TRANSPORT", app.transport, os.path.isabs(app.ip))
        print("A REAL WARNING OF THE KERNEL", file=sys.__stderr__, flush=True)
        """))]
    nbformat.write(nb, project / "page.ipynb")
    runtime = tempfile.mkdtemp(prefix="rt-")          # short: a Unix socket's path has ~100 bytes
    try:
        command = [sys.executable, "-m", "sphinx", "-b", "html", "-q", str(project), str(project / "_build" / "html")]
        out = subprocess.run(command, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "JUPYTER_RUNTIME_DIR": runtime})
        assert out.returncode == 0, out.stderr
        html = (project / "_build" / "html" / "page.html").read_text(encoding="utf-8")
        assert "TRANSPORT ipc True" in html, html[-2000:]
        assert "without encryption" not in out.stderr and "A REAL WARNING OF THE KERNEL" in out.stderr, out.stderr
        left = sorted(p.name for p in Path(runtime).iterdir())
        assert [n for n in left if "-ipc-" in n] == [], left       # the kernel's sockets are cleaned up
        assert not [p for p in project.rglob("*ipc*")]              # nothing in the page's folder
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def test_pages_executed_side_by_side_are_what_the_build_shows_and_a_failed_one_is_left_to_the_build(tmp_path,
                                                                                                    monkeypatch):
    """book/_ext/preexecute.py (make book runs it before the build, two pages at a time): what it executes lands in
    the cache under the key myst-nb looks for, so the build shows those outputs without executing; its kernels use
    Unix sockets as the build's do; a page that failed there is not stored, and the build executes it itself."""
    import preexecute  # book/_ext

    project = tmp_path / "book"
    (project / "demo_pkg").mkdir(parents=True)
    (project / "demo_pkg" / "__init__.py").write_text("")
    (project / "conf.py").write_text(CONF.format(ext=str(ROOT / "book" / "_ext")))
    (project / "index.md").write_text("# demo\n\n```{toctree}\none\ntwo\nflaky\n```\n")
    code = ("import os, uuid\nfrom ipykernel.kernelapp import IPKernelApp\n{check}"
            "print('{name}', 'run', uuid.uuid4().hex, IPKernelApp.instance().transport)\n")
    pages = []
    for name in ("one", "two", "flaky"):   # flaky fails where FAIL_BEFORE_THE_BUILD is set, the build's kernels lack it
        check = "assert 'FAIL_BEFORE_THE_BUILD' not in os.environ\n" if name == "flaky" else ""
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [nbformat.v4.new_markdown_cell(f"# {name}"),
                    nbformat.v4.new_code_cell(code.format(check=check, name=name))]
        nbformat.write(nb, project / f"{name}.ipynb")
        pages.append(project / f"{name}.ipynb")
    folder = execution_cache.cache_folder(project / "_build" / ".jupyter_cache", project, ["demo_pkg"])
    with monkeypatch.context() as env:
        env.setenv("FAIL_BEFORE_THE_BUILD", "1")
        done = preexecute.preexecute(pages, folder, timeout=60, allow_errors=False, jobs=2, say=lambda line: None)
    assert sorted(p.name for p in done) == ["one.ipynb", "two.ipynb"]
    assert preexecute.missing(pages, folder) == [pages[2]]
    command = [sys.executable, "-m", "sphinx", "-b", "html", str(project), str(project / "_build" / "html")]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    log = out.stdout + out.stderr
    assert "one.ipynb: Using cached notebook" in log and "two.ipynb: Using cached notebook" in log, log[-3000:]
    assert "flaky.ipynb: Executing notebook" in log, log[-3000:]
    for name in ("one", "two", "flaky"):
        html = (project / "_build" / "html" / f"{name}.html").read_text(encoding="utf-8")
        assert re.search(rf"{name} run [0-9a-f]{{32}} ipc", html), html[-2000:]
