"""The HTTP exchange as the hub runs it (deploy/jupyterhub_config.py with COURSE_EXCHANGE=http).

A real JupyterHub on 127.0.0.1 starts the exchange as a managed service; users are known by their
hub tokens only, as on Kubernetes where every server is the same OS user. Hostile students with
valid tokens try to hand in as a classmate, read or list a classmate's work, overwrite a release
and exceed the size limit; forged and expired tokens try anything. The service is killed in the
middle of a class and comes back with everything.
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

from exchange_hub import MAX_MB, _wait_for, exchange_hub, tar_gz  # noqa: F401 - the fixture
from hub_harness import COURSE_ID

RELEASE = tar_gz(
    {"pilot.ipynb": b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'}
)


def test_a_token_the_hub_does_not_know_gets_403_for_everything(exchange_hub):  # noqa: F811 - the fixture
    hub = exchange_hub
    ex = hub.exchange
    expiring = hub.new_token("student1", expires_in=1)
    time.sleep(2.5)
    for token in (None, "forged-" + "0" * 32, hub.admin, expiring):
        for method, path in (
            ("GET", ""),
            ("GET", f"{COURSE_ID}/assignments"),
            ("POST", f"{COURSE_ID}/assignments/pilot/submissions"),
        ):
            status, reply = ex.call(token, method, path, b"" if method == "POST" else None)
            assert status == 403, (token, method, path, status, reply)


def test_a_class_through_the_exchange_and_what_each_student_may_not_do(exchange_hub):  # noqa: F811 - the fixture
    hub = exchange_hub
    ex, t = hub.exchange, hub.tokens
    # only an instructor releases, and a release is not overwritten by accident
    assert ex.call(t["student1"], "PUT", f"{COURSE_ID}/assignments/pilot", RELEASE)[0] == 403
    assert ex.call(t["instructor"], "PUT", f"{COURSE_ID}/assignments/pilot", RELEASE)[0] == 201
    assert ex.call(t["instructor"], "PUT", f"{COURSE_ID}/assignments/pilot", RELEASE)[0] == 409
    assert (
        ex.call(
            t["student2"],
            "PUT",
            f"{COURSE_ID}/assignments/pilot",
            tar_gz({"pilot.ipynb": b"x"}),
            force="1",
        )[0]
        == 403
    )
    status, data = ex.call(t["student1"], "GET", f"{COURSE_ID}/assignments/pilot")
    assert status == 200 and data == RELEASE
    assert ex.call(t["student1"], "GET", "")[1] == [COURSE_ID]

    # hand-ins are recorded under the token's user, whatever the archive or the request says
    status, first = ex.call(
        t["student1"],
        "POST",
        f"{COURSE_ID}/assignments/pilot/submissions",
        tar_gz({"pilot.ipynb": b"student1's answers"}),
        student="student2",
    )
    assert status == 201 and first["student"] == "student1" and "secret" not in first
    status, second = ex.call(
        t["student2"],
        "POST",
        f"{COURSE_ID}/assignments/pilot/submissions",
        tar_gz({"pilot.ipynb": b"student2's answers"}),
    )
    assert status == 201 and second["student"] == "student2"

    # a student lists and reads their own hand-ins only
    status, mine = ex.call(t["student1"], "GET", f"{COURSE_ID}/submissions")
    assert status == 200 and [s["student"] for s in mine] == ["student1"]
    assert ex.call(t["student1"], "GET", f"{COURSE_ID}/submissions", student="student2")[0] == 403
    theirs = f"{COURSE_ID}/assignments/pilot/submissions/student2/{urllib.parse.quote(second['timestamp'])}"
    assert ex.call(t["student1"], "GET", theirs)[0] == 403
    assert ex.call(t["student1"], "GET", theirs + "/feedback")[0] == 403
    assert (
        ex.call(t["student1"], "PUT", theirs + "/feedback", tar_gz({"pilot.html": b"10/10"}))[0]
        == 403
    )

    # a name from the URL never reaches the status line raw (CR LF could forge a header)
    status, reply = ex.call(
        t["instructor"],
        "GET",
        f"{COURSE_ID}/assignments/pilot/submissions/student2/%0D%0AX-Injected:%201",
    )
    assert status == 400 and "timestamp" in reply["message"]

    # the instructor sees everyone's, and releases feedback that only its student reads
    status, everyone = ex.call(t["instructor"], "GET", f"{COURSE_ID}/submissions")
    assert sorted(s["student"] for s in everyone) == ["student1", "student2"]
    assert all(len(s["secret"]) == 64 for s in everyone)
    status, data = ex.call(t["instructor"], "GET", theirs)
    assert status == 200 and b"student2's answers" in gzip.decompress(data)
    assert (
        ex.call(
            t["instructor"], "PUT", theirs + "/feedback", tar_gz({"pilot.html": b"<p>0 / 7</p>"})
        )[0]
        == 201
    )
    status, page = ex.call(t["student2"], "GET", theirs + "/feedback")
    assert status == 200 and b"0 / 7" in gzip.decompress(page)

    # the size limit, on what is sent and on what it unpacks to
    too_big = tar_gz({"pilot.ipynb": os.urandom(MAX_MB * 1024 * 1024 + 1)})
    assert (
        ex.call(t["student1"], "POST", f"{COURSE_ID}/assignments/pilot/submissions", too_big)[0]
        == 413
    )
    bomb = gzip.compress(b"\0" * (40 * 1024 * 1024))
    assert (
        ex.call(t["student1"], "POST", f"{COURSE_ID}/assignments/pilot/submissions", bomb)[0] == 413
    )
    status, after = ex.call(t["student1"], "GET", f"{COURSE_ID}/submissions")
    assert len(after) == 1  # the refused hand-ins left nothing


def test_a_user_outside_the_course_is_refused(exchange_hub):  # noqa: F811 - the fixture
    hub = exchange_hub
    hub.call("POST", "/hub/api/users/outsider", hub.admin, data={})
    token = hub.new_token("outsider")
    ex = hub.exchange
    assert ex.call(token, "GET", f"{COURSE_ID}/assignments")[0] == 403
    assert ex.call(token, "POST", f"{COURSE_ID}/assignments/pilot/submissions", RELEASE)[0] == 403
    assert ex.call(token, "GET", "")[1] == []


def test_a_user_put_in_the_course_a_moment_ago_is_let_in_at_once(exchange_hub):  # noqa: F811
    """The exchange keeps the hub's groups 30 s, but a user its answer does not name makes it read
    them again (at most every 2 s for that user): a student an LTI launch has just put in the
    course fetches at once, and an outsider's flood costs the hub one read every 2 s."""
    hub = exchange_hub
    hub.call("POST", "/hub/api/users/newcomer", hub.admin, data={})
    token = hub.new_token("newcomer")
    ex = hub.exchange
    assert ex.call(token, "GET", f"{COURSE_ID}/assignments")[0] == 403  # not in the course yet
    hub.call(
        "POST",
        f"/hub/api/groups/nbgrader-{COURSE_ID}/users",
        hub.admin,
        data={"users": ["newcomer"]},
    )
    try:
        time.sleep(2.2)  # the refresh interval for this user, not the 30 s of the kept groups
        status, reply = ex.call(token, "GET", f"{COURSE_ID}/assignments")
        assert status == 200, reply
        assert COURSE_ID in ex.call(token, "GET", "")[1]
    finally:
        hub.call(
            "DELETE", f"/hub/api/groups/nbgrader-{COURSE_ID}/users", hub.admin,
            data={"users": ["newcomer"]},
        )  # fmt: skip


def test_the_service_killed_mid_class_comes_back_with_everything(exchange_hub):  # noqa: F811 - the fixture
    hub = exchange_hub
    ex, t = hub.exchange, hub.tokens
    before = ex.call(t["instructor"], "GET", f"{COURSE_ID}/submissions")[1]
    pids = subprocess.run(
        ["pgrep", "-f", f"coursetools exchange serve --volume {hub.volume}"],
        capture_output=True,
        text=True,
    ).stdout.split()
    assert pids, "the managed service is not running"
    for pid in pids:
        os.kill(int(pid), signal.SIGKILL)
    _wait_for(hub, timeout=120)  # the hub starts its managed service again
    assert ex.call(t["instructor"], "GET", f"{COURSE_ID}/submissions")[1] == before
