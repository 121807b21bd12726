"""Shared fixtures: the repo paths, a built site, a served site, a headless Chromium and the session's reference
records; the suite's lanes and where its time goes.

What costs minutes runs once per session and is shared (book/guide_maintainers.md, "Paying for a new test"):
- the site: `built_site` reuses _build/html when it was built from exactly these inputs (book/_ext/site_build.py,
  the stamp `make book` leaves), else builds it there once, the way `make book` does;
- the references: every grading run of the session (in this process or a child: shards, the service, nbgrader)
  keeps the instructor notebooks' records in one folder (AGENTRL_REFERENCE_STORE, grader/grade/reference.py),
  keyed by the notebook and the package copy; no test may change a record (checked after every test);
- a browser, a served site, one guest boot per lane (tests/guest.py), one PostgreSQL server (`postgres`,
  tests/postgres_server.py: a database per module).
`make test` ends with the time of each lane beside the slowest tests; `make test-quick` runs the quick lane.
"""
from __future__ import annotations

import asyncio
import http.server
import os
import sys
import threading
import time
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
# them (the offline assets' pinned versions, the wheel the site publishes). So are the benchmark scripts and their
# records' reader (bench/: tests/test_bench_records.py), appended, so that no name there shadows an installed one.
# The only sys.path edits of the suite; grader and agentrl_ref are installed packages.
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.append(str(ROOT / "bench"))
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

# ---------------------------------------------------------------- lanes

# Every test module's lane: `make test` prints the time of each, `make test-quick` (--lane quick) runs only the
# quick one (unit and property tests of the package, its checks and the grader's pure parts; no kernel, no
# browser, no server). A module not listed here runs in `make test` under "other", is named at the end, and fails
# tests/test_lanes.py.
LANES = {
    "quick": ["test_blanks", "test_capstone_evidence", "test_capstone_hints", "test_chat_template", "test_checks",
              "test_checks_async", "test_cloze", "test_cluster_files", "test_composite_reward", "test_credit_plots",
              "test_figures", "test_format_reward", "test_glossary", "test_grader_structure", "test_hidden_rules",
              "test_intake", "test_launch_buttons", "test_length_plots", "test_lint", "test_loss_mask",
              "test_queue_bench", "test_release", "test_rollout_buffer", "test_rollout_sim", "test_token_credit",
              "test_token_in_out", "test_rollout_correction", "test_mismatch_study", "test_partial_rollout",
              "test_interrupt_study", "test_dapo_sampling", "test_dapo_study",
              "test_verifiable_reward", "test_verifier_table", "test_agent", "test_two_process", "test_guides",
              "test_page_length", "test_hints", "test_lanes", "test_lab_copy", "test_progress", "test_theme_overrides",
              "test_bench_records"],
    "notebooks": ["test_notebooks_execute", "test_package", "test_frameworks", "test_rollout_playground",
                  "test_execution_cache"],
    "grading": ["test_grade", "test_attacks", "test_nbgrader", "test_shards", "test_shared_work", "test_kernel_retry",
                "test_feedback_pages", "test_outfolder"],
    "sandbox levels": ["test_sandbox"],
    "cgroup v2 guest": ["test_cgroup_v2"],
    "hub and service": ["test_serve", "test_serve_trust", "test_hub", "test_lab"],
    "browser": ["test_accessibility", "test_offline_site", "test_site", "test_site_reader", "test_cloze_browser"],
}
LANE_OF = {module: lane for lane, modules in LANES.items() for module in modules}
OTHER = "other"
# once-per-session work (name -> seconds, how): printed beside the lanes, counted in the lane of the test that
# first needed it
SHARED: dict[str, tuple[float, str]] = {}


def lane_of(item_or_nodeid) -> str:
    nodeid = getattr(item_or_nodeid, "nodeid", item_or_nodeid)
    return LANE_OF.get(Path(nodeid.split("::", 1)[0]).stem, OTHER)


def pytest_addoption(parser):
    parser.addoption("--lane", action="append", default=[], metavar="NAME",
                     help=f"run only this lane's tests (repeatable): {', '.join([*LANES, OTHER])}")


