"""Feedback at hand-in: the service's rules, its queue, and real grading.

The queue and the policy are tested with a clock the test moves; the service with a fake
exchange (folders made as nbgrader's ``submit`` makes them: the notebook, ``timestamp.txt``,
``submission_secret.txt``) and, at the end, with the real grader on the pilot assignment:
two students get their own pages with no instructor step, an attack scores 0 and the service goes
on, and a restart in the middle of grading loses and duplicates nothing.
"""

from __future__ import annotations

import copy
import dataclasses
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
from coursetools.grading.handin.service import (
    WITHHELD,
    HandinService,
    ServiceConfig,
    withhold_hidden,
)

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
        "[default]\nattempts = 5\ncooldown_minutes = 10\n"
        '[assignments."02_laplace"]\nattempts = 2\ndeadline = 2027-01-15T12:00:00Z\n'
        'hidden_messages = "never"\n'
    )
    p = pol.load_policies(path)
    assert p["anything"] == pol.Policy(attempts=5, cooldown_minutes=10)
    laplace = p["02_laplace"]
    assert laplace.attempts == 2 and laplace.cooldown_minutes == 10  # inherits the default
    assert laplace.deadline == dt.datetime(2027, 1, 15, 12, tzinfo=dt.UTC)
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
    root = Path(__file__).resolve().parents[4]
    assert isinstance(pol.load_policies(root / "deploy" / "handin.toml"), pol.Policies)


# ------------------------------------------------------------------------------------- queue


def _queue(tmp_path, clock=None):
    return HandinQueue(tmp_path / "q.sqlite", clock=clock or Clock())


def test_attempts_cooldown_and_deadline_decide_admission(tmp_path):
    q = _queue(tmp_path)
    deadline = dt.datetime.fromtimestamp(T0 + 3600, dt.UTC)
    p = pol.Policy(attempts=2, cooldown_minutes=10, deadline=deadline)
    assert q.add("a1", "ada", "x", T0, p).state == "pending"
    cooldown = q.add("a2", "ada", "x", T0 + 599, p)  # 9 min 59 s later
    assert (cooldown.state, cooldown.reason) == ("refused", "cooldown")
    assert q.next_attempt_at("ada", "x", p) == T0 + 600
    q.finish(q.claim(1)[0].folder, 1, 7)
    assert q.add("a3", "ada", "x", T0 + 600, p).attempt == 2
    assert q.add("a4", "ada", "x", T0 + 1300, p).reason == "attempts"
    assert q.add("b1", "bob", "x", T0 + 3601, p).reason == "deadline"
    assert q.add("a1", "ada", "x", T0, p) is None  # a folder is recorded once
    assert q.attempts_used("ada", "x") == 2
    late_ok = pol.Policy(deadline=deadline, accept_late=True)
    assert q.add("c1", "cy", "x", T0 + 3601, late_ok).state == "pending"


def test_a_newer_submission_replaces_one_still_waiting(tmp_path):
    """The newest counts: admitted while an older one of the same work waits, it replaces it
    (superseded, never graded, no attempt spent); one being graded is left alone."""
    q = _queue(tmp_path)
    free = pol.Policy(attempts=2)
    q.add("a1", "ada", "x", T0, free)
    q.add("b1", "ada", "other", T0, free)
    second = q.add("a2", "ada", "x", T0 + 1, free)
    assert (second.state, second.attempt) == ("pending", 1)
    assert (q.get("a1").state, q.get("a1").reason) == ("refused", "superseded")
    assert q.get("b1").state == "pending"  # another assignment is not touched
    (claimed,) = [r for r in q.claim(1) + q.claim(1) if r.assignment == "x"]
    assert q.add("a3", "ada", "x", T0 + 2, free).attempt == 2
    assert q.get(claimed.folder).state == "grading"  # not superseded while it is graded
    assert q.attempts_used("ada", "x") == 2


def test_one_students_resubmissions_never_starve_the_others(tmp_path):
    clock = Clock()
    q = _queue(tmp_path, clock)
    free = pol.Policy()
    for i in range(6):  # ada hands in six assignments before bob and cy hand in once
        q.add(f"ada{i}", "ada", f"x{i}", T0 + i, free)
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
        two.add(f"ada{i}", "ada", f"x{i}", T0 + i, free)
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
    deadline = dt.datetime.fromtimestamp(T0 + 3600, dt.UTC)
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


def _hand_in(
    inbound: Path, student: str, nb, when: str = "2026-11-27 10:00:00.000000 UTC"
) -> tuple[str, str]:
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

    path = (
        exchange / "dp" / "feedback" / f"{notebook_hash(secret=secret, notebook_id='pilot')}.html"
    )
    return path.read_text() if path.exists() else None


