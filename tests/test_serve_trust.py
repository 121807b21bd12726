"""Graded on arrival and still trusted: hostile students on a hub, as real OS accounts, next to honest ones.

The hub here is what `make release EXCHANGE=… COURSE=…` makes (grader/publish/exchange.py), in a folder every
account can reach; students are real accounts (useradd, removed afterwards). Honest students run nbgrader's
own exchange code as themselves (fetch, submit, fetch feedback: tests/exchange.py forks after the imports, as
other accounts cannot start this venv's interpreter); attackers use plain shell tools as themselves (runuser).
The service is `python -m grader serve` as root with its defaults (identity accounts), on a real PostgreSQL.

For every attack of the issue a student account does it next to an honest one: the honest hand-in gets the
score it gets alone, and its page; the attacker gains nothing. No test measures time: where the issue asks
for "soon", the tests say it by order and by counted work (the queue's rows, the status lines, the claim's
query plan); `make bench-serve` measures the latency with and without the junk.
"""
from __future__ import annotations

import datetime
import io
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nbgrader.api import Gradebook
from sqlalchemy import create_engine, text

from course import filled, mutated_fills, mutations, reference_fills
from exchange import EX1, Exchange, _in_process, as_account
from grader.course import COURSE_ID, EXCHANGE_MODES
from grader.serve.deliver import feedback_name
from grader.serve.layout import Layout, check
from grader.serve.queue import TABLE, Queue
from grader.serve.scanner import Limits
from scratch import scratch_root

RIGHT = filled(EX1, reference_fills(EX1))
WRONG = filled(EX1, mutated_fills(EX1, next(iter(mutations(EX1).values()))[0]))
SCORE = re.compile(r"（得分：([0-9.]+) / ([0-9.]+)）")   # the feedback page\'s heading (grader/grade/templates)
RUN = "t" + secrets.token_hex(2)          # this run's accounts: t1a2b…; other runs on the machine have others
ROLES = ("hon1", "hon2", "hon3", "hon4", "hon5", "hon6", "hon7", "hon8", "bob", "mal", "flood", "big", "clock")
LOOK_ALIKE = f"{RUN}bоb"                  # Cyrillic о: a person cannot tell it from bob
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
TRY = 'try() { if "$@" >/dev/null 2>&1; then echo "did: $*"; fi; }\n'


def with_cell(notebook_json: str, code: str) -> str:
    nb = nbformat.reads(notebook_json, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(code))
    return nbformat.writes(nb)


def _useradd(name: str, home: Path, badname: bool = False) -> None:
    subprocess.run(["useradd", "-M", "-d", str(home), "-s", "/bin/sh", *(["--badname"] if badname else []), name],
                   check=True, capture_output=True)
    home.mkdir()
    pw = pwd.getpwnam(name)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    os.chmod(home, 0o700)


def shell(account: str, script: str, **values) -> list[str]:
    """The script run by the OS account with sh (values passed in its environment); what it says it did."""
    env = {"PATH": "/usr/bin:/bin", "HOME": pwd.getpwnam(account).pw_dir, "LC_ALL": "C.UTF-8",
           **{k: str(v) for k, v in values.items()}}
    proc = subprocess.run([RUNUSER, "-u", account, "--", "sh", "-c", TRY + script], capture_output=True,
                          env=env, cwd="/", timeout=300)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode(errors="replace").split("\n")[:-1]


class Hub:
    def __init__(self, base: Path, ex: Exchange, who: dict[str, str]):
        self.base, self.ex, self.who = base, ex, who
        self.course, self.inbound = ex.course, ex.inbound
        self.feedback = ex.root / COURSE_ID / "feedback"

    def __getitem__(self, role: str) -> str:
        return self.who[role]

    def give(self, role: str, name: str, data: str) -> Path:
        """A file in the account's home (what it wrote itself)."""
        pw = pwd.getpwnam(self.who.get(role, role))
        path = Path(pw.pw_dir) / name
        path.write_text(data, encoding="utf-8")
        os.chown(path, pw.pw_uid, pw.pw_gid)
        return path

    def rows(self, *accounts: str) -> list[dict]:
        return self.ex.rows(list(accounts))

    def wait(self, ready, *accounts: str, what: str = "") -> list[dict]:
        return self.ex.wait(ready, list(accounts), timeout=300, what=what)

    def graded(self, account: str, count: int = 1) -> dict:
        """Wait until the account has `count` rows and none still to grade; return its newest row."""
        rows = self.wait(lambda rs: len(rs) >= count and all(r["state"] in ("done", "superseded") for r in rs),
                         account, what=f"{account} graded")
        return max(rows, key=lambda r: r["id"])

    def page(self, account: str) -> str:
        """nbgrader fetch_feedback as the student: the page of their newest hand-in."""
        pages = self.ex.fetch_feedback(account)
        assert pages, f"{account} fetched no feedback"
        return pages[max(pages)]

    def score_in_gradebook(self, account: str):
        with Gradebook(self.ex.db_url, COURSE_ID) as gb:
            sub = gb.find_submission(EX1, account)
            return sub.score, sub.timestamp


