"""The formgrader's Autograde and Generate Feedback buttons grade with the trusted grader.

Three submissions sit in the course's submitted directory as nbgrader's collect leaves them (the
notebook, its timestamp and secret): ada_full (every answer right) and two attacks on a grader
that runs the tests in the student's kernel, h_patch (every checker patched) and h_forge (forged
idle status and execute replies). ``make grade``'s command grades a copy of them in a second
course directory; then, in Chromium, the formgrader's Autograde button is pressed on each row of
*Manage Submissions* and Generate Feedback on ada_full's. The scores shown must be make grade's
(7, 0 and 0 of 7, plus the written answer's 1 point still to grade), and the feedback page the
button writes must be make grade's, byte for byte. The seconds each press took and make grade's
are printed (``-s``), not asserted.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time

import pytest
from conftest import BIN, PILOT, ROOT, TOKEN
from pilot_course import pilot_course

STUDENTS = {"ada_full": 7, "h_forge": 0, "h_patch": 0}


def _hand_in(course, hostile) -> None:
    spec = importlib.util.spec_from_file_location("make_class", ROOT / "examples" / "make_class.py")
    make_class = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_class)
    submitted = course / "build" / "nbgrader" / "submitted"
    make_class.make_class(course / "solutions", course.parent / "regular")
    shutil.copytree(course.parent / "regular" / "ada_full", submitted / "ada_full")
    for student in ("h_forge", "h_patch"):
        shutil.copytree(hostile / student, submitted / student)
    for number, student in enumerate(STUDENTS):
        folder = submitted / student / "pilot"
        (folder / "timestamp.txt").write_text("2026-11-20 09:30:00.000000 UTC")
        (folder / "submission_secret.txt").write_text(f"secret-{number}")


@pytest.fixture(scope="module")
def make_graded(course, tmp_path_factory):
    """A second course with the same submissions, graded by make grade's command: (root, seconds)."""
    base = tmp_path_factory.mktemp("make-grade")
    spec = importlib.util.spec_from_file_location("make_class", ROOT / "examples" / "make_class.py")
    make_class = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_class)
    make_class.make_hostile(PILOT / "pilot.ipynb", base / "hostile")
    other = pilot_course(base / "course")
    _hand_in(course, base / "hostile")
    _hand_in(other, base / "hostile")
    start = time.monotonic()
    graded = subprocess.run(
        [
            sys.executable,
            "-m",
            "coursetools",
            "grade",
            str(other / "build/nbgrader/submitted"),
            "--workers",
            "1",
            "--source",
            str(other / "solutions"),
            "--grades",
            str(other / "build" / "grades.csv"),
            "--nbgrader-config",
            str(other / "nbgrader_config.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": f"{BIN}:/usr/bin:/bin"},
    )
    seconds = time.monotonic() - start
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    return other, seconds


def _press(page, student: str, button: str) -> float:
    """Press ``button`` (autograde, generate-feedback) on ``student``'s row; seconds to success."""
    row = page.locator("tr", has=page.locator("td", has_text=student))
    row.wait_for(timeout=60_000)
    start = time.monotonic()
    row.locator(f"td.{button} a").click()
    modal = page.locator("#success-modal, #error-modal")
    modal.wait_for(timeout=600_000)
    seconds = time.monotonic() - start
    text = modal.inner_text()
    assert modal.get_attribute("id") == "success-modal", text[-3000:]
    modal.locator(".modal-footer button", has_text="OK").click()
    modal.wait_for(state="detached", timeout=30_000)
    return seconds


def test_the_formgrader_buttons_give_make_grades_scores_and_page(page, lab, course, make_graded):
    other, make_seconds = make_graded
    page.goto(f"{lab}/?token={TOKEN}")
    page.goto(f"{lab}/formgrader/manage_submissions/pilot")
    pressed = {student: _press(page, student, "autograde") for student in STUDENTS}
    page.reload()
    for student, points in STUDENTS.items():
        row = page.locator("tr", has=page.locator("td", has_text=student))
        row.wait_for(timeout=60_000)
        assert f"{points} / 8" in row.inner_text(), (student, row.inner_text())
    feedback_seconds = _press(page, "ada_full", "generate-feedback")
    written = course / "build/nbgrader/feedback/ada_full/pilot/pilot.html"
    expected = other / "build" / "feedback" / "ada_full" / "pilot.html"
    assert written.read_text(encoding="utf-8") == expected.read_text(encoding="utf-8")
    assert "Autograded score: 7 / 7" in written.read_text(encoding="utf-8")
    graded = json.loads((other / "build" / "grades.json").read_text())
    each = ", ".join(f"{r['student']} {r['seconds']:.1f}" for r in graded)
    print(
        "\nAutograde button, seconds per submission: "
        + ", ".join(f"{s} {t:.1f}" for s, t in pressed.items())
        + f"; Generate Feedback {feedback_seconds:.1f}"
        + f"; make grade (--workers 1, the same {len(STUDENTS)}): {make_seconds:.1f} in all,"
        + f" the grader's own seconds {each}"
    )
