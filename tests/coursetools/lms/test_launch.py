"""Signing in from the LMS (coursetools/lms/launch.py) on a real JupyterHub, through the whole flow.

The hub of ``deploy/jupyterhub_config.py`` with ``COURSE_AUTH=lti13`` and an ``lti.toml`` this
test writes, registered with the test LMS of ``tests/support/lti_platform.py`` (on http:
``COURSE_LTI_ALLOW_HTTP=1``). A ``requests.Session`` plays the browser, cookies and all: the
platform's launch page -> the hub's login initiation -> the platform's /auth -> the hub's
callback. Who arrives as what, where they land, and the hostile launches, each refused with a
status and a message that says why, with no hub user or group made or changed.

The helpers (:func:`lti_hub`, :func:`launch`, :func:`begin_launch`, :func:`finish_launch`) are
shared with tests/coursetools/lms/test_lti_class.py.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import time
import urllib.parse
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from unittest import mock

import hub_harness
import pytest
import requests
from hub_harness import Hub, running_hub
from joserfc.jwk import RSAKey
from lti_platform import INSTRUCTOR, LEARNER, MENTOR, TA, Platform

CLIENT = "course-tool"
DEPLOYMENT = "deployment-1"
COURSE_ID = "dp-course"
CONTEXT = "course-1"
STUDENTS_GROUP, INSTRUCTORS_GROUP = f"nbgrader-{COURSE_ID}", f"formgrade-{COURSE_ID}"
DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"

# Key generation is the slow part of a platform's start: once per file.
PLATFORM_KEY = RSAKey.generate_key(2048, private=True)
FORGED_KEY = RSAKey.generate_key(2048, private=True)  # signs with the platform's kid, not its key


# -- the hub and the platform (shared with test_lti_class.py) -------------------------------------


def write_lti_toml(path: Path, lms: Platform, contexts: dict[str, str]) -> Path:
    """The registration of the tool with ``lms``, as deploy/lti.toml spells it."""
    mapping = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in contexts.items())
    path.write_text(
        "[platform]\n"
        f"issuer = {json.dumps(lms.issuer)}\n"
        f"client_id = {json.dumps(CLIENT)}\n"
        f"deployment_ids = [{json.dumps(DEPLOYMENT)}]\n"
        f"authorize_url = {json.dumps(lms.auth_url)}\n"
        f"token_url = {json.dumps(lms.token_url)}\n"
        f"jwks_url = {json.dumps(lms.jwks_url)}\n"
        '[tool]\nkey_file = "lti-tool-key.pem"\n'
        f"[course]\ncontexts = {{ {mapping} }}\n"
        'assignment_parameter = "assignment"\n'
        '[grades]\npost = "on-hand-in"\n'
    )
    return path


@contextlib.contextmanager
def lti_hub(course: Path, lms: Platform, *, contexts: dict[str, str], **env: str) -> Iterator[Hub]:
    """The hub of deploy/jupyterhub_config.py for ``course`` signing in from ``lms`` (started),
    with no user made beforehand; ``lms`` is pointed at the hub's login, callback and key set."""
    settings = write_lti_toml(course.parent / "lti.toml", lms, contexts)
    # hub_harness makes the demo's three users tokens; an LTI hub has no user until a launch
    with mock.patch.object(hub_harness, "USERS", ()):
        with running_hub(
            course,
            servers=False,
            COURSE_AUTH="lti13",
            LTI_SETTINGS=str(settings),
            COURSE_LTI_ALLOW_HTTP="1",
            INSTRUCTORS="",
            STUDENTS="",
            **env,
        ) as hub:
            lms.tool_login_url = hub.url + "/hub/lti13/oauth_login"
            lms.tool_redirect_uris = [hub.url + "/hub/lti13/oauth_callback"]
            lms.tool_jwks_url = hub.url + "/hub/lti13/jwks"
            hub.settings = settings
            yield hub


def new_platform() -> Platform:
    """The test LMS (started), its tool URLs set once the hub runs (:func:`lti_hub`)."""
    return Platform(
        client_id=CLIENT,
        deployment_id=DEPLOYMENT,
        tool_login_url="http://127.0.0.1:9/not-yet",
        tool_redirect_uris=[],
        signing_key=PLATFORM_KEY,
    ).start()


