"""Feedback at hand-in (issue 33, items 1-2): the service's rules, its queue, and real grading.

The queue and the policy are tested with a clock the test moves; the service with a fake
exchange (folders made as nbgrader's ``submit`` makes them: the notebook, ``timestamp.txt``,
``submission_secret.txt``) and, at the end, with the real grader on the pilot assignment:
two students get their own pages with no instructor step, an attack scores 0 and the service goes
on, and a restart in the middle of grading loses and duplicates nothing.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import re
import secrets
import time
from pathlib import Path

import nbformat
import pytest
from pilot_course import PILOT, fill_answers, hostile_notebook

from coursetools.authoring.release import notebook_bytes, release_notebook
from coursetools.grading.handin import policy as pol
from coursetools.grading.handin.queue import HandinQueue
from coursetools.grading.handin.service import WITHHELD, HandinService, ServiceConfig, withhold_hidden

T0 = 1_800_000_000.0  # a fixed "now" for the rules


class Clock:
    def __init__(self, t=T0):
        self.t = t

    def __call__(self):
        return self.t


# ------------------------------------------------------------------------------------ policy


def test_policies_load_with_defaults_and_per_assignment_overrides(tmp_path):
    path = tmp_path / "handin.toml"
    path.write_text(
        '[default]\nattempts = 5\ncooldown_minutes = 10\n'
        '[assignments."02_laplace"]\nattempts = 2\ndeadline = 2027-01-15T12:00:00Z\n'
        'hidden_messages = "never"\n'
    )
    p = pol.load_policies(path)
    assert p["anything"] == pol.Policy(attempts=5, cooldown_minutes=10)
    laplace = p["02_laplace"]
    assert laplace.attempts == 2 and laplace.cooldown_minutes == 10  # inherits the default
    assert laplace.deadline == dt.datetime(2027, 1, 15, 12, tzinfo=dt.timezone.utc)
    assert not laplace.shows_hidden_messages(laplace.deadline.timestamp() + 1)


@pytest.mark.parametrize(
    "text, match",
    [
        ("[default]\nattempts = -1\n", "attempts must be an integer >= 0"),
        ("[default]\nattempts = 2.5\n", "attempts must be an integer"),
        ("[default]\ncooldown_minutes = nan\n", "cooldown_minutes must be a finite"),
        ("[default]\nhidden_messages = 'sometimes'\n", "never, after_deadline, always"),
        ("[default]\ndeadline = 2027-01-15T12:00:00\n", "with a time zone"),
        ("[default]\nattempt = 3\n", "unknown setting"),
        ("[defaults]\n", "unknown table"),
        ("[default\n", "not valid TOML"),
    ],
)
def test_a_bad_setting_is_refused_with_what_is_allowed(tmp_path, text, match):
    path = tmp_path / "handin.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        pol.load_policies(path)


def test_the_shipped_settings_file_is_valid():
    root = Path(__file__).resolve().parents[1]
    assert isinstance(pol.load_policies(root / "deploy" / "handin.toml"), pol.Policies)


# ------------------------------------------------------------------------------------- queue


def _queue(tmp_path, clock=None):
    return HandinQueue(tmp_path / "q.sqlite", clock=clock or Clock())


def test_attempts_cooldown_and_deadline_decide_admission(tmp_path):
    q = _queue(tmp_path)
    deadline = dt.datetime.fromtimestamp(T0 + 3600, dt.timezone.utc)
    p = pol.Policy(attempts=2, cooldown_minutes=10, deadline=deadline)
    assert q.add("a1", "ada", "x", T0, p).state == "pending"
    cooldown = q.add("a2", "ada", "x", T0 + 599, p)  # 9 min 59 s later
    assert (cooldown.state, cooldown.reason) == ("refused", "cooldown")
    assert q.next_attempt_at("ada", "x", p) == T0 + 600
    assert q.add("a3", "ada", "x", T0 + 600, p).attempt == 2
    assert q.add("a4", "ada", "x", T0 + 1300, p).reason == "attempts"
    assert q.add("b1", "bob", "x", T0 + 3601, p).reason == "deadline"
    assert q.add("a1", "ada", "x", T0, p) is None  # a folder is recorded once
    assert q.attempts_used("ada", "x") == 2
    late_ok = pol.Policy(deadline=deadline, accept_late=True)
    assert q.add("c1", "cy", "x", T0 + 3601, late_ok).state == "pending"


def test_one_students_resubmissions_never_starve_the_others(tmp_path):
    clock = Clock()
    q = _queue(tmp_path, clock)
    free = pol.Policy()
    for i in range(6):  # ada hands in six times before bob and cy hand in once
        q.add(f"ada{i}", "ada", "x", T0 + i, free)
    q.add("bob0", "bob", "x", T0 + 10, free)
    q.add("cy0", "cy", "x", T0 + 11, free)
    order = []
    while True:
        clock.t += 1
        batch = q.claim(1)
        if not batch:
            break
        order.append(batch[0].folder)
        q.finish(batch[0].folder, 1, 1)
    # round robin by the student served longest ago: bob and cy are second and third, not 7th, 8th
    assert order[:3] == ["ada0", "bob0", "cy0"] and order[3:] == [f"ada{i}" for i in range(1, 6)]
    two = _queue(tmp_path / "b", clock)
    for i in range(3):
        two.add(f"ada{i}", "ada", "x", T0 + i, free)
    two.add("bob0", "bob", "x", T0 + 5, free)
    assert [r.folder for r in two.claim(2)] == ["ada0", "bob0"]  # one per student per batch


def test_a_restart_puts_rows_in_flight_back_and_pause_stops_grading(tmp_path):
    q = _queue(tmp_path)
    q.add("a1", "ada", "x", T0, pol.Policy())
    (row,) = q.claim(1)
    assert row.state == "grading"
    again = HandinQueue(tmp_path / "q.sqlite", clock=Clock())  # the service restarted
    assert again.recover() == 1 and again.get("a1").state == "pending"
    again.set_paused(True)
    assert HandinQueue(tmp_path / "q.sqlite").paused  # the switch is in the database
    again.set_paused(False)
    assert not again.paused


def test_at_the_deadline_the_last_submission_counts(tmp_path):
    clock = Clock()
    q = _queue(tmp_path, clock)
    deadline = dt.datetime.fromtimestamp(T0 + 3600, dt.timezone.utc)
    p = pol.Policy(cooldown_minutes=30, deadline=deadline)
    policies = pol.Policies(p)
    q.add("a1", "ada", "x", T0, p)
    q.finish(q.claim(1)[0].folder, 3, 10)
    assert q.add("a2", "ada", "x", T0 + 60, p).reason == "cooldown"  # her last before the deadline
    assert q.final_candidates(policies) == []  # not yet the deadline
    clock.t = T0 + 3601
    (final,) = q.final_candidates(policies)
    assert (final.folder, final.state, final.final) == ("a2", "pending", True)
    assert q.final_candidates(policies) == []  # queued once


# ----------------------------------------------------------------------------- the service

SOURCE = nbformat.read(PILOT / "pilot.ipynb", as_version=4)
RELEASE = release_notebook(copy.deepcopy(SOURCE), "pilot")


def _hand_in(inbound: Path, student: str, nb, when: str = "2026-11-27 10:00:00.000000 UTC") -> tuple[str, str]:
    """A submission folder as nbgrader's submit makes it; returns (folder, secret)."""
    secret = secrets.token_hex(16)
    folder = f"{student}+pilot+{when}+{secrets.token_hex(4)}"
    path = inbound / folder
    path.mkdir(parents=True)
    (path / "pilot.ipynb").write_bytes(notebook_bytes(nb))
    (path / "timestamp.txt").write_text(when)
    (path / "submission_secret.txt").write_text(secret)
    return folder, secret