def _fake_result(job, score=7.0):
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


def _service(tmp_path, policies=None, grade=None, on_graded=None, clock=None, **config_kw):
    config = ServiceConfig(
        exchange_root=tmp_path / "exchange",
        course_id="dp",
        source_root=PILOT.parent,
        state_dir=tmp_path / "state",
        policies=policies or pol.Policies(),
        check_owner=False,
        **{"settle_seconds": 0, **config_kw},
    )
    calls = []

    def one(job):
        calls.append([job.student])
        return grade(job) if grade else _fake_result(job)

    service = HandinService(
        config, grade=one, on_graded=on_graded, clock=clock or Clock(), log=lambda line: None
    )
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
    assert (
        mode == 0o711
    )  # as nbgrader's release_feedback: a page is fetched by its hash, never listed
    assert all(
        p.stat().st_mode & 0o777 == 0o644
        for p in (tmp_path / "exchange" / "dp" / "feedback").iterdir()
    )
    assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700


def test_after_the_deadline_hidden_messages_show_if_the_instructor_says_so(tmp_path):
    clock = Clock()
    deadline = dt.datetime.fromtimestamp(T0 + 60, dt.UTC)
    service, _ = _service(
        tmp_path, pol.Policies(pol.Policy(deadline=deadline, accept_late=True)), clock=clock
    )
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
    config = ServiceConfig(
        exchange_root=tmp_path / "exchange",
        course_id="dp",
        source_root=PILOT.parent,
        state_dir=tmp_path / "state",
        check_owner=True,
        settle_seconds=0,
    )
    calls = []
    service = HandinService(
        config, grade=lambda job: calls.append(job) or _fake_result(job), log=lambda s: None
    )
    owner = __import__("pwd").getpwuid(os.getuid()).pw_name
    _, theirs = _hand_in(config.inbound, "someone-else", RELEASE)
    _hand_in(config.inbound, "+bad", RELEASE)  # no student name: not a submission folder
    service.run_once()
    rows = {r.reason: r for r in service.queue.rows()}
    assert (rows["owner"].student, rows["owner"].state) == ("someone-else", "refused")
    assert rows["name"].state == "refused" and rows["name"].student == owner  # whoever made it
    assert calls == [] and _page(tmp_path / "exchange", theirs) is None
    assert owner != "someone-else"


def test_a_restart_mid_grading_loses_and_duplicates_nothing(tmp_path):
    recorded = []

    class Crash(BaseException):
        pass

    def crash(job):
        raise Crash  # the machine stops while this submission is being graded

    service, _ = _service(
        tmp_path,
        grade=crash,
        on_graded=lambda jobs, results: recorded.extend(j.student for j in jobs),
    )
    _, secret = _hand_in(service.config.inbound, "ada", RELEASE)
    with pytest.raises(Crash):
        service.run_once()
    assert service.queue.rows()[0].state == "grading" and recorded == []
    restarted, _ = _service(
        tmp_path, on_graded=lambda jobs, results: recorded.extend(j.student for j in jobs)
    )
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
    from coursetools.grading.grade import grade_job
    from coursetools.grading.job import Options

    graded = {}
    config = ServiceConfig(
        exchange_root=tmp_path / "exchange",
        course_id="dp",
        source_root=PILOT.parent,
        state_dir=tmp_path / "state",
        check_owner=False,
        settle_seconds=0,
        options=Options(cell_timeout=60, notebook_timeout=240),
    )

    def on_graded(jobs, results):
        for job, result in zip(jobs, results, strict=True):
            graded[job.student] = result["score"]

    service = HandinService(config, grade=grade_job, on_graded=on_graded, log=lambda s: None)
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
        {"pending": 0, "grading": 0, "graded": 3, "refused": 0, "failed": 0}
    )


def test_the_rules_are_read_again_when_the_file_changes_and_a_bad_edit_keeps_the_old(tmp_path):
    settings = tmp_path / "handin.toml"
    settings.write_text("[default]\nattempts = 1\n")
    config = ServiceConfig(
        exchange_root=tmp_path / "exchange",
        course_id="dp",
        source_root=PILOT.parent,
        state_dir=tmp_path / "state",
        policies=pol.load_policies(settings),
        check_owner=False,
        settings_path=settings,
    )
    said = []
    service = HandinService(config, grade=_fake_result, log=said.append)
    settings.write_text("[default]\nattempts = 4\n")
    os.utime(settings, (T0, T0))
    assert service.reload_settings() and service.config.policies["pilot"].attempts == 4
    settings.write_text("[default]\nattempts = -4\n")
    os.utime(settings, (T0 + 1, T0 + 1))
    assert not service.reload_settings() and service.config.policies["pilot"].attempts == 4
    assert any("previous rules stay" in line for line in said)


