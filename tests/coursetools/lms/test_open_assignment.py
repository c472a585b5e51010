"""``/course/open/<assignment>`` (coursetools/lms/open_assignment.py) in a real Jupyter server.

A ``jupyter server`` configured as a student's on the hub (``JUPYTER_CONFIG_PATH=deploy/student``:
the extension is enabled there, nbgrader's exchange is the shared folder), its root a home of
its own; the pilot released into the exchange with nbgrader's own command. The page fetches the
release once, never over the student's folder, says when an assignment is not released, and
refuses what is not an assignment name.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import requests
from pilot_course import ROOT, fill_answers, pilot_course

BIN = Path(sys.executable).parent
COURSE_ID = "dp-course"
TOKEN = "open-assignment-test-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, url: str, home: Path, exchange: Path) -> None:
        self.url, self.home, self.exchange = url, home, exchange
        self.outbound = exchange / COURSE_ID / "outbound"

    def get(self, path: str, *, token: str | None = TOKEN) -> requests.Response:
        headers = {"Authorization": f"token {token}"} if token else {}
        return requests.get(self.url + path, headers=headers, allow_redirects=False, timeout=60)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("open-assignment")
    course = pilot_course(root / "course")
    exchange, home = root / "exchange", root / "home"
    exchange.mkdir(mode=0o1777)
    home.mkdir()
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),  # no configuration of the person running the tests
        "JUPYTER_CONFIG_DIR": str(root / "jupyter-config"),
        "JUPYTER_DATA_DIR": str(root / "jupyter-data"),
        "JUPYTER_RUNTIME_DIR": str(root / "jupyter-runtime"),
        "NBGRADER_EXCHANGE": str(exchange),
        "COURSE_ID": COURSE_ID,
    }
    released = subprocess.run(
        [str(BIN / "nbgrader"), "release_assignment", "pilot", "--force"],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert released.returncode == 0, released.stdout[-2000:] + released.stderr[-2000:]
    assert (exchange / COURSE_ID / "outbound" / "pilot" / "pilot.ipynb").is_file()
    port = _free_port()
    argv = [
        str(BIN / "jupyter"), "server", "--no-browser", f"--port={port}",
        "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={home}",
    ]  # fmt: skip
    if os.geteuid() == 0:
        argv.append("--allow-root")
    env["JUPYTER_CONFIG_PATH"] = str(ROOT / "deploy" / "student")  # as the hub sets for students
    log = (root / "server.log").open("wb")
    process = subprocess.Popen(argv, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
    running = Server(f"http://127.0.0.1:{port}", home, exchange)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if running.get("/api/status").status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert process.poll() is None, (root / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the Jupyter server never answered"
            time.sleep(0.3)
        running.log = root / "server.log"
        yield running
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _release_copy(server: Server, name: str) -> None:
    """Another released assignment: the pilot's release under ``name``."""
    target = server.outbound / name
    shutil.copytree(server.outbound / "pilot", target)
    (target / "pilot.ipynb").rename(target / f"{name}.ipynb")


def _staging_left(home: Path) -> list[str]:
    return [p.name for p in home.iterdir() if p.name.startswith(".course-open-")]


def test_the_extension_is_enabled_for_students_only():
    import json

    student = json.loads((ROOT / "deploy" / "student" / "jupyter_server_config.json").read_text())
    assert student["ServerApp"]["jpserver_extensions"]["coursetools.lms.open_assignment"] is True
    instructor = ROOT / "deploy" / "instructor" / "jupyter_server_config.json"
    assert "open_assignment" not in (instructor.read_text() if instructor.exists() else "")


def test_fetches_once_then_opens_the_notebook(server):
    reply = server.get("/course/open/pilot")
    assert reply.status_code == 302, (reply.status_code, reply.text[:500])
    assert reply.headers["Location"] == "/lab/tree/pilot/pilot.ipynb"
    notebook = server.home / "pilot" / "pilot.ipynb"
    release = server.outbound / "pilot" / "pilot.ipynb"
    assert notebook.read_bytes() == release.read_bytes()  # nbgrader's fetch: the release as is
    assert _staging_left(server.home) == []

    # the student works; the instructor changes the release; the student opens it again
    answered = fill_answers(nbformat.read(notebook, as_version=4))
    nbformat.write(answered, str(notebook))
    mine = notebook.read_bytes()
    (server.outbound / "pilot" / "extra.txt").write_text("released later")
    release.write_text(release.read_text().replace("Pilot", "Pilot, corrected"))
    again = server.get("/course/open/pilot")
    assert again.status_code == 302 and again.headers["Location"] == "/lab/tree/pilot/pilot.ipynb"
    assert notebook.read_bytes() == mine  # never overwritten
    assert not (server.home / "pilot" / "extra.txt").exists()  # nor filled in


