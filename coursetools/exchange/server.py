"""The exchange as a JupyterHub service: every request names its user with their hub token.

One job: the HTTP side of :class:`~coursetools.exchange.storage.ExchangeStore`. A request carries
``Authorization: token <the user's JupyterHub token>`` (the single-user server has it in
``JUPYTERHUB_API_TOKEN``); the service asks the hub whose token it is (``HubAuth``), and that hub
user name is who releases, hands in or reads, never a uid, a folder's owner or a name the request
states. A token the hub does not know (forged, expired, revoked) gets 403.

Who may do what in a course (:class:`HubGroupRoles`, nbgrader's own convention on JupyterHub):
the members of the hub group ``formgrade-<course>`` are its instructors (release, withdraw, list
and collect every hand-in, release feedback); the members of ``nbgrader-<course>`` are its
students (fetch a release, hand in as themselves, list and read their own hand-ins and feedback).
Hub admins are instructors of every course.

Routes, under the service's prefix (``/services/exchange/`` on a hub)::

    GET    api/courses                                               the user's courses (JSON)
    GET    api/courses/<c>/assignments                               the releases (JSON)
    GET    api/courses/<c>/assignments/<a>                           a release (gzip'd tar)
    PUT    api/courses/<c>/assignments/<a>[?force=1]                 release (instructor)
    DELETE api/courses/<c>/assignments/<a>                           withdraw (instructor)
    POST   api/courses/<c>/assignments/<a>/submissions               hand in, as the token's user
    GET    api/courses/<c>/submissions[?assignment=&student=]        hand-ins: one's own, or all
    GET    api/courses/<c>/assignments/<a>/submissions/<s>/<t>       one hand-in (its student, an instructor)
    PUT    api/courses/<c>/assignments/<a>/submissions/<s>/<t>/feedback   release feedback (instructor)
    GET    api/courses/<c>/assignments/<a>/submissions/<s>/<t>/feedback   the feedback (its student, an instructor)
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from coursetools.exchange import archive
from coursetools.exchange.storage import (
    Conflict,
    ExchangeStore,
    NotFound,
    SubmissionRecord,
    valid_name,
)

__all__ = ["HubGroupRoles", "Roles", "make_app"]

ARCHIVE_TYPE = "application/gzip"


class Roles:
    """Who teaches and who takes ``course``: ``await roles.of(course)`` -> (instructors, students)."""

    async def of(
        self, course: str, *, fresh_for: str | None = None
    ) -> tuple[frozenset[str], frozenset[str]]:  # pragma: no cover - interface
        """``fresh_for``: a user the kept answer does not name, who may have just joined: read
        again now."""
        raise NotImplementedError


class HubGroupRoles(Roles):
    """Roles from the hub's groups ``formgrade-<course>`` and ``nbgrader-<course>``, read with the
    service's own token (its role needs the scope ``read:groups``) and kept ``ttl`` seconds.

    A user not in the kept answer makes it read again (``fresh_for``), at most once every
    ``refresh`` seconds for that user: a student put in the group a moment ago (an LTI launch) is
    let in at once, and a flood of requests from one outsider costs the hub one read every
    ``refresh`` seconds (an outsider needs a valid token, so a hub account, to get this far). A
    group the hub does not have has no members: a course with no group
    has no students.
    """

    def __init__(
        self,
        api_url: str,
        token: str,
        *,
        ttl: float = 30.0,
        refresh: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.api_url, self.token, self.ttl, self.clock = api_url.rstrip("/"), token, ttl, clock
        self.refresh = refresh
        self._cache: dict[str, tuple[float, frozenset[str]]] = {}
        self._asked: dict[tuple[str, str], float] = {}  # (course, user) -> last fresh read

    async def _members(self, group: str, fresh: bool = False) -> frozenset[str]:
        hit = self._cache.get(group)
        if hit is not None and not fresh and self.clock() - hit[0] < self.ttl:
            return hit[1]
        url = f"{self.api_url}/groups/{urllib.parse.quote(group, safe='')}"
        request = HTTPRequest(
            url, headers={"Authorization": f"token {self.token}"}, request_timeout=30
        )
        try:
            reply = await AsyncHTTPClient().fetch(request)
            members = frozenset(json.loads(reply.body).get("users", []))
        except HTTPClientError as exc:
            if exc.code != 404:
                raise
            members = frozenset()
        self._cache[group] = (self.clock(), members)
        return members

    async def of(
        self, course: str, *, fresh_for: str | None = None
    ) -> tuple[frozenset[str], frozenset[str]]:
        fresh = False
        if fresh_for is not None:
            now = self.clock()
            self._asked = {k: v for k, v in self._asked.items() if now - v < self.refresh}
            fresh = (course, fresh_for) not in self._asked
            if fresh:
                self._asked[(course, fresh_for)] = now
        instructors, students = await asyncio.gather(
            self._members(f"formgrade-{course}", fresh), self._members(f"nbgrader-{course}", fresh)
        )
        return instructors, students


class _Handler(web.RequestHandler):
    """Authentication (the hub's name for the token), the course's roles, the errors as JSON."""

    store: ExchangeStore

    def initialize(
        self, store: ExchangeStore, identify: Callable[[str], Awaitable[dict | None]], roles: Roles
    ):
        self.store, self.identify, self.roles = store, identify, roles

    def check_xsrf_cookie(self) -> None:  # token-authenticated API: no cookies are read
        return

    async def prepare(self) -> None:
        header = self.request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        model = None
        if scheme.lower() in ("token", "bearer") and token.strip():
            model = await self.identify(token.strip())
        if not model or model.get("kind", "user") != "user" or not valid_name(model.get("name")):
            raise web.HTTPError(403, reason="a valid JupyterHub user token is required")
        self.user, self.admin = model["name"], bool(model.get("admin"))

    async def role(self, course: str) -> str:
        """``instructor`` or ``student`` of ``course``; 403 for anyone else, 400 for a bad name."""
        if not valid_name(course):
            raise web.HTTPError(400, reason="not a course name")
        instructors, students = await self.roles.of(course)
        if not self.admin and self.user not in instructors | students:
            instructors, students = await self.roles.of(course, fresh_for=self.user)  # just joined?
        if self.admin or self.user in instructors:
            return "instructor"
        if self.user in students:
            return "student"
        raise web.HTTPError(403, reason=f"{self.user} is not in the course {course}")

    async def instructor(self, course: str) -> None:
        if await self.role(course) != "instructor":
            raise web.HTTPError(403, reason="instructors only")

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.set_header("Content-Type", "application/json")
        message = getattr(self, "message", "") or self._reason
        self.finish(json.dumps({"status": status_code, "message": message}))

    def refuse(self, status: int, message: str) -> web.HTTPError:
        """An error whose message goes whole into the JSON body; the status line's reason gets a
        printable-ASCII copy (a name from the URL may hold anything, even CR LF)."""
        self.message = message
        reason = "".join(c if " " <= c <= "~" else "?" for c in message)[:200]
        return web.HTTPError(status, reason=reason)

    def send_json(self, value: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(value))

    def send_archive(self, data: bytes) -> None:
        self.set_header("Content-Type", ARCHIVE_TYPE)
        self.set_header("Cache-Control", "no-store")
        self.finish(data)

    def body(self) -> bytes:
        data = self.request.body
        if len(data) > self.store.max_bytes:
            raise web.HTTPError(
                413, reason=f"larger than the limit of {self.store.max_bytes} bytes"
            )
        return data

    def run(self, call: Callable[[], Any]) -> Any:
        """``call()``, its refusals as HTTP errors."""
        try:
            return call()
        except NotFound as exc:
            raise self.refuse(404, str(exc)) from None
        except Conflict as exc:
            raise self.refuse(409, str(exc)) from None
        except archive.ArchiveError as exc:
            too_big = "limit" in str(exc)
            raise self.refuse(413 if too_big else 400, f"refused: {exc}") from None
        except ValueError as exc:
            raise self.refuse(400, str(exc)) from None


def _submission(record: SubmissionRecord, *, instructor: bool) -> dict:
    shown = asdict(record)
    shown["has_feedback"] = record.feedback is not None
    shown["files"] = list(record.files)
    shown["feedback"] = None if record.feedback is None else list(record.feedback)
    if not instructor:
        shown.pop("secret")
    return shown


class Courses(_Handler):
    async def get(self) -> None:
        mine = []
        for course in self.store.courses():
            instructors, students = await self.roles.of(course)
            if not self.admin and self.user not in instructors | students:
                instructors, students = await self.roles.of(course, fresh_for=self.user)
            if self.admin or self.user in instructors or self.user in students:
                mine.append(course)
        self.send_json(mine)


class Releases(_Handler):
    async def get(self, course: str) -> None:
        await self.role(course)
        self.send_json(
            [
                {**asdict(r), "files": list(r.files)}
                for r in self.run(lambda: self.store.releases(course))
            ]
        )


class Release(_Handler):
    async def get(self, course: str, assignment: str) -> None:
        await self.role(course)
        _, data = self.run(lambda: self.store.released(course, assignment))
        self.send_archive(data)

    async def put(self, course: str, assignment: str) -> None:
        await self.instructor(course)
        force = self.get_argument("force", "0") in ("1", "true", "yes")
        data = self.body()
        record = self.run(lambda: self.store.release(course, assignment, data, force=force))
        self.send_json({**asdict(record), "files": list(record.files)}, 201)

    async def delete(self, course: str, assignment: str) -> None:
        await self.instructor(course)
        if not self.run(lambda: self.store.unrelease(course, assignment)):
            raise web.HTTPError(404, reason=f"{course}/{assignment} is not released")
        self.send_json({"withdrawn": assignment})


class Submit(_Handler):
    async def post(self, course: str, assignment: str) -> None:
        await self.role(course)
        data = self.body()
        # the student is the token's user: nothing in the request can name anyone else
        record = self.run(lambda: self.store.submit(course, assignment, self.user, data))
        self.send_json(_submission(record, instructor=False), 201)


class Submissions(_Handler):
    async def get(self, course: str) -> None:
        role = await self.role(course)
        assignment = self.get_argument("assignment", None)
        student = self.get_argument("student", None)
        if role == "student":
            if student not in (None, self.user):
                raise web.HTTPError(403, reason="a student sees their own hand-ins only")
            student = self.user
        records = self.run(
            lambda: self.store.submissions(course, assignment=assignment, student=student)
        )
        self.send_json([_submission(r, instructor=role == "instructor") for r in records])


class _OneSubmission(_Handler):
    async def allowed(self, course: str, student: str) -> str:
        role = await self.role(course)
        if role == "student" and student != self.user:
            raise web.HTTPError(403, reason="a student reads their own hand-ins only")
        return role


class Submission(_OneSubmission):
    async def get(self, course: str, assignment: str, student: str, timestamp: str) -> None:
        await self.allowed(course, student)
        _, data = self.run(lambda: self.store.submission(course, assignment, student, timestamp))
        self.send_archive(data)


class Feedback(_OneSubmission):
    async def get(self, course: str, assignment: str, student: str, timestamp: str) -> None:
        await self.allowed(course, student)
        self.send_archive(
            self.run(lambda: self.store.feedback(course, assignment, student, timestamp))
        )

    async def put(self, course: str, assignment: str, student: str, timestamp: str) -> None:
        await self.instructor(course)
        data = self.body()
        record = self.run(
            lambda: self.store.put_feedback(course, assignment, student, timestamp, data)
        )
        self.send_json(_submission(record, instructor=True), 201)


def make_app(
    store: ExchangeStore,
    identify: Callable[[str], Awaitable[dict | None]],
    roles: Roles,
    *,
    prefix: str = "/",
) -> web.Application:
    """The service's tornado application.

    ``identify(token)`` is the hub's answer for a token (``HubAuth.user_for_token(token,
    sync=False)``): the user's model, or None for a token it does not know.
    """
    base = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
    part = r"([^/]+)"
    api = f"{base}api/courses/{part}"
    args = {"store": store, "identify": identify, "roles": roles}
    routes = [
        (f"{base}api/courses/?", Courses, args),
        (f"{api}/assignments", Releases, args),
        (f"{api}/assignments/{part}", Release, args),
        (f"{api}/assignments/{part}/submissions", Submit, args),
        (f"{api}/submissions", Submissions, args),
        (f"{api}/assignments/{part}/submissions/{part}/{part}", Submission, args),
        (f"{api}/assignments/{part}/submissions/{part}/{part}/feedback", Feedback, args),
    ]
    return web.Application(routes)


def serve(
    *,
    database: str,
    volume: str,
    max_bytes: int,
    api_url: str,
    api_token: str,
    service_url: str,
    prefix: str,
    token_cache_seconds: int = 10,
) -> None:  # pragma: no cover - run as the hub's managed service, tested end to end
    """Run the service until stopped: listen where the hub says (``JUPYTERHUB_SERVICE_URL``)."""
    from jupyterhub.services.auth import HubAuth  # noqa: PLC0415 - the hub's package, at run time
    from tornado.ioloop import IOLoop  # noqa: PLC0415

    hub_auth = HubAuth(api_url=api_url, api_token=api_token, cache_max_age=token_cache_seconds)

    async def identify(token: str) -> dict | None:
        try:
            return await hub_auth.user_for_token(token, sync=False)
        except web.HTTPError:
            return None

    store = ExchangeStore(database, volume, max_bytes=max_bytes)
    app = make_app(store, identify, HubGroupRoles(api_url, api_token), prefix=prefix)
    where = urllib.parse.urlsplit(service_url)
    app.listen(
        where.port or 80,
        address=where.hostname or "127.0.0.1",
        max_body_size=max_bytes + 1024 * 1024,
    )
    IOLoop.current().start()
