"""Graded on arrival (grader/serve/): nbgrader's exchange on a local folder, real `nbgrader submit` and
`fetch_feedback`, the service as real processes on one real PostgreSQL queue, exercise 1 only.

One database on the session's PostgreSQL server and one course for the module; each test has students of its
own, so the rows of one test never count in another's.
"""
from __future__ import annotations

import os
import pwd
import re

import nbformat
import pytest
from nbgrader.api import Gradebook

from course import filled, mutated_fills, mutations, reference_fills
from exchange import EX1, Exchange, kill
from grader.course import COURSE_ID
from grader.serve.queue import Job, Queue

RIGHT = filled(EX1, reference_fills(EX1))
WRONG_NAME, (WRONG_CHANGES, WRONG_CELL) = next(iter(mutations(EX1).items()))
WRONG = filled(EX1, mutated_fills(EX1, WRONG_CHANGES))


def _with_own_cell(notebook_json: str, code: str) -> str:
    """The notebook with a cell of the student's own after the answer cell (grading keeps and runs it)."""
    nb = nbformat.reads(notebook_json, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("solution")) + 1
    nb.cells.insert(at, nbformat.v4.new_code_cell(code))
    return nbformat.writes(nb)


SLOW = _with_own_cell(RIGHT, "import time\ntime.sleep(6)")   # right, and 6 s longer to grade
LOOP = filled(EX1, ["next(x for x in __import__('itertools').count() if x < 0)"] + reference_fills(EX1)[1:])
FORK_BOMB = filled(EX1, ["[__import__('os').fork() for _ in range(40)] and None or "
                         + reference_fills(EX1)[0]] + reference_fills(EX1)[1:])
SCORE = re.compile(r"（得分：([0-9.]+) / ([0-9.]+)）")   # the feedback page\'s heading (grader/grade/templates)


@pytest.fixture(scope="module")
def db_url(postgres):
    return postgres.database("serve")


@pytest.fixture(scope="module")
def ex(tmp_path_factory, db_url) -> Exchange:
    return Exchange.create(tmp_path_factory.mktemp("exchange-course"), db_url)


@pytest.fixture(scope="module")
def max_score(ex) -> float:
    with Gradebook(ex.db_url, COURSE_ID) as gb:
        return gb.find_assignment(EX1).max_score


def done(students, count=None):
    def ready(rows):
        finished = [r for r in rows if r["state"] in ("done", "superseded")]
        return len(finished) == (count or len(students)) and len(rows) == len(finished)
    return ready


def page_score(html: str) -> tuple[float, float]:
    found = SCORE.search(html)
    assert found, html[:2000]
    return float(found.group(1)), float(found.group(2))


def gradebook_score(ex, student) -> float:
    with Gradebook(ex.db_url, COURSE_ID) as gb:
        return gb.find_submission(EX1, student).score


def test_each_student_fetches_feedback_with_their_own_score(ex, max_score, tmp_path):
    folders = {"s-right": ex.submit("s-right", RIGHT, cli=True), "s-wrong": ex.submit("s-wrong", WRONG)}
    with ex.service(tmp_path / "service.log"):
        rows = ex.wait(done(folders), folders, what="both graded")
    by_student = {r["student"]: r for r in rows}
    assert by_student["s-right"]["score"] == max_score and by_student["s-right"]["graded"] == 1
    assert 0 < by_student["s-wrong"]["score"] < max_score
    for student, folder in folders.items():
        pages = ex.fetch_feedback(student, cli=student == "s-right")
        assert list(pages) == [folder.split("+")[2]], pages.keys()     # the one submission's timestamp
        assert page_score(next(iter(pages.values()))) == (by_student[student]["score"], max_score)
        assert gradebook_score(ex, student) == by_student[student]["score"]
    (ex.course / "autograded" / "s-wrong" / EX1 / f"{EX1}.ipynb").stat()   # what formgrader opens
    assert WRONG_CELL in ex.fetch_feedback("s-wrong").popitem()[1]


def test_a_service_killed_mid_grade_loses_nothing_and_grades_each_once(ex, max_score, tmp_path):
    students = ["k-slow", "k-right", "k-wrong"]
    folders = [ex.submit("k-slow", SLOW), ex.submit("k-right", RIGHT), ex.submit("k-wrong", WRONG)]
    with ex.service(tmp_path / "first.log", "--lease", "4") as first:
        ex.wait(lambda rows: any(r["student"] == "k-slow" and r["state"] == "running" for r in rows), students,
                what="k-slow being graded")
        kill(first)                                   # mid-grade: k-slow's notebook sleeps 6 s in a cell of its own
    rows = ex.rows(students)
    assert [r["state"] for r in rows if r["student"] == "k-slow"] == ["running"], rows
    with ex.service(tmp_path / "second.log", "--lease", "4"):
        rows = ex.wait(done(students), students, what="all three graded after the restart")
    by_student = {r["student"]: r for r in rows}
    assert [by_student[s]["graded"] for s in students] == [1, 1, 1], rows     # marked done once each
    assert by_student["k-slow"]["attempts"] == 2 and by_student["k-slow"]["score"] == max_score
    assert by_student["k-right"]["score"] == max_score and by_student["k-wrong"]["score"] < max_score
    for student, folder in zip(students, folders):
        pages = ex.fetch_feedback(student)
        assert list(pages) == [folder.split("+")[2]]
        assert page_score(pages[folder.split("+")[2]])[0] == by_student[student]["score"]


