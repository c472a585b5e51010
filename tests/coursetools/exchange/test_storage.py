"""Tests of coursetools.exchange.storage on SQLite and on a real PostgreSQL (Debian's, started here).

The store is the exchange's memory: what was released, handed in (by whom, when, by the store's
clock) and fed back, kept across restarts of the service and of the database.
"""

from __future__ import annotations

import itertools

import pytest
from exchange_hub import tar_gz
from postgres_server import postgres_cluster
from sqlalchemy.exc import OperationalError

from coursetools.exchange import archive
from coursetools.exchange.storage import Conflict, ExchangeStore, NotFound, valid_name

RELEASE = tar_gz({"a1.ipynb": b'{"cells": []}', "data.csv": b"1\n"})


class Clock:
    """A clock the test moves: the store's time is the only time a hand-in has."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _exercise(store: ExchangeStore, clock: Clock) -> None:
    """The store's whole contract, run against each database."""
    assert store.releases("c") == [] and store.courses() == []
    released = store.release("c", "a1", RELEASE)
    assert released.files == ("a1.ipynb", "data.csv") and released.released_at == clock.now
    with pytest.raises(Conflict):
        store.release("c", "a1", tar_gz({"a1.ipynb": b"changed"}))
    assert store.released("c", "a1")[1] == RELEASE  # the refused release changed nothing
    again = store.release("c", "a1", tar_gz({"a1.ipynb": b"v2"}), force=True)
    assert again.files == ("a1.ipynb",)
    assert store.courses() == ["c"]

    with pytest.raises(NotFound):
        store.submit("c", "a2", "ada", RELEASE)  # not released
    clock.now += 10
    first = store.submit("c", "a1", "ada", tar_gz({"a1.ipynb": b"ada 1"}))
    second = store.submit("c", "a1", "ada", tar_gz({"a1.ipynb": b"ada 2"}))  # the same instant
    assert first.timestamp != second.timestamp and first.arrived_at == clock.now
    assert first.timestamp.startswith("2027-01-15 08:00:10.000000")
    store.submit("c", "a1", "bob", tar_gz({"a1.ipynb": b"bob"}))
    assert [s.student for s in store.submissions("c")] == ["ada", "ada", "bob"]
    assert [s.timestamp for s in store.submissions("c", student="ada")] == [
        first.timestamp,
        second.timestamp,
    ]
    record, data = store.submission("c", "a1", "ada", first.timestamp)
    assert (
        archive.members(data, max_bytes=store.max_bytes) == ["a1.ipynb"]
        and record.secret == first.secret
    )
    assert len(record.secret) == 64 and record.secret != second.secret

    with pytest.raises(NotFound):
        store.feedback("c", "a1", "ada", first.timestamp)
    store.put_feedback("c", "a1", "ada", first.timestamp, tar_gz({"a1.html": b"<p>2/3</p>"}))
    assert store.submissions("c", student="ada")[0].feedback == ("a1.html",)
    assert store.submissions("c", student="ada")[1].feedback is None
    with pytest.raises(NotFound):
        store.put_feedback(
            "c", "a1", "ada", "1999-01-01 00:00:00.000000 UTC", tar_gz({"a1.html": b"x"})
        )

    big = tar_gz({"big.bin": b"\0" * (store.max_bytes + 1)})
    with pytest.raises(archive.ArchiveError):
        store.submit("c", "a1", "ada", big)
    assert len(store.submissions("c", student="ada")) == 2  # the refused hand-in left no row
    assert store.unrelease("c", "a1") and not store.unrelease("c", "a1")
    assert len(store.submissions("c")) == 3  # withdrawing a release keeps its hand-ins


@pytest.mark.parametrize(
    "bad", ["", ".", "..", "a/b", "a+b", "a*", "a\\b", " ada", "ada\n", "x" * 101, None, 3]
)
def test_names_that_could_escape_a_path_or_collide_with_nbgraders_separators_are_refused(
    tmp_path, bad
):
    store = ExchangeStore(f"sqlite:///{tmp_path / 'x.sqlite'}", tmp_path / "vol")
    assert not valid_name(bad)
    with pytest.raises(ValueError, match="printable"):
        store.release(bad, "a1", RELEASE) if bad is not None else store.release("c", bad, RELEASE)


@pytest.mark.parametrize("stamp", ["", "\r\nX-Injected: 1", "x" * 65, None])
def test_a_timestamp_that_the_exchange_cannot_have_given_is_refused(tmp_path, stamp):
    store = ExchangeStore(f"sqlite:///{tmp_path / 'x.sqlite'}", tmp_path / "vol")
    store.release("c", "a1", RELEASE)
    with pytest.raises(ValueError, match="timestamp"):
        store.submission("c", "a1", "ada", stamp)
    with pytest.raises(ValueError, match="timestamp"):
        store.put_feedback("c", "a1", "ada", stamp, RELEASE)


def test_the_store_on_sqlite_keeps_everything_across_a_restart(tmp_path):
    clock = Clock()
    url = f"sqlite:///{tmp_path / 'exchange.sqlite'}"
    store = ExchangeStore(url, tmp_path / "volume", max_bytes=4096, clock=clock)
    _exercise(store, clock)
    before = store.submissions("c")
    store.close()
    reopened = ExchangeStore(url, tmp_path / "volume", max_bytes=4096, clock=clock)
    assert reopened.submissions("c") == before


def test_a_damaged_archive_on_the_volume_is_reported_not_served(tmp_path):
    store = ExchangeStore(f"sqlite:///{tmp_path / 'x.sqlite'}", tmp_path / "vol")
    record = store.release("c", "a1", RELEASE)
    blob = tmp_path / "vol" / "blobs" / record.digest[:2] / record.digest
    blob.write_bytes(b"tampered")
    with pytest.raises(OSError, match="damaged"):
        store.released("c", "a1")


@pytest.mark.slow  # starts a PostgreSQL server
def test_the_store_on_postgresql_keeps_everything_when_the_database_stops_and_starts():
    with postgres_cluster() as server:
        clock = Clock()
        store = ExchangeStore(server.url, _volume(), max_bytes=4096, clock=clock)
        _exercise(store, clock)
        before = store.submissions("c")
        server.stop()
        with pytest.raises(OperationalError):
            store.submit("c", "a1", "ada", RELEASE)
        server.start()
        assert store.submissions("c") == before  # the pool reconnects; nothing was lost
        clock.now += 1
        store.release("c", "a1", RELEASE)
        store.submit("c", "a1", "ada", tar_gz({"a1.ipynb": b"after"}))
        assert len(store.submissions("c", student="ada")) == 3
        store.close()


_volumes = itertools.count()


def _volume():
    import tempfile  # noqa: PLC0415

    return tempfile.mkdtemp(prefix=f"exchange-volume-{next(_volumes)}-")