class Form(HTMLParser):
    """The auto-posting form of a page: its action and its fields."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.action, self.fields = "", {}
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.action = attrs.get("action") or ""
        elif tag == "input" and attrs.get("name"):
            self.fields[attrs["name"]] = attrs.get("value") or ""


class Begun:
    """A launch up to the platform's authentication request: the browser's cookies, and the
    state, nonce and callback the hub asked the platform for."""

    def __init__(self, session: requests.Session, auth_url: str) -> None:
        self.session, self.auth_url = session, auth_url
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(auth_url).query))
        self.state, self.nonce, self.callback = (
            query["state"],
            query["nonce"],
            query["redirect_uri"],
        )


def begin_launch(lms: Platform, user: str, link: str) -> Begun:
    """The platform's launch page, then its form posted to the hub's login initiation."""
    session = requests.Session()
    page = session.get(lms.launch_url(user, link), timeout=30)
    assert page.status_code == 200, page.text
    form = Form(page.text)
    reply = session.post(form.action, data=form.fields, allow_redirects=False, timeout=30)
    assert reply.status_code == 302, (reply.status_code, reply.text[:2000])
    location = reply.headers["Location"]
    assert location.startswith(lms.auth_url + "?"), location
    return Begun(session, location)


def finish_launch(begun: Begun, id_token: str, *, cookies=None) -> requests.Response:
    """The platform's answer (``id_token`` and the state) posted to the hub's callback."""
    return (begun.session if cookies is None else requests).post(
        begun.callback,
        data={"id_token": id_token, "state": begun.state},
        cookies=cookies,
        allow_redirects=False,
        timeout=60,
    )


def launch(lms: Platform, user: str, link: str) -> tuple[requests.Response, Begun]:
    """The whole launch as a browser makes it; the hub's answer to the callback."""
    begun = begin_launch(lms, user, link)
    auth = begun.session.get(begun.auth_url, timeout=30)
    assert auth.status_code == 200, auth.text
    form = Form(auth.text)
    assert form.action == begun.callback and form.fields["state"] == begun.state
    return finish_launch(begun, form.fields["id_token"]), begun


# -- this file's hub --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lms():
    platform = new_platform()
    try:
        platform.add_context(CONTEXT, label="DP101", title="Differential privacy")
        platform.add_context("course-2", label="DP102", title="Not on this hub")
        people = {
            "u-ada": [LEARNER],
            "u-bob": [LEARNER],
            "u-cy": [LEARNER],
            "u-dee": [LEARNER],
            "u-teach": [INSTRUCTOR],
            "u-ta": [TA],  # the sub-role alone (Core A.2.3.1) makes an instructor
            "u-mentor": [MENTOR],
            "U-ADA": [LEARNER],  # another LMS user whose sub lower-cases to u-ada
            "Ada Lovelace": [LEARNER],  # a sub that cannot be a hub name
        }
        for user, roles in people.items():
            platform.add_user(user, roles=roles, name=user, contexts=[CONTEXT])
        platform.add_user("u-eve", roles=[LEARNER], name="Eve", contexts=["course-2"])
        target = "http://127.0.0.1:9/hub"  # the hub's, once known (never followed by the platform)
        platform.add_link(
            "link-pilot", context=CONTEXT, title="Pilot", target_link_uri=target,
            custom={"assignment": "pilot"},
        )  # fmt: skip
        platform.add_link("link-course", context=CONTEXT, title="Course", target_link_uri=target)
        platform.add_link(
            "link-bad-name", context=CONTEXT, title="Odd", target_link_uri=target,
            custom={"assignment": "../../hub/admin"},
        )  # fmt: skip
        platform.add_link("link-other", context="course-2", title="Other", target_link_uri=target)
        yield platform
    finally:
        platform.stop()


@pytest.fixture(scope="module")
def hub(tmp_path_factory, lms):
    course = tmp_path_factory.mktemp("lti-launch") / "course"
    course.mkdir()
    # an explicit contexts map: course-1 is this hub's dp-course, course-2 is not linked
    with lti_hub(course, lms, contexts={CONTEXT: COURSE_ID}, COURSE_HANDIN="0") as running:
        running.state = course.parent / "hub-state"
        yield running


def users(hub: Hub) -> dict[str, tuple[tuple[str, ...], bool]]:
    """Every hub user: their groups and whether they are an admin."""
    return {
        u["name"]: (tuple(sorted(u["groups"])), u["admin"])
        for u in hub.call("GET", "/hub/api/users", hub.admin)
    }


def lms_users(hub: Hub) -> list[tuple[str, str, str]]:
    from coursetools.lms.store import LmsStore

    store = LmsStore(f"sqlite:///{hub.state / 'lti.sqlite'}")
    try:
        return list(store.iter_users())
    finally:
        store.close()


def error_text(reply: requests.Response) -> str:
    return html.unescape(reply.text)


def hub_message(reply: requests.Response) -> str:
    """The message of the hub's error page (its ``<div class="error">``), unescaped."""
    found = re.search(r'<div class="error">.*?<h1>(.*?)</h1>.*?<p>(.*?)</p>', reply.text, re.S)
    assert found, reply.text[-3000:]
    return " ".join(html.unescape(found[2]).split())


