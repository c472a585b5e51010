"""Self-tests of the LMS the LTI tests launch from (tests/support/lti_platform.py).

The platform stands for Canvas or Moodle in the tool's tests: if it accepted what a real platform
refuses, the tool's tests would pass on a tool that fails in class. So each check a real platform
makes is tried here with a message that must fail it. Only joserfc, requests and the standard
library talk to it (never the tool's PyJWT).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from joserfc import jwt
from joserfc.errors import BadSignatureError, InvalidKeyIdError
from joserfc.jwk import KeySet, OctKey, RSAKey
from lti_platform import (
    AGS_CLAIM,
    CLIENT_ASSERTION_TYPE,
    COURSE_OFFERING,
    INSTRUCTOR,
    LEARNER,
    LTI_CLAIM,
    MEDIA_LINEITEM,
    MEDIA_LINEITEMS,
    MEDIA_RESULTS,
    MEDIA_SCORE,
    SCOPE_LINEITEM,
    SCOPE_RESULT_READONLY,
    SCOPE_SCORE,
    TA,
    Platform,
)

TOOL = "http://127.0.0.1:9"  # never contacted: the tests play the tool themselves
LOGIN = TOOL + "/hub/lti13/oauth_login"
CALLBACK = TOOL + "/hub/lti13/oauth_callback"
TARGET = TOOL + "/hub/spawn"
CLIENT = "course-tool"
ALL_SCOPES = f"{SCOPE_LINEITEM} {SCOPE_RESULT_READONLY} {SCOPE_SCORE}"

# Key generation is the slow part of a platform's start: once per file.
PLATFORM_KEY = RSAKey.generate_key(2048, private=True)
TOOL_KEY = RSAKey.generate_key(2048, {"kid": "tool-1"}, private=True)
FORGED_KEY = RSAKey.generate_key(
    2048, {"kid": "tool-1"}, private=True
)  # the tool's kid, not its key
TOOL_JWKS = {"keys": [TOOL_KEY.as_dict(private=False)]}

_jti = itertools.count(1)


@pytest.fixture
def lms():
    with Platform(
        client_id=CLIENT,
        deployment_id="deployment-1",
        tool_login_url=LOGIN,
        tool_redirect_uris=[CALLBACK],
        tool_jwks=TOOL_JWKS,
        signing_key=PLATFORM_KEY,
    ) as platform:
        platform.add_context("course-1", label="DP101", title="Differential privacy")
        platform.add_context("course-2", label="DP102", title="More privacy")
        platform.add_user(
            "u-ada",
            roles=[LEARNER],
            name="Ada Lovelace",
            email="ada@example.org",
            contexts=["course-1"],
        )
        platform.add_user("u-bob", roles=[LEARNER], name="Bob", contexts=["course-1"])
        platform.add_user("u-ta", roles=[TA, INSTRUCTOR], name="Tess Assist", contexts=["course-1"])
        platform.add_user("u-eve", roles=[LEARNER], name="Eve", contexts=["course-2"])
        platform.add_link(
            "link-pilot",
            context="course-1",
            title="Pilot",
            target_link_uri=TARGET,
            custom={"assignment": "pilot"},
        )
        platform.add_link("link-other", context="course-2", title="Other", target_link_uri=TARGET)
        yield platform


# -- helpers: the tool's side, written from the standards ------------------------------------------


class Page(HTMLParser):
    """What a test needs of a page: its language, title, form, inputs, button, noscript, script."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.lang = self.title = self.action = self.method = None
        self.fields: dict[str, str] = {}
        self.tags: list[str] = []
        self._in_title = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "html":
            self.lang = attrs.get("lang")
        elif tag == "title":
            self._in_title = True
        elif tag == "form":
            self.action, self.method = attrs.get("action"), attrs.get("method")
        elif tag == "input":
            self.fields[attrs["name"]] = attrs["value"]
        elif tag == "button":
            assert attrs.get("type") == "submit"

    def handle_endtag(self, tag):
        self._in_title = self._in_title and tag != "title"

    def handle_data(self, data):
        if self._in_title:
            self.title = (self.title or "") + data


def launch(lms: Platform, user: str, link: str) -> tuple[requests.Session, Page]:
    """Open the launch page as a browser would: the session keeps the platform's cookie."""
    session = requests.Session()
    reply = session.get(lms.launch_url(user, link), timeout=5)
    assert reply.status_code == 200, reply.text
    return session, Page(reply.text)


def auth_request(lms: Platform, user: str = "u-ada", link: str = "link-pilot", **changes) -> dict:
    """The tool's OIDC authentication request (Security Framework §5.1.1.2); None drops one."""
    params = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": CLIENT,
        "redirect_uri": CALLBACK,
        "login_hint": user,
        "lti_message_hint": link,
        "nonce": "nonce-1",
        "state": "state-1",
    } | changes
    return {name: value for name, value in params.items() if value is not None}


