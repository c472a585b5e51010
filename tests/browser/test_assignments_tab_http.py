"""A class through the HTTP exchange in Chromium: the formgrader's buttons and the Assignments tab.

The hub of ``deploy/jupyterhub_config.py`` with ``COURSE_EXCHANGE=http`` (every server runs as
this test's one OS user with a home of its own and no shared exchange folder, as pods on
Kubernetes). The instructor presses the formgrader's *Release* and *Collect* buttons; a student,
in JupyterLab's *Assignments* tab, presses *Fetch*, answers, presses *Submit*; the course's grader
grades what was collected; the instructor presses *Release feedback*; the student presses *Fetch
Feedback* and opens the page from the file browser. The other student, who handed in nothing, sees no feedback. Every
step is what a person does with a mouse; the files are checked where they land.
"""

from __future__ import annotations

import json

import nbformat
import pytest
from hub_harness import COURSE_ID, grade_collected, http_exchange_hub
from pilot_course import fill_answers


@pytest.fixture(scope="module")
def http_hub(tmp_path_factory):
    with http_exchange_hub(tmp_path_factory.mktemp("assignments-tab")) as running:
        yield running


def _signed_in(browser, hub, user: str):
    """A browser context signed in to the hub as ``user`` (the demo authenticator's form)."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    page.goto(f"{hub.url}/hub/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", "")
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url("**/user/**", timeout=120_000)
    return context, page


def _formgrader_button(page, hub, column: str, success: str) -> None:
    """Press the pilot row's button in ``column`` of *Manage Assignments*; wait for ``success``."""
    page.goto(f"{hub.url}/user/instructor/formgrader/manage_assignments")
    row = page.locator("tr", has=page.locator("td", has_text="pilot")).first
    row.locator(f"td.{column} a").click(timeout=60_000)
    modal = page.locator("#success-modal, #error-modal")
    modal.wait_for(timeout=180_000)
    text = modal.inner_text()
    assert success in text, text[:2000]
    modal.get_by_role("button", name="Close").first.click()


def _assignments_tab(page, hub, user: str) -> None:
    page.goto(f"{hub.url}/user/{user}/lab")
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click(timeout=120_000)
    page.locator("#jp-mainmenu-nbgrader li[data-command='nbgrader:open-assignment-list']").click()
    page.locator("#released_assignments_list").wait_for(timeout=60_000)


def _rows(page, name: str):
    page.locator(f"#{name}_assignments_list_loading").wait_for(state="hidden", timeout=120_000)
    return page.locator(f"#{name}_assignments_list > .list_item")


def test_release_fetch_submit_collect_and_feedback_with_the_mouse(browser, http_hub):
    hub, course = http_hub, http_hub.course
    instructor, formgrader = _signed_in(browser, hub, "instructor")
    ada, lab = _signed_in(browser, hub, "student1")
    try:
        # the instructor releases with the formgrader's button
        _formgrader_button(formgrader, hub, "release", "Successfully released")

        # the student sees it in the Assignments tab and fetches it
        _assignments_tab(lab, hub, "student1")
        released = _rows(lab, "released")
        released.first.locator(".item_name", has_text="pilot").wait_for(timeout=60_000)
        assert released.first.locator(".item_course").inner_text() == COURSE_ID
        released.first.locator(".item_status button", has_text="Fetch").click()
        fetched = _rows(lab, "fetched")
        fetched.first.locator(".item_name").first.filter(has_text="pilot").wait_for(timeout=60_000)
        home = course.parent / "hub-state" / "homes" / "student1"
        notebook = home / "pilot" / "pilot.ipynb"
        assert "raise NotImplementedError" in notebook.read_text()  # the release, blank

        # answers (typing in a cell is tests/browser/test_student.py's), then Submit
        nbformat.write(fill_answers(nbformat.read(notebook, as_version=4)), str(notebook))
        fetched.first.locator(".item_status button", has_text="Submit").click()
        submitted = lab.locator(f"#nbgrader-{COURSE_ID}-pilot-submissions > .list_item")
        submitted.nth(1).wait_for(timeout=120_000)  # the first row is the header
        assert not (course.parent / "exchange").exists()  # no shared folder appeared

        # the instructor collects with the button; the course's grader grades
        _formgrader_button(formgrader, hub, "collect", "Successfully collected")
        assert grade_collected(course) == ["student1"]  # the course's grader
        _formgrader_button(formgrader, hub, "release-feedback", "Successfully released feedback")

        # the student fetches the feedback with the tab's button and opens the page
        _assignments_tab(lab, hub, "student1")
        lab.locator(".item_status button", has_text="Fetch Feedback").first.click(timeout=60_000)
        link = lab.get_by_text("(view feedback)").first
        link.wait_for(timeout=120_000)
        (page,) = (home / "pilot" / "feedback").glob("*/pilot.html")
        text = page.read_text()
        assert "Autograded score: 7 / 7" in text and "feedback for student1" in text, text[:500]
        link.click()  # the file browser goes to the feedback folder; the page opens from there
        lab.locator(".jp-DirListing-item", has_text="pilot.html").dblclick(timeout=60_000)
        shown = lab.frame_locator(".jp-HTMLViewer iframe").locator("body")
        shown.get_by_text("Autograded score: 7 / 7").wait_for(timeout=60_000)
    finally:
        instructor.close()
        ada.close()

    # the classmate who handed in nothing is offered no feedback, and has none
    grace, tab = _signed_in(browser, hub, "student2")
    try:
        _assignments_tab(tab, hub, "student2")
        _rows(tab, "released").first.locator(".item_name", has_text="pilot").wait_for(
            timeout=60_000
        )
        assert tab.locator(".item_status button", has_text="Fetch Feedback").count() == 0
        assert not (course.parent / "hub-state" / "homes" / "student2" / "pilot").exists()
        listed = hub.as_user("student2", "GET", f"/assignments?course_id={COURSE_ID}")
        assert [a["status"] for a in listed["value"]] == ["released"], json.dumps(listed)[:2000]
    finally:
        grace.close()
