"""A book chapter as a reader's browser shows it, opened from disk, offline.

The tiny course of ``tests/coursetools/book/test_build.py`` (a chapter with display and inline maths, a matplotlib
figure, an exercise and a written answer) is built and executed, and its chapter page is opened in
Chromium under the page's own Content-Security-Policy: the maths must be laid out as MathML (no
raw ``$`` or ``\\(`` left), the style sheet and the figure must load from the site, and each
solution must stay folded until its summary is clicked. (Named ``test_book_page.py``, not
``test_book.py``: two test modules with one basename in a rootdir without packages cannot be
collected in one pytest session.)
"""

from __future__ import annotations

import re

import pytest
from book_course import make_course

from coursetools.book.build import build_book


@pytest.fixture(scope="module")
def chapter(tmp_path_factory):
    root = tmp_path_factory.mktemp("book")
    source = make_course(root)
    report = build_book(source, root / "html", jobs=1, cache_dir=root / "cache", docs_root=root)
    assert not report.errors, report.errors
    return root / "html" / "01_figures.html"


@pytest.fixture
def opened(page, chapter):
    problems = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    page.goto(chapter.as_uri())
    page.wait_for_load_state("load")
    return page, problems


def test_the_chapters_maths_is_laid_out_and_nothing_raw_is_left(opened):
    page, problems = opened
    text = page.locator("main").inner_text()
    for raw in (r"\$[^$\n]{1,80}\$", r"\\\(", r"\\varepsilon", r"\\Pr", r"\\in\b"):
        found = re.findall(raw, text)
        assert not found, f"raw maths {raw!r} left on the page: {found[:3]}"
    boxes = page.evaluate(
        "() => [...document.querySelectorAll('main math')].map(m => {"
        " const r = m.getBoundingClientRect();"
        " return [r.width, r.height, m.getAttribute('display')]; })"
    )
    assert len(boxes) >= 3
    assert all(w > 0 and h > 0 for w, h, _ in boxes), boxes
    block = [(w, h) for w, h, d in boxes if d == "block"]
    assert block and block[0][0] > 150, "the display formula is laid out on its own line"
    assert not problems, problems  # a CSP refusal is a console error


def test_the_style_sheet_and_the_figure_load_from_the_site(opened):
    page, problems = opened
    assert page.evaluate("getComputedStyle(document.querySelector('.sidebar')).position") == "fixed"
    images = page.evaluate(
        "() => [...document.querySelectorAll('main img')].map(i => [i.getAttribute('src'),"
        " i.complete, i.naturalWidth])"
    )
    assert len(images) == 2, images
    assert all(complete and width > 0 for _, complete, width in images), images
    figure = page.locator(".output img").first
    assert figure.bounding_box()["height"] > 50
    assert not problems, problems


def test_a_solution_is_closed_until_its_summary_is_clicked(opened):
    page, _ = opened
    fold = page.locator("details.solution").first
    solution = fold.locator(".highlight")
    assert fold.get_attribute("open") is None
    assert not solution.is_visible(), "the solution shows before the reader asks for it"
    assert page.get_by_text("def double(x):").first.is_visible(), "the starter is shown"
    fold.locator("summary").click()
    assert fold.get_attribute("open") is not None
    assert solution.is_visible() and "return 2 * x" in solution.inner_text()
