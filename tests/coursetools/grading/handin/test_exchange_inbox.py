"""Feedback at hand-in on the HTTP exchange (coursetools.grading.handin.exchange_inbox).

The hand-in service reads the hand-ins the exchange's store kept (no shared folder) and puts each
page back as that hand-in's feedback. Every promise of the folder mode holds: who is the store's
record of the hub user, when is the exchange's clock at receipt, what is graded is what arrived,
the attempts, cool-down and deadline rules, hidden messages withheld, one page per hand-in and
only its student's.
"""

from __future__ import annotations

import datetime as dt

import nbformat
from exchange_hub import tar_gz
from pilot_course import PILOT, fill_answers

from coursetools.authoring.release import notebook_bytes, release_notebook
from coursetools.exchange import archive
from coursetools.exchange.storage import ExchangeStore
from coursetools.grading.handin import exchange_inbox
from coursetools.grading.handin import policy as pol
from coursetools.grading.handin.service import WITHHELD, HandinService, ServiceConfig

T0 = 1_800_000_000.0
SOURCE = nbformat.read(PILOT / "pilot.ipynb", as_version=4)
RELEASE = release_notebook(SOURCE, "pilot")


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _result(job, score=7.0):
    return {
        "student": job.student,
        "assignment": job.assignment,
        "score": score,
        "max_score": 7.0,
        "cells": [
            {
                "grade_id": "clamp_tests",
                "kind": "auto",
                "points": 0.0,
                "max_points": 2.0,
                "status": "failed",
                "message": "the hidden message",
                "hidden": True,
            }
        ],
        "feedback": [],
        "problems": [],
        "notes": [],
        "seconds": 0.1,
    }


def _setup(tmp_path, policies=None):
    clock = Clock()
    volume = tmp_path / "volume"
    store = ExchangeStore(f"sqlite:///{volume / 'exchange.sqlite'}", volume, clock=clock)
    store.release(
        "dp",
        "pilot",
        archive.pack_files({"pilot.ipynb": notebook_bytes(RELEASE)}, max_bytes=store.max_bytes),
    )
    graded = []

    def grade(job):
        graded.append((job.student, job.submission))
        service.problems_seen = list(job.problems)
        return _result(job)

    config = ServiceConfig(
        exchange_root=tmp_path / "unused",
        course_id="dp",
        source_root=PILOT.parent,
        state_dir=tmp_path / "state",
        policies=policies or pol.Policies(pol.Policy(hidden_messages="never")),
        check_owner=False,
        settle_seconds=0,
        http_database=f"sqlite:///{volume / 'exchange.sqlite'}",
        http_volume=volume,
    )
    service = HandinService(config, grade=grade, clock=clock, log=lambda line: None)
    return store, service, clock, graded


def _hand_in(store, student, nb=RELEASE, name="pilot.ipynb"):
    return store.submit("dp", "pilot", student, tar_gz({name: notebook_bytes(nb)}))


def _page(store, record) -> str:
    data = store.feedback("dp", "pilot", record.student, record.timestamp)
    return archive.read_member(data, "pilot.html", max_bytes=store.max_bytes).decode()


def test_each_hand_in_gets_its_own_page_from_what_arrived_and_hidden_messages_are_withheld(
    tmp_path,
):
    store, service, _, graded = _setup(tmp_path)
    answered = fill_answers(nbformat.from_dict(RELEASE))
    ada, bob = _hand_in(store, "ada", answered), _hand_in(store, "bob")
    while service.run_once():
        pass
    assert sorted(s for s, _ in graded) == ["ada", "bob"]
    assert dict(graded)["ada"] == notebook_bytes(answered)  # the bytes the exchange kept
    page = _page(store, ada)
    assert "pilot: feedback for ada" in page and "bob" not in page
    assert WITHHELD in page and "the hidden message" not in page
    assert "feedback for bob" in _page(store, bob)
    assert not (tmp_path / "unused").exists()  # no folder is read or written


def test_a_hand_in_in_the_cooldown_is_refused_with_a_page_and_only_the_newest_of_a_burst_is_read(
    tmp_path,
):
    store, service, clock, graded = _setup(tmp_path, pol.Policies(pol.Policy(cooldown_minutes=15)))
    _hand_in(store, "ada")
    service.run_once()
    clock.t += 120
    burst = [_hand_in(store, "ada") for _ in range(3)]
    service.run_once()
    assert [s for s, _ in graded] == ["ada"]
    page = _page(store, burst[-1])
    assert "was not graded" in page and "15 minute(s)" in page and "Hand in again after" in page
    reasons = sorted(r.reason for r in service.queue.rows() if r.state == "refused")
    assert reasons == ["cooldown", "superseded", "superseded"]


def test_the_deadline_is_the_exchanges_clock_at_receipt(tmp_path):
    deadline = dt.datetime.fromtimestamp(T0 + 60, dt.UTC)
    store, service, clock, graded = _setup(tmp_path, pol.Policies(pol.Policy(deadline=deadline)))
    on_time = _hand_in(store, "ada")
    clock.t = T0 + 61
    late = _hand_in(store, "bob")
    clock.t = T0 + 3600  # the service reads them long after: arrival is the exchange's receipt
    while service.run_once():
        pass
    assert [s for s, _ in graded] == ["ada"]
    assert "feedback for ada" in _page(store, on_time)
    assert "the deadline" in _page(store, late)


def test_a_hand_in_without_its_notebook_or_of_another_assignment_is_not_graded_as_one(tmp_path):
    store, service, _, graded = _setup(tmp_path)
    empty = _hand_in(store, "ada", name="renamed.ipynb")
    store.release("dp", "other", tar_gz({"other.ipynb": b"{}"}))
    store.submit("dp", "other", "bob", tar_gz({"other.ipynb": b"{}"}))
    while service.run_once():
        pass
    assert graded == [("ada", None)]  # graded as nothing handed in
    assert service.problems_seen == [
        "no pilot.ipynb in the hand-in"
    ]  # said on the page by the grader
    assert store.submissions("dp", student="ada")[0].feedback == ("pilot.html",)
    assert [(r.student, r.reason) for r in service.queue.rows() if r.assignment == "other"] == [
        ("bob", "unknown assignment")
    ]
    assert exchange_inbox.key_of(empty).startswith("http+ada+pilot+")
