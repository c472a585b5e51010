"""The LMS's gradebook over LTI Assignment and Grade Services 2.0: line items and scores.

One job: speak AGS to the platform (https://www.imsglobal.org/spec/lti-ags/v2p0/) as the tool:

- an **access token** by OAuth 2's client-credentials grant, authenticated with a JWT the tool
  signs (RFC 7523; IMS Security Framework 1.0, section 4.1), kept until a minute before it
  expires and never written to a log;
- a **line item** per assignment in a course's context, found again by its ``resourceId`` (the
  assignment's name) or created once (``application/vnd.ims.lis.v2.lineitem+json``), following
  ``Link: rel="next"`` pages;
- a **score** per graded hand-in (``application/vnd.ims.lis.v1.score+json``), posted to the line
  item's ``/scores`` (AGS 2.0, section 3.4), with the service's timestamp: the platform keeps
  the latest by timestamp, so posting again the same score is harmless.

What went wrong is one of two errors: :class:`PlatformUnavailable` (no answer, 5xx, 408, 429:
try again later) or :class:`PlatformRefused` (the platform said no, with its reason: a person
must look). The HTTP client is ``requests``; signing is :mod:`coursetools.lms.keys`'.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import requests

from coursetools.lms.keys import ToolKey

__all__ = [
    "LINEITEM_SCOPE",
    "PlatformRefused",
    "PlatformUnavailable",
    "RESULT_SCOPE",
    "SCORE_SCOPE",
    "GradeService",
    "scores_url",
]

LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
LINEITEM_READONLY_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
RESULT_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
#: Seconds before a token's expiry at which a new one is asked for.
TOKEN_MARGIN = 60.0
#: Seconds one HTTP request may take.
TIMEOUT = 20.0
_RETRY_STATUS = {408, 425, 429, 500, 502, 503, 504}


class PlatformUnavailable(RuntimeError):
    """The platform did not answer, or answered that it cannot now: try again later."""


class PlatformRefused(RuntimeError):
    """The platform refused the request (a 4xx): ``status`` and its reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status}: {reason}")
        self.status = status


