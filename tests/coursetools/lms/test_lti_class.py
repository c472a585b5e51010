"""A class of 20 from the LMS to the LMS's gradebook, on one hub: launch, hand in, score.

The hub of ``deploy/jupyterhub_config.py`` with ``COURSE_AUTH=lti13`` (so the hand-in service
runs with ``--lti``), the HTTP exchange (``COURSE_EXCHANGE=http``: every user acts with their
own hub token, as from a pod, and no single-user server is needed) and the test LMS of
``tests/support/lti_platform.py``. With nobody grading by hand:

1. an instructor and 20 learners launch from the LMS (``requests``, the whole OIDC flow); the
   instructor releases the pilot with nbgrader's own command; each learner fetches it, answers
   (three kinds of answers: 7, 5 or 4 points of 7) and hands it in;
2. each score arrives at the platform for the student's LMS ``sub`` (not the hub name), with
   scoreGiven and scoreMaximum as the student's feedback page says (the autograded score, and
   the written answer's point still to grade: ``PendingManual``, ``Submitted``); the time from
   each hand-in to its score at the platform is printed (``pytest -s``) and recorded;
3. the platform goes down while 3 students hand in again: their scores wait (``handin status
   --lti`` says so), none is lost once it is back, and then nothing waits;
4. a student whose ``sub`` the platform does not know is refused, and ``handin status`` and the
   class page (``build/class.html``) say so with the platform's reason.

Beside the class: ``/course/open``'s fetch (coursetools/lms/open_assignment.py) through the HTTP
exchange, and a student fetching at once after their first launch (the exchange reads the hub's
groups again for a user its kept answer does not name).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from hub_harness import _free_port
from lti_platform import INSTRUCTOR, LEARNER
from pilot_course import ROOT, fill_answers, pilot_course
from test_launch import (  # the hub, the platform and the launch, as test_launch.py drives them
    CONTEXT,
    COURSE_ID,
    begin_launch,
    finish_launch,
    launch,
    lti_hub,
    new_platform,
)

from coursetools.lms.outbox import PARTIAL_COMMENT

BIN = Path(sys.executable).parent
CLASS = [f"Stu-{n:02d}" for n in range(1, 21)]  # LMS subs; the hub names are lower-cased
TEACHER = "Teach-1"
GHOST = "Ghost-7"  # a sub the platform signs a launch for but has no member with
#: answers left blank, by kind: all right (7/7), clamp blank (5/7), rr_estimate blank (4/7)
BLANKS = [(), ("clamp",), ("rr_estimate",)]
SCORE_WITHIN = 240.0  # seconds for the whole class's scores to reach the platform


@pytest.fixture(scope="module")
def lms():
    platform = new_platform()
    try:
        platform.add_context(CONTEXT, label="DP101", title="Differential privacy")
        for sub in CLASS:
            platform.add_user(sub, roles=[LEARNER], name=f"Student {sub}", contexts=[CONTEXT])
        platform.add_user(TEACHER, roles=[INSTRUCTOR], name="The Teacher", contexts=[CONTEXT])
        platform.add_link(
            "link-pilot", context=CONTEXT, title="Pilot", target_link_uri="http://127.0.0.1:9/hub",
            custom={"assignment": "pilot"},
        )  # fmt: skip
        yield platform
    finally:
        platform.stop()


@pytest.fixture(scope="module")
def hub(tmp_path_factory, lms):
    root = tmp_path_factory.mktemp("lti-class")
    course = pilot_course(root / "course")
    rules = root / "handin.toml"
    rules.write_text('[default]\nattempts = 5\ncooldown_minutes = 0\nhidden_messages = "never"\n')
    port = _free_port()
    with lti_hub(
        course,
        lms,
        contexts={CONTEXT: COURSE_ID},
        COURSE_HANDIN_SETTINGS=str(rules),
        COURSE_EXCHANGE="http",
        EXCHANGE_PORT=str(port),
        EXCHANGE_VOLUME=str(root / "volume"),
    ) as running:
        running.course, running.root = course, root
        running.exchange_url = f"http://127.0.0.1:{port}/services/exchange"
        _wait_for_exchange(running.exchange_url)
        yield running


def _wait_for_exchange(url: str, timeout: float = 90.0) -> None:
    """The hub answers before its managed services do: until the exchange answers at all."""
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url + "/api/courses/", timeout=5)
            return
        except urllib.error.HTTPError:
            return  # it answered (403 without a token)
        except OSError:
            assert time.monotonic() < deadline, "the exchange service never answered"
            time.sleep(0.3)


# -- acting as one user, with their own hub token ---------------------------------------------------


def _exchange(kind, hub, user: str, home: Path):
    """nbgrader's exchange class ``kind`` of the HTTP exchange, as ``user``'s server runs it."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.course_id = COURSE_ID
    config.CourseDirectory.assignment_id = "pilot"
    config.HttpExchange.url = hub.exchange_url
    config.HttpExchange.token = hub.tokens[user]
    config.HttpExchange.assignment_dir = str(home)
    return kind(
        coursedir=CourseDirectory(config=config),
        authenticator=Authenticator(config=config),
        config=config,
    )


