"""An instructor in the formgrader: the graded class is listed, a written answer is graded by hand,
and the export adds it to the autograded points.

``python -m coursetools grade`` grades one submission of the pilot (all three exercises right,
7 points, and a written answer worth 1) into the course's gradebook; the browser opens the
formgrader's Manual Grading, gives the written answer full credit, and ``nbgrader export``
must then say 8 of 8.
"""

from __future__ import annotations

import csv
import subprocess

import nbformat
from conftest import BIN, TOKEN, fill_answers, grade_class


def _hand_in(course) -> None:
    nb = fill_answers(nbformat.read(course / "notebooks" / "pilot" / "pilot.ipynb", as_version=4))
    grade_class(course, "hand-in", "ada", nb, "grades.csv")


def _log_in(page, lab) -> None:
    """As ``make lab`` does: the token on the server's root URL sets the login cookie for "/".

    (On a deeper URL the cookie would get that URL's folder as its path, and the formgrader's
    requests to /formgrader/api/ would be sent without it.)
    """
    page.goto(f"{lab}/?token={TOKEN}")


def test_a_written_answer_graded_in_the_formgrader_reaches_the_export(page, lab, course):
    _hand_in(course)
    _log_in(page, lab)
    page.goto(f"{lab}/formgrader/gradebook/pilot/pilot")
    row = page.locator("tr", has_text="Submission #1")
    row.wait_for(timeout=60_000)
    assert "7 / 8" in row.inner_text()  # autograded 7, the written answer still open
    row.get_by_role("link", name="Submission #1").click()
    written = page.locator(".panel-heading", has=page.locator("input#why_random"))
    written.wait_for(timeout=60_000)
    assert "Student's answer" in written.inner_text()
    written.get_by_role("button", name="Full credit").click()
    page.wait_for_function(
        "() => document.getElementById('why_random').value === '1'", timeout=30_000
    )
    page.wait_for_timeout(1500)  # the formgrader saves the score with its own request
    out = course / "build" / "final.csv"
    subprocess.run(
        [str(BIN / "nbgrader"), "export", "--to", str(out)],
        cwd=course,
        check=True,
        capture_output=True,
        timeout=120,
        env={"PATH": f"{BIN}:/usr/bin:/bin"},
    )
    (row,) = [r for r in csv.DictReader(out.open()) if r["student_id"] == "ada"]
    assert float(row["score"]) == 8.0 and float(row["max_score"]) == 8.0, row


def test_the_formgrader_edit_link_opens_the_source_notebooks(page, lab, course):
    _log_in(page, lab)
    page.goto(f"{lab}/formgrader/manage_assignments")
    edit = page.locator("a[href*='solutions/pilot']").first  # the pencil: the source folder
    edit.wait_for(timeout=60_000)
    href = edit.get_attribute("href")
    assert href.startswith("/tree/"), href  # a path under the server's root, not "../"
    page.goto(f"{lab}{href}")
    page.get_by_text("pilot.ipynb").first.wait_for(timeout=60_000)  # JupyterLab shows the folder


def test_the_class_page_opens_in_the_instructors_server(page, lab, course):
    """JupyterLab's HTML viewer shows no HTML under the server's policy; the guard serves the
    course's ``build/class.html`` at ``/coursetools/class`` under the page's own (no script)."""
    from coursetools.grading.classroom import class_page

    hostile = "<img src=x onerror=\"fetch('/pwned-class')\">"
    rows = [
        {
            "student": name,
            "assignment": "pilot",
            "score": pts,
            "max_score": 7.0,
            "cells": [
                {
                    "grade_id": "clip_tests",
                    "kind": "auto",
                    "points": pts,
                    "max_points": 7.0,
                    "status": "passed" if pts == 7 else "failed",
                    "message": "" if pts == 7 else "got <b>1.0</b>",
                }
            ],
            "problems": [],
            "notes": [],
        }
        for name, pts in (("ada", 7.0), (hostile, 2.0))
    ]
    class_page.write_class_page(rows, course / "build", roster=["ada", "eve"], title="Pilot")
    console, requests = [], []
    page.on("console", lambda m: console.append(m.text))
    page.on("request", lambda r: requests.append(r.url))
    anonymous = page.request.get(f"{lab}/coursetools/class", max_redirects=0)
    assert anonymous.status in (302, 403), anonymous.status  # only for the logged-in instructor
    _log_in(page, lab)
    response = page.goto(f"{lab}/coursetools/class")
    assert response.status == 200
    csp = response.headers["content-security-policy"]
    assert "sandbox" in csp and "allow-scripts" not in csp and "script-src" not in csp, csp
    assert page.evaluate("() => [...document.images].map(i => i.naturalWidth)") == [440]
    text = page.locator("body").inner_text()
    assert "<img src=x onerror=" in text and "eve" in text  # the name as text (shortened)
    assert not [m for m in console if "Content Security" in m], console
    assert not [u for u in requests if "pwned" in u]