# -- who arrives as what, and where ---------------------------------------------------------------


def test_a_learner_becomes_a_student_and_lands_on_the_assignment(hub, lms):
    reply, begun = launch(lms, "u-ada", "link-pilot")
    assert reply.status_code == 302, error_text(reply)[:3000]
    assert reply.headers["Location"] == "/hub/user-redirect/course/open/pilot"
    assert users(hub)["u-ada"] == ((STUDENTS_GROUP,), False)
    assert ("u-ada", lms.issuer, "u-ada") in lms_users(hub)
    # the hub's session cookie now signs the browser in as u-ada
    me = begun.session.get(hub.url + "/hub/api/user", timeout=30)
    assert me.status_code == 200 and me.json()["name"] == "u-ada", me.text[:500]


def test_a_learner_from_a_link_with_no_assignment_lands_in_the_lab(hub, lms):
    reply, _ = launch(lms, "u-bob", "link-course")
    assert reply.status_code == 302 and reply.headers["Location"] == "/hub/user-redirect/lab"
    assert users(hub)["u-bob"] == ((STUDENTS_GROUP,), False)


def test_an_assignment_parameter_that_is_no_name_opens_the_lab(hub, lms):
    reply, _ = launch(lms, "u-dee", "link-bad-name")
    assert reply.status_code == 302 and reply.headers["Location"] == "/hub/user-redirect/lab"


@pytest.mark.parametrize("user", ["u-teach", "u-ta"])
def test_an_instructor_and_a_teaching_assistant_become_instructors(hub, lms, user):
    reply, _ = launch(lms, user, "link-pilot")
    assert reply.status_code == 302, error_text(reply)[:3000]
    assert reply.headers["Location"] == "/hub/user-redirect/lab"  # the formgrader is in the lab
    assert users(hub)[user] == ((INSTRUCTORS_GROUP,), False)  # an instructor, not a hub admin


def test_a_learner_whose_custom_claim_says_instructor_is_a_student(hub, lms):
    begun = begin_launch(lms, "u-cy", "link-pilot")
    token = lms.id_token(
        "u-cy", "link-pilot", begun.nonce,
        custom={"assignment": "pilot", "role": "Instructor", "roles": INSTRUCTOR,
                "lms_role": "urn:lti:role:ims/lis/Instructor"},
    )  # fmt: skip
    reply = finish_launch(begun, token)
    assert reply.status_code == 302, error_text(reply)[:3000]
    assert reply.headers["Location"] == "/hub/user-redirect/course/open/pilot"
    assert users(hub)["u-cy"] == ((STUDENTS_GROUP,), False)


def test_the_lms_role_decides_at_every_launch(hub, lms):
    """An instructor the LMS makes a learner (a test student view) loses the instructors' group."""
    begun = begin_launch(lms, "u-dee", "link-pilot")
    reply = finish_launch(
        begun, lms.id_token("u-dee", "link-pilot", begun.nonce, roles=[INSTRUCTOR])
    )
    assert reply.status_code == 302 and users(hub)["u-dee"] == ((INSTRUCTORS_GROUP,), False)
    reply, _ = launch(lms, "u-dee", "link-pilot")
    assert reply.status_code == 302 and users(hub)["u-dee"] == ((STUDENTS_GROUP,), False)


def test_the_tool_key_set_has_public_members_only(hub):
    reply = requests.get(hub.url + "/hub/lti13/jwks", timeout=30)
    assert reply.status_code == 200
    assert reply.headers["Content-Type"].startswith("application/json")
    (key,) = reply.json()["keys"]
    assert set(key) == {"kty", "n", "e", "kid", "use", "alg"}, sorted(key)
    assert (key["kty"], key["use"], key["alg"]) == ("RSA", "sig", "RS256")
    public = RSAKey.import_key(key)
    assert not public.is_private and public.thumbprint() == key["kid"]
    assert len(key["n"]) >= 342  # 2048 bits, base64url


# -- hostile launches: each refused, nothing made or changed ----------------------------------------


def _forged(lms, begun, user, link):
    return lms.id_token(user, link, begun.nonce, key=FORGED_KEY)


def _claims(**changes):
    return lambda lms, begun, user, link: lms.id_token(user, link, begun.nonce, **changes)


def _times(iat: int, exp: int):
    """Issued ``iat`` and expiring ``exp`` seconds from now (when the launch is made)."""

    def make(lms, begun, user, link):
        now = int(time.time())
        return lms.id_token(user, link, begun.nonce, iat=now + iat, exp=now + exp)

    return make


def _unsigned(lms, begun, user, link):
    return lms.id_token(user, link, begun.nonce, alg="none")


