"""What the suite runs once and shares must never be stale and never be poisoned.

- The reference records (grader/grade/reference.py, AGENTRL_REFERENCE_STORE): a second grading run reads the first
  one's records instead of running the instructor notebook again; a changed instructor notebook gets a key, and a
  run, of its own; a hand-in that tries to write into the folder cannot (the sandbox does not see it) and is graded
  on the instructor's records; a folder the grader may not write is only read; the session's trip-wire catches a
  changed record (tests/conftest.py).
- The site (book/_ext/site_build.py): reused only when its stamp is the hash of exactly these inputs; an edit to a
  page, the package or a new file counts, a test file does not; a failed build leaves no stamp.
- The tests' kernels (course.run_notebook): a phase past its limit fails naming the phase and the kernel's state.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

import site_build  # book/_ext
from course import SOURCE, KernelStall, ReferenceStore, filled, reference_fills, run_notebook, signal_state
from grader.grade.execute import runner_for
from grader.grade.pipeline import grade
from grader.grade import reference
from grader.grade.reference import STORE, expected_for, reference_key

A = "ex1_format_reward"


def _class(root: Path, **students: str) -> Path:
    for student, text in students.items():
        path = root / student / A / f"{A}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _scores(out: Path) -> dict[str, tuple[float, float]]:
    with open(out / "grades.csv", encoding="utf-8", newline="") as f:
        return {r["student_id"]: (float(r["score"]), float(r["max_score"])) for r in csv.DictReader(f)}


def _digests(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    """A store of this test's own (the session's is shared by every other grading test)."""
    folder = tmp_path / "store"
    monkeypatch.setenv(STORE, str(folder))
    return folder


@pytest.fixture
def reference_runs(monkeypatch) -> list[str]:
    """The assignments whose instructor notebook was run (in this process), in order."""
    runs: list[str] = []
    real = reference._run_reference

    def counted(assignment, *args, **kwargs):
        runs.append(assignment)
        return real(assignment, *args, **kwargs)

    monkeypatch.setattr(reference, "_run_reference", counted)
    return runs


def test_a_second_grading_reads_the_first_ones_records_and_a_hand_in_cannot_write_them(store, reference_runs,
                                                                                       tmp_path):
    right = filled(A, reference_fills(A))
    grade(_class(tmp_path / "c1", honest=right), tmp_path / "out1", feedback=False)
    assert reference_runs == [A]                                   # the first run ran the instructor notebook
    records = _digests(store)
    key = reference_key(SOURCE / A / f"{A}.ipynb", runner_for(A, tmp_path / "out1" / "grading").package_root)
    assert [n for n in records if n.endswith(".json")] == [f"{A}-{key}.json"]    # the instructor notebook's key

    nb = nbformat.reads(right, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("solution")) + 1
    nb.cells.insert(at, nbformat.v4.new_code_cell(
        "import glob as _g\n"
        f"for _p in _g.glob({str(store)!r} + '/*') + [{str(store / 'forged.json')!r}]:\n"
        "    try:\n"
        "        open(_p, 'w').write('{}')\n"
        "        print('wrote', _p)\n"
        "    except Exception as _exc:\n"
        "        print('cannot', type(_exc).__name__)\n"))
    grade(_class(tmp_path / "c2", honest=right, poisoner=nbformat.writes(nb)), tmp_path / "out2", feedback=False)
    assert reference_runs == [A]                                   # the second read it from the store
    assert _digests(store) == records                              # nothing written, nothing added
    scores = _scores(tmp_path / "out2")
    assert scores["honest"] == scores["poisoner"] == _scores(tmp_path / "out1")["honest"]
    assert scores["honest"][0] == scores["honest"][1] > 0


def test_a_changed_instructor_notebook_gets_a_key_and_a_run_of_its_own(store, reference_runs, tmp_path):
    grading = tmp_path / "grading"
    runner = runner_for(A, grading)
    first = expected_for(A, SOURCE, runner, grading)
    source = tmp_path / "source"
    shutil.copytree(SOURCE / A, source / A)
    nb = nbformat.read(source / A / f"{A}.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("一处改动"))
    nbformat.write(nb, source / A / f"{A}.ipynb")
    before = _digests(store)
    second = expected_for(A, source, runner, grading)
    keys = {reference_key(SOURCE / A / f"{A}.ipynb", runner.package_root),
            reference_key(source / A / f"{A}.ipynb", runner.package_root)}
    assert len(keys) == 2 and {f"{A}-{k}.json" for k in keys} <= set(_digests(store))
    assert all(_digests(store)[name] == data for name, data in before.items())   # the old record untouched
    assert first == second                       # the same tests, so the same records: run again, not reused
    assert reference_runs == [A, A]
    assert expected_for(A, source, runner, grading) == second and reference_runs == [A, A]   # now both are kept


def test_where_the_store_cannot_be_written_the_run_keeps_its_records_itself(tmp_path, monkeypatch, reference_runs):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv(STORE, str(blocked / "store"))     # no folder can be made there, by root either
    grade(_class(tmp_path / "c", honest=filled(A, reference_fills(A))), tmp_path / "out", feedback=False)
    assert reference_runs == [A]
    assert list((tmp_path / "out" / "grading" / "expected").glob("*.json"))   # kept in the run's own cache
    honest = _scores(tmp_path / "out")["honest"]
    assert honest[0] == honest[1] > 0


def test_the_session_trip_wire_names_a_changed_record(tmp_path):
    folder = tmp_path / "records"
    folder.mkdir()
    (folder / f"{A}-0123456789abcdef.json").write_text(json.dumps({"t": [["ok", 1]]}), encoding="utf-8")
    wire = ReferenceStore(folder)
    assert wire.check() == []
    (folder / f"{A}-0123456789abcdef.json").write_text(json.dumps({"t": [["ok", 0]]}), encoding="utf-8")
    assert wire.check() == [f"{A}-0123456789abcdef.json"] and not list(folder.glob("*.json"))   # removed


# ---------------------------------------------------------------- the site's stamp


def _repo(root: Path) -> Path:
    root.mkdir()
    for name, text in {"_config.yml": "title: t\n", "book/page.md": "# 页\n", "agentrl_ref/a.py": "X = 1\n",
                       "tests/test_x.py": "def test(): pass\n"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    return root


def test_the_site_stamp_does_not_depend_on_what_the_process_imported(tmp_path, monkeypatch):
    """`import setuptools` puts its vendored packages on sys.path: a test process that imported it, or anything else
    that adds a folder of packages, still finds make book's stamp current (it once rebuilt the site mid-run)."""
    root = _repo(tmp_path / "repo")
    first = site_build.inputs_fingerprint(root)
    extra = tmp_path / "extra" / "fake_pkg-1.0.dist-info"
    extra.mkdir(parents=True)
    (extra / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-pkg\nVersion: 1.0\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(extra.parent))
    from importlib import metadata

    assert "fake-pkg" in {d.metadata["Name"] for d in metadata.distributions()}   # this process sees it
    assert site_build.inputs_fingerprint(root) == first


