"""Shared fixtures: the repo paths, a built site, a served site and a headless Chromium."""
from __future__ import annotations

import asyncio
import http.server
import os
import subprocess
import sys
import threading
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests: `make test` explores new examples locally (a failure prints the seed to reproduce
# it); CI sets HYPOTHESIS_PROFILE=ci (.ci/run): derandomized, so one commit gives one result. No
# profile has a deadline or a too_slow health check: both are timing, and timing flakes on a
# loaded 2-core machine. Explicit @settings(...) in a test keep these unless they name them.
settings.register_profile("dev", deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, print_blob=True, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Test modules that turn every warning of their own code paths into an error (no torch or matplotlib
# warning may reach a notebook's stderr) use this, not a bare filterwarnings("error"): a socket or event
# loop that some earlier test left behind is garbage-collected at an arbitrary moment, and its
# ResourceWarning must not fail whichever test happens to be running.
STRICT_WARNINGS = [pytest.mark.filterwarnings("error"), pytest.mark.filterwarnings("ignore::ResourceWarning"),
                   pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]

ROOT = Path(__file__).resolve().parents[1]
# The book's local Sphinx extensions (book/_ext) are plain modules, not a package: the site tests import
# them (the offline assets' pinned versions, the wheel the site publishes). The only sys.path edit of the
# suite; grader and agentrl_ref are installed packages.
sys.path.insert(0, str(ROOT / "book" / "_ext"))
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(autouse=True)
def _no_foreign_running_loop(request):
    """playwright's sync API (the session `browser`) leaves its event loop marked as running in the
    main thread; a test that is not a browser test gets a thread with no running loop, as a script has."""
    if "browser" in request.fixturenames:
        yield
        return
    running = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    yield
    asyncio.events._set_running_loop(running)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """Build the book from scratch (warnings are errors) into a temporary folder; return its html root."""
    out = tmp_path_factory.mktemp("site")
    jb = Path(sys.executable).parent / "jupyter-book"
    proc = subprocess.run([str(jb), "build", "--all", "-W", "-n", "--keep-going", "--path-output", str(out), str(ROOT)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"jupyter-book build failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    return out / "_build" / "html"


@pytest.fixture(scope="session")
def site_url(built_site):
    """Serve the built site on 127.0.0.1 for the session; yield its base URL."""
    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = partial(QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: install Debian's chromium (see .ci/run)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def pytest_terminal_summary(terminalreporter):
    """Print the mutation table: every realistic wrong answer and the test cell that caught it."""
    import sys as _sys

    module = _sys.modules.get("test_nbgrader")
    rows = getattr(module, "MUTATION_TABLE", [])
    if rows:
        terminalreporter.section("mutation table (realistic wrong answers, graded by nbgrader)")
        terminalreporter.write_line("| assignment | wrong answer | test cell meant to catch it | that cell | total | |")
        terminalreporter.write_line("|---|---|---|---:|---:|---|")
        for row in rows:
            terminalreporter.write_line(row)
