"""Hostile students: every attack on the grader we know of, graded by `make grade`'s real pipeline.

One class of exercise 1 submissions: honest students (controls) and attackers. Each attacker is a base
answer (the reference, a realistic wrong answer, or the untouched notebook) plus one trick, and knows
every path of the grading run (the strongest attacker). The class is graded once, in sandboxes.

- A trick that keeps the answer's values (hiding errors, lying return types, replaced machinery in the
  kernel, metadata) scores exactly what the base answer scores without it ("equal"); a trick that breaks
  the attacker's own test machinery can only cost the attacker points ("not_above").
- The honest students score what they score when graded alone.
- Nothing outlives the grading run: no process, no cgroup, no file outside the output folder; the
  submissions, the repository and the grader's files are byte-identical afterwards.
- Every attack is a row in report.md saying what was detected.
"""
from __future__ import annotations

import copy
import csv
import hashlib
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from course import ROOT, filled, mutated_fills, mutations, reference_fills, student_notebook
from grade import grade

A = "ex1_format_reward"
MARK = "agentrl-attack-marker"  # in every process an attacker starts, to find survivors
WRONG = "no re.DOTALL"  # the realistic wrong answer the forging attackers start from


@dataclass(frozen=True)
class Attack:
    name: str
    base: str          # reference | untouched | wrong
    code: str          # a cell added right after the answer cell ("{...}" filled with the run's paths)
    expect: str        # equal | not_above
    detected: str      # what report.md must say in the attacker's row
    where: str = "after_answer"   # after_answer | end (after the last test cell) | answer (appended to it) | meta


