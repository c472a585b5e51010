"""A JupyterHub started from deploy/jupyterhub_config.py for the end-to-end tests, and calls to it.

Shared by ``tests/deploy/test_hub.py`` (the instructor's loop by hand) and ``tests/coursetools/grading/handin/test_hub_handin.py``
(feedback at hand-in): one-machine demo mode (a dummy authenticator, every server as this test's
OS user), an instructor and two students, driven through the HTTP endpoints JupyterLab's nbgrader
panels call.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from pilot_course import ROOT, fill_answers, pilot_course

BIN = Path(sys.executable).parent
COURSE_ID = "dp-course"
USERS = ("instructor", "student1", "student2")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hub:
    """The running hub, and HTTP calls to it as the admin service or as one of its users."""

    def __init__(self, url: str, admin_token: str) -> None:
        self.url, self.admin = url, admin_token
        self.tokens: dict[str, str] = {}

    def call(self, method, path, token, *, data=None, form=None, timeout=120):
        headers = {"Authorization": f"token {token}"}
        body = None
        if data is not None:
            body, headers["Content-Type"] = json.dumps(data).encode(), "application/json"
        if form is not None:
            body = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            text = reply.read().decode()
        return json.loads(text) if text else None

    def as_user(self, user, method, path, **kw):
        return self.call(method, f"/user/{user}{path}", self.tokens[user], **kw)

    def nbgrader(self, user, path, **form):
        """An nbgrader action; its JSON reply must say success (else the log says why)."""
        reply = self.as_user(user, "POST", path, form=form)
        assert reply["success"], f"{user} {path}: {reply.get('error') or reply.get('log')}"[:2000]
        return reply

    def start_servers(self, users, timeout=240) -> None:
        for user in users:  # all at once: each takes some seconds to import JupyterLab
            try:
                self.call("POST", f"/hub/api/users/{user}/server", self.admin, data={})
            except urllib.error.HTTPError as exc:
                if exc.code != 400:  # 400: already running
                    raise
        deadline = time.monotonic() + timeout
        waiting = set(users)
        while waiting and time.monotonic() < deadline:
            for user in sorted(waiting):
                model = self.call("GET", f"/hub/api/users/{user}", self.admin)
                if (model["servers"].get("") or {}).get("ready"):
                    waiting.discard(user)
            time.sleep(0.5)
        assert not waiting, f"servers never became ready: {sorted(waiting)}"
        self.issue_tokens(users)

    def issue_tokens(self, users, expires_in: int = 3600) -> None:
        """An API token of each user's own (as the hub puts in their server's environment)."""
        for user in users:
            self.tokens[user] = self.new_token(user, expires_in)

    def new_token(self, user: str, expires_in: int = 3600) -> str:
        return self.call(
            "POST",
            f"/hub/api/users/{user}/tokens",
            self.admin,
            data={"note": "end-to-end test", "expires_in": expires_in},
        )["token"]


@contextlib.contextmanager
def running_hub(
    course: Path, *, servers: bool = True, users: tuple[str, ...] | None = None, **extra_env: str
) -> Iterator[Hub]:
    """The hub of ``deploy/jupyterhub_config.py`` for ``course``, the servers of ``users`` started
    (``servers=False``: none started, and each user gets an API token of their own; ``users=()``
    for a hub whose users arrive later, from an LMS)."""
    users = USERS if users is None else users
    state = course.parent / "hub-state"
    port = _free_port()
    admin = secrets.token_hex(16)
    env = {
        **os.environ,
        "COURSE_ROOT": str(course),
        "NBGRADER_EXCHANGE": str(course.parent / "exchange"),
        "INSTRUCTORS": "instructor",
        "STUDENTS": "student1,student2",
        "COURSE_HUB_STATE": str(state),
        "COURSE_HUB_DEMO": "1",
        "COURSE_HUB_ADMIN_TOKEN": admin,
        "HUB_PORT": str(port),
        "HUB_API_PORT": str(_free_port()),
        "PROXY_API_PORT": str(_free_port()),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        **extra_env,
    }
    log = (course.parent / "hub.log").open("wb")
    process = subprocess.Popen(
        [str(BIN / "jupyterhub"), "-f", str(ROOT / "deploy" / "jupyterhub_config.py")],
        cwd=course.parent,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    running = Hub(f"http://127.0.0.1:{port}", admin)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                running.call("GET", "/hub/api/users", admin, timeout=5)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                assert process.poll() is None, "the hub exited: " + _tail(course.parent / "hub.log")
                assert time.monotonic() < deadline, "the hub never answered: " + _tail(
                    course.parent / "hub.log"
                )
                time.sleep(0.5)
        if servers:
            running.start_servers(users)
        else:
            running.issue_tokens(users)
        yield running
    finally:
        process.terminate()  # the hub stops the servers it spawned
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
        # any server left behind, and the hub's services (the hand-in service and the exchange
        # name the course's folders, not the hub's state) if the hub died before stopping them
        subprocess.run(["pkill", "-f", str(state)], check=False)
        subprocess.run(["pkill", "-f", str(course)], check=False)
        log.close()


def _tail(path: Path) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-15:])


# The instructor's loop by hand (tests/deploy/test_hub.py, tests/browser/test_hub_panels.py): a
# module's pilot course and a hub on it with the hand-in service off.
@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A course directory like this repository's, holding the pilot assignment."""
    return pilot_course(tmp_path_factory.mktemp("hub") / "course")


