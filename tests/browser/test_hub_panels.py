"""JupyterLab under the hub in Chromium: the instructor's formgrader panel renders, students see no
instructor menu items.

JupyterHub 5's single-user servers send ``frame-ancestors 'none'``, so JupyterLab could not frame
the formgrader (a blank panel, "refused to connect"); the instructor's server loads
``coursetools.grading.classroom.formgrader_guard`` (``deploy/jupyter``), whose policy allows framing by the same
origin only. Students' servers disable nbgrader's formgrader, create-assignment and course-list
plugins (``deploy/student/labconfig/page_config.json``), so the Nbgrader menu offers them only
what works for them.
"""

from __future__ import annotations

from hub_harness import course, hub  # noqa: F401 - the hub of tests/deploy/test_hub.py, on this module's course


def _log_in(page, hub, user: str) -> None:  # noqa: F811 - the fixture's name
    page.goto(f"{hub.url}/hub/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", "")
    page.click("input[type=submit], button[type=submit]")
    page.goto(f"{hub.url}/user/{user}/lab")
    page.locator("#jp-mainmenu-nbgrader, .lm-MenuBar-itemLabel").first.wait_for(timeout=120_000)


def _nbgrader_menu(page) -> list[str]:
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    items = page.locator("#jp-mainmenu-nbgrader .lm-Menu-itemLabel")
    items.first.wait_for(timeout=30_000)
    labels = [items.nth(i).inner_text() for i in range(items.count())]
    page.keyboard.press("Escape")
    return labels


def test_the_instructors_formgrader_panel_renders_inside_jupyterlab(page, hub):  # noqa: F811
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "frame-ancestors" in m.text else None)
    _log_in(page, hub, "instructor")
    assert "Formgrader" in _nbgrader_menu(page)
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    page.locator("#jp-mainmenu-nbgrader .lm-Menu-itemLabel", has_text="Formgrader").first.click()
    frame = page.frame_locator("#formgrader iframe")
    frame.get_by_text("Manage Assignments").first.wait_for(timeout=120_000)
    frame.get_by_text("pilot").first.wait_for(timeout=60_000)  # the course's assignment, listed
    assert not refused, refused


def test_students_see_no_instructor_menu_items(page, hub):  # noqa: F811
    _log_in(page, hub, "student1")
    labels = _nbgrader_menu(page)
    assert "Assignment List" in labels, labels
    hidden = {"formgrader", "formgrader (local)", "create assignment", "course list"}
    assert not hidden & {label.lower() for label in labels}, labels
