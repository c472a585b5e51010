"""Every page the course renders meets WCAG 2.1 A and AA by axe-core, light and dark, desktop and
phone, and the keyboard reaches what scrolls.

Pages: every page of the book (chapters, search, API pages, guides), a feedback page with the
maths-heaviest notebook's prose, one with a student's outputs and a figure (``--with-outputs``),
one with the sandbox footer and a failing hidden test, the hand-in service's refusal page, and the
class page. axe-core's own script comes from the ``axe-playwright-python`` wheel (tests/browser/axe.py).
Before this issue: 6-20 ``scrollable-region-focusable`` per chapter, 14-24 ``color-contrast``
per feedback page.
"""

from __future__ import annotations

import base64
import io

import nbformat
import pytest
from axe import axe_script, violations
from conftest import ROOT

from coursetools.book.build import DEFAULT_CACHE, build_book
from coursetools.grading.classroom.class_page import write_class_page
from coursetools.grading.classroom.feedback import render_html, render_notice

if axe_script() is None:
    pytest.skip("axe-core is not installed (pip install axe-playwright-python)", allow_module_level=True)

VIEWS = [
    pytest.param({"width": 1300, "height": 900}, "light", id="desktop-light"),
    pytest.param({"width": 1300, "height": 900}, "dark", id="desktop-dark"),
    pytest.param({"width": 390, "height": 844}, "light", id="phone-light"),
    pytest.param({"width": 390, "height": 844}, "dark", id="phone-dark"),
]


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    out = tmp_path_factory.mktemp("a11y-book") / "html"
    build_book(ROOT / "solutions", out, jobs=2, cache_dir=DEFAULT_CACHE, docs_root=ROOT)
    return out


def _png() -> str:
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [0, 1])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


@pytest.fixture(scope="module")
def graded_pages(tmp_path_factory):
    """The pages the grader and the hand-in service write, for results of every shape."""
    out = tmp_path_factory.mktemp("a11y-pages")
    nb = nbformat.read(ROOT / "solutions" / "05_gaussian_mechanism" / "05_gaussian_mechanism.ipynb", as_version=4)
    prose = [{"type": c.cell_type, "source": c.source, "grade_id": None, "kind": "text"}
             for c in nb.cells if c.cell_type == "markdown"]
    cells = [
        {"grade_id": "noise_tests", "kind": "auto", "points": 0.0, "max_points": 2.0, "status": "failed",
         "message": "a hidden test failed (line 12)", "hidden": True},
        {"grade_id": "scale_tests", "kind": "auto", "points": 2.0, "max_points": 2.0, "status": "passed",
         "message": ""},
        {"grade_id": "essay", "kind": "manual", "points": None, "max_points": 3.0, "status": "graded by hand",
         "message": ""},
    ]
    code = "import numpy as np\n" + "x = np.arange(10)  # " + "a long comment " * 20 + "\nprint(x)\n"
    feedback = [
        {"type": "markdown", "source": "## Exercise 1: the noise\n\nA table:\n\n| a | b |\n|---|---|\n| 1 | 2 |",
         "grade_id": None, "kind": "text"},
        {"type": "code", "source": code, "grade_id": "noise", "kind": "answer",
         "outputs": [{"kind": "text", "text": "[0 1 2 3 4 5 6 7 8 9]\n" * 3},
                     {"kind": "image", "mime": "image/png", "data": _png()},
                     {"kind": "note", "text": "some output of this cell was cut"}]},
        {"type": "code", "source": "assert noise(1) > 0", "grade_id": "noise_tests", "kind": "test",
         "status": "failed", "points": 0.0, "max_points": 2.0, "message": "a hidden test failed (line 12)"},
        {"type": "code", "source": "while True:\n    pass", "grade_id": None, "kind": "code", "status": "timeout",
         "message": "this cell did not finish within the time limit"},
    ]
    base = {"student": "ada", "assignment": "05_gaussian_mechanism", "score": 2.0, "max_score": 4.0,
            "manual_max": 3.0, "cells": cells, "problems": ["cell #3 timed out (endless loop?)"], "notes": ["a note"]}
    pages = {
        "prose": render_html({**base, "feedback": prose}),
        "outputs": render_html({**base, "feedback": feedback}, notice=["Graded when you handed it in: attempt 1 of 5."]),
        "weaker": render_html({**base, "feedback": feedback, "sandbox_mode": "setuid",
                               "sandbox_off": ["no user namespace: the kernel runs as a uid of the host"],
                               "sandbox_why": "asked for (--sandbox setuid)"}),
        "refusal": render_notice("ada", "05_gaussian_mechanism", [
            "This submission (handed in 2026-11-27 10:00 UTC) was not graded: the deadline had passed.",
            "Your last submission before the deadline is the one that counts."]),
    }
    paths = {}
    for name, text in pages.items():
        paths[name] = out / f"{name}.html"
        paths[name].write_text(text, encoding="utf-8")
    results = [{**base, "student": s, "score": float(i % 3), "cells": cells} for i, s in enumerate(
        ["ada", "bob", "cy", "dan", "eve", "a-very-long-student-name-that-makes-the-table-wide"])]
    paths["class"] = write_class_page(results, out / "class", title="Course")
    return paths


