"""Real Moodle and the course's hub, end to end: from the activity link to the grade in Moodle.

Moodle (built from ``MOODLE_SRC`` by :mod:`moodle_site`) is the LTI 1.3 platform; the hub is the
one of ``deploy/jupyterhub_config.py`` (tests/support/hub_harness.py, one OS user) with
``COURSE_AUTH=lti13`` and the hand-in service, and an ``lti.toml`` written from what Moodle
answered when the tool was registered. In Chromium:

1. a teacher logs in to Moodle and opens the activity (custom ``assignment=pilot``): the new
   window lands in the hub as Moodle's ``sub``, in the instructors' group
   (``formgrade-dp-course``); the teacher releases the pilot (the formgrader's endpoint);
2. a student logs in to Moodle and opens the activity: the new window lands in the hub as
   Moodle's ``sub``, on the pilot (``/course/open/pilot``, or JupyterLab);
3. the student's id_token POST to ``/hub/lti13/oauth_callback``, recorded by the browser, is
   sent again, with and without the browser's cookies: refused;
4. the student hands in the pilot with every answer (through their server's nbgrader endpoints,
   as the Assignments tab does); the hand-in service grades it and posts the score; the test
   polls Moodle's gradebook until the score is there, scaled to the activity's maximum (7 of the
   pilot's 8 points, the written answer waiting: 87.5 of 100), and times hand-in to grade;
5. the teacher grades the written answer (the formgrader's endpoint) and sends the final grades
   (``python -m coursetools lms-post``, what ``make export LTI=...`` runs): 8 of 8, 100 in Moodle.

The exchange is nbgrader's shared folder (the default) and the HTTP exchange (``files``,
``http``). The tool's URLs are given to Moodle once the hub listens (``update_tool``: the hub
needs the client id and deployment id Moodle gives at registration before it starts).

What Moodle sent (the login initiation, the id_token's claims) and answered (the gradebook) and
the timings are printed (``-s``) and written to ``<workdir>/hub-report-<exchange>.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
from pathlib import Path

import hub_harness
import jwt
import nbformat
import pytest
import requests
from hub_harness import COURSE_ID, _free_port, running_hub
from pilot_course import ROOT, fill_answers, pilot_course
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from coursetools.lms.settings import load_settings
from coursetools.lms.store import LmsStore

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
STUDENT, STUDENT_PASSWORD = "hubstudent", "Student-pass-2!"
TEACHER, TEACHER_PASSWORD = "hubteacher", "Teacher-pass-2!"
GRADE_MAX = 100.0  # the activity's maximum in Moodle: the tool's 7 of 8 is 87.5 there
PILOT_SCORE, PILOT_MAX = 7.0, 8.0  # the pilot: 7 autograded points of 7, a written answer of 1
GRADE_WITHIN = 240.0  # seconds from hand-in to the grade in Moodle, at most
SERVER_WITHIN = 240.0  # seconds for a launch to reach the user's running server


def _show(title: str, value) -> None:
    print(f"\n--- {title}\n{json.dumps(value, indent=2, sort_keys=True, default=str)}")


def _write_lti_toml(path: Path, tool: dict) -> Path:
    """deploy/lti.toml as an admin writes it from Moodle's "View configuration details"."""
    path.write_text(
        f"""[platform]
issuer = "{tool["issuer"]}"
client_id = "{tool["client_id"]}"
deployment_ids = ["{tool["deployment_id"]}"]
authorize_url = "{tool["auth_url"]}"
token_url = "{tool["token_url"]}"
jwks_url = "{tool["keyset_url"]}"

[tool]
key_file = "lti-tool-key.pem"

[course]
contexts = {{ "*" = "{COURSE_ID}" }}
assignment_parameter = "assignment"

[grades]
post = "on-hand-in"
"""
    )
    return path


def _moodle_login(browser, site, username: str, password: str):
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    page.goto(site.login_url)
    page.fill("#username", username)
    page.fill("#password", password)
    page.click("#loginbtn")
    page.wait_for_load_state()
    assert "/login/" not in page.url, f"{username}'s Moodle login failed: {page.url}"
    return context, page


def _record_lti_requests(context) -> list:
    """Every request the browser sends to the hub's LTI endpoints (read after the launch)."""
    seen: list = []
    context.on("request", lambda r: seen.append(r) if "/hub/lti13/" in r.url else None)
    return seen