def _release(hub, instructor: str) -> None:
    """nbgrader release_assignment, as the instructor's server runs it (deploy/instructor)."""
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(hub.root),
        "JUPYTER_CONFIG_PATH": str(ROOT / "deploy" / "instructor"),
        "JUPYTER_DATA_DIR": str(hub.root / ".jupyter-data"),
        "COURSE_ROOT": str(hub.course),
        "COURSE_ID": COURSE_ID,
        "NBGRADER_EXCHANGE": str(hub.root / "no-shared-exchange"),  # must never be used
        "NBGRADER_EXCHANGE_URL": hub.exchange_url,
        "JUPYTERHUB_API_TOKEN": hub.tokens[instructor],
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [str(BIN / "nbgrader"), "release_assignment", "pilot", "--force"],
        cwd=hub.course, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _fetch(hub, user: str, home: Path) -> Path:
    """Fetch the pilot as ``user`` through the HTTP exchange (right after their launch: the
    exchange must know at once that the launch made them a student)."""
    from coursetools.exchange.client import HttpFetchAssignment

    home.mkdir(parents=True, exist_ok=True)
    _exchange(HttpFetchAssignment, hub, user, home).start()
    notebook = home / "pilot" / "pilot.ipynb"
    assert "raise NotImplementedError" in notebook.read_text()  # the release, blank
    return notebook


def _hand_in(hub, user: str, home: Path, blanks: tuple[str, ...]) -> float:
    """Answer (all but ``blanks``) and submit; the moment of the submission."""
    from coursetools.exchange.client import HttpSubmit

    notebook = home / "pilot" / "pilot.ipynb"
    release = nbformat.read(home / "release.ipynb", as_version=4)
    nbformat.write(fill_answers(release, skip=blanks), str(notebook))
    started = time.monotonic()
    _exchange(HttpSubmit, hub, user, home).start()
    return started


def _feedback(hub, user: str, home: Path, count: int, timeout: float) -> list[tuple[float, float]]:
    """Fetch feedback until ``count`` pages are there: each page's (score, maximum) as it says,
    the written answer's points included in the maximum, oldest first."""
    from coursetools.exchange.client import HttpFetchFeedback

    deadline = time.monotonic() + timeout
    while True:
        _exchange(HttpFetchFeedback, hub, user, home).start()
        pages = sorted((home / "pilot" / "feedback").glob("*/pilot.html"))
        if len(pages) >= count or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    assert len(pages) >= count, f"{user}: {len(pages)} feedback page(s) after {timeout:.0f} s"
    said = []
    for page in pages:
        text = " ".join(re.sub(r"<[^>]+>", " ", page.read_text()).split())
        auto = re.search(r"Autograded score: ([\d.]+) / ([\d.]+)", text)
        manual = re.search(r"plus up to ([\d.]+) point\(s\) graded by hand", text)
        assert auto, text[:1000]
        written = float(manual[1]) if manual else 0.0
        said.append((float(auto[1]), float(auto[2]) + written))
    return said


