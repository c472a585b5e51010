"""Signing in from the LMS: an LTI 1.3 launch makes the LMS's user a hub user of the course.

One job: JupyterHub's own LTI 1.3 authenticator (``ltiauthenticator.lti13``: the OIDC
third-party login, the ``id_token``'s signature against the platform's key set, its issuer,
audience, expiry, age, ``state`` and ``nonce`` against the browser's cookies, the LTI version and
required claims), with what a course needs on top (LTI 1.3 Core,
https://www.imsglobal.org/spec/lti/v1p3/; IMS Security Framework 1.0):

- the **deployment id** must be one the platform registered (``deploy/lti.toml``);
- only **resource link launches** (``LtiResourceLinkRequest``);
- the **nonce** is accepted once, ever, kept server-side: a launch captured with its cookies
  and sent again is refused;
- ``exp``, ``iat`` and ``nonce`` must be present (a token without an expiry never expires);
- the **role** comes from the standard roles claim alone
  (``https://purl.imsglobal.org/spec/lti/claim/roles``, full URIs): Instructor or Teaching
  Assistant of the context make an instructor (the group ``formgrade-<course>``), Learner a
  student (``nbgrader-<course>``); a custom parameter saying "Instructor" decides nothing;
- the **context** picks the course (``course.contexts``) and the resource link's custom
  parameter (``assignment=...``) the assignment the launch opens;
- the **hub name** is the LMS's ``sub`` (stable, assigned by the platform, not editable by the
  user), bound to that LMS user at the first launch (:mod:`coursetools.lms.store`).

Each refusal is an HTTP error whose message says what was wrong, never a stack trace. The tool's
public key set is served at ``/hub/lti13/jwks`` for the platform's grade service.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

from jupyterhub.handlers import BaseHandler
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler
from tornado.web import HTTPError
from traitlets import Bool, Unicode, default

from coursetools.lms import keys
from coursetools.lms.settings import NAME, LtiSettings, load_settings
from coursetools.lms.store import IdentityConflict, Launch, LmsStore

__all__ = ["CourseLTI13Authenticator", "course_role", "hub_name"]

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_ENDPOINT = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
INSTRUCTOR_ROLES = {f"{MEMBERSHIP}#Instructor", f"{MEMBERSHIP}/Instructor#TeachingAssistant"}
LEARNER_ROLES = {f"{MEMBERSHIP}#Learner"}
#: A hub name taken from ``sub``: what nbgrader and the exchange accept as a student id.
HUB_NAME = re.compile(r"[a-z0-9][a-z0-9_.@-]{0,99}")


def course_role(claims: dict[str, Any]) -> str | None:
    """``"instructor"``, ``"student"`` or None, from the roles claim's full URIs only."""
    roles = claims.get(LTI + "roles")
    if not isinstance(roles, list):
        return None
    given = {r for r in roles if isinstance(r, str)}
    if given & INSTRUCTOR_ROLES:
        return "instructor"
    if given & LEARNER_ROLES:
        return "student"
    return None


def hub_name(sub: object) -> str | None:
    """The hub user name for an LMS ``sub``: itself, lower-cased, when it is a safe name."""
    if not isinstance(sub, str):
        return None
    name = sub.lower()
    return name if HUB_NAME.fullmatch(name) else None


class CourseCallbackHandler(LTI13CallbackHandler):
    """ltiauthenticator's launch handler, with the course's checks after its own."""

    def decode_and_validate_launch_request(self) -> dict[str, Any]:
        claims = super().decode_and_validate_launch_request()
        settings: LtiSettings = self.authenticator.lti_settings
        for claim in ("exp", "iat", "nonce"):
            if claim not in claims:
                raise HTTPError(400, f"the launch's id_token has no {claim!r} claim")
        if claims.get(LTI + "message_type") != "LtiResourceLinkRequest":
            raise HTTPError(
                400, "this tool takes resource link launches only (LtiResourceLinkRequest)"
            )
        if claims.get(LTI + "deployment_id") not in settings.deployment_ids:
            raise HTTPError(
                403, "the launch's deployment id is not one this tool was registered with"
            )
        expires = float(claims["exp"]) + self.authenticator.nonce_margin
        if not self.authenticator.store.use_nonce(str(claims["nonce"]), expires):
            raise HTTPError(
                400, "this launch was used already: open the activity again from the LMS"
            )
        return claims

    async def redirect_to_next_url(self, user) -> None:
        """To the assignment the verified launch names (never the unsigned login request's)."""
        assignment = getattr(self, "_lti_assignment", "")
        if assignment and not any(g.name.startswith("formgrade-") for g in user.groups):
            target = f"course/open/{quote(assignment)}"
        else:
            target = "lab"
        self.redirect(self.hub.base_url + "user-redirect/" + target)