def verify(lms: Platform, token: str):
    """The id_token checked as a tool does: with the key set at /jwks."""
    keys = KeySet.import_key_set(requests.get(lms.jwks_url, timeout=5).json())
    return jwt.decode(token, keys, algorithms=["RS256"])


def assertion(lms: Platform, *, key=TOOL_KEY, header=None, **changes) -> str:
    """A client assertion (RFC 7523 §3); ``changes`` replace claims (None drops one)."""
    now = int(time.time())
    claims = {
        "iss": CLIENT,
        "sub": CLIENT,
        "aud": lms.token_url,
        "iat": now,
        "exp": now + 300,
        "jti": f"jti-{next(_jti)}",
    } | changes
    claims = {name: value for name, value in claims.items() if value is not None}
    return jwt.encode(header or {"alg": "RS256", "kid": "tool-1"}, claims, key)


def token_request(lms: Platform, scope: str | None = ALL_SCOPES, **changes) -> requests.Response:
    form = {
        "grant_type": "client_credentials",
        "client_assertion_type": CLIENT_ASSERTION_TYPE,
        "client_assertion": assertion(lms),
        "scope": scope,
    } | changes
    form = {name: value for name, value in form.items() if value is not None}
    return requests.post(lms.token_url, data=form, timeout=5)


def access_token(lms: Platform, scope: str = ALL_SCOPES) -> dict[str, str]:
    reply = token_request(lms, scope)
    assert reply.status_code == 200, reply.text
    return {"Authorization": f"Bearer {reply.json()['access_token']}"}


def refused(reply: requests.Response, status: int, error: str, *words: str) -> None:
    assert reply.status_code == status, (reply.status_code, reply.text)
    body = reply.json()
    assert body["error"] == error, body
    for word in words:
        assert word in body["error_description"], body


def new_lineitem(lms: Platform, auth: dict, **fields) -> dict:
    item = {"label": "Pilot", "scoreMaximum": 10, "resourceId": "pilot", "tag": "grade"} | fields
    reply = requests.post(
        lms.lineitems_url("course-1"),
        json=item,
        headers=auth | {"Content-Type": MEDIA_LINEITEM, "Accept": MEDIA_LINEITEM},
        timeout=5,
    )
    assert reply.status_code == 201, reply.text
    return reply.json()


def score(user: str = "u-ada", stamp: str = "2026-03-01T10:00:00.000Z", **fields) -> dict:
    return {
        "userId": user,
        "scoreGiven": 7,
        "scoreMaximum": 10,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        "timestamp": stamp,
    } | fields


def post_score(lineitem_id: str, auth: dict, body, content_type: str = MEDIA_SCORE):
    data = body if isinstance(body, str) else json.dumps(body)
    return requests.post(
        lineitem_id + "/scores",
        data=data.encode(),
        headers=auth | {"Content-Type": content_type},
        timeout=5,
    )


# -- launch -------------------------------------------------------------------------------------


def test_launch_page_signs_in_and_posts_the_third_party_login(lms):
    session, page = launch(lms, "u-ada", "link-pilot")
    assert page.action == LOGIN and page.method == "post"
    assert page.fields == {
        "iss": lms.url,
        "login_hint": "u-ada",
        "target_link_uri": TARGET,
        "lti_message_hint": "link-pilot",
        "client_id": CLIENT,
        "lti_deployment_id": "deployment-1",
    }
    assert page.lang == "en" and page.title and page.title.strip()
    assert {"noscript", "button", "script"} <= set(page.tags)
    assert session.cookies.get(lms.cookie_name)