def page_score(html: str) -> tuple[float, float]:
    found = SCORE.search(html)
    assert found, html[:1500]
    return float(found.group(1)), float(found.group(2))


@pytest.fixture(scope="module")
def db_url(postgres):
    return postgres.database("serve_trust")


@pytest.fixture(scope="module")
def hub(db_url):
    base = Path(tempfile.mkdtemp(prefix="agentrl-hub-", dir=scratch_root()))   # 120,000 folders: tests/scratch.py
    os.chmod(base, 0o755)                 # every account reaches the exchange and its own home in here
    homes = base / "homes"
    homes.mkdir(mode=0o755)
    who = {role: f"{RUN}{role}" for role in ROLES}
    made = []
    try:
        for name in who.values():
            _useradd(name, homes / name)
            made.append(name)
        _useradd(LOOK_ALIKE, homes / LOOK_ALIKE, badname=True)
        made.append(LOOK_ALIKE)
        ex = Exchange.create(base, db_url)
        warm = base / "warm-home"         # every module nbgrader's exchange needs, imported before any fork
        warm.mkdir()
        for kind in ("fetch_assignment", "submit", "fetch_feedback"):
            _in_process(kind, ex.root, warm, EX1, "warm")
        for folder in ex.inbound.iterdir():
            shutil.rmtree(folder)
        ex.accounts = True
        yield Hub(base, ex, who)
    finally:
        for name in made:
            subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
            subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


# ------------------------------------------------------------------ safe by default


def _tiny_layout(tmp: Path) -> tuple[Path, Path]:
    """The folders make release makes, without the release (enough for the service to judge them)."""
    root, course = tmp / "exchange", tmp / "course"
    for rel, mode in EXCHANGE_MODES.items():
        (root / rel).mkdir(parents=True, exist_ok=True)
        os.chmod(root / rel, mode)
    course.mkdir(mode=0o700)
    return root, course


def _serve_refuses(root: Path, course: Path, db_url: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "grader", "serve", "--exchange", str(root), "--course", str(course)],
                          capture_output=True, text=True, env={**os.environ, "AGENTRL_DB_URL": db_url}, timeout=300)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    return proc.stderr


def test_the_service_refuses_a_layout_a_student_could_read_or_take_over(tmp_path, db_url, hub):
    """A world-readable course folder and a non-sticky 0777 exchange: refused, each with its exact fix (and
    doctor says the same); the layout make release made passes."""
    assert check(Layout(hub.ex.root, hub.course)) == []                       # what make release EXCHANGE=… makes
    assert {oct(os.stat(hub.ex.root / rel).st_mode & 0o7777) for rel in EXCHANGE_MODES} == {
        oct(m) for m in EXCHANGE_MODES.values()}
    root, course = _tiny_layout(tmp_path)
    assert check(Layout(root, course)) == []
    os.chmod(course, 0o755)
    os.chmod(root, 0o777)
    url_file = tmp_path / "db-url"
    url_file.write_text(db_url)
    os.chmod(url_file, 0o644)
    os.chmod(root / COURSE_ID / "feedback", 0o755)
    os.chmod(root / COURSE_ID / "inbound", 0o2733)                          # nbgrader's own: no sticky bit
    fixes = {f.fix for f in check(Layout(root, course, db_url_file=url_file))}
    assert fixes == {f"chmod 0700 {course}", f"chmod 1777 {root}", f"chmod 0600 {url_file}",
                     f"chmod 0711 {root / COURSE_ID / 'feedback'}", f"chmod 3733 {root / COURSE_ID / 'inbound'}"}
    said = _serve_refuses(root, course, db_url)
    assert f"chmod 0700 {course}" in said and f"chmod 1777 {root}" in said, said
    assert not (course / "nbgrader_config.py").exists()                       # refused before anything was made
    doctor = subprocess.run([sys.executable, "-m", "grader", "doctor", "--exchange", str(root), "--course", str(course),
                             "--db-url-file", str(url_file)], capture_output=True, text=True, timeout=300)
    assert doctor.returncode == 2 and f"chmod 0711 {root / COURSE_ID / 'feedback'}" in doctor.stdout, doctor.stdout
    assert "identity accounts" in doctor.stdout and "还没有运行过" in doctor.stdout


