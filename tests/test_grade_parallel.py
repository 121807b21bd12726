"""Notebooks executed two at a time, recorded into a PostgreSQL gradebook, give the same results as one at a
time into the default SQLite gradebook."""
import os

from class_builder import write_class
from grader.pipeline import grade
from grader.postgres import local_postgres


def test_parallel_postgres_grading_matches_serial_sqlite(tmp_path):
    root = tmp_path / "class"
    # two notebooks per student, so one student's notebooks are graded at the same time (the full class:
    # make bench-grading)
    plan = write_class(root, students=3, assignments=["ex1_format_reward", "ex5_composite_reward"])
    serial = grade(root, tmp_path / "serial", cell_timeout=60, notebook_timeout=300, jobs=1)
    with local_postgres() as db_url:
        parallel = grade(root, tmp_path / "parallel", cell_timeout=60, notebook_timeout=300,
                         db_url=db_url, jobs=max(2, os.cpu_count() or 2))
    assert len(serial) == len(plan) and all(s.status == "ok" for s in serial + parallel)
    for name in ("grades.csv", "cells.csv"):
        assert (tmp_path / "serial" / name).read_text() == (tmp_path / "parallel" / name).read_text(), name
