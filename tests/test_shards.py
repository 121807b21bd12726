"""One class graded on one machine and as three shards on a real Slurm cluster into one PostgreSQL gradebook.

A class of 8 students (reference answers, untouched notebooks, every realistic mistake, one student who handed
in nothing and one broken file) is graded twice: by `make grade`'s pipeline on this machine (SQLite,
two notebooks at a time), and by `grader/cluster/slurm/submit.sh 3`: a job array of three shards on a
single-node Slurm 22 cluster from Debian's packages, at the `job` level, all three at once on fewer cores than
shards (slurmd pinned to them: the shards' sandboxes start and end side by side, as on a loaded node), each
recording into one PostgreSQL gradebook (a database of its own on the session's server), plus the report job
that runs after them. Nothing is simulated. The two grades.csv must be the same bytes: a grade never depends on
how the class was split.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from class_builder import write_class
from grader.cluster.shards import Shard, shard_of
from grader.course import COURSE_ID
from grader.grade.outfolder import MARKER
from grader.grade.pipeline import grade, report
from slurm_cluster import available, job_states, local_slurm, submit_shards, wait_for_jobs

A = "ex1_format_reward"
STUDENTS = 8            # every answer kind of exercise 1 (7) and one more
SHARDS = 3
CORES = sorted(os.sched_getaffinity(0))[:SHARDS - 1]   # fewer cores than shards
pytestmark = pytest.mark.skipif(available() is not None, reason=f"no local Slurm: {available()}")


@pytest.fixture(scope="module")
def graded(tmp_path_factory, postgres):
    tmp = tmp_path_factory.mktemp("shards")
    tmp.chmod(0o755)   # Slurm's jobs write their logs here
    write_class(tmp / "class", STUDENTS, assignments=[A])
    (tmp / "class" / "niaj" / A).mkdir(parents=True)        # handed in nothing
    (tmp / "class" / f"mallory_{A}.ipynb").write_text('{"cells": [', encoding="utf-8")   # not JSON
    with contextlib.redirect_stdout(io.StringIO()):
        grade(tmp / "class", tmp / "single", jobs=2)
    db_url = postgres.database("shards")
    with local_slurm(cpus=SHARDS, cores=CORES) as slurm:
        array, merge = submit_shards(slurm, SHARDS, tmp / "class", tmp / "sharded", db_url, tmp)
        wait_for_jobs(slurm)
        states = {"shards": job_states(slurm, array), "report": job_states(slurm, merge)}
    return dict(tmp=tmp, db_url=db_url, states=states, logs=sorted(tmp.glob("agentrl-grade-*.log")))


def _read(path):
    return path.read_bytes()


def test_slurm_shards_and_their_report_match_one_machine_byte_for_byte(graded):
    tmp = graded["tmp"]
    assert graded["states"] == {"shards": ["COMPLETED"] * SHARDS, "report": ["COMPLETED"]}, graded["states"]
    for name in ("grades.csv", "cells.csv"):
        assert _read(tmp / "single" / name) == _read(tmp / "sharded" / name), name
    levels = {json.loads(p.read_text(encoding="utf-8"))["level"]
              for p in (tmp / "sharded" / "shards").glob("*/manifest.json")}
    assert levels == {"job"}
    # and not by luck of a retry: no shard's kernel was lost (execute.py says so on stderr when it runs one again)
    assert not any("评分环境出错" in log.read_text(encoding="utf-8") for log in graded["logs"])
    rows = (tmp / "sharded" / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + STUDENTS + 2
    students = {line.split(",")[0] for line in rows[1:]}
    for student in students - {"niaj", "mallory"}:
        assert (tmp / "sharded" / "feedback" / student / A / f"{A}.html").is_file(), student


def test_every_student_is_graded_by_exactly_one_shard_and_shards_overlap_in_time(graded):
    manifests = [json.loads(p.read_text(encoding="utf-8"))
                 for p in sorted((graded["tmp"] / "sharded" / "shards").glob("*/manifest.json"))]
    assert [m["shard"] for m in manifests] == [0, 1, 2] and all(m["count"] == 3 for m in manifests)
    mine = {}
    for m in manifests:
        for row in m["rows"]:
            if row["mine"]:
                assert row["student"] not in mine, row["student"]
                mine[row["student"]] = m["shard"]
                assert shard_of(row["student"], 3) == m["shard"]
    assert len(mine) == STUDENTS + 2
    spans = sorted((m["timings"]["started"], m["timings"]["finished"]) for m in manifests)
    assert any(a_end > b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:])), spans


def test_slurm_logs_show_progress_as_plain_lines(graded):
    """Not a terminal: tqdm's status line (count, rate, ETA) as plain lines, no carriage returns."""
    text = "".join(log.read_text(encoding="utf-8") for log in graded["logs"])
    assert "评分 第 " in text and ("本/s]" in text or "s/本]" in text), text[-2000:]
    assert "\r" not in text


def test_a_shard_graded_again_replaces_its_rows(graded):
    """The same shard, again (as after a failed Slurm task): its students' gradebook rows are replaced,
    never added to, and the report does not change."""
    from nbgrader.api import Gradebook

    tmp, db_url = graded["tmp"], graded["db_url"]
    with Gradebook(db_url, COURSE_ID) as gb:
        before = len(gb.submission_dicts(A))
    with contextlib.redirect_stdout(io.StringIO()):
        grade(tmp / "class", tmp / "sharded", db_url=db_url, jobs=2, shard=Shard(1, 3))
        report(tmp / "sharded", db_url)
    with Gradebook(db_url, COURSE_ID) as gb:
        assert len(gb.submission_dicts(A)) == before
    assert _read(tmp / "single" / "grades.csv") == _read(tmp / "sharded" / "grades.csv")


def test_a_shard_that_never_ran_is_named_and_its_students_are_not_silently_missing(graded):
    tmp = graded["tmp"]
    partial = tmp / "partial"
    shutil.copytree(tmp / "sharded" / "shards", partial / "shards")
    shutil.copy2(tmp / "sharded" / MARKER, partial / MARKER)   # what says the folder is a sharded grading's output
    (partial / "shards" / "2" / "manifest.json").unlink()
    with contextlib.redirect_stdout(io.StringIO()):
        subs = report(partial, graded["db_url"])
    lost = [s for s in subs if shard_of(s.student, 3) == 2]
    assert lost and all(s.status == "error" and "第 2/3 片没有运行" in s.notes[0] for s in lost)
    rows = (partial / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + STUDENTS + 2
    assert "第 2/3 片没有运行" in (partial / "report.md").read_text(encoding="utf-8")


def test_the_command_line_refuses_shards_without_a_shared_gradebook(tmp_path):
    out = subprocess.run([sys.executable, "-m", "grader", "grade", str(tmp_path), "--shard", "0/2",
                          "--unsafe-no-sandbox"], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "AGENTRL_DB_URL"})
    assert out.returncode != 0 and "PostgreSQL" in out.stderr