# ------------------------------------------------------------------ the attacks, one service for all of them


@pytest.fixture(scope="class")
def service(hub, artifacts):
    log = hub.base / "service.log"
    with hub.ex.service(log, "--jobs", "2", "--status-every", "1", "--cell-timeout", "30", "--notebook-timeout",
                        "60", identity="accounts") as proc:
        yield proc, log
    shutil.copy(log, artifacts / "serve-trust-service.log")      # what the service said through every attack
    assert proc.returncode == 0, log.read_text(errors="replace")[-3000:]


@pytest.fixture(scope="class")
def alone(hub, service):
    """The scores a right and a wrong hand-in get with nothing else in the exchange (the quiet run)."""
    hub.ex.submit(hub["hon1"], RIGHT)
    hub.ex.submit(hub["hon2"], WRONG)
    right, wrong = hub.graded(hub["hon1"]), hub.graded(hub["hon2"])
    assert right["status"] == wrong["status"] == "ok" and wrong["score"] < right["score"] == right["max_score"]
    return {RIGHT: right["score"], WRONG: wrong["score"]}


@pytest.mark.usefixtures("service")
class TestAttacksNextToHonestStudents:
    def test_a_student_reads_no_solution_no_hand_in_and_no_page(self, hub, alone):
        honest = hub["hon1"]
        (folder,) = [r["folder"] for r in hub.rows(honest)]
        secret = (hub.inbound / folder / "submission_secret.txt").read_text()
        did = shell(hub["mal"], """
            try cat "$C/source/ex1_format_reward/ex1_format_reward.ipynb"
            try ls "$C"
            try cat "$C/submitted/$H/ex1_format_reward/ex1_format_reward.ipynb"
            try cat "$C/autograded/$H/ex1_format_reward/ex1_format_reward.ipynb"
            try cat "$C/feedback/$H/ex1_format_reward/ex1_format_reward.html"
            try ls "$C/.grading-service"
            try ls "$I"
            try ls "$I/$F"
            try cat "$I/$F/submission_secret.txt"
            try cat "$I/$F/ex1_format_reward.ipynb"
            try ls "$FB"
            try ls "$HOME/../$H"
            try ls "$X/outbound/ex1_format_reward"
            """, C=hub.course, H=honest, I=hub.inbound, F=folder, FB=hub.feedback, X=hub.ex.root / COURSE_ID)
        assert did == [f"did: ls {hub.ex.root / COURSE_ID}/outbound/ex1_format_reward"]   # the release only
        assert oct(os.stat(hub.inbound / folder).st_mode & 0o777) == "0o700"    # made private on arrival
        page = hub.page(honest)                      # only the holder of the secret finds it, by its name
        assert page_score(page)[0] == alone[RIGHT]
        assert (hub.feedback / feedback_name(secret, EX1)).is_file()

    def test_nobody_hands_in_as_another_or_swaps_a_file_into_their_folder(self, hub, alone):
        victim, frozen, twin = hub["hon3"], hub["hon4"], hub["bob"]
        hub.give("mal", "right.ipynb", RIGHT)
        shell(hub["mal"], """                         # a complete folder in the victim's name, a right notebook
            F="$I/$V+ex1_format_reward+2026-01-01 00:00:00.000000 UTC+impostor0001"
            mkdir "$F" && cp "$HOME/right.ipynb" "$F/ex1_format_reward.ipynb"
            printf '%0128d' 0 > "$F/submission_secret.txt"
            """, I=hub.inbound, V=victim)
        hub.ex.submit(victim, WRONG)                  # the victim's own, wrong hand-in
        hub.ex.submit(frozen, RIGHT)
        hub.ex.submit(twin, RIGHT)
        assert hub.graded(victim)["score"] == alone[WRONG]
        (own,) = [r["folder"] for r in hub.rows(frozen)]
        did = shell(hub["mal"], """                   # she learned the folder's name: replace, rename, remove
            try rm -f "$I/$F/ex1_format_reward.ipynb"
            try cp "$HOME/right.ipynb" "$I/$F/ex1_format_reward.ipynb"
            try mv "$I/$F" "$I/$M+ex1_format_reward+2026-01-01 00:00:00.000000 UTC+stolen000001"
            try rm -rf "$I/$F"
            """, I=hub.inbound, F=own, M=hub["mal"])
        assert did == []
        assert hub.graded(frozen)["score"] == alone[RIGHT]
        assert hub.graded(twin)["score"] == alone[RIGHT]
        hub.ex.submit(LOOK_ALIKE, RIGHT)              # a Cyrillic look-alike account hands in the same exercise
        copy = hub.graded(LOOK_ALIKE)
        assert (copy["status"], copy["score"], copy["graded"]) == ("conflict", None, 1), copy
        assert twin in copy["conflict"] and "看起来一样" in copy["conflict"]
        assert LOOK_ALIKE in hub.graded(twin)["note"]            # make grade's note, on both
        assert "没有得到分数" in hub.page(LOOK_ALIKE)
        hub.ex.submit(twin, WRONG)                    # the first id hands in again: graded as ever
        again = hub.graded(twin, count=2)
        assert (again["status"], again["score"]) == ("ok", alone[WRONG])
        assert hub.rows(hub["mal"]) == [] and len(hub.rows(victim)) == 1
        assert page_score(hub.page(victim))[0] == alone[WRONG]
        assert page_score(hub.page(frozen))[0] == alone[RIGHT]
        assert hub.score_in_gradebook(twin)[0] == alone[WRONG]

    def test_nobody_takes_over_the_course_in_the_exchange(self, hub, alone):
        honest = hub["hon5"]
        did = shell(hub["mal"], """
            try mv "$X/agentrl-cloze" "$X/agentrl-cloze-old"
            try mkdir "$X/agentrl-cloze/inbound2"
            try mv "$X/agentrl-cloze/inbound" "$X/agentrl-cloze/inbound-old"
            try ln -s /etc/shadow "$X/agentrl-cloze/feedback/.planted.tmp"
            try touch "$X/agentrl-cloze/outbound/ex1_format_reward/ex1_format_reward.ipynb"
            try mkdir "$X/agentrl-cloze-x"
            """, X=hub.ex.root)
        assert did == [f"did: mkdir {hub.ex.root}/agentrl-cloze-x"]      # a folder of her own: no course's
        hub.ex.submit(honest, RIGHT)
        assert hub.graded(honest)["score"] == alone[RIGHT]
        assert page_score(hub.page(honest))[0] == alone[RIGHT]

    def test_the_time_is_the_arrival_never_the_folders_name(self, hub, alone, db_url):
        clock, honest = hub["clock"], hub["hon8"]
        hub.give("clock", "right.ipynb", RIGHT)
        made = """
            F="$I/$WHO+ex1_format_reward+$WHEN+$RAND"
            mkdir "$F" && cp "$HOME/right.ipynb" "$F/ex1_format_reward.ipynb"
            printf '%0128d' 7 > "$F/submission_secret.txt"
            """
        shell(clock, made, I=hub.inbound, WHO=clock, WHEN="2099-01-01 00:00:00.000000 UTC", RAND="future000001")
        shell(clock, made, I=hub.inbound, WHO=honest, WHEN="2099-01-01 00:00:00.000000 UTC", RAND="future000002")
        hub.ex.submit(clock, WRONG)                  # her real, later hand-in (the 2099 one may still be waiting)
        rows = hub.wait(lambda rs: len(rs) == 2 and all(r["state"] in ("done", "superseded") for r in rs), clock)
        later = max(rows, key=lambda r: r["id"])
        assert later["student_time"] < "2099" and later["state"] == "done" and later["score"] == alone[WRONG]
        assert hub.score_in_gradebook(clock)[0] == alone[WRONG]       # the 2099 claim superseded nothing
        hub.ex.submit(honest, RIGHT)
        assert hub.graded(honest)["score"] == alone[RIGHT] and len(hub.rows(honest)) == 1
        shell(clock, made, I=hub.inbound, WHO=clock, WHEN="2000-01-01 00:00:00.000000 UTC", RAND="past00000001")
        old = hub.graded(clock, count=3)
        score, timestamp = hub.score_in_gradebook(clock)
        with create_engine(db_url).connect() as conn:
            year = conn.execute(text("SELECT extract(year from now())")).scalar()
        assert old["student_time"].startswith("2000-") and score == alone[RIGHT]
        arrived = timestamp.replace(tzinfo=datetime.timezone.utc).timestamp()    # nbgrader keeps naive UTC
        assert timestamp.year == year and abs(arrived - old["submitted_at"]) < 1e-3   # the arrival
        assert old["submitted_at"] >= later["submitted_at"]

    def test_a_huge_cell_gets_the_short_page_and_holds_nobody_up(self, hub, alone):
        big, honest = hub["big"], hub["hon7"]
        hub.ex.submit(big, with_cell(RIGHT, "x = '" + "a" * 1_000_000 + "'"))
        hub.ex.submit(honest, RIGHT)
        assert hub.graded(honest)["score"] == alone[RIGHT] and hub.graded(big)["score"] == alone[RIGHT]
        short = hub.page(big)
        assert "反馈页没有生成" in short and page_score(short)[0] == alone[RIGHT] and len(short) < 5000
        full = hub.page(honest)
        assert page_score(full)[0] == alone[RIGHT] and "反馈页没有生成" not in full and len(full) > 20_000

    def test_junk_neither_stops_nor_starves_the_grading(self, hub, alone, service):
        """The names that killed the scanner, descriptors that leaked, 600 made-up students, 20,000 complete and
        100,000 empty folders of one student: the honest hand-in is judged in its own account's turn, claimed
        before the attacker's backlog is through, graded as alone; every name parsed once, bounded work per pass,
        no descriptor left open, no thread lost, no forged log line."""
        proc, log = service
        mal, flood, honest = hub["mal"], hub["flood"], hub["hon6"]
        fds_before = len(os.listdir(f"/proc/{proc.pid}/fd"))
        ts = "2026-06-01 00:00:00.000000 UTC"
        junk = hub.base / "junk.tar"
        forged = f"[grader serve x] graded '{honest}+ex1_format_reward' ok 8.0/8.0"
        with tarfile.open(junk, "w", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape") as tar:
            def folder(name, files=()):
                info = tarfile.TarInfo(name)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                for file_name, data in files:
                    info = tarfile.TarInfo(f"{name}/{file_name}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
            secret = [("submission_secret.txt", b"0" * 128), ("ex1_format_reward.ipynb", b"{}")]
            folder(f"{mal}+ex1_format_reward+2026-01-01 00:00:00 ..+dots00000001")
            folder(f"{mal}+ex1_format_reward+{ts}+bytes\udcff\udcfe")
            folder(f"{mal}+ex1_format_reward+{ts}+line\n{forged}", secret)
            for i in range(200):
                folder(f"{mal}+ex1_format_reward+{ts}+secretdir{i:03d}")
                folder(f"{mal}+ex1_format_reward+{ts}+secretdir{i:03d}/submission_secret.txt")
            for i in range(600):
                folder(f"madeup{i:04d}+ex1_format_reward+{ts}+madeup{i:06d}", secret)
        os.chmod(junk, 0o644)
        flood_tar = hub.base / "flood.tar"
        with tarfile.open(flood_tar, "w", format=tarfile.GNU_FORMAT) as tar:
            for i in range(120_000):
                info = tarfile.TarInfo(f"{flood}+ex1_format_reward+{ts}+f{i:011d}")
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                if i < 20_000:                      # complete ones, with a worthless notebook
                    for file_name, data in ((b"submission_secret.txt", b"1" * 128), (b"ex1_format_reward.ipynb", b"x")):
                        item = tarfile.TarInfo(f"{info.name}/{file_name.decode()}")
                        item.size = len(data)
                        tar.addfile(item, io.BytesIO(data))
        os.chmod(flood_tar, 0o644)
        shell(mal, 'cd "$I" && tar -xf "$T"', T=junk, I=hub.inbound)
        shell(flood, 'cd "$I" && tar -xf "$T"', T=flood_tar, I=hub.inbound)
        hub.ex.submit(honest, RIGHT)
        row = hub.graded(honest)
        assert (row["score"], row["attempts"], row["graded"]) == (alone[RIGHT], 1, 1)
        assert page_score(hub.page(honest))[0] == alone[RIGHT]
        floods = hub.rows(flood)
        assert sum(r["state"] == "pending" for r in floods) <= 1       # one pending per student and assignment
        later = [r for r in floods if r["enqueued_at"] > row["claimed_at"]]
        assert later and len(floods) < 20_000         # claimed while the attacker's backlog was still being judged
        claimed_between = [r for r in hub.ex.rows() if r["claimed_at"] and row["enqueued_at"] < r["claimed_at"]
                           < row["claimed_at"]]
        assert len(claimed_between) <= 2 * 2, claimed_between   # others claimed meanwhile: a turn each per worker
        batches = {}
        for r in floods:
            batches[r["enqueued_at"]] = batches.get(r["enqueued_at"], 0) + 1
        assert max(batches.values()) <= Limits().per_account      # folders of one account judged per pass
        assert hub.rows(*[f"madeup{i:04d}" for i in range(600)]) == [] and hub.rows(mal) == []
        fds_after = len(os.listdir(f"/proc/{proc.pid}/fd"))
        assert fds_after <= fds_before + 8, (fds_before, fds_after)
        said = log.read_text(errors="replace")
        lines = said.split("\n")
        assert not any(line.startswith("[grader serve x]") for line in lines)
        assert "\\n[grader serve x]" in said                       # the name, escaped, on its own line
        status = [line for line in lines if "status: last scan" in line]
        numbers = [tuple(map(int, re.search(r"parsed (\d+), judged (\d+) this pass", s).groups())) for s in status]
        assert all(p <= Limits().looks and j <= Limits().per_pass for p, j in numbers)
        last = re.search(r"(\d+) folders listed, (\d+) parsed", status[-1])
        assert int(last.group(2)) <= int(last.group(1)) + 50      # each name parsed once, not once a pass
        assert re.search(r"threads 4/4 alive, 0 restarts", status[-1]), status[-1]
        for name in os.listdir(hub.inbound):                       # the class goes on without the junk
            if name.startswith((mal, flood, "madeup")):
                shutil.rmtree(hub.inbound / name)


# ------------------------------------------------------------------ the shared-account (jovyan) convention


def test_under_one_shared_account_each_hub_user_hands_in_only_in_their_own_folder(hub):
    """docker-stacks' convention: every lab is the same OS account, each in a container of its own; the hub
    mounts DIR/<user> as the container's inbound (here a mount namespace per student: bubblewrap binds the
    attacker's folder over inbound and hides DIR). The attacker hands in under the honest user's name inside
    her own folder and looks for the others' folders and pages: nothing; the honest user's grade is her own."""
    shared = hub["hon1"] + "-jov"
    homes, per_user = hub.base / "homes-per-user", hub.base / "inbound-per-user"
    _useradd(shared, hub.base / "homes" / shared)
    try:
        pw = pwd.getpwnam(shared)
        homes.mkdir(mode=0o755)
        per_user.mkdir(mode=0o711)
        honest, attacker = f"{RUN}ualice", f"{RUN}umallory"
        for user in (honest, attacker):
            for folder in (per_user / user, homes / user):
                folder.mkdir(mode=0o700)
                os.chown(folder, pw.pw_uid, pw.pw_gid)
        view = hub.base / "view-alice"          # what alice's container sees at Exchange.root
        (view / COURSE_ID).mkdir(parents=True)
        os.chmod(view, 0o1777)
        for part, target in (("outbound", hub.ex.root / COURSE_ID / "outbound"), ("inbound", per_user / honest),
                             ("feedback", hub.feedback)):
            (view / COURSE_ID / part).symlink_to(target)

        def as_alice(kind):
            as_account(shared, _in_process, kind, view, homes / honest, EX1, honest)   # JUPYTERHUB_USER: alice

        def hand_in():
            (homes / honest / EX1 / f"{EX1}.ipynb").write_text(WRONG, encoding="utf-8")
            as_alice("submit")

        as_alice("fetch_assignment")
        hub.give(shared, "right.ipynb", RIGHT)
        with hub.ex.service(hub.base / "per-user.log", "--identity", "per-user", "--inbound-per-user",
                            str(per_user), "--status-every", "1"):
            hand_in()
            alone = hub.graded(honest)           # alice alone
            assert alone["status"] == "ok" and alone["folder"].startswith(f"{honest}/")
            did = _in_container(shared, per_user, attacker, hub.inbound, """
                F="$I/$A+ex1_format_reward+2026-01-01 00:00:00.000000 UTC+notmine00001"
                mkdir "$F" && cp "$HOME/right.ipynb" "$F/ex1_format_reward.ipynb"
                printf '%0128d' 3 > "$F/submission_secret.txt"
                try ls "$D/$A"
                try ls "$FB"
                try ls "$D"/*/
                """, A=honest, D=per_user, FB=hub.feedback)
            assert did == [], did
            assert len(os.listdir(per_user / attacker)) == 1       # her folder, in her own inbound only
            hand_in()
            row = hub.graded(honest, count=2)
            assert (row["status"], row["score"]) == ("ok", alone["score"])
            as_alice("fetch_feedback")
        pages = sorted((homes / honest / EX1 / "feedback").glob(f"*/{EX1}.html"))
        assert [page_score(p.read_text(encoding="utf-8"))[0] for p in pages] == [alone["score"]] * 2
        assert len(hub.rows(honest)) == 2 and hub.rows(attacker) == []
        said = (hub.base / "per-user.log").read_text(errors="replace")
        assert f"not {honest}'s own folder (per-user)" in said
    finally:
        subprocess.run(["userdel", shared], capture_output=True)


def _in_container(account: str, per_user: Path, user: str, inbound: Path, script: str, **values) -> list[str]:
    """The script as the shared account in a mount namespace where inbound is the user's own folder and the
    folder of everyone's is an empty tmpfs (what DockerSpawner's volumes give each container)."""
    pw = pwd.getpwnam(account)
    env = {"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir, "LC_ALL": "C.UTF-8", "I": str(inbound),
           **{k: str(v) for k, v in values.items()}}
    proc = subprocess.run(["bwrap", "--dev-bind", "/", "/", "--tmpfs", str(per_user), "--bind", str(per_user / user),
                           str(inbound), "--", "setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}",
                           "--clear-groups", "sh", "-c", TRY + script], capture_output=True, env=env, cwd="/",
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode(errors="replace").split("\n")[:-1]


# ------------------------------------------------------------------ the parts, on their own


NASTY = ["", "+", "++", "a+b", "s+ex1_format_reward+", "s+ex1_format_reward+2026-01-01 00:00:00 ..+x",
         "s+ex1_format_reward+2026-01-01 00:00:00.000000 UTC+bad\udcff",
         "s\udcff+ex1_format_reward+2026-01-01 00:00:00", "s+ex1_format_reward+2026-01-01 00:00:00+x+y",
         "s+ex1_format_reward+२०२६-01-01 00:00:00", "s+ex1_format_reward+2026-01-01 00:00:00.000000 UTC+line\n[x]",
         ".s+ex1_format_reward+2026-01-01 00:00:00",
         "s*+ex1_format_reward+2026-01-01 00:00:00", "s+ex1_format_reward+99999-01-01 00:00:00",
         "s+ex1_format_reward+2026-13-45 99:99:99", "s+ex1_format_reward+" + "9" * 100_000]


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="/") | st.sampled_from("+ .:-0123456789"),
               max_size=80))