def test_auth_answers_a_form_post_whose_id_token_verifies_and_has_every_claim(lms):
    session, _ = launch(lms, "u-ada", "link-pilot")
    reply = session.get(lms.auth_url, params=auth_request(lms), timeout=5)
    assert reply.status_code == 200, reply.text
    page = Page(reply.text)
    assert page.action == CALLBACK and page.method == "post"
    assert set(page.fields) == {"id_token", "state"} and page.fields["state"] == "state-1"
    assert page.lang == "en" and page.title

    token = verify(lms, page.fields["id_token"])
    assert token.header["alg"] == "RS256"
    assert token.header["kid"] == requests.get(lms.jwks_url, timeout=5).json()["keys"][0]["kid"]
    claims = token.claims
    assert claims["iss"] == lms.url and claims["sub"] == "u-ada" and claims["nonce"] == "nonce-1"
    assert claims["aud"] == CLIENT and claims["azp"] == CLIENT
    assert claims["exp"] - claims["iat"] == 300 and abs(claims["iat"] - time.time()) < 5
    assert (claims["name"], claims["given_name"], claims["family_name"], claims["email"]) == (
        "Ada Lovelace",
        "Ada",
        "Lovelace",
        "ada@example.org",
    )
    assert claims[LTI_CLAIM + "message_type"] == "LtiResourceLinkRequest"
    assert claims[LTI_CLAIM + "version"] == "1.3.0"
    assert claims[LTI_CLAIM + "deployment_id"] == "deployment-1"
    assert claims[LTI_CLAIM + "target_link_uri"] == TARGET
    assert claims[LTI_CLAIM + "resource_link"] == {"id": "link-pilot", "title": "Pilot"}
    assert claims[LTI_CLAIM + "roles"] == [LEARNER]
    assert claims[LTI_CLAIM + "context"] == {
        "id": "course-1",
        "label": "DP101",
        "title": "Differential privacy",
        "type": [COURSE_OFFERING],
    }
    assert claims[LTI_CLAIM + "custom"] == {"assignment": "pilot"}
    platform = claims[LTI_CLAIM + "tool_platform"]
    assert platform["guid"] and platform["name"] and platform["product_family_code"]
    assert claims[LTI_CLAIM + "launch_presentation"]["return_url"].startswith(lms.url)
    assert claims[AGS_CLAIM] == {
        "scope": [SCOPE_LINEITEM, SCOPE_RESULT_READONLY, SCOPE_SCORE],
        "lineitems": lms.url + "/ags/course-1/lineitems",
    }


def test_auth_takes_a_post_too_and_a_ta_gets_both_roles(lms):
    session, _ = launch(lms, "u-ta", "link-pilot")
    reply = session.post(lms.auth_url, data=auth_request(lms, "u-ta"), timeout=5)
    assert reply.status_code == 200, reply.text
    claims = verify(lms, Page(reply.text).fields["id_token"]).claims
    assert claims[LTI_CLAIM + "roles"] == [TA, INSTRUCTOR]


def test_a_link_with_one_bound_lineitem_sends_its_url_in_the_claim(lms):
    lms.add_link(
        "link-graded", context="course-1", title="Graded", target_link_uri=TARGET, score_maximum=5
    )
    (item,) = [item for item in lms.lineitems("course-1") if item.get("resourceLinkId")]
    assert item == {
        "id": lms.url + "/ags/course-1/lineitems/1",
        "label": "Graded",
        "scoreMaximum": 5,
        "resourceLinkId": "link-graded",
    }
    claims = verify(lms, lms.id_token("u-ada", "link-graded")).claims
    assert claims[AGS_CLAIM]["lineitem"] == item["id"]
    assert "lineitem" not in verify(lms, lms.id_token("u-ada", "link-pilot")).claims[AGS_CLAIM]


@pytest.mark.parametrize(
    ("changes", "status", "error", "why"),
    [
        ({"redirect_uri": TOOL + "/elsewhere"}, 400, "invalid_request", "redirect_uri"),
        ({"redirect_uri": CALLBACK + "/"}, 400, "invalid_request", "redirect_uri"),
        ({"login_hint": "u-bob"}, 403, "access_denied", "login_hint"),
        ({"nonce": None}, 400, "invalid_request", "nonce"),
        ({"state": None}, 400, "invalid_request", "state"),
        ({"client_id": "another-tool"}, 400, "unauthorized_client", "client_id"),
        ({"response_type": "code"}, 400, "invalid_request", "response_type"),
        ({"response_mode": "query"}, 400, "invalid_request", "response_mode"),
        ({"prompt": None}, 400, "invalid_request", "prompt"),
        ({"scope": "profile"}, 400, "invalid_scope", "openid"),
        ({"lti_message_hint": "link-nowhere"}, 400, "invalid_request", "lti_message_hint"),
        ({"lti_message_hint": "link-other"}, 403, "access_denied", "member"),
    ],
)
def test_auth_refuses(lms, changes, status, error, why):
    session, _ = launch(lms, "u-ada", "link-pilot")
    reply = session.get(lms.auth_url, params=auth_request(lms, **changes), timeout=5)
    refused(reply, status, error, why)
    assert reply.headers["Content-Type"] == "application/json"  # no form_post page


def test_auth_refuses_when_nobody_is_signed_in(lms):
    reply = requests.get(lms.auth_url, params=auth_request(lms), timeout=5)
    refused(reply, 403, "login_required", "signed in")


