"""Real Moodle works as the LTI 1.3 platform the hub needs -- proved without the hub.

A stub tool (a small HTTP server on a free port, with its own RSA key) is registered in Moodle
as an LTI 1.3 tool. A student logs in in Chromium and opens the activity; Moodle sends the OIDC
login initiation to the stub, the stub answers with the authentication request, Moodle posts
the id_token back, and the test checks its signature against Moodle's key set. Then, as the
tool, it gets an Assignment and Grade Services token with a client assertion signed by the
stub's key (which Moodle fetches from the stub's JWKS URL), posts a score on the activity's line
item and reads it back from Moodle's gradebook. The claims, URLs and timings are printed and
written to ``<workdir>/lti-report.json``.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import urllib.parse
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from playwright.sync_api import TimeoutError as PlaywrightTimeout

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
AGS_SCOPES = [
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
]
LOGIN_FIELDS = (
    "iss",
    "login_hint",
    "target_link_uri",
    "lti_message_hint",
    "client_id",
    "lti_deployment_id",
)
STUDENT, STUDENT_PASSWORD = "student1", "Student-pass-1!"


class StubTool:
    """The tool end of LTI 1.3, as little as proves the platform: OIDC login, launch, JWKS."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "stub-tool-key-1"
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.jwks = {"keys": [{**public, "kid": self.kid, "alg": "RS256", "use": "sig"}]}
        self.platform: dict | None = None  # what register_tool returned
        self.logins: list[dict] = []  # {"method", "params", "auth_request"}
        self.launches: list[dict] = []  # the form Moodle posted to the redirect URI
        self.jwks_fetches = 0
        self.launched = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.login_url = f"{self.base_url}/login"
        self.launch_url = f"{self.base_url}/launch"
        self.jwks_url = f"{self.base_url}/jwks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StubTool:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def private_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _params(self) -> dict:
                query = urllib.parse.urlsplit(self.path).query
                body = ""
                if self.command == "POST":
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                return {k: v[0] for k, v in urllib.parse.parse_qs(query + "&" + body).items()}

            def _send(
                self, status: int, body: bytes, content_type: str, headers: dict | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def _route(self) -> None:
                path = urllib.parse.urlsplit(self.path).path
                params = self._params()
                if path == "/jwks":
                    stub.jwks_fetches += 1
                    self._send(200, json.dumps(stub.jwks).encode(), "application/json")
                elif path == "/login":
                    assert stub.platform is not None
                    auth_request = {
                        "scope": "openid",
                        "response_type": "id_token",
                        "response_mode": "form_post",
                        "prompt": "none",
                        "client_id": stub.platform["client_id"],
                        "redirect_uri": stub.launch_url,
                        "login_hint": params.get("login_hint", ""),
                        "lti_message_hint": params.get("lti_message_hint", ""),
                        "state": secrets.token_urlsafe(16),
                        "nonce": secrets.token_urlsafe(16),
                    }
                    stub.logins.append(
                        {"method": self.command, "params": params, "auth_request": auth_request}
                    )
                    location = (
                        stub.platform["auth_url"] + "?" + urllib.parse.urlencode(auth_request)
                    )
                    self._send(302, b"", "text/plain", {"Location": location})
                elif path == "/launch" and self.command == "POST":
                    stub.launches.append(params)
                    stub.launched.set()
                    self._send(
                        200,
                        b"<!doctype html><title>stub tool</title><h1>Launched</h1>",
                        "text/html",
                    )
                else:
                    self._send(404, b"not found", "text/plain")

            do_GET = do_POST = _route

        return Handler

    def client_assertion(self, token_url: str) -> str:
        assert self.platform is not None
        now = int(time.time())
        claims = {
            "iss": self.platform["client_id"],
            "sub": self.platform["client_id"],
            "aud": token_url,
            "iat": now,
            "exp": now + 300,
            "jti": secrets.token_hex(16),
        }
        return jwt.encode(claims, self.private_pem, algorithm="RS256", headers={"kid": self.kid})


def _scores_url(lineitem: str) -> str:
    base, _, query = lineitem.partition("?")
    return f"{base}/scores" + (f"?{query}" if query else "")


def _results_url(lineitem: str) -> str:
    base, _, query = lineitem.partition("?")
    return f"{base}/results" + (f"?{query}" if query else "")


def _show(title: str, value) -> None:
    print(f"\n--- {title}\n{json.dumps(value, indent=2, sort_keys=True)}")


def test_moodle_is_an_lti13_platform_with_ags(moodle_site, chromium):
    site = moodle_site
    report: dict = {
        "moodle": site.source.release,
        "wwwroot": site.wwwroot,
        "timings": dict(site.timings),
    }
    with StubTool() as stub:
        # --- Moodle's side, as an admin and a teacher would set it up
        tool = site.register_tool(
            f"Stub tool {stub.base_url}",
            base_url=stub.base_url + "/",
            login_url=stub.login_url,
            redirect_uris=[stub.launch_url],
            jwks_url=stub.jwks_url,
            custom="assignment=pilot",
        )
        stub.platform = tool
        course = site.create_course("dp-lti-101", "Differential privacy (LTI test)")
        student = site.create_user(STUDENT, STUDENT_PASSWORD, "student", course=course)
        site.create_user("teacher1", "Teacher-pass-1!", "editingteacher", course=course)
        activity = site.add_activity(
            course, tool, "Pilot notebook", custom="notebook=01-pilot", grade_max=100
        )
        _show("registered tool", tool)
        _show("activity", activity)
        report.update(tool=tool, course=course, activity=activity)

        # --- the student opens the activity in Chromium
        context = chromium.new_context(viewport={"width": 1200, "height": 900})
        page = context.new_page()
        try:
            page.goto(site.login_url)
            page.fill("#username", STUDENT)
            page.fill("#password", STUDENT_PASSWORD)
            page.click("#loginbtn")
            page.wait_for_load_state()
            assert "/login/" not in page.url, f"the student's login failed: {page.url}"
            started = time.monotonic()
            # the tool opens in a new window (launch container "window"): view.php opens it itself,
            # and its "Open in new window" link is there if a popup blocker stopped that
            try:
                with context.expect_page(timeout=30_000) as opened:
                    page.goto(activity["view_url"])
            except PlaywrightTimeout:
                with context.expect_page(timeout=30_000) as opened:
                    page.click("a[target=_blank][href*='launch.php']")
            tool_window = opened.value
            assert stub.launched.wait(timeout=60), (
                f"Moodle never posted an id_token to the stub (logins seen: {stub.logins}); "
                f"the tool's window is at {tool_window.url}"
            )
            launch_seconds = time.monotonic() - started
            tool_window.wait_for_load_state()
            assert tool_window.url == stub.launch_url, tool_window.url
            assert "Launched" in tool_window.content()
            page.screenshot(path=str(site.workdir / "activity-page.png"))
            tool_window.screenshot(path=str(site.workdir / "tool-window.png"))
        finally:
            context.close()
        report["timings"]["launch"] = launch_seconds

        # --- the OIDC login initiation Moodle sent
        assert len(stub.logins) == 1, stub.logins
        login = stub.logins[0]
        _show(
            "OIDC login initiation (Moodle -> tool)", {"method": login["method"], **login["params"]}
        )
        assert login["method"] == "POST"
        for field in LOGIN_FIELDS:
            assert login["params"].get(field), (
                f"the login initiation has no {field}: {login['params']}"
            )
        assert login["params"]["iss"] == site.wwwroot
        assert login["params"]["client_id"] == tool["client_id"]
        assert login["params"]["lti_deployment_id"] == tool["deployment_id"]
        assert login["params"]["login_hint"] == str(student["id"])
        _show("authentication request (tool -> Moodle's auth URL)", login["auth_request"])

        # --- the id_token, checked against Moodle's key set
        posted = stub.launches[0]
        assert "error" not in posted, f"Moodle's auth.php answered an error: {posted}"
        assert posted.get("state") == login["auth_request"]["state"]
        id_token = posted["id_token"]
        header = jwt.get_unverified_header(id_token)
        signing_key = jwt.PyJWKClient(tool["keyset_url"]).get_signing_key_from_jwt(id_token)
        claims = jwt.decode(
            id_token,
            signing_key.key,
            algorithms=["RS256"],
            audience=tool["client_id"],
            issuer=tool["issuer"],
        )
        _show("id_token header", header)
        _show("id_token claims (signature verified with Moodle's key set)", claims)
        report.update(login_initiation=login, id_token_header=header, id_token_claims=claims)
        assert claims["nonce"] == login["auth_request"]["nonce"]
        assert claims[LTI + "message_type"] == "LtiResourceLinkRequest"
        assert claims[LTI + "version"] == "1.3.0"
        assert claims[LTI + "deployment_id"] == tool["deployment_id"]
        assert claims["sub"] == str(student["id"])
        assert LEARNER in claims[LTI + "roles"]
        assert claims[LTI + "context"]["id"] == str(course["id"])
        assert claims[LTI + "resource_link"]["id"] == str(activity["instance"])
        assert claims[LTI + "custom"]["assignment"] == "pilot"
        assert claims[LTI + "custom"]["notebook"] == "01-pilot"
        assert claims["email"] == student["email"]
        ags = claims[AGS_CLAIM]
        assert set(AGS_SCOPES) <= set(ags["scope"]), ags

        # --- the tool's side of AGS: a token from a client assertion (Moodle fetches our JWKS)
        fetches_before = stub.jwks_fetches
        token_response = requests.post(
            tool["token_url"],
            data={
                "grant_type": "client_credentials",
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": stub.client_assertion(tool["token_url"]),
                "scope": " ".join(AGS_SCOPES),
            },
            timeout=60,
        )
        assert token_response.status_code == 200, token_response.text
        token = token_response.json()
        _show("access token response", {**token, "access_token": token["access_token"][:6] + "..."})
        assert stub.jwks_fetches > fetches_before, "Moodle did not fetch the tool's key set"
        assert set(token["scope"].split()) == set(AGS_SCOPES)
        bearer = {"Authorization": f"Bearer {token['access_token']}"}

        # find the activity's line item (the claim names it; else look it up; else make one)
        lineitems = requests.get(
            ags["lineitems"],
            headers={**bearer, "Accept": "application/vnd.ims.lis.v2.lineitemcontainer+json"},
            timeout=60,
        )
        assert lineitems.status_code == 200, lineitems.text
        _show("line items (GET " + ags["lineitems"] + ")", lineitems.json())
        lineitem = ags.get("lineitem")
        if lineitem is None:
            link = claims[LTI + "resource_link"]["id"]
            found = [item for item in lineitems.json() if item.get("resourceLinkId") == link]
            if found:
                lineitem = found[0]["id"]
            else:
                made = requests.post(
                    ags["lineitems"],
                    headers={**bearer, "Content-Type": "application/vnd.ims.lis.v2.lineitem+json"},
                    json={"scoreMaximum": 100, "label": "Pilot notebook", "resourceLinkId": link},
                    timeout=60,
                )
                assert made.status_code in (200, 201), made.text
                lineitem = made.json()["id"]
        score = {
            "userId": claims["sub"],
            "scoreGiven": 8.5,
            "scoreMaximum": 10,
            "activityProgress": "Completed",
            "gradingProgress": "FullyGraded",
            "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "comment": "graded by the stub tool",
        }
        posted_score = requests.post(
            _scores_url(lineitem),
            headers={**bearer, "Content-Type": "application/vnd.ims.lis.v1.score+json"},
            data=json.dumps(score),
            timeout=60,
        )
        _show(f"score POST {_scores_url(lineitem)} -> {posted_score.status_code}", score)
        assert posted_score.status_code in (200, 201, 204), posted_score.text
        results = requests.get(
            _results_url(lineitem),
            headers={**bearer, "Accept": "application/vnd.ims.lis.v2.resultcontainer+json"},
            timeout=60,
        )
        assert results.status_code == 200, results.text
        _show("results (GET " + _results_url(lineitem) + ")", results.json())

        # --- and Moodle's gradebook has it: 8.5 / 10 of an activity out of 100
        grades = site.grades_of(STUDENT, activity)
        _show("Moodle's gradebook", grades)
        assert site.grade_of(STUDENT, activity) == 85.0
        report.update(
            ags={"lineitems": ags["lineitems"], "lineitem": lineitem, "scope": ags["scope"]},
            token_url=tool["token_url"],
            score=score,
            results=results.json(),
            gradebook=grades,
            jwks_fetches=stub.jwks_fetches,
        )
    timings = report["timings"]
    install = (
        f"install {timings['install'] / 60:.1f} min" if "install" in timings else "reused install"
    )
    print(
        f"\nmoodle-site timings: {install}, server start {timings.get('start', 0):.1f} s, "
        f"launch {launch_seconds:.1f} s (opening the activity -> id_token at the tool)"
    )
    (site.workdir / "lti-report.json").write_text(
        json.dumps(report, indent=2, sort_keys=True, default=str)
    )
