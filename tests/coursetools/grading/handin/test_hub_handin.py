"""Feedback at hand-in on JupyterHub: no instructor step between submit and feedback.

``deploy/jupyterhub_config.py`` starts the hand-in service as a managed service. The instructor
releases the pilot; then, with nobody grading by hand:

1. student1 hands in every answer right and student2 hands in an attack (h_forge of the
   adversarial suite: forged idle statuses and execute replies); each fetches a page with their
   own score (7/7, 0/7) within the stated time, and the service goes on;
2. student1 hands in again inside the cool-down: that submission is refused, and the page says so
   and says when the next attempt counts;
3. the service is killed while it grades student2's second submission (after the cool-down is
   lifted for the test): the hub starts it again and the submission is graded once: one row in
   the queue, one gradebook submission per student, one line per student in the grades;
4. the class page beside the grades shows the gradebook's counts.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from hub_harness import COURSE_ID, _free_port, running_hub
from pilot_course import fill_answers, hostile_notebook, pilot_course

FEEDBACK_WITHIN = 60.0  # seconds from submit to a fetched page, on an idle machine (the issue's)


@pytest.fixture(scope="module", params=["files", "http"])
def exchange_mode(request) -> str:
    """nbgrader's shared folder, or the HTTP exchange (no shared disk, as on Kubernetes)."""
    return request.param


@pytest.fixture(scope="module")
def course(tmp_path_factory, exchange_mode) -> Path:
    return pilot_course(tmp_path_factory.mktemp(f"handin-{exchange_mode}") / "course")


@pytest.fixture(scope="module")
def hub(course, exchange_mode):
    settings = course.parent / "handin.toml"
    settings.write_text(
        '[default]\nattempts = 3\ncooldown_minutes = 30\nhidden_messages = "never"\n'
    )
    http = {
        "COURSE_EXCHANGE": "http",
        "EXCHANGE_PORT": str(_free_port()),
        "EXCHANGE_VOLUME": str(course.parent / "volume"),
    }
    with running_hub(
        course, COURSE_HANDIN_SETTINGS=str(settings), **(http if exchange_mode == "http" else {})
    ) as running:
        yield running


def _submit(hub, student, fill) -> float:
    path = "/api/contents/pilot/pilot.ipynb"
    model = hub.as_user(student, "GET", path + "?content=1")
    nb = fill(nbformat.from_dict(model["content"]))
    hub.as_user(student, "PUT", path, data={"type": "notebook", "format": "json", "content": nb})
    start = time.monotonic()
    hub.nbgrader(student, "/assignments/submit", assignment_id="pilot", course_id=COURSE_ID)
    return start


def _pages(course: Path, student: str) -> dict[str, str]:
    home = course.parent / "hub-state" / "homes" / student / "pilot" / "feedback"
    return {p.parent.name: p.read_text() for p in sorted(home.glob("*/pilot.html"))}


def _wait_pages(hub, course, student, count, timeout) -> tuple[dict[str, str], float]:
    start = time.monotonic()
    while True:
        hub.nbgrader(
            student, "/assignments/fetch_feedback", assignment_id="pilot", course_id=COURSE_ID
        )
        pages = _pages(course, student)
        if len(pages) >= count or time.monotonic() - start > timeout:
            return pages, time.monotonic() - start
        time.sleep(1.0)


def _text(page: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", page).split())


def _queue(course: Path) -> list[dict]:
    db = sqlite3.connect(course / "build" / "handin" / "queue.sqlite")
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute("SELECT * FROM submissions ORDER BY seq")]
    finally:
        db.close()


def _service_pids(course: Path) -> list[int]:
    found = subprocess.run(
        ["pgrep", "-f", f"handin serve .*{course / 'build' / 'handin'}"],
        capture_output=True,
        text=True,
    ).stdout.split()
    return [int(p) for p in found]


def test_feedback_at_hand_in_on_the_hub(hub, course):
    hub.nbgrader("instructor", "/formgrader/api/assignment/pilot/release")
    for student in ("student1", "student2"):
        hub.nbgrader(student, "/assignments/fetch", assignment_id="pilot", course_id=COURSE_ID)

    # 1. two submissions, no instructor: each student fetches their own page
    _submit(hub, "student1", fill_answers)
    forged = hostile_notebook(course.parent, "h_forge")  # the adversarial suite's forger
    _submit(hub, "student2", lambda nb: forged)
    waited = {}
    for student, score in (("student1", "7 / 7"), ("student2", "0 / 7")):
        pages, waited[student] = _wait_pages(hub, course, student, 1, timeout=4 * FEEDBACK_WITHIN)
        assert len(pages) == 1, f"{student}: no feedback after {waited[student]:.0f} s"
        text = _text(next(iter(pages.values())))
        assert f"Autograded score: {score}" in text and f"feedback for {student}" in text
        assert "attempt 1 of 3" in text
    print(f"submit to fetched page: {waited}")

    # 2. inside the cool-down: refused, with when
    _submit(hub, "student1", fill_answers)
    pages, _ = _wait_pages(hub, course, "student1", 2, timeout=4 * FEEDBACK_WITHIN)
    assert len(pages) == 2
    refused = _text(pages[max(pages)])
    assert (
        "was not graded" in refused
        and "30 minute(s)" in refused
        and "Hand in again after" in refused
    )

    # 3. a restart in the middle of grading (the cool-down lifted for this step)
    db = sqlite3.connect(course / "build" / "handin" / "queue.sqlite")
    db.execute("UPDATE submissions SET arrived = arrived - 3600")
    db.commit()
    db.close()
    _submit(hub, "student2", fill_answers)
    deadline = time.monotonic() + 4 * FEEDBACK_WITHIN
    while not any(r["state"] == "grading" for r in _queue(course)):
        assert time.monotonic() < deadline, _queue(course)
        time.sleep(0.2)
    for pid in _service_pids(course):
        os.kill(pid, signal.SIGKILL)
    pages, _ = _wait_pages(hub, course, "student2", 2, timeout=8 * FEEDBACK_WITHIN)
    assert len(pages) == 2, "the submission in flight was lost"
    assert "Autograded score: 7 / 7" in _text(pages[max(pages)])
    rows = _queue(course)
    assert [r["state"] for r in rows] == ["graded", "graded", "refused", "graded"]
    assert len({r["folder"] for r in rows}) == 4
    assert [r["tries"] for r in rows if r["student"] == "student2"][-1] == 2  # graded again, once

    from coursetools.grading.classroom import gradebook

    coursedir = gradebook.course_directory(course / "nbgrader_config.py")
    with gradebook.open_gradebook(coursedir.db_url) as gb:
        subs = {s.student.id: s.score for s in gb.assignment_submissions("pilot")}
        waiting = sum(bool(s.needs_manual_grade) for s in gb.assignment_submissions("pilot"))
    assert subs == {"student1": 7.0, "student2": 7.0}  # one submission each, the last graded
    details = json.loads((course / "build" / "grades.json").read_text())
    assert sorted(r["student"] for r in details) == ["student1", "student2"]

    # 4. the class page agrees with the gradebook
    page = _text((course / "build" / "class.html").read_text())
    assert "2 of 2 handed in" in page
    assert f"written answers waiting in the formgrader: {waiting}" in page