def _page(exchange: Path, secret: str) -> str | None:
    from nbgrader.utils import notebook_hash

    path = exchange / "dp" / "feedback" / f"{notebook_hash(secret=secret, notebook_id='pilot')}.html"
    return path.read_text() if path.exists() else None


def _fake_result(job, score=7.0):
    return {"student": job.student, "assignment": job.assignment, "score": score, "max_score": 7.0,
            "cells": [{"grade_id": "clamp_tests", "kind": "auto", "points": 0.0, "max_points": 2.0,
                       "status": "failed", "message": "the hidden message", "hidden": True}],
            "feedback": [], "problems": [], "notes": [], "seconds": 0.1}


def _service(tmp_path, policies=pol.Policies(), grade=None, on_graded=None, clock=None):
    config = ServiceConfig(
        exchange_root=tmp_path / "exchange", course_id="dp", source_root=PILOT.parent,
        state_dir=tmp_path / "state", policies=policies, check_owner=False,
    )
    calls = []

    def batch(jobs):
        calls.append([j.student for j in jobs])
        return [grade(j) if grade else _fake_result(j) for j in jobs]

    service = HandinService(config, grade_batch=batch, on_graded=on_graded, clock=clock or Clock(),
                            log=lambda line: None)
    return service, calls


def test_each_student_gets_a_page_only_they_can_fetch_and_hidden_messages_are_withheld(tmp_path):
    service, calls = _service(tmp_path, pol.Policies(pol.Policy(hidden_messages="never")))
    inbound = service.config.inbound
    _, ada = _hand_in(inbound, "ada", RELEASE)
    _, bob = _hand_in(inbound, "bob", RELEASE)
    while service.run_once():
        pass
    assert sorted(c[0] for c in calls) == ["ada", "bob"]
    page = _page(tmp_path / "exchange", ada)
    assert page is not None and "pilot: feedback for ada" in page and "bob" not in page
    assert WITHHELD in page and "the hidden message" not in page
    assert "attempt 1" in page
    assert "feedback for bob" in _page(tmp_path / "exchange", bob)
    mode = (tmp_path / "exchange" / "dp" / "feedback").stat().st_mode & 0o777
    assert mode == 0o755  # students read their page by its hash; nobody lists or writes


