"""The instructor's class page: what a Monday morning needs, counted right.

Every figure the page shows is checked against results built here by hand: the score
distribution, each exercise's share of students with full marks and its most frequent failing
messages, who has not handed in (against the roster), attempts used, and written answers waiting
in the formgrader. A student's text (a name, a message quoting their value) is shown as text.
"""

from __future__ import annotations

import base64
import html
import re

import pytest

from coursetools.grading.classroom import class_page
from coursetools.rendering import CONTENT_SECURITY_POLICY


def _result(student, assignment, marks, manual=None, problems=()):
    """A grading result: ``marks`` maps a test's grade_id to (points, max, message)."""
    cells = [
        {
            "grade_id": gid,
            "kind": "auto",
            "points": pts,
            "max_points": top,
            "message": msg,
            "status": "passed" if pts == top else ("partial" if pts else "failed"),
        }
        for gid, (pts, top, msg) in marks.items()
    ]
    if manual is not None:
        cells.append({"grade_id": manual, "kind": "manual", "points": None, "max_points": 2.0,
                      "message": "", "status": "graded by hand"})
    return {
        "student": student,
        "assignment": assignment,
        "score": float(sum(p for p, _, _ in marks.values())),
        "max_score": float(sum(t for _, t, _ in marks.values())),
        "cells": cells,
        "problems": list(problems),
        "notes": [],
    }


WRONG_SCALE = "the noise scale is not sensitivity / epsilon"
NAN = "epsilon = nan must raise ValueError"

RESULTS = [
    _result("ada", "02_laplace", {"laplace_tests": (4, 4, ""), "salary_tests": (3, 3, "")}, "essay"),
    _result("bob", "02_laplace", {"laplace_tests": (0, 4, WRONG_SCALE), "salary_tests": (3, 3, "")}, "essay"),
    _result("cy", "02_laplace", {"laplace_tests": (0, 4, WRONG_SCALE), "salary_tests": (1, 3, NAN)}, "essay"),
    _result("dee", "02_laplace", {"laplace_tests": (0, 4, NAN), "salary_tests": (0, 3, NAN)}, "essay",
            problems=["the notebook could not be read"]),
    _result("ada", "03_exp", {"em_tests": (2, 2, "")}),
]
ROSTER = ["ada", "bob", "cy", "dee", "eve"]


def test_the_counts_are_those_of_the_results():
    summaries = class_page.summarize(RESULTS, roster=ROSTER, attempts={("bob", "02_laplace"): 3})
    by_name = {s.assignment: s for s in summaries}
    laplace = by_name["02_laplace"]
    assert laplace.max_score == 7
    assert sorted(laplace.scores) == [0, 1, 3, 7]
    assert laplace.handed_in == ["ada", "bob", "cy", "dee"]
    assert laplace.missing == ["eve"]
    assert laplace.problems == 1
    # written answers waiting: without a gradebook, every submission with a manual cell waits
    assert laplace.written_waiting == 4
    assert laplace.attempts == {"ada": 1, "bob": 3, "cy": 1, "dee": 1}
    ex = {e.grade_id: e for e in laplace.exercises}
    assert ex["laplace_tests"].full_marks == 1 and ex["laplace_tests"].handed_in == 4
    assert ex["laplace_tests"].share == pytest.approx(0.25)
    assert ex["laplace_tests"].failing == [(WRONG_SCALE, 2), (NAN, 1)]
    assert ex["salary_tests"].full_marks == 2
    assert ex["salary_tests"].failing == [(NAN, 2)]
    exp = by_name["03_exp"]
    assert exp.missing == ["bob", "cy", "dee", "eve"] and exp.written_waiting == 0


def test_a_gradebook_count_of_written_answers_wins_over_the_estimate():
    summaries = class_page.summarize(RESULTS, roster=ROSTER, written_waiting={"02_laplace": 1})
    assert {s.assignment: s.written_waiting for s in summaries} == {"02_laplace": 1, "03_exp": 0}


def test_without_a_roster_nobody_is_said_missing_from_an_assignment_they_never_saw():
    summaries = class_page.summarize(RESULTS)
    by_name = {s.assignment: s for s in summaries}
    # the roster defaults to everyone who handed in anything
    assert by_name["03_exp"].missing == ["bob", "cy", "dee"]
    assert by_name["02_laplace"].missing == []