def _open_activity(context, page, activity: dict):
    """The activity's page in Moodle; the tool's new window (launch container "window")."""
    try:
        with context.expect_page(timeout=30_000) as opened:
            page.goto(activity["view_url"])
    except PlaywrightTimeout:  # a popup blocker: Moodle's own "open in new window" link
        with context.expect_page(timeout=30_000) as opened:
            page.click("a[target=_blank][href*='launch.php']")
    return opened.value


def _into_server(window, hub, name: str) -> list[str]:
    """Wait until ``window`` shows ``name``'s running server, pressing the hub's "Launch Server"
    if the launch landed on "Server not running". Returns the URLs passed through."""
    own = f"{hub.url}/user/{name}/"
    passed: list[str] = []
    deadline = time.monotonic() + SERVER_WITHIN
    while time.monotonic() < deadline:
        url = window.url
        if not passed or passed[-1] != url:
            passed.append(url)
        if url.startswith(own) and "/lab" in url:
            window.wait_for_load_state()
            return passed
        if url.startswith(own) and "/course/open/" in url:
            # the open page fetches, then redirects to the lab; or it says why it cannot
            with contextlib.suppress(PlaywrightTimeout):
                window.wait_for_url(f"{own}lab**", timeout=60_000)
                continue
            text = " ".join(window.locator("body").inner_text().split())
            raise AssertionError(f"{name}'s launch stopped at {url}, which says: {text[:800]}")
        start = window.locator("a#start")
        if "/hub/" in url and start.count() and start.first.is_visible():
            start.first.click()
        window.wait_for_timeout(500)
    raise AssertionError(f"{name}'s launch never reached their server; it went through {passed}")


def _wait_for_callback(window, seen: list, hub_url: str, timeout: float = 60.0) -> None:
    """Until Moodle's page has posted the id_token to the hub and the hub has answered."""
    deadline = time.monotonic() + timeout
    url = f"{hub_url}/hub/lti13/oauth_callback"
    while time.monotonic() < deadline:
        if any(r.method == "POST" and r.url == url and r.response() for r in seen):
            return
        window.wait_for_timeout(100)
    raise AssertionError(f"no id_token reached {url}; the window is at {window.url}")


def _launch_records(seen: list, hub_url: str) -> tuple[dict, dict, int]:
    """The login initiation Moodle's page posted, the id_token form it posted, and the
    callback's status."""
    login = next(r for r in seen if r.url.split("?")[0] == f"{hub_url}/hub/lti13/oauth_login")
    posts = [
        r for r in seen if r.method == "POST" and r.url == f"{hub_url}/hub/lti13/oauth_callback"
    ]
    assert len(posts) == 1, [(r.method, r.url) for r in seen]
    callback = posts[0]
    response = callback.response()
    login_form = {
        k: v[0]
        for k, v in urllib.parse.parse_qs(
            (login.post_data or "") + "&" + urllib.parse.urlsplit(login.url).query
        ).items()
    }
    form = {k: v[0] for k, v in urllib.parse.parse_qs(callback.post_data or "").items()}
    form["_cookie"] = callback.all_headers().get("cookie", "")
    return (
        {"method": login.method, **login_form},
        form,
        response.status if response else 0,
    )


def _verified_claims(id_token: str, tool: dict) -> dict:
    key = jwt.PyJWKClient(tool["keyset_url"]).get_signing_key_from_jwt(id_token)
    return jwt.decode(
        id_token,
        key.key,
        algorithms=["RS256"],
        audience=tool["client_id"],
        issuer=tool["issuer"],
        options={"verify_exp": False},  # Moodle's lives 60 s: the hub checked it in time
    )


def _groups(hub, name: str) -> list[str]:
    return hub.call("GET", f"/hub/api/users/{name}", hub.admin)["groups"]


def _contents(hub, user: str, path: str) -> dict | None:
    try:
        return hub.as_user(user, "GET", f"/api/contents/{path}?content=1")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


@pytest.fixture()
def lti_users_only(monkeypatch):
    """With COURSE_AUTH=lti13 the hub knows nobody until a launch (allowed_users is empty; the
    demo's student1 and student2 are never made): the harness issues a token to its admin only."""
    monkeypatch.setattr(hub_harness, "USERS", ("instructor",))


