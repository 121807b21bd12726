"""The first hour in JupyterLab, in a real browser: `make lab` shows students nbgrader's Validate button
and nothing of its instructor or exchange tools (no "Error fetching courses!"); `make lab-instructor`
keeps the formgrader."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from course import ROOT

TOKEN = "agentrl-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lab(folder: str, student: bool, tmp_path: Path):
    port = _free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "HOME": str(tmp_path)}
    if student:
        env["JUPYTER_CONFIG_PATH"] = str(ROOT / "grader" / "student-lab")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", f"--IdentityProvider.token={TOKEN}", "--allow-root",
         f"--notebook-dir={ROOT / folder}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
            return proc, base
        except OSError:
            time.sleep(0.5)
    proc.kill()
    pytest.fail("JupyterLab did not start")


def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    messages = []
    page.on("console", lambda m: messages.append(m.text))
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook", timeout=120_000)
    page.wait_for_timeout(3000)  # let every plugin start (course lists fetch on start)
    return page, messages


def test_student_lab_has_validate_and_no_instructor_tools(browser, tmp_path, artifacts):
    proc, base = _lab("notebooks", True, tmp_path)
    try:
        page, messages = _open(browser, f"{base}/lab/tree/ex1_format_reward.ipynb?token={TOKEN}")
        body = page.inner_text("body")
        assert "Error fetching courses" not in body and not any("fetching courses" in m for m in messages)
        assert page.locator("button:has-text('Validate'), [title*='Validate']").count() > 0
        menus = page.inner_text("#jp-MainMenu") if page.locator("#jp-MainMenu").count() else ""
        assert "Nbgrader" not in menus and "Formgrader" not in body
        page.screenshot(path=str(artifacts / "lab-student.png"))
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{base}/formgrader?token={TOKEN}", timeout=10)
        page.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_instructor_lab_keeps_the_formgrader(tmp_path):
    proc, base = _lab("grader", False, tmp_path)
    try:
        assert urllib.request.urlopen(f"{base}/formgrader?token={TOKEN}", timeout=30).status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
