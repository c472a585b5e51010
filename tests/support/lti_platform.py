"""A minimal LTI 1.3 platform (an LMS) for the tests: launches, and the Assignment and Grade Services.

The course's JupyterHub is an LTI 1.3 *tool* (JupyterHub's ltiauthenticator for the launch, PyJWT for
the grade service's client assertions). Its tests launch from, and post grades to, this *platform*.
It is built on another JOSE library, joserfc, so that a mistake in the tool's JWT handling is not
repeated here and hidden; it imports nothing from the tool side (no PyJWT, no ltiauthenticator, no
coursetools).

Standards it follows (and the section each check comes from):

- IMS LTI 1.3 Core, https://www.imsglobal.org/spec/lti/v1p3/ : the resource link launch message and
  its claims (message_type, version, deployment_id, target_link_uri, resource_link, roles, context,
  custom, tool_platform, launch_presentation), the lis v2 role vocabulary
  (http://purl.imsglobal.org/vocab/lis/v2/membership#...).
- IMS Security Framework 1.0, https://www.imsglobal.org/spec/security/v1p0/ : the OpenID Connect
  launch flow (§5.1.1), its "Step 1: Third-party Initiated Login" (iss, login_hint,
  target_link_uri, lti_message_hint, lti_deployment_id, client_id), "Step 2: Authentication
  Request" (scope=openid, response_type=id_token, response_mode=form_post, prompt=none, client_id,
  redirect_uri, login_hint, lti_message_hint, nonce, state) and "Step 3: Authentication Response"
  (a form_post of id_token and state; the ID token's iss/sub/aud/azp/exp/iat/nonce as in OpenID
  Connect Core 1.0 §2, https://openid.net/specs/openid-connect-core-1_0.html); the client
  credentials grant with a signed JWT client assertion (§4.1, after RFC 7523 §2.2 and §3,
  https://www.rfc-editor.org/rfc/rfc7523); key sets whose keys have a ``kid`` (§6.3).
- OAuth 2.0, RFC 6749 §4.4 and §5.1-5.2 (https://www.rfc-editor.org/rfc/rfc6749): the token
  response and the error codes invalid_request, invalid_client, invalid_grant, invalid_scope,
  unsupported_grant_type; bearer tokens, RFC 6750 §3 (https://www.rfc-editor.org/rfc/rfc6750):
  401 with ``WWW-Authenticate: Bearer`` for a missing, unknown or expired token (error
  invalid_token), 403 insufficient_scope.
- LTI Assignment and Grade Services 2.0, https://www.imsglobal.org/spec/lti-ags/v2p0/ : the
  endpoint claim (§3.1), the line item service and its filters (§3.2, §3.2.4), the result service
  (§3.3), the score publish service (§3.4), their scopes and media types
  (application/vnd.ims.lis.v2.lineitemcontainer+json, application/vnd.ims.lis.v2.lineitem+json,
  application/vnd.ims.lis.v1.score+json, application/vnd.ims.lis.v2.resultcontainer+json).

Use::

    from lti_platform import Platform, LEARNER, INSTRUCTOR, TA

    with Platform(client_id="course-tool", deployment_id="deployment-1",
                  tool_login_url="http://127.0.0.1:8000/hub/lti13/oauth_login",
                  tool_redirect_uris=["http://127.0.0.1:8000/hub/lti13/oauth_callback"],
                  tool_jwks_url="http://127.0.0.1:8000/services/course-lti/jwks") as lms:
        lms.add_context("course-1", label="DP101", title="Differential privacy")
        lms.add_user("u-ada", roles=[LEARNER], name="Ada Lovelace", email="ada@example.org",
                     contexts=["course-1"])
        lms.add_link("link-pilot", context="course-1", title="Pilot",
                     target_link_uri="http://127.0.0.1:8000/hub/", custom={"assignment": "pilot"})
        page = lms.launch_url("u-ada", "link-pilot")   # open it in a browser
        ...
        lms.scores("course-1")                           # what the tool posted

The server (``lms.url``, the issuer) listens on a free port of 127.0.0.1 in a background thread
and stops when the ``with`` block ends. Endpoints:

``GET /jwks``
    The platform's public key set: one RSA key (RS256, ``kid`` = its RFC 7638 thumbprint),
    generated at start (or passed as ``signing_key``).
``GET /launch?user=&link=``  (:meth:`Platform.launch_url`)
    Signs the user into the platform (a session cookie, ``lti_platform_<port>``) and starts the
    third-party-initiated login at ``tool_login_url``: an auto-submitting form POST, with a visible
    Continue button and a ``<noscript>`` note.
``GET|POST /auth``
    The OIDC authentication request. Checked: scope contains openid, response_type=id_token,
    client_id registered, redirect_uri one of ``tool_redirect_uris`` (exact string), response_mode
    =form_post, prompt=none, nonce and state present, login_hint = the user of the session cookie
    (403 when not signed in or another user), lti_message_hint = a link of a context of that user.
    Answer: an auto-submitting form POST of ``id_token`` and ``state`` to redirect_uri.
``POST /token``
    Client credentials with a JWT client assertion. Checked: form-encoded, no repeated parameter,
    grant_type=client_credentials (else unsupported_grant_type), client_assertion_type =
    urn:ietf:params:oauth:client-assertion-type:jwt-bearer, one client authentication method only;
    the assertion: alg RS256/RS384/RS512 (never none or HMAC), a ``kid`` that names a key of the
    tool's key set (``tool_jwks``, or fetched from ``tool_jwks_url``, fetched again when the kid is
    unknown: key rotation), a valid signature, iss == sub == client_id, aud (a string or a list)
    containing the token URL, exp in the future, iat and nbf not in the future (10 s leeway), a
    jti never seen before; scope: a space-separated subset of the scopes granted to the tool
    (``scopes``). Assertion failures are ``invalid_client`` (RFC 7523 §3.2: the assertion is the
    client's authentication); token errors are HTTP 400 (RFC 6749 §5.2; 405 for another method,
    503 in an outage).
``/ags/<context>/lineitems[/<n>[/scores|/results]]``
    The AGS endpoints, with ``Authorization: Bearer``: lineitems GET (scope lineitem or
    lineitem.readonly; filters resource_link_id, resource_id, tag, limit with a ``Link: rel="next"``
    header) and POST (lineitem); a line item GET (lineitem or lineitem.readonly), PUT and DELETE
    (lineitem); scores POST (score); results GET (result.readonly; filters user_id, limit).
    ``Accept`` (when sent) and ``Content-Type`` must name the AGS media type (406, 415). Line
    item ids are ``<lineitems URL>/<n>``, n = 1, 2, ... in creation order; with
    ``lineitem_query=True`` they carry a query (``?client=<client_id>``, as Moodle's do) that the
    tool must keep when it appends ``/scores`` or ``/results`` (AGS §3.3.1, §3.4.1): a URL without
    it is 404.

What a score must be (AGS §3.4): a JSON object; userId a member of the line item's context;
scoreGiven, when present and not null, a finite number >= 0, and then scoreMaximum a number > 0
(§3.4.4); activityProgress in Initialized, Started, InProgress, Submitted, Completed (§3.4.7);
gradingProgress in FullyGraded, Pending, PendingManual, Failed, NotReady (§3.4.8); timestamp an
ISO 8601 date-time with sub-second precision and a time zone designator (§3.4.9); comment a string
(§3.4.11); scoringUserId a non-empty string (§3.4.6); submission.startedAt/submittedAt ISO 8601
with a time zone, submittedAt not before startedAt (§3.4.10). A refused score answers 400 with the
reason. Ordering, AGS §3.4.9: "The timestamp MUST be present and indicate when the score was
changed; it is intended to be used by the platform as a way to guard against out of order score
updates ... A tool MUST NOT send multiple score updates of the same (line item, user) with the same
timestamp. The platform MUST NOT update a result if the last timestamp on record is later than the
incoming score update." So a score whose timestamp is not later than the last accepted one for
that (line item, user) is refused with 409 Conflict (as Moodle's gradebook services do): a
replayed or reordered post never overwrites a newer score, and the tool is told. Timestamps are
compared exactly (as instants, across time zones, to any sub-second precision).

Results (AGS §3.3): the latest accepted score per user, rescaled to the line item's scoreMaximum
(resultScore = scoreGiven * lineitem.scoreMaximum / score.scoreMaximum, resultMaximum =
lineitem.scoreMaximum, §3.4.4); no resultScore when the latest score has no scoreGiven.

Every refusal is an HTTP 4xx with a JSON body ``{"error": <code>, "error_description": <why>}``.

Left out, on purpose: deep linking, names and roles (NRPS), submission review; the ``lineitem``
claim only when a link has exactly one line item bound to it (AGS §3.1); /auth answers its errors
itself (4xx JSON) instead of returning them to the tool by form_post as OpenID Connect allows for
some (login_required, ...), so that a test sees why; the nonce of an id_token is not checked for
reuse (the tool's duty); a client assertion's exp far in the future or iat far in the past (RFC 7523
§3 items 4 and 6: "may reject") is accepted; no HTTPS (Security Framework §3 requires TLS: these
are loopback tests); the platform's own key never rotates; one tool, one deployment.
"""

