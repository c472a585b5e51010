"""A feedback page as a student's browser shows it: maths and markdown rendered, nothing raw.

The page is rendered for a result carrying every cell of notebook 05 (the one with the most
maths), opened from disk in Chromium under its own Content-Security-Policy, and its visible text
is searched for what an unrendered page shows: `$...$`, `**bold**`, `\\frac`.
"""

from __future__ import annotations

import re

import nbformat
from conftest import ROOT

from coursetools.feedback import render_html

NOTEBOOK = ROOT / "solutions" / "05_gaussian_mechanism" / "05_gaussian_mechanism.ipynb"


def _result() -> dict:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cells = [{"type": c.cell_type, "source": c.source, "grade_id": None, "kind": "text"}
             for c in nb.cells if c.cell_type == "markdown"]
    return {"student": "ada", "assignment": "05_gaussian_mechanism", "score": 0.0,
            "max_score": 18.0, "manual_max": 4.0, "cells": [], "problems": [], "notes": [],
            "feedback": cells}


def test_the_feedback_page_shows_rendered_maths_and_no_raw_markup(page, tmp_path):
    path = tmp_path / "feedback.html"
    path.write_text(render_html(_result()), encoding="utf-8")
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.as_uri())
    text = page.locator("body").inner_text()
    assert len(text) > 5000  # the notebook's prose is there
    for raw in (r"\$[^$\n]{1,80}\$", r"\*\*[^*\n]+\*\*", r"\\frac", r"\\varepsilon"):
        found = re.findall(raw, text)
        assert not found, f"raw markup {raw!r} left on the page: {found[:3]}"
    sizes = page.evaluate(
        "() => [...document.querySelectorAll('math')].map(m => m.getBoundingClientRect().height)"
    )
    assert len(sizes) > 100 and min(sizes) > 0, (len(sizes), min(sizes, default=None))
    assert not errors