def test_a_flood_of_folders_costs_one_read_and_one_page_and_others_are_graded(
    tmp_path, monkeypatch
):
    """A student makes 3,000 submission folders: only the newest is read (the others are refused
    unread, superseded, with no page), one refusal page at most, one grading; another student's
    one submission is graded in the first round; the round takes well under the 42 s it took."""
    from coursetools.grading.classroom import collect

    reads = []
    real = collect._read_notebook
    monkeypatch.setattr(
        collect,
        "_read_notebook",
        lambda fd, name, where, files=None: reads.append(where) or real(fd, name, where, files),
    )
    service, calls = _service(tmp_path, pol.Policies(pol.Policy(attempts=2)), workers=2)
    data = notebook_bytes(RELEASE)
    inbound = service.config.inbound
    for i in range(3000):  # as fast as a script makes them
        path = inbound / f"mallory+pilot+2026-11-27 10:00:00.{i:06d} UTC"
        path.mkdir(parents=True)
        (path / "pilot.ipynb").write_bytes(data)
        (path / "submission_secret.txt").write_text(f"{i:032x}")
        (path / "timestamp.txt").write_text("2026-11-27 10:00:00")
    _hand_in(inbound, "ada", RELEASE, when="2026-11-27 11:00:00.000000 UTC")
    started = time.process_time()
    service.run_once()
    cpu = time.process_time() - started
    assert sorted(c[0] for c in calls) == ["ada", "mallory"]  # one each, in the first round
    assert len(reads) == 2  # the newest of each, nothing else
    assert cpu < 10, f"a round of 3,000 folders took {cpu:.1f} s of CPU"
    while service.run_once():
        pass
    counts = service.queue.counts()
    assert counts["graded"] == 2 and counts["refused"] == 2999
    assert {r.reason for r in service.queue.rows() if r.state == "refused"} == {"superseded"}
    assert (
        len(list((tmp_path / "exchange" / "dp" / "feedback").glob("*.html"))) == 2
    )  # their own pages


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


# ---------------------------------------------------------------- a hostile class


def test_a_folder_name_that_is_not_utf8_or_odd_is_refused_with_a_row_and_the_round_goes_on(
    tmp_path,
):
    """A name that is not UTF-8 made every round raise before anything was graded; now each odd
    name is a refused row (its bytes escaped), and the class is graded in the same round."""
    service, calls = _service(tmp_path)
    inbound = service.config.inbound
    inbound.mkdir(parents=True)
    odd = [
        b"\xff\xfe+pilot+x",
        b"ada\x1b[31m+pilot+x",
        b"noplus",
        b"a<script>+pilot+x",
        b"+pilot+x",
        b"x" * 255,
    ]
    for name in odd:
        os.mkdir(os.path.join(os.fsencode(inbound), name))
    _, ada = _hand_in(inbound, "ada", RELEASE)
    assert service.run_once() == 1 and calls == [["ada"]]
    rows = service.queue.rows()
    refused = [r for r in rows if r.reason == "name"]
    assert len(refused) == len(odd) and all(r.state == "refused" for r in refused)
    assert "\\xff\\xfe+pilot+x" in {r.folder for r in refused}  # escaped text, never a crash
    assert _page(tmp_path / "exchange", ada) is not None
    assert service.run_once() == 0  # recorded once
    assert len(service.queue.rows()) == len(rows)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder another user owns")
def test_a_folder_made_in_a_classmates_name_never_stands_for_their_last_submission(tmp_path):
    """With check_owner, mallory (uid nobody) makes a folder in ada's name after ada's last,
    cool-down-refused submission: refused "owner", and at the deadline ada's own last submission
    is the one graded (it was 0/17 instead of 17/17)."""
    import pwd

    ada_name = pwd.getpwuid(os.getuid()).pw_name  # the folder's real owner is "ada"
    nobody = pwd.getpwnam("nobody").pw_uid
    clock = Clock(time.time())
    deadline = dt.datetime.fromtimestamp(clock.t + 3600, dt.UTC)
    graded = []
    service, _ = _service(
        tmp_path,
        pol.Policies(pol.Policy(cooldown_minutes=30, deadline=deadline)),
        clock=clock,
        grade=lambda job: graded.append(job.submission) or _fake_result(job),
    )
    service.config = dataclasses.replace(service.config, check_owner=True)
    inbound = service.config.inbound
    first = fill_answers(copy.deepcopy(RELEASE))
    last = copy.deepcopy(first)
    last.cells[0].source += "\n# ada's last"
    f1, _ = _hand_in(inbound, ada_name, first, when="2026-11-27 10:00:00.000000 UTC")
    service.run_once()
    f2, _ = _hand_in(inbound, ada_name, last, when="2026-11-27 10:05:00.000000 UTC")
    clock.t += 300
    service.run_once()
    forged, _ = _hand_in(inbound, ada_name, RELEASE, when="2026-11-27 10:10:00.000000 UTC")
    os.chown(inbound / forged, nobody, -1)
    clock.t += 5
    service.run_once()
    assert service.queue.get(forged).reason == "owner"
    clock.t = deadline.timestamp() + 1
    service.run_once()
    assert graded[-1] == notebook_bytes(last)  # her own last submission, graded at the deadline
    assert service.queue.get(f2).final and service.queue.get(f2).state == "graded"


