"""A feedback page as a student's browser shows it: maths and markdown rendered, nothing raw.

The page is rendered for a result carrying every cell of notebook 05 (the one with the most
maths), opened from disk in Chromium under its own Content-Security-Policy, and its visible text
is searched for what an unrendered page shows: `$...$`, `**bold**`, `\\frac`.
"""

from __future__ import annotations

import re

import nbformat
from conftest import ROOT

from coursetools.grading.classroom.feedback import render_html

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


def test_the_students_figure_and_text_show_under_the_pages_policy(page, tmp_path):
    """``grade --with-outputs``: a figure (a data: PNG) loads under the page's CSP; text is text."""
    import base64
    import io

    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(3, 2))
    axes.plot([0, 1], [0, 1])
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    outputs = [
        {"kind": "text", "text": "<b>not bold</b> $x$\n"},
        {"kind": "image", "mime": "image/png", "data": base64.b64encode(buffer.getvalue()).decode()},
    ]
    result = _result() | {"feedback": [{"type": "code", "source": "plot()", "grade_id": None,
                                        "kind": "code", "outputs": outputs}]}
    path = tmp_path / "feedback.html"
    path.write_text(render_html(result), encoding="utf-8")
    blocked = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(path.as_uri())
    width = page.evaluate("() => document.querySelector('img.out').naturalWidth")
    assert width == 300  # 3 inches at matplotlib's 100 dpi: the bytes were decoded and drawn
    assert page.locator("pre.out").inner_text().strip() == "<b>not bold</b> $x$"
    assert page.locator("pre.out b").count() == 0 and not blocked
