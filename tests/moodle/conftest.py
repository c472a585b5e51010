"""The real-LMS test (``make test-moodle``): Moodle as the LTI 1.3 platform.

Only where Moodle's source is given: ``MOODLE_SRC=/path/to/moodle make test-moodle``. Without
``MOODLE_SRC`` every test here skips and says how to get the source and what to install
(tests/moodle/README.md). Nothing of Moodle is in the repository and CI never has it.

``make test`` (pytest on tests/ and dplib/) never collects this folder: :func:`pytest_ignore_collect`
leaves it out unless the command line names it (``pytest tests/moodle``, as make test-moodle does).

``MOODLE_WORKDIR``: where the site is built (PostgreSQL, moodledata, the copied tree, the logs);
reused by the next run when it already holds an installed site of the same Moodle release. By
default a new folder under the system's temporary directory, kept after the run for inspection.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from moodle_site import MoodleSite, MoodleSiteError, PrerequisiteMissing  # noqa: E402

SKIP_REASON = (
    "MOODLE_SRC is not set: this test runs a real Moodle (the LTI 1.3 platform) built from Moodle's "
    "source, which the repository does not ship. Get it (git clone --depth 1 -b MOODLE_405_STABLE "
    "https://github.com/moodle/moodle.git /path/to/moodle, or unpack a moodle-4.5 download), install "
    "PHP with its extensions (tests/moodle/install-php.sh, as root: php-cli php-pgsql php-xml "
    "php-mbstring php-curl php-zip php-gd php-intl php-soap) and PostgreSQL (postgresql), then run "
    "MOODLE_SRC=/path/to/moodle make test-moodle (tests/moodle/README.md)"
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _named_on_command_line(config) -> bool:
    for arg in config.args:
        path = Path(arg.split("::", 1)[0])
        path = (path if path.is_absolute() else Path(config.invocation_params.dir) / path).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path, config):
    """Left out of every run that does not name tests/moodle (make test, make test-fast)."""
    path = Path(collection_path).resolve()
    if (path == HERE or HERE in path.parents) and not _named_on_command_line(config):
        return True
    return None


@pytest.fixture(scope="session")
def moodle_src() -> Path:
    value = os.environ.get("MOODLE_SRC", "").strip()
    if not value:
        pytest.skip(SKIP_REASON)
    src = Path(value).expanduser()
    if not src.is_dir():
        pytest.fail(
            f"MOODLE_SRC={value} is not a directory (tests/moodle/README.md)", pytrace=False
        )
    return src


@pytest.fixture(scope="session")
def moodle_site(moodle_src):
    """A running Moodle site built from MOODLE_SRC (see moodle_site.py); stopped after the session."""
    chosen = os.environ.get("MOODLE_WORKDIR", "").strip()
    workdir = Path(chosen).expanduser() if chosen else Path(tempfile.mkdtemp(prefix="moodle-site-"))
    print(f"\nmoodle-site: workdir {workdir} (kept; MOODLE_WORKDIR={workdir} reuses the install)")
    try:
        with MoodleSite(moodle_src, workdir) as site:
            yield site
    except PrerequisiteMissing as missing:
        pytest.fail(f"cannot build the Moodle site: {missing}", pytrace=False)
    except MoodleSiteError as error:
        pytest.fail(f"the Moodle site failed: {error}\n(logs in {workdir})", pytrace=False)


@pytest.fixture(scope="session")
def chromium():
    """Playwright driving the system's Chromium (Playwright's own browser download is not used)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "Playwright is not installed: make installs it (pip install -e '.[dev]')", pytrace=False
        )
    executable = (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if executable is None:
        pytest.fail(
            "no Chromium: apt-get install chromium, or set CHROMIUM=/path/to/chrome", pytrace=False
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