# ---------------------------------------------------------------- workers
#
# `make test` runs the suite in pytest-xdist workers (-n, --dist loadfile): each test module runs whole in one
# worker, in its own order, so its module fixtures run once; the modules are handed out as workers get free, the
# costliest first (FIRST, from the lane table of a serial run: a module that starts last must not be one of minutes).
# Each worker has its own session fixtures (a browser, a PostgreSQL server, the guest); the reference records are
# one folder for all of them (reference_store), so each instructor notebook still runs once per `make test`.
FIRST = ["test_cgroup_v2", "test_notebooks_execute", "test_package", "test_accessibility", "test_nbgrader",
         "test_serve", "test_offline_site", "test_sandbox", "test_attacks", "test_site_reader", "test_lab",
         "test_grade", "test_hub", "test_serve_trust", "test_shards", "test_release", "test_agent", "test_outfolder",
         "test_site"]


def _worker(config) -> str | None:
    """This process's xdist worker id (gw0, gw1, ...), or None in the controller or a run without workers."""
    return getattr(config, "workerinput", {}).get("workerid")


def _workers(config) -> int:
    return int(getattr(config.option, "numprocesses", 0) or 0) if not _worker(config) else 0


def pytest_collection_modifyitems(config, items):
    wanted = config.getoption("--lane")
    unknown = set(wanted) - {*LANES, OTHER}
    if unknown:
        raise pytest.UsageError(f"unknown lane(s) {sorted(unknown)}: {', '.join([*LANES, OTHER])}")
    if wanted:
        kept, dropped = [], []
        for item in items:
            (kept if lane_of(item) in wanted else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    if _worker(config):   # every worker collects the same list; the costliest modules first, each in its own order
        rank = {module: n for n, module in enumerate(FIRST)}
        items.sort(key=lambda item: rank.get(Path(item.nodeid.split("::", 1)[0]).stem, len(FIRST)))


# ---------------------------------------------------------------- shared fixtures


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
def built_site(pytestconfig) -> Path:
    """The book built with warnings as errors, as `make book` builds it, into _build/html: reused as it is when
    _build/html carries the stamp of exactly these inputs (book/_ext/site_build.py), else built once (the
    execution cache spares the pages whose code did not change). Its html root."""
    ready = os.environ.get(SUITE_SITE) if _worker(pytestconfig) else None
    if ready:   # the controller built or reused it before the workers started: no worker builds it again
        return Path(ready)
    result = _site()
    assert result["returncode"] == 0, f"jupyter-book build failed:\n{result['output'][-12000:]}"
    return result["html"]


def _site() -> dict:
    import fcntl

    import site_build  # book/_ext

    (ROOT / "_build").mkdir(exist_ok=True)
    with open(ROOT / "_build" / ".site-build.lock", "w") as lock:   # one build at a time into _build
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = site_build.build(ROOT, reuse=True, capture=True)
    SHARED["site build"] = (result["seconds"], "reused (make book's build of these inputs)" if result["reused"]
                            else "built")
    return result


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


@pytest.fixture(scope="session")
def site_tabs(browser, site_url):
    """Pages of the served site (tests/browser_tabs.py; its cheapest page, the folder listing of _static, keeps the
    renderer)."""
    from browser_tabs import SharedTabs

    tabs = SharedTabs(browser, f"{site_url}/_static/")
    yield tabs
    tabs.close()


@pytest.fixture(scope="session")
def postgres():
    """One PostgreSQL server for the session (tests/postgres_server.py), started when a test first needs it: each
    module that needs a gradebook or a queue makes a database of its own on it (postgres.database(name)), so no
    module's rows count in another's. Room for every module's connections (the services' workers, Slurm's shards)."""
    from postgres_server import postgres_server

    started = time.monotonic()
    with postgres_server(max_connections=200) as server:
        SHARED["PostgreSQL server"] = (time.monotonic() - started, "one for the session, a database per module")
        yield server


# the workers' one folder of reference records, made by the controller (no AGENTRL_ prefix: the site's
# fingerprint hashes every AGENTRL_* variable, book/_ext/execution_cache.py, and the workers reuse make book's site)
SUITE_REFERENCES = "SUITE_REFERENCE_STORE"
SUITE_SITE = "SUITE_SITE_HTML"   # the site the controller built or reused for the workers


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """In the controller of a run with workers, before they start (they inherit its environment): the folder every
    worker's reference_store uses (under the run's base temp folder, like each worker's own)."""
    if _workers(session.config):
        folder = session.config._tmp_path_factory.getbasetemp() / "references"
        folder.mkdir(exist_ok=True)
        os.environ[SUITE_REFERENCES] = str(folder)
        # the site once, here, for every worker: a worker that checked the stamp itself later in the run could find
        # it stale and build again into the _build/html the others are reading
        lanes = set(session.config.getoption("--lane"))
        if not lanes or lanes - {"quick"}:
            result = _site()
            if result["returncode"] == 0:   # else each worker's built_site builds it and fails with the log
                os.environ[SUITE_SITE] = str(result["html"])


@pytest.fixture(scope="session", autouse=True)
def reference_store(tmp_path_factory, pytestconfig):
    """AGENTRL_REFERENCE_STORE for the whole session: a folder only the suite's graders write (no sandbox sees it),
    so each instructor notebook runs once per session for every grading run that needs it. With workers it is one
    folder for all of them: the grader writes each record once, under a file lock (grader/grade/reference.py), and
    a worker that needs a record another is running waits for it."""
    from grader.grade.reference import STORE

    from course import ReferenceStore

    shared = os.environ.get(SUITE_REFERENCES) if _worker(pytestconfig) else None
    folder = Path(shared) if shared else tmp_path_factory.mktemp("references")
    before = os.environ.get(STORE)
    os.environ[STORE] = str(folder)
    store = ReferenceStore(folder)
    yield store
    if store.seen:
        SHARED["reference records"] = (0.0, f"{len(store.seen)} run once and shared: {', '.join(sorted(store.seen))}")
    if before is None:
        os.environ.pop(STORE, None)
    else:
        os.environ[STORE] = before


@pytest.fixture(autouse=True)
def _builtins_untouched():
    """No test leaves names in this process's builtins (the grader's code runs in it after: a `__builtins__` left
    there once made every feedback page of a serial run fail, grader/grade/explain.py)."""
    import builtins

    before = set(vars(builtins))
    yield
    added = set(vars(builtins)) - before
    for name in added:
        del vars(builtins)[name]
    assert not added, f"this test left {sorted(added)} in builtins (removed; see course.cell_namespace)"


@pytest.fixture(autouse=True)
def _signals_as_found():
    """Every test ends with this process's SIGINT and SIGTERM handlers and signal wake-up socket as it began
    (course.signals_kept: what nbclient leaves when a kernel did not start)."""
    from course import signals_kept

    with signals_kept():
        yield


@pytest.fixture(autouse=True)
def _references_untouched(reference_store):
    yield
    changed = reference_store.check()
    assert not changed, f"this test changed the session's reference records {changed} (removed; no test may)"


# What a worker found that the controller prints: its once-per-session work and the mutation table (test_nbgrader).
FROM_WORKERS: dict[str, list] = {"shared": [], "mutations": []}


def _mutation_rows() -> list[str]:
    module = sys.modules.get("test_nbgrader")
    return list(getattr(module, "MUTATION_TABLE", []))


def pytest_sessionfinish(session):
    if _worker(session.config):
        session.config.workeroutput["agentrl"] = {
            "shared": [[name, secs, how] for name, (secs, how) in SHARED.items()], "mutations": _mutation_rows()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """A worker finished: keep what it found for the summary (xdist's hook, in the controller)."""
    found = getattr(node, "workeroutput", {}).get("agentrl", {})
    FROM_WORKERS["shared"] += [(node.gateway.id, *entry) for entry in found.get("shared", [])]
    FROM_WORKERS["mutations"] += found.get("mutations", [])


def pytest_terminal_summary(terminalreporter):
    """Print the mutation table: every realistic wrong answer and the test cell that caught it."""
    rows = _mutation_rows() + FROM_WORKERS["mutations"]
    if rows:
        terminalreporter.section("mutation table (realistic wrong answers, graded by nbgrader)")
        terminalreporter.write_line("| assignment | wrong answer | test cell meant to catch it | that cell | total | |")
        terminalreporter.write_line("|---|---|---|---:|---:|---|")
        for row in rows:
            terminalreporter.write_line(row)


def _machine_cpu() -> tuple[float, float] | None:
    """The whole machine's busy and idle CPU seconds so far (/proc/stat; None where there is none)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    hz = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]            # idle, iowait
    return (sum(fields[:8]) - idle) / hz, idle / hz   # user nice system idle iowait irq softirq steal


class _LaneTable:
    """After pytest's slowest durations (trylast): the seconds of each lane (setup + call + teardown of its tests;
    once-per-session work is in the lane of the test that first needed it) and the session's shared work."""

    def __init__(self):
        self.machine_at_start = _machine_cpu()

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter):
        _lane_table(terminalreporter, self.machine_at_start)


