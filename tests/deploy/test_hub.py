"""A class on JupyterHub, end to end on 127.0.0.1: release, fetch, submit, collect, grade, feedback.

``deploy/jupyterhub_config.py`` is started as shipped (in its one-machine demo mode: a dummy
authenticator, every server as this test's OS user) with an instructor and two students, and
driven through the same HTTP endpoints JupyterLab's nbgrader panels call:

1. the instructor releases the pilot assignment (formgrader API) into nbgrader's exchange;
2. each student lists and fetches it (assignment list API), answers it through the contents
   API (one fully, one not at all) and submits it;
3. the instructor collects, grades with the project's grader (``python -m coursetools grade``,
   sandboxed, trusted tests) and releases the feedback;
4. each student fetches their feedback, which holds their own score and nobody else's.

Every step asserts what a wrong setup would break: a formgrader that cannot see the course
directory, an exchange students cannot write, a submission under the wrong name, a grade that
does not reach the gradebook, feedback released to the wrong student.
"""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
from hub_harness import COURSE_ID, course, hub  # noqa: F401 - the module's fixtures
from pilot_course import ROOT, fill_answers


def test_a_class_on_jupyterhub_from_release_to_feedback(hub, course):  # noqa: F811 - fixtures
    exchange = course.parent / "exchange"
    # 1. release
    hub.nbgrader("instructor", "/formgrader/api/assignment/pilot/release")
    assert (exchange / COURSE_ID / "outbound" / "pilot" / "pilot.ipynb").is_file()

    # 2. each student fetches, answers (student1 everything, student2 nothing) and submits
    for student, answer in (("student1", True), ("student2", False)):
        listed = hub.as_user(student, "GET", f"/assignments?course_id={COURSE_ID}")
        assert [a["assignment_id"] for a in listed["value"]] == ["pilot"], listed
        hub.nbgrader(student, "/assignments/fetch", assignment_id="pilot", course_id=COURSE_ID)
        path = "/api/contents/pilot/pilot.ipynb"
        model = hub.as_user(student, "GET", path + "?content=1")
        assert "raise NotImplementedError" in json.dumps(model["content"])  # the release, blank
        if answer:
            hub.as_user(student, "PUT", path, data={
                "type": "notebook", "format": "json", "content": fill_answers(nbformat.from_dict(model["content"]))
            })
        hub.nbgrader(student, "/assignments/submit", assignment_id="pilot", course_id=COURSE_ID)
    inbound = sorted(p.name.split("+")[0] for p in (exchange / COURSE_ID / "inbound").iterdir())
    assert inbound == ["student1", "student2"]  # each under their own hub name

    # 3. the instructor collects, grades with the course's grader, releases feedback
    collected = hub.nbgrader("instructor", "/formgrader/api/assignment/pilot/collect")
    # demo mode: every server runs as one OS account, so nbgrader's owner check is off there
    assert "cheating attempt" not in str(collected.get("log", "")), collected.get("log")
    submitted = course / "build" / "nbgrader" / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["student1", "student2"]
    graded = subprocess.run(
        [sys.executable, "-m", "coursetools", "grade", str(submitted),
         "--source", str(course / "solutions"), "--grades", str(course / "build" / "grades.csv"),
         "--nbgrader-config", str(course / "nbgrader_config.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    rows = hub.as_user(
        "instructor", "GET", "/formgrader/api/submitted_notebooks/pilot/pilot"
    )
    scores = {r["student"]: (r["code_score"], r["needs_manual_grade"]) for r in rows}
    assert scores == {"student1": (7.0, True), "student2": (0.0, True)}  # written answer waits
    hub.nbgrader("instructor", "/formgrader/api/assignment/pilot/release_feedback")

    # 4. each student fetches their own feedback
    for student, score in (("student1", "7 / 7"), ("student2", "0 / 7")):
        hub.nbgrader(
            student, "/assignments/fetch_feedback", assignment_id="pilot", course_id=COURSE_ID
        )
        home = course.parent / "hub-state" / "homes" / student / "pilot" / "feedback"
        (page,) = home.glob("*/pilot.html")
        text = page.read_text()
        assert f"Autograded score: {score}" in text, (student, text[:500])
        assert f"feedback for {student}" in text
