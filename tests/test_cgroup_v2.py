"""Trusted grading on a real cgroup v2 kernel, as root and as a normal user, in one boot of a guest
(tests/guest.py: Debian's kernel under qemu's software emulation, over this machine's file system).

A small class of exercise 1 notebooks (no torch: `import torch` alone takes ~40 s under emulation): the
reference answer and the untouched release (honest), and a hostile student graded next to an honest one:
the reference answer, then eight busy processes, a flood of processes with a daemon that tries to outlive
its notebook, and a memory hog past the limit, one cell each. It is graded in the guest

- as a normal user with a delegated subtree, as systemd's user@.service gives one (memory, pids and cpu,
  not cpuset: the CPU pinning is then sched_setaffinity): the whole class;
- as root (the grader makes a group of its own at the top of the hierarchy): the hostile student and the
  honest one next to it;
- and as a normal user without delegation: `make grade` refuses and names the ways forward; `doctor` says the
  job level; with --isolation=job the same pair is graded one notebook at a time;

all three side by side, with no feedback pages (`--no-feedback`: rendering them under emulation costs more
than a notebook; the host's tests check them),

and on this machine (its own kernel and level) for the grades to compare with. Honest students get exactly
the score they get graded alone; the hostile ones lose nothing of their answer's score and harm no one; no
process of theirs is alive after the runs; each run says its level first and in its report. Nothing asserts
on time; the lane prints its wall clock.
"""
from __future__ import annotations

import contextlib
import csv
import io
import shlex
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

import guest
from course import busy_processes_cell, filled, reference_fills, reference_record, student_notebook
from grader.grade.pipeline import grade
from grader.sandbox import SandboxLimits

A = "ex1_format_reward"
MARK = "1000.4242424242"   # a sleep that long: what a survivor would be (a valid interval for `sleep`)
USER, NODELEG = 4242, 4243
MEMORY_MB = 512           # the hog reaches it sooner under emulation than the default 2048
TIMEOUT = 300             # a cell, and a kernel's start, under software emulation

MEMORY = "_hog = []\nwhile True:\n    _hog.append(bytearray(64 << 20))\n"
# eight busy processes for a few seconds (what they got, against the wall clock, in cores), then a daemon
# that tries to outlive its notebook and a flood of processes (a cell of its own; the memory hog comes after)
PROCESSES = busy_processes_cell(8, 4) + f"""\
if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        _os.execvp("sleep", ["sleep", "{MARK}"])
    _os._exit(0)
_kids = []
for _ in range(100):
    try:
        _pid = _os.fork()
    except OSError as _exc:
        print("stopped at", len(_kids), type(_exc).__name__)
        break
    if _pid == 0:
        _os.execvp("sleep", ["sleep", "{MARK}"])
    _kids.append(_pid)
"""


def _with_cells(*codes: str) -> str:
    nb = nbformat.reads(filled(A, reference_fills(A)), as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(code) for code in codes]
    return nbformat.writes(nb)


# graded two at a time in this order: the hostile student (every hog, one after the other, after the last
# test cell: one notebook is what an emulated machine affords) runs next to an honest one
NOTEBOOKS = {"a-reference": lambda: filled(A, reference_fills(A)),
             "b-hostile": lambda: _with_cells(PROCESSES, MEMORY),
             "c-untouched": lambda: nbformat.writes(student_notebook(A))}
HONEST = ("a-reference", "c-untouched")
PAIR = ("a-reference", "b-hostile")   # the hostile student next to an honest one


def _write(folder: Path, students) -> Path:
    for student in students:
        path = folder / student / A / f"{A}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(NOTEBOOKS[student](), encoding="utf-8")
    return folder


