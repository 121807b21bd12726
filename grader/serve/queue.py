"""The grading queue: one table in the gradebook's database, shared by every service worker on every machine.

    queue = Queue(db_url, course_id)            # creates the table if needed
    queue.enqueue(arrival)                      # once per inbound folder, whoever sees it first
    job = queue.claim(worker, lease=30, min_interval=0)   # a Job, or None: nothing may be graded now
    queue.renew(job, lease=30)                  # the heartbeat: False if the job is no longer this worker's
    queue.done(job, status, score, max_score)   # False if another worker holds the job now (nothing changes)

A row's life: pending -> running (a worker's lease, renewed by its heartbeat) -> done. A worker that dies
stops renewing; once its lease has run out the row is claimable again (attempts counts the claims). A row
is `superseded` when a newer submission of the same student and assignment is in the queue: only the newest
is graded. Each claim gets a fresh token; `done` and `renew` only act with the row's current token, so a
worker whose lease was taken over can never mark the job done a second time (`graded` counts the times a
row was marked done: 1 for every graded row).

claim() takes the row with FOR UPDATE SKIP LOCKED (PostgreSQL) inside a transaction that first takes one
advisory lock: claims are a few milliseconds each and run one at a time, so the checks that span rows see
every committed claim (one grading at a time per student; a student's gradings started at least
min_interval seconds apart, the rate limit; the others' jobs are claimed meanwhile). SQLite (one machine
only): BEGIN IMMEDIATE gives the same order. Every time is the database's clock, so machines whose clocks
differ agree on leases.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import create_engine, event, text

TABLE = "agentrl_grading_queue"
CLAIM_LOCK = 7464208     # the advisory lock key of claims (pipeline.py's writers use 7464207)
STATES = ("pending", "running", "done", "superseded")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {table} (
    id {serial} PRIMARY KEY,
    course_id VARCHAR(128) NOT NULL,
    folder VARCHAR(512) NOT NULL,
    student VARCHAR(128) NOT NULL,
    assignment VARCHAR(128) NOT NULL,
    submitted_at DOUBLE PRECISION NOT NULL,
    state VARCHAR(16) NOT NULL DEFAULT 'pending',
    enqueued_at DOUBLE PRECISION NOT NULL,
    claimed_at DOUBLE PRECISION,
    lease_until DOUBLE PRECISION,
    worker VARCHAR(256),
    token VARCHAR(64),
    attempts INTEGER NOT NULL DEFAULT 0,
    graded INTEGER NOT NULL DEFAULT 0,
    finished_at DOUBLE PRECISION,
    status VARCHAR(16),
    score DOUBLE PRECISION,
    max_score DOUBLE PRECISION,
    UNIQUE (course_id, folder)
)"""


@dataclass
class Job:
    id: int
    folder: str
    student: str
    assignment: str
    submitted_at: float
    token: str
    attempts: int
    enqueued_at: float


