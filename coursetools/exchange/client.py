"""nbgrader's exchange, over HTTP: the classes ``ExchangeFactory`` loads in a user's server.

One job: do what nbgrader's default exchange does (release, fetch, submit, list, collect, release
and fetch feedback) by talking to the exchange service (:mod:`coursetools.exchange.server`)
instead of a shared folder, so that JupyterLab's Assignments tab, the formgrader and the
``nbgrader`` commands work unchanged. Configure it in ``nbgrader_config.py``::

    from coursetools.exchange import client
    client.use_http_exchange(c, url="http://hub.example/services/exchange/")

Every request carries the user's JupyterHub token (``JUPYTERHUB_API_TOKEN``, which the hub puts
in each single-user server's environment); the service decides who the user is from it. The
local side (which folder a fetched assignment goes to, ``timestamp.txt`` beside a collected
hand-in, the feedback folders) is nbgrader's own layout.

This module runs in students' servers: it imports the standard library, traitlets and nbgrader,
and :mod:`coursetools.exchange.archive` only.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from nbgrader.exchange import abc
from nbgrader.utils import parse_utc
from traitlets import Bool, Float, Integer, Unicode, default

from coursetools.exchange import archive

__all__ = [
    "HttpCollect",
    "HttpExchange",
    "HttpFetchAssignment",
    "HttpFetchFeedback",
    "HttpList",
    "HttpReleaseAssignment",
    "HttpReleaseFeedback",
    "HttpSubmit",
    "use_http_exchange",
]

DIGEST_FILE = ".exchange-digest"  # beside fetched feedback: which release of it this is


class HttpExchange(abc.Exchange):
    """What every HTTP exchange class shares: the service's address, the token, the requests."""

    url = Unicode(help="The exchange service's address (default: $NBGRADER_EXCHANGE_URL)").tag(
        config=True
    )
    token = Unicode(help="The user's JupyterHub token (default: $JUPYTERHUB_API_TOKEN)").tag(
        config=True
    )
    max_bytes = Integer(20 * 1024 * 1024, help="The largest archive sent or accepted").tag(
        config=True
    )
    timeout = Float(120.0, help="Seconds one request may take").tag(config=True)
    path_includes_course = Bool(
        False, help="Whether fetched assignments go to <course>/<assignment> (nbgrader's option)"
    ).tag(config=True)

    @default("url")
    def _url_default(self) -> str:
        return os.environ.get("NBGRADER_EXCHANGE_URL", "")

    @default("token")
    def _token_default(self) -> str:
        return os.environ.get("JUPYTERHUB_API_TOKEN", "")

    # ------------------------------------------------------------------------------ requests

    def _path(self, *parts: str) -> str:
        return "/".join(urllib.parse.quote(p, safe="") for p in parts)

    def request(
        self,
        method: str,
        *parts: str,
        query: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> tuple[int, bytes]:
        """``(status, body)`` of one call to the service; 4xx and 5xx raise ExchangeError with the
        service's reason, except 404, which is returned (the caller says what was missing)."""
        if not self.url:
            self.fail("No exchange service: set HttpExchange.url or $NBGRADER_EXCHANGE_URL")
        if not self.token:
            self.fail("No JupyterHub token: set HttpExchange.token or $JUPYTERHUB_API_TOKEN")
        address = self.url.rstrip("/") + "/api/courses/" + self._path(*parts)
        if query:
            address += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v})
        headers = {"Authorization": f"token {self.token}"}
        if body is not None:
            headers["Content-Type"] = "application/gzip"
        call = urllib.request.Request(address, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(call, timeout=self.timeout) as reply:
                return reply.status, reply.read(self.max_bytes + 1)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return 404, b""
            try:
                reason = json.loads(exc.read(65536) or b"{}").get("message") or exc.reason
            except ValueError:
                reason = exc.reason
            self.fail(f"The exchange refused ({exc.code}): {reason}")
        except (urllib.error.URLError, OSError) as exc:
            self.fail(f"The exchange service at {self.url} did not answer: {exc}")
        raise AssertionError("unreachable")

    def get_json(self, *parts: str, query: dict[str, str] | None = None) -> Any:
        status, data = self.request("GET", *parts, query=query)
        if status == 404:
            return None
        return json.loads(data)

    def course(self) -> str:
        if not self.coursedir.course_id:
            self.fail("No course id specified. Re-run with --course flag.")
        return self.coursedir.course_id

    def local_assignment(self, course: str, assignment: str) -> Path:
        root = Path(course, assignment) if self.path_includes_course else Path(assignment)
        return Path(self.assignment_dir, root).absolute()

    def init_src(self) -> None:
        pass

    def init_dest(self) -> None:
        pass


# ----------------------------------------------------------------------------------- instructor


class HttpReleaseAssignment(HttpExchange, abc.ExchangeReleaseAssignment):
    """Release ``release/<assignment>`` of the course directory to the service."""

    def copy_files(self) -> None:
        course, assignment = self.course(), self.coursedir.assignment_id
        source = Path(self.coursedir.format_path(self.coursedir.release_directory, ".", assignment))
        if not source.is_dir():
            self.fail(f"Assignment not found: {source} (run generate_assignment first)")
        try:
            data = archive.pack(
                source,
                max_bytes=self.max_bytes,
                skip=(".ipynb_checkpoints", *self.coursedir.ignore),
            )
        except archive.ArchiveError as exc:
            self.fail(str(exc))
        query = {"force": "1"} if self.force else None
        status, _ = self.request("PUT", course, "assignments", assignment, query=query, body=data)
        if status == 404:
            self.fail(f"No course {course} on the exchange")
        self.log.info("Released as: %s %s", course, assignment)


class HttpCollect(HttpExchange, abc.ExchangeCollect):
    """Collect each student's newest hand-in (or the newest before the due date) into
    ``submitted/<student>/<assignment>`` with its ``timestamp.txt``."""

    def copy_files(self) -> None:
        course, assignment = self.course(), self.coursedir.assignment_id
        student = self.coursedir.student_id if self.coursedir.student_id not in ("", "*") else None
        records = (
            self.get_json(
                course, "submissions", query={"assignment": assignment, "student": student}
            )
            or []
        )
        duedate = self._duedate()
        chosen: dict[str, dict] = {}
        for record in sorted(records, key=lambda r: parse_utc(r["timestamp"])):
            stamp = parse_utc(record["timestamp"])
            keep = chosen.get(record["student"])
            if self.before_duedate and duedate is not None and keep is not None:
                if parse_utc(keep["timestamp"]) <= duedate < stamp:
                    continue  # the newest before the due date stays
            chosen[record["student"]] = record
        if not chosen:
            self.log.warning(
                "No submissions of '%s' for course '%s' to collect", assignment, course
            )
        for name, record in sorted(chosen.items()):
            dest = Path(
                self.coursedir.format_path(self.coursedir.submitted_directory, name, assignment)
            )
            if dest.is_dir():
                existing = self.coursedir.get_existing_timestamp(str(dest))
                newer = existing is None or parse_utc(record["timestamp"]) > existing
                if not (
                    (self.update and newer)
                    or (self.before_duedate and existing != parse_utc(record["timestamp"]))
                ):
                    self.log.info(
                        "Submission already exists, use --update to update: %s %s", name, assignment
                    )
                    continue
            status, data = self.request(
                "GET", course, "assignments", assignment, "submissions", name, record["timestamp"]
            )
            if status == 404:
                self.log.warning(
                    "The hand-in of %s at %s is gone from the exchange", name, record["timestamp"]
                )
                continue
            with tempfile.TemporaryDirectory(
                dir=dest.parent if dest.parent.exists() else None
            ) as tmp:
                staged = Path(tmp, "submission")
                archive.unpack(data, staged, max_bytes=self.max_bytes)
                (staged / "timestamp.txt").write_text(record["timestamp"])
                (staged / "submission_secret.txt").write_text(record["secret"])
                dest.parent.mkdir(parents=True, exist_ok=True)
                if dest.exists():
                    shutil.rmtree(dest)
                shutil.move(str(staged), dest)
            self.log.info("Collected submission: %s %s (%s)", name, assignment, record["timestamp"])

    def _duedate(self):
        if not self.before_duedate:
            return None
        from nbgrader.api import Gradebook, MissingEntry  # noqa: PLC0415 - the instructor's side only

        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                return gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                return None


class HttpReleaseFeedback(HttpExchange, abc.ExchangeReleaseFeedback):
    """Release ``feedback/<student>/<assignment>/*.html`` to the hand-in it was made from."""

    def copy_files(self) -> None:
        course, assignment = self.course(), self.coursedir.assignment_id
        pattern = self.coursedir.format_path(self.coursedir.feedback_directory, "*", assignment)
        exclude = set(filter(None, self.coursedir.student_id_exclude.split(",")))
        wanted = self.coursedir.student_id if self.coursedir.student_id not in ("", "*") else None
        root = Path(self.coursedir.format_path(self.coursedir.feedback_directory, ".", "."))
        for folder in sorted(Path(p) for p in _glob(pattern)):
            name = (
                folder.relative_to(root).parts[0]
                if folder.is_relative_to(root)
                else folder.parent.name
            )
            if name in exclude or (wanted and name != wanted) or not list(folder.glob("*.html")):
                continue
            stamp_file = folder / "timestamp.txt"
            if not stamp_file.is_file():
                self.log.warning("No timestamp.txt in %s: not released", folder)
                continue
            with tempfile.TemporaryDirectory() as tmp:
                for page in folder.glob("*.html"):
                    shutil.copy(page, tmp)
                data = archive.pack(Path(tmp), max_bytes=self.max_bytes)
            stamp = stamp_file.read_text().strip()
            status, _ = self.request(
                "PUT",
                course,
                "assignments",
                assignment,
                "submissions",
                name,
                stamp,
                "feedback",
                body=data,
            )
            if status == 404:
                self.log.warning(
                    "No hand-in of %s at %s on the exchange: feedback not released", name, stamp
                )
                continue
            self.log.info("Released feedback for %s on %s/%s (%s)", name, course, assignment, stamp)


def _glob(pattern: str) -> list[str]:
    import glob  # noqa: PLC0415

    return glob.glob(pattern)


# -------------------------------------------------------------------------------------- student


class HttpFetchAssignment(HttpExchange, abc.ExchangeFetchAssignment):
    """Fetch a release into ``<assignment>/`` (or ``<course>/<assignment>/``)."""

    def copy_files(self) -> None:
        course, assignment = self.course(), self.coursedir.assignment_id
        dest = self.local_assignment(course, assignment)
        if dest.is_dir() and not self.replace_missing_files:
            self.fail(f"You already have a copy of the assignment in this directory: {dest.name}")
        status, data = self.request("GET", course, "assignments", assignment)
        if status == 404:
            self.fail(f"Assignment not found: {course}/{assignment} is not released")
        with tempfile.TemporaryDirectory() as tmp:
            archive.unpack(data, Path(tmp), max_bytes=self.max_bytes)
            for source in sorted(Path(tmp).rglob("*")):
                if source.is_dir():
                    continue
                target = dest / source.relative_to(tmp)
                if target.exists():
                    continue  # replace_missing_files: only what is missing
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        self.log.info("Fetched as: %s %s", course, assignment)


class HttpSubmit(HttpExchange, abc.ExchangeSubmit):
    """Hand in ``<assignment>/``: the service records it under the token's user and its own clock."""

    def copy_files(self) -> None:
        course, assignment = self.course(), self.coursedir.assignment_id
        source = self.local_assignment(course, assignment)
        if not source.is_dir():
            self.fail(f"Assignment not found: {source}")
        release = self.get_json(course, "assignments")
        released = {r["assignment"]: r for r in release or []}
        if assignment not in released:
            self.fail(f"Assignment not found: {course}/{assignment} is not released")
        self._check_notebooks(source, released[assignment]["files"])
        try:
            data = archive.pack(
                source, max_bytes=self.max_bytes, skip=(".ipynb_checkpoints", "feedback")
            )
        except archive.ArchiveError as exc:
            self.fail(str(exc))
        status, body = self.request(
            "POST", course, "assignments", assignment, "submissions", body=data
        )
        if status == 404:
            self.fail(f"Assignment not found: {course}/{assignment} is not released")
        record = json.loads(body)
        self.timestamp = record["timestamp"]
        self.log.info("Submitted as: %s %s %s", course, assignment, record["timestamp"])

    def _check_notebooks(self, source: Path, released_files: list[str]) -> None:
        released = {f for f in released_files if f.endswith(".ipynb")}
        handed = {
            p.relative_to(source).as_posix()
            for p in source.rglob("*.ipynb")
            if ".ipynb_checkpoints" not in p.parts
        }
        missing, extra = sorted(released - handed), sorted(handed - released)
        if missing and self.strict:
            self.fail(
                f"Assignment {source.name} not submitted. There are missing notebooks: {', '.join(missing)}"
            )
        if missing or extra:
            self.log.warning(
                "Possible missing notebooks %s and/or extra notebooks %s", missing, extra
            )


class HttpFetchFeedback(HttpExchange, abc.ExchangeFetchFeedback):
    """Fetch the feedback of one's hand-ins into ``<assignment>/feedback/<timestamp>/``."""

    def copy_files(self) -> None:
        course, assignment = self.course(), self.coursedir.assignment_id
        records = self.get_json(course, "submissions", query={"assignment": assignment}) or []
        fetched = 0
        for record in records:
            if not record["has_feedback"]:
                continue
            status, data = self.request(
                "GET",
                course,
                "assignments",
                assignment,
                "submissions",
                record["student"],
                record["timestamp"],
                "feedback",
            )
            if status == 404:
                continue
            folder = self.local_assignment(course, assignment) / "feedback" / record["timestamp"]
            archive.unpack(data, folder, max_bytes=self.max_bytes)
            (folder / DIGEST_FILE).write_text(record["feedback_digest"])
            fetched += 1
            self.log.info("Fetched feedback: %s %s %s", course, assignment, record["timestamp"])
        if not fetched:
            self.log.warning("No feedback available to fetch for %s %s", course, assignment)


class HttpList(HttpExchange, abc.ExchangeList):
    """The released assignments, or one's hand-ins with their feedback, as nbgrader's list does."""

    def copy_files(self) -> None:  # listing moves no file
        pass

    def _courses(self) -> list[str]:
        if self.coursedir.course_id:
            return [self.coursedir.course_id]
        return self.get_json("") or []

    def list_files(self) -> list[dict]:
        if self.inbound or self.cached:
            return self._submitted()
        return self._released()

    def _released(self) -> list[dict]:
        out = []
        for course in self._courses():
            for record in self.get_json(course, "assignments") or []:
                if (
                    self.coursedir.assignment_id
                    and record["assignment"] != self.coursedir.assignment_id
                ):
                    continue
                local = self.local_assignment(course, record["assignment"])
                fetched = local.is_dir()
                base = local if fetched else Path(record["assignment"])
                notebooks = sorted(
                    f for f in record["files"] if f.endswith(".ipynb") and "/" not in f
                )
                out.append(
                    {
                        "course_id": course,
                        "assignment_id": record["assignment"],
                        "status": "fetched" if fetched else "released",
                        "path": str(base),
                        "notebooks": [
                            {"notebook_id": Path(n).stem, "path": str(base / n)} for n in notebooks
                        ],
                    }
                )
                self.log.info(
                    "%s %s%s",
                    course,
                    record["assignment"],
                    " (already downloaded)" if fetched else "",
                )
        return out

    def _submitted(self) -> list[dict]:
        groups: dict[tuple[str, str, str], list[dict]] = {}
        for course in self._courses():
            query = {"assignment": self.coursedir.assignment_id}
            if self.inbound and self.coursedir.student_id not in ("", "*"):
                query["student"] = self.coursedir.student_id
            for record in self.get_json(course, "submissions", query=query) or []:
                info = self._submission(course, record)
                groups.setdefault((course, record["student"], record["assignment"]), []).append(
                    info
                )
        out = []
        for (course, student, assignment), submissions in sorted(groups.items()):
            submissions.sort(key=lambda s: s["timestamp"])
            for info in submissions:  # as nbgrader's own list prints them
                if info["has_local_feedback"] and not info["feedback_updated"]:
                    state = "feedback already fetched"
                elif info["has_exchange_feedback"]:
                    state = "feedback ready to be fetched"
                else:
                    state = "no feedback available"
                self.log.info(
                    "%s %s %s %s (%s)", course, student, assignment, info["timestamp"], state
                )
            out.append(
                {
                    "course_id": course,
                    "student_id": student,
                    "assignment_id": assignment,
                    "status": "submitted",
                    "submissions": submissions,
                }
            )
        return out

    def _submission(self, course: str, record: dict) -> dict:
        local = self.local_assignment(course, record["assignment"])
        feedback_dir = local / "feedback" / record["timestamp"]
        notebooks = []
        for name in sorted(f for f in record["files"] if f.endswith(".ipynb") and "/" not in f):
            page = feedback_dir / f"{Path(name).stem}.html"
            has_local = page.is_file()
            has_exchange = (
                bool(record["feedback"]) and f"{Path(name).stem}.html" in record["feedback"]
            )
            digest_file = feedback_dir / DIGEST_FILE
            updated = (
                has_local
                and has_exchange
                and (
                    not digest_file.is_file()
                    or digest_file.read_text().strip() != record["feedback_digest"]
                )
            )
            notebooks.append(
                {
                    "notebook_id": Path(name).stem,
                    "path": str(local / name),
                    "has_local_feedback": has_local,
                    "has_exchange_feedback": has_exchange,
                    "local_feedback_path": str(page) if has_local else None,
                    "feedback_updated": updated,
                }
            )
        has_local = bool(notebooks) and all(n["has_local_feedback"] for n in notebooks)
        return {
            "course_id": course,
            "student_id": record["student"],
            "assignment_id": record["assignment"],
            "timestamp": record["timestamp"],
            "status": "submitted",
            "path": str(local),
            "notebooks": notebooks,
            "has_local_feedback": has_local,
            "has_exchange_feedback": bool(notebooks)
            and all(n["has_exchange_feedback"] for n in notebooks),
            "feedback_updated": any(n["feedback_updated"] for n in notebooks),
            "local_feedback_path": str(feedback_dir) if has_local else None,
        }

    def remove_files(self) -> list[dict]:
        listed = self.list_files()
        if self.inbound or self.cached:
            self.fail(
                "Hand-ins are kept by the exchange; they cannot be removed from a student's server"
            )
        for info in listed:
            self.request("DELETE", info["course_id"], "assignments", info["assignment_id"])
            info["status"] = "removed"
        return listed


def use_http_exchange(c: Any, *, url: str | None = None) -> None:
    """Point nbgrader's ``ExchangeFactory`` (config ``c``) at the HTTP exchange's classes."""
    factory = c.ExchangeFactory
    factory.exchange = HttpExchange
    factory.fetch_assignment = HttpFetchAssignment
    factory.fetch_feedback = HttpFetchFeedback
    factory.release_assignment = HttpReleaseAssignment
    factory.release_feedback = HttpReleaseFeedback
    factory.list = HttpList
    factory.submit = HttpSubmit
    factory.collect = HttpCollect
    if url:
        c.HttpExchange.url = url