def test_a_folder_name_is_a_hand_in_or_nothing_and_never_an_exception(name):
    from grader.serve.inbound import parse

    arrival = parse(name, {EX1})
    assert arrival is None or (arrival.assignment == EX1 and "+" not in arrival.student)


def test_the_nasty_names_parse_as_nothing_and_a_real_one_as_itself():
    from grader.serve.inbound import parse

    assert [parse(name, {EX1}) for name in NASTY] == [None] * len(NASTY)
    real = parse(f"s1+{EX1}+2099-01-01 00:00:00.000000 UTC+AbC-_12345678", {EX1})
    assert (real.student, real.claim) == ("s1", "2099-01-01 00:00:00.000000 UTC")   # a claim, nothing more


def test_judging_and_reading_close_every_descriptor(tmp_path):
    from grader.serve.inbound import DIR_FLAGS, judge, read_handin

    inbound = tmp_path / "inbound"
    inbound.mkdir()
    kinds = {"dir": lambda p: p.mkdir(), "fifo": os.mkfifo, "link": lambda p: p.symlink_to("/etc/hostname"),
             "big": lambda p: p.write_bytes(b"0" * 5000), "short": lambda p: p.write_text("00"),
             "other": lambda p: (p.write_text("0" * 128), os.chown(p, 65534, 65534))}
    for kind, make in kinds.items():
        (inbound / kind).mkdir()
        make(inbound / kind / "submission_secret.txt")
    (inbound / "linked").symlink_to(inbound / "dir")
    before = sorted(os.listdir("/proc/self/fd"))
    fd = os.open(inbound, DIR_FLAGS)
    try:
        for _ in range(300):
            for name in [*kinds, "linked", "missing"]:
                verdict, _ = judge(fd, name, 0)
                assert verdict in ("incomplete", "rejected", "gone"), (name, verdict)
                try:
                    read_handin(inbound, name, EX1, 0)
                except Exception:  # noqa: BLE001 - each one is refused; what matters is what stays open
                    pass
    finally:
        os.close(fd)
    assert sorted(os.listdir("/proc/self/fd")) == before