HOOK_CLEAR = """\
from IPython import get_ipython
from IPython.display import clear_output


def _hide(result):
    if result.error_in_exec is not None:
        clear_output()


get_ipython().events.register("post_run_cell", _hide)
"""
NO_TRACEBACK = """\
_ip = __import__("IPython").get_ipython()
_ip.showtraceback = lambda *a, **k: None
_ip._showtraceback = lambda *a, **k: None
"""
AST_SWALLOW = """\
import ast as _ast
_ip = getattr(__import__("IPy" + "thon"), "get_" + "ipython")()


class _Swallow(_ast.NodeTransformer):
    def visit_Module(self, node):
        handler = _ast.ExceptHandler(type=_ast.Name("BaseException", _ast.Load()), name=None, body=[_ast.Pass()])
        node.body = [_ast.Try(body=node.body or [_ast.Pass()], handlers=[handler], orelse=[], finalbody=[])]
        return _ast.fix_missing_locations(node)


getattr(_ip, "ast_" + "transformers").append(_Swallow())
"""
LYING_FLOAT = """\
_honest = format_reward


class _AlwaysEqual(float):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = float.__hash__


def format_reward(completion):
    return _AlwaysEqual(_honest(completion))
"""
BUILTINS = """\
_b = abs.__self__
_b.AssertionError = Warning
_b.any = lambda *a: False
_b.all = lambda *a: True
"""
SHADOW_CHECKS = """\
import os as _os
import sys as _sys
_os.makedirs("agentrl_ref/checks", exist_ok=True)
open("agentrl_ref/__init__.py", "w").close()
with open("agentrl_ref/checks/__init__.py", "w") as _f:
    _f.write("def run_test(*a, **k):\\n    print('✓')\\n"
             "def probe(*a, **k):\\n    pass\\n"
             "def probe_calls(*a, **k):\\n    pass\\n"
             "def check(*a, **k):\\n    pass\\n")
for _m in [m for m in _sys.modules if m.startswith("agentrl_ref")]:
    del _sys.modules[_m]
"""
FORGE_RECORDS = """\
import agentrl_ref.checks.probes as _p
_real_emit = _p._emit
_public = {"visible:ex1_format_reward.multi_line": 1.0,
           "visible:ex1_format_reward.seed_table": [1.0, 0.0, 0.0, 0.0, 1.0]}


def _emit(name, data):
    _real_emit(name, _public.get(name, data))   # the public answers where known, else the truth


_p._emit = _emit
"""
FORGE_DUPLICATE = """\
from IPython import get_ipython
from IPython.display import display

_MIME = "application/vnd.agentrl.probe+json"


def _forge(info):
    if "run_test" in info.raw_cell:
        display({_MIME: {"name": "visible:ex1_format_reward.multi_line", "value": 1.0}}, raw=True)


get_ipython().events.register("pre_run_cell", _forge)
"""
CALL_REFERENCE = """\
from agentrl_ref import format_reward as _reference


def format_reward(completion):
    return _reference(completion)
"""
GRADING_OFF = """\
import os as _os
_os.environ["AGENTRL_GRADING"] = "0"
"""
GRADEBOOK = """\
import sqlite3 as _sq
for _path in [{gradebook!r}, "../gradebook.db", "../../gradebook.db", "/gradebook.db"]:
    try:
        _db = _sq.connect(_path)
        _db.execute("UPDATE grade SET auto_score = 99")
        _db.commit()
        print("edited", _path)
    except Exception as _exc:
        print("cannot edit", _path, type(_exc).__name__)
"""
READ_SECRETS = """\
for _path in [{source!r}, {victim!r}, {expected_dir!r}]:
    try:
        print(open(_path).read()[:2000])
    except Exception as _exc:
        print("cannot read", _path, type(_exc).__name__)
import glob as _glob
print(_glob.glob("{repo}/grader/source/*/*.ipynb"), _glob.glob("/tmp/*"), _glob.glob("/var/tmp/*/*"))
"""
WRITE_OTHERS = """\
for _path in [{victim!r}, {victim_copy!r}, {config!r}, {repo_checks!r}, {own_original!r}]:
    try:
        with open(_path, "a") as _f:
            _f.write("\\nraise SystemExit('tampered')\\n")
        print("wrote", _path)
    except Exception as _exc:
        print("cannot write", _path, type(_exc).__name__)
"""
STARTUP_FILE = """\
import os as _os
for _home in [_os.path.expanduser("~"), "/root", {home!r}]:
    _d = _os.path.join(_home, ".ipython/profile_default/startup")
    try:
        _os.makedirs(_d, exist_ok=True)
        with open(_os.path.join(_d, "00-evil.py"), "w") as _f:
            _f.write("import builtins\\nbuiltins.format_reward = lambda c: 0.0\\n")
    except Exception as _exc:
        print("cannot write", _d, type(_exc).__name__)
"""
DETACHED = """\
import subprocess as _sp
_sp.Popen(["sh", "-c", "sleep 8; echo hacked > {grades}; sleep 1000 # {mark}"], start_new_session=True,
          stdin=_sp.DEVNULL, stdout=_sp.DEVNULL, stderr=_sp.DEVNULL)
import os as _os
if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        _os.execvp("sleep", ["sleep", "1001", "{mark}"])
    _os._exit(0)
"""
PIPE_HOLDER = """\
import subprocess as _sp
import sys as _sys
_sp.Popen("exec sleep 1000 # {mark}", shell=True, stdout=_sys.__stdout__.fileno(), stderr=_sys.__stderr__.fileno())
"""
OTHER_KERNELS = """\
import glob as _glob
import os as _os
_found = (_glob.glob("/var/tmp/agentrl-grader/*/conn/*") + _glob.glob("/tmp/*.json")
          + _glob.glob("/run/**/kernel-*.json", recursive=True))
print("connection files I can see:", _found)
import zmq as _zmq
for _f in _found:
    try:
        _s = _zmq.Context.instance().socket(_zmq.DEALER)
        _s.connect("ipc://" + _f)
        _s.send_multipart([b"hello"])
    except Exception as _exc:
        print("cannot reach", _f, type(_exc).__name__)
"""
NETWORK = """\
import socket as _socket
for _port in [{pg_port}, 22, 80, 8888]:
    try:
        _socket.create_connection(("127.0.0.1", _port), timeout=2).close()
        print("reached", _port)
    except Exception as _exc:
        print("no connection to", _port, type(_exc).__name__)
"""
MEMORY = """\
_hog = []
while True:
    _hog.append(bytearray(256 << 20))
"""
PROCESSES = """\
import subprocess as _sp
_kids = []
for _ in range(100):
    try:
        _kids.append(_sp.Popen(["sleep", "1000", "{mark}"]))
    except Exception as _exc:
        print("stopped at", len(_kids), type(_exc).__name__)
        break
"""
TMP_FILE = """\
try:
    with open("/tmp/big", "wb") as _f:
        for _ in range(1024):
            _f.write(b"x" * (1 << 20))
except OSError as _exc:
    print("stopped:", _exc)
"""
BIG_IMAGE = """\
import base64 as _b64
from IPython.display import display
display({"image/png": _b64.b64encode(b"\\x89PNG" + b"0" * (40 << 20)).decode()}, raw=True)
"""
IGNORE_SIGINT = """\
import signal as _signal
_signal.signal(_signal.SIGINT, _signal.SIG_IGN)
while True:
    pass
"""