def test_what_is_graded_is_what_arrived_and_a_late_edit_in_place_arrives_late(tmp_path):
    """The notebook is copied (its hash kept) when the folder is first seen: an edit while it
    waits (the service paused or busy) changes nothing. A folder first seen after an edit past the
    deadline arrives when it was edited: refused for the deadline (it was graded 17/17 on time)."""
    graded = []
    clock = Clock(time.time())
    deadline = dt.datetime.fromtimestamp(clock.t + 30, dt.UTC)
    service, _ = _service(
        tmp_path,
        pol.Policies(pol.Policy(deadline=deadline)),
        clock=clock,
        grade=lambda job: graded.append(job.submission) or _fake_result(job),
    )
    inbound = service.config.inbound
    service.queue.set_paused(True)
    folder, _ = _hand_in(inbound, "ada", RELEASE)
    service.run_once()
    original = (inbound / folder / "pilot.ipynb").read_bytes()
    (inbound / folder / "pilot.ipynb").write_bytes(
        notebook_bytes(fill_answers(copy.deepcopy(RELEASE)))
    )
    service.queue.set_paused(False)
    service.run_once()
    assert graded == [original]
    row = service.queue.get(folder)
    assert row.digest == __import__("hashlib").sha256(original).hexdigest()
    # bob's folder was made before the deadline, but nobody saw it before he edited it after
    late, _ = _hand_in(inbound, "bob", RELEASE)
    made = max((inbound / late / n).stat().st_ctime for n in ("", "pilot.ipynb", "timestamp.txt"))
    while time.time() < made + 1.0:  # the deadline falls between the folder and the edit
        time.sleep(0.1)
    edited_at = time.time()
    (inbound / late / "pilot.ipynb").write_bytes(
        notebook_bytes(fill_answers(copy.deepcopy(RELEASE)))
    )
    clock.t = deadline.timestamp() + 60
    with_edit = service.config
    service.config = dataclasses.replace(
        with_edit,
        policies=pol.Policies(pol.Policy(deadline=dt.datetime.fromtimestamp(made + 0.5, dt.UTC))),
    )
    assert made < made + 0.5 < edited_at
    service.run_once()
    assert (service.queue.get(late).state, service.queue.get(late).reason) == (
        "refused",
        "deadline",
    )
    assert len(graded) == 1


class ThreadPool:
    """executors.Pool's interface over threads (fake grading functions need not pickle)."""

    def __init__(self, workers):
        import concurrent.futures as cf

        self.executor = cf.ThreadPoolExecutor(workers)

    def submit(self, fn, *args):
        return self.executor.submit(fn, *args)

    def renew(self):
        pass


def test_a_stalled_notebook_holds_only_its_own_worker(tmp_path):
    """One student's notebook sleeps: with two workers the others are graded and their pages
    published while it is still running (a batch used to be recorded only when all finished)."""
    import threading

    release = threading.Event()

    def grade(job):
        if job.student == "zz":
            release.wait(30)
        return _fake_result(job)

    service, _ = _service(tmp_path, workers=2)
    service.pool, service.grade = ThreadPool(2), grade
    inbound = service.config.inbound
    _hand_in(inbound, "zz", RELEASE)
    service.run_once()
    secrets_ = [_hand_in(inbound, s, RELEASE)[1] for s in ("ada", "bob", "cy")]
    started = time.monotonic()
    while (
        any(_page(tmp_path / "exchange", s) is None for s in secrets_)
        and time.monotonic() - started < 20
    ):
        service.run_once(wait=0.2)
    assert all(_page(tmp_path / "exchange", s) is not None for s in secrets_)
    assert [r.student for r in service.queue.rows() if r.state == "grading"] == ["zz"]
    release.set()
    service.drain(poll_seconds=0.1)
    assert service.queue.counts()["graded"] == 4


