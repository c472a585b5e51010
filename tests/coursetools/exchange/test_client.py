"""nbgrader's own commands through the HTTP exchange, as on Kubernetes (coursetools.exchange.client).

Every "pod" is a folder of its own run by the same OS user (this test's), with no shared exchange
folder: the instructor releases, collects and releases feedback from the course directory; each
student fetches, hands in, lists and fetches feedback from a home of their own, with nothing but
their hub token to say who they are. A student who names a classmate on the command line still
hands in as themselves.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
from exchange_hub import exchange_hub  # noqa: F401 - the fixture
from hub_harness import COURSE_ID
from pilot_course import ROOT, fill_answers

BIN = Path(sys.executable).parent


def _nbgrader(
    hub, user: str, cwd: Path, *args: str, check: bool = True
) -> subprocess.CompletedProcess:
    role = "instructor" if user == "instructor" else "student"
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(cwd),
        "JUPYTER_CONFIG_PATH": str(ROOT / "deploy" / role),
        "JUPYTER_DATA_DIR": str(cwd / ".jupyter-data"),
        "COURSE_ROOT": str(hub.course),
        "COURSE_ID": COURSE_ID,
        "NBGRADER_EXCHANGE": str(cwd / "no-shared-exchange"),  # must never be used
        "NBGRADER_EXCHANGE_URL": hub.exchange.url,
        "JUPYTERHUB_API_TOKEN": hub.tokens[user],
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [str(BIN / "nbgrader"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert done.returncode == 0, (
            f"nbgrader {' '.join(args)} as {user}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return done


def test_release_fetch_submit_collect_and_feedback_with_nbgraders_commands(exchange_hub, tmp_path):  # noqa: F811 - the fixture
    hub = exchange_hub
    course = hub.course
    homes = {s: tmp_path / s for s in ("student1", "student2")}
    for home in homes.values():
        home.mkdir()

    _nbgrader(hub, "instructor", course, "release_assignment", "pilot", "--force")
    for student, home in homes.items():
        listed = _nbgrader(hub, student, home, "list")
        assert f"{COURSE_ID} pilot" in listed.stdout + listed.stderr
        _nbgrader(hub, student, home, "fetch_assignment", "pilot")
        assert (home / "pilot" / "pilot.ipynb").is_file()
        again = _nbgrader(hub, student, home, "fetch_assignment", "pilot", check=False)
        assert again.returncode != 0 and "already have a copy" in again.stdout + again.stderr
    notebook = homes["student1"] / "pilot" / "pilot.ipynb"
    nbformat.write(fill_answers(nbformat.read(notebook, as_version=4)), notebook)
    _nbgrader(hub, "student1", homes["student1"], "submit", "pilot")
    # student2 names student1 on the command line: the exchange knows them by their token
    _nbgrader(hub, "student2", homes["student2"], "submit", "pilot", "--student", "student1")

    _nbgrader(hub, "instructor", course, "collect", "pilot", "--update")
    submitted = course / "build" / "nbgrader" / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["student1", "student2"]
    answered = (submitted / "student1" / "pilot" / "pilot.ipynb").read_text()
    assert answered == notebook.read_text()  # what arrived is what was handed in
    assert (
        "raise NotImplementedError"
        in (submitted / "student2" / "pilot" / "pilot.ipynb").read_text()
    )
    for student in homes:
        stamp = (submitted / student / "pilot" / "timestamp.txt").read_text()
        feedback = course / "build" / "nbgrader" / "feedback" / student / "pilot"
        feedback.mkdir(parents=True, exist_ok=True)
        (feedback / "pilot.html").write_text(f"<p>feedback for {student}</p>")
        (feedback / "timestamp.txt").write_text(stamp)
    _nbgrader(hub, "instructor", course, "release_feedback", "pilot")

    for student, home in homes.items():
        _nbgrader(hub, student, home, "fetch_feedback", "pilot")
        (page,) = (home / "pilot" / "feedback").glob("*/pilot.html")
        assert page.read_text() == f"<p>feedback for {student}</p>"
        cached = _nbgrader(hub, student, home, "list", "--cached")
        said = cached.stdout + cached.stderr
        assert f"{COURSE_ID} {student} pilot" in said and "(feedback already fetched)" in said
        others = {"student1", "student2"} - {student}
        assert not any(f" {other} pilot" in said for other in others)
        (assignment,) = _listed(hub, student, home)
        assert assignment["student_id"] == student and assignment["status"] == "submitted"
        (submission,) = assignment["submissions"]
        assert submission["has_local_feedback"] and submission["has_exchange_feedback"]
        assert not submission["feedback_updated"]
        assert Path(submission["local_feedback_path"]) == page.parent


def _listed(hub, user: str, home: Path) -> list[dict]:
    """What JupyterLab's Assignments tab gets: the list of submitted assignments, as a dict."""
    from nbgrader.auth import Authenticator  # noqa: PLC0415
    from nbgrader.coursedir import CourseDirectory  # noqa: PLC0415
    from traitlets.config import Config  # noqa: PLC0415

    from coursetools.exchange.client import HttpList  # noqa: PLC0415

    config = Config()
    config.CourseDirectory.course_id = COURSE_ID
    config.HttpExchange.url = hub.exchange.url
    config.HttpExchange.token = hub.tokens[user]
    config.HttpExchange.assignment_dir = str(home)
    config.ExchangeList.cached = True
    lister = HttpList(
        coursedir=CourseDirectory(config=config),
        authenticator=Authenticator(config=config),
        config=config,
    )
    return lister.start()