ATTACKS = [
    # forged scores from inside the kernel
    Attack("hook-clears-errors", "wrong", HOOK_CLEAR, "equal", "改动 IPython 内核"),
    Attack("no-op-showtraceback", "wrong", NO_TRACEBACK, "equal", "改动 IPython 内核"),
    Attack("ast-transformer-swallows", "wrong", AST_SWALLOW, "equal", "动态执行代码"),
    Attack("float-subclass-always-equal", "wrong", LYING_FLOAT, "equal", "自定义比较"),
    Attack("builtins-through-abs-self", "wrong", BUILTINS, "equal", "改动 Python 内置对象"),
    Attack("shadow-checks-in-workdir", "wrong", SHADOW_CHECKS, "not_above", "改动导入机制"),
    Attack("forge-visible-records", "wrong", FORGE_RECORDS, "not_above", "改动测试代码"),
    Attack("forge-duplicate-record", "wrong", FORGE_DUPLICATE, "not_above", "疑似伪造"),
    Attack("call-the-reference", "untouched", CALL_REFERENCE, "equal", "可疑代码", where="answer_replace"),
    Attack("grading-env-off", "wrong", GRADING_OFF, "not_above", "读写文件"),
    # forged scores from metadata, no code
    Attack("tests-tagged-demo", "untouched", "demo", "equal", "标签", where="meta"),
    Attack("tests-tagged-skip-execution", "untouched", "skip-execution", "equal", "标签", where="meta"),
    Attack("answer-marked-locked", "wrong", "locked", "equal", "评分设置", where="meta"),
    Attack("web-page-untouched", "untouched", "page", "equal", "", where="page"),
    # reaching outside the notebook
    Attack("edit-gradebook", "reference", GRADEBOOK, "equal", "读写文件"),
    Attack("read-hidden-tests-and-others", "reference", READ_SECRETS, "equal", "读写文件"),
    Attack("write-others-and-originals", "reference", WRITE_OTHERS, "equal", "读写文件"),
    Attack("ipython-startup-file", "reference", STARTUP_FILE, "equal", "读写文件"),
    Attack("detached-process", "reference", DETACHED, "equal", "启动进程或线程"),
    Attack("talk-to-other-kernels", "reference", OTHER_KERNELS, "equal", "网络"),
    Attack("network-and-gradebook-port", "reference", NETWORK, "equal", "网络"),
    # resources
    Attack("memory-6gb", "reference", MEMORY, "equal", "内存", where="end"),
    Attack("hundred-processes", "reference", PROCESSES, "equal", "进程", where="end"),
    Attack("one-gb-in-tmp", "reference", TMP_FILE, "equal", "读写文件", where="end"),
    Attack("forty-mb-image", "reference", BIG_IMAGE, "equal", "输出过大", where="end"),
    Attack("child-holds-output-pipe", "reference", PIPE_HOLDER, "equal", "启动进程或线程"),
    Attack("kernel-ignores-sigint", "reference", IGNORE_SIGINT, "equal", "仍不结束", where="end"),
]
CONTROLS = {"reference": "reference", "untouched": "untouched", "wrong": "wrong"}