@pytest.fixture(scope="module")
def hub(course):
    # the hand-in service off: this test is the instructor's loop by hand (tests/coursetools/grading/handin/test_hub_handin.py
    # has the service)
    with running_hub(course, COURSE_HANDIN="0") as running:
        yield running


@contextlib.contextmanager
def http_exchange_hub(root: Path) -> Iterator[Hub]:
    """A pilot course in ``root`` and its hub with the HTTP exchange (``COURSE_EXCHANGE=http``,
    no shared folder) and the hand-in service off, its three servers started; ``.course``."""
    course = pilot_course(root / "course")
    with running_hub(
        course,
        COURSE_HANDIN="0",
        COURSE_EXCHANGE="http",
        EXCHANGE_PORT=str(_free_port()),
        EXCHANGE_VOLUME=str(root / "volume"),
    ) as running:
        running.course = course
        yield running


def grade_collected(course: Path) -> list[str]:
    """Grade what the formgrader collected with the course's grader (make grade's command);
    the students it graded."""
    submitted = course / "build" / "nbgrader" / "submitted"
    graded = subprocess.run(
        [sys.executable, "-m", "coursetools", "grade", str(submitted),
         "--source", str(course / "solutions"), "--grades", str(course / "build" / "grades.csv"),
         "--nbgrader-config", str(course / "nbgrader_config.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    return sorted(p.name for p in submitted.iterdir())


def class_loop(hub: Hub, course: Path, *, shared_exchange: Path | None) -> None:
    """A class on the hub through JupyterLab's endpoints: release, fetch, submit, collect, grade
    with the course's grader, release and fetch feedback. ``shared_exchange``: nbgrader's folder
    (whose files each step checks), or None for the HTTP exchange (which must leave none)."""
    exchange = shared_exchange if shared_exchange is not None else course.parent / "exchange"
    # 1. release
    hub.nbgrader("instructor", "/formgrader/api/assignment/pilot/release")
    if shared_exchange is not None:
        assert (exchange / COURSE_ID / "outbound" / "pilot" / "pilot.ipynb").is_file()

    # 2. each student fetches, answers (student1 everything, student2 nothing) and submits
    for student, answer in (("student1", True), ("student2", False)):
        listed = hub.as_user(student, "GET", f"/assignments?course_id={COURSE_ID}")
        assert [a["assignment_id"] for a in listed["value"]] == ["pilot"], listed
        hub.nbgrader(student, "/assignments/fetch", assignment_id="pilot", course_id=COURSE_ID)
        path = "/api/contents/pilot/pilot.ipynb"
        model = hub.as_user(student, "GET", path + "?content=1")
        assert "raise NotImplementedError" in json.dumps(model["content"])  # the release, blank
        if answer:
            hub.as_user(
                student,
                "PUT",
                path,
                data={
                    "type": "notebook",
                    "format": "json",
                    "content": fill_answers(nbformat.from_dict(model["content"])),
                },
            )
        hub.nbgrader(student, "/assignments/submit", assignment_id="pilot", course_id=COURSE_ID)
    if shared_exchange is not None:
        inbound = sorted(p.name.split("+")[0] for p in (exchange / COURSE_ID / "inbound").iterdir())
        assert inbound == ["student1", "student2"]  # each under their own hub name
    else:
        assert not exchange.exists()  # no shared folder at all

    # 3. the instructor collects, grades with the course's grader, releases feedback
    collected = hub.nbgrader("instructor", "/formgrader/api/assignment/pilot/collect")
    # demo mode: every server runs as one OS account, so nbgrader's owner check is off there
    assert "cheating attempt" not in str(collected.get("log", "")), collected.get("log")
    assert grade_collected(course) == ["student1", "student2"]
    rows = hub.as_user("instructor", "GET", "/formgrader/api/submitted_notebooks/pilot/pilot")
    scores = {r["student"]: (r["code_score"], r["needs_manual_grade"]) for r in rows}
    assert scores == {"student1": (7.0, True), "student2": (0.0, True)}  # written answer waits
    hub.nbgrader("instructor", "/formgrader/api/assignment/pilot/release_feedback")

    # 4. each student fetches their own feedback
    for student, score in (("student1", "7 / 7"), ("student2", "0 / 7")):
        hub.nbgrader(
            student, "/assignments/fetch_feedback", assignment_id="pilot", course_id=COURSE_ID
        )
        home = course.parent / "hub-state" / "homes" / student / "pilot" / "feedback"
        (page,) = home.glob("*/pilot.html")
        text = page.read_text()
        assert f"Autograded score: {score}" in text, (student, text[:500])
        assert f"feedback for {student}" in text
