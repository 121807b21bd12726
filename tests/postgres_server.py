"""A throw-away local PostgreSQL server for the tests and benchmarks of sharded grading (a shared gradebook).

    with local_postgres() as db_url:
        grade(submissions, out, db_url=db_url, shard=Shard(0, 2))

    with postgres_server() as server:          # the tests' session server (tests/conftest.py `postgres`):
        db_url = server.database("serve")      # a database of its own for each module that needs one

Uses Debian's `postgresql` package binaries. PostgreSQL refuses to run as root, so as root the
server runs as the `postgres` user. Listens on 127.0.0.1 only, on a free port, in a temporary
folder that is removed afterwards. Every connection needs a random password (scram-sha-256); the
password is written to a 0600 file for initdb and passed to the tools in their environment, never on
a command line (which every local user can read in `ps`). The grading sandbox has no network at all.
"""
from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from ports import free_port


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        raise RuntimeError("PostgreSQL not found: apt-get install postgresql (see .ci/run)")
    return Path(found[-1]).parent


class Server:
    """A running server: its port and password; database(name) creates a database and gives its URL."""

    def __init__(self, bindir: Path, port: int, password: str, prefix: list[str], env: dict[str, str]):
        self.bindir, self.port, self.password, self.prefix, self.env = bindir, port, password, prefix, env
        self.made: set[str] = set()

    def url(self, name: str) -> str:
        return f"postgresql+psycopg2://postgres:{self.password}@127.0.0.1:{self.port}/{name}"

    def database(self, name: str) -> str:
        """A new, empty database on this server; its SQLAlchemy URL. Each name once per server."""
        assert name not in self.made, f"database {name} already made on this server"
        subprocess.run([*self.prefix, str(self.bindir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U",
                        "postgres", name], check=True, capture_output=True, text=True, env=self.env)
        self.made.add(name)
        return self.url(name)


@contextlib.contextmanager
def postgres_server(max_connections: int = 100):
    """Start a private server, yield it (Server), stop and delete it."""
    bindir = _bindir()
    as_root = os.geteuid() == 0
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []
    folder = Path(tempfile.mkdtemp(prefix="agentrl-pg-", dir="/tmp"))
    if as_root:
        shutil.chown(folder, "postgres", "postgres")
    data, port = folder / "data", free_port()

    password = secrets.token_urlsafe(24)
    pwfile = folder / "pwfile"
    pwfile.write_text(password + "\n", encoding="utf-8")
    os.chmod(pwfile, 0o600)
    if as_root:
        shutil.chown(pwfile, "postgres", "postgres")
    env = {**os.environ, "PGPASSWORD": password}

    def run(*args: str) -> None:
        subprocess.run([*prefix, *args], check=True, capture_output=True, text=True, env=env)

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=scram-sha-256",
            f"--pwfile={pwfile}", "-E", "UTF8")
        pwfile.unlink()
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-w", "start",
            "-o", f"-p {port} -h 127.0.0.1 -k {folder} -c max_connections={max_connections} -c fsync=off")
        try:
            yield Server(bindir, port, password, prefix, env)
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def local_postgres(database: str = "gradebook"):
    """Start a private server, create `database`, yield its SQLAlchemy URL, stop and delete it."""
    with postgres_server() as server:
        yield server.database(database)
