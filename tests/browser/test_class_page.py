"""The instructor's class page in Chromium: figures drawn, no script, nothing blocked.

The page is written for the example class's results as ``make course`` grades them (built here
from hand-made results, so the test needs no grading run), with a hostile student name and a
failing message quoting markup; opened from disk under its own Content-Security-Policy.
"""

from __future__ import annotations

from coursetools.grading.classroom import class_page


def _results():
    rows = []
    for student, pts in (("ada", 4), ("bob", 0), ("<img src=x onerror=alert(1)>", 2)):
        rows.append({
            "student": student, "assignment": "02_laplace", "score": float(pts), "max_score": 4.0,
            "cells": [{"grade_id": "laplace_tests", "kind": "auto", "points": float(pts),
                       "max_points": 4.0, "status": "passed" if pts == 4 else "failed",
                       "message": "" if pts == 4 else "got <b>1.0</b>, expected a scale of 2"}],
            "problems": [], "notes": [],
        })
    return rows


def test_the_class_page_draws_its_figures_and_runs_nothing(page, tmp_path):
    path = class_page.write_class_page(_results(), tmp_path, roster=["ada", "bob", "eve"], title="DP")
    console, errors, requests = [], [], []
    page.on("console", lambda m: console.append(m.text))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    page.goto(path.as_uri())
    widths = page.evaluate("() => [...document.images].map(i => i.naturalWidth)")
    assert widths == [440]  # 5.5 inches at 80 dpi: one histogram, decoded and drawn
    assert page.evaluate("() => document.scripts.length") == 0
    text = page.locator("body").inner_text()
    assert "<img src=x onerror=alert(1)>" in text  # the name, as text
    assert "got <b>1.0</b>, expected a scale of 2 (2)" in text
    assert "not handed in: eve" in text
    assert page.locator("td b").count() == 0
    assert not errors and not requests
    assert not [m for m in console if "Content Security Policy" in m]