def _open(browser, viewport, scheme):
    context = browser.new_context(viewport=viewport, color_scheme=scheme, bypass_csp=True)
    return context, context.new_page()


@pytest.mark.parametrize("viewport, scheme", VIEWS)
def test_every_book_page_has_no_wcag_violation(browser, book, viewport, scheme):
    context, tab = _open(browser, viewport, scheme)
    found = {}
    try:
        for path in sorted(book.glob("*.html")):
            tab.goto(path.as_uri())
            lines = violations(tab)
            if lines:
                found[path.name] = lines[:5]
    finally:
        context.close()
    assert not found, found
    assert len(list(book.glob("*.html"))) >= 20  # chapters, guides, search, API pages


@pytest.mark.parametrize("viewport, scheme", VIEWS)
def test_every_grading_page_has_no_wcag_violation(browser, graded_pages, viewport, scheme):
    context, tab = _open(browser, viewport, scheme)
    found = {}
    try:
        for name, path in graded_pages.items():
            tab.goto(path.as_uri())
            lines = violations(tab)
            if lines:
                found[name] = lines[:5]
    finally:
        context.close()
    assert not found, found


def test_the_keyboard_reaches_the_skip_link_first_and_every_scrolling_box(browser, book, graded_pages):
    """Tab from the top of a chapter on a phone: the skip link comes first and is visible; Menu
    opens the sidebar with the keyboard in it, Escape closes it; every box that scrolls (code,
    tables, formulas) is a tab stop; on a feedback page each code block is one, and the focus ring
    is drawn."""
    context, tab = _open(browser, {"width": 390, "height": 844}, "light")
    try:
        tab.goto((book / "05_gaussian_mechanism.html").as_uri())
        tab.keyboard.press("Tab")
        first = tab.evaluate("() => [document.activeElement.className, document.activeElement.getBoundingClientRect().left]")
        assert first[0] == "skip" and first[1] >= 0  # on screen while focused
        for _ in range(3):  # the book's title, Search, then Menu
            tab.keyboard.press("Tab")
        assert tab.evaluate("() => document.activeElement.className") == "menu"
        tab.keyboard.press("Enter")  # the menu opens and the keyboard is in it
        assert tab.evaluate("() => !!document.activeElement.closest('#book-nav')")
        tab.keyboard.press("Escape")  # and back on the button, the menu closed
        assert tab.evaluate("() => document.activeElement.className") == "menu"
        assert tab.evaluate("() => !document.getElementById('book-nav').classList.contains('open')")
        boxes = tab.evaluate(
            "() => [...document.querySelectorAll('pre, .scroll, .math-block, .math-inline')]"
            ".filter(e => e.scrollWidth > e.clientWidth).map(e => e.tabIndex)"
        )
        assert boxes and all(t == 0 for t in boxes), boxes
        tab.goto(graded_pages["outputs"].as_uri())
        tab.keyboard.press("Tab")
        ring = tab.evaluate(
            "() => { const e = document.activeElement; const s = getComputedStyle(e);"
            " return [e.tagName, s.outlineStyle, parseFloat(s.outlineWidth)]; }"
        )
        assert ring[1] != "none" and ring[2] >= 2, ring
    finally:
        context.close()