def test_after_the_deadline_hidden_messages_show_if_the_instructor_says_so(tmp_path):
    clock = Clock()
    deadline = dt.datetime.fromtimestamp(T0 + 60, dt.timezone.utc)
    service, _ = _service(tmp_path, pol.Policies(pol.Policy(deadline=deadline, accept_late=True)), clock=clock)
    result = _fake_result(type("J", (), {"student": "ada", "assignment": "pilot"}))
    _hand_in(service.config.inbound, "ada", RELEASE)
    service.scan()
    (row,) = service.queue.rows()
    assert "the hidden message" not in service.page(row, result)
    clock.t = T0 + 61
    assert "the hidden message" in service.page(row, result)
    assert withhold_hidden(result)["cells"][0]["message"] == WITHHELD
    assert result["cells"][0]["message"] == "the hidden message"  # a copy, never the result itself


def test_a_submission_in_the_cooldown_is_refused_with_a_page_saying_when(tmp_path):
    clock = Clock(time.time())
    service, calls = _service(tmp_path, pol.Policies(pol.Policy(cooldown_minutes=15)), clock=clock)
    inbound = service.config.inbound
    _hand_in(inbound, "ada", RELEASE)
    service.run_once()
    clock.t += 120
    _, second = _hand_in(inbound, "ada", RELEASE, when="2026-11-27 10:02:00.000000 UTC")
    # arrival is the folder's inode change time (real, seconds after the first), capped at the clock
    service.run_once()
    assert len(calls) == 1
    page = _page(tmp_path / "exchange", second)
    assert page is not None and "was not graded" in page and "15 minute(s)" in page
    assert "Hand in again after" in page


def test_a_folder_in_another_students_name_is_refused_unread(tmp_path):
    config = ServiceConfig(exchange_root=tmp_path / "exchange", course_id="dp", source_root=PILOT.parent,
                           state_dir=tmp_path / "state", check_owner=True)
    calls = []
    service = HandinService(config, grade_batch=lambda jobs: calls.append(jobs) or [], log=lambda s: None)
    owner = __import__("pwd").getpwuid(os.getuid()).pw_name
    _, theirs = _hand_in(config.inbound, "someone-else", RELEASE)
    _hand_in(config.inbound, "+bad", RELEASE)  # no student name: not a submission folder
    service.run_once()
    (row,) = service.queue.rows()
    assert (row.student, row.state, row.reason) == ("someone-else", "refused", "owner")
    assert calls == [] and _page(tmp_path / "exchange", theirs) is None
    assert owner != "someone-else"


def test_a_restart_mid_grading_loses_and_duplicates_nothing(tmp_path):
    recorded = []

    class Crash(BaseException):
        pass

    def crash(job):
        raise Crash  # the machine stops while this submission is being graded

    service, _ = _service(tmp_path, grade=crash, on_graded=lambda jobs, results: recorded.extend(
        j.student for j in jobs))
    _, secret = _hand_in(service.config.inbound, "ada", RELEASE)
    with pytest.raises(Crash):
        service.run_once()
    assert service.queue.rows()[0].state == "grading" and recorded == []
    restarted, _ = _service(tmp_path, on_graded=lambda jobs, results: recorded.extend(j.student for j in jobs))
    stops = iter([False, True])
    restarted.serve(poll_seconds=0, should_stop=lambda: next(stops))
    assert recorded == ["ada"]  # graded once after the restart, handed over once
    assert [r.state for r in restarted.queue.rows()] == ["graded"]
    assert _page(tmp_path / "exchange", secret) is not None
    restarted.run_once()
    assert recorded == ["ada"]  # and never again


def test_paused_the_service_records_arrivals_and_grades_nothing(tmp_path):
    service, calls = _service(tmp_path)
    service.queue.set_paused(True)
    _hand_in(service.config.inbound, "ada", RELEASE)
    assert service.run_once() == 0 and calls == []
    assert service.queue.rows()[0].state == "pending"
    service.queue.set_paused(False)
    assert service.run_once() == 1 and calls == [["ada"]]


# ------------------------------------------------------------------------ with the real grader


