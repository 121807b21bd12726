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

import base64
import html
import copy
import csv
import os
import random
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from course import (
    ROOT, busy_processes_cell, filled, mutated_fills, mutations, reference_fills, solution_lines, student_notebook,
)
from file_tricks import FILE_TRICKS, make_file_tricks
from fingerprint import fingerprint
from grader.grade.pipeline import grade
from grader.grade.report import csv_text
from grader.grade.submissions import printable
from grader.grade.marks import verdict_outputs
from notebook_fuzz import FILE_KINDS, ODD_NAMES, make_file, mutate_json

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
        _os.execvp("sleep", ["sleep", "1001"])
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
_found = (_glob.glob("/var/tmp/agentrl-grader*/*/conn/*") + _glob.glob("/var/tmp/agentrl-grader*/*/scratch/conn/*")
          + _glob.glob("/tmp/*.json")
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
        _kids.append(_sp.Popen(["sleep", "1000"]))
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
# messages the kernel sends that nbclient cannot handle (each raised out of nbclient before)
MALFORMED_MESSAGES = """\
_ip = get_ipython()
_send = _ip.kernel.session.send
_parent = _ip.kernel.get_parent("shell")
for _kind, _content in [("stream", {"text": "x"}), ("error", {"ename": "E"}),
                        ("display_data", {"data": "notadict", "metadata": {}}),
                        ("display_data", {"data": {"text/plain": 1}}),
                        ("execute_result", {"data": {"text/plain": "x"}, "metadata": {}}),
                        ("stream", {"name": "stdout", "text": ["a", 1]}),
                        ("display_data", {"data": {"text/plain": "x"}, "metadata": {},
                                          "transient": {"display_id": ["x"]}}),
                        ("bogus", {})]:
    _send(_ip.kernel.iopub_socket, _kind, _content, parent=_parent)
import time as _t
_t.sleep(0.5)
"""
# everything a notebook can display that a browser would run, load or follow (sanitize.py)
ACTIVE_OUTPUTS = """\
from IPython.display import HTML, SVG, Javascript, Markdown, display
_bad = ('<script>window.__xss.push("html-script")</script><img src=x onerror="window.__xss.push(1)">'
        '<a href="javascript:window.__xss.push(2)">j</a><iframe src="https://evil.example/frame"></iframe>'
        '<img src="https://evil.example/pixel.png"><style>@import url(https://evil.example/x.css);</style>')
display(HTML(_bad))
display(Javascript("window.__xss.push('javascript-output')"))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="window.__xss.push(3)"><script>window.__xss.push(4)'
            '</script></svg>'))
display(Markdown("[m](javascript:window.__xss.push(5)) ![p](https://evil.example/md.png) " + _bad))
display({"image/png": "iVBORw0KGgo=", "text/html": _bad}, raw=True,
        metadata={"image/png": {"width": "1 onload=window.__xss.push(6)"}, "text/html": {"isolated": True}})
display({"application/vnd.jupyter.widget-view+json": {"model_id": "x", "version_major": 2, "version_minor": 0}},
        raw=True)
"""
MARKDOWN_PAYLOAD = (
    "# 我的笔记\n\n<script>window.__xss.push('md-script')</script>\n\n<img src=x onerror=\"window.__xss.push(7)\">\n\n"
    "[点我](javascript:window.__xss.push(8)) <a href=\"JaVaScRiPt:window.__xss.push(9)\">也点我</a>\n\n"
    "<svg onload=\"window.__xss.push(10)\"></svg> ![像素](https://evil.example/md-pixel.png)\n\n"
    "$\\href{javascript:window.__xss.push(11)}{x}$ <iframe src=\"https://evil.example/f\"></iframe>\n\n"
    "<meta http-equiv=\"refresh\" content=\"0;url=https://evil.example/\"><base href=\"https://evil.example/\">\n\n"
    "![贴图](attachment:pasted.png) ![矢量](attachment:vector.svg)\n"
)
# a student function that makes any value it was called with appear in every text it can reach: its
# return value, its exception's message and class name, its prints (the marker is built at run time,
# so it is not in the code the feedback shows)
LEAK_INPUTS = """\
import base64 as _b64
_SNOW = chr(0x2603)


def format_reward(completion):
    text = _SNOW + _b64.b64encode(str(completion).encode()).decode() + _SNOW + str(completion)
    print(text)
    raise type("Leak" + _SNOW + str(abs(hash(completion)) % 997), (Exception,), {})(text)
"""
# remembers every input (hidden ones too) and, after every cell, shows them in an output that claims to be the
# grader's verdict (its metadata), in cells whose metadata claims the same (the file): the page must show neither
CLAIM_VERDICT = """\
from IPython import get_ipython
from IPython.display import display
_honest, _seen = format_reward, []


def format_reward(completion):
    _seen.append(str(completion))
    return _honest(completion)


def _claim(result):
    display({"text/plain": chr(0x2604) + repr(_seen)}, raw=True, metadata={"agentrl_verdict": True})


get_ipython().events.register("post_run_cell", _claim)
"""
# remembers the inputs the hidden tests call it with (they call through probe_calls, the visible tests
# through run_test: it looks at its callers), and hands them back as the observation of the next visible
# test, whose machinery it patches to report a pass: the recorded value differs from the reference's, and
# a verdict that quoted it would carry the hidden inputs out
REMEMBER_HIDDEN = """\
import sys as _sys
import agentrl_ref.checks as _checks
_honest, _hidden, _run_one = format_reward, [], _checks._run_one


def format_reward(completion):
    frame, callers = _sys._getframe(1), set()
    while frame is not None:
        callers.add(frame.f_code.co_name)
        frame = frame.f_back
    if "run_test" not in callers and isinstance(completion, str):
        _hidden.append(completion)
    return _honest(completion)


def _leaking(test, objects):
    ok, message, observed, details = _run_one(test, objects)
    return (True, "", " | ".join(_hidden)[-300:], details) if _hidden else (ok, message, observed, details)


_checks._run_one = _leaking
"""
FILL_WORKDIR = """\
import os as _os
_made = 0
try:
    for _i in range(100_000):
        open(f"f{_i}", "w").close()
        _made += 1
except OSError as _exc:
    print("stopped after", _made, _exc.errno)
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
    Attack("fill-the-workdir", "reference", FILL_WORKDIR, "equal", "工作目录写满了", where="end"),
    # the file, not the code (issue: grades that survive any file)
    Attack("malformed-kernel-messages", "reference", MALFORMED_MESSAGES, "equal", "无法处理的消息"),
    Attack("active-outputs", "reference", ACTIVE_OUTPUTS, "equal", ""),
    Attack("active-markdown", "reference", MARKDOWN_PAYLOAD, "equal", "不存在的附件", where="markdown"),
    Attack("raw-html-cell", "reference", "<script>window.__xss.push('raw')</script>", "equal", "", where="raw"),
    Attack("leak-hidden-inputs", "untouched", LEAK_INPUTS, "equal", "", where="answer_replace"),
    Attack("remember-hidden-inputs", "reference", REMEMBER_HIDDEN, "not_above", "隐藏测试的字符串"),
    Attack("claim-to-be-the-verdict", "reference", CLAIM_VERDICT, "equal", "改动 IPython 内核"),
    Attack("answer-cell-deleted", "reference", "answer", "equal_untouched", "答案单元恢复为空白", where="delete"),
    Attack("metadata-not-a-dict", "reference", "nbgrader", "equal", "", where="meta"),
]
CONTROLS = {"reference": "reference", "untouched": "untouched", "wrong": "wrong"}


@dataclass(frozen=True)
class FileAttack:
    """A hand-in whose trick is the file itself: its kind, its place, its name."""
    row: tuple[str, str]   # (student as grades.csv shows it, assignment) of the row that reports it
    status: str            # what the row says
    note: str              # what its notes must say
    score: str = "zero"    # zero | full (a name that is odd but allowed is graded as usual)


FILE_ATTACKS = {   # the file tricks (tests/file_tricks.py), and names a spreadsheet or a terminal would run
    **{student: FileAttack((student, A if trick.of_assignment else ""), trick.status, trick.note)
       for student, trick in FILE_TRICKS.items()},
    "bell\x07name": FileAttack(("bell\\x07name", A), "invalid", "控制字符"),
    "=2+5": FileAttack(("'=2+5", A), "ok", "", score="full"),
    "@SUM(1+1)": FileAttack(("'@SUM(1+1)", A), "ok", "", score="full"),
}


def _make_file_attacks(root: Path) -> None:
    reference = nbformat.writes(_base("reference"))
    make_file_tricks(root, A, reference, honest=root / "control-reference",
                     instructor=ROOT / "grader" / "source" / A / f"{A}.ipynb")
    for student in ("bell\x07name", "=2+5", "@SUM(1+1)"):
        make_file(root / student / A / f"{A}.ipynb", reference, "file")


FUZZ_FILES = 14   # randomly damaged hand-ins in the class, seeded (the same class on every run)


def _make_fuzz_files(root: Path) -> list[Path]:
    """Hand-ins damaged at random (tests/notebook_fuzz.py): structure, file kind, name. Returns their paths."""
    rng = random.Random(20261201)
    made = []
    for i in range(FUZZ_FILES):
        student = f"fuzz-{i:02d}" + (rng.choice(ODD_NAMES) if i % 3 == 0 else "")
        text = mutate_json(filled(A, reference_fills(A)), rng, rng.randint(1, 3))
        kind = FILE_KINDS[i % len(FILE_KINDS)]
        other = root / "control-untouched" / A / f"{A}.ipynb" if kind == "symlink" else (
            root / "hardlink-twin-a" / A / f"{A}.ipynb" if kind == "hardlink" else None)
        path = root / student / A / f"{A}.ipynb" if i % 2 else root / f"{student}_{A}.ipynb"
        try:
            make_file(path, text, kind, other=other)
        except OSError:
            continue   # a name this file system refuses
        made.append(path)
    return made


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
    if attack.where == "delete":
        nb.cells = [c for c in nb.cells if not _is_answer(c)]
        return nbformat.writes(nb)
    if attack.where in ("markdown", "raw"):
        make = nbformat.v4.new_markdown_cell if attack.where == "markdown" else nbformat.v4.new_raw_cell
        cell = make(attack.code)
        if attack.where == "raw":
            cell.metadata["format"] = "text/html"
        else:
            cell.attachments = {"vector.svg": {"image/svg+xml": base64.b64encode(
                b'<svg xmlns="http://www.w3.org/2000/svg" onload="window.__xss.push(12)"/>').decode()}}
        nb.cells.insert(_index(nb, _is_answer) + 1, cell)
        return nbformat.writes(nb)
    if attack.where == "meta" and attack.code == "nbgrader":   # a cell's nbgrader metadata not a dict
        for cell in nb.cells:
            if _is_test(cell) and cell.metadata["nbgrader"]["grade_id"] == "test_multiline":
                cell.metadata["nbgrader"] = "broken"
        return nbformat.writes(nb)
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
    if attack.code is CLAIM_VERDICT:   # the file claims it too: every code cell's last output is the grader's
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.metadata["agentrl_verdict"] = 1
    return nbformat.writes(nb)


def _survivors() -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            # ours: the marker, or a `sleep 1000`/`sleep 1001` that lost it to exec (not another program's sleep)
            if MARK in cmdline or cmdline.split() in (["sleep", "1000"], ["sleep", "1001"]):
                found.append(f"{proc.name}: {cmdline}")
    return found


def _cgroups() -> list[str]:
    """This process's sandbox groups (named s<pid>-...; other graders may run on the machine)."""
    from grader.sandbox import controls

    return [g for c in controls() for g in c.session_groups() if Path(g).name.startswith(f"s{os.getpid()}-")]


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
    _make_file_attacks(root)
    fuzzed = _make_fuzz_files(root)
    guarded = [ROOT / "agentrl_ref", ROOT / "grader", root]
    before = fingerprint(*guarded)
    home_before = sorted(os.listdir(Path.home()))
    try:
        grade(root, out, cell_timeout=15, notebook_timeout=90)
        grades_after = (out / "grades.csv").read_bytes()
        time.sleep(10)  # the detached process would have rewritten grades.csv by now
    finally:
        server.close()
    table = list(csv.DictReader(open(out / "grades.csv", encoding="utf-8", newline="")))
    rows = {r["student_id"]: r for r in table if r["assignment"] == A}
    rows_by_key = {(r["student_id"], r["assignment"]): r for r in table}
    cells: dict = {}
    for r in csv.DictReader(open(out / "cells.csv", encoding="utf-8", newline="")):
        cells.setdefault(r["student_id"], {})[r["grade_id"]] = float(r["score"])
    alone = tmp_path_factory.mktemp("alone")
    for kind in CONTROLS:
        path = alone / "class" / f"control-{kind}" / A / f"{A}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(nbformat.writes(_base(kind)), encoding="utf-8")
    grade(alone / "class", alone / "out", cell_timeout=15, notebook_timeout=90, feedback=False)
    alone_cells: dict = {}
    for r in csv.DictReader(open(alone / "out" / "cells.csv", encoding="utf-8", newline="")):
        alone_cells.setdefault(r["student_id"], {})[r["grade_id"]] = float(r["score"])
    return dict(out=out, root=root, rows=rows, cells=cells, alone=alone_cells, before=before, guarded=guarded,
                grades_after=grades_after, home_before=home_before, rows_by_key=rows_by_key, fuzzed=fuzzed,
                report=(out / "report.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attacker_scores_what_the_answer_alone_scores(attacked, attack):
    got, base = attacked["cells"][attack.name], attacked["cells"][f"control-{attack.base}"]
    assert set(got) == set(base)
    if attack.expect == "equal_untouched":   # the trick hands in less than the base answer: the blanks
        base = attacked["cells"]["control-untouched"]
        assert got == base, {g: (got[g], base[g]) for g in got if got[g] != base[g]}
    elif attack.expect == "equal":
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
    after = fingerprint(*attacked["guarded"])
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
    assert attacked["report"].splitlines()[2].startswith("**沙箱：已启用，隔离级别 cgroup")


def test_no_sandbox_is_refused_unless_asked(tmp_path, monkeypatch):
    import grader.grade.pipeline as pipeline
    from grader.sandbox import SandboxUnavailable

    def unavailable(request):
        raise SandboxUnavailable("bwrap missing (simulated)")

    monkeypatch.setattr(pipeline, "choose", unavailable)
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
    grade(tmp_path / "class", tmp_path / "out", isolation="none", cell_timeout=15, notebook_timeout=90,
          feedback=False)
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "--unsafe-no-sandbox" in report.splitlines()[2]
    rows = {r["student_id"]: r for r in csv.DictReader(open(tmp_path / "out" / "grades.csv", encoding="utf-8"))}
    assert float(rows["reference"]["score"]) == float(rows["reference"]["max_score"]) > float(rows["wrong"]["score"])


def test_postgres_gradebook_has_a_random_password_never_on_a_command_line(postgres):
    db_url = postgres.database("attacks")   # the session's server, as every module gets its gradebook
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
    from grader.grade.package import grading_package

    root = grading_package(assignment, tmp_path) / "agentrl_ref"
    files = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert ANSWER_MODULE[assignment] not in files
    assert "teaching/cloze/cloze_snippets.json" not in files
    assert {"__init__.py", "checks/__init__.py", "checks/probes.py"} <= files
    text = "".join((root / f).read_text(encoding="utf-8") for f in files if f.endswith(".py"))
    assert "def clipped_pg_loss" not in text  # exercise 7's answer lives in agent/loss.py only


# ---------------------------------------------------------------- the file, not the code


@pytest.mark.parametrize("student", sorted(FILE_ATTACKS), ids=printable)
def test_a_hand_in_is_only_the_students_own_regular_file(attacked, student):
    """Links, FIFOs, folders, conflicts and odd names: the row says what was found; nothing is followed, so
    no one scores with the instructor's answer or a classmate's work; odd but valid names are graded."""
    attack = FILE_ATTACKS[student]
    row = attacked["rows_by_key"][attack.row]
    assert row["status"] == attack.status and attack.note in row["notes"], row
    if attack.score == "zero":
        assert float(row["score"]) == 0, row
        assert not (attacked["out"] / "feedback" / student / A).exists()
    else:
        assert float(row["score"]) == float(row["max_score"]) > 0, row


def test_every_file_gets_a_row_and_every_report_is_written(attacked):
    """Every hand-in, fuzzed ones included (random structural damage, file kinds, names), is a row of
    grades.csv; a crash on one file would have left no report at all."""
    out = attacked["out"]
    assert all((out / name).is_file() for name in ("grades.csv", "cells.csv", "report.md"))
    students = {key[0] for key in attacked["rows_by_key"]}
    for path in attacked["fuzzed"]:
        rel = path.relative_to(attacked["root"])
        name = rel.parts[0] if len(rel.parts) > 1 else rel.name[: -len(f"_{A}.ipynb")]
        shown = csv_text(printable(name))
        assert shown in students, (rel, sorted(students))
    for key, row in attacked["rows_by_key"].items():
        if row["status"] in ("ok", "timeout", "killed") and key[1]:
            assert (out / "feedback" / key[0].lstrip("'") / A / f"{A}.html").is_file() or key[0].startswith("'"), key


def test_formula_ids_are_text_in_the_spreadsheet(attacked):
    text = (attacked["out"] / "grades.csv").read_text(encoding="utf-8")
    cells = (attacked["out"] / "cells.csv").read_text(encoding="utf-8")
    for formula in ("=2+5", "@SUM(1+1)"):
        assert f"'{formula}" in text and f"'{formula}" in cells
        assert f"\n{formula}," not in text and f"\n{formula}," not in cells


def test_a_deleted_answer_cell_does_not_show_the_answer(attacked):
    page = (attacked["out"] / "feedback" / "answer-cell-deleted" / A / f"{A}.html").read_text(encoding="utf-8")
    hidden = solution_lines(A)
    assert hidden and not [line for line in hidden if html.escape(line) in page]


def test_hidden_inputs_never_reach_the_feedback(attacked):
    """The leaking function's marker (built at run time) is in what the kernel printed and raised, which the
    instructor's copy keeps; the student's feedback has none of it, and no hidden test code."""
    page = (attacked["out"] / "feedback" / "leak-hidden-inputs" / A / f"{A}.html").read_text(encoding="utf-8")
    kept = (attacked["out"] / "course" / "autograded" / "leak-hidden-inputs" / A / f"{A}.ipynb").read_text("utf-8")
    snow = chr(0x2603)
    assert snow in kept or "\\u2603" in kept
    assert snow not in page and "&#9731;" not in page and "Leak" + snow not in page
    assert "BEGIN HIDDEN TESTS" not in page and "评分未通过" in page


def test_a_claimed_verdict_never_reaches_the_feedback(attacked):
    """Outputs whose metadata say they are the grader's, in cells whose metadata say the same: the instructor's copy
    keeps what the kernel showed, the page shows none of it (only the grader marks its own outputs)."""
    page = (attacked["out"] / "feedback" / "claim-to-be-the-verdict" / A / f"{A}.html").read_text(encoding="utf-8")
    kept = (attacked["out"] / "course" / "autograded" / "claim-to-be-the-verdict" / A / f"{A}.ipynb").read_text("utf-8")
    comet = chr(0x2604)
    assert comet in kept or "\\u2604" in kept
    assert comet not in page and "&#9732;" not in page and "评分：本单元通过" in page


def test_every_graded_notebook_is_valid_nbformat(attacked):
    """What the grader writes back (verdicts, marks, capped outputs) keeps every autograded notebook valid against
    nbformat's schema: an error output carries no metadata."""
    for path in sorted((attacked["out"] / "course" / "autograded").glob(f"*/{A}/{A}.ipynb")):
        nbformat.validate(nbformat.read(path, as_version=4))


def test_a_visible_verdict_never_quotes_a_hidden_string(attacked):
    """The function that hands hidden inputs back through a visible test: its verdicts say a value was not
    shown, and no student value a verdict quotes holds a hidden string (or eight characters in a row of one)."""
    from grader.grade.redact import Redactor, hidden_strings
    from course import source_notebook

    redactor = Redactor(hidden_strings(source_notebook(A)))
    nb = nbformat.read(attacked["out"] / "course" / "autograded" / "remember-hidden-inputs" / A / f"{A}.ipynb", 4)
    verdicts = [o.get("evalue", "") for c in nb.cells for o in verdict_outputs(c) if o.get("output_type") == "error"]
    assert any("含隐藏测试里的内容，不显示" in v for v in verdicts), verdicts     # the attack got that far
    quoted = [v.split("得到", 1)[1] for v in verdicts if "得到" in v]           # what the student's values became
    assert quoted and not [q for q in quoted if redactor.leaks(q)], verdicts
    page = (attacked["out"] / "feedback" / "remember-hidden-inputs" / A / f"{A}.html").read_text(encoding="utf-8")
    assert "含隐藏测试里的内容，不显示" in page


def _page_checks(browser, url: str) -> dict:
    """Open url in Chromium; what ran, what was asked for, what could still run."""
    page = browser.new_page()
    dialogs, requests = [], []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    page.add_init_script("window.__xss = [];")
    page.goto(url, wait_until="load")
    page.wait_for_timeout(300)
    found = page.evaluate("""() => {
        const bad = [];
        for (const el of document.querySelectorAll('.agentrl-student-text *, .output_subarea *')) {
            for (const a of el.attributes) {
                const v = (a.value || '').trim().toLowerCase();
                if (a.name.startsWith('on') || v.startsWith('javascript:') || v.includes('evil.example'))
                    bad.push(el.tagName + '[' + a.name + ']');
            }
            if (['SCRIPT', 'IFRAME', 'OBJECT', 'EMBED', 'BASE', 'META', 'FORM'].includes(el.tagName))
                bad.push(el.tagName);
        }
        return {xss: window.__xss, bad: bad, base: document.baseURI};
    }""")
    page.close()
    found.update(dialogs=dialogs, requests=[u for u in requests if "evil.example" in u or u.startswith("javascript")])
    return found


@pytest.mark.parametrize("student", ["active-markdown", "active-outputs", "raw-html-cell"])
def test_nothing_active_runs_in_the_feedback_or_in_formgrader(attacked, browser, student, tmp_path):
    """In real Chromium: the student's feedback page, and the autograded notebook rendered as formgrader
    renders it (nbconvert's classic template, no sanitizer): no script of the student runs, no dialog opens,
    nothing is requested from the attacker's host, no handler or javascript: link is left."""
    from nbconvert import HTMLExporter

    feedback = attacked["out"] / "feedback" / student / A / f"{A}.html"
    autograded = attacked["out"] / "course" / "autograded" / student / A / f"{A}.ipynb"
    body, _ = HTMLExporter(template_name="classic").from_notebook_node(nbformat.read(autograded, as_version=4))
    formgrader = tmp_path / "formgrader.html"
    formgrader.write_text(body, encoding="utf-8")
    for page in (feedback, formgrader):
        found = _page_checks(browser, page.as_uri())
        assert found["xss"] == [] and found["dialogs"] == [] and found["requests"] == [], (page.name, found)
        assert found["bad"] == [] and found["base"] == page.as_uri(), (page.name, found)


# fifty busy processes for eight seconds, then what they got against the wall clock, in cores: the kernel's own
# accounting of their CPU time (as tests/test_cgroup_v2.py measures its hog), not a stopwatch on a neighbour
HOG = busy_processes_cell(50, 8)


def test_a_cpu_hog_gets_one_core_and_its_neighbours_lose_nothing(tmp_path):
    """Fifty busy processes in one sandbox (within its process limit) next to honest notebooks that import torch,
    two at a time on two cores: the sandbox's quota of one core holds them to about one core (without it they take
    both), and the honest students' grading is untouched (every test cell passes, status ok). Nothing here times a
    neighbour: how long its cells take depends on whatever else the machine runs."""
    honest, students = "ex6_token_credit", ["honest-1", "honest-2"]
    text = filled(honest, reference_fills(honest))
    nb = _base("reference")
    nb.cells.insert(1, nbformat.v4.new_code_cell(HOG))
    make_file(tmp_path / "in" / "a-hog" / A / f"{A}.ipynb", nbformat.writes(nb), "file")
    for student in students:   # the first starts with the hog; the other while it runs
        make_file(tmp_path / "in" / student / honest / f"{honest}.ipynb", text, "file")
    subs = grade(tmp_path / "in", tmp_path / "out", cell_timeout=60, notebook_timeout=120, jobs=2, feedback=False)
    by_student = {s.student: s for s in subs if s.path}
    for student in students:
        s = by_student[student]
        assert s.status == "ok" and s.passed and all(s.passed.values()), (student, s.status, s.notes, s.passed)
    hogged = nbformat.read(tmp_path / "out" / "course" / "autograded" / "a-hog" / A / f"{A}.ipynb", as_version=4)
    out = "".join(o.get("text", "") for c in hogged.cells if c.cell_type == "code" and "_os.fork()" in c.source
                  for o in c.get("outputs", []) if o.get("output_type") == "stream")
    cores = float(out.split("cores used:")[1].split()[0])
    assert cores < 1.5, out