def test_a_resubmission_grades_the_newest(ex, max_score, tmp_path):
    old = ex.submit("r-student", WRONG)
    new = ex.submit("r-student", RIGHT)               # both in inbound before the service looks
    with ex.service(tmp_path / "service.log"):
        rows = ex.wait(done(["r-student"], 2), ["r-student"], what="the newest graded")
        assert {r["folder"]: r["state"] for r in rows} == {old: "superseded", new: "done"}
        assert gradebook_score(ex, "r-student") == max_score
        assert list(ex.fetch_feedback("r-student")) == [new.split("+")[2]]   # the superseded one has no page
        newest = ex.submit("r-student", WRONG)        # and once more, while the service runs
        rows = ex.wait(done(["r-student"], 3), ["r-student"], what="the third graded")
    assert {r["folder"]: r["graded"] for r in rows} == {old: 0, new: 1, newest: 1}
    assert gradebook_score(ex, "r-student") == next(r["score"] for r in rows if r["folder"] == newest) < max_score


def test_a_student_submitting_in_a_loop_is_rate_limited_without_blocking_the_others(ex, max_score, tmp_path):
    with ex.service(tmp_path / "service.log", "--min-interval", "3600"):
        first = ex.submit("rl-loop", RIGHT)
        ex.wait(done(["rl-loop"]), ["rl-loop"], what="the first graded")
        again = [ex.submit("rl-loop", WRONG) for _ in range(3)]
        ex.submit("rl-other", RIGHT)
        ex.wait(lambda rows: [r["state"] for r in rows] == ["done"], ["rl-other"], what="the other student graded")
        rows = ex.wait(lambda rows: [r["state"] for r in rows] == ["done", "superseded", "superseded", "pending"],
                       ["rl-loop"], what="the looping student's newest waiting, the rest superseded")
    assert [r["folder"] for r in rows] == [first] + again
    assert gradebook_score(ex, "rl-loop") == max_score            # the one graded hand-in, untouched
    assert gradebook_score(ex, "rl-other") == max_score


def test_two_workers_share_one_queue_and_a_killed_workers_job_is_finished_by_the_other(ex, max_score, tmp_path):
    students = ["tw-slow", "tw-1", "tw-2", "tw-3"]
    with ex.service(tmp_path / "a.log", "--lease", "4", state=tmp_path / "a") as a, \
            ex.service(tmp_path / "b.log", "--lease", "4", state=tmp_path / "b") as b:
        ex.submit("tw-slow", SLOW)
        rows = ex.wait(lambda rows: any(r["state"] == "running" for r in rows), ["tw-slow"], what="tw-slow claimed")
        holder, other = (a, b) if rows[0]["worker"].endswith(f":{a.pid}") else (b, a)
        for student in students[1:]:
            ex.submit(student, RIGHT)
        kill(holder)                                  # mid-grade (6 s of sleep in a cell of its own)
        rows = ex.wait(done(students), students, what="all graded by the survivor")
    by_student = {r["student"]: r for r in rows}
    assert all(r["graded"] == 1 and r["score"] == max_score for r in rows), rows   # no double grading
    assert by_student["tw-slow"]["attempts"] == 2 and by_student["tw-slow"]["worker"].endswith(f":{other.pid}")
    assert [by_student[s]["attempts"] for s in students[1:]] == [1, 1, 1]
    assert page_score(ex.fetch_feedback("tw-slow").popitem()[1]) == (max_score, max_score)


def test_hostile_submissions_never_delay_or_change_an_honest_one(ex, max_score, tmp_path):
    """Two workers: a loop holds one of them until the notebook timeout, the honest hand-in (queued after it)
    takes the other at once; a fork bomb (queued after the honest one) and a folder swapped for a link
    change nothing of it. (Each student takes at most one worker: the queue's own test.)"""
    students = ["h-loop", "h-honest", "h-fork"]
    with ex.service(tmp_path / "service.log", "--jobs", "2", "--cell-timeout", "10", "--notebook-timeout", "15"):
        ex.submit("h-loop", LOOP)
        honest_folder = ex.submit("h-honest", RIGHT)
        ex.submit("h-fork", FORK_BOMB)
        stolen = ex.inbound / f"h-evil+{EX1}+{honest_folder.split('+')[2]}+evilevilevil"
        stolen.symlink_to(ex.inbound / honest_folder)  # a folder swapped for a link to another's submission
        rows = ex.wait(done(students), students, what="all three graded")
    by_student = {r["student"]: r for r in rows}
    honest = by_student["h-honest"]
    assert honest["score"] == max_score and honest["graded"] == 1 and honest["attempts"] == 1
    assert honest["claimed_at"] < by_student["h-loop"]["finished_at"]   # graded beside the loop, not after it
    assert by_student["h-loop"]["status"] in ("ok", "timeout") and by_student["h-loop"]["score"] == 0
    assert by_student["h-fork"]["score"] < max_score
    assert ex.rows(["h-evil"]) == []                   # the link was never opened
    assert page_score(ex.fetch_feedback("h-honest").popitem()[1]) == (max_score, max_score)