def _plan(queue: Queue, now: float) -> dict:
    with queue.engine.connect() as conn:
        sql = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + queue.head_query()
        return conn.execute(text(sql), dict(c=queue.course_id, now=now)).scalar()[0]["Plan"]


def _nodes(plan: dict) -> list[dict]:
    return [plan] + [n for child in plan.get("Plans", []) for n in _nodes(child)]


def test_a_claim_reads_the_head_of_one_index_with_10_or_100000_rows_waiting(db_url, tmp_path):
    """100,000 students' pending hand-ins waiting out their rate limit, and one that may go: the claim's one
    read is an index scan that touches the same few pages as with 10 rows (counted by PostgreSQL, not timed),
    and the claim takes the one that may go."""
    queue = Queue(db_url, "plan-test", min_interval=3600)
    try:
        def fill(n: int) -> float:
            with queue.engine.begin() as conn:
                conn.execute(text(f"DELETE FROM {TABLE} WHERE course_id = 'plan-test'"))
                now = queue._clock(conn)
                conn.execute(text(
                    f"INSERT INTO {TABLE} (course_id, folder, student, assignment, submitted_at, enqueued_at, state, "
                    f"ready_at, skeleton) SELECT 'plan-test', 'w' || i, 'w' || i, 'ex', :now - i, :now - i, 'pending', "
                    f":now + 3000 + i, 'w' || i FROM generate_series(1, :n) AS i"), dict(now=now, n=n))
                conn.execute(text(f"ANALYZE {TABLE}"))
            return now
        counts = {}
        for n in (10, 100_000):
            now = fill(n)
            plan = _plan(queue, now + 1)
            nodes = _nodes(plan)
            counts[n] = plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)   # the whole read's pages
            if n == 100_000:
                scans = [node for node in nodes if "Scan" in node["Node Type"]]
                assert [(s["Node Type"], s.get("Index Name")) for s in scans] == [("Index Scan", f"{TABLE}_ready")]
                assert "ready_at" in scans[0]["Index Cond"] and not any(nd["Node Type"] == "Sort" for nd in nodes)
                assert scans[0]["Actual Rows"] == 0 and scans[0].get("Rows Removed by Filter", 0) == 0
        assert counts[100_000] <= counts[10] + 3 and counts[100_000] <= 8, counts   # the B-tree's depth, no more
        assert queue.enqueue("honest+ex+1", "honest", "ex")
        job = queue.claim("w", lease=60)
        assert job.folder == "honest+ex+1" and queue.claim("w", lease=60) is None
    finally:
        with queue.engine.begin() as conn:
            conn.execute(text(f"DELETE FROM {TABLE} WHERE course_id = 'plan-test'"))
        queue.close()
    lite = Queue(f"sqlite:///{tmp_path / 'q.db'}", "plan-test")
    try:
        with lite.engine.connect() as conn:
            detail = " ".join(str(r[-1]) for r in conn.execute(text("EXPLAIN QUERY PLAN " + lite.head_query()),
                                                                 dict(c="plan-test", now=0.0)))
        assert f"INDEX {TABLE}_ready" in detail and "TEMP B-TREE" not in detail, detail
    finally:
        lite.close()