def test_a_starved_submission_is_graded_once_more_by_one_worker_with_the_same_wall(tmp_path):
    """Cut by the wall clock while waiting for a CPU (result "starved"): graded once more, with the
    same hand-in wall, by one worker while the class goes on (it used to wait for every worker to
    drain, then run alone with the notebook's own limits: 3 x 600 + 10 s); starved again, its
    result counts as the timeout it is."""
    import threading

    seen, second_pass = [], threading.Event()

    def grade(job):
        seen.append((job.student, job.options.notebook_wall))
        result = _fake_result(job, score=7.0 if job.student != "ada" else 2.0)
        if job.student == "ada":
            if len([s for s, _ in seen if s == "ada"]) == 2:
                second_pass.set()
                time.sleep(1.0)  # the second pass is slow: the others are graded meanwhile
            result["starved"] = True  # starved both times
        return result

    service, _ = _service(tmp_path, workers=2)
    service.pool, service.grade = ThreadPool(2), grade
    service.config = dataclasses.replace(
        service.config, options=dataclasses.replace(service.config.options, notebook_wall=300.0)
    )
    inbound = service.config.inbound
    _hand_in(inbound, "ada", RELEASE)
    service.run_once(wait=1.0)
    assert service.queue.rows()[0].alone and service.queue.rows()[0].state == "pending"
    service.run_once()  # the second pass starts
    assert second_pass.wait(5)
    _, bob = _hand_in(inbound, "bob", RELEASE)
    service.run_once(wait=0.5)
    assert _page(tmp_path / "exchange", bob) is not None  # while ada's second pass still runs
    service.drain(poll_seconds=0.05)
    assert [wall for _, wall in seen] == [300.0, 300.0, 300.0]  # the hand-in wall, every time
    assert [s for s, _ in seen].count("ada") == 2  # once more, never a third time
    row = next(r for r in service.queue.rows() if r.student == "ada")
    assert (row.state, row.alone, row.score) == ("graded", True, 2.0)


# ------------------------------------------------------------------- nothing rests on a secret name


def _late_folder(inbound: Path, student: str = "ada") -> tuple[str, float]:
    """A folder handed in, then a deadline just after it: returns (folder, deadline)."""
    folder, _ = _hand_in(inbound, student, RELEASE)
    made = max(
        (inbound / folder / n).stat().st_ctime
        for n in ("", "pilot.ipynb", "timestamp.txt", "submission_secret.txt")
    )
    deadline = made + 0.5
    while time.time() < deadline + 0.5:
        time.sleep(0.05)
    return folder, deadline


@pytest.mark.parametrize("moment", ["after the listing, before the open", "after the read"])
def test_a_notebook_renamed_into_place_during_the_read_is_refused_or_graded_as_it_was(
    tmp_path, monkeypatch, moment
):
    """A folder the service first reaches after the deadline; the student renames a prepared
    notebook into place at the worst moment (a hook, not luck). It was graded 17/17 as on time in 2
    of 3 runs; now it is refused for the deadline, or graded on what was there before."""
    from coursetools.grading.classroom import collect

    graded = []
    clock = Clock(time.time())
    service, _ = _service(
        tmp_path, clock=clock, grade=lambda job: graded.append(job.submission) or _fake_result(job)
    )
    inbound = service.config.inbound
    inbound.mkdir(parents=True)
    prepared = inbound / ".prepared"  # made before the deadline, outside the folder
    prepared.write_bytes(notebook_bytes(fill_answers(copy.deepcopy(RELEASE))))
    folder, deadline = _late_folder(inbound)
    before = (inbound / folder / "pilot.ipynb").read_bytes()
    service.config = dataclasses.replace(
        service.config,
        policies=pol.Policies(pol.Policy(deadline=dt.datetime.fromtimestamp(deadline, dt.UTC))),
    )
    clock.t = time.time()
    renamed = []

    def swap():
        if not renamed:
            renamed.append(True)
            os.rename(prepared, inbound / folder / "pilot.ipynb")

    if moment.startswith("after the listing"):  # the notebook is chosen, not yet opened
        real = collect._read_notebook
        monkeypatch.setattr(collect, "_read_notebook", lambda *a, **k: (swap(), real(*a, **k))[1])
    else:
        real = collect._read_capped
        monkeypatch.setattr(collect, "_read_capped", lambda fd, where: (real(fd, where), swap())[0])
    for _ in range(3):
        service.run_once()
    assert renamed
    row = service.queue.get(folder)
    assert (row.state, row.reason) == ("refused", "deadline")
    assert all(g == before for g in graded)  # nothing from after the deadline was ever graded