def test_the_page_says_the_numbers_and_runs_nothing():
    hostile = _result("<img src=x onerror=alert(1)>", "02_laplace",
                      {"laplace_tests": (0, 4, "got '<script>alert(2)</script>'"),
                       "salary_tests": (0, 3, "")})
    page = class_page.render_class_page(
        class_page.summarize(RESULTS + [hostile], roster=ROSTER),
        title="DP course",
    )
    assert f'content="{CONTENT_SECURITY_POLICY}"' in page
    assert "<script" not in page.lower() and "<img src=x" not in page
    assert html.escape("<img src=x onerror=alert(1)>") in page
    assert html.escape("got '<script>alert(2)</script>'") in page
    text = re.sub(r"<[^>]+>", " ", page)
    assert "5 of 6 handed in" in text  # the roster plus the hostile name: eve is missing
    assert "eve" in text
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(images) == 2 and all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)


def test_shares_and_messages_are_printed_per_exercise():
    summaries = class_page.summarize(RESULTS, roster=ROSTER, attempts={("bob", "02_laplace"): 3})
    page = class_page.render_class_page(summaries, title="x")
    text = " ".join(re.sub(r"<[^>]+>", " ", html.unescape(page)).split())
    assert "laplace_tests 1 of 4 (25%)" in text
    assert "salary_tests 2 of 4 (50%)" in text
    assert f"{WRONG_SCALE} (2)" in text and f"{NAN} (2)" in text
    assert "not handed in: eve" in text
    assert "written answers waiting in the formgrader: 4" in text
    assert "attempts used: bob 3" in text


def test_messages_are_cut_to_their_first_line_and_a_bounded_length():
    long = "x" * 5000 + "\nsecond line"
    results = [_result(s, "a", {"t": (0, 1, long)}) for s in ("p", "q")]
    (summary,) = class_page.summarize(results)
    ((message, count),) = summary.exercises[0].failing
    assert count == 2 and "\n" not in message and len(message) <= class_page.MESSAGE_CHARS + 1


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="result"):
        class_page.summarize([{"student": "a"}])
    with pytest.raises(TypeError, match="roster"):
        class_page.summarize(RESULTS, roster="ada")


def test_attempts_are_counted_from_the_exchange_inbound(tmp_path):
    inbound = tmp_path / "course" / "inbound"
    for name in ("bob+02_laplace+2026-11-20 10:00:00.000000 UTC+abc",
                 "bob+02_laplace+2026-11-20 11:00:00.000000 UTC+def",
                 "ada+02_laplace+2026-11-20 10:00:00.000000 UTC",
                 "not-a-submission"):
        (inbound / name).mkdir(parents=True)
    (inbound / "eve+02_laplace+2026-11-20 10:00:00 UTC").write_text("a file, not a submission")
    assert class_page.count_attempts(inbound) == {("bob", "02_laplace"): 2, ("ada", "02_laplace"): 1}
    assert class_page.count_attempts(tmp_path / "nowhere") == {}


def test_write_class_page_writes_beside_the_feedback(tmp_path):
    path = class_page.write_class_page(RESULTS, tmp_path, roster=ROSTER, title="course")
    assert path == tmp_path / "class.html"
    assert "02_laplace" in path.read_text(encoding="utf-8")


def test_the_lms_section_counts_and_lists_what_did_not_arrive_escaped():
    """Scores sent to the LMS (coursetools/lms/outbox.py): counts by state, and each score waiting
    or refused with the LMS's first line; a student's name and the LMS's words are text."""
    lms = [
        class_page.LmsGrade("ada", "02_laplace", 7.0, 8.0, "posted"),
        class_page.LmsGrade("bob", "02_laplace", 3.0, 8.0, "pending", "HTTP 503"),
        class_page.LmsGrade("<img src=x onerror=alert(1)>", "02_laplace", 0.0, 8.0, "refused",
                            "userId '<b>x</b>' is not a member\nsecond line"),
    ]  # fmt: skip
    page = class_page.render_class_page(class_page.summarize(RESULTS), title="DP course", lms=lms)
    section = page.split("id='lms'", 1)[1]
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section))
    assert "1 posted, 1 waiting for the LMS to answer, 1 refused by the LMS" in text
    assert "HTTP 503" in text and "second line" not in text
    assert "<img src=x" not in page and "<b>x</b>" not in page
    assert html.escape("userId '<b>x</b>' is not a member") in section
    assert "ada" not in text  # a posted score is counted, not listed
    without = class_page.render_class_page(class_page.summarize(RESULTS), title="DP course")
    assert "id='lms'" not in without  # a course without an LMS has no such section
