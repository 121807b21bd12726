"""The grading queue: one table in the gradebook's database, shared by every service worker on every machine.

    queue = Queue(db_url, course_id, min_interval=0)   # creates (or brings up to date) the table
    queue.enqueue_batch([Arriving(folder, student, assignment, claim), ...])   # one pass of the scanner
    job = queue.claim(worker, lease=30)        # a Job, or None: nothing may be graded now
    queue.renew(job, lease=30)                 # the heartbeat: False if the job is no longer this worker's
    queue.done(job, status, score, max_score)  # False if another worker holds the job now (nothing changes)
    queue.depth()                              # pending, running, the oldest pending's arrival

A row's life: pending -> running (a worker's lease, renewed by its heartbeat) -> done. A worker that dies
stops renewing; once its lease has run out the row is claimable again (attempts counts the claims). Each
claim gets a fresh token; `done` and `renew` only act with the row's current token, so a worker whose
lease was taken over can never mark the job done a second time (`graded` counts the times a row was marked
done: 1 for every graded row).

Time is the database's clock. A hand-in's time is its arrival: when a service first found its folder
complete (`submitted_at`, the same as `enqueued_at`); the timestamp in the folder's name is kept only as
the student's claim (`student_time`) and orders nothing. Only the newest arrival of a student's
assignment is graded: an older pending one is `superseded` as the newer one is queued, so a student has at
most one pending row per assignment however many folders they write.

Claims cost the same with 10 or 100,000 pending rows: each row has `ready_at`, the time it may be graded
(its arrival; a running row's lease end), kept in a partial index of the rows still to grade. A claim reads
the head of that index; if the head's student is being graded (one grading at a time per student) or was
graded less than min_interval seconds ago (the rate limit), the row's ready_at moves to when that ends and the
claim reads the head again (at most MAX_TRIES times): a few index lookups, never a scan. The claims run one
at a time under one advisory lock (PostgreSQL; SQLite: BEGIN IMMEDIATE), the row taken FOR UPDATE SKIP LOCKED.

Two student ids a person cannot tell apart (make grade's rule, submissions.skeleton) get a note on both
ids' rows; the same assignment handed in under the second of them is a conflict: its row is not graded
(`conflict` says why, and the worker tells the student), the first id's grade stands, and so do the first
id's later hand-ins (a conflicted row counts for nobody).
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import create_engine, event, inspect, text

from grader.grade.submissions import look_alike_note, skeleton

TABLE = "agentrl_grading_queue"
CLAIM_LOCK = 7464208     # the advisory lock key of claims (pipeline.py's writers use 7464207)
STATES = ("pending", "running", "done", "superseded")
MAX_TRIES = 20           # rows a claim may put back (their student busy or rate-limited) before it gives up
LIVE = "state IN ('pending', 'running')"   # the rows still to grade: the partial index's predicate

_COLUMNS = """
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
    UNIQUE (course_id, folder)"""
# columns added after the table's first version (issue 28): a table made then gets them on start
_ADDED = {"ready_at": "DOUBLE PRECISION", "student_time": "VARCHAR(64)", "skeleton": "VARCHAR(512)",
          "note": "TEXT", "conflict": "TEXT"}
_INDEXES = {
    "ready": f"(course_id, ready_at, id) WHERE {LIVE}",
    "student": "(course_id, student, assignment, state)",
    "claimed": "(course_id, student, claimed_at)",
    "skeleton": "(course_id, skeleton)",
    "state": "(course_id, state)",
}


@dataclass
class Arriving:
    folder: str          # the hand-in's name in the queue (unique in the course)
    student: str
    assignment: str
    claim: str = ""      # the timestamp the folder's name gives: the student's claim


@dataclass
class Job:
    id: int
    folder: str
    student: str
    assignment: str
    submitted_at: float  # the arrival (database clock)
    token: str
    attempts: int
    enqueued_at: float
    conflict: str | None = None   # why this hand-in is not graded (a look-alike id's), or None


class Queue:
    def __init__(self, db_url: str, course_id: str, min_interval: float = 0.0):
        self.course_id, self.min_interval = course_id, min_interval
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
            conn.execute(text(f"CREATE TABLE IF NOT EXISTS {TABLE} ({_COLUMNS.format(serial=serial)})"))
            have = {c["name"] for c in inspect(conn).get_columns(TABLE)}
            for name, kind in _ADDED.items():
                if name not in have:
                    conn.execute(text(f"ALTER TABLE {TABLE} ADD COLUMN {name} {kind}"))
            conn.execute(text(f"UPDATE {TABLE} SET ready_at = COALESCE(lease_until, enqueued_at) "
                              f"WHERE ready_at IS NULL AND {LIVE}"))
            for name, columns in _INDEXES.items():
                conn.execute(text(f"CREATE INDEX IF NOT EXISTS {TABLE}_{name} ON {TABLE} {columns}"))

    def _transaction(self):
        if self.postgres:
            return self.engine.begin()
        return _SqliteImmediate(self.engine)

    def _clock(self, conn) -> float:
        return float(conn.execute(text(f"SELECT {self.now}")).scalar())

    def _waits(self, conn, student: str, now: float, besides: int = -1) -> float:
        """Until when the student may not start another grading: a grading in hand, or the rate limit."""
        busy = conn.execute(text(
            f"SELECT max(lease_until) FROM {TABLE} WHERE course_id = :c AND student = :s AND state = 'running' "
            f"AND id <> :id AND lease_until >= :now"), dict(c=self.course_id, s=student, id=besides, now=now)).scalar()
        last = conn.execute(text(
            f"SELECT max(claimed_at) FROM {TABLE} WHERE course_id = :c AND student = :s AND id <> :id"),
            dict(c=self.course_id, s=student, id=besides)).scalar()
        rate = last + self.min_interval if last is not None and self.min_interval else 0.0
        return max(busy or 0.0, rate, now)

    def enqueue_batch(self, arriving: list[Arriving]) -> list[str]:
        """Queue a scanner pass's hand-ins, each once (another service may have queued one already); of several of
        one student's assignment, the last is the newest. Return the folders queued as pending."""
        queued = []
        with self._transaction() as conn:
            now = self._clock(conn)
            newest = {(a.student, a.assignment): a for a in arriving}
            for item in arriving:
                last = newest[(item.student, item.assignment)] is item
                if self._insert(conn, item, now, last):
                    queued.append(item.folder)
        return queued

    def enqueue(self, folder: str, student: str, assignment: str, claim: str = "") -> bool:
        """One hand-in (enqueue_batch of one); False if it was already there."""
        return bool(self.enqueue_batch([Arriving(folder, student, assignment, str(claim))]))

    def _insert(self, conn, item: Arriving, now: float, newest: bool) -> bool:
        key = skeleton(item.student)
        conflict = None
        if newest:
            twins = conn.execute(text(
                f"SELECT DISTINCT student, assignment FROM {TABLE} WHERE course_id = :c AND skeleton = :k "
                f"AND student <> :s AND state <> 'superseded' AND conflict IS NULL"),   # conflicts count for nobody
                dict(c=self.course_id, k=key, s=item.student)).all()
            others = sorted({t.student for t in twins})
            if others:
                if any(t.assignment == item.assignment for t in twins):
                    conflict = look_alike_note(item.student, others, "同一份作业已经以那个名字交过：这一份没有评分")
                for other in others:
                    conn.execute(text(f"UPDATE {TABLE} SET note = :n WHERE course_id = :c AND student = :s "
                                      f"AND note IS NULL"), dict(n=look_alike_note(other, [item.student]),
                                                                 c=self.course_id, s=other))
        state = "pending" if newest else "superseded"
        ready = self._waits(conn, item.student, now) if newest else None
        result = conn.execute(text(
            f"INSERT INTO {TABLE} (course_id, folder, student, assignment, submitted_at, enqueued_at, state, "
            f"ready_at, student_time, skeleton, note, conflict) VALUES (:c, :f, :s, :a, :now, :now, :state, :ready, "
            f":claim, :k, :note, :conflict) ON CONFLICT (course_id, folder) DO NOTHING"),
            dict(c=self.course_id, f=item.folder, s=item.student, a=item.assignment, now=now, state=state,
                 ready=ready, claim=item.claim[:64], k=key, note=conflict or self._note(conn, item.student, key),
                 conflict=conflict))
        if result.rowcount != 1:
            return False
        if newest:   # the student's older pending hand-ins of this assignment are not graded any more
            conn.execute(text(
                f"UPDATE {TABLE} SET state = 'superseded' WHERE course_id = :c AND student = :s AND assignment = :a "
                f"AND state = 'pending' AND folder <> :f"),
                dict(c=self.course_id, s=item.student, a=item.assignment, f=item.folder))
        return newest

    def _note(self, conn, student: str, key: str) -> str | None:
        others = conn.execute(text(
            f"SELECT DISTINCT student FROM {TABLE} WHERE course_id = :c AND skeleton = :k AND student <> :s"),
            dict(c=self.course_id, k=key, s=student)).scalars().all()
        return look_alike_note(student, others) if others else None

    def known(self) -> set[str]:
        with self.engine.connect() as conn:
            rows = conn.execute(text(f"SELECT folder FROM {TABLE} WHERE course_id = :c"), dict(c=self.course_id))
            return {r[0] for r in rows}

    def claim(self, worker: str, lease: float) -> Job | None:
        """The job that has waited longest of those that may be graded now, leased to this worker; or None."""
        token = secrets.token_hex(16)
        with self._transaction() as conn:
            if self.postgres:
                conn.execute(text(f"SELECT pg_advisory_xact_lock({CLAIM_LOCK})"))
            now = self._clock(conn)
            for _ in range(MAX_TRIES):
                row = conn.execute(text(self.head_query()), dict(c=self.course_id, now=now)).first()
                if row is None:
                    return None
                newer = conn.execute(text(
                    f"SELECT 1 FROM {TABLE} WHERE course_id = :c AND student = :s AND assignment = :a "
                    f"AND state = 'pending' AND id > :id LIMIT 1"),
                    dict(c=self.course_id, s=row.student, a=row.assignment, id=row.id)).first()
                if newer is not None:    # only the newest arrival of a student's assignment is graded
                    conn.execute(text(f"UPDATE {TABLE} SET state = 'superseded' WHERE id = :id"), dict(id=row.id))
                    continue
                until = self._waits(conn, row.student, now, besides=row.id)
                if until > now:          # its student is being graded, or rate-limited: back in line until then
                    conn.execute(text(f"UPDATE {TABLE} SET ready_at = :u WHERE id = :id"), dict(u=until, id=row.id))
                    continue
                conn.execute(text(
                    f"UPDATE {TABLE} SET state = 'running', worker = :w, token = :t, attempts = attempts + 1, "
                    f"claimed_at = :now, lease_until = :now + :lease, ready_at = :now + :lease WHERE id = :id"),
                    dict(w=worker, t=token, now=now, lease=lease, id=row.id))
                self._hold_siblings(conn, row.student, row.id, now + lease)
                return Job(row.id, row.folder, row.student, row.assignment, row.submitted_at, token,
                           row.attempts + 1, row.enqueued_at, row.conflict)
        return None

    def head_query(self) -> str:
        """The claim's one read of the index: the row that has waited longest of those ready now."""
        return (f"SELECT id, folder, student, assignment, submitted_at, attempts, enqueued_at, conflict "
                f"FROM {TABLE} WHERE course_id = :c AND {LIVE} AND ready_at <= :now ORDER BY ready_at, id LIMIT 1"
                + (" FOR UPDATE SKIP LOCKED" if self.postgres else ""))

    def _hold_siblings(self, conn, student: str, job_id: int, until: float, lower: bool = False) -> None:
        """The student's other pending rows (at most one per assignment) wait until `until` (lower: no longer
        than that)."""
        op = "<" if not lower else ">"
        conn.execute(text(
            f"UPDATE {TABLE} SET ready_at = :u WHERE course_id = :c AND student = :s AND state = 'pending' "
            f"AND id <> :id AND ready_at {op} :u"), dict(u=until, c=self.course_id, s=student, id=job_id))

    def renew(self, job: Job, lease: float) -> bool:
        with self._transaction() as conn:
            now = self._clock(conn)
            result = conn.execute(text(
                f"UPDATE {TABLE} SET lease_until = :until, ready_at = :until "
                f"WHERE id = :id AND token = :t AND state = 'running'"),
                dict(until=now + lease, id=job.id, t=job.token))
            if result.rowcount == 1:
                self._hold_siblings(conn, job.student, job.id, now + lease, lower=True)
            return result.rowcount == 1

    def done(self, job: Job, status: str, score: float | None = None, max_score: float | None = None) -> bool:
        with self._transaction() as conn:
            now = self._clock(conn)
            result = conn.execute(text(
                f"UPDATE {TABLE} SET state = 'done', graded = graded + 1, finished_at = :now, "
                f"status = :s, score = :score, max_score = :mx, lease_until = NULL, ready_at = NULL "
                f"WHERE id = :id AND token = :t AND state = 'running'"),
                dict(now=now, s=status, score=score, mx=max_score, id=job.id, t=job.token))
            if result.rowcount == 1:    # the student's next hand-in may go now (the rate limit is checked then)
                self._hold_siblings(conn, job.student, job.id, now, lower=True)
            return result.rowcount == 1

    def reset_waits(self) -> None:
        """At a service's start: every pending row back to its arrival (a smaller --min-interval than before
        applies at once; the claims put back in line what must still wait)."""
        with self._transaction() as conn:
            conn.execute(text(f"UPDATE {TABLE} SET ready_at = enqueued_at WHERE course_id = :c AND state = 'pending'"),
                         dict(c=self.course_id))

    def depth(self) -> dict:
        """What the queue holds now (the status line, doctor): pending, running, the oldest pending's wait."""
        with self.engine.connect() as conn:
            now = self._clock(conn)
            row = conn.execute(text(
                f"SELECT count(*) AS n, min(enqueued_at) AS oldest FROM {TABLE} WHERE course_id = :c "
                f"AND state = 'pending'"), dict(c=self.course_id)).first()
            running = conn.execute(text(f"SELECT count(*) FROM {TABLE} WHERE course_id = :c AND state = 'running'"),
                                   dict(c=self.course_id)).scalar()
        return {"pending": row.n, "running": running,
                "oldest_pending_s": None if row.oldest is None else max(0.0, now - row.oldest)}

    def rows(self, students=None) -> list[dict]:
        """Every row of the course (of these students), oldest first (tests, the benchmark, an instructor's look)."""
        with self.engine.connect() as conn:
            if students is None:
                result = conn.execute(text(f"SELECT * FROM {TABLE} WHERE course_id = :c ORDER BY id"),
                                      dict(c=self.course_id))
            else:
                names = {f"s{i}": s for i, s in enumerate(students)}
                if not names:
                    return []
                result = conn.execute(text(f"SELECT * FROM {TABLE} WHERE course_id = :c AND student IN "
                                           f"({', '.join(':' + k for k in names)}) ORDER BY id"),
                                      dict(c=self.course_id, **names))
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