def test_a_folder_the_student_made_is_never_replaced(server):
    folder = server.home / "kept"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    _release_copy(server, "kept")
    reply = server.get("/course/open/kept")
    assert reply.status_code == 302 and reply.headers["Location"] == "/lab/tree/kept"
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]


def test_two_launches_at_once_fetch_once(server):
    _release_copy(server, "twice")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        replies = list(pool.map(lambda _: server.get("/course/open/twice"), range(2)))
    assert [r.status_code for r in replies] == [302, 302]
    assert {r.headers["Location"] for r in replies} == {"/lab/tree/twice/twice.ipynb"}
    fetched = sorted(p.name for p in (server.home / "twice").iterdir())
    assert fetched == sorted(p.name for p in (server.outbound / "twice").iterdir())  # one copy
    assert _staging_left(server.home) == []


def test_not_released_yet_is_a_page_with_a_way_on(server):
    reply = server.get("/course/open/not_yet")
    assert reply.status_code == 404
    assert reply.headers["Content-Type"].startswith("text/html")
    page = reply.text
    assert '<html lang="en">' in page and "<title>not_yet is not released yet</title>" in page
    assert "<h1>not_yet is not released yet</h1>" in page and "<main>" in page
    assert re.search(r'<a href="/lab">Open JupyterLab</a>', page)
    assert "dp-course" in page
    assert not (server.home / "not_yet").exists() and _staging_left(server.home) == []


def test_a_file_with_the_assignments_name_is_left_alone(server):
    (server.home / "taken").write_text("a file of mine")
    _release_copy(server, "taken")
    reply = server.get("/course/open/taken")
    assert reply.status_code == 409 and "taken cannot be fetched" in reply.text
    assert (server.home / "taken").read_text() == "a file of mine"


@pytest.mark.parametrize(
    "path, status",
    [
        ("/course/open/-pilot", 400),  # a name starts with a letter or a digit
        ("/course/open/.pilot", 400),
        ("/course/open/%2e%2e", 400),  # .. once decoded
        ("/course/open/..%2Fetc", 400),
        ("/course/open/a%2Fb", 400),
        ("/course/open/%3Cscript%3Ealert(1)%3C%2Fscript%3E", 400),
        ("/course/open/pilot%00", 400),
        ("/course/open/" + "a" * 101, 400),
        ("/course/open/p%C3%AFlot", 400),  # letters of ASCII only
        ("/course/open/a/b", 404),
        ("/course/open", 404),
    ],
)
def test_what_is_not_an_assignment_name_is_refused(server, path, status):
    before = sorted(p.name for p in server.home.iterdir())
    reply = server.get(path)
    assert reply.status_code == status, (path, reply.status_code, reply.text[:300])
    assert "<script>" not in reply.text
    assert sorted(p.name for p in server.home.iterdir()) == before


def test_only_the_servers_user_is_answered(server):
    _release_copy(server, "private")
    for token in (None, "not-the-token"):
        reply = server.get("/course/open/private", token=token)
        assert reply.status_code in (302, 403), reply.status_code
        if reply.status_code == 302:  # to the login page, not to the lab
            assert reply.headers["Location"].startswith("/login")
    assert not (server.home / "private").exists()


def test_an_exchange_that_fails_is_said_on_the_page_not_raised(tmp_path, monkeypatch):
    from coursetools.lms.open_assignment import _page, open_assignment

    (tmp_path / "a-file").write_text("")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(ROOT / "deploy" / "student"))
    monkeypatch.setenv("NBGRADER_EXCHANGE", str(tmp_path / "a-file" / "exchange"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("NBGRADER_EXCHANGE_URL", raising=False)
    opened = open_assignment(home, "pilot")
    assert (opened.state, opened.course) == ("failed", COURSE_ID)
    assert "a-file" in opened.message and list(home.iterdir()) == []
    with pytest.raises(ValueError, match="not an assignment name"):
        open_assignment(home, "../pilot")
    page = _page('<b>"x"</b>', ["<script>alert(1)</script> & more"], '/lab?a="b"')
    assert "<script>" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page
    assert 'href="/lab?a=&quot;b&quot;"' in page