from __future__ import annotations

import base64
import calendar
import datetime
import html
import json
import math
import re
import secrets
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from http import cookies
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey

__all__ = [
    "AGS_CLAIM",
    "AGS_SCOPES",
    "CLIENT_ASSERTION_TYPE",
    "CONTENT_DEVELOPER",
    "COURSE_OFFERING",
    "INSTRUCTOR",
    "LEARNER",
    "LTI_CLAIM",
    "MEDIA_LINEITEM",
    "MEDIA_LINEITEMS",
    "MEDIA_RESULTS",
    "MEDIA_SCORE",
    "MENTOR",
    "Platform",
    "SCOPE_LINEITEM",
    "SCOPE_LINEITEM_READONLY",
    "SCOPE_RESULT_READONLY",
    "SCOPE_SCORE",
    "TA",
]

# Roles: the context (membership) roles of the lis v2 vocabulary (LTI 1.3 Core, appendix A.2.3).
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
#: a sub-role of Instructor (Core A.2.3.1); a platform by best practice also sends the principal
#: role, which a test does by passing ``roles=[TA, INSTRUCTOR]``
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
MENTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"
CONTENT_DEVELOPER = "http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper"
COURSE_OFFERING = "http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"

LTI_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
SCOPE_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCOPE_LINEITEM_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
SCOPE_RESULT_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
#: every AGS scope (AGS §3.2, §3.3.2, §3.4.2)
AGS_SCOPES = (SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY, SCOPE_RESULT_READONLY, SCOPE_SCORE)
#: what a tool is granted unless ``scopes=`` says otherwise (and what the launch's claim lists)
DEFAULT_SCOPES = (SCOPE_LINEITEM, SCOPE_RESULT_READONLY, SCOPE_SCORE)
MEDIA_LINEITEM = "application/vnd.ims.lis.v2.lineitem+json"
MEDIA_LINEITEMS = "application/vnd.ims.lis.v2.lineitemcontainer+json"
MEDIA_SCORE = "application/vnd.ims.lis.v1.score+json"
MEDIA_RESULTS = "application/vnd.ims.lis.v2.resultcontainer+json"
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

ACTIVITY_PROGRESS = ("Initialized", "Started", "InProgress", "Submitted", "Completed")
GRADING_PROGRESS = ("FullyGraded", "Pending", "PendingManual", "Failed", "NotReady")
#: the LTI claims an ``id_token(...)`` override may name by their last word (``roles=...``)
_SHORT_CLAIMS = {
    name: LTI_CLAIM + name
    for name in (
        "message_type",
        "version",
        "deployment_id",
        "target_link_uri",
        "resource_link",
        "roles",
        "context",
        "custom",
        "tool_platform",
        "launch_presentation",
        "lis",
        "role_scope_mentor",
    )
} | {"ags_endpoint": AGS_CLAIM}
_ASSERTION_ALGORITHMS = ("RS256", "RS384", "RS512")
ID_TOKEN_LIFETIME = 300
#: clock skew allowed on a client assertion's exp, iat and nbf (RFC 7523 §3 items 4-6)
LEEWAY = 10
_KEEP = object()


class _Refusal(Exception):
    """A request refused: the status, an error code and why."""

    def __init__(
        self, status: int, error: str, description: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description
        self.headers = dict(headers or {})


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _User:
    id: str
    roles: list[str]
    name: str | None
    given_name: str | None
    family_name: str | None
    email: str | None
    contexts: list[str]


@dataclass
class _Link:
    id: str
    context: str
    title: str
    target_link_uri: str
    custom: dict[str, Any]


def _json_reply(status: int, obj: Any, media: str = "application/json", **headers: str) -> _Reply:
    return _Reply(status, json.dumps(obj).encode(), {"Content-Type": media, **headers})


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_ISO_8601 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}(?::?\d{2})?)\Z"
)


def _instant(value: Any, name: str, *, subsecond: bool) -> Fraction:
    """``value`` (an ISO 8601 date-time with a time zone designator) as exact seconds since 1970 UTC."""
    where = f"{name} must be an ISO 8601 date-time with a time zone designator"
    if not isinstance(value, str):
        raise _Refusal(400, "invalid_request", f"{where}, not {value!r}")
    match = _ISO_8601.match(value)
    if match is None:
        raise _Refusal(400, "invalid_request", f"{where}, not {value!r}")
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    fraction, zone = match[7], match[8]
    if subsecond and fraction is None:
        raise _Refusal(
            400,
            "invalid_request",
            f"{name} must have sub-second precision (AGS §3.4.9), not {value!r}",
        )
    offset = 0
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        zone_hours, zone_minutes = int(digits[:2]), int(digits[2:] or 0)
        if zone_hours > 23 or zone_minutes > 59:
            raise _Refusal(400, "invalid_request", f"{where}, not {value!r}")
        offset = (zone_hours * 60 + zone_minutes) * 60 * (1 if zone[0] == "+" else -1)
    try:
        datetime.datetime(year, month, day, hour, minute, second)  # the ranges: month 13, second 60
    except ValueError:
        raise _Refusal(400, "invalid_request", f"{where}, not {value!r}") from None
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) - offset
    return Fraction(seconds) + (Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0)


def _media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


def _check_accept(headers: Mapping[str, str], media: str) -> None:
    """The request's ``Accept`` (when sent) must allow ``media`` (406 otherwise)."""
    accept = headers.get("Accept")
    if not accept:
        return
    offered = {_media_type(part) for part in accept.split(",")}
    if offered & {media, "*/*", "application/*"}:
        return
    raise _Refusal(406, "not_acceptable", f"this endpoint answers {media}; Accept was {accept!r}")


def _check_content_type(
    headers: Mapping[str, str], media: str, status: int = 415, error: str = "unsupported_media_type"
) -> None:
    sent = headers.get("Content-Type")
    if _media_type(sent) != media:
        raise _Refusal(status, error, f"Content-Type must be {media}, not {sent!r}")