def test_a_thread_that_dies_starts_again_and_says_why():
    import threading

    from grader.serve.health import Supervisor

    said, runs, stop = [], [], threading.Event()

    def flaky():
        runs.append(1)
        if len(runs) < 3:
            raise OSError("the database went away")
        stop.wait()

    threads = Supervisor(said.append, stop, backoff=0.01)
    threads.add("scanner", flaky)
    threads.start()
    for _ in range(2000):
        threads.check()
        if len(runs) == 3:
            break
        stop.wait(0.01)
    assert len(runs) == 3 and threads.restarts() == 2 and threads.alive() == ["scanner"]
    assert said[0] == "thread scanner died (OSError: the database went away); starting it again in 0.01 s"
    stop.set()
    threads.join()


def test_a_page_that_takes_too_long_is_given_up_and_the_next_one_is_made(tmp_path):
    import slow_render

    from grader.serve.render import Renderer, too_big

    renderer = Renderer(seconds=2, serve=slow_render.serve)
    try:
        assert not renderer.render({"slow": True, "cells": []}, {}, tmp_path / "a.html")
        assert "秒" in renderer.why and not (tmp_path / "a.html").exists()
        assert renderer.render({"cells": []}, {}, tmp_path / "b.html")      # a fresh child after the kill
        assert (tmp_path / "b.html").read_text() == "<html>page</html>"
    finally:
        renderer.close()
    assert too_big({"cells": [{"source": "a" * 1_000_000}]}) and not too_big({"cells": [{"source": "a" * 1000}]})