def _status(hub) -> str:
    env = {
        **os.environ,
        "COURSE_HUB_STATE": str(hub.course.parent / "hub-state"),
        "COURSE_LTI_ALLOW_HTTP": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "coursetools", "handin", "status", "--lti", str(hub.settings),
         "--state", str(hub.course / "build" / "handin")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _accepted(lms) -> list[dict]:
    return [s["score"] for s in lms.scores(CONTEXT, accepted_only=True)]


def _wait(predicate, timeout: float, what: str, poll: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what}: not after {timeout:.0f} s"
        time.sleep(poll)


# -- the class -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def released(hub, lms):
    """The instructor arrives from the LMS and releases the pilot with nbgrader's command."""
    reply, _ = launch(lms, TEACHER, "link-pilot")
    assert reply.status_code == 302 and reply.headers["Location"] == "/hub/user-redirect/lab"
    hub.issue_tokens([TEACHER.lower()])
    _release(hub, TEACHER.lower())


def test_a_class_of_20_from_the_lms_to_its_gradebook(hub, lms, released, record_property):
    # 1. everyone arrives from the LMS (the instructor first, who released the pilot)
    homes = {sub: hub.root / "homes" / sub.lower() for sub in CLASS}
    for sub in CLASS:
        reply, _ = launch(lms, sub, "link-pilot")
        assert reply.status_code == 302, reply.text[-2000:]
        assert reply.headers["Location"] == "/hub/user-redirect/course/open/pilot"
    hub.issue_tokens([sub.lower() for sub in CLASS])
    start = time.monotonic()
    for sub in CLASS:
        notebook = _fetch(hub, sub.lower(), homes[sub])
        (homes[sub] / "release.ipynb").write_bytes(notebook.read_bytes())  # to answer from
    print(f"\nthe class fetched the pilot {time.monotonic() - start:.1f} s after its launches")

    # 2. each hands in; each score arrives at the platform
    handed_in: dict[str, float] = {}
    arrived: dict[str, float] = {}
    for i, sub in enumerate(CLASS):
        handed_in[sub] = _hand_in(hub, sub.lower(), homes[sub], BLANKS[i % 3])

    def all_arrived():
        now = time.monotonic()
        for score in _accepted(lms):
            arrived.setdefault(score["userId"], now)
        return len(arrived) >= len(CLASS)

    _wait(all_arrived, SCORE_WITHIN, f"scores at the platform ({sorted(arrived)})")
    waits = {sub: arrived[sub] - handed_in[sub] for sub in CLASS}
    median, worst = statistics.median(waits.values()), max(waits.values())
    print(f"\nhand-in -> score at the platform, {len(CLASS)} students: median {median:.1f} s, "
          f"worst {worst:.1f} s ({max(waits, key=waits.get)})")  # fmt: skip
    record_property("handin_to_lms_score_median_s", round(median, 2))
    record_property("handin_to_lms_score_worst_s", round(worst, 2))
    record_property("handin_to_lms_score_s", json.dumps({s: round(w, 2) for s, w in waits.items()}))

    scores = {s["userId"]: s for s in _accepted(lms)}
    assert set(scores) == set(CLASS)  # the LMS subs, never the lower-cased hub names
    for i, sub in enumerate(CLASS):
        ((given, maximum),) = _feedback(hub, sub.lower(), homes[sub], 1, timeout=60)
        assert (given, maximum) == ((7.0, 5.0, 4.0)[i % 3], 8.0)  # the written answer: 1 point
        score = scores[sub]
        assert (score["scoreGiven"], score["scoreMaximum"]) == (given, maximum), (sub, score)
        # the written answer waits: the autograded points, marked so every LMS records them
        assert score["gradingProgress"] == "FullyGraded" and score["comment"] == PARTIAL_COMMENT
        assert score["activityProgress"] == "Submitted"
    (item,) = lms.lineitems(CONTEXT)  # one column for the pilot, made once
    assert (item["resourceId"], item["label"], item["scoreMaximum"]) == ("pilot", "Pilot", 8.0)
    assert "LMS: 20 posted, 0 waiting, 0 refused" in _status(hub)

    # 3. the platform is down while 3 students hand in again (everything right this time)
    again = [sub for i, sub in enumerate(CLASS) if i % 3 == 1][:3]
    lms.outage(True)
    for sub in again:
        _hand_in(hub, sub.lower(), homes[sub], ())
    for sub in again:
        assert _feedback(hub, sub.lower(), homes[sub], 2, timeout=180)[-1] == (7.0, 8.0)

    def tried_while_down():
        return sum(status == 503 for _, path, status in lms.requests if "/scores" in path) >= 3

    _wait(tried_while_down, 60, "the service trying the platform while it is down")
    waiting = _status(hub)
    print(waiting)
    assert "LMS: 17 posted, 3 waiting, 0 refused" in waiting, waiting  # each student's latest
    for sub in again:
        assert re.search(rf"pending +{sub.lower()}/pilot 7/8: .*503", waiting), waiting
    time.sleep(5.0)  # down a while longer: the scores wait, none is given up
    assert len(_accepted(lms)) == len(CLASS)
    lms.outage(False)

    def back():
        return sum(s["userId"] in again for s in _accepted(lms)) >= 2 * len(again)

    _wait(back, 120, "the waiting scores after the platform is back")
    latest = {r["userId"]: r for r in lms.results(CONTEXT)}
    for sub in again:
        assert (latest[sub]["resultScore"], latest[sub]["resultMaximum"]) == (7.0, 8.0)
    done = _status(hub)
    assert "LMS: 20 posted, 0 waiting, 0 refused" in done, done
    assert "pending " not in done

    # 4. a student the platform does not know: signed in, graded, refused by the LMS
    begun = begin_launch(lms, CLASS[0], "link-pilot")
    reply = finish_launch(begun, lms.id_token(CLASS[0], "link-pilot", begun.nonce, sub=GHOST))
    assert reply.status_code == 302, reply.text[-2000:]
    ghost, home = GHOST.lower(), hub.root / "homes" / GHOST.lower()
    hub.issue_tokens([ghost])
    (home / "release.ipynb").write_bytes(_fetch(hub, ghost, home).read_bytes())
    _hand_in(hub, ghost, home, ())
    assert _feedback(hub, ghost, home, 1, timeout=180) == [(7.0, 8.0)]  # graded as anyone

    def refused():
        return "1 refused" in _status(hub)

    _wait(refused, 60, "the LMS's refusal", poll=1.0)
    said = _status(hub)
    print(said)
    assert re.search(rf"refused +{ghost}/pilot 7/8: .*{GHOST}.*not a member", said), said
    assert all(s["score"]["userId"] != GHOST for s in lms.scores(CONTEXT) if s["status"] == 200)

    def class_page_says():
        page = (hub.course / "build" / "class.html").read_text()
        return page if "1 refused by the LMS" in page else ""

    page = _wait(class_page_says, 60, "the class page's LMS section", poll=1.0)
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert "20 posted, 0 waiting for the LMS to answer, 1 refused by the LMS" in text, text[-2000:]
    assert re.search(rf"{ghost} pilot 7 / 8 refused .*{GHOST}.*not a member", text), text[-2000:]


def test_make_export_lti_sends_the_final_grades_once_and_says_what_was_refused(hub, lms, released):
    """After the class above: ``python -m coursetools lms-post`` (make export LTI=...) sends each
    student's final grade from the gradebook as Completed, says the ghost's was refused (exit
    1), and a second run sends nothing new."""
    env = {**os.environ, "COURSE_HUB_STATE": str(hub.course.parent / "hub-state"),
           "COURSE_LTI_ALLOW_HTTP": "1"}  # fmt: skip
    argv = [sys.executable, "-m", "coursetools", "lms-post", "--lti", str(hub.settings),
            "--nbgrader-config", str(hub.course / "nbgrader_config.py"), "--wait", "30"]  # fmt: skip
    before = len(_accepted(lms))
    first = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 1, first.stdout + first.stderr[-2000:]  # the ghost: refused
    assert "refused ghost-7/pilot" in first.stdout and "not a member" in first.stdout
    finals = [s for s in _accepted(lms)[before:] if s["activityProgress"] == "Completed"]
    assert {s["userId"] for s in finals} == set(CLASS)
    graded = {s["userId"]: s["scoreGiven"] for s in _accepted(lms)[:before]}  # the last hand-ins
    assert all(s["scoreGiven"] == graded[s["userId"]] for s in finals)  # no manual grade yet
    assert {s["gradingProgress"] for s in finals} == {"FullyGraded"}
    again = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert "0 new or changed grade(s) queued" in again.stdout, again.stdout
    assert len(_accepted(lms)) == before + len(finals)  # nothing sent twice


def test_course_open_fetches_through_the_http_exchange(hub, lms, released, monkeypatch, tmp_path):
    """/course/open's work (coursetools/lms/open_assignment.py) with the HTTP exchange, in this
    process as deploy/student configures a student's server: nbgrader's List and Fetch of the
    HTTP exchange, the student's hub token, no shared folder."""
    from coursetools.lms.open_assignment import open_assignment

    sub = CLASS[-1]
    if sub.lower() not in hub.tokens:  # this test alone: the student arrives first
        assert launch(lms, sub, "link-pilot")[0].status_code == 302
        hub.issue_tokens([sub.lower()])
    home = tmp_path / "another-server"
    home.mkdir()
    for name, value in {
        "JUPYTER_CONFIG_PATH": str(ROOT / "deploy" / "student"),
        "HOME": str(home),
        "COURSE_ID": COURSE_ID,
        "NBGRADER_EXCHANGE": str(tmp_path / "no-shared-exchange"),  # must never be used
        "NBGRADER_EXCHANGE_URL": hub.exchange_url,
        "JUPYTERHUB_API_TOKEN": hub.tokens[sub.lower()],
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("COURSE_HUB_DEMO", raising=False)
    opened = open_assignment(home, "pilot")
    assert (opened.state, opened.path, opened.course) == ("fetched", "pilot/pilot.ipynb", COURSE_ID)
    notebook = home / "pilot" / "pilot.ipynb"
    assert "raise NotImplementedError" in notebook.read_text()
    notebook.write_text(notebook.read_text().replace("raise NotImplementedError", "pass  # mine"))
    mine = notebook.read_bytes()
    assert open_assignment(home, "pilot").state == "there" and notebook.read_bytes() == mine
    assert open_assignment(home, "not_released").state == "not-released"
    assert sorted(p.name for p in home.iterdir()) == ["pilot"]  # no staging folder left
    assert not (tmp_path / "no-shared-exchange").exists()


def test_a_student_fetches_right_after_their_first_launch(hub, lms, released):
    assert _exchange_list(hub, TEACHER.lower())  # the exchange has just read the course's groups
    lms.add_user("Late-1", roles=[LEARNER], name="Late", contexts=[CONTEXT])
    reply, _ = launch(lms, "Late-1", "link-pilot")
    assert reply.status_code == 302
    hub.issue_tokens(["late-1"])
    # the exchange read the groups a moment ago, before the launch put late-1 in them: a user
    # its answer does not name makes it read them again (coursetools/exchange/server.py)
    assert _fetch(hub, "late-1", hub.root / "homes" / "late-1").is_file()


def _exchange_list(hub, user: str) -> list:
    from coursetools.exchange.client import HttpList

    return _exchange(HttpList, hub, user, hub.root).start()