def pytest_configure(config):
    config.pluginmanager.register(_LaneTable(), "agentrl-lanes")


def _cpu_seconds() -> float:
    """This process's CPU seconds (user + system) and those of its children it has waited for (kernels, sandboxes,
    the guest's qemu, servers: counted when they end)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item._cpu_started = _cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    item._cpu_started = _cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    item._cpu_started = _cpu_seconds()
    item._last_in_process = nextitem is None   # the session's fixtures end here: its servers, browser, guest
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report carries its CPU seconds (`cpu`, kept when a worker sends the report to the controller):
    the lane table adds them up beside the wall seconds, a measure that does not grow when the machine is busy."""
    outcome = yield
    started = getattr(item, "_cpu_started", None)
    if started is not None:
        report = outcome.get_result()
        report.cpu = _cpu_seconds() - started
        if call.when == "teardown" and getattr(item, "_last_in_process", False):
            report.cpu_lane = SESSION_END   # not the last test's: what the process's shared servers used


CPU_ROWS = 25   # the costliest test phases by CPU, printed under the lane table
# A child's CPU is counted when it is reaped: the session's servers and browser (PostgreSQL, Chromium, JupyterLab) at
# the last teardown of each process. The lane table puts that teardown's CPU in a row of its own.
SESSION_END = "session's servers"