class Queue:
    def __init__(self, db_url: str, course_id: str):
        self.course_id = course_id
        self.postgres = db_url.startswith("postgresql")
        self.engine = create_engine(db_url, pool_pre_ping=True)
        if not self.postgres:
            @event.listens_for(self.engine, "connect")
            def _no_implicit_transactions(dbapi_conn, _):   # BEGIN IMMEDIATE is ours to issue
                dbapi_conn.isolation_level = None
        self.now = ("extract(epoch from clock_timestamp())" if self.postgres
                    else "((julianday('now') - 2440587.5) * 86400.0)")
        serial = "BIGSERIAL" if self.postgres else "INTEGER"
        with self._transaction() as conn:
            if self.postgres:   # two services starting at once must not both create the table
                conn.execute(text(f"SELECT pg_advisory_xact_lock({CLAIM_LOCK})"))
            conn.execute(text(_SCHEMA.format(table=TABLE, serial=serial)))
            conn.execute(text(f"CREATE INDEX IF NOT EXISTS {TABLE}_state ON {TABLE} (course_id, state)"))

    def _transaction(self):
        if self.postgres:
            return self.engine.begin()
        return _SqliteImmediate(self.engine)

    def enqueue(self, folder: str, student: str, assignment: str, submitted_at: float) -> bool:
        """Add the inbound folder once; False if it was already there (another worker saw it first)."""
        with self._transaction() as conn:
            result = conn.execute(text(
                f"INSERT INTO {TABLE} (course_id, folder, student, assignment, submitted_at, enqueued_at) "
                f"VALUES (:c, :f, :s, :a, :t, {self.now}) ON CONFLICT (course_id, folder) DO NOTHING"),
                dict(c=self.course_id, f=folder, s=student, a=assignment, t=submitted_at))
            return result.rowcount == 1

    def known(self) -> set[str]:
        with self.engine.connect() as conn:
            rows = conn.execute(text(f"SELECT folder FROM {TABLE} WHERE course_id = :c"), dict(c=self.course_id))
            return {r[0] for r in rows}

    def claim(self, worker: str, lease: float, min_interval: float = 0.0) -> Job | None:
        """The oldest job this worker may grade now, leased to it; None if there is none."""
        token = secrets.token_hex(16)
        claimable = "(q.state = 'pending' OR (q.state = 'running' AND q.lease_until < {now}))".format(now=self.now)
        with self._transaction() as conn:
            if self.postgres:
                conn.execute(text(f"SELECT pg_advisory_xact_lock({CLAIM_LOCK})"))
            conn.execute(text(   # only the newest submission of a student's assignment is graded
                f"UPDATE {TABLE} SET state = 'superseded' WHERE id IN (SELECT q.id FROM {TABLE} q "
                f"WHERE q.course_id = :c AND {claimable} AND EXISTS (SELECT 1 FROM {TABLE} n "
                f"WHERE n.course_id = q.course_id AND n.student = q.student AND n.assignment = q.assignment "
                f"AND (n.submitted_at > q.submitted_at OR (n.submitted_at = q.submitted_at AND n.id > q.id))))"),
                dict(c=self.course_id))
            row = conn.execute(text(
                f"SELECT q.id, q.folder, q.student, q.assignment, q.submitted_at, q.attempts, q.enqueued_at "
                f"FROM {TABLE} q WHERE q.course_id = :c AND {claimable} "
                f"AND NOT EXISTS (SELECT 1 FROM {TABLE} r WHERE r.course_id = q.course_id "
                f"AND r.student = q.student AND r.id <> q.id AND ("
                f"(r.state = 'running' AND r.lease_until >= {self.now}) "
                f"OR (r.claimed_at IS NOT NULL AND r.claimed_at > {self.now} - :gap))) "
                f"ORDER BY q.enqueued_at, q.id LIMIT 1" + (" FOR UPDATE SKIP LOCKED" if self.postgres else "")),
                dict(c=self.course_id, gap=min_interval)).first()
            if row is None:
                return None
            conn.execute(text(
                f"UPDATE {TABLE} SET state = 'running', worker = :w, token = :t, attempts = attempts + 1, "
                f"claimed_at = {self.now}, lease_until = {self.now} + :lease WHERE id = :id"),
                dict(w=worker, t=token, lease=lease, id=row.id))
            return Job(row.id, row.folder, row.student, row.assignment, row.submitted_at, token,
                       row.attempts + 1, row.enqueued_at)

    def renew(self, job: Job, lease: float) -> bool:
        with self._transaction() as conn:
            result = conn.execute(text(
                f"UPDATE {TABLE} SET lease_until = {self.now} + :lease "
                f"WHERE id = :id AND token = :t AND state = 'running'"), dict(lease=lease, id=job.id, t=job.token))
            return result.rowcount == 1

    def done(self, job: Job, status: str, score: float | None = None, max_score: float | None = None) -> bool:
        with self._transaction() as conn:
            result = conn.execute(text(
                f"UPDATE {TABLE} SET state = 'done', graded = graded + 1, finished_at = {self.now}, "
                f"status = :s, score = :score, max_score = :mx, lease_until = NULL "
                f"WHERE id = :id AND token = :t AND state = 'running'"),
                dict(s=status, score=score, mx=max_score, id=job.id, t=job.token))
            return result.rowcount == 1

    def rows(self) -> list[dict]:
        """Every row of the course, oldest first (for tests, the benchmark and an instructor's look)."""
        with self.engine.connect() as conn:
            result = conn.execute(text(f"SELECT * FROM {TABLE} WHERE course_id = :c ORDER BY id"),
                                  dict(c=self.course_id))
            return [dict(r._mapping) for r in result]

    def close(self) -> None:
        self.engine.dispose()


class _SqliteImmediate:
    """A SQLite transaction that takes the write lock at BEGIN (IMMEDIATE): claims run one at a time."""

    def __init__(self, engine):
        self.engine = engine

    def __enter__(self):
        self.conn = self.engine.connect()
        self.conn.exec_driver_sql("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, kind, value, tb):
        try:
            self.conn.exec_driver_sql("ROLLBACK" if kind else "COMMIT")
        finally:
            self.conn.close()