def test_the_services_own_chmod_never_makes_an_older_folder_look_newer(tmp_path, monkeypatch):
    """Locking a folder changes its inode time. ada's second folder is made after the round listed
    her first and before the service locked it: the first then looked newer (its chmod time) and
    her second submission was superseded by the first. Folders are ordered by the times she made."""
    from coursetools.grading.classroom import collect

    graded = []
    clock = Clock(time.time())
    service, _ = _service(
        tmp_path,
        grade=lambda job: graded.append(job.submission) or _fake_result(job),
        settle_seconds=3600.0,
        clock=clock,
    )
    inbound = service.config.inbound
    first, _ = _hand_in(inbound, "ada", RELEASE, when="2026-11-27 10:00:00.000000 UTC")
    os.chmod(inbound / first, 0o777)  # as nbgrader's submit leaves it
    second_nb = fill_answers(copy.deepcopy(RELEASE))
    made = []
    real = collect.lock_inbound

    def lock_after_a_second_hand_in(*args, **kwargs):
        if not made:
            time.sleep(0.01)
            made.append(
                _hand_in(inbound, "ada", second_nb, when="2026-11-27 10:00:01.000000 UTC")[0]
            )
            time.sleep(0.01)
        return real(*args, **kwargs)

    monkeypatch.setattr(collect, "lock_inbound", lock_after_a_second_hand_in)
    service.scan()  # lists the first, the second is made, the first is locked: nothing settled yet
    assert service.queue.rows() == [] and made
    assert (inbound / first).stat().st_ctime > (inbound / made[0]).stat().st_ctime  # the chmod
    service.config = dataclasses.replace(service.config, settle_seconds=0)
    while service.run_once():
        pass
    assert service.queue.get(first).reason == "superseded"
    assert graded == [notebook_bytes(second_nb)]


def _as_nobody(script: str, *args: str):
    """Run the shell ``script`` as the user nobody: a classmate's process (``$1``... are ``args``)."""
    import pwd
    import subprocess

    nobody = pwd.getpwnam("nobody")
    return subprocess.Popen(
        ["/bin/sh", "-c", script, "classmate", *args],
        user=nobody.pw_uid,
        group=nobody.pw_gid,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd="/",
    )


needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root to act as a classmate (the user nobody)"
)