def _lane_table(terminalreporter, machine_at_start=None) -> None:
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    counts: dict[str, int] = {}
    unlisted = set()
    for reports in terminalreporter.stats.values():
        for rep in reports:
            if not hasattr(rep, "duration") or not hasattr(rep, "when") or not hasattr(rep, "nodeid"):
                continue
            lane = lane_of(rep.nodeid)
            seconds[lane] = seconds.get(lane, 0.0) + rep.duration
            cpu_lane = getattr(rep, "cpu_lane", None) or lane
            cpu[cpu_lane] = cpu.get(cpu_lane, 0.0) + (getattr(rep, "cpu", None) or 0.0)
            if rep.when == "call" or (rep.when == "setup" and rep.outcome == "skipped"):
                counts[lane] = counts.get(lane, 0) + 1
            if lane == OTHER:
                unlisted.add(Path(rep.nodeid.split("::", 1)[0]).stem)
    if not seconds:
        return
    started = getattr(terminalreporter, "_sessionstarttime", None)
    terminalreporter.section("time per lane (setup + call + teardown; CPU: the test processes and their children)")
    order = [lane for lane in [*LANES, OTHER] if lane in seconds]
    for lane in order:
        terminalreporter.write_line(f"{lane:<18}{counts.get(lane, 0):>6} tests {seconds[lane]:>9.1f} s"
                                    f" {cpu.get(lane, 0.0):>9.1f} s CPU")
    if SESSION_END in cpu:
        terminalreporter.write_line(f"{SESSION_END:<18}{'':>12} {'':>11} {cpu[SESSION_END]:>9.1f} s CPU"
                                    " (reaped at each process's last teardown)")
    terminalreporter.write_line(f"{'all lanes':<18}{sum(counts.values()):>6} tests {sum(seconds.values()):>9.1f} s"
                                f" {sum(cpu.values()):>9.1f} s CPU"
                                + (f" (pytest's wall clock: {time.time() - started:.0f} s)" if started else ""))
    now = _machine_cpu()
    if machine_at_start and now:
        busy, idle = now[0] - machine_at_start[0], now[1] - machine_at_start[1]
        terminalreporter.write_line(
            f"{'the machine':<18}{'':>12} {'':>11} {busy:>9.1f} s CPU busy, {idle:.1f} s idle (/proc/stat: all of it, "
            f"also what no test process reaps, as Chromium's renderers and the grader's sandboxes)")
    costly = sorted(((rep.cpu, getattr(rep, "cpu_lane", None) or rep.when, rep.nodeid)
                     for reports in terminalreporter.stats.values() for rep in reports if getattr(rep, "cpu", None)),
                    reverse=True)[:CPU_ROWS]
    if costly:
        terminalreporter.write_line(f"the {len(costly)} phases that cost the most CPU (what a busy machine pays):")
        for secs, when, nodeid in costly:
            terminalreporter.write_line(f"{secs:>9.1f} s CPU {when:<8} {nodeid}")
    for name, (secs, how) in SHARED.items():
        terminalreporter.write_line(f"once per session: {name}: {how}" + (f", {secs:.1f} s" if secs else ""))
    for worker, name, secs, how in sorted(FROM_WORKERS["shared"]):
        terminalreporter.write_line(f"once per worker {worker}: {name}: {how}" + (f", {secs:.1f} s" if secs else ""))
    if unlisted:
        terminalreporter.write_line(f"modules in no lane (add them to LANES in tests/conftest.py): "
                                    f"{', '.join(sorted(unlisted))}")
