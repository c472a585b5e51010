"""A student's whole path from the LMS, in Chromium: launch, the assignment open, hand in, the score.

The hub of ``deploy/jupyterhub_config.py`` with ``COURSE_AUTH=lti13`` (the hand-in service on,
posting to the LMS), nbgrader's shared exchange folder with the pilot released, and the test LMS
of ``tests/support/lti_platform.py``. The student opens the platform's launch page; the browser
goes through the hub's LTI login (the platform's /auth, the hub's callback) to the student's
server, whose ``/course/open/pilot`` (coursetools/lms/open_assignment.py) fetches the pilot and
opens its notebook in JupyterLab. The student answers, presses *Submit* in the *Assignments*
tab, then *Fetch Feedback* when the hand-in service has graded it, and the score is at the
platform, for the student's LMS user.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import hub_harness
import nbformat
import pytest
from hub_harness import running_hub
from joserfc.jwk import RSAKey
from lti_platform import LEARNER, Platform
from pilot_course import fill_answers, pilot_course

BIN = Path(sys.executable).parent
COURSE_ID = "dp-course"
CONTEXT = "course-1"
CLIENT, DEPLOYMENT = "course-tool", "deployment-1"
STUDENT = "Stu-Lab-1"  # the LMS's sub; the hub name is it lower-cased


@contextlib.contextmanager
def _lms_and_hub(root: Path):
    """The test LMS and the LTI hub registered with it (the folder exchange, the pilot released)."""
    course = pilot_course(root / "course")
    lms = Platform(
        client_id=CLIENT,
        deployment_id=DEPLOYMENT,
        tool_login_url="http://127.0.0.1:9/not-yet",  # the hub's, once it runs
        tool_redirect_uris=[],
        signing_key=RSAKey.generate_key(2048, private=True),
    ).start()
    try:
        lms.add_context(CONTEXT, label="DP101", title="Differential privacy")
        lms.add_user(STUDENT, roles=[LEARNER], name="Ada Lovelace", contexts=[CONTEXT])
        lms.add_link(
            "link-pilot", context=CONTEXT, title="Pilot", target_link_uri="http://127.0.0.1:9/hub",
            custom={"assignment": "pilot"},
        )  # fmt: skip
        settings = root / "lti.toml"
        settings.write_text(
            "[platform]\n"
            f"issuer = {json.dumps(lms.issuer)}\nclient_id = {json.dumps(CLIENT)}\n"
            f"deployment_ids = [{json.dumps(DEPLOYMENT)}]\n"
            f"authorize_url = {json.dumps(lms.auth_url)}\ntoken_url = {json.dumps(lms.token_url)}\n"
            f"jwks_url = {json.dumps(lms.jwks_url)}\n"
            f'[course]\ncontexts = {{ {json.dumps(CONTEXT)} = "{COURSE_ID}" }}\n'
        )  # fmt: skip
        rules = root / "handin.toml"
        rules.write_text(
            '[default]\nattempts = 3\ncooldown_minutes = 0\nhidden_messages = "never"\n'
        )
        # hub_harness makes tokens for the demo's three users; an LTI hub has none before a launch
        with mock.patch.object(hub_harness, "USERS", ()):
            with running_hub(
                course,
                servers=False,
                COURSE_AUTH="lti13",
                LTI_SETTINGS=str(settings),
                COURSE_LTI_ALLOW_HTTP="1",
                COURSE_HANDIN_SETTINGS=str(rules),
                INSTRUCTORS="",
                STUDENTS="",
            ) as hub:
                lms.tool_login_url = hub.url + "/hub/lti13/oauth_login"
                lms.tool_redirect_uris = [hub.url + "/hub/lti13/oauth_callback"]
                lms.tool_jwks_url = hub.url + "/hub/lti13/jwks"
                _release(course, root / "exchange")
                yield lms, hub, course
    finally:
        lms.stop()


def _release(course: Path, exchange: Path) -> None:
    """nbgrader's own release into the shared exchange, as the formgrader's Release does."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "NBGRADER_EXCHANGE": str(exchange)}  # fmt: skip
    done = subprocess.run(
        [str(BIN / "nbgrader"), "release_assignment", "pilot", "--force"],
        cwd=course, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (exchange / COURSE_ID / "outbound" / "pilot" / "pilot.ipynb").is_file()


@pytest.fixture(scope="module")
def lti(tmp_path_factory, browser):
    with _lms_and_hub(tmp_path_factory.mktemp("lti-browser")) as running:
        yield running


def _assignments_tab(lab) -> None:
    lab.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click(timeout=120_000)
    lab.locator("#jp-mainmenu-nbgrader li[data-command='nbgrader:open-assignment-list']").click()
    lab.locator("#released_assignments_list").wait_for(timeout=60_000)


def _rows(lab, name: str):
    lab.locator(f"#{name}_assignments_list_loading").wait_for(state="hidden", timeout=120_000)
    return lab.locator(f"#{name}_assignments_list > .list_item")


def test_from_the_lms_to_the_notebook_to_the_score(page, lti):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # conftest skips without it

    lms, hub, course = lti
    name = STUDENT.lower()
    seen: list[str] = []
    page.on(
        "request",
        lambda request: seen.append(request.url) if request.is_navigation_request() else None,
    )  # every page the browser asked for, redirects included

    # the LMS's launch: through the hub's LTI login to the student's server, the pilot open
    page.goto(lms.launch_url(STUDENT, "link-pilot"))
    page.wait_for_url(f"**/user/{name}/lab/tree/pilot/pilot.ipynb", timeout=240_000)
    path = [url.split("?")[0] for url in seen]
    for step in (
        lms.url + "/launch", hub.url + "/hub/lti13/oauth_login", lms.url + "/auth",
        hub.url + "/hub/lti13/oauth_callback", hub.url + "/hub/user-redirect/course/open/pilot",
        hub.url + f"/user/{name}/course/open/pilot",
        hub.url + f"/user/{name}/lab/tree/pilot/pilot.ipynb",
    ):  # fmt: skip
        assert step in path, (step, path)
    assert hub.url + "/hub/spawn-pending/" + name in path or hub.url + "/hub/spawn/" + name in path
    # JupyterLab shows the notebook, in the current tab
    current = page.locator(".jp-mod-current.lm-TabBar-tab, .lm-TabBar-tab.lm-mod-current")
    current.filter(has_text="pilot.ipynb").first.wait_for(timeout=120_000)
    page.locator(".jp-Notebook").get_by_role(
        "heading", name="Pilot: a tiny graded assignment"
    ).first.wait_for(timeout=120_000)
    home = course.parent / "hub-state" / "homes" / name
    notebook = home / "pilot" / "pilot.ipynb"
    assert "raise NotImplementedError" in notebook.read_text()  # fetched: the release, blank

    # answers (typing in a cell is tests/browser/test_student.py's): written on disk, and the
    # open notebook reloaded from it and saved, so JupyterLab keeps them
    nbformat.write(fill_answers(nbformat.read(notebook, as_version=4)), str(notebook))
    page.locator(".lm-MenuBar-itemLabel", has_text="File").click()
    page.locator(".lm-Menu-itemLabel", has_text="Reload Notebook from Disk").click()
    with contextlib.suppress(PlaywrightTimeout):  # asked only when JupyterLab had changes
        page.locator(".jp-Dialog button", has_text="Reload").click(timeout=3_000)
    answer = page.locator(".jp-Notebook").get_by_text("A fixed offset is public knowledge")
    answer.first.wait_for(state="attached", timeout=60_000)
    page.locator(".jp-Notebook").first.click()
    page.keyboard.press("Control+s")
    page.locator(".lm-TabBar-tab.jp-mod-dirty").wait_for(state="detached", timeout=60_000)
    assert page.locator(".jp-Dialog").count() == 0  # no "File Changed": one version of it
    assert "A fixed offset is public knowledge" in notebook.read_text()

    # Submit in the Assignments tab
    _assignments_tab(page)
    fetched = _rows(page, "fetched")
    fetched.first.locator(".item_name").first.filter(has_text="pilot").wait_for(timeout=60_000)
    submitted_at = time.monotonic()
    fetched.first.locator(".item_status button", has_text="Submit").click()
    page.locator(f"#nbgrader-{COURSE_ID}-pilot-submissions > .list_item").nth(1).wait_for(
        timeout=120_000
    )  # the first row is the header

    # the hand-in service grades it: Fetch Feedback until there is a page, which says the score
    deadline = time.monotonic() + 240
    link = page.get_by_text("(view feedback)")
    while link.count() == 0:
        assert time.monotonic() < deadline, "no feedback after 240 s"
        page.locator(".item_status button", has_text="Fetch Feedback").first.click(timeout=60_000)
        _rows(page, "submitted")
        with contextlib.suppress(PlaywrightTimeout):
            link.first.wait_for(timeout=3_000)
    (feedback,) = (home / "pilot" / "feedback").glob("*/pilot.html")
    text = feedback.read_text()
    assert "Autograded score: 7 / 7" in text and "plus up to 1 point(s) graded by hand" in text

    # the score at the platform, for the LMS's user
    while not lms.scores(CONTEXT, accepted_only=True):
        assert time.monotonic() < deadline, f"no score at the platform: {lms.scores(CONTEXT)}"
        time.sleep(0.5)
    print(f"\nsubmit -> score at the platform: {time.monotonic() - submitted_at:.1f} s")
    ((score,),) = [[s["score"] for s in lms.scores(CONTEXT, accepted_only=True)]]
    assert score["userId"] == STUDENT  # the sub, not the hub name
    assert (score["scoreGiven"], score["scoreMaximum"]) == (7, 8)
    assert (score["activityProgress"], score["gradingProgress"]) == ("Submitted", "FullyGraded")
    assert score["comment"] == "Autograded points; the written answers are graded later."
    (item,) = lms.lineitems(CONTEXT)
    assert (item["label"], item["resourceId"]) == ("Pilot", "pilot")