def _parse_json_object(body: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise _Refusal(400, "invalid_request", f"the {what} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise _Refusal(400, "invalid_request", f"the {what} must be a JSON object")
    return value


def _single_params(text: str, what: str) -> dict[str, str]:
    """Form or query parameters, each at most once (RFC 6749 §3.1, §3.2: no repeated parameter)."""
    params: dict[str, str] = {}
    for name, value in urllib.parse.parse_qsl(text, keep_blank_values=True):
        if name in params:
            raise _Refusal(400, "invalid_request", f"the {what} repeats the parameter {name!r}")
        params[name] = value
    return params


def _page(title: str, text: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n</head>\n<body>\n<main>\n{text}\n</main>\n"
        "</body>\n</html>\n"
    )


def _autopost_page(title: str, action: str, fields: Mapping[str, str]) -> str:
    """A page that POSTs ``fields`` to ``action`` at once, or on a click without JavaScript."""
    inputs = "\n".join(
        f'<input type="hidden" name="{html.escape(name)}" value="{html.escape(value)}">'
        for name, value in fields.items()
    )
    return _page(
        title,
        f"<h1>{html.escape(title)}</h1>\n"
        f'<form id="lti-autopost" method="post" action="{html.escape(action)}">\n{inputs}\n'
        "<noscript><p>JavaScript is turned off: press Continue to go on.</p></noscript>\n"
        '<button type="submit">Continue</button>\n</form>\n'
        '<script>document.getElementById("lti-autopost").submit();</script>',
    )


class Platform:
    """An LTI 1.3 platform with one registered tool (one client_id, one deployment).

    ``tool_jwks_url`` (fetched when a kid is needed) or ``tool_jwks`` (a JWK set dict) is the
    tool's public key set, for its client assertions. ``scopes``: the AGS scopes granted to the
    tool (default lineitem, result.readonly, score), listed in the launch's AGS claim.
    ``signing_key``: a joserfc RSAKey to sign with instead of generating one (tests that start many
    platforms save the ~0.1 s of a key generation). ``token_lifetime``: seconds an access token
    lives (``expires_in``). ``lineitem_query``: line item URLs carry a query string (see the module
    docstring). ``name``, ``guid``: the tool_platform claim.

    Beyond launching and grading: :meth:`add_lineitem` (a line item the platform made, as an
    instructor would), ``add_link(score_maximum=...)`` (a line item bound to the link: the
    launch's AGS claim then carries its ``lineitem`` URL), :meth:`launch_params`,
    :meth:`lineitems_url`, :meth:`results`, :meth:`expire_tokens`, ``jwks_fetches``, ``key``,
    :meth:`start` and :meth:`stop` (what ``with`` does; the URLs exist once started).
    """

    def __init__(
        self,
        *,
        client_id: str,
        deployment_id: str,
        tool_login_url: str,
        tool_redirect_uris: Iterable[str],
        tool_jwks_url: str | None = None,
        tool_jwks: Mapping[str, Any] | None = None,
        scopes: Iterable[str] = DEFAULT_SCOPES,
        signing_key: RSAKey | None = None,
        token_lifetime: int = 3600,
        lineitem_query: bool = False,
        name: str = "dplib test LMS",
        guid: str = "dplib-test-lms",
        host: str = "127.0.0.1",
    ) -> None:
        self.client_id = client_id
        self.deployment_id = deployment_id
        self.tool_login_url = tool_login_url
        self.tool_redirect_uris = list(tool_redirect_uris)
        self.tool_jwks_url = tool_jwks_url
        self.scopes = list(scopes)
        unknown = [scope for scope in self.scopes if scope not in AGS_SCOPES]
        if unknown:
            raise ValueError(f"not AGS scopes: {unknown}")
        self.token_lifetime = token_lifetime
        self.lineitem_query = lineitem_query
        self.platform_name = name
        self.guid = guid
        if signing_key is None:
            signing_key = RSAKey.generate_key(2048, private=True)
        if not signing_key.is_private:
            raise ValueError("signing_key must be a private RSA key")
        kid = signing_key.kid or signing_key.thumbprint()
        # built on the key's cryptography object: importing a private key again checks it (slow)
        raw = signing_key.raw_value
        #: the platform's private signing key (joserfc RSAKey)
        self.key = RSAKey(raw, raw, {"kid": kid, "use": "sig", "alg": "RS256"})
        # the same key without its "alg", to sign with another RSA algorithm (id_token(alg=...))
        self._bare_key = RSAKey(raw, raw, {"kid": kid})
        self._tool_keys: KeySet | None = None
        if tool_jwks is not None:
            keys = list(tool_jwks.get("keys") or [])
            self._tool_keys = KeySet.import_key_set({"keys": keys}) if keys else KeySet([])
        self._static_tool_keys = tool_jwks is not None

        self._lock = threading.RLock()
        self._fetch_lock = threading.Lock()
        self._contexts: dict[str, dict[str, str]] = {}
        self._users: dict[str, _User] = {}
        self._links: dict[str, _Link] = {}
        self._sessions: dict[str, str] = {}
        self._lineitems: dict[int, dict[str, Any]] = {}  # n -> {"context": ..., "item": {...}}
        self._next_lineitem = 1
        self._scores: list[dict[str, Any]] = []
        self._latest: dict[tuple[int, str], tuple[Fraction, dict[str, Any]]] = {}
        self._tokens: dict[str, dict[str, Any]] = {}
        self._jtis: dict[str, float] = {}
        self._requests: list[tuple[str, str, int | None]] = []
        self._outage: str | None = None
        self.tokens_issued = 0
        #: how many times the tool's key set was fetched from tool_jwks_url
        self.jwks_fetches = 0

        self._host = host
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- life --------------------------------------------------------------------------------

    def start(self) -> Platform:
        """Listen on a free port in a background thread (``with Platform(...)`` calls this)."""
        if self._server is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"platform": self})
        server = _Server((self._host, 0), handler)
        server.daemon_threads = True
        self._server = server
        self.url = f"http://{self._host}:{server.server_address[1]}"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the server and close its port."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Platform:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def issuer(self) -> str:
        return self.url

    @property
    def auth_url(self) -> str:
        return self.url + "/auth"

    @property
    def token_url(self) -> str:
        return self.url + "/token"

    @property
    def jwks_url(self) -> str:
        return self.url + "/jwks"

    @property
    def cookie_name(self) -> str:
        """The platform's session cookie (per port: cookies do not tell ports apart)."""
        return f"lti_platform_{self.url.rsplit(':', 1)[-1]}"

    def lineitems_url(self, context: str) -> str:
        """The context's line item container (the AGS claim's ``lineitems``)."""
        return f"{self.url}/ags/{urllib.parse.quote(context, safe='')}/lineitems"

    # -- the course --------------------------------------------------------------------------

    def add_context(self, context_id: str, *, label: str, title: str) -> None:
        with self._lock:
            self._contexts[context_id] = {"id": context_id, "label": label, "title": title}

    def add_user(
        self,
        user_id: str,
        *,
        roles: Iterable[str],
        name: str | None = None,
        email: str | None = None,
        contexts: Iterable[str] = (),
        given_name: str | None = None,
        family_name: str | None = None,
    ) -> None:
        """A user (``sub`` in launches) with context ``roles`` in each of ``contexts``.

        given_name and family_name default to the first word of ``name`` and the rest.
        """
        contexts = list(contexts)
        with self._lock:
            missing = [c for c in contexts if c not in self._contexts]
            if missing:
                raise KeyError(f"no context {missing}: add_context first")
            words = (name or "").split(maxsplit=1)
            if given_name is None and words:
                given_name = words[0]
            if family_name is None and len(words) > 1:
                family_name = words[1]
            self._users[user_id] = _User(
                user_id, list(roles), name, given_name, family_name, email, contexts
            )

    def add_link(
        self,
        link_id: str,
        *,
        context: str,
        title: str,
        target_link_uri: str,
        custom: Mapping[str, Any] | None = None,
        score_maximum: float | None = None,
    ) -> None:
        """A resource link in ``context``. With ``score_maximum``, the platform also makes a line
        item bound to it (label = title, resourceLinkId = link_id): the declarative model of
        AGS §4.3.1, whose launches carry that ``lineitem`` URL in the AGS claim."""
        with self._lock:
            if context not in self._contexts:
                raise KeyError(f"no context {context!r}: add_context first")
            self._links[link_id] = _Link(
                link_id, context, title, target_link_uri, dict(custom or {})
            )
        if score_maximum is not None:
            self.add_lineitem(
                context, label=title, score_maximum=score_maximum, resource_link_id=link_id
            )

    def add_lineitem(
        self,
        context: str,
        *,
        label: str,
        score_maximum: float,
        resource_id: str | None = None,
        tag: str | None = None,
        resource_link_id: str | None = None,
    ) -> str:
        """A line item made on the platform's side; returns its id (URL)."""
        item: dict[str, Any] = {"label": label, "scoreMaximum": score_maximum}
        if resource_id is not None:
            item["resourceId"] = resource_id
        if tag is not None:
            item["tag"] = tag
        if resource_link_id is not None:
            item["resourceLinkId"] = resource_link_id
        with self._lock:
            if context not in self._contexts:
                raise KeyError(f"no context {context!r}")
            number = self._store_lineitem(context, item)
            return self._lineitem_id(context, number)

    # -- launching ---------------------------------------------------------------------------

    def launch_url(self, user: str, link: str) -> str:
        """The page that signs ``user`` into the platform and launches ``link`` at the tool."""
        self._member_link(user, link)
        query = urllib.parse.urlencode({"user": user, "link": link})
        return f"{self.url}/launch?{query}"

    def launch_params(self, user: str, link: str) -> dict[str, str]:
        """The third-party-initiated login's parameters (Security Framework §5.1.1) that the
        launch page POSTs to ``tool_login_url``."""
        found = self._member_link(user, link)
        return {
            "iss": self.url,
            "login_hint": user,
            "target_link_uri": found.target_link_uri,
            "lti_message_hint": link,
            "client_id": self.client_id,
            "lti_deployment_id": self.deployment_id,
        }

    def id_token(
        self,
        user: str,
        link: str,
        nonce: str = "nonce",
        *,
        key: Any = None,
        kid: Any = _KEEP,
        alg: str | None = None,
        header: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> str:
        """A signed id_token for ``user`` launching ``link``, as /auth makes it.

        ``overrides``: claims to replace, by their full name (``**{"https://...": v}``), their
        standard name (``iss=``, ``aud=``, ``exp=``, ``nonce=``...) or, for the LTI claims, the last
        word of their name (``roles=``, ``deployment_id=``, ``message_type=``, ``context=``...;
        ``ags_endpoint=`` for the AGS claim); the value None removes the claim. ``key``: another
        joserfc key to sign with (a forgery: the header still names the platform's kid unless
        ``kid=`` says otherwise; ``kid=None`` leaves it out). ``alg``: the header's algorithm
        (``"none"`` makes an unsigned token). ``header``: further header fields.
        """
        claims = self._claims(user, link, nonce)
        for name, value in overrides.items():
            name = _SHORT_CLAIMS.get(name, name)
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        jose_header: dict[str, Any] = {"alg": alg or "RS256", "kid": self.key.kid}
        if kid is not _KEEP:
            jose_header.pop("kid")
            if kid is not None:
                jose_header["kid"] = kid
        jose_header.update(header or {})
        if key is None:
            key = self.key if jose_header["alg"] == "RS256" else self._bare_key
        return self._sign(claims, jose_header, key)

    # -- what happened -----------------------------------------------------------------------

    def lineitems(self, context: str) -> list[dict[str, Any]]:
        """The context's line items, as the AGS container returns them."""
        with self._lock:
            return [
                self._render_lineitem(number)
                for number, stored in sorted(self._lineitems.items())
                if stored["context"] == context
            ]

    def scores(self, context: str, *, accepted_only: bool = False) -> list[dict[str, Any]]:
        """Every score posted (by an authorised tool, to a line item of ``context``), in order:
        ``{"lineitem": <its id URL>, "status": <HTTP status answered>, "score": <the body as
        received: a dict, or the raw text when it was not a JSON object>}``; ``accepted_only``
        keeps the ones answered 200."""
        with self._lock:
            return [
                json.loads(json.dumps(record["public"]))
                for record in self._scores
                if record["context"] == context
                and (not accepted_only or record["public"]["status"] == 200)
            ]

    def results(self, context: str) -> list[dict[str, Any]]:
        """The results of every line item of ``context``, as the AGS result service returns them."""
        with self._lock:
            return [
                result
                for number, stored in sorted(self._lineitems.items())
                if stored["context"] == context
                for result in self._results_of(number)
            ]

    @property
    def requests(self) -> list[tuple[str, str, int | None]]:
        """``(method, path, status)`` of each request answered, in order; the path has no query;
        status None: the connection was closed unanswered (``outage(True, mode="refuse")``)."""
        with self._lock:
            return list(self._requests)

    def outage(self, on: bool = True, *, mode: str = "503") -> None:
        """Make /token and the AGS endpoints unavailable until ``outage(False)``: ``mode="503"``
        answers 503 Service Unavailable (``Retry-After: 1``); ``mode="refuse"`` closes each
        connection without an answer. /jwks, /launch and /auth stay up."""
        if mode not in ("503", "refuse"):
            raise ValueError(f"mode is '503' or 'refuse', not {mode!r}")
        with self._lock:
            self._outage = mode if on else None

    def expire_tokens(self) -> None:
        """Every access token issued so far expires now (the next AGS call with it is 401)."""
        with self._lock:
            for token in self._tokens.values():
                token["expires"] = 0.0

    # -- internals: the course -----------------------------------------------------------------

    def _member_link(self, user: str, link: str) -> _Link:
        with self._lock:
            if user not in self._users:
                raise KeyError(f"no user {user!r}")
            if link not in self._links:
                raise KeyError(f"no link {link!r}")
            found = self._links[link]
            if found.context not in self._users[user].contexts:
                raise KeyError(f"user {user!r} is not in the context of link {link!r}")
            return found

    def _claims(self, user: str, link: str, nonce: str) -> dict[str, Any]:
        with self._lock:
            found = self._member_link(user, link)
            person = self._users[user]
            context = self._contexts[found.context]
            now = int(time.time())
            claims: dict[str, Any] = {
                "iss": self.url,
                "sub": user,
                "aud": self.client_id,
                "azp": self.client_id,
                "exp": now + ID_TOKEN_LIFETIME,
                "iat": now,
                "nonce": nonce,
            }
            for claim in ("name", "given_name", "family_name", "email"):
                if getattr(person, claim) is not None:
                    claims[claim] = getattr(person, claim)
            claims |= {
                LTI_CLAIM + "message_type": "LtiResourceLinkRequest",
                LTI_CLAIM + "version": "1.3.0",
                LTI_CLAIM + "deployment_id": self.deployment_id,
                LTI_CLAIM + "target_link_uri": found.target_link_uri,
                LTI_CLAIM + "resource_link": {"id": found.id, "title": found.title},
                LTI_CLAIM + "roles": list(person.roles),
                LTI_CLAIM + "context": {
                    "id": context["id"],
                    "label": context["label"],
                    "title": context["title"],
                    "type": [COURSE_OFFERING],
                },
                LTI_CLAIM + "tool_platform": {
                    "guid": self.guid,
                    "name": self.platform_name,
                    "product_family_code": "dplib-test-lms",
                    "version": "1.0",
                },
                LTI_CLAIM + "launch_presentation": {
                    "document_target": "window",
                    "locale": "en",
                    "return_url": f"{self.url}/return?"
                    + urllib.parse.urlencode({"context": found.context}),
                },
            }
            if found.custom:
                claims[LTI_CLAIM + "custom"] = dict(found.custom)
            endpoint: dict[str, Any] = {
                "scope": list(self.scopes),
                "lineitems": self.lineitems_url(found.context),
            }
            bound = [
                number
                for number, stored in sorted(self._lineitems.items())
                if stored["context"] == found.context
                and stored["item"].get("resourceLinkId") == found.id
            ]
            if len(bound) == 1:  # AGS §3.1: one and only one line item
                endpoint["lineitem"] = self._lineitem_id(found.context, bound[0])
            claims[AGS_CLAIM] = endpoint
            return claims

    def _sign(self, claims: Mapping[str, Any], header: Mapping[str, Any], key: Any) -> str:
        if header.get("alg") == "none":
            head = _b64url(json.dumps(dict(header)).encode())
            return f"{head}.{_b64url(json.dumps(dict(claims)).encode())}."
        return jwt.encode(dict(header), dict(claims), key, algorithms=[header["alg"]])

    # -- internals: HTTP -------------------------------------------------------------------------

    def _record(self, method: str, path: str, status: int | None) -> None:
        with self._lock:
            self._requests.append((method, path, status))

    def _refusing(self, path: str) -> bool:
        with self._lock:
            return self._outage == "refuse" and _in_outage(path)

    def _dispatch(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> _Reply:
        try:
            with self._lock:
                outage = self._outage
            if outage == "503" and _in_outage(path):
                raise _Refusal(
                    503,
                    "temporarily_unavailable",
                    "the platform is down for maintenance (outage)",
                    {"Retry-After": "1"},
                )
            if path == "/jwks":
                self._only(method, "GET")
                return _json_reply(200, {"keys": [self.key.as_dict(private=False)]})
            if path == "/launch":
                self._only(method, "GET")
                return self._launch(query)
            if path == "/auth":
                self._only(method, "GET", "POST")
                return self._auth(method, query, headers, body)
            if path == "/token":
                self._only(method, "POST")
                return self._token(headers, body)
            if path == "/return":
                self._only(method, "GET")
                return _Reply(
                    200,
                    _page("Back on the platform", "<h1>Back on the platform</h1>").encode(),
                    {"Content-Type": "text/html; charset=utf-8"},
                )
            if path.startswith("/ags/"):
                return self._ags(method, path, query, headers, body)
            raise _Refusal(404, "not_found", f"no endpoint {path}")
        except _Refusal as refusal:
            reply = _json_reply(
                refusal.status,
                {"error": refusal.error, "error_description": refusal.description},
                **refusal.headers,
            )
            if path == "/token":
                reply.headers |= {"Cache-Control": "no-store", "Pragma": "no-cache"}
            return reply

    @staticmethod
    def _only(method: str, *allowed: str) -> None:
        if method not in allowed:
            raise _Refusal(
                405,
                "method_not_allowed",
                f"{method} is not allowed here: {', '.join(allowed)}",
                {"Allow": ", ".join(allowed)},
            )

    # -- /launch and /auth -------------------------------------------------------------------

    def _launch(self, query: str) -> _Reply:
        params = _single_params(query, "query")
        user, link = params.get("user", ""), params.get("link", "")
        try:
            login = self.launch_params(user, link)
        except KeyError as exc:
            raise _Refusal(404, "not_found", str(exc.args[0])) from None
        session = secrets.token_urlsafe(24)
        with self._lock:
            self._sessions[session] = user
        page = _autopost_page(f"Launching {self._links[link].title}", self.tool_login_url, login)
        cookie = f"{self.cookie_name}={session}; Path=/; HttpOnly; SameSite=Lax"
        return _Reply(
            200,
            page.encode(),
            {
                "Content-Type": "text/html; charset=utf-8",
                "Set-Cookie": cookie,
                "Cache-Control": "no-store",
            },
        )

    def _session_user(self, headers: Mapping[str, str]) -> str | None:
        jar = cookies.SimpleCookie()
        try:
            jar.load(headers.get("Cookie") or "")
        except cookies.CookieError:
            return None
        morsel = jar.get(self.cookie_name)
        with self._lock:
            return self._sessions.get(morsel.value) if morsel else None

    def _auth(self, method: str, query: str, headers: Mapping[str, str], body: bytes) -> _Reply:
        if method == "POST":
            _check_content_type(
                headers, "application/x-www-form-urlencoded", 400, "invalid_request"
            )
            params = _single_params(body.decode("utf-8", "replace"), "form")
        else:
            params = _single_params(query, "query")

        def need(name: str, expected: str | None = None) -> str:
            value = params.get(name, "")
            if not value:
                raise _Refusal(400, "invalid_request", f"the authentication request has no {name}")
            if expected is not None and value != expected:
                raise _Refusal(400, "invalid_request", f"{name} must be {expected}, not {value!r}")
            return value

        if "openid" not in need("scope").split():
            raise _Refusal(400, "invalid_scope", f"scope must contain openid: {params['scope']!r}")
        need("response_type", "id_token")
        if need("client_id") != self.client_id:
            raise _Refusal(400, "unauthorized_client", f"unknown client_id {params['client_id']!r}")
        redirect_uri = need("redirect_uri")
        if redirect_uri not in self.tool_redirect_uris:
            raise _Refusal(
                400,
                "invalid_request",
                f"redirect_uri {redirect_uri!r} is not one the tool registered",
            )
        need("response_mode", "form_post")
        need("prompt", "none")
        nonce = need("nonce")
        state = need("state")
        login_hint = need("login_hint")
        link = need("lti_message_hint")
        user = self._session_user(headers)
        if user is None:
            raise _Refusal(403, "login_required", "nobody is signed in to the platform")
        if login_hint != user:
            raise _Refusal(
                403,
                "access_denied",
                f"login_hint {login_hint!r} is not the user signed in to the platform",
            )
        with self._lock:
            found = self._links.get(link)
            if found is None:
                raise _Refusal(400, "invalid_request", f"lti_message_hint: no link {link!r}")
            if found.context not in self._users[user].contexts:
                raise _Refusal(
                    403, "access_denied", f"{user!r} is not a member of the context of {link!r}"
                )
        token = self.id_token(user, link, nonce)
        page = _autopost_page(
            "Signing in to the tool", redirect_uri, {"id_token": token, "state": state}
        )
        return _Reply(
            200,
            page.encode(),
            {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"},
        )

    # -- /token --------------------------------------------------------------------------------

    def _token(self, headers: Mapping[str, str], body: bytes) -> _Reply:
        _check_content_type(headers, "application/x-www-form-urlencoded", 400, "invalid_request")
        form = _single_params(body.decode("utf-8", "replace"), "form")
        grant_type = form.get("grant_type")
        if not grant_type:
            raise _Refusal(400, "invalid_request", "no grant_type")
        if grant_type != "client_credentials":
            raise _Refusal(
                400,
                "unsupported_grant_type",
                f"grant_type must be client_credentials, not {grant_type!r}",
            )
        if "client_secret" in form or headers.get("Authorization"):
            raise _Refusal(
                400,
                "invalid_request",
                "more than one client authentication method (RFC 6749 §2.3)",
            )
        assertion_type = form.get("client_assertion_type")
        assertion = form.get("client_assertion")
        if not assertion_type or not assertion:
            raise _Refusal(
                400, "invalid_client", "no client authentication (client_assertion and its type)"
            )
        if assertion_type != CLIENT_ASSERTION_TYPE:
            raise _Refusal(
                400,
                "invalid_client",
                f"client_assertion_type must be {CLIENT_ASSERTION_TYPE}, not {assertion_type!r}",
            )
        if "client_id" in form and form["client_id"] != self.client_id:
            raise _Refusal(400, "invalid_client", f"unknown client_id {form['client_id']!r}")
        self._check_assertion(assertion)
        scope = form.get("scope", "")
        requested = scope.split()
        if not requested:
            raise _Refusal(400, "invalid_scope", "no scope: ask for the AGS scopes needed")
        refused = [name for name in requested if name not in self.scopes]
        if refused:
            raise _Refusal(
                400,
                "invalid_scope",
                f"scopes not granted to this tool: {refused}; granted: {self.scopes}",
            )
        access_token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[access_token] = {
                "scopes": list(dict.fromkeys(requested)),
                "expires": time.time() + self.token_lifetime,
            }
            self.tokens_issued += 1
        return _json_reply(
            200,
            {
                "access_token": access_token,
                "token_type": "Bearer",
                "expires_in": self.token_lifetime,
                "scope": " ".join(dict.fromkeys(requested)),
            },
            **{"Cache-Control": "no-store", "Pragma": "no-cache"},
        )

    def _check_assertion(self, assertion: str) -> dict[str, Any]:
        """The client assertion's claims, once every check of RFC 7523 §3 passed."""

        def refuse(why: str) -> _Refusal:
            return _Refusal(400, "invalid_client", f"client assertion: {why}")

        parts = assertion.split(".")
        if len(parts) != 3:
            raise refuse("not a compact JWS (three dot-separated parts)")
        try:
            header = json.loads(_unb64url(parts[0]))
            unverified = json.loads(_unb64url(parts[1]))
        except (ValueError, UnicodeDecodeError):
            raise refuse("its header or payload is not base64url JSON") from None
        if not isinstance(header, dict) or not isinstance(unverified, dict):
            raise refuse("its header and payload must be JSON objects")
        alg = header.get("alg")
        if alg not in _ASSERTION_ALGORITHMS:
            raise refuse(f"alg must be one of {list(_ASSERTION_ALGORITHMS)}, not {alg!r}")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise refuse("no kid in its header (the Security Framework §6.3 key set needs one)")
        if unverified.get("iss") != self.client_id or unverified.get("sub") != self.client_id:
            raise refuse(
                f"unknown client: iss {unverified.get('iss')!r} and sub "
                f"{unverified.get('sub')!r} must both be the client_id"
            )
        keys = self._tool_key_set(kid)
        try:
            token = jwt.decode(assertion, keys, algorithms=[alg])
        except JoseError as exc:
            raise refuse(f"bad signature ({exc.error}: {exc.description or exc})") from None
        claims = dict(token.claims)
        if claims.get("iss") != self.client_id or claims.get("sub") != self.client_id:
            raise refuse("iss and sub must both be the client_id")
        aud = claims.get("aud")
        audiences = aud if isinstance(aud, list) else [aud]
        if self.token_url not in audiences:
            raise refuse(f"aud {aud!r} does not contain the token URL {self.token_url!r}")
        now = time.time()
        for name in ("exp", "iat"):
            if not _is_number(claims.get(name)):
                raise refuse(f"no numeric {name}")
        if claims["exp"] <= now - LEEWAY:
            raise refuse(f"expired (exp {claims['exp']}, now {int(now)})")
        if claims["iat"] > now + LEEWAY:
            raise refuse(f"issued in the future (iat {claims['iat']}, now {int(now)})")
        if "nbf" in claims and (not _is_number(claims["nbf"]) or claims["nbf"] > now + LEEWAY):
            raise refuse(f"not valid yet (nbf {claims['nbf']!r})")
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti:
            raise refuse("no jti")
        with self._lock:
            for old, expiry in list(self._jtis.items()):  # forget the ones no longer valid
                if expiry < now - LEEWAY:
                    del self._jtis[old]
            if jti in self._jtis:
                raise refuse("its jti was already used (a replayed assertion)")
            # spent now, even if the request fails later (on its scope): checked and recorded
            # under one lock, so of two requests with one assertion only one gets through
            self._jtis[jti] = float(claims["exp"])
        return claims

    def _tool_key_set(self, kid: str) -> KeySet:
        """The tool's key set holding ``kid``: fetched from tool_jwks_url the first time and
        again when the kid is not in the set fetched before (the tool rotated its key)."""
        with self._fetch_lock:
            keys = self._tool_keys
            if keys is not None and _has_kid(keys, kid):
                return keys
            if keys is None and not self.tool_jwks_url:
                raise _Refusal(
                    400,
                    "invalid_client",
                    "the platform has no key set for the tool (give tool_jwks or tool_jwks_url)",
                )
            if self._static_tool_keys or not self.tool_jwks_url:
                raise _Refusal(
                    400,
                    "invalid_client",
                    f"client assertion: no key with kid {kid!r} in the tool's key set",
                )
            try:
                with urllib.request.urlopen(self.tool_jwks_url, timeout=5) as answer:
                    document = json.loads(answer.read())
                if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
                    raise ValueError('not a JWK set ({"keys": [...]})')
                keys = KeySet.import_key_set(document) if document["keys"] else KeySet([])
            except (OSError, ValueError, JoseError) as exc:
                raise _Refusal(
                    400,
                    "invalid_client",
                    f"the tool's key set at {self.tool_jwks_url} could not be read: {exc}",
                ) from None
            self.jwks_fetches += 1
            self._tool_keys = keys
            if not _has_kid(keys, kid):
                raise _Refusal(
                    400,
                    "invalid_client",
                    f"client assertion: no key with kid {kid!r} at {self.tool_jwks_url}",
                )
            return keys

    # -- AGS -----------------------------------------------------------------------------------

    def _bearer(self, headers: Mapping[str, str], allowed: Iterable[str]) -> None:
        """The request's access token must be live and hold one of the ``allowed`` scopes."""
        allowed = list(allowed)
        realm = 'Bearer realm="lti-ags"'
        authorization = headers.get("Authorization") or ""
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _Refusal(
                401,
                "invalid_request",
                "no access token: send Authorization: Bearer <token> (RFC 6750 §2.1)",
                {"WWW-Authenticate": realm},
            )
        with self._lock:
            record = self._tokens.get(token.strip())
            if record is None or record["expires"] <= time.time():
                why = "unknown" if record is None else "expired"
                raise _Refusal(
                    401,
                    "invalid_token",
                    f"the access token is {why}",
                    {"WWW-Authenticate": f'{realm}, error="invalid_token"'},
                )
            if not set(record["scopes"]) & set(allowed):
                raise _Refusal(
                    403,
                    "insufficient_scope",
                    f"this call needs one of the scopes {allowed}; the token has {record['scopes']}",
                    {
                        "WWW-Authenticate": f'{realm}, error="insufficient_scope", scope="{" ".join(allowed)}"'
                    },
                )

    def _ags(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> _Reply:
        parts = [urllib.parse.unquote(part) for part in path.split("/")[2:]]
        if len(parts) < 2 or parts[1] != "lineitems" or parts[0] not in self._contexts:
            raise _Refusal(404, "not_found", f"no AGS endpoint {path}")
        context = parts[0]
        params = _single_params(query, "query")
        if len(parts) == 2:
            if method == "GET":
                self._bearer(headers, [SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY])
                return self._list_lineitems(context, params, headers)
            if method == "POST":
                self._bearer(headers, [SCOPE_LINEITEM])
                return self._create_lineitem(context, headers, body)
            self._only(method, "GET", "POST")
        if len(parts) not in (3, 4) or not parts[2].isdigit():
            raise _Refusal(404, "not_found", f"no AGS endpoint {path}")
        number = int(parts[2])
        action = parts[3] if len(parts) == 4 else ""
        allowed_methods = {"": ("GET", "PUT", "DELETE"), "scores": ("POST",), "results": ("GET",)}
        if action not in allowed_methods:
            raise _Refusal(404, "not_found", f"no AGS endpoint {path}")
        if action == "" and method == "POST":
            raise _Refusal(
                405,
                "method_not_allowed",
                "POST is not allowed on a line item: scores go to the line item URL's path + "
                "/scores, its query kept (AGS §3.4.1)",
                {"Allow": "GET, PUT, DELETE"},
            )
        self._only(method, *allowed_methods[action])
        needed = {
            ("", "GET"): [SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY],
            ("", "PUT"): [SCOPE_LINEITEM],
            ("", "DELETE"): [SCOPE_LINEITEM],
            ("scores", "POST"): [SCOPE_SCORE],
            ("results", "GET"): [SCOPE_RESULT_READONLY],
        }[action, method]
        self._bearer(headers, needed)
        with self._lock:
            stored = self._lineitems.get(number)
            if stored is None or stored["context"] != context:
                raise _Refusal(404, "not_found", f"no line item {number} in context {context!r}")
            if self.lineitem_query and params.get("client") != self.client_id:
                raise _Refusal(
                    404,
                    "not_found",
                    "this line item's URL has a query (?client=...) that was dropped "
                    "(AGS §3.3.1, §3.4.1: keep the line item URL's query)",
                )
            if action == "scores":
                return self._post_score(context, number, headers, body)
            if action == "results":
                _check_accept(headers, MEDIA_RESULTS)
                return self._list_results(context, number, params)
            if method == "GET":
                _check_accept(headers, MEDIA_LINEITEM)
                return _json_reply(200, self._render_lineitem(number), MEDIA_LINEITEM)
            if method == "DELETE":
                del self._lineitems[number]
                for key in [key for key in self._latest if key[0] == number]:
                    del self._latest[key]
                return _Reply(204)
            return self._update_lineitem(context, number, headers, body)

    def _lineitem_id(self, context: str, number: int) -> str:
        url = f"{self.lineitems_url(context)}/{number}"
        if self.lineitem_query:
            url += "?" + urllib.parse.urlencode({"client": self.client_id})
        return url

    def _sub_url(self, context: str, number: int, suffix: str, **query: str) -> str:
        """The line item URL's path + ``/suffix``, its query kept (AGS §3.3.1, §3.4.1)."""
        url = f"{self.lineitems_url(context)}/{number}/{suffix}"
        params = {"client": self.client_id} if self.lineitem_query else {}
        params |= query
        return url + ("?" + urllib.parse.urlencode(params) if params else "")

    def _render_lineitem(self, number: int) -> dict[str, Any]:
        stored = self._lineitems[number]
        return {
            "id": self._lineitem_id(stored["context"], number),
            **json.loads(json.dumps(stored["item"])),
        }

    def _store_lineitem(self, context: str, item: dict[str, Any]) -> int:
        number = self._next_lineitem
        self._next_lineitem += 1
        self._lineitems[number] = {"context": context, "item": item}
        return number

    def _check_lineitem(self, context: str, item: dict[str, Any]) -> dict[str, Any]:
        """A line item as posted (AGS §3.2.5-3.2.14), or the reason it is refused."""
        label = item.get("label")
        if not isinstance(label, str) or not label.strip():
            raise _Refusal(400, "invalid_request", "label must be a non-blank string (AGS §3.2.7)")
        maximum = item.get("scoreMaximum")
        if not _is_number(maximum) or maximum <= 0:
            raise _Refusal(
                400,
                "invalid_request",
                f"scoreMaximum must be a number > 0 (AGS §3.2.8), not {maximum!r}",
            )
        for name in ("resourceId", "tag"):
            if item.get(name) is not None and not isinstance(item[name], str):
                raise _Refusal(400, "invalid_request", f"{name} must be a string")
        for name in ("startDateTime", "endDateTime"):
            if item.get(name) not in (None, ""):
                _instant(item[name], name, subsecond=False)
        if item.get("gradesReleased") is not None and not isinstance(item["gradesReleased"], bool):
            raise _Refusal(400, "invalid_request", "gradesReleased must be true or false")
        link = item.get("resourceLinkId")
        if link is not None:
            found = self._links.get(link) if isinstance(link, str) else None
            if found is None or found.context != context:
                raise _Refusal(
                    404,
                    "not_found",
                    f"resourceLinkId {link!r} is not a link of context {context!r} (AGS §3.2.9)",
                )
        clean = {key: value for key, value in item.items() if key != "id"}
        return clean

    def _create_lineitem(self, context: str, headers: Mapping[str, str], body: bytes) -> _Reply:
        _check_content_type(headers, MEDIA_LINEITEM)
        _check_accept(headers, MEDIA_LINEITEM)
        item = _parse_json_object(body, "line item")
        with self._lock:
            number = self._store_lineitem(context, self._check_lineitem(context, item))
            rendered = self._render_lineitem(number)
        return _json_reply(201, rendered, MEDIA_LINEITEM, Location=rendered["id"])

    def _update_lineitem(
        self, context: str, number: int, headers: Mapping[str, str], body: bytes
    ) -> _Reply:
        _check_content_type(headers, MEDIA_LINEITEM)
        _check_accept(headers, MEDIA_LINEITEM)
        item = _parse_json_object(body, "line item")
        current = self._lineitems[number]["item"]
        own_id = self._lineitem_id(context, number)
        if "id" in item and item["id"] != own_id:
            raise _Refusal(400, "invalid_request", f"id cannot change (AGS §3.2.6): it is {own_id}")
        if item.get("resourceLinkId") != current.get("resourceLinkId"):
            raise _Refusal(
                400,
                "invalid_request",
                f"resourceLinkId cannot change (AGS §3.2.6): it is {current.get('resourceLinkId')!r}",
            )
        self._lineitems[number]["item"] = self._check_lineitem(context, item)
        return _json_reply(200, self._render_lineitem(number), MEDIA_LINEITEM)

    def _list_lineitems(
        self, context: str, params: Mapping[str, str], headers: Mapping[str, str]
    ) -> _Reply:
        _check_accept(headers, MEDIA_LINEITEMS)
        filters = {
            "resource_link_id": "resourceLinkId",
            "resource_id": "resourceId",
            "tag": "tag",
        }
        with self._lock:
            items = [
                item
                for item in self.lineitems(context)
                if all(
                    item.get(field_name) == params[name]
                    for name, field_name in filters.items()
                    if name in params
                )
            ]
        page, link = self._paged(items, params, self.lineitems_url(context))
        headers_out = {"Link": link} if link else {}
        return _json_reply(200, page, MEDIA_LINEITEMS, **headers_out)

    @staticmethod
    def _paged(
        items: list[dict[str, Any]], params: Mapping[str, str], base: str
    ) -> tuple[list[dict[str, Any]], str | None]:
        """``items`` cut by ``limit`` (from ``page``, 1-based), and the ``Link: rel="next"``
        header value when more follow (AGS §3.2.4, §3.3.6)."""
        if "limit" not in params:
            return items, None
        limit, page = params["limit"], params.get("page", "1")
        if not limit.isdigit() or int(limit) < 1 or not page.isdigit() or int(page) < 1:
            raise _Refusal(400, "invalid_request", "limit and page must be integers >= 1")
        start = (int(page) - 1) * int(limit)
        chunk = items[start : start + int(limit)]
        if start + int(limit) >= len(items):
            return chunk, None
        following = dict(params) | {"page": str(int(page) + 1)}
        separator = "&" if "?" in base else "?"
        return chunk, f'<{base}{separator}{urllib.parse.urlencode(following)}>; rel="next"'

    def _results_of(self, number: int, user: str | None = None) -> list[dict[str, Any]]:
        stored = self._lineitems[number]
        maximum = stored["item"]["scoreMaximum"]
        results = []
        for (item_number, user_id), (_, score) in sorted(self._latest.items()):
            if item_number != number or (user is not None and user_id != user):
                continue
            result: dict[str, Any] = {
                "id": self._sub_url(stored["context"], number, "results", user_id=user_id),
                "scoreOf": self._lineitem_id(stored["context"], number),
                "userId": user_id,
                "resultMaximum": maximum,
            }
            if score.get("scoreGiven") is not None:
                result["resultScore"] = score["scoreGiven"] * maximum / score["scoreMaximum"]
            if score.get("comment") is not None:
                result["comment"] = score["comment"]
            if score.get("scoringUserId") is not None:
                result["scoringUserId"] = score["scoringUserId"]
            results.append(result)
        return results

    def _list_results(self, context: str, number: int, params: Mapping[str, str]) -> _Reply:
        results = self._results_of(number, params.get("user_id"))
        base = self._sub_url(context, number, "results")
        page, link = self._paged(results, params, base)
        return _json_reply(200, page, MEDIA_RESULTS, **({"Link": link} if link else {}))

    def _post_score(
        self, context: str, number: int, headers: Mapping[str, str], body: bytes
    ) -> _Reply:
        record: dict[str, Any] = {
            "context": context,
            "public": {"lineitem": self._lineitem_id(context, number), "status": None},
        }
        self._scores.append(record)
        try:
            received: Any = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError):
            received = None
        if not isinstance(received, dict):
            received = body.decode("utf-8", "replace")
        record["public"]["score"] = received
        try:
            _check_content_type(headers, MEDIA_SCORE)
            score = _parse_json_object(body, "score")
            stamp = self._check_score(context, score)
            user = score["userId"]
            last = self._latest.get((number, user))
            if last is not None and stamp <= last[0]:
                raise _Refusal(
                    409,
                    "conflict",
                    f"timestamp {score['timestamp']} is not later than the last score's "
                    f"{last[1]['timestamp']} for this line item and user (AGS §3.4.9)",
                )
            self._latest[number, user] = (stamp, score)
        except _Refusal as refusal:
            record["public"]["status"] = refusal.status
            raise
        record["public"]["status"] = 200
        return _json_reply(200, {})

    def _check_score(self, context: str, score: dict[str, Any]) -> Fraction:
        """A score's checks (AGS §3.4.4-3.4.11); its timestamp as an exact instant."""

        def refuse(why: str) -> _Refusal:
            return _Refusal(400, "invalid_request", why)

        user = score.get("userId")
        if not isinstance(user, str) or not user:
            raise refuse("userId must be present, a string (AGS §3.4.5)")
        if user not in self._users or context not in self._users[user].contexts:
            raise refuse(f"userId {user!r} is not a member of context {context!r}")
        given = score.get("scoreGiven")
        maximum = score.get("scoreMaximum")
        if given is not None:
            if not _is_number(given) or given < 0:
                raise refuse(f"scoreGiven must be a number >= 0 (AGS §3.4.4), not {given!r}")
            if maximum is None:
                raise refuse("scoreMaximum must be present when scoreGiven is (AGS §3.4.4)")
        if maximum is not None and (not _is_number(maximum) or maximum <= 0):
            raise refuse(f"scoreMaximum must be a number > 0, not {maximum!r}")
        activity = score.get("activityProgress")
        if activity not in ACTIVITY_PROGRESS:
            raise refuse(
                f"activityProgress must be one of {list(ACTIVITY_PROGRESS)} (AGS §3.4.7), "
                f"not {activity!r}"
            )
        grading = score.get("gradingProgress")
        if grading not in GRADING_PROGRESS:
            raise refuse(
                f"gradingProgress must be one of {list(GRADING_PROGRESS)} (AGS §3.4.8), "
                f"not {grading!r}"
            )
        if "timestamp" not in score:
            raise refuse("timestamp must be present (AGS §3.4.9)")
        stamp = _instant(score["timestamp"], "timestamp", subsecond=True)
        if score.get("comment") is not None and not isinstance(score["comment"], str):
            raise refuse("comment must be a string (AGS §3.4.11)")
        if "scoringUserId" in score and (
            not isinstance(score["scoringUserId"], str) or not score["scoringUserId"]
        ):
            raise refuse("scoringUserId, when present, must be a user id (AGS §3.4.6)")
        submission = score.get("submission")
        if submission is not None:
            if not isinstance(submission, dict):
                raise refuse("submission must be an object (AGS §3.4.10)")
            times = {
                name: _instant(submission[name], f"submission.{name}", subsecond=False)
                for name in ("startedAt", "submittedAt")
                if submission.get(name) is not None
            }
            if len(times) == 2 and times["submittedAt"] < times["startedAt"]:
                raise refuse("submission.submittedAt is before startedAt (AGS §3.4.10.2)")
        return stamp


class _Server(ThreadingHTTPServer):
    # a lab's worth of connections at once (the default backlog of 5 makes the 6th wait a
    # second for its SYN to be sent again)
    request_queue_size = 128


def _in_outage(path: str) -> bool:
    return path == "/token" or path.startswith("/ags/")


def _has_kid(keys: KeySet, kid: str) -> bool:
    return any(key.kid == kid for key in keys)


class _Handler(BaseHTTPRequestHandler):
    """HTTP for one :class:`Platform` (the subclass made in ``start`` sets ``platform``)."""

    platform: Platform
    server_version = "dplib-test-lms/1.0"

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def _serve(self, method: str) -> None:
        path, _, query = self.path.partition("?")
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            reply = _json_reply(
                411, {"error": "length_required", "error_description": "send a Content-Length"}
            )
        else:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if length < 0 or length > 1_000_000:
                reply = _json_reply(
                    400, {"error": "invalid_request", "error_description": "bad Content-Length"}
                )
            else:
                body = self.rfile.read(length) if length else b""
                if self.platform._refusing(path):
                    self.platform._record(method, path, None)
                    self.close_connection = True
                    return  # nothing written: the client sees the connection closed
                reply = self.platform._dispatch(method, path, query, self.headers, body)
        self.platform._record(method, path, reply.status)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if reply.body:
            self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: ``Platform.requests`` keeps the log."""