@pytest.mark.parametrize("exchange", ["files", "http"])
def test_moodle_to_the_hub_and_the_grade_back(
    moodle_site, chromium, tmp_path, lti_users_only, exchange
):
    site = moodle_site
    report: dict = {
        "moodle": site.source.release,
        "wwwroot": site.wwwroot,
        "exchange": exchange,
        "timings": {},
    }

    # --- Moodle: the tool (its URLs are the hub's, known once the hub listens), a course,
    # a teacher and a student, and the activity that opens the pilot
    placeholder = "http://127.0.0.1:9/hub"
    tool = site.register_tool(
        f"DP course hub {tmp_path.name}",
        base_url=placeholder + "/",
        login_url=placeholder + "/lti13/oauth_login",
        redirect_uris=[placeholder + "/lti13/oauth_callback"],
        jwks_url=placeholder + "/lti13/jwks",
        custom="",
    )
    mcourse = site.create_course("dp-hub-101", "Differential privacy (hub)")
    student = site.create_user(STUDENT, STUDENT_PASSWORD, "student", course=mcourse)
    teacher = site.create_user(TEACHER, TEACHER_PASSWORD, "editingteacher", course=mcourse)
    activity = site.add_activity(
        mcourse, tool, f"Pilot notebook {tmp_path.name}", custom="assignment=pilot",
        grade_max=GRADE_MAX,
    )  # fmt: skip
    _show("registered tool (Moodle's answer)", tool)
    _show("activity", activity)
    report.update(tool=tool, course=mcourse, activity=activity)

    # --- the hub, with the registration Moodle gave
    course = pilot_course(tmp_path / "course")
    lti_toml = _write_lti_toml(tmp_path / "lti.toml", tool)
    state = tmp_path / "hub-state"
    with running_hub(
        course,
        servers=False,
        COURSE_AUTH="lti13",
        LTI_SETTINGS=str(lti_toml),
        COURSE_LTI_ALLOW_HTTP="1",
        **(
            {
                "COURSE_EXCHANGE": "http",
                "EXCHANGE_PORT": str(_free_port()),
                "EXCHANGE_VOLUME": str(tmp_path / "volume"),
            }
            if exchange == "http"
            else {}
        ),
    ) as hub:
        site.update_tool(
            tool,
            base_url=f"{hub.url}/hub/",
            login_url=f"{hub.url}/hub/lti13/oauth_login",
            redirect_uris=[f"{hub.url}/hub/lti13/oauth_callback"],
            jwks_url=f"{hub.url}/hub/lti13/jwks",
        )
        settings = load_settings(lti_toml, allow_http=True, state=state)
        store = LmsStore(settings.database)
        try:
            _the_class(site, hub, tool, activity, student, teacher, chromium, store, report,
                       course=course, lti_toml=lti_toml, state=state)  # fmt: skip
        finally:
            store.close()
            (site.workdir / f"hub-report-{exchange}.json").write_text(
                json.dumps(report, indent=2, sort_keys=True, default=str)
            )


