"""A real JupyterHub on this machine for the exchange tests: its proxy from npm, a shared-password login,
every user's lab a local process of the hub's user, nbgrader's exchange on a local folder, and the grading
service as the hub's managed service.

    with jupyterhub(tmp, ex, users=["alice", "bob"], instructor="teacher") as base_url: ...

jupyterhub 6.1.1 (requirements.txt) and configurable-http-proxy 5.3.0 (npm, installed once into
_vendor/chp/, git-ignored). The labs run as the hub's own OS user, so nbgrader would take every student to
be that user: each lab's nbgrader config names its student after the hub's user name (JUPYTERHUB_USER, as
nbgrader itself does under the docker-stacks jovyan convention). The instructor's lab points formgrader at
the course folder the service grades into and its gradebook.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from exchange import Exchange
from ports import free_port

from grader.course import COURSE_ID, ROOT

PROXY_VERSION = "5.3.0"
PROXY = ROOT / "_vendor" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"
PASSWORD = "agentrl-hub-test"


def proxy_command() -> str:
    """configurable-http-proxy, installed once with npm (the registry's own client) if missing."""
    if not PROXY.exists():
        npm = shutil.which("npm")
        assert npm, "npm missing: apt-get install npm (make deps)"
        folder = PROXY.parents[2]     # _vendor/chp: missing in a fresh clone
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--silent",
                        f"configurable-http-proxy@{PROXY_VERSION}"], cwd=folder, check=True)
    return str(PROXY)


LAB_CONFIG = """\
import os
c = get_config()  # noqa: F821
c.Exchange.root = {exchange!r}
c.CourseDirectory.course_id = {course_id!r}
user = os.environ.get("JUPYTERHUB_USER", "")
if user == {instructor!r}:
    c.CourseDirectory.root = {course!r}
    c.CourseDirectory.db_url = open({db_url_file!r}).read().strip()
else:
    c.CourseDirectory.student_id = user
"""

HUB_CONFIG = """\
c = get_config()  # noqa: F821
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.db_url = "sqlite:///{state}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{state}/cookie_secret"
c.JupyterHub.pid_file = "{state}/jupyterhub.pid"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = set({users!r})
c.Authenticator.admin_users = {{{instructor!r}}}
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{homes}/{{username}}"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.args = ["--ServerApp.allow_root=True"]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.environment = {{"JUPYTER_CONFIG_PATH": {lab_config!r}, "PATH": {path!r}}}
c.JupyterHub.services = [{{
    "name": "agentrl-grader",
    "command": {service!r},
    "environment": {{"PATH": {path!r}, "HOME": "{state}"}},
}}]
"""


@contextlib.contextmanager
def jupyterhub(tmp: Path, ex: Exchange, users: list[str], instructor: str, db_url_file: Path,
               service_args: list[str] = ()):
    state, homes, lab_config = tmp / "hub", ex.homes, tmp / "lab-config"
    for folder in (state, homes, lab_config):
        folder.mkdir(parents=True, exist_ok=True)
    (lab_config / "nbgrader_config.py").write_text(LAB_CONFIG.format(
        exchange=str(ex.root), course_id=COURSE_ID, instructor=instructor, course=str(ex.course),
        db_url_file=str(db_url_file)), encoding="utf-8")
    bindir = Path(sys.executable).parent
    path = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    service = [sys.executable, "-m", "grader", "serve", "--exchange", str(ex.root), "--course", str(ex.course),
               "--db-url-file", str(db_url_file), "--poll", "0.2", "--identity", "names", *service_args]
    # every lab here is the hub's own OS account, named by JUPYTERHUB_USER: only the folder names tell students apart
    port = free_port()
    (state / "jupyterhub_config.py").write_text(HUB_CONFIG.format(
        port=port, hub_port=free_port(), api_port=free_port(), proxy=proxy_command(), state=state,
        password=PASSWORD, users=sorted(set(users) | {instructor}), instructor=instructor, homes=homes,
        singleuser=str(bindir / "jupyterhub-singleuser"), lab_config=str(lab_config), path=path, service=service),
        encoding="utf-8")
    with open(state / "hub.log", "ab") as log:
        proc = subprocess.Popen([str(bindir / "jupyterhub"), "-f", str(state / "jupyterhub_config.py")], cwd=state,
                                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PATH": path},
                                start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{base}/hub/api", timeout=2)
                break
            except OSError:
                assert proc.poll() is None, (state / "hub.log").read_text()[-3000:]
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()   # the hub stops the labs it spawned, its proxy and its managed service
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
