"""Real-browser tests (``make test-browser``): Playwright driving the system's Chromium.

Playwright's own browser download needs the network, so the tests launch the Chromium on
``PATH`` (Debian: ``apt-get install chromium``) or the one named by ``$CHROMIUM``. Without one
they skip and say how to install it. A failing test leaves a screenshot in
``build/browser-screenshots/``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from pilot_course import (  # tests/support (pytest pythonpath)
    PILOT,
    ROOT,
    fill_answers,
    pilot_course,
)

__all__ = ["PILOT", "ROOT", "fill_answers", "grade_class"]
BIN = Path(sys.executable).parent
SCREENSHOTS = ROOT / "build" / "browser-screenshots"
TOKEN = "browser-test-token"


def _chromium() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed: make test-browser installs it (pip install playwright)")
    executable = _chromium()
    if executable is None:
        pytest.skip(
            "no Chromium found: install it with `apt-get install chromium` (Debian/Ubuntu) or set "
            "CHROMIUM=/path/to/chrome; Playwright's own browser download is not used"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    tab = context.new_page()
    yield tab
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"), full_page=True)
    context.close()


def grade_class(course: Path, folder: str, student: str, nb, csv_name: str) -> None:
    """Hand ``nb`` in as ``student``'s pilot into ``course/folder`` and grade it as make grade does."""
    import nbformat

    target = course / folder / student / "pilot"
    target.mkdir(parents=True)
    nbformat.write(nb, str(target / "pilot.ipynb"))
    graded = subprocess.run(
        [sys.executable, "-m", "coursetools", "grade", str(course / folder),
         "--source", str(course / "solutions"), "--grades", str(course / "build" / csv_name),
         "--nbgrader-config", str(course / "nbgrader_config.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A course directory like this repository's, holding the pilot assignment and its release."""
    return pilot_course(tmp_path_factory.mktemp("browser") / "course")


@pytest.fixture(scope="module")
def lab(course, browser):
    """``make lab``'s JupyterLab on the course directory; its base URL."""
    port = _free_port()
    argv = [
        str(BIN / "jupyter"), "lab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={course}",
        "--LabApp.news_url=", "--ServerApp.disable_check_xsrf=False",
    ]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "JUPYTER_CONFIG_PATH": str(ROOT / "deploy" / "jupyter"),  # as make lab: the guard
    }
    log = (course.parent / "lab.log").open("wb")
    server = subprocess.Popen(argv, cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=5)
                break
            except OSError:
                assert server.poll() is None, "JupyterLab exited: see " + str(log.name)
                assert time.monotonic() < deadline, "JupyterLab never answered"
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