def test_id_token_overrides_remove_replace_and_forge(lms):
    claims = verify(lms, lms.id_token("u-ada", "link-pilot", nonce="n", roles=[INSTRUCTOR])).claims
    assert claims[LTI_CLAIM + "roles"] == [INSTRUCTOR] and claims["nonce"] == "n"
    claims = verify(lms, lms.id_token("u-ada", "link-pilot", deployment_id=None, aud="x")).claims
    assert LTI_CLAIM + "deployment_id" not in claims and claims["aud"] == "x"
    ags = {AGS_CLAIM: None}
    assert AGS_CLAIM not in verify(lms, lms.id_token("u-ada", "link-pilot", **ags)).claims

    with pytest.raises(BadSignatureError):  # the platform's kid, another key
        verify(lms, lms.id_token("u-ada", "link-pilot", key=FORGED_KEY))
    with pytest.raises(InvalidKeyIdError):
        verify(lms, lms.id_token("u-ada", "link-pilot", kid="rotated-away"))
    unsigned = lms.id_token("u-ada", "link-pilot", alg="none")
    assert unsigned.endswith(".") and unsigned.count(".") == 2
    public = requests.get(lms.jwks_url, timeout=5).json()["keys"][0]
    any_alg = RSAKey.import_key({name: v for name, v in public.items() if name != "alg"})
    other_alg = lms.id_token("u-ada", "link-pilot", alg="RS512")
    assert jwt.decode(other_alg, any_alg, algorithms=["RS512"]).header["alg"] == "RS512"


# -- /token -------------------------------------------------------------------------------------


def test_token_accepts_a_well_signed_assertion(lms):
    reply = token_request(lms, f"{SCOPE_SCORE} {SCOPE_LINEITEM}")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600
    assert body["scope"] == f"{SCOPE_SCORE} {SCOPE_LINEITEM}" and body["access_token"]
    assert reply.headers["Cache-Control"] == "no-store"
    assert lms.tokens_issued == 1


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda lms: assertion(lms, key=FORGED_KEY), "signature"),
        (lambda lms: assertion(lms, aud=lms.url + "/elsewhere"), "aud"),
        (lambda lms: assertion(lms, aud=[lms.url]), "aud"),
        (lambda lms: assertion(lms, exp=int(time.time()) - 60), "expired"),
        (lambda lms: assertion(lms, iat=int(time.time()) + 600), "future"),
        (lambda lms: assertion(lms, nbf=int(time.time()) + 600), "nbf"),
        (lambda lms: assertion(lms, jti=None), "jti"),
        (lambda lms: assertion(lms, exp=None), "exp"),
        (lambda lms: assertion(lms, iss="another-tool", sub="another-tool"), "unknown client"),
        (lambda lms: assertion(lms, sub="someone"), "unknown client"),
        (lambda lms: assertion(lms, header={"alg": "RS256", "kid": "tool-9"}), "kid"),
        (lambda lms: assertion(lms, header={"alg": "RS256"}), "kid"),
        (
            lambda lms: assertion(
                lms, key=OctKey.import_key(b"k" * 32), header={"alg": "HS256", "kid": "tool-1"}
            ),
            "alg",
        ),
        (lambda lms: assertion(lms).rsplit(".", 1)[0] + ".", "signature"),
        (lambda lms: "not-a-jwt", "compact"),
    ],
)
def test_token_refuses_a_bad_assertion(lms, make, why):
    reply = token_request(lms, client_assertion=make(lms))
    refused(reply, 400, "invalid_client", why)
    assert lms.tokens_issued == 0


def test_token_refuses_a_replayed_assertion(lms):
    once = assertion(lms)
    assert token_request(lms, client_assertion=once).status_code == 200
    refused(token_request(lms, client_assertion=once), 400, "invalid_client", "already used")
    assert lms.tokens_issued == 1
    # an assertion is spent once verified, even when the request then fails on its scope
    spent = assertion(lms)
    refused(token_request(lms, "urn:x", client_assertion=spent), 400, "invalid_scope")
    refused(token_request(lms, client_assertion=spent), 400, "invalid_client", "already used")


@pytest.mark.parametrize(
    ("changes", "error", "why"),
    [
        ({"scope": f"{SCOPE_SCORE} https://example.org/scope/all"}, "invalid_scope", "example.org"),
        (
            {"scope": "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"},
            "invalid_scope",
            "lineitem.readonly",
        ),
        ({"scope": None}, "invalid_scope", "scope"),
        ({"grant_type": "password"}, "unsupported_grant_type", "client_credentials"),
        ({"grant_type": None}, "invalid_request", "grant_type"),
        ({"client_assertion_type": "urn:other"}, "invalid_client", "client_assertion_type"),
        ({"client_assertion": None}, "invalid_client", "client authentication"),
        ({"client_secret": "s3cret"}, "invalid_request", "more than one"),
        ({"client_id": "another-tool"}, "invalid_client", "client_id"),
    ],
)
def test_token_refuses_a_bad_request(lms, changes, error, why):
    refused(token_request(lms, **changes), 400, error, why)