def test_before_the_deadline_the_instructor_chooses_what_shows(ex, max_score, tmp_path):
    with ex.service(tmp_path / "visible.log", "--show", "visible", "--deadline", "2999-01-01 00:00:00 UTC"):
        ex.submit("sh-visible", WRONG)
        ex.wait(done(["sh-visible"]), ["sh-visible"])
    with ex.service(tmp_path / "past.log", "--show", "visible", "--deadline", "2000-01-01 00:00:00 UTC"):
        ex.submit("sh-after", WRONG)
        ex.wait(done(["sh-after"]), ["sh-after"])
    early = ex.fetch_feedback("sh-visible").popitem()[1]
    late = ex.fetch_feedback("sh-after").popitem()[1]
    assert "截止前只显示可见测试" in early and "隐藏测试（第" not in early and "Grade cell" not in early
    assert "隐藏测试的结果在截止后公布" in early
    assert "截止前" not in late and page_score(late) == (gradebook_score(ex, "sh-after"), max_score)


@pytest.mark.parametrize("database", ["postgresql", "sqlite"])
def test_the_queue_claims_newest_first_once_with_leases_and_a_rate_limit(database, db_url, tmp_path):
    """The queue's rules on their own, on both databases (SQLite: one machine's fallback)."""
    url = db_url if database == "postgresql" else f"sqlite:///{tmp_path / 'queue.db'}"
    queue = Queue(url, f"unit-{database}")
    try:
        assert queue.enqueue("a+ex+1", "a", "ex", 1.0) and not queue.enqueue("a+ex+1", "a", "ex", 1.0)
        queue.enqueue("a+ex+2", "a", "ex", 2.0)          # a's resubmission
        queue.enqueue("b+ex+1", "b", "ex", 1.5)
        first = queue.claim("w1", lease=60)
        assert first.folder == "a+ex+2"                   # a+ex+1 superseded, a's newest is the oldest enqueued left
        second = queue.claim("w2", lease=60)
        assert second.folder == "b+ex+1" and queue.claim("w3", lease=60) is None
        assert queue.done(first, "ok", 8.0, 8.0) and not queue.done(first, "ok", 8.0, 8.0)   # marked once
        queue.enqueue("b+ex+3", "b", "ex", 3.0)
        assert queue.claim("w3", lease=60) is None       # b is being graded: one at a time per student
        stale = Job(**{**second.__dict__, "token": "not-the-holder"})
        assert not queue.renew(stale, 60) and not queue.done(stale, "ok")
        assert queue.renew(second, 0)                      # the holder goes silent: its lease runs out at once
        limited = Queue(url, f"unit-{database}", min_interval=3600)   # a service with a rate limit
        try:
            assert limited.claim("w3", lease=60) is None   # b+ex+1 is superseded by b+ex+3, rate-limited for b
        finally:
            limited.close()
        queue.reset_waits()                                # a service without one starts: b+ex+3 may go at once
        taken = queue.claim("w3", lease=60)
        assert taken.folder == "b+ex+3" and not queue.done(second, "ok")   # the silent holder cannot finish
        assert {r["folder"]: (r["state"], r["graded"]) for r in queue.rows()} == {
            "a+ex+1": ("superseded", 0), "a+ex+2": ("done", 1), "b+ex+1": ("superseded", 0),
            "b+ex+3": ("running", 0)}
    finally:
        queue.close()


def test_with_check_owner_nobody_hands_in_as_another(ex, max_score, tmp_path):
    """--check-owner (now the default, --identity accounts): a hand-in counts only if its folder and files belong
    to the OS account named like its student (`nobody` is an account on every Debian machine; the impostor's
    folder belongs to root). The impostor's folder is never queued. tests/test_serve_trust.py does this with
    real student accounts on both sides."""
    own = ex.submit("nobody", RIGHT)
    impostor = ex.submit("s-impostor", RIGHT)
    uid = pwd.getpwnam("nobody").pw_uid
    for path in [ex.inbound / own, *(ex.inbound / own).iterdir()]:
        os.chown(path, uid, -1)
    with ex.service(tmp_path / "service.log", "--check-owner"):
        rows = ex.wait(done(["nobody"]), ["nobody"])
    assert [(r["folder"], r["status"], r["score"]) for r in rows] == [(own, "ok", max_score)]
    assert ex.rows(["s-impostor"]) == [] and impostor in os.listdir(ex.inbound)
    assert ex.fetch_feedback("s-impostor") == {}
