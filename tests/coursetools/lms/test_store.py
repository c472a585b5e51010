"""The tool's records: a nonce is accepted once, a hub name belongs to one LMS user, the latest
grade-service endpoint is kept, and the outbox records a hand-in's score once and sends only the
newest. The same on SQLite and on PostgreSQL from Debian's package (the database a cluster's hub
and hand-in service share), which also stops and starts again without losing a row."""

from __future__ import annotations

import pytest
from postgres_server import postgres_cluster

from coursetools.lms.store import IdentityConflict, Launch, LmsStore

ISS = "https://lms.example"
SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'lti.sqlite'}", None
    else:
        with postgres_cluster() as server:
            yield server.url, server


def _launch(sub="u-1", name="u-1", context="ctx", link="link-1", assignment="pilot", lineitems=""):
    return Launch(
        issuer=ISS, deployment_id="d1", sub=sub, hub_name=name, context_id=context,
        course="dp-course", link_id=link, assignment=assignment,
        lineitems_url=lineitems, scopes=(SCORE,) if lineitems else (),
    )  # fmt: skip


def test_a_nonce_is_accepted_once_and_forgotten_after_it_expires(database):
    store = LmsStore(database[0])
    assert store.use_nonce("n-1", expires=100.0, now=50.0)
    assert not store.use_nonce("n-1", expires=100.0, now=60.0)  # a replay
    assert store.use_nonce("n-2", expires=300.0, now=200.0)  # n-1 purged: its launch expired
    assert not store.use_nonce("", expires=1e12) and not store.use_nonce("x" * 300, expires=1e12)


def test_a_hub_name_belongs_to_the_lms_user_of_its_first_launch(database):
    store = LmsStore(database[0])
    store.record_launch(_launch())
    store.record_launch(_launch())  # the same person again: fine
    with pytest.raises(IdentityConflict):
        store.record_launch(_launch(sub="u-2", name="u-1"))  # another LMS user, that hub name
    with pytest.raises(IdentityConflict):
        store.record_launch(_launch(sub="u-1", name="someone-else"))  # that LMS user, another name
    assert store.lms_user("u-1") == (ISS, "u-1") and store.lms_user("someone-else") is None


def test_where_a_score_goes_is_the_latest_launch_with_a_grade_service(database):
    store = LmsStore(database[0])
    store.record_launch(_launch(lineitems="https://lms.example/ctx/lineitems?v=1"))
    store.record_launch(_launch(lineitems=""))  # a launch without AGS keeps the endpoint
    where = store.destination("dp-course", "u-1", "pilot")
    assert where.lineitems_url.endswith("?v=1") and where.sub == "u-1" and where.scopes == (SCORE,)
    assert where.link_id == "link-1"
    store.record_launch(_launch(lineitems="https://lms.example/ctx/lineitems?v=2"))
    assert store.destination("dp-course", "u-1", "pilot").lineitems_url.endswith("?v=2")
    assert store.destination("dp-course", "nobody", "pilot") is None
    assert store.destination("another-course", "u-1", "pilot") is None


def _add(store, key, timestamp, score=1.0):
    return store.add_grade(
        course="dp-course", student="u-1", assignment="pilot", score=score, max_score=8.0,
        activity="Submitted", grading="FullyGraded", timestamp=timestamp, key=key, now=0.0,
    )  # fmt: skip


def test_the_outbox_keeps_one_row_per_hand_in_and_only_the_newest_is_sent(database):
    url, server = database
    store = LmsStore(url)
    assert _add(store, "a", "2026-12-05T10:00:00.000+00:00")
    assert not _add(store, "a", "2026-12-05T10:00:00.000+00:00", score=5.0)  # recorded twice
    assert _add(store, "b", "2026-12-05T10:05:00.000+00:00", score=6.0)
    states = {g.timestamp[11:16]: (g.state, g.score) for g in store.grades()}
    assert states == {"10:00": ("superseded", 1.0), "10:05": ("pending", 6.0)}
    (due,) = store.due(now=1.0)
    store.settle(due.id, "pending", reason="HTTP 503", next_try=30.0, now=1.0)
    assert store.due(now=29.0) == [] and [g.id for g in store.due(now=30.0)] == [due.id]
    if server is not None:  # PostgreSQL stopped and started: every row is still there
        server.stop()
        server.start()
    store.settle(due.id, "posted", now=31.0)
    assert store.counts() == {"pending": 0, "posted": 1, "refused": 0, "superseded": 1}
    (posted,) = [g for g in store.grades() if g.state == "posted"]
    assert posted.tries == 2 and posted.done_at == 31.0
    with pytest.raises(ValueError):
        store.settle(due.id, "lost")


def test_a_sqlite_database_is_opened_durable_and_patient(tmp_path):
    """databases.open_engine: write-ahead log, a full sync per commit, foreign keys, and a wait
    for the other process's lock (the hub and the hand-in service share the file)."""
    from sqlalchemy import text

    from coursetools.databases import open_engine

    engine = open_engine(f"sqlite:///{tmp_path / 'x.sqlite'}")
    with engine.connect() as connection:
        pragma = {
            name: connection.execute(text(f"PRAGMA {name}")).scalar()
            for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")
        }
    assert pragma == {
        "journal_mode": "wal",
        "synchronous": 2,
        "foreign_keys": 1,
        "busy_timeout": 30000,
    }


def test_two_posters_never_claim_the_same_grade_and_a_settled_grade_stays(database):
    """The hand-in service's poster and make export LTI= share the outbox: each grade is claimed
    by one of them for a lease; a late answer from the other cannot undo a posted grade."""
    url, _ = database
    service, export = LmsStore(url), LmsStore(url)
    for n in range(6):
        service.add_grade(
            course="dp-course", student=f"s{n}", assignment="pilot", score=1.0, max_score=2.0,
            activity="Submitted", grading="FullyGraded", timestamp="t", key=f"k{n}", now=0.0,
        )  # fmt: skip
    first = service.due(now=10.0, limit=4)
    second = export.due(now=10.0)
    assert len(first) == 4 and len(second) == 2
    assert not {g.id for g in first} & {g.id for g in second}
    assert export.due(now=10.0 + 119) == []  # the lease holds
    service.settle(first[0].id, "posted", now=11.0)
    export.settle(first[0].id, "superseded", now=12.0)  # the other poster's late 409
    assert {g.id: g.state for g in export.grades()}[first[0].id] == "posted"
    assert [g.id for g in export.due(now=10.0 + 121)] == sorted(
        g.id for g in first[1:] + second
    )  # the lease ended: tried again