def test_token_refuses_a_repeated_parameter_and_a_json_body(lms):
    body = f"grant_type=client_credentials&grant_type=client_credentials&client_assertion_type={CLIENT_ASSERTION_TYPE}"
    reply = requests.post(
        lms.token_url,
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        timeout=5,
    )
    refused(reply, 400, "invalid_request", "repeats")
    refused(
        requests.post(lms.token_url, json={"grant_type": "client_credentials"}, timeout=5),
        400,
        "invalid_request",
        "application/x-www-form-urlencoded",
    )


class KeySetServer:
    """The tool's JWKS URL: serves ``self.jwks`` (a test swaps it to rotate the key)."""

    def __init__(self, jwks: dict) -> None:
        self.jwks = jwks
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps(owner.jwks).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_token_fetches_the_tools_key_set_by_kid_and_again_after_a_rotation():
    keys = KeySetServer(TOOL_JWKS)
    try:
        with Platform(
            client_id=CLIENT,
            deployment_id="deployment-1",
            tool_login_url=LOGIN,
            tool_redirect_uris=[CALLBACK],
            tool_jwks_url=keys.url,
            signing_key=PLATFORM_KEY,
        ) as lms:
            assert lms.jwks_fetches == 0  # nothing fetched before it is needed
            assert token_request(lms).status_code == 200
            assert token_request(lms).status_code == 200
            assert lms.jwks_fetches == 1  # the kid was known: no second fetch

            rotated = RSAKey.import_key(FORGED_KEY.as_dict(private=True), {"kid": "tool-2"})
            keys.jwks = {"keys": [rotated.as_dict(private=False)]}
            header = {"alg": "RS256", "kid": "tool-2"}
            reply = token_request(lms, client_assertion=assertion(lms, key=rotated, header=header))
            assert reply.status_code == 200, reply.text
            assert lms.jwks_fetches == 2

            keys.jwks = {"keys": []}  # an unknown kid, still unknown after a fetch
            header = {"alg": "RS256", "kid": "tool-3"}
            reply = token_request(lms, client_assertion=assertion(lms, key=rotated, header=header))
            refused(reply, 400, "invalid_client", "tool-3")
    finally:
        keys.close()


# -- AGS ----------------------------------------------------------------------------------------


def test_ags_refuses_a_missing_unknown_or_expired_token(lms):
    url = lms.lineitems_url("course-1")
    reply = requests.get(url, timeout=5)
    refused(reply, 401, "invalid_request", "Bearer")
    assert reply.headers["WWW-Authenticate"].startswith("Bearer")
    refused(
        requests.get(url, headers={"Authorization": "Bearer made-up"}, timeout=5),
        401,
        "invalid_token",
        "unknown",
    )
    auth = access_token(lms)
    assert requests.get(url, headers=auth, timeout=5).status_code == 200
    lms.expire_tokens()
    reply = requests.get(url, headers=auth, timeout=5)
    refused(reply, 401, "invalid_token", "expired")
    assert 'error="invalid_token"' in reply.headers["WWW-Authenticate"]


def test_ags_refuses_a_token_without_the_scope_of_the_call(lms):
    item = new_lineitem(lms, access_token(lms))
    reader = access_token(lms, SCOPE_RESULT_READONLY)
    reply = post_score(item["id"], reader, score())
    refused(reply, 403, "insufficient_scope", SCOPE_SCORE)
    assert 'error="insufficient_scope"' in reply.headers["WWW-Authenticate"]
    scorer = access_token(lms, SCOPE_SCORE)
    refused(
        requests.get(item["id"] + "/results", headers=scorer, timeout=5), 403, "insufficient_scope"
    )
    refused(
        requests.get(lms.lineitems_url("course-1"), headers=scorer, timeout=5),
        403,
        "insufficient_scope",
    )
    assert post_score(item["id"], scorer, score()).status_code == 200