def test_the_site_stamp_is_the_hash_of_what_the_build_reads(tmp_path):
    root = _repo(tmp_path / "repo")
    first = site_build.inputs_fingerprint(root)
    assert first and site_build.inputs_fingerprint(root) == first
    (root / "tests" / "test_x.py").write_text("def test(): assert 1\n", encoding="utf-8")
    assert site_build.inputs_fingerprint(root) == first                # a test is not read by the build
    for change in (lambda: (root / "agentrl_ref" / "a.py").write_text("X = 2\n", encoding="utf-8"),   # edited
                   lambda: (root / "book" / "new.md").write_text("# 新\n", encoding="utf-8")):       # untracked
        change()
        assert site_build.inputs_fingerprint(root) != first
        first = site_build.inputs_fingerprint(root)
    html = site_build.html_folder(root)
    html.mkdir(parents=True)
    assert not site_build.is_current(root)
    (html / site_build.STAMP).write_text(first + "\n", encoding="utf-8")
    assert site_build.is_current(root)
    assert site_build.inputs_fingerprint(tmp_path) is None and not site_build.is_current(tmp_path)   # no git


def test_a_failed_build_leaves_no_stamp(tmp_path):
    root = _repo(tmp_path / "repo")      # no _toc.yml: jupyter-book refuses to build it
    html = site_build.html_folder(root)
    html.mkdir(parents=True)
    (html / site_build.STAMP).write_text("an older build's\n", encoding="utf-8")
    result = site_build.build(root, reuse=True, capture=True)
    assert not result["reused"] and result["returncode"] != 0
    assert not (html / site_build.STAMP).exists()


# ---------------------------------------------------------------- the tests' watched kernels


def test_a_kernel_phase_past_its_limit_fails_naming_the_phase_and_the_kernel():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("import time\ntime.sleep(30)")]
    with pytest.raises(KernelStall) as stall:
        run_notebook(nb, timeout=60, phase_limit=3)
    said = str(stall.value)
    assert said.startswith("cell 1: still waiting for the kernel on the shell channel"), said
    assert "the kernel: pid" in said and "cell 0" in said and "kernel start" in said, said
    nb.cells = nb.cells[:1]
    assert run_notebook(nb, timeout=60, phase_limit=30).cells[0].execution_count == 1   # over IPC, no stall


def test_a_kernel_that_did_not_start_leaves_no_signal_handler_to_stop_the_next_one():
    """nbclient takes its SIGINT and SIGTERM handlers back only after a kernel that started; course.run_notebook
    puts them back itself. Without that, a SIGTERM a forked child writes into the loop's wake-up socket later (what
    test_capstone_evidence's control once did) stopped the next kernel of this process at once."""
    import signal

    from jupyter_client.kernelspec import NoSuchKernel

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    before = signal_state()
    with pytest.raises(NoSuchKernel):
        run_notebook(nb, timeout=60, kernel_name="no-such-kernel")
    left = signal_state()
    if left[2] not in (-1, before[2]):   # what a forked child's SIGTERM writes into the socket it inherited
        os.write(left[2], bytes([signal.SIGTERM]))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    assert run_notebook(nb, timeout=60, phase_limit=30).cells[0].execution_count == 1
    assert left == before, f"left behind: SIGINT, SIGTERM handlers and wake-up fd {left}"
