"""The LMS the course is registered with, read from ``deploy/lti.toml``: one TOML file for the hub
and the hand-in service.

One job: read and check the LTI 1.3 registration (what the platform told the tool: its issuer,
the tool's client id, the deployment ids, the platform's login, token and key-set URLs), where
the tool keeps its key and its records, and how the LMS's courses and links map to the hub's
course and assignments. Every value is checked when the file is read, so a hub with a wrong
registration refuses to start with a message naming the key, instead of refusing launches later.
The file's comments (``deploy/lti.toml``) document each key.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

__all__ = ["LtiSettings", "load_settings"]

#: What a course id and an assignment name may be (nbgrader's names, and safe in a path).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
#: When graded hand-ins go to the LMS: at once, or only with ``make export LTI=1``.
POST_MODES = ("on-hand-in", "manual")
#: How a score with a written answer still to grade is marked: ``FullyGraded`` with a comment
#: (every platform records it; Moodle 4.5 drops a score marked otherwise), or ``PendingManual``
#: (AGS's own value, for platforms that keep a partial score).
PARTIAL_MODES = ("fully-graded", "pending-manual")


def _url(value: object, key: str, *, allow_http: bool) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a URL (a string), got {value!r}")
    parsed = urlparse(value)
    schemes = ("https", "http") if allow_http else ("https",)
    if parsed.scheme not in schemes or not parsed.netloc or parsed.fragment:
        raise ValueError(
            f"{key} must be an absolute {' or '.join(schemes)} URL without a fragment, got {value!r}"
        )
    return value


@dataclass(frozen=True)
class LtiSettings:
    """One platform registration and the course it launches into.

    Attributes
    ----------
    issuer, client_id, deployment_ids
        The platform's ``iss``, the tool's ``aud`` (client id) there, and the deployment ids a
        launch may carry (``https://purl.imsglobal.org/spec/lti/claim/deployment_id``).
    authorize_url, token_url, jwks_url
        The platform's OIDC authorization endpoint, OAuth 2 token endpoint and key set.
    key_file
        The tool's private key (made at first use; :mod:`coursetools.lms.keys`).
    database
        The SQLAlchemy URL of the tool's records (launches, line items, grades to post).
    contexts
        LMS context (course) id -> the hub's course id; the key ``"*"`` maps any other context.
    assignment_parameter
        The custom parameter of a resource link that names the assignment it opens.
    post
        ``"on-hand-in"`` (each graded hand-in's score goes at once) or ``"manual"``.
    partial
        ``"fully-graded"`` or ``"pending-manual"``: how a score whose written answers wait is
        marked (:data:`PARTIAL_MODES`).
    """

    issuer: str
    client_id: str
    deployment_ids: tuple[str, ...]
    authorize_url: str
    token_url: str
    jwks_url: str
    key_file: Path
    database: str
    contexts: dict[str, str]
    assignment_parameter: str = "assignment"
    post: str = "on-hand-in"
    partial: str = "fully-graded"

    def course_for(self, context_id: str) -> str | None:
        """The hub's course for an LMS context, or None when the context is not linked."""
        return self.contexts.get(context_id, self.contexts.get("*"))


def load_settings(
    path: Path, *, allow_http: bool = False, state: Path | None = None
) -> LtiSettings:
    """``deploy/lti.toml`` (or ``path``), checked.

    Parameters
    ----------
    path
        The TOML file.
    allow_http
        Accept ``http://`` URLs (a test platform on 127.0.0.1). A real platform is ``https``.
    state
        The folder relative paths and the default key file and database are under: the hub's
        state folder (``COURSE_HUB_STATE``), so the hub, the hand-in service and ``make export``
        share them (default: the settings file's folder).

    Raises
    ------
    ValueError
        Naming the key and what is allowed, if anything is missing or malformed.
    """
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the LTI settings: {exc}") from exc
    platform, tool, course = (data.get(k, {}) for k in ("platform", "tool", "course"))
    for section, value in (("platform", platform), ("tool", tool), ("course", course)):
        if not isinstance(value, dict):
            raise ValueError(f"{path}: [{section}] must be a table")
    base = Path(state) if state is not None else Path(path).parent
    client_id = platform.get("client_id")
    if not isinstance(client_id, str) or not client_id.strip():
        raise ValueError(f"{path}: platform.client_id must be the client id the LMS gave the tool")
    deployments = platform.get("deployment_ids")
    if (
        not isinstance(deployments, list)
        or not deployments
        or not all(isinstance(d, str) and d for d in deployments)
    ):
        raise ValueError(f"{path}: platform.deployment_ids must be a non-empty list of strings")
    contexts = course.get("contexts", {"*": course.get("course_id", "")})
    if not isinstance(contexts, dict) or not contexts:
        raise ValueError(f"{path}: course.contexts must map LMS context ids to course ids")
    for context, course_id in contexts.items():
        if not isinstance(course_id, str) or not NAME.fullmatch(course_id):
            raise ValueError(
                f"{path}: course.contexts[{context!r}] must be a course id "
                f"(letters, digits, '_', '.', '-'), got {course_id!r}"
            )
    parameter = course.get("assignment_parameter", "assignment")
    if not isinstance(parameter, str) or not re.fullmatch(r"[a-z0-9_]{1,64}", parameter):
        raise ValueError(f"{path}: course.assignment_parameter must be a custom parameter name")
    post = data.get("grades", {}).get("post", "on-hand-in")
    if post not in POST_MODES:
        raise ValueError(
            f"{path}: grades.post must be one of {', '.join(POST_MODES)}, got {post!r}"
        )
    partial = data.get("grades", {}).get("partial", "fully-graded")
    if partial not in PARTIAL_MODES:
        raise ValueError(
            f"{path}: grades.partial must be one of {', '.join(PARTIAL_MODES)}, got {partial!r}"
        )
    key_file = Path(tool.get("key_file", "lti-tool-key.pem"))
    database = tool.get("database") or f"sqlite:///{base / 'lti.sqlite'}"
    if not isinstance(database, str) or "://" not in database:
        raise ValueError(f"{path}: tool.database must be an SQLAlchemy URL, got {database!r}")
    return LtiSettings(
        issuer=_url(platform.get("issuer"), "platform.issuer", allow_http=allow_http),
        client_id=client_id,
        deployment_ids=tuple(deployments),
        authorize_url=_url(
            platform.get("authorize_url"), "platform.authorize_url", allow_http=allow_http
        ),
        token_url=_url(platform.get("token_url"), "platform.token_url", allow_http=allow_http),
        jwks_url=_url(platform.get("jwks_url"), "platform.jwks_url", allow_http=allow_http),
        key_file=key_file if key_file.is_absolute() else base / key_file,
        database=database,
        contexts=dict(contexts),
        assignment_parameter=parameter,
        post=post,
        partial=partial,
    )
