"""Scores on their way to the LMS, against the test LMS (tests/support/lti_platform.py): recorded
once, posted to the right LMS user, kept while the platform is down and posted when it is back,
refused with the platform's reason, and never sent for a student the LMS never launched. Final
grades (make export LTI=) go from a real gradebook, once per change."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from lti_platform import LEARNER, Platform
from pilot_course import ROOT, fill_answers, pilot_course

from coursetools.lms import keys
from coursetools.lms.ags import LINEITEM_SCOPE, SCORE_SCOPE, GradeService
from coursetools.lms.final import send_final_grades
from coursetools.lms.outbox import (
    MAX_BACKOFF,
    PARTIAL_COMMENT,
    GradeOutbox,
    Poster,
    backoff,
    iso_timestamp,
)
from coursetools.lms.settings import LtiSettings
from coursetools.lms.store import Launch, LmsStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def tool_key(tmp_path_factory):
    path = tmp_path_factory.mktemp("key") / "tool.pem"
    return keys.load_or_create(path), path


@pytest.fixture
def lms(tool_key):
    platform = Platform(
        client_id="tool-1", deployment_id="d1", tool_login_url="http://127.0.0.1:9/login",
        tool_redirect_uris=["http://127.0.0.1:9/callback"], tool_jwks=tool_key[0].jwks(),
    ).start()  # fmt: skip
    platform.add_context("ctx", label="DP", title="Differential privacy")
    platform.add_link(
        "link-pilot", context="ctx", title="Pilot", target_link_uri="http://127.0.0.1:9/"
    )
    for sub in ("u-ada", "u-grace"):
        platform.add_user(
            sub, roles=[LEARNER], name=sub, email=f"{sub}@example.org", contexts=["ctx"]
        )
    yield platform
    platform.stop()


@pytest.fixture
def world(lms, tool_key, tmp_path):
    """The store with ada's and grace's launches, the outbox and its clock."""
    store = LmsStore(f"sqlite:///{tmp_path / 'lti.sqlite'}")
    for sub in ("u-ada", "u-grace", "u-ghost"):  # u-ghost: a launch the platform does not know
        store.record_launch(
            Launch(
                issuer=lms.url, deployment_id="d1", sub=sub, hub_name=sub, context_id="ctx",
                course="dp-course", link_id="link-pilot", assignment="pilot", link_title="Pilot",
                lineitems_url=lms.lineitems_url("ctx"), scopes=(LINEITEM_SCOPE, SCORE_SCOPE),
            )
        )  # fmt: skip
    clock = Clock()
    outbox = GradeOutbox(
        store, GradeService("tool-1", lms.token_url, tool_key[0]), lms.url, clock=clock
    )
    return store, outbox, clock


def _hand_in(outbox, student, score, handed_in, manual=True):
    return outbox.add(
        course="dp-course", student=student, assignment="pilot", score=score, max_score=8.0,
        pending_manual=manual, handed_in=handed_in,
    )  # fmt: skip


def test_a_graded_hand_in_reaches_its_students_lms_account_once(lms, world):
    store, outbox, clock = world
    assert _hand_in(outbox, "u-ada", 7.0, "2026-12-05 10:00:00.000000 UTC")
    assert not _hand_in(outbox, "u-ada", 7.0, "2026-12-05 10:00:00.000000 UTC")  # recorded twice
    assert outbox.post_due() == 1 and outbox.post_due() == 0
    (posted,) = lms.scores("ctx", accepted_only=True)
    score = posted["score"]
    assert (score["userId"], score["scoreGiven"], score["scoreMaximum"]) == ("u-ada", 7.0, 8.0)
    # a written answer still waits: the autograded points, FullyGraded with a comment (Moodle
    # 4.5 keeps no score marked PendingManual)
    assert (score["activityProgress"], score["gradingProgress"]) == ("Submitted", "FullyGraded")
    assert score["comment"] == PARTIAL_COMMENT
    assert score["timestamp"] == iso_timestamp(clock.now)
    (item,) = lms.lineitems("ctx")
    assert (item["resourceId"], item["label"], item["resourceLinkId"]) == (
        "pilot",
        "Pilot",
        "link-pilot",
    )
    assert store.counts()["posted"] == 1


def test_nothing_is_lost_while_the_platform_is_down_and_it_waits_longer_each_time(lms, world):
    store, outbox, clock = world
    lms.outage(True, mode="refuse")
    _hand_in(outbox, "u-ada", 5.0, "t1")
    waits = []
    for _ in range(12):
        assert outbox.post_due() == 0
        (grade,) = store.grades()
        assert grade.state == "pending" and grade.reason
        waits.append(grade.next_try - clock.now)
        clock.now = grade.next_try
    assert waits == [backoff(n) for n in range(1, 13)] and waits[-1] == MAX_BACKOFF
    assert waits[:3] == [2.0, 4.0, 8.0]
    lms.outage(False)
    assert outbox.post_due() == 1
    assert [s["score"]["scoreGiven"] for s in lms.scores("ctx", accepted_only=True)] == [5.0]


def test_a_refusal_is_kept_with_the_platforms_reason_and_others_still_go(lms, world):
    store, outbox, _ = world
    _hand_in(outbox, "u-ghost", 3.0, "t1")  # the platform has no such member
    _hand_in(outbox, "u-grace", 4.0, "t1")
    _hand_in(outbox, "nobody", 4.0, "t1")  # never launched from the LMS
    assert outbox.post_due() == 3
    by_student = {g.student: g for g in store.grades()}
    assert by_student["u-grace"].state == "posted"
    assert by_student["u-ghost"].state == "refused" and "u-ghost" in by_student["u-ghost"].reason
    assert by_student["nobody"].state == "refused"
    assert "not opened the course from the LMS" in by_student["nobody"].reason
    assert [s["score"]["userId"] for s in lms.scores("ctx", accepted_only=True)] == ["u-grace"]


def test_only_the_newest_score_goes_and_a_stale_one_is_superseded(lms, world):
    store, outbox, clock = world
    lms.outage(True)
    _hand_in(outbox, "u-ada", 2.0, "t1")
    clock.now += 60
    _hand_in(outbox, "u-ada", 6.0, "t2")
    lms.outage(False)
    clock.now += 1
    outbox.post_due()
    assert [s["score"]["scoreGiven"] for s in lms.scores("ctx", accepted_only=True)] == [6.0]
    assert sorted(g.state for g in store.grades()) == ["posted", "superseded"]


def test_bad_scores_are_refused_before_anything_is_recorded(world):
    store, outbox, _ = world
    for score, top in (
        (9.0, 8.0),
        (-1.0, 8.0),
        (1.0, 0.0),
        (float("nan"), 8.0),
        (1.0, float("inf")),
    ):
        with pytest.raises(ValueError):
            outbox.add(course="dp-course", student="u-ada", assignment="pilot", score=score,
                       max_score=top, pending_manual=False)  # fmt: skip
    assert store.grades() == []


def test_the_poster_thread_sends_a_score_as_soon_as_it_is_woken(lms, world):
    store, outbox, _ = world
    settled = []
    poster = Poster(outbox, interval=3600.0, on_settled=lambda: settled.append(1)).start()
    try:
        _hand_in(outbox, "u-ada", 7.0, "t1")
        start = time.monotonic()
        poster.wake()
        while not lms.scores("ctx", accepted_only=True) and time.monotonic() - start < 60:
            time.sleep(0.02)
    finally:
        poster.stop()
    assert len(lms.scores("ctx", accepted_only=True)) == 1 and settled == [1]


def test_final_grades_go_from_a_real_gradebook_once_per_change(lms, tool_key, tmp_path):
    key, key_path = tool_key
    course = pilot_course(tmp_path / "course")
    for student, answered in (("u-ada", True), ("u-grace", False)):
        nb = nbformat.read(course / "notebooks" / "pilot" / "pilot.ipynb", as_version=4)
        folder = tmp_path / "handed-in" / student / "pilot"
        folder.mkdir(parents=True)
        nbformat.write(fill_answers(nb) if answered else nb, str(folder / "pilot.ipynb"))
    graded = subprocess.run(
        [sys.executable, "-m", "coursetools", "grade", str(tmp_path / "handed-in"),
         "--source", str(course / "solutions"), "--grades", str(tmp_path / "grades.csv"),
         "--nbgrader-config", str(course / "nbgrader_config.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
    )  # fmt: skip
    assert graded.returncode == 0, graded.stderr[-2000:]
    settings = LtiSettings(
        issuer=lms.url, client_id="tool-1", deployment_ids=("d1",), authorize_url=lms.auth_url,
        token_url=lms.token_url, jwks_url=lms.jwks_url, key_file=key_path,
        database=f"sqlite:///{tmp_path / 'lti.sqlite'}", contexts={"*": "dp-course"},
    )  # fmt: skip
    store = LmsStore(settings.database)
    for sub in ("u-ada", "u-grace"):
        store.record_launch(Launch(
            issuer=lms.url, deployment_id="d1", sub=sub, hub_name=sub, context_id="ctx",
            course="dp-course", link_id="link-pilot", assignment="pilot",
            lineitems_url=lms.lineitems_url("ctx"), scopes=(LINEITEM_SCOPE, SCORE_SCOPE),
        ))  # fmt: skip
    db_url = f"sqlite:///{course / 'build' / 'gradebook.db'}"
    sent = send_final_grades(settings, db_url, "dp-course", wait=5.0)
    assert (sent.queued, sent.posted, sent.pending, sent.refused) == (2, 2, 0, [])
    scores = {s["score"]["userId"]: s["score"] for s in lms.scores("ctx", accepted_only=True)}
    assert {u: (s["scoreGiven"], s["scoreMaximum"]) for u, s in scores.items()} == {
        "u-ada": (7.0, 8.0), "u-grace": (0.0, 8.0),
    }  # fmt: skip
    assert {s["activityProgress"] for s in scores.values()} == {"Completed"}
    assert {s["gradingProgress"] for s in scores.values()} == {"FullyGraded"}
    assert {s["comment"] for s in scores.values()} == {PARTIAL_COMMENT}  # the written answer waits
    again = send_final_grades(settings, db_url, "dp-course", wait=5.0)
    assert again.queued == 0 and len(lms.scores("ctx", accepted_only=True)) == 2  # nothing changed


def test_a_score_goes_to_the_activitys_own_column_when_the_platform_made_one(lms, world):
    """Moodle and Canvas make a column for the activity and name it in the launch ("lineitem"):
    the score goes there, and no second column is made."""
    store, outbox, _ = world
    own = lms.add_lineitem("ctx", label="Pilot (the activity)", score_maximum=100.0)
    store.record_launch(
        Launch(
            issuer=lms.url, deployment_id="d1", sub="u-ada", hub_name="u-ada", context_id="ctx",
            course="dp-course", link_id="link-pilot", assignment="pilot", link_title="Pilot",
            lineitems_url=lms.lineitems_url("ctx"), scopes=(LINEITEM_SCOPE, SCORE_SCOPE),
            lineitem_url=own,
        )
    )  # fmt: skip
    _hand_in(outbox, "u-ada", 4.0, "t1")
    assert outbox.post_due() == 1
    (posted,) = lms.scores("ctx", accepted_only=True)
    assert posted["lineitem"] == own and len(lms.lineitems("ctx")) == 1
    (result,) = lms.results("ctx")
    assert result["resultScore"] == pytest.approx(50.0)  # 4 of 8, on the activity's 100


def test_a_platform_that_keeps_partial_scores_gets_ags_pending_manual(lms, world):
    """``[grades] partial = "pending-manual"``: AGS's own mark for a score whose written answers
    wait, with no comment; a score with nothing left to grade is FullyGraded either way."""
    store, outbox, clock = world
    outbox.partial = "pending-manual"
    _hand_in(outbox, "u-ada", 7.0, "t1", manual=True)
    _hand_in(outbox, "u-grace", 5.0, "t1", manual=False)
    assert outbox.post_due() == 2
    marks = {
        s["score"]["userId"]: (s["score"]["gradingProgress"], s["score"].get("comment"))
        for s in lms.scores("ctx", accepted_only=True)
    }
    assert marks == {"u-ada": ("PendingManual", None), "u-grace": ("FullyGraded", None)}


def test_once_the_final_grade_is_sent_a_later_hand_in_does_not_replace_it(lms, world):
    store, outbox, clock = world
    outbox.add(course="dp-course", student="u-ada", assignment="pilot", score=8.0, max_score=8.0,
               pending_manual=False, final=True, handed_in="final 8/8")  # fmt: skip
    outbox.post_due()
    clock.now += 60
    assert not _hand_in(outbox, "u-ada", 3.0, "a later hand-in")
    assert outbox.post_due() == 0
    posted = [s["score"] for s in lms.scores("ctx", accepted_only=True)]
    assert [(s["scoreGiven"], s["activityProgress"]) for s in posted] == [(8.0, "Completed")]
    assert _hand_in(outbox, "u-grace", 3.0, "t1")  # another student's hand-in still goes