def test_lineitems_are_created_listed_filtered_updated_and_deleted(lms):
    auth = access_token(lms)
    first = new_lineitem(lms, auth)
    second = new_lineitem(lms, auth, label="Quiz", resourceId="quiz", tag="originality")
    third = new_lineitem(lms, auth, label="Linked", tag="linked", resourceLinkId="link-pilot")
    base = lms.lineitems_url("course-1")
    assert [first["id"], second["id"], third["id"]] == [f"{base}/{n}" for n in (1, 2, 3)]
    assert first == {
        "id": f"{base}/1",
        "label": "Pilot",
        "scoreMaximum": 10,
        "resourceId": "pilot",
        "tag": "grade",
    }

    def listing(**query):
        reply = requests.get(
            base, params=query, headers=auth | {"Accept": MEDIA_LINEITEMS}, timeout=5
        )
        assert reply.status_code == 200, reply.text
        assert reply.headers["Content-Type"] == MEDIA_LINEITEMS
        return [item["id"] for item in reply.json()]

    assert listing() == [first["id"], second["id"], third["id"]]
    assert listing(resource_id="quiz") == [second["id"]]
    assert listing(tag="grade") == [first["id"]]
    assert listing(resource_link_id="link-pilot") == [third["id"]]
    assert listing(resource_id="quiz", tag="grade") == []
    assert lms.lineitems("course-1") == [first, second, third]
    assert lms.lineitems("course-2") == []

    page = requests.get(base, params={"limit": 2}, headers=auth, timeout=5)
    assert [item["id"] for item in page.json()] == [first["id"], second["id"]]
    assert page.links["next"]["url"]
    following = requests.get(page.links["next"]["url"], headers=auth, timeout=5)
    assert [item["id"] for item in following.json()] == [third["id"]]
    assert "next" not in following.links

    got = requests.get(first["id"], headers=auth | {"Accept": MEDIA_LINEITEM}, timeout=5)
    assert got.status_code == 200 and got.json() == first
    assert got.headers["Content-Type"] == MEDIA_LINEITEM
    changed = first | {"label": "Pilot (v2)", "scoreMaximum": 20}
    reply = requests.put(
        first["id"], json=changed, headers=auth | {"Content-Type": MEDIA_LINEITEM}, timeout=5
    )
    assert reply.status_code == 200 and reply.json() == changed
    reply = requests.put(
        third["id"],
        json=third | {"resourceLinkId": None},
        headers=auth | {"Content-Type": MEDIA_LINEITEM},
        timeout=5,
    )
    refused(reply, 400, "invalid_request", "resourceLinkId")

    assert requests.delete(second["id"], headers=auth, timeout=5).status_code == 204
    refused(requests.get(second["id"], headers=auth, timeout=5), 404, "not_found")
    assert listing() == [first["id"], third["id"]]


@pytest.mark.parametrize(
    ("fields", "status", "why"),
    [
        ({"scoreMaximum": 0}, 400, "scoreMaximum"),
        ({"scoreMaximum": "10"}, 400, "scoreMaximum"),
        ({"scoreMaximum": True}, 400, "scoreMaximum"),
        ({"scoreMaximum": None}, 400, "scoreMaximum"),
        ({"label": "  "}, 400, "label"),
        ({"label": None}, 400, "label"),
        ({"tag": 3}, 400, "tag"),
        ({"endDateTime": "2026-05-01 12:00"}, 400, "endDateTime"),
        ({"resourceLinkId": "link-other"}, 404, "resourceLinkId"),
        ({"resourceLinkId": "link-nowhere"}, 404, "resourceLinkId"),
    ],
)
def test_lineitem_refuses_a_bad_payload(lms, fields, status, why):
    item = {"label": "Pilot", "scoreMaximum": 10} | fields
    reply = requests.post(
        lms.lineitems_url("course-1"),
        json=item,
        headers=access_token(lms) | {"Content-Type": MEDIA_LINEITEM},
        timeout=5,
    )
    refused(reply, status, "invalid_request" if status == 400 else "not_found", why)
    assert lms.lineitems("course-1") == []


