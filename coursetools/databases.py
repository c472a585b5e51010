"""The course's services' databases: one way to open one, SQLite on one machine or PostgreSQL.

One job: an SQLAlchemy engine for a URL, with what each backend needs to be durable and to
share: on SQLite, write-ahead logging, a full sync at each commit, foreign keys on and a 30 s
wait for a lock (the hub and the hand-in service may write at once); on any backend, a
connection checked before use, so a database that restarted costs one retry, not an error.
Used by the HTTP exchange's store (:mod:`coursetools.exchange.storage`) and the LMS records
(:mod:`coursetools.lms.store`).
"""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, event

__all__ = ["open_engine"]


def open_engine(url: str) -> Engine:
    """An engine for the SQLAlchemy ``url`` (``sqlite:///path``, ``postgresql+psycopg://...``)."""
    engine = create_engine(url, pool_pre_ping=True)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(connection, _record) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
