"""The whole loop on a real JupyterHub, in headless Chromium: two students log in, fetch exercise 1 from the
Assignment List in their own lab, hand it in (one right, one wrong), and, with no instructor doing anything,
fetch feedback that shows their own score; the instructor's formgrader shows both. The grading service is
the hub's managed service, sandboxed at the level `doctor` reports here.

The answers are written into each student's fetched notebook on disk (what saving it in the lab does);
every exchange step is a click in the lab. The hub, its proxy, the labs and the service are real processes
(tests/jupyterhub_server.py); the gradebook and the queue a real PostgreSQL (a database of
its own on the session's server).
"""
from __future__ import annotations

import os
import re

import pytest

from course import filled, mutated_fills, mutations, reference_fills
from exchange import EX1, Exchange
from jupyterhub_server import PASSWORD, jupyterhub
from grader.sandbox import choose

RIGHT = filled(EX1, reference_fills(EX1))
WRONG = filled(EX1, mutated_fills(EX1, next(iter(mutations(EX1).values()))[0]))
SCORE = re.compile(r"得分：([0-9.]+) / ([0-9.]+)")


def _login(browser, base: str, user: str):
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(f"{base}/hub/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    page.click("input[type=submit], button[type=submit]")
    return page


def _open_assignment_list(page) -> None:
    page.wait_for_selector(".jp-Launcher", timeout=150_000)
    page.click(".lm-MenuBar >> text=Nbgrader")
    page.click(".lm-Menu >> text=Assignment List")
    page.wait_for_selector("#released_assignments_list button:has-text('Fetch')", timeout=60_000)


def _fetch_fill_submit(page, ex: Exchange, student: str, notebook: str) -> None:
    page.click("#released_assignments_list button:has-text('Fetch')")
    page.wait_for_selector("#fetched_assignments_list button:has-text('Submit')", timeout=60_000)
    (ex.homes / student / EX1 / f"{EX1}.ipynb").write_text(notebook, encoding="utf-8")
    page.click("#fetched_assignments_list button:has-text('Submit')")
    page.wait_for_selector("#submitted_assignments_list button:has-text('Fetch Feedback')", timeout=60_000)


def _feedback_score(page) -> tuple[float, float]:
    """Click Fetch Feedback until the feedback is there (a hang guard of 3 minutes, no timing check), open
    it as the student would (view feedback, then the page in the file browser), read its score."""
    for _ in range(90):
        page.click("#submitted_assignments_list button:has-text('Fetch Feedback')")
        page.wait_for_timeout(2000)
        if page.query_selector("#submitted_assignments_list a:has-text('view feedback')"):
            break
    else:
        pytest.fail("no feedback within 3 minutes")
    page.click("#submitted_assignments_list a:has-text('view feedback')")    # the file browser: feedback/<time>/
    page.wait_for_selector(f".jp-DirListing-item:has-text('{EX1}.html')", timeout=30_000)
    page.dblclick(f".jp-DirListing-item:has-text('{EX1}.html')")
    heading = page.frame_locator(".jp-HTMLViewer iframe").locator("h4", has_text="得分：")
    text = heading.first.inner_text(timeout=30_000)
    found = SCORE.search(text)
    assert found, text[:1000]
    return float(found.group(1)), float(found.group(2))


def test_two_students_get_their_own_feedback_without_the_instructor(browser, postgres, tmp_path, artifacts):
    db_url = postgres.database("hub")
    # formgrader wants the course folder inside the instructor's lab folder (their home here)
    ex = Exchange.create(tmp_path, db_url, course=tmp_path / "homes" / "teacher" / "course")
    db_url_file = tmp_path / "db-url"
    db_url_file.write_text(db_url, encoding="utf-8")
    os.chmod(db_url_file, 0o600)
    with jupyterhub(tmp_path, ex, ["alice", "bob"], "teacher", db_url_file) as base:
        pages = {}
        for student, notebook in (("alice", RIGHT), ("bob", WRONG)):
            pages[student] = page = _login(browser, base, student)
            _open_assignment_list(page)
            _fetch_fill_submit(page, ex, student, notebook)
        scores = {student: _feedback_score(page) for student, page in pages.items()}
        pages["alice"].screenshot(path=str(artifacts / "hub-feedback-alice.png"))
        teacher = _login(browser, base, "teacher")
        teacher.wait_for_selector(".jp-Launcher", timeout=150_000)
        teacher.goto(f"{base}/user/teacher/formgrader/gradebook/{EX1}/{EX1}")
        teacher.click("button:has-text('Show All Names')", timeout=60_000)   # formgrader hides them at first
        teacher.wait_for_selector("tbody tr:has-text('alice')", timeout=30_000)
        teacher.wait_for_timeout(500)
        gradebook = teacher.locator("tbody tr").all_text_contents()
        teacher.screenshot(path=str(artifacts / "hub-formgrader.png"))   # names shown
    log = (tmp_path / "hub" / "hub.log").read_text(encoding="utf-8")
    full = scores["alice"][1]
    assert scores["alice"] == (full, full) and 0 < scores["bob"][0] < full, scores
    for student, (score, _) in scores.items():   # the instructor's formgrader: each student's row, same score
        (row,) = [r for r in gradebook if student in r]
        assert f"{score:g} / {full:g}" in " ".join(row.split()), (student, gradebook)
    assert f"isolation level: {choose('auto')}" in log      # the service said its level, as doctor does