class KeySetHandler(BaseHandler):
    """The tool's public key set (JWKS), which the platform checks the tool's assertions with."""

    def check_xsrf_cookie(self) -> None:
        return

    async def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "max-age=300")
        self.write(json.dumps(self.authenticator.tool_key.jwks()))


class CourseLTI13Authenticator(LTI13Authenticator):
    """LTI 1.3 launches into the course (``deploy/lti.toml``; docs/lms.md)."""

    callback_handler = CourseCallbackHandler
    login_service = "your course page"

    settings_file = Unicode(config=True, help="deploy/lti.toml: the platform's registration")
    state_dir = Unicode(config=True, help="where a relative key_file and the default database are")
    allow_http = Bool(
        False, config=True, help="accept http:// platform URLs (a test platform only)"
    )
    nonce_margin = 600.0

    @default("manage_groups")
    def _manage_groups(self) -> bool:
        return True  # the LMS's role decides the course group at every launch

    @default("allow_all")
    def _allow_all(self) -> bool:
        return True  # whom the platform signs a launch for, in a linked context and role

    @default("username_key")
    def _username_key(self) -> str:
        return "sub"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lti_settings = load_settings(
            Path(self.settings_file),
            allow_http=self.allow_http,
            state=Path(self.state_dir) if self.state_dir else None,
        )
        s = self.lti_settings
        self.issuer, self.client_id = s.issuer, {s.client_id}
        self.authorize_url, self.jwks_endpoint = s.authorize_url, s.jwks_url
        self.store = LmsStore(s.database)
        self.tool_key = keys.load_or_create(s.key_file)

    def get_handlers(self, app) -> list:
        return [*super().get_handlers(app), (r"/lti13/jwks", KeySetHandler)]

    async def authenticate(self, handler, data: dict[str, Any] | None = None) -> dict[str, Any]:
        claims = data or {}
        settings = self.lti_settings
        context = claims.get(LTI + "context") or {}
        context_id = context.get("id") if isinstance(context, dict) else None
        course = settings.course_for(context_id) if isinstance(context_id, str) else None
        if course is None:
            raise HTTPError(403, "this LMS course is not linked to a course on this hub")
        role = course_role(claims)
        if role is None:
            raise HTTPError(403, "your role in this LMS course is neither Learner nor Instructor")
        name = hub_name(claims.get("sub"))
        if name is None:
            raise HTTPError(403, "the LMS's user id cannot be a hub user name")
        link = claims.get(LTI + "resource_link") or {}
        custom = claims.get(LTI + "custom") or {}
        assignment = (
            custom.get(settings.assignment_parameter, "") if isinstance(custom, dict) else ""
        )
        if not (isinstance(assignment, str) and NAME.fullmatch(assignment)):
            assignment = ""
        endpoint = claims.get(AGS_ENDPOINT) or {}
        lineitems = endpoint.get("lineitems", "") if isinstance(endpoint, dict) else ""
        if not isinstance(lineitems, str) or urlparse(lineitems).scheme not in (
            ("https", "http") if self.allow_http else ("https",)
        ):
            lineitems = ""
        scopes = endpoint.get("scope", []) if isinstance(endpoint, dict) else []
        own = endpoint.get("lineitem", "") if isinstance(endpoint, dict) else ""
        if not isinstance(own, str) or urlparse(own).scheme not in (
            ("https", "http") if self.allow_http else ("https",)
        ):
            own = ""
        launch = Launch(
            issuer=claims["iss"],
            deployment_id=claims[LTI + "deployment_id"],
            sub=claims["sub"],
            hub_name=name,
            context_id=context_id,
            course=course,
            link_id=str(link.get("id", "")) if isinstance(link, dict) else "",
            assignment=assignment,
            link_title=str(link.get("title", ""))[:200] if isinstance(link, dict) else "",
            display=str(claims.get("name", ""))[:200],
            lineitems_url=lineitems,
            scopes=tuple(s for s in scopes if isinstance(s, str))
            if isinstance(scopes, list)
            else (),
            lineitem_url=own,
        )
        try:
            self.store.record_launch(launch, now=time.time())
        except IdentityConflict as exc:
            raise HTTPError(403, str(exc)) from None
        handler._lti_assignment = assignment  # where the launch goes (CourseCallbackHandler)
        group = f"formgrade-{course}" if role == "instructor" else f"nbgrader-{course}"
        return {"name": name, "groups": [group], "auth_state": {"course": course, "role": role}}