def test_ags_refuses_the_wrong_media_types(lms):
    auth = access_token(lms)
    reply = requests.post(
        lms.lineitems_url("course-1"),
        json={"label": "Pilot", "scoreMaximum": 10},
        headers=auth,  # requests says application/json
        timeout=5,
    )
    refused(reply, 415, "unsupported_media_type", MEDIA_LINEITEM)
    reply = requests.get(
        lms.lineitems_url("course-1"), headers=auth | {"Accept": "text/html"}, timeout=5
    )
    refused(reply, 406, "not_acceptable", MEDIA_LINEITEMS)
    item = new_lineitem(lms, auth)
    refused(
        post_score(item["id"], auth, score(), "application/json"), 415, "unsupported_media_type"
    )
    refused(
        requests.get(item["id"] + "/scores", headers=auth, timeout=5), 405, "method_not_allowed"
    )
    refused(
        requests.get(lms.url + "/ags/course-9/lineitems", headers=auth, timeout=5), 404, "not_found"
    )


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (score(userId=None), "userId"),
        (score(user="u-eve"), "member"),
        (score(user="u-nobody"), "member"),
        (score(scoreGiven=-1), "scoreGiven"),
        (score(scoreGiven="7"), "scoreGiven"),
        (score(scoreMaximum=None), "scoreMaximum must be present"),
        (score(scoreMaximum=0), "scoreMaximum"),
        (score(activityProgress="Done"), "activityProgress"),
        (score(activityProgress=None), "activityProgress"),
        (score(gradingProgress="Graded"), "gradingProgress"),
        (score(timestamp=None), "timestamp"),
        (score(stamp="2026-03-01T10:00:00.000"), "time zone"),
        (score(stamp="2026-03-01T10:00:00Z"), "sub-second"),
        (score(stamp="2026-13-01T10:00:00.000Z"), "timestamp"),
        (score(stamp="yesterday"), "timestamp"),
        (score(comment=5), "comment"),
        (score(scoringUserId=""), "scoringUserId"),
        (
            score(
                submission={
                    "startedAt": "2026-03-01T10:00:00.000Z",
                    "submittedAt": "2026-03-01T09:00:00.000Z",
                }
            ),
            "submittedAt",
        ),
        ('{"userId": "u-ada", "scoreGiven": NaN}', "JSON"),
        ("[1, 2]", "object"),
    ],
)
def test_score_refuses_a_bad_payload_with_the_reason(lms, body, why):
    auth = access_token(lms)
    item = new_lineitem(lms, auth)
    if isinstance(body, dict):
        body = {name: value for name, value in body.items() if value is not None}
    refused(post_score(item["id"], auth, body), 400, "invalid_request", why)
    (recorded,) = lms.scores("course-1")
    assert recorded["status"] == 400 and recorded["lineitem"] == item["id"]
    assert lms.results("course-1") == []


def test_score_not_later_than_the_last_is_refused_with_409(lms):
    auth = access_token(lms)
    item = new_lineitem(lms, auth)
    later = score(stamp="2026-03-01T11:00:00.400Z", scoreGiven=9)
    assert post_score(item["id"], auth, later).status_code == 200
    earlier = score(stamp="2026-03-01T11:00:00.399Z", scoreGiven=2)
    refused(post_score(item["id"], auth, earlier), 409, "conflict", "not later")
    refused(post_score(item["id"], auth, later), 409, "conflict")  # a replay
    # the same instant in another time zone is not later either; half a millisecond later is
    refused(
        post_score(item["id"], auth, score(stamp="2026-03-01T12:00:00.4+01:00")), 409, "conflict"
    )
    newest = score(stamp="2026-03-01T12:00:00.4005+01:00", scoreGiven=8, comment="well done")
    assert post_score(item["id"], auth, newest).status_code == 200
    # another user has a timeline of their own
    assert (
        post_score(item["id"], auth, score("u-bob", "2026-03-01T09:00:00.000Z")).status_code == 200
    )

    results = requests.get(
        item["id"] + "/results", headers=auth | {"Accept": MEDIA_RESULTS}, timeout=5
    )
    assert results.status_code == 200 and results.headers["Content-Type"] == MEDIA_RESULTS
    assert results.json() == lms.results("course-1")
    assert [(r["userId"], r["resultScore"], r["resultMaximum"]) for r in results.json()] == [
        ("u-ada", 8, 10),
        ("u-bob", 7, 10),
    ]
    assert results.json()[0]["comment"] == "well done"
    assert results.json()[0]["scoreOf"] == item["id"]
    ada = requests.get(
        item["id"] + "/results", params={"user_id": "u-ada"}, headers=auth, timeout=5
    )
    assert [r["userId"] for r in ada.json()] == ["u-ada"]

    posted = lms.scores("course-1")
    assert [(s["score"]["timestamp"], s["status"]) for s in posted] == [
        ("2026-03-01T11:00:00.400Z", 200),
        ("2026-03-01T11:00:00.399Z", 409),
        ("2026-03-01T11:00:00.400Z", 409),
        ("2026-03-01T12:00:00.4+01:00", 409),
        ("2026-03-01T12:00:00.4005+01:00", 200),
        ("2026-03-01T09:00:00.000Z", 200),
    ]
    assert all(s["lineitem"] == item["id"] for s in posted)
    assert len(lms.scores("course-1", accepted_only=True)) == 3


def test_results_rescale_to_the_lineitem_and_a_score_without_scoregiven_clears_it(lms):
    auth = access_token(lms)
    item = new_lineitem(lms, auth, scoreMaximum=20)
    assert post_score(item["id"], auth, score(scoreGiven=0.5, scoreMaximum=1)).status_code == 200
    assert [r["resultScore"] for r in lms.results("course-1")] == [10]
    cleared = score(stamp="2026-03-02T10:00:00.000Z", activityProgress="Initialized")
    cleared = {k: v for k, v in cleared.items() if k not in ("scoreGiven", "scoreMaximum")}
    cleared["gradingProgress"] = "NotReady"
    assert post_score(item["id"], auth, cleared).status_code == 200
    assert "resultScore" not in lms.results("course-1")[0]