def test_real_grading_two_students_and_an_attack(tmp_path):
    """The trusted grader behind the service: each student's page has their own score; an attack
    submission (it rewrites the test's helper through the kernel) scores 0 and the service goes
    on to the next student."""
    from coursetools.cli import grade_class
    from coursetools.grading.grade import Options

    graded = {}
    config = ServiceConfig(
        exchange_root=tmp_path / "exchange", course_id="dp", source_root=PILOT.parent,
        state_dir=tmp_path / "state", check_owner=False,
        options=Options(cell_timeout=60, notebook_timeout=240),
    )

    def on_graded(jobs, results):
        for job, result in zip(jobs, results):
            graded[job.student] = result["score"]

    service = HandinService(config, grade_batch=lambda jobs: grade_class(jobs, workers=1),
                            on_graded=on_graded, log=lambda s: None)
    full = fill_answers(copy.deepcopy(RELEASE))
    attack = hostile_notebook(tmp_path, "h_forge")  # the adversarial suite's forger
    _, ada = _hand_in(config.inbound, "ada", full)
    _, mallory = _hand_in(config.inbound, "mallory", attack)
    _, bob = _hand_in(config.inbound, "bob", RELEASE)
    while service.run_once():
        pass
    assert graded["ada"] == 7 and graded["mallory"] == 0 and graded["bob"] == 0
    text = lambda s: " ".join(re.sub(r"<[^>]+>", " ", _page(tmp_path / "exchange", s)).split())  # noqa: E731
    assert "Autograded score: 7 / 7" in text(ada)
    assert "Autograded score: 0 / 7" in text(bob) and "Autograded score: 0 / 7" in text(mallory)
    assert json.dumps(service.queue.counts()) == json.dumps(
        {"pending": 0, "grading": 0, "graded": 3, "refused": 0, "failed": 0})


def test_the_rules_are_read_again_when_the_file_changes_and_a_bad_edit_keeps_the_old(tmp_path):
    settings = tmp_path / "handin.toml"
    settings.write_text("[default]\nattempts = 1\n")
    config = ServiceConfig(exchange_root=tmp_path / "exchange", course_id="dp", source_root=PILOT.parent,
                           state_dir=tmp_path / "state", policies=pol.load_policies(settings),
                           check_owner=False, settings_path=settings)
    said = []
    service = HandinService(config, grade_batch=lambda jobs: [_fake_result(j) for j in jobs], log=said.append)
    settings.write_text("[default]\nattempts = 4\n")
    os.utime(settings, (T0, T0))
    assert service.reload_settings() and service.config.policies["pilot"].attempts == 4
    settings.write_text("[default]\nattempts = -4\n")
    os.utime(settings, (T0 + 1, T0 + 1))
    assert not service.reload_settings() and service.config.policies["pilot"].attempts == 4
    assert any("previous rules stay" in line for line in said)


def test_a_flood_of_folders_is_refused_unread_and_others_are_graded(tmp_path, monkeypatch):
    """A student makes 300 submission folders: past the attempts, each is refused with a page and
    its notebook is never read; another student's one submission is graded in the first batch."""
    from coursetools.grading.classroom import collect

    reads = []
    real = collect._read_notebook
    monkeypatch.setattr(collect, "_read_notebook", lambda fd, name, where: reads.append(where) or real(fd, name, where))
    service, calls = _service(tmp_path, pol.Policies(pol.Policy(attempts=2)))
    for i in range(300):
        _hand_in(service.config.inbound, "mallory", RELEASE, when=f"2026-11-27 10:00:{i % 60:02d}.{i:06d} UTC")
    _hand_in(service.config.inbound, "ada", RELEASE, when="2026-11-27 11:00:00.000000 UTC")
    service.run_once()
    assert calls == [["mallory"]] or calls == [["ada"]]
    service.run_once()
    assert sorted(c[0] for c in calls) == ["ada", "mallory"]  # ada's turn comes at once
    while service.run_once():
        pass
    counts = service.queue.counts()
    assert counts["graded"] == 3 and counts["refused"] == 298
    assert len(reads) == 3  # only the admitted notebooks were read
    assert len(list((tmp_path / "exchange" / "dp" / "feedback").glob("*.html"))) == 301


def test_a_recording_failure_is_retried_and_then_failed_never_looped(tmp_path):
    """The gradebook is locked (or the disk full) when a result is recorded: the submission goes
    back to the queue, and after three tries it is "failed" and left for the instructor."""
    tries = []

    def broken(jobs, results):
        tries.append(jobs[0].student)
        raise OSError("database is locked")

    service, _ = _service(tmp_path, on_graded=broken)
    _hand_in(service.config.inbound, "ada", RELEASE)
    for _ in range(5):
        service.run_once()
    assert tries == ["ada"] * 3
    assert [(r.state, r.tries) for r in service.queue.rows()] == [("failed", 3)]