@pytest.fixture
def shared_tmp():
    """A folder every user can reach (pytest's own are 0700), as a hub's exchange is."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="exchange-test-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@needs_root
def test_a_classmate_who_touches_a_listable_folder_changes_nothing(shared_tmp):
    """``inbound/`` listable (1777, as the hub's exchange root was made) and the folder 0777 as
    nbgrader's submit leaves it: a classmate touches it every 0.2 s. It never settled and was
    refused for the deadline (+19 s); now the service takes group and other write off it on sight,
    the touches fail, and it arrives before the deadline."""
    import pwd

    me = pwd.getpwuid(os.getuid()).pw_name
    clock = Clock(time.time())
    deadline = dt.datetime.fromtimestamp(time.time() + 4, dt.UTC)
    service, calls = _service(
        shared_tmp, pol.Policies(pol.Policy(deadline=deadline)), clock=clock, settle_seconds=2.0
    )
    service.config = dataclasses.replace(service.config, check_owner=True)
    inbound = service.config.inbound
    folder, secret = _hand_in(inbound, me, fill_answers(copy.deepcopy(RELEASE)))
    os.chmod(inbound.parent.parent, 0o755)
    os.chmod(inbound.parent, 0o755)
    os.chmod(inbound, 0o1777)
    os.chmod(inbound / folder, 0o777)
    toucher = _as_nobody(  # every 0.2 s for 8 s; prints how many touches landed and how many failed
        'ok=0; bad=0; for i in $(seq 40); do if touch "$1" 2>/dev/null; then ok=$((ok+1)); '
        "else bad=$((bad+1)); fi; sleep 0.2; done; echo $ok $bad",
        str(inbound / folder),
    )
    try:
        time.sleep(0.5)  # a few touches land before the service first sees the folder
        while time.time() < deadline.timestamp() + 4:
            clock.t = time.time()
            service.run_once()
            time.sleep(0.2)
    finally:
        out, _ = toucher.communicate(timeout=30)
    ok, refused = map(int, out.split())
    assert ok >= 1 and refused >= 10, out  # it touched before the first sight, never after
    row = service.queue.get(folder)
    assert (row.state, row.reason) == ("graded", ""), row
    assert row.arrived < deadline.timestamp()
    assert (inbound / folder).stat().st_mode & 0o022 == 0
    assert _page(shared_tmp / "exchange", secret) is not None


@needs_root
def test_an_inbound_every_user_can_list_is_made_unlistable_as_nbgrader_makes_it(shared_tmp):
    """``inbound/`` made 1777 by hand: the service takes other users' read off (nbgrader's own is
    2733) and keeps the sticky bit; a classmate can no longer list the names, and still hands in."""
    service, _ = _service(shared_tmp)
    inbound = service.config.inbound
    inbound.mkdir(parents=True)
    for path in (inbound.parent.parent, inbound.parent):
        os.chmod(path, 0o755)
    os.chmod(inbound, 0o1777)
    _hand_in(inbound, "ada", RELEASE)
    before = _as_nobody(
        'ls "$1" >/dev/null 2>&1 && echo listed || echo refused', str(inbound)
    ).communicate()[0]
    service.run_once()
    mode = inbound.stat().st_mode
    after = _as_nobody(
        'ls "$1" >/dev/null 2>&1 && echo listed || echo refused', str(inbound)
    ).communicate()[0]
    handed = _as_nobody('mkdir "$1/bob+pilot+x" && echo made', str(inbound)).communicate()[0]
    assert (before.strip(), after.strip(), handed.strip()) == ("listed", "refused", "made")
    assert mode & 0o004 == 0 and mode & 0o1000


@needs_root
@pytest.mark.parametrize("when", ["before the service sees it", "after"])
def test_a_classmate_who_swaps_the_notebook_of_a_listable_folder_changes_nothing(shared_tmp, when):
    """The classmate renames a notebook of his own over the victim's (``check_owner`` looked at the
    folder only). Before the service sees the folder: the file is not the folder owner's, the
    folder is refused "owner" (never graded, never a page). After: the rename fails, and the
    victim's own notebook is graded."""
    import pwd

    me = pwd.getpwuid(os.getuid()).pw_name
    graded = []
    service, _ = _service(
        shared_tmp, grade=lambda job: graded.append(job.submission) or _fake_result(job)
    )
    service.config = dataclasses.replace(service.config, check_owner=True)
    inbound = service.config.inbound
    mine = notebook_bytes(fill_answers(copy.deepcopy(RELEASE)))
    folder, _ = _hand_in(inbound, me, RELEASE)
    (inbound / folder / "pilot.ipynb").write_bytes(mine)
    for path in (inbound.parent.parent, inbound.parent):
        os.chmod(path, 0o755)
    os.chmod(inbound, 0o1777)
    os.chmod(inbound / folder, 0o777)
    if when == "after":
        service.scan()  # sighted, locked; not yet taken (it is still being copied in, say)
        assert service.queue.rows() == [] or service.queue.get(folder)
    swap = _as_nobody(
        'if echo "{}" > "$1/.mine" 2>/dev/null && mv -f "$1/.mine" "$1/pilot.ipynb" 2>/dev/null; '
        "then echo swapped; else echo refused; fi",
        str(inbound / folder),
    )
    out, _ = swap.communicate(timeout=30)
    while service.run_once():
        pass
    row = service.queue.get(folder)
    if when == "after":
        assert out.startswith("refused"), out
        assert graded == [mine] and row.state == "graded"
    else:
        assert out.startswith("swapped"), out
        assert graded == [] and (row.state, row.reason) == ("refused", "owner")


def test_the_command_grades_for_real_and_keeps_what_it_writes_private(tmp_path):
    """``python -m coursetools handin once`` as the hub runs it: the pilot is graded 7/7 in the
    sandbox (the pool's processes keep a umask the sandbox can read with), the page lands in a
    0711 folder, and the grades, details and pages it records are not world-readable."""
    from coursetools import cli

    def umask():
        mask = os.umask(0)
        os.umask(mask)
        return mask

    before = umask()
    exchange = tmp_path / "exchange"
    _, secret = _hand_in(exchange / "dp" / "inbound", "ada", fill_answers(copy.deepcopy(RELEASE)))
    settings = tmp_path / "handin.toml"
    settings.write_text("[default]\nattempts = 0\ncooldown_minutes = 0\n")
    grades = tmp_path / "out" / "grades.csv"
    time.sleep(2.1)  # the folder has settled
    code = cli.main(
        [
            "handin",
            "once",
            "--exchange",
            str(exchange),
            "--course-id",
            "dp",
            "--source",
            str(PILOT.parent),
            "--state",
            str(tmp_path / "state"),
            "--grades",
            str(grades),
            "--settings",
            str(settings),
            "--no-gradebook",
            "--no-check-owner",
            "--workers",
            "2",
            "--cell-timeout",
            "60",
        ]
    )
    assert code == 0
    (row,) = json.loads(grades.with_suffix(".json").read_text())
    assert (row["score"], row["max_score"]) == (7.0, 7.0), row["problems"]
    assert _page(exchange, secret) is not None
    assert (exchange / "dp" / "feedback").stat().st_mode & 0o777 == 0o711
    for path in [
        grades,
        grades.with_suffix(".json"),
        *(tmp_path / "out" / "feedback").rglob("*.html"),
    ]:
        assert path.stat().st_mode & 0o007 == 0, f"{path} is world-readable"
    assert umask() == before  # the process's umask is left as it was