def scores_url(lineitem_url: str) -> str:
    """The scores endpoint of a line item: ``/scores`` appended to its path, its query kept
    (AGS 2.0, section 3.4; Moodle's line items carry ``?type_id=``)."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def _with_query(url: str, **params: str) -> str:
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query, keep_blank_values=True), *params.items()]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _reason(reply: requests.Response) -> str:
    text = reply.text[:500]
    try:
        body = reply.json()
    except ValueError:
        return text.strip() or reply.reason or ""
    if isinstance(body, dict):
        for key in ("error_description", "reason", "error", "message"):
            if isinstance(body.get(key), str):
                return body[key][:500]
    return text


class GradeService:
    """The platform's AGS endpoints, called as the tool.

    Parameters
    ----------
    client_id, token_url
        The tool's client id and the platform's token endpoint.
    key
        The tool's signing key.
    session
        A ``requests.Session`` (default: a new one).
    clock
        Seconds since the epoch (tests pass their own).
    """

    def __init__(
        self,
        client_id: str,
        token_url: str,
        key: ToolKey,
        *,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client_id, self.token_url, self.key = client_id, token_url, key
        self.session = session or requests.Session()
        self.clock = clock
        self._tokens: dict[frozenset[str], tuple[str, float]] = {}
        self._lock = threading.Lock()
        self.tokens_requested = 0

    def __repr__(self) -> str:  # never the tokens
        return f"GradeService(client_id={self.client_id!r}, token_url={self.token_url!r})"

    # ---------------------------------------------------------------------------------- token

    def token(self, scopes: frozenset[str]) -> str:
        """An access token for ``scopes``: the cached one, or a new one from the platform."""
        with self._lock:
            cached = self._tokens.get(scopes)
            if cached and cached[1] - TOKEN_MARGIN > self.clock():
                return cached[0]
            form = {
                "grant_type": "client_credentials",
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": self.key.client_assertion(
                    self.client_id, self.token_url, now=self.clock()
                ),
                "scope": " ".join(sorted(scopes)),
            }
            reply = self._send(
                "POST", self.token_url, data=form, headers={"Accept": "application/json"}
            )
            body = reply.json() if reply.content else {}
            token = body.get("access_token") if isinstance(body, dict) else None
            if not isinstance(token, str) or not token:
                raise PlatformRefused(reply.status_code, "the token endpoint gave no access_token")
            lifetime = body.get("expires_in", 3600)
            lifetime = (
                float(lifetime) if isinstance(lifetime, int | float) and lifetime > 0 else 3600.0
            )
            self._tokens[scopes] = (token, self.clock() + lifetime)
            self.tokens_requested += 1
            return token

    def forget_token(self, scopes: frozenset[str]) -> None:
        with self._lock:
            self._tokens.pop(scopes, None)

    def _send(self, method: str, url: str, **kw: Any) -> requests.Response:
        try:
            reply = self.session.request(method, url, timeout=TIMEOUT, allow_redirects=False, **kw)
        except requests.RequestException as exc:
            raise PlatformUnavailable(
                f"{method} {urlsplit(url).netloc}: {type(exc).__name__}"
            ) from None
        if reply.status_code in _RETRY_STATUS:
            raise PlatformUnavailable(f"{method} {urlsplit(url).path}: HTTP {reply.status_code}")
        if reply.status_code >= 300:
            raise PlatformRefused(reply.status_code, _reason(reply))
        return reply

    def _call(self, method: str, url: str, scopes: frozenset[str], **kw: Any) -> requests.Response:
        """A call with a bearer token; a 401 gets one new token and one more try."""
        for attempt in (1, 2):
            headers = {**kw.pop("headers", {}), "Authorization": f"Bearer {self.token(scopes)}"}
            try:
                return self._send(method, url, headers=headers, **kw)
            except PlatformRefused as exc:
                if exc.status != 401 or attempt == 2:
                    raise
                self.forget_token(scopes)
                kw["headers"] = {k: v for k, v in headers.items() if k != "Authorization"}
        raise AssertionError("unreachable")

    # ----------------------------------------------------------------------------- line items

    def line_item(
        self,
        lineitems_url: str,
        *,
        resource_id: str,
        label: str,
        score_maximum: float,
        resource_link_id: str = "",
        tag: str = "",
    ) -> str:
        """The URL of the context's line item for ``resource_id``, created if there is none."""
        scopes = frozenset({LINEITEM_SCOPE})
        url: str | None = _with_query(lineitems_url, resource_id=resource_id)
        while url:
            reply = self._call("GET", url, scopes, headers={"Accept": CONTAINER_TYPE})
            items = reply.json() if reply.content else []
            for item in items if isinstance(items, list) else []:
                if (
                    isinstance(item, dict)
                    and item.get("resourceId") == resource_id
                    and item.get("id")
                ):
                    return str(item["id"])
            url = reply.links.get("next", {}).get("url")
        body: dict[str, Any] = {
            "scoreMaximum": score_maximum,
            "label": label,
            "resourceId": resource_id,
        }
        if resource_link_id:
            body["resourceLinkId"] = resource_link_id
        if tag:
            body["tag"] = tag
        reply = self._call(
            "POST", lineitems_url, scopes, json=body,
            headers={"Content-Type": LINEITEM_TYPE, "Accept": LINEITEM_TYPE},
        )  # fmt: skip
        created = reply.json() if reply.content else {}
        if not isinstance(created, dict) or not created.get("id"):
            raise PlatformRefused(reply.status_code, "the platform created a line item with no id")
        return str(created["id"])

    # --------------------------------------------------------------------------------- scores

    def post_score(
        self,
        lineitem_url: str,
        *,
        user_id: str,
        score_given: float,
        score_maximum: float,
        activity: str,
        grading: str,
        timestamp: str,
        comment: str = "",
    ) -> None:
        """Post one score (AGS 2.0, section 3.4.5: ``scoreGiven`` of ``scoreMaximum``)."""
        body: dict[str, Any] = {
            "userId": user_id,
            "scoreGiven": score_given,
            "scoreMaximum": score_maximum,
            "activityProgress": activity,
            "gradingProgress": grading,
            "timestamp": timestamp,
        }
        if comment:
            body["comment"] = comment
        self._call(
            "POST", scores_url(lineitem_url), frozenset({SCORE_SCOPE}), json=body,
            headers={"Content-Type": SCORE_TYPE},
        )  # fmt: skip
