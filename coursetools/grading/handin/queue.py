"""The hand-in service's durable queue: every submission seen once, graded once, in a fair order.

One job: keep, in a SQLite database only the service can read (``<state>/queue.sqlite``), one row
per submission folder of nbgrader's exchange, and decide what happens to it:

- **Admission**, when the folder is first seen (:meth:`HandinQueue.add`), by the assignment's
  :class:`~coursetools.grading.handin.policy.Policy`: after the deadline (unless late work is
  accepted), past the number of graded attempts, or within the cool-down of the student's previous
  graded attempt, the row is *refused* with its reason; otherwise it is *pending*. Times are the
  service's: the arrival is the folder's inode change time (which its owner cannot move back)
  capped at the service's clock, never the timestamp in the folder's name, which the student's
  server writes.
- **A fair order** (:meth:`HandinQueue.claim`): among pending rows, the student served longest ago
  (or never) comes first, then arrival: one student's resubmissions never starve the others.
- **Restarts**: a row is *grading* while it is graded; :meth:`HandinQueue.recover`, called when
  the service starts, puts such rows back to *pending*, so a submission in flight when the
  service stopped is graded after it starts again (its results replace, never add to, what an
  interrupted run may have written: one gradebook submission, one feedback page). A row is
  *graded* only after its results are written.
- **The deadline** (:meth:`HandinQueue.final_candidates`): once it has passed, each student's last
  submission before it is graded if it was refused for attempts or cool-down: the last
  submission counts. Only the student's own submissions are candidates: a folder refused before
  any rule (another user's folder in the student's name, an odd name, an unknown assignment, one
  superseded unread) never stands for the student's work.
- **The newest counts** (:meth:`HandinQueue.add`): a submission admitted while an older one of
  the same student and assignment still waits replaces it (the older is *refused*,
  ``superseded``): one student's flood of folders costs one grading, never the class's time.
- **Again** (:meth:`HandinQueue.give_back` with ``alone=True``; the column keeps its first name):
  a submission whose grading was cut by the wall clock while it waited for a CPU (``starved``: a
  machine too busy to give it its CPU time) is graded once more before its result counts, by one
  worker like any other, with the same hand-in wall, while the others go on; starved again, its
  result counts as the timeout it is. One submission can hold one worker for at most two
  hand-in walls, and never stops the class.
- **Pause**: an instructor's switch (:meth:`HandinQueue.set_paused`); arrivals are still recorded
  (with their arrival time) while nothing is graded.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from coursetools.grading.classroom.collect import Sighting
from coursetools.grading.handin.policy import Policies, Policy

__all__ = ["Row", "HandinQueue", "STATES", "NOT_THEIRS"]

STATES = ("pending", "grading", "graded", "refused", "failed")
#: refusals made before any rule: the folder is not (or no longer) the named student's submission
NOT_THEIRS = ("owner", "name", "unknown assignment", "superseded")
_COLUMNS_ADDED = {  # columns a queue made by an earlier version lacks
    "digest": "TEXT NOT NULL DEFAULT ''",
    "secret": "TEXT NOT NULL DEFAULT ''",
    "stamp": "TEXT NOT NULL DEFAULT ''",
    "problems": "TEXT NOT NULL DEFAULT '[]'",
    "alone": "INTEGER NOT NULL DEFAULT 0",
}
MAX_TRIES = 3  # grading runs lost to a grader error before a row is "failed"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    folder     TEXT NOT NULL UNIQUE,   -- the exchange's inbound folder: one submission
    student    TEXT NOT NULL,
    assignment TEXT NOT NULL,
    arrived    REAL NOT NULL,          -- POSIX time, the service's (see the module docstring)
    state      TEXT NOT NULL,
    reason     TEXT NOT NULL DEFAULT '',  -- refused: deadline | attempts | cooldown | superseded
                                          -- | owner | name | unknown assignment (before any rule)
    attempt    INTEGER,                -- the graded attempt it is (1, 2, ...), when admitted
    final      INTEGER NOT NULL DEFAULT 0,  -- graded at the deadline as the last submission
    tries      INTEGER NOT NULL DEFAULT 0,
    started    REAL,
    finished   REAL,
    score      REAL,
    max_score  REAL,
    published  INTEGER NOT NULL DEFAULT 0,  -- its page is where Fetch Feedback finds it
    digest     TEXT NOT NULL DEFAULT '',  -- SHA-256 of the notebook as it arrived (the copy graded)
    secret     TEXT NOT NULL DEFAULT '',  -- nbgrader's submission secret, as it arrived
    stamp      TEXT NOT NULL DEFAULT '',  -- nbgrader's timestamp.txt, as it arrived
    problems   TEXT NOT NULL DEFAULT '[]',  -- JSON: what taking the folder found wrong
    alone      INTEGER NOT NULL DEFAULT 0   -- a second pass (starved once): given once
);
CREATE INDEX IF NOT EXISTS by_work ON submissions (student, assignment, arrived);
CREATE INDEX IF NOT EXISTS by_state ON submissions (state);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- folders seen but not yet taken (still settling): the folder's change time around the service's own chmod
CREATE TABLE IF NOT EXISTS sightings (
    folder     TEXT PRIMARY KEY,
    before_ns  INTEGER NOT NULL DEFAULT 0,
    after_ns   INTEGER NOT NULL DEFAULT 0
);
"""