def _deep_linking(lms, begun, user, link):
    settings = {"deep_link_return_url": lms.url + "/return", "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["window"]}  # fmt: skip
    return lms.id_token(
        user, link, begun.nonce, message_type="LtiDeepLinkingRequest", **{DL_SETTINGS: settings}
    )


def _without_nonce(lms, begun, user, link):
    """Signed by the platform, with no nonce claim at all (id_token's nonce= cannot drop it)."""
    from joserfc import jwt as jose

    claims = dict(jose.decode(lms.id_token(user, link, begun.nonce), lms.key).claims)
    del claims["nonce"]
    return jose.encode({"alg": "RS256", "kid": lms.key.kid}, claims, lms.key)


def _nonce_of_another_launch(lms, begun, user, link):
    return lms.id_token(user, link, "a-nonce-the-hub-never-asked-for")


HOSTILE = {
    # name: (user, link, how the id_token is made, status, what the message says)
    "bad signature": ("u-ada", "link-pilot", _forged, 400, "Signature verification failed"),
    "unsigned (alg none)": ("u-ada", "link-pilot", _unsigned, 400, "alg"),
    "wrong audience": ("u-ada", "link-pilot", _claims(aud="another-tool"), 401, "Audience doesn't match"),
    "wrong issuer": ("u-ada", "link-pilot", _claims(iss="https://lms.example.org"), 400, "Invalid issuer"),
    "expired": ("u-ada", "link-pilot", _times(iat=-400, exp=-100), 400, "Signature has expired"),
    "iat too old": ("u-ada", "link-pilot", _times(iat=-3600, exp=3600), 400, "id_token issued too long ago"),
    "unknown deployment id": ("u-ada", "link-pilot", _claims(deployment_id="deployment-2"), 403,
                              "the launch's deployment id is not one this tool was registered with"),
    "deep-linking message": ("u-ada", "link-pilot", _deep_linking, 400,
                             "this tool takes resource link launches only (LtiResourceLinkRequest)"),
    "missing nonce": ("u-ada", "link-pilot", _without_nonce, 400, "Required LTI 1.3 arg nonce not in request"),
    "another launch's nonce": ("u-ada", "link-pilot", _nonce_of_another_launch, 400, "OAuth nonce mismatch"),
    "context not linked": ("u-eve", "link-other", _claims(), 403,
                           "this LMS course is not linked to a course on this hub"),
    "sub lower-cases to an existing hub name": ("U-ADA", "link-pilot", _claims(), 403,
                                                "this LMS account does not match the hub account it would sign in as"),
    "a role that is neither learner nor instructor": ("u-mentor", "link-pilot", _claims(), 403,
                                                      "your role in this LMS course is neither Learner nor Instructor"),
    "no roles claim": ("u-bob", "link-pilot", _claims(roles=None), 400, "roles"),
    "a sub that cannot be a hub name": ("Ada Lovelace", "link-pilot", _claims(), 403,
                                        "the LMS's user id cannot be a hub user name"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_launch_is_refused_and_changes_nothing(hub, lms, case):
    if "u-ada" not in users(hub):  # the existing user the conflict case needs
        assert launch(lms, "u-ada", "link-pilot")[0].status_code == 302
    user, link, make_token, status, message = HOSTILE[case]
    before, before_lms = users(hub), lms_users(hub)
    begun = begin_launch(lms, user, link)
    reply = finish_launch(begun, make_token(lms, begun, user, link))
    assert reply.status_code == status, (case, reply.status_code, error_text(reply)[-3000:])
    said = hub_message(reply)
    print(f"{case}: {reply.status_code} {said}")
    assert message in said, (case, said)
    assert "Traceback" not in reply.text
    assert "jupyterhub-hub-login" not in begun.session.cookies  # nobody signed in
    assert users(hub) == before and lms_users(hub) == before_lms


def test_a_replayed_launch_is_refused_even_with_the_browsers_cookies(hub, lms):
    begun = begin_launch(lms, "u-ada", "link-pilot")
    auth = begun.session.get(begun.auth_url, timeout=30)
    form = Form(auth.text)
    cookies = begun.session.cookies.copy()  # what the browser held when it posted the callback
    first = finish_launch(begun, form.fields["id_token"])
    assert first.status_code == 302
    before = users(hub)
    again = finish_launch(begun, form.fields["id_token"], cookies=cookies)  # the same POST, again
    assert again.status_code == 400, error_text(again)[-3000:]
    print(f"replayed launch: {again.status_code} {hub_message(again)}")
    assert (
        hub_message(again) == "this launch was used already: open the activity again from the LMS"
    )
    assert "jupyterhub-hub-login" not in again.cookies
    assert users(hub) == before