def _the_class(
    site, hub, tool, activity, student, teacher, chromium, store, report, *, course, lti_toml, state
) -> None:
    timings = report["timings"]
    # --- 1. the teacher opens the activity: an instructor of the course on the hub
    context, page = _moodle_login(chromium, site, TEACHER, TEACHER_PASSWORD)
    try:
        seen = _record_lti_requests(context)
        started = time.monotonic()
        window = _open_activity(context, page, activity)
        passed = _into_server(window, hub, str(teacher["id"]))
        timings["teacher_launch_to_lab"] = time.monotonic() - started
        _, teacher_form, status = _launch_records(seen, hub.url)
        teacher_claims = _verified_claims(teacher_form["id_token"], tool)
        tname = str(teacher_claims["sub"]).lower()
        _show("the teacher's launch: the window went through", passed)
        _show("the teacher's id_token roles", teacher_claims[LTI + "roles"])
        assert status == 302, f"the hub answered the teacher's launch with {status}"
        assert INSTRUCTOR in teacher_claims[LTI + "roles"]
        groups = _groups(hub, tname)
        assert groups == [f"formgrade-{COURSE_ID}"], groups
        report["teacher"] = {"hub_name": tname, "groups": groups, "window": passed,
                             "roles": teacher_claims[LTI + "roles"]}  # fmt: skip
        hub.issue_tokens([tname])
        hub.nbgrader(tname, "/formgrader/api/assignment/pilot/release")
    finally:
        context.close()

    # --- 2. the student opens the activity: the pilot, as Moodle's sub
    context, page = _moodle_login(chromium, site, STUDENT, STUDENT_PASSWORD)
    try:
        seen = _record_lti_requests(context)
        started = time.monotonic()
        window = _open_activity(context, page, activity)
        sname = str(student["id"])
        _wait_for_callback(window, seen, hub.url)
        login, form, status = _launch_records(seen, hub.url)
        claims = _verified_claims(form["id_token"], tool)

        # --- 3. the recorded id_token POST, sent again at once (Moodle's id_token lives 60 s;
        # ltiauthenticator accepts it for that long): refused
        callback = f"{hub.url}/hub/lti13/oauth_callback"
        body = {k: v for k, v in form.items() if not k.startswith("_")}
        replays = {}
        for label, headers in (
            ("without the browser's cookies", {}),
            ("with the browser's cookies as recorded", {"Cookie": form["_cookie"]}),
        ):
            age = time.time() - claims["iat"]
            reply = requests.post(
                callback, data=body, headers=headers, allow_redirects=False, timeout=60
            )
            text = " ".join(reply.text.split())
            found = [m for m in ("used already", "OAuth state", "nonce", "expired") if m in text]
            replays[label] = {"status": reply.status_code, "location": reply.headers.get(
                "Location"), "says": found, "seconds_after_iat": round(age, 1)}  # fmt: skip
            assert reply.status_code in (400, 401, 403), (label, reply.status_code, text[:500])
            assert "jupyterhub-hub-login" not in reply.headers.get("Set-Cookie", ""), label

        passed = _into_server(window, hub, sname)
        timings["student_launch_to_lab"] = time.monotonic() - started
        window.wait_for_timeout(1500)
        window.screenshot(path=str(site.workdir / "hub-student-window.png"))
        _show("OIDC login initiation (Moodle -> hub)", login)
        _show("id_token header", jwt.get_unverified_header(form["id_token"]))
        _show("id_token claims (signature checked against Moodle's key set)", claims)
        _show("the student's launch: the window went through", passed)
        _show("the student's id_token POST replayed to the hub's callback", replays)
        report.update(login_initiation=login, id_token_claims=claims, student_window=passed,
                      replays=replays)  # fmt: skip
        assert status == 302, f"the hub answered the student's launch with {status}"
        assert login["iss"] == site.wwwroot and login["client_id"] == tool["client_id"]
        assert claims["sub"] == sname and LEARNER in claims[LTI + "roles"]
        assert claims[LTI + "deployment_id"] == tool["deployment_id"]
        assert claims[LTI + "custom"]["assignment"] == "pilot"
        assert _groups(hub, sname) == [f"nbgrader-{COURSE_ID}"]
        landed = passed[-1]
        assert landed.startswith(f"{hub.url}/user/{sname}/"), landed
        report["student"] = {"hub_name": sname, "landed": landed}
        # with the launch's own cookies, only the tool's record of used nonces stops it
        assert "used already" in replays["with the browser's cookies as recorded"]["says"]
    finally:
        context.close()

    # --- 4. the student hands in every answer; the score goes to Moodle by itself
    hub.issue_tokens([sname])
    notebook = _contents(hub, sname, "pilot/pilot.ipynb")
    report["student"]["fetched_by_launch"] = notebook is not None
    if notebook is None:  # the launch opened JupyterLab only: fetch as the Assignments tab
        hub.nbgrader(sname, "/assignments/fetch", assignment_id="pilot", course_id=COURSE_ID)
        notebook = _contents(hub, sname, "pilot/pilot.ipynb")
    answered = fill_answers(nbformat.from_dict(notebook["content"]))
    hub.as_user(sname, "PUT", "/api/contents/pilot/pilot.ipynb",
                data={"type": "notebook", "format": "json", "content": answered})  # fmt: skip
    handed_in, handed_in_at = time.monotonic(), time.time()
    hub.nbgrader(sname, "/assignments/submit", assignment_id="pilot", course_id=COURSE_ID)
    handin = _grade_in_moodle(site, activity, store, handed_in, rows=1)
    done_at = handin["outbox"][0]["done_at"] if handin["outbox"] else None
    handin["posted_after"] = done_at - handed_in_at if done_at else None
    _show("after the hand-in: the tool's outbox", handin["outbox"])
    _show("after the hand-in: Moodle's gradebook for the student", handin["gradebook"])
    report["hand_in"] = handin

    # --- 5. the teacher grades the written answer in the formgrader and sends the final grades
    # (make export LTI=...): Completed, FullyGraded
    (row,) = hub.as_user(tname, "GET", "/formgrader/api/submitted_notebooks/pilot/pilot")
    grades = hub.as_user(tname, "GET", f"/formgrader/api/grades?submission_id={row['id']}")
    (written,) = [g for g in grades if g["name"] == "why_random"]
    hub.as_user(tname, "PUT", f"/formgrader/api/grade/{written['id']}",
                data={"manual_score": written["max_score"], "extra_credit": None})  # fmt: skip
    exported = time.monotonic()
    sent = subprocess.run(
        [sys.executable, "-m", "coursetools", "lms-post", "--lti", str(lti_toml),
         "--nbgrader-config", str(course / "nbgrader_config.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "COURSE_HUB_STATE": str(state), "COURSE_LTI_ALLOW_HTTP": "1"},
    )  # fmt: skip
    print(f"\n$ python -m coursetools lms-post ...\n{sent.stdout}{sent.stderr}")
    final = _grade_in_moodle(site, activity, store, exported, rows=2, newer_than=handin["grade"])
    _show("after lms-post: the tool's outbox", final["outbox"])
    _show("after lms-post: Moodle's gradebook for the student", final["gradebook"])
    report["final"] = {**final, "lms_post": sent.stdout + sent.stderr}

    def when(step: dict) -> str:
        return f"{step['seconds']:.1f} s" if step["grade"] is not None else "no grade"

    print(
        f"\nmoodle+hub timings: teacher launch -> lab {timings['teacher_launch_to_lab']:.1f} s, "
        f"student launch -> lab {timings['student_launch_to_lab']:.1f} s; hand-in -> score "
        f"posted by the hand-in service {handin['posted_after'] or float('nan'):.1f} s; hand-in -> grade in "
        f"Moodle {when(handin)} (Moodle shows {handin['gradebook']['str_grade']}); lms-post -> "
        f"grade in Moodle {when(final)} (Moodle shows {final['gradebook']['str_grade']})"
    )
    timings["hand_in_to_posted"] = handin["posted_after"]
    timings["hand_in_to_moodle"] = handin["seconds"] if handin["grade"] is not None else None
    timings["lms_post_to_moodle"] = final["seconds"] if final["grade"] is not None else None

    # the final grade: 8 of 8, FullyGraded: 100 of 100 in Moodle
    assert sent.returncode == 0, sent.stdout + sent.stderr
    last = final["outbox"][-1]
    assert (last["score"], last["max_score"], last["state"]) == (PILOT_MAX, PILOT_MAX, "posted")
    assert final["grade"] == pytest.approx(GRADE_MAX), final["gradebook"]
    # the hand-in's score: 7 of 8 while the written answer waits: 87.5 of 100 in Moodle
    (posted,) = handin["outbox"]
    assert (posted["score"], posted["max_score"]) == (PILOT_SCORE, PILOT_MAX), posted
    assert posted["state"] == "posted", posted
    assert handin["grade"] is not None, (
        f"the tool posted {PILOT_SCORE:g}/{PILOT_MAX:g} with gradingProgress "
        f"{posted['grading']} and Moodle answered 2xx, but Moodle's gradebook has no grade "
        f"{handin['seconds']:.0f} s after the hand-in: Moodle keeps scoreGiven only when "
        "gradingProgress is FullyGraded (mod/lti/service/gradebookservices/classes/local/"
        f"resources/scores.php); {handin['gradebook']}"
    )
    assert handin["grade"] == pytest.approx(PILOT_SCORE / PILOT_MAX * GRADE_MAX)


def _grade_in_moodle(site, activity, store, since: float, *, rows: int, newer_than=None) -> dict:
    """Poll Moodle's gradebook until the student's grade is there (and not ``newer_than``), or
    the tool settled its ``rows``-th score 20 s ago and Moodle still has none."""
    grade, settled_at = None, None
    while time.monotonic() - since < GRADE_WITHIN:
        grade = site.grade_of(STUDENT, activity)
        outbox = store.grades()
        if grade is not None and grade != newer_than:
            break
        if settled_at is None and len(outbox) >= rows and outbox[-1].state != "pending":
            settled_at = time.monotonic()
        if settled_at is not None and time.monotonic() - settled_at > 20:
            break  # the tool is done with it and Moodle has no (new) grade: no use waiting
        time.sleep(1.0)
    seconds = time.monotonic() - since
    fields = ("student", "assignment", "score", "max_score", "activity", "grading", "timestamp",
              "state", "tries", "reason", "created", "done_at")  # fmt: skip
    return {
        "grade": grade if grade != newer_than else None,
        "seconds": seconds,
        "gradebook": site.grades_of(STUDENT, activity),
        "outbox": [{k: getattr(g, k) for k in fields} for g in store.grades()],
    }