def _base(kind: str) -> nbformat.NotebookNode:
    if kind == "reference":
        return nbformat.reads(filled(A, reference_fills(A)), as_version=4)
    if kind == "untouched":
        return copy.deepcopy(student_notebook(A))
    changes, _ = mutations(A)[WRONG]
    return nbformat.reads(filled(A, mutated_fills(A, changes)), as_version=4)


def _index(nb, test) -> int:
    return next(i for i, c in enumerate(nb.cells) if test(c))


def _is_answer(cell) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get("solution"))


def _is_test(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution")


def _attacked(attack: Attack, paths: dict) -> str:
    if attack.where == "page":
        return (ROOT / "book" / f"{A}.ipynb").read_text(encoding="utf-8")
    nb = _base(attack.base)
    if attack.where == "meta":
        for cell in nb.cells:
            if attack.code in ("demo", "skip-execution") and _is_test(cell):
                cell.metadata["tags"] = cell.metadata.get("tags", []) + [attack.code]
            if attack.code == "locked" and _is_answer(cell):
                cell.metadata["nbgrader"]["locked"] = True
                cell.source += "\nimport sys\nsys.modules['agentrl_ref.checks'].run_test = lambda *a, **k: None\n"
        return nbformat.writes(nb)
    code = attack.code
    for key, value in paths.items():  # "{key!r}" and "{key}" only: the code has other braces too
        code = code.replace("{" + key + "!r}", repr(value)).replace("{" + key + "}", str(value))
    if attack.where == "answer_replace":
        cell = nb.cells[_index(nb, _is_answer)]
        cell.source = code
        return nbformat.writes(nb)
    at = _index(nb, _is_answer) + 1 if attack.where == "after_answer" else len(nb.cells)
    nb.cells.insert(at, nbformat.v4.new_code_cell(code))
    return nbformat.writes(nb)


def _fingerprint(*roots: Path) -> dict[str, str]:
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _survivors() -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if MARK in cmdline or cmdline.startswith(("sleep 1000", "sleep 1001")):
                found.append(f"{proc.name}: {cmdline}")
    return found


def _cgroups() -> list[str]:
    """This process's sandbox cgroups (named s<pid>-...; other graders may run on the machine)."""
    return [str(p) for c in ("memory", "pids", "cpuacct")
            for p in Path(f"/sys/fs/cgroup/{c}/agentrl-grader").glob(f"s{os.getpid()}-*") if p.is_dir()]


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    out = tmp_path_factory.mktemp("graded") / "out"
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()  # stands in for the PostgreSQL gradebook's port: must stay unreachable
    paths = {
        "gradebook": str(out / "course" / "gradebook.db"),
        "source": str(out / "course" / "source" / A / f"{A}.ipynb"),
        "victim": str(root / "control-reference" / A / f"{A}.ipynb"),
        "victim_copy": str(out / "course" / "submitted" / "control-reference" / A / f"{A}.ipynb"),
        "own_original": str(root / "write-others-and-originals" / A / f"{A}.ipynb"),
        "expected_dir": str(out / "grading" / "expected"),
        "config": str(out / "course" / "nbgrader_config.py"),
        "repo_checks": str(ROOT / "agentrl_ref" / "checks" / "__init__.py"),
        "repo": str(ROOT),
        "home": str(Path.home()),
        "grades": str(out / "grades.csv"),
        "mark": MARK,
        "pg_port": server.getsockname()[1],
    }
    for kind in CONTROLS:
        path = root / f"control-{kind}" / A / f"{A}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(_base(kind)), encoding="utf-8")
    for attack in ATTACKS:
        path = root / attack.name / A / f"{A}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(_attacked(attack, paths), encoding="utf-8")
    guarded = [ROOT / "agentrl_ref", ROOT / "grader", root]
    before = _fingerprint(*guarded)
    home_before = sorted(os.listdir(Path.home()))
    try:
        grade(root, out, cell_timeout=15, notebook_timeout=90)
        grades_after = (out / "grades.csv").read_bytes()
        time.sleep(10)  # the detached process would have rewritten grades.csv by now
    finally:
        server.close()
    rows = {r["student_id"]: r for r in csv.DictReader(open(out / "grades.csv", encoding="utf-8", newline=""))}
    cells: dict = {}
    for r in csv.DictReader(open(out / "cells.csv", encoding="utf-8", newline="")):
        cells.setdefault(r["student_id"], {})[r["grade_id"]] = float(r["score"])
    alone = tmp_path_factory.mktemp("alone")
    for kind in CONTROLS:
        path = alone / "class" / f"control-{kind}" / A / f"{A}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(_base(kind)), encoding="utf-8")
    grade(alone / "class", alone / "out", cell_timeout=15, notebook_timeout=90)
    alone_cells: dict = {}
    for r in csv.DictReader(open(alone / "out" / "cells.csv", encoding="utf-8", newline="")):
        alone_cells.setdefault(r["student_id"], {})[r["grade_id"]] = float(r["score"])
    return dict(out=out, root=root, rows=rows, cells=cells, alone=alone_cells, before=before, guarded=guarded,
                grades_after=grades_after, home_before=home_before,
                report=(out / "report.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attacker_scores_what_the_answer_alone_scores(attacked, attack):
    got, base = attacked["cells"][attack.name], attacked["cells"][f"control-{attack.base}"]
    assert set(got) == set(base)
    if attack.expect == "equal":
        assert got == base, {g: (got[g], base[g]) for g in got if got[g] != base[g]}
    else:
        assert all(got[g] <= base[g] for g in got), {g: (got[g], base[g]) for g in got if got[g] > base[g]}


@pytest.mark.parametrize("attack", [a for a in ATTACKS if a.detected], ids=lambda a: a.name)
def test_every_attack_is_a_row_in_the_report(attacked, attack):
    rows = [line for line in attacked["report"].splitlines() if line.startswith(f"| {attack.name} |")]
    assert rows and attack.detected in rows[0], rows


def test_honest_students_keep_their_scores(attacked):
    for kind in CONTROLS:
        assert attacked["cells"][f"control-{kind}"] == attacked["alone"][f"control-{kind}"], kind
    top = float(attacked["rows"]["control-reference"]["max_score"])
    assert sum(attacked["cells"]["control-reference"].values()) == top


def test_nothing_outlives_the_run(attacked):
    assert not _survivors(), _survivors()
    assert not _cgroups(), _cgroups()
    assert (attacked["out"] / "grades.csv").read_bytes() == attacked["grades_after"]
    assert sorted(os.listdir(Path.home())) == attacked["home_before"]
    assert not list(Path("/var/tmp/agentrl-grader").glob(f"s{os.getpid()}-*"))


def test_originals_repo_and_grader_are_untouched(attacked):
    after = _fingerprint(*attacked["guarded"])
    changed = sorted(set(after.items()) ^ set(attacked["before"].items()))
    assert not changed, changed


def test_secrets_never_reach_the_feedback(attacked):
    """The feedback shows code and verdicts: no hidden test code, nothing the kernel printed (which could
    carry what the student's code saw of the hidden tests). The instructor's copy keeps everything."""
    page = attacked["out"] / "feedback" / "read-hidden-tests-and-others" / A / f"{A}.html"
    text = page.read_text(encoding="utf-8")
    assert "BEGIN HIDDEN TESTS" not in text and "random_strings" not in text
    assert "NotFoundError" not in text and "评分：本单元通过" in text  # no printed output, the verdicts
    kept = attacked["out"] / "course" / "autograded" / "read-hidden-tests-and-others" / A / f"{A}.ipynb"
    assert "cannot read" in kept.read_text(encoding="utf-8") and "NotFoundError" in kept.read_text(encoding="utf-8")


def test_resource_attacks_are_named_in_chinese(attacked):
    notes = {a.name: attacked["rows"][a.name]["notes"] for a in ATTACKS if a.where == "end"}
    assert "内存超过上限" in notes["memory-6gb"]
    assert "进程数超过上限" in notes["hundred-processes"]
    assert "输出过大" in notes["forty-mb-image"]
    assert attacked["rows"]["kernel-ignores-sigint"]["status"] == "timeout"


def test_report_says_the_sandbox_was_on(attacked):
    assert attacked["report"].splitlines()[2].startswith("**沙箱：已启用**")


def test_no_sandbox_is_refused_unless_asked(tmp_path, monkeypatch):
    import sandbox

    def unavailable():
        raise sandbox.SandboxUnavailable("bwrap missing (simulated)")

    monkeypatch.setattr(sandbox, "check_available", unavailable)
    (tmp_path / "class" / "s" / A).mkdir(parents=True)
    (tmp_path / "class" / "s" / A / f"{A}.ipynb").write_text(nbformat.writes(_base("untouched")), encoding="utf-8")
    with pytest.raises(SystemExit) as err:
        grade(tmp_path / "class", tmp_path / "out")
    assert "无法启动评分沙箱" in str(err.value) and "--unsafe-no-sandbox" in str(err.value)
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_unsafe_mode_says_so_and_still_judges_outside(tmp_path):
    for kind in ("reference", "wrong"):
        path = tmp_path / "class" / kind / A / f"{A}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(_base(kind)), encoding="utf-8")
    grade(tmp_path / "class", tmp_path / "out", sandbox=False, cell_timeout=15, notebook_timeout=90)
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "--unsafe-no-sandbox" in report.splitlines()[2]
    rows = {r["student_id"]: r for r in csv.DictReader(open(tmp_path / "out" / "grades.csv", encoding="utf-8"))}
    assert float(rows["reference"]["score"]) == float(rows["reference"]["max_score"]) > float(rows["wrong"]["score"])


def test_postgres_gradebook_has_a_random_password_never_on_a_command_line():
    from postgres import local_postgres

    with local_postgres() as db_url:
        password = db_url.split(":")[2].split("@")[0]
        assert len(password) >= 20
        out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert password not in out
        from sqlalchemy import create_engine
        from sqlalchemy.exc import OperationalError

        create_engine(db_url).connect().close()
        with pytest.raises(OperationalError):
            create_engine(db_url.replace(password, "wrong-password")).connect()


ANSWER_MODULE = {"ex1_format_reward": "format_reward.py", "ex2_verifiable_reward": "verifiable_reward.py",
                 "ex3_loss_mask": "loss_mask.py", "ex4_async_rollout": "rollout_buffer.py",
                 "ex5_composite_reward": "composite_reward.py", "ex6_token_credit": "token_credit.py",
                 "ex7_agent_grpo": "agent/loss.py"}


@pytest.mark.parametrize("assignment", sorted(ANSWER_MODULE))
def test_grading_package_holds_no_answer(assignment, tmp_path):
    """The copy of agentrl_ref a grading kernel sees: never the assignment's own answer, never the cloze
    cards (every answer is in them), always the checks."""
    import execute

    root = execute.grading_package(assignment, tmp_path) / "agentrl_ref"
    files = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert ANSWER_MODULE[assignment] not in files
    assert "teaching/cloze_snippets.json" not in files
    assert {"__init__.py", "checks/__init__.py", "checks/probes.py"} <= files
    text = "".join((root / f).read_text(encoding="utf-8") for f in files if f.endswith(".py"))
    assert "def clipped_pg_loss" not in text  # exercise 7's answer lives in agent/loss.py only
