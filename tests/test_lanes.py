"""The suite's lanes (tests/conftest.py LANES): every test module is in exactly one, so `make test` prints where each
second goes and `make test-quick` knows what it leaves out; `make test` runs every lane, `make test-quick` the
quick one."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from conftest import FIRST, LANES, OTHER, lane_of

TESTS = Path(__file__).resolve().parent
MODULES = sorted(p.stem for p in TESTS.glob("test_*.py"))


def test_every_test_module_is_in_exactly_one_lane():
    listed = Counter(module for modules in LANES.values() for module in modules)
    assert [m for m in MODULES if m not in listed] == [], "add these modules to LANES in tests/conftest.py"
    assert [m for m, n in listed.items() if n > 1] == [], "a module in two lanes is counted twice"
    assert sorted(set(listed) - set(MODULES)) == [], "LANES names modules that do not exist"
    assert OTHER not in LANES
    assert {lane_of(f"tests/{m}.py::test_x") for m in MODULES} == set(LANES)   # no lane is empty, none is "other"


def test_make_test_runs_every_lane_and_test_quick_the_quick_one():
    makefile = (TESTS.parent / "Makefile").read_text(encoding="utf-8")
    recipes = dict(re.findall(r"^(test|test-quick):.*\n\t(.*)", makefile, re.M))
    assert "-m pytest tests " in recipes["test"] and "--lane" not in recipes["test"], recipes["test"]
    assert "--durations" in recipes["test"]              # the slowest tests, beside the lane table (conftest)
    assert "-m pytest tests " in recipes["test-quick"] and re.search(r"--lane quick\b", recipes["test-quick"])


def test_make_test_runs_whole_modules_in_workers_the_costliest_first():
    makefile = (TESTS.parent / "Makefile").read_text(encoding="utf-8")
    recipe = dict(re.findall(r"^(test):.*\n\t(.*)", makefile, re.M))["test"]
    assert "-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder" in recipe, recipe   # a module in one worker
    assert re.search(r"^TEST_WORKERS \?= [0-9]", makefile, re.M)   # 0: one process
    assert [m for m in FIRST if m not in MODULES] == [] and len(set(FIRST)) == len(FIRST), FIRST


def test_the_lane_table_counts_the_whole_machine_too():
    """Its last line is the machine's own count (/proc/stat): what no test process reaps is there and nowhere else."""
    from conftest import _machine_cpu

    before = _machine_cpu()
    sum(i * i for i in range(2_000_000))
    after = _machine_cpu()
    assert before and after and after[0] > before[0] and after[1] >= before[1], (before, after)