SCRIPT = """\
cd {repo}
PY={python}
S={shared}
L=/var/tmp/lane
GRADE="$PY -m grader grade --no-feedback --memory-mb {memory} --cell-timeout {timeout}"  # pages: not this lane's
mkdir -p $L && cp -r $S/class $S/pair $S/references $L/ && chmod -R a+rX $L
# the reference records this session's host run from the instructor notebook (the same key: the same notebook and
# package copy); root could add to them, the normal users only read them
export AGENTRL_REFERENCE_STORE=$L/references
clock() {{ echo "$1 $(date +%s.%N)" >> $S/clock; }}
survivors() {{ grep -l "{mark_re}" /proc/[0-9]*/cmdline 2>/dev/null | wc -l > $S/$1; }}   # [-]: not grep itself
keep() {{  # run name, output folder
  mkdir -p $S/$1
  for f in grades.csv cells.csv report.md; do cp $2/$f $S/$1/ 2>/dev/null; done
  cp $2/course/autograded/b-hostile/{a}/{a}.ipynb $S/$1/b-hostile.ipynb 2>/dev/null
}}
echo "+memory +pids +cpu" > /sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/lane && echo "+memory +pids +cpu" > /sys/fs/cgroup/lane/cgroup.subtree_control
delegated() {{  # uid, name: a fresh subtree for one command, as `systemd-run --user --scope -p Delegate=yes` makes
  d=/sys/fs/cgroup/lane/u$1-$2
  mkdir -p $d && chown $1:$1 $d $d/cgroup.procs $d/cgroup.subtree_control $d/cgroup.threads && echo $d
}}
as_user() {{  # uid, cgroup (or ""), command...
  uid=$1; group=$2; shift 2
  mkdir -p $L/home-$uid $L/out-$uid && chown $uid:$uid $L/home-$uid $L/out-$uid
  sh -c 'if [ -n "$1" ]; then echo $$ > "$1/cgroup.procs"; fi; shift; exec "$@"' - "$group" \\
    setpriv --reuid $uid --regid $uid --clear-groups env HOME=$L/home-$uid "$@"
}}
clock start
head -n 1 /proc/stat > $S/stat-start

# all three side by side (two software-emulated cores: one run alone leaves one idle while it starts)
# 1. root grades the pair (the whole class: the delegated user below)
(
  $GRADE $L/pair --out $L/out-root > $S/root-grade.log 2>&1; echo $? > $S/root-grade.rc
  clock root
  keep root $L/out-root
) &
# 2. a normal user without delegation: doctor says the job level; make grade refuses; at --isolation=job the
#    same pair is graded one notebook at a time
(
  as_user {nodeleg} "" $PY -m grader doctor > $S/nodeleg-doctor.txt 2>&1; echo $? > $S/nodeleg-doctor.rc
  clock doctor
  as_user {nodeleg} "" $GRADE $L/pair --out $L/out-{nodeleg}/refused > $S/nodeleg-refused.log 2>&1
  echo $? > $S/nodeleg-refused.rc
  clock refused
  as_user {nodeleg} "" $GRADE $L/pair --out $L/out-{nodeleg}/g --isolation=job > $S/job-grade.log 2>&1
  echo $? > $S/job-grade.rc
  clock job
  keep job $L/out-{nodeleg}/g
) &
# 3. a normal user with a delegated subtree: what user@.service gives (memory pids cpu, no cpuset)
(
  as_user {user} $(delegated {user} grade) $GRADE $L/class --out $L/out-{user}/g > $S/user-grade.log 2>&1
  echo $? > $S/user-grade.rc
  clock user
  keep user $L/out-{user}/g
) &
wait
survivors survivors
# records the guest made itself: new ones in the store (root) or in a run's own cache (the users): none expected
own=$(ls $L/out-*/grading/expected/*.json $L/out-*/*/grading/expected/*.json 2>/dev/null | wc -l)
echo $(( $(ls $L/references/*.json | wc -l) - 1 + own )) > $S/reference-runs
clock done
head -n 1 /proc/stat > $S/stat-done
"""


def _rows(folder: Path) -> dict[str, dict]:
    with open(folder / "grades.csv", encoding="utf-8", newline="") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


