"""README is a quick start and the guides in the book keep their commands working.

Every `make TARGET VAR=…` in README and the guide pages names a Makefile target and variables the Makefile reads;
every option given to `python -m grader` (or to the grading service on the hub page) is one its --help lists; every
repository path they name in backticks exists; every Markdown link in README reaches a file.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
import sys

import pytest

from course import ROOT

README = ROOT / "README.md"
GUIDES = ["book/guide_instructors.md", "book/guide_hub.md", "book/guide_maintainers.md", "book/benchmarks.md"]
SUBCOMMANDS = ("grade", "report", "serve", "release", "doctor", "sandbox")
# options on the instructors' page that belong to other programs, each with the program the page names beside it
FOREIGN = {"--cpus-per-task": "sbatch", "--dependency": "afterok", "--mem": "sbatch", "--partition": "sbatch",
           "--user": "systemd-run", "--scope": "systemd-run", "--strict": "kubernetes-validate"}
TOP = ("agentrl_ref/", "grader/", "book/", "bench/", "tests/", "binder/", "notebooks/")


def _text(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


@functools.cache
def _targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*):", _text("Makefile"), flags=re.M))


@functools.cache
def _options(sub: str) -> set[str]:
    out = subprocess.run([sys.executable, "-m", "grader", sub, "--help"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return set(re.findall(r"--[a-z][a-z-]*[a-z]", out))


def test_readme_is_a_quick_start():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README has {len(lines)} lines; the guides belong in the book"
    text = "\n".join(lines)
    assert "make book" in text and "make test" in text
    for guide in GUIDES:
        assert f"]({guide})" in text, f"README does not point at {guide}"


def test_every_guide_is_a_page_of_the_book():
    toc = _text("_toc.yml")
    for guide in GUIDES:
        assert f"file: {guide.removesuffix('.md')}\n" in toc, guide


@pytest.mark.parametrize("rel", ["README.md", *GUIDES])
def test_every_make_command_names_a_target_and_variables_it_reads(rel):
    text, makefile = _text(rel), _text("Makefile")
    # a command: in backticks, or at the start of a line in a shell block (after sudo or VAR=… settings)
    commands = re.findall(r"(?:`|^|^sudo |\S+=\S+ )make ([a-z][\w-]*)((?: [A-Z_]+=\S*)*)", text, flags=re.M)
    assert commands or rel == "book/benchmarks.md", f"{rel} names no make command"
    for target, assignments in commands:
        assert target in _targets(), f"{rel}: `make {target}` is not a Makefile target"
        for var in re.findall(r"([A-Z_]+)=", assignments):
            assert re.search(rf"\b{var}\b", makefile), f"{rel}: `make {target} {var}=…`: the Makefile never reads {var}"


def test_the_grader_options_the_guides_give_exist():
    subs = re.findall(r"python -m grader (\w+)", _text("README.md") + "".join(_text(g) for g in GUIDES))
    assert subs and set(subs) <= set(SUBCOMMANDS), subs
    hub = set(re.findall(r"--[a-z][a-z-]*[a-z]", _text("book/guide_hub.md")))
    assert hub and hub <= _options("serve") | _options("doctor"), hub - _options("serve") - _options("doctor")
    page = _text("book/guide_instructors.md")
    mine = set(re.findall(r"--[a-z][a-z-]*[a-z]", page)) - set(FOREIGN)
    known = _options("grade") | _options("doctor") | _options("sandbox") | _options("report")
    assert mine and mine <= known, mine - known
    for option, program in FOREIGN.items():
        if option in page:
            assert program in page, f"{option} is said to be {program}'s, but the page never names {program}"


@pytest.mark.parametrize("rel", ["README.md", *GUIDES])
def test_every_path_named_exists(rel):
    missing = []
    for path in re.findall(r"`([^`\s]+)`", _text(rel)):
        path = path.rstrip("/.,;:").split("::")[0]
        if not path.startswith(TOP) or re.search(r"[<>*…{}$]", path) or path.endswith(".html"):
            continue
        if not (ROOT / path).exists():
            missing.append(path)
    assert not missing, f"{rel} names paths that do not exist: {sorted(set(missing))}"


def test_readme_links_reach_files():
    for target in re.findall(r"\]\(([^)#\s]+)\)", README.read_text(encoding="utf-8")):
        if "://" not in target:
            assert (ROOT / target).is_file(), target


def _limits_table() -> list[tuple[str, str]]:
    """(the default column, the where-to-change column) of each row of the instructors' page's 评分的限额 table."""
    page = _text("book/guide_instructors.md")
    section = page.split("### 评分的限额", 1)[1].split("\n### ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| ")]
    assert rows[0][:2] == ["限额", "默认"], rows[0]
    return [(row[1], row[3]) for row in rows[1:]]


def _code_limits() -> dict[str, int]:
    """Every limit of the grader, by the name the table gives, with its default in the code."""
    import dataclasses
    import inspect

    from grader.grade import execute, submissions
    from grader.grade.outputs import OutputCaps
    from grader.grade.pipeline import grade
    from grader.sandbox import SandboxLimits

    defaults = inspect.signature(grade).parameters
    limits = {"--cell-timeout": defaults["cell_timeout"].default,
              "--notebook-timeout": defaults["notebook_timeout"].default,
              "--memory-mb": SandboxLimits().memory_mb,
              "IOPUB_SECONDS": execute.IOPUB_SECONDS, "ATTEMPTS": execute.ATTEMPTS,
              "MAX_NOTEBOOK_BYTES": submissions.MAX_NOTEBOOK_BYTES, "MAX_ID_LENGTH": submissions.MAX_ID_LENGTH}
    for f in dataclasses.fields(SandboxLimits):
        limits[f"SandboxLimits.{f.name}"] = f.default
    limits["SandboxLimits.address_space_mb"] = SandboxLimits().effective_address_space_mb - SandboxLimits().memory_mb
    for f in dataclasses.fields(OutputCaps):
        limits[f"OutputCaps.{f.name}"] = f.default
    for name, trait in execute.GuardedExecute.class_own_traits().items():
        if name.startswith("max_"):
            limits[f"GuardedExecute.{name}"] = trait.default_value
    assert execute.SandboxedExecute.class_traits()["timeout"].default_value == limits["--cell-timeout"]
    assert execute.SandboxedExecute.class_traits()["notebook_timeout"].default_value == limits["--notebook-timeout"]
    return limits


def test_the_instructors_page_names_every_limit_of_the_grader_with_its_default():
    """One table names every limit (the sandbox's, the timeouts, the output caps, the hand-in checks) and each
    default there is the code's: a new limit, or a changed default, fails here until the page says it."""
    code = _code_limits()
    named = []
    for default, where in _limits_table():
        names = [n for n in re.findall(r"`([^`]+)`", where) if n in code]
        assert names, f"a row names no limit of the code: {where}"
        named += names
        shown = [int(n) for n in re.findall(r"\d+", default)]
        if names == ["--memory-mb", "SandboxLimits.memory_mb"]:
            names = names[:1]
        want = [code[n] for n in names]
        assert shown == want, f"{where}: the page says {default}, the code {want}"
    assert sorted(set(code) - set(named)) == [], "limits of the grader the page does not name"
    assert len(named) == len(set(named)), "a limit named twice"
    options = {n for n in code if n.startswith("--")}
    assert options <= _options("grade"), options - _options("grade")
    makefile = _text("Makefile")
    for var, option in (("CELL_TIMEOUT", "--cell-timeout"), ("NOTEBOOK_TIMEOUT", "--notebook-timeout"),
                        ("MEMORY_MB", "--memory-mb")):
        assert f"{option} $({var})" in makefile, f"make grade does not pass {var} as {option}"


# ---------------------------------------------------------------- the other commands the pages give

PYTHON_COMMAND = re.compile(r"(?:\.venv/bin/)?python3? (-m [\w.]+|[\w./-]+\.py)((?: (?:\"[^\"\n`]*\"|[^\s`\"]+))*)")


def _python_commands() -> list[tuple[str, str, str]]:
    """(page, program, arguments) for every `python -m MODULE …` and `python SCRIPT.py …` in README and the guides
    (`python -m grader` is checked above, with its subcommands' options)."""
    found = []
    for rel in ["README.md", *GUIDES]:
        for program, args in PYTHON_COMMAND.findall(_text(rel)):
            if program != "-m grader":
                found.append((rel, program, args))
    return found


def _argparse_options(script) -> set[str]:
    """The option strings a script's parser knows (its add_argument calls), read without running it."""
    import ast

    options = {"--help", "-h"}
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            options |= {a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("-")}
    return options


@functools.cache
def _help(script: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}   # as `make bench-grading` runs bench/grading.py
    return subprocess.run([sys.executable, script, "--help"], cwd=ROOT, env=env, capture_output=True, text=True)


def test_the_pages_python_commands_name_what_exists():
    """`python -m pytest tests/…` names test files and lanes that exist; `python -m X` a module this venv has;
    `python SCRIPT.py --option` a script whose --help works and lists the option."""
    import importlib.util

    from conftest import LANES

    commands = _python_commands()
    assert any(program.endswith(".py") for _, program, _ in commands), commands
    for rel, program, args in commands:
        options = set(re.findall(r"(?<![\w-])--?[a-z][\w-]*", args))
        if program == "-m pytest":
            for path in re.findall(r"tests/[\w/]+\.py", args):
                assert (ROOT / path).is_file(), f"{rel}: {path}"
            for lane in re.findall(r'--lane (?:"([^"]+)"|(\S+))', args):
                assert (lane[0] or lane[1]) in LANES, f"{rel}: no lane {lane}"
        elif program.startswith("-m "):
            assert importlib.util.find_spec(program[3:]), f"{rel}: python {program}: no such module"
        else:
            assert (ROOT / program).is_file(), f"{rel}: python {program}: no such file"
            known = _argparse_options(ROOT / program)
            assert options <= known, f"{rel}: python {program} {args}: {sorted(options - known)} unknown"
            result = _help(program)
            assert result.returncode == 0 and "usage:" in result.stdout, (program, result.stderr[-2000:])
            assert options <= set(re.findall(r"--?[a-z][\w-]*", result.stdout)), (program, result.stdout)


def test_the_commands_the_benchmarks_page_shows_still_take_their_options():
    """Each section of the benchmarks page shows the command that made its record (bench/report.py): its script
    still exists and still takes those options."""
    import shlex

    import report  # bench/

    for name in report.SOURCES:
        rec = report.load(name)
        if rec is None:
            continue
        python, script, *args = shlex.split(rec["command"])
        assert python == "python" and script == report.SOURCES[name][1] and (ROOT / script).is_file(), rec["command"]
        given = {a.split("=")[0] for a in args if a.startswith("-")}
        assert given <= _argparse_options(ROOT / script), (name, given - _argparse_options(ROOT / script))