@dataclass(frozen=True)
class Row:
    """One submission as the queue knows it."""

    seq: int
    folder: str
    student: str
    assignment: str
    arrived: float
    state: str
    reason: str
    attempt: int | None
    final: bool
    tries: int
    started: float | None
    finished: float | None
    score: float | None
    max_score: float | None
    published: bool
    digest: str = ""
    secret: str = ""
    stamp: str = ""
    problems: str = "[]"
    alone: bool = False


class HandinQueue:
    """The queue in the SQLite file ``path`` (made with mode 0600 if missing)."""

    def __init__(self, path: Path, *, clock=time.time):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
        self.path = path
        self.clock = clock
        self.db = sqlite3.connect(str(path), isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(_SCHEMA)
        have = {r["name"] for r in self.db.execute("PRAGMA table_info(submissions)")}
        for name, kind in _COLUMNS_ADDED.items():
            if name not in have:
                self.db.execute(f"ALTER TABLE submissions ADD COLUMN {name} {kind}")

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    @staticmethod
    def _row(r: sqlite3.Row) -> Row:
        d = dict(r)
        d["final"], d["published"], d["alone"] = bool(d["final"]), bool(d["published"]), bool(d["alone"])
        return Row(**d)

    # ---------------------------------------------------------------------------- admission

    def folders(self) -> set[str]:
        """Every folder recorded (one query, for a scan of thousands)."""
        return {r[0] for r in self.db.execute("SELECT folder FROM submissions")}

    def rows_of(self, student: str, assignment: str) -> list[Row]:
        return [self._row(r) for r in self.db.execute(
            "SELECT * FROM submissions WHERE student=? AND assignment=? ORDER BY seq", (student, assignment))]

    def known(self, folder: str) -> bool:
        return self.db.execute("SELECT 1 FROM submissions WHERE folder=?", (folder,)).fetchone() is not None

    def add(self, folder: str, student: str, assignment: str, arrived: float, policy: Policy) -> Row | None:
        """Record a newly seen submission and decide its state; None if it was already known."""
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM submissions WHERE folder=?", (folder,)).fetchone():
                return None
            admitted = db.execute(
                "SELECT arrived FROM submissions WHERE student=? AND assignment=? AND final=0 "
                "AND state IN ('pending','grading','graded') ORDER BY arrived",
                (student, assignment),
            ).fetchall()
            state, reason, attempt = "pending", "", len(admitted) + 1
            if policy.past_deadline(arrived) and not policy.accept_late:
                state, reason = "refused", "deadline"
            elif policy.attempts and len(admitted) >= policy.attempts:
                state, reason = "refused", "attempts"
            elif policy.cooldown_minutes and admitted and (
                arrived - admitted[-1]["arrived"] < policy.cooldown_minutes * 60
            ):
                state, reason = "refused", "cooldown"
            if state == "refused":
                attempt = None
            else:  # the newest counts: an older one still waiting is replaced, never graded
                waiting = db.execute(
                    "UPDATE submissions SET state='refused', reason='superseded', attempt=NULL, "
                    "published=1 WHERE student=? AND assignment=? AND state='pending' AND final=0",
                    (student, assignment),
                ).rowcount
                attempt -= waiting
            db.execute(
                "INSERT INTO submissions (folder, student, assignment, arrived, state, reason, attempt)"
                " VALUES (?,?,?,?,?,?,?)",
                (folder, student, assignment, arrived, state, reason, attempt),
            )
            return self._row(db.execute("SELECT * FROM submissions WHERE folder=?", (folder,)).fetchone())

    def sightings(self) -> dict[str, Sighting]:
        """The folders seen but not yet taken, by folder (:class:`~coursetools.grading.classroom.collect.Sighting`)."""
        return {
            r["folder"]: Sighting(r["before_ns"], r["after_ns"])
            for r in self.db.execute("SELECT * FROM sightings")
        }

    def record_sighting(self, folder: str, seen: Sighting) -> None:
        self.db.execute(
            "INSERT INTO sightings (folder, before_ns, after_ns) VALUES (?, ?, ?) "
            "ON CONFLICT(folder) DO UPDATE SET before_ns=excluded.before_ns, after_ns=excluded.after_ns",
            (folder, seen.before_ns, seen.after_ns),
        )

    def forget_sighting(self, folder: str) -> None:
        """The folder has its row: it is never read again."""
        self.db.execute("DELETE FROM sightings WHERE folder=?", (folder,))

    def record_snapshot(self, folder: str, digest: str, secret: str, stamp: str, problems: list[str]) -> None:
        """What the folder held when it was first taken (the copy that is graded)."""
        self.db.execute(
            "UPDATE submissions SET digest=?, secret=?, stamp=?, problems=? WHERE folder=?",
            (digest, secret, stamp, json.dumps(problems), folder),
        )

    def add_unread(self, rows: list[tuple[str, str, str, float, str]]) -> int:
        """Record many folders refused before any rule, unread and with no page, in one
        transaction: ``(folder, student, assignment, arrived, reason)``; returns how many were new."""
        with self._transaction() as db:
            before = db.total_changes
            db.executemany(
                "INSERT OR IGNORE INTO submissions (folder, student, assignment, arrived, state, reason, published)"
                " VALUES (?,?,?,?, 'refused', ?, 1)",
                rows,
            )
            return db.total_changes - before

    def add_refused(self, folder: str, student: str, assignment: str, arrived: float, reason: str) -> Row | None:
        """Record a submission refused before any rule (unknown assignment, wrong owner): no page."""
        with self._transaction() as db:
            if db.execute("SELECT 1 FROM submissions WHERE folder=?", (folder,)).fetchone():
                return None
            db.execute(
                "INSERT INTO submissions (folder, student, assignment, arrived, state, reason, published)"
                " VALUES (?,?,?,?, 'refused', ?, 1)",
                (folder, student, assignment, arrived, reason),
            )
            return self._row(db.execute("SELECT * FROM submissions WHERE folder=?", (folder,)).fetchone())

    def next_attempt_at(self, student: str, assignment: str, policy: Policy) -> float | None:
        """When the student's next submission would be admitted by the cool-down (None: now)."""
        last = self.db.execute(
            "SELECT MAX(arrived) FROM submissions WHERE student=? AND assignment=? AND final=0 "
            "AND state IN ('pending','grading','graded')",
            (student, assignment),
        ).fetchone()[0]
        if last is None or not policy.cooldown_minutes:
            return None
        return last + policy.cooldown_minutes * 60

    def attempts_used(self, student: str, assignment: str) -> int:
        return self.db.execute(
            "SELECT COUNT(*) FROM submissions WHERE student=? AND assignment=? AND final=0 "
            "AND state IN ('pending','grading','graded')",
            (student, assignment),
        ).fetchone()[0]

    # ------------------------------------------------------------------------------ grading

    def claim(self, limit: int = 1) -> list[Row]:
        """Up to ``limit`` pending rows, now *grading*, in the fair order (module docstring).

        A row to be graded again (``alone``) is claimed in the same order as any other: it takes
        one worker, never the machine.
        """
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        with self._transaction() as db:
            pending = [self._row(r) for r in db.execute("SELECT * FROM submissions WHERE state='pending'")]
            if not pending:
                return []
            served = {
                r["student"]: r["last"]
                for r in db.execute(
                    "SELECT student, MAX(started) AS last FROM submissions WHERE started IS NOT NULL "
                    "GROUP BY student"
                )
            }
            chosen: list[Row] = []
            taken: set[str] = set()
            # one row per student per batch, the student served longest ago first
            for row in sorted(pending, key=lambda r: (served.get(r.student, float("-inf")), r.arrived, r.seq)):
                if row.student in taken:
                    continue
                chosen.append(row)
                taken.add(row.student)
                if len(chosen) == limit:
                    break
            now = self.clock()
            for row in chosen:
                db.execute(
                    "UPDATE submissions SET state='grading', started=?, tries=tries+1 WHERE seq=?",
                    (now, row.seq),
                )
            return [self.get(row.folder) for row in chosen]

    def finish(self, folder: str, score: float, max_score: float) -> None:
        """The row's results are written: *graded*, published."""
        with self._transaction() as db:
            db.execute(
                "UPDATE submissions SET state='graded', finished=?, score=?, max_score=?, published=1 "
                "WHERE folder=? AND state='grading'",
                (self.clock(), score, max_score, folder),
            )

    def give_back(self, folder: str, *, alone: bool = False) -> Row:
        """A grading run lost to a grader error: pending again, or *failed* after MAX_TRIES.

        ``alone``: the run was cut by the wall clock while waiting for a CPU (starved); it is graded
        once more (and not counted as a lost try).
        """
        with self._transaction() as db:
            if alone:
                db.execute(
                    "UPDATE submissions SET state='pending', alone=1, tries=tries-1 "
                    "WHERE folder=? AND state='grading'",
                    (folder,),
                )
            else:
                db.execute(
                    "UPDATE submissions SET state=CASE WHEN tries>=? THEN 'failed' ELSE 'pending' END "
                    "WHERE folder=? AND state='grading'",
                    (MAX_TRIES, folder),
                )
        return self.get(folder)

    def mark_published(self, folder: str) -> None:
        self.db.execute("UPDATE submissions SET published=1 WHERE folder=?", (folder,))

    def unpublished_refusals(self) -> list[Row]:
        return [self._row(r) for r in self.db.execute(
            "SELECT * FROM submissions WHERE state='refused' AND published=0 ORDER BY seq")]

    def recover(self) -> int:
        """After a restart: every row left *grading* is *pending* again; returns how many."""
        with self._transaction() as db:
            return db.execute("UPDATE submissions SET state='pending' WHERE state='grading'").rowcount

    # ------------------------------------------------------------------------------ deadline

    def final_candidates(self, policies: Policies) -> list[Row]:
        """Queue, for every (student, assignment) whose deadline has passed, the last submission
        before it, if that one was refused for attempts or cool-down (the last submission counts)."""
        now = self.clock()
        queued = []
        with self._transaction() as db:
            pairs = db.execute("SELECT DISTINCT student, assignment FROM submissions").fetchall()
            for pair in pairs:
                policy = policies[pair["assignment"]]
                if policy.deadline is None or not policy.past_deadline(now):
                    continue
                last = db.execute(  # the student's own submissions only (NOT_THEIRS: module docstring)
                    "SELECT * FROM submissions WHERE student=? AND assignment=? AND arrived<=? "
                    f"AND NOT (state='refused' AND reason IN ({','.join('?' * len(NOT_THEIRS))})) "
                    "ORDER BY arrived DESC, seq DESC LIMIT 1",
                    (pair["student"], pair["assignment"], policy.deadline.timestamp(), *NOT_THEIRS),
                ).fetchone()
                if last is None or last["state"] != "refused" or last["reason"] not in ("attempts", "cooldown"):
                    continue
                db.execute(
                    "UPDATE submissions SET state='pending', final=1, published=0 WHERE seq=?",
                    (last["seq"],),
                )
                queued.append(last["folder"])
        return [self.get(f) for f in queued]

    # ------------------------------------------------------------------------- pause, status

    @property
    def paused(self) -> bool:
        row = self.db.execute("SELECT value FROM settings WHERE key='paused'").fetchone()
        return row is not None and row["value"] == "1"

    def set_paused(self, paused: bool) -> None:
        self.db.execute(
            "INSERT INTO settings (key, value) VALUES ('paused', ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            ("1" if paused else "0",),
        )

    def get(self, folder: str) -> Row:
        r = self.db.execute("SELECT * FROM submissions WHERE folder=?", (folder,)).fetchone()
        if r is None:
            raise KeyError(folder)
        return self._row(r)

    def rows(self) -> list[Row]:
        return [self._row(r) for r in self.db.execute("SELECT * FROM submissions ORDER BY seq")]

    def counts(self) -> dict[str, int]:
        found = dict(self.db.execute("SELECT state, COUNT(*) FROM submissions GROUP BY state").fetchall())
        return {s: int(found.get(s, 0)) for s in STATES}


def format_time(when: float) -> str:
    """A POSIX time as the student reads it: ``2026-11-27 10:32 UTC``."""
    return dt.datetime.fromtimestamp(when, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