def _cells(folder: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    with open(folder / "cells.csv", encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            out.setdefault(r["student_id"], {})[r["grade_id"]] = float(r["score"])
    return out


def _cell(path: Path, back: int):
    return nbformat.read(path, as_version=4).cells[-back]


def _stdout(path: Path, back: int = 2) -> str:
    """What a cell of the hostile notebook printed (back=2: the process hogs; 1: the memory hog)."""
    return "".join(o.get("text", "") for o in _cell(path, back).get("outputs", []) if o.get("output_type") == "stream")


@pytest.fixture(scope="module")
def lane(tmp_path_factory):
    reason = guest.unavailable()
    if reason:
        pytest.skip(f"no cgroup v2 guest here: {reason}")
    shared = tmp_path_factory.mktemp("v2-lane")
    (shared / "references").mkdir()
    shutil.copy2(reference_record(A), shared / "references")   # the guest need not run the reference again
    _write(shared / "class", NOTEBOOKS)
    _write(shared / "pair", PAIR)
    here = tmp_path_factory.mktemp("v1-here")
    script = SCRIPT.format(repo=shlex.quote(str(guest.ROOT)), python=shlex.quote(str(guest.VENV / "bin" / "python")),
                           shared=shlex.quote(str(shared)), mark_re=MARK.replace(".", "[.]", 1), a=A, user=USER,
                           nodeleg=NODELEG, memory=MEMORY_MB, timeout=TIMEOUT)
    limits = SandboxLimits(memory_mb=MEMORY_MB)
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        booted = pool.submit(guest.boot, script, shared, 1200)
        # meanwhile, on this machine: the same class at its best level, and the honest students alone
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            grade(shared / "class", here / "class", cell_timeout=60, notebook_timeout=300, limits=limits)
            grade(_write(here / "alone", HONEST), here / "alone-out", cell_timeout=60, notebook_timeout=300,
                  limits=limits)
        result = booted.result()
        seconds = time.monotonic() - started
    runs = (shared / "reference-runs").read_text().strip() if (shared / "reference-runs").exists() else "?"
    print(f"\ncgroup v2 lane: {seconds:.0f} s wall (guest and this machine's runs side by side; reference runs in "
          f"the guest: {runs})")
    print((shared / "clock").read_text() if (shared / "clock").exists() else result.stdout[-2000:])
    return dict(shared=shared, here=here / "class", alone=_cells(here / "alone-out"), result=result)


def _read(lane, name: str) -> str:
    path = lane["shared"] / name
    said = f"{lane['result'].stdout[-3000:]}\n{lane['result'].stderr[-3000:]}"
    assert path.exists(), f"{name} missing; guest said:\n{said}"
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("run, level", [("root", "cgroup2"), ("user", "cgroup2"), ("job", "job")])
def test_make_grade_says_the_level_first_and_the_report_states_it(lane, run, level):
    assert _read(lane, f"{run}-grade.rc").strip() == "0", _read(lane, f"{run}-grade.log")[-3000:]
    first = _read(lane, f"{run}-grade.log").splitlines()[0]
    assert first.startswith(f"隔离级别 / isolation level: {level}"), first
    assert f"隔离级别 {level}" in _read(lane, f"{run}/report.md").splitlines()[2]
    if run == "user":      # no cpuset delegated: the pinning is sched_setaffinity, and the table says so
        assert "sched_setaffinity" in _read(lane, "user-grade.log")


def test_doctor_names_the_job_level_without_delegation_and_the_ways_forward(lane):
    text = _read(lane, "nodeleg-doctor.txt")
    assert "isolation level: job" in text and f"普通用户 uid {NODELEG}" in text, text
    assert _read(lane, "nodeleg-doctor.rc").strip() == "2"          # make grade would refuse
    assert "没有委派的子树" in text and "--isolation=job" in text and "Delegate=" in text, text


def test_without_delegation_make_grade_refuses_and_names_the_ways_forward(lane):
    assert _read(lane, "nodeleg-refused.rc").strip() != "0"
    log = _read(lane, "nodeleg-refused.log")
    assert "无法启动评分沙箱，没有评分" in log and "没有委派的子树" in log, log
    assert "--isolation=job" in log and "Delegate=" in log, log       # the ways forward, not only the refusal


@pytest.mark.parametrize("run", ["root", "user", "job"])
def test_honest_students_get_their_alone_score_and_attackers_their_answers(lane, run):
    cells, rows = _cells(lane["shared"] / run), _rows(lane["shared"] / run)
    assert set(cells) == set(NOTEBOOKS if run == "user" else PAIR)
    for student in cells:
        alone = lane["alone"]["c-untouched" if student == "c-untouched" else "a-reference"]
        assert cells[student] == alone, (student, rows[student]["status"], rows[student]["notes"], cells[student],
                                         alone, _read(lane, f"{run}-grade.log")[-2000:])


def test_the_v2_grades_are_the_grades_of_this_machine(lane):
    here = _rows(lane["here"])
    for run in ("root", "user"):
        there = _rows(lane["shared"] / run)
        assert {s: (r["score"], r["status"]) for s, r in there.items()} == \
            {s: (r["score"], r["status"]) for s, r in here.items() if s in there}, \
            (run, {s: r["notes"] for s, r in there.items()}, {s: r["notes"] for s, r in here.items()})


def test_no_process_outlives_the_runs(lane):
    assert _read(lane, "survivors").strip() == "0"


@pytest.mark.parametrize("run", ["root", "user"])
def test_memory_and_processes_are_bounded_and_named(lane, run):
    row = _rows(lane["shared"] / run)["b-hostile"]
    assert row["status"] == "killed"
    assert f"内存超过上限（{MEMORY_MB} MB）" in row["notes"] and "进程数超过上限（64）" in row["notes"], row
    assert "stopped at" in _stdout(lane["shared"] / run / "b-hostile.ipynb")


def test_at_the_job_level_memory_and_processes_are_bounded_too(lane):
    memory = _cell(lane["shared"] / "job" / "b-hostile.ipynb", 1)
    assert any(o.get("ename") == "MemoryError" for o in memory.get("outputs", [])), memory.get("outputs")
    out = _stdout(lane["shared"] / "job" / "b-hostile.ipynb")
    assert "stopped at" in out and int(out.split("stopped at")[1].split()[0]) < 64, out


@pytest.mark.parametrize("run", ["root", "user"])
def test_a_cpu_hog_gets_one_core(lane, run):
    """Eight busy processes in a sandbox with one core's quota (cpu.max) on a two-core guest, next to an
    honest student: they get about one core, not two (the kernel's accounting, not a stopwatch)."""
    out = _stdout(lane["shared"] / run / "b-hostile.ipynb")
    cores = float(out.split("cores used:")[1].split()[0])
    assert cores < 1.5, out