def test_the_service_stopped_by_the_hubs_sigterm_leaves_no_grading_process_behind(tmp_path):
    """The hub stops a managed service with SIGTERM: the service stops as on Ctrl-C and its
    pool's grading processes go with it (left behind, each would hold memory until reboot)."""
    import signal
    import subprocess
    import sys

    settings = tmp_path / "handin.toml"
    settings.write_text("[default]\nattempts = 0\n")
    _hand_in(tmp_path / "exchange" / "dp" / "inbound", "ada", RELEASE)  # the pool starts with work
    service = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "coursetools",
            "handin",
            "serve",
            "--exchange",
            str(tmp_path / "exchange"),
            "--course-id",
            "dp",
            "--source",
            str(PILOT.parent),
            "--state",
            str(tmp_path / "state"),
            "--grades",
            str(tmp_path / "out" / "grades.csv"),
            "--settings",
            str(settings),
            "--no-gradebook",
            "--no-check-owner",
            "--workers",
            "2",
            "--poll",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        children: list[str] = []
        while not children and time.monotonic() < deadline:  # the pool's processes, once grading
            children = subprocess.run(
                ["pgrep", "-P", str(service.pid)], capture_output=True, text=True
            ).stdout.split()
            time.sleep(0.2)
        assert children, "the pool never started"
        service.send_signal(signal.SIGTERM)
        out, _ = service.communicate(timeout=60)
        assert "handin: stopped" in out
        deadline = time.monotonic() + 30
        alive = children
        while alive and time.monotonic() < deadline:
            alive = [c for c in children if Path(f"/proc/{c}").exists()]
            time.sleep(0.2)
        assert alive == [], f"grading processes left behind: {alive}"
    finally:
        if service.poll() is None:
            service.kill()


def _cpu_groups() -> bool:
    from coursetools.grading.sandboxed import limits
    from coursetools.grading.sandboxed import sandbox as sbx

    return os.geteuid() == 0 and sbx.detect()[0] != "rlimit" and limits.cgroup_support() != "none"


@pytest.mark.skipif(
    not _cpu_groups(), reason="needs root and control groups (the sandbox's CPU meter)"
)
def test_a_notebook_that_sleeps_between_bursts_holds_one_worker_for_the_wall_and_a_classmate_is_served(
    tmp_path,
):
    """The review's stall, with the real grader and two workers: mallory's answers compute 20 ms
    then sleep 80 ms, for ever. Her run is cut by the 15 s hand-in wall; it is not starved (her
    threads hardly waited), so it is not graded again alone: ada, who hands in as mallory's run is
    cut, has her page within 15 s (it came 134 s later: the alone pass stopped everyone)."""
    from coursetools.grading.classroom import executors
    from coursetools.grading.grade import grade_job
    from coursetools.grading.job import Options

    bursts = fill_answers(copy.deepcopy(RELEASE))
    bursts.cells.insert(
        0,
        nbformat.v4.new_code_cell(
            "import time\nwhile True:\n    _t = time.process_time()\n    while time.process_time() - _t < 0.02:\n"
            "        pass\n    time.sleep(0.08)\n"
        ),
    )
    config = ServiceConfig(
        exchange_root=tmp_path / "exchange",
        course_id="dp",
        source_root=PILOT.parent,
        state_dir=tmp_path / "state",
        check_owner=False,
        settle_seconds=0,
        workers=2,
        options=Options(cell_timeout=60, notebook_timeout=120, notebook_wall=15.0),
    )
    log = []
    with executors.Pool(workers=2) as pool:
        service = HandinService(config, grade=grade_job, pool=pool, log=log.append)
        _, mallory = _hand_in(config.inbound, "mallory", bursts)
        service.run_once()
        started = time.monotonic()
        while service.in_flight and time.monotonic() - started < 60:  # until her run is cut
            service.run_once(wait=0.2)
        _, ada = _hand_in(config.inbound, "ada", fill_answers(copy.deepcopy(RELEASE)))
        handed_in = time.monotonic()
        while _page(tmp_path / "exchange", ada) is None and time.monotonic() - handed_in < 60:
            service.run_once(wait=0.2)
        latency = time.monotonic() - handed_in
        service.drain(poll_seconds=0.2)
    rows = {r.student: r for r in service.queue.rows()}
    assert latency < 15, (latency, log)
    assert rows["ada"].score == 7
    assert rows["mallory"].state == "graded" and not rows["mallory"].alone, log  # graded once
    assert (
        rows["mallory"].finished - rows["mallory"].started < 15 + 30
    )  # the wall, and the grader's start-up
    assert not any("graded once more" in line for line in log), log