def test_lineitem_urls_with_a_query_must_keep_it():
    with Platform(
        client_id=CLIENT,
        deployment_id="deployment-1",
        tool_login_url=LOGIN,
        tool_redirect_uris=[CALLBACK],
        tool_jwks=TOOL_JWKS,
        signing_key=PLATFORM_KEY,
        lineitem_query=True,
    ) as lms:
        lms.add_context("course-1", label="DP101", title="Differential privacy")
        lms.add_user("u-ada", roles=[LEARNER], contexts=["course-1"])
        auth = access_token(lms)
        item = new_lineitem(lms, auth)
        assert item["id"] == lms.lineitems_url("course-1") + "/1?client=course-tool"
        # appended to the whole URL, /scores lands in the query: a POST to the line item itself
        refused(post_score(item["id"], auth, score()), 405, "method_not_allowed", "/scores")
        path, query = item["id"].split("?")
        refused(post_score(path, auth, score()), 404, "not_found", "query")  # the query dropped
        reply = requests.post(
            f"{path}/scores?{query}",
            data=json.dumps(score()),
            headers=auth | {"Content-Type": MEDIA_SCORE},
            timeout=5,
        )
        assert reply.status_code == 200, reply.text
        assert lms.results("course-1")[0]["id"] == f"{path}/results?{query}&user_id=u-ada"


# -- outages and the log -------------------------------------------------------------------------


def test_outage_503_then_back(lms):
    auth = access_token(lms)
    lms.outage(True)
    reply = token_request(lms)
    refused(reply, 503, "temporarily_unavailable")
    assert reply.headers["Retry-After"] == "1"
    refused(
        requests.get(lms.lineitems_url("course-1"), headers=auth, timeout=5),
        503,
        "temporarily_unavailable",
    )
    assert requests.get(lms.jwks_url, timeout=5).status_code == 200  # the launch still works
    lms.outage(False)
    assert requests.get(lms.lineitems_url("course-1"), headers=auth, timeout=5).status_code == 200
    assert token_request(lms).status_code == 200


def test_outage_refuse_closes_connections_then_back(lms):
    auth = access_token(lms)
    lms.outage(True, mode="refuse")
    with pytest.raises(requests.ConnectionError):
        token_request(lms)
    with pytest.raises(requests.ConnectionError):
        requests.get(lms.lineitems_url("course-1"), headers=auth, timeout=5)
    assert requests.get(lms.jwks_url, timeout=5).status_code == 200
    lms.outage(False)
    assert requests.get(lms.lineitems_url("course-1"), headers=auth, timeout=5).status_code == 200
    assert lms.requests == [
        ("POST", "/token", 200),
        ("POST", "/token", None),
        ("GET", "/ags/course-1/lineitems", None),
        ("GET", "/jwks", 200),
        ("GET", "/ags/course-1/lineitems", 200),
    ]
    assert lms.tokens_issued == 1


def test_the_server_stops_with_the_context():
    with Platform(
        client_id=CLIENT,
        deployment_id="deployment-1",
        tool_login_url=LOGIN,
        tool_redirect_uris=[CALLBACK],
        tool_jwks=TOOL_JWKS,
        signing_key=PLATFORM_KEY,
    ) as lms:
        url = lms.jwks_url
        assert requests.get(url, timeout=5).status_code == 200
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=5)


def test_concurrent_scores_keep_one_timeline(lms):
    """Many posts at once, out of order: the result is the latest timestamp, whatever the order."""
    auth = access_token(lms)
    item = new_lineitem(lms, auth)
    stamps = [f"2026-03-01T10:00:{second:02d}.000Z" for second in range(20)]
    order = stamps[::2] + stamps[1::2]
    statuses: list[int] = []

    def send(stamp: str) -> None:
        statuses.append(post_score(item["id"], auth, score(stamp=stamp, comment=stamp)).status_code)

    threads = [threading.Thread(target=send, args=(stamp,)) for stamp in order]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(set(statuses)) in ([200], [200, 409]) and len(statuses) == len(stamps)
    assert lms.results("course-1")[0]["comment"] == stamps[-1]  # the latest can never be refused
    accepted = [s["score"]["timestamp"] for s in lms.scores("course-1", accepted_only=True)]
    assert accepted == sorted(set(accepted))  # each accepted one later than the one before
