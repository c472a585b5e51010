"""A real Moodle site, made from a Moodle source tree, configured as an LTI 1.3 platform.

Nothing of Moodle is in this repository: :class:`MoodleSite` takes a checkout given to it
(``MOODLE_SRC``, see tests/moodle/README.md) and builds a throwaway site from it in ``workdir``::

    with MoodleSite(Path("/work/moodle-src/moodle"), Path("/tmp/moodle-site")) as site:
        tool = site.register_tool("DP course", base_url, login_url, [redirect_uri], jwks_url)
        course = site.create_course("dp101")
        site.create_user("student1", "Student-pass-1", course=course)
        activity = site.add_activity(course, tool, "Pilot", custom="assignment=pilot")
        ...  # a browser logs in at site.wwwroot and opens activity["view_url"]
        site.grade_of("student1", activity)

What it does, in order (each step's output is in ``workdir``, which is left for inspection):

1. checks PHP: the version and the extensions that the tree's own ``admin/environment.xml``
   requires (plus ``pgsql``), and says which Debian packages bring what is missing
   (``tests/moodle/install-php.sh`` installs them); it installs nothing itself;
2. starts its own PostgreSQL cluster (``initdb``/``pg_ctl``, as the ``postgres`` user when run
   as root) on a Unix socket in ``workdir/pg-run`` (no TCP), and creates the database;
3. copies the tree to ``workdir/site`` (hard links where it can, never ``.git`` nor a
   ``config.php`` found there), writes its ``config.php`` and installs Moodle with
   ``admin/cli/install_database.php`` (moodledata in ``workdir/moodledata``); a ``workdir`` that
   already holds an installed site of the same release is reused, so a second run starts in
   seconds;
4. serves it with PHP's built-in server on a free port (``wwwroot = http://127.0.0.1:PORT``),
   from ``public/`` for Moodle 5.1 and later, where that is the web root;
5. configures it through one PHP CLI script (``workdir/moodle_cli.php``) that calls Moodle's own
   APIs (``lti_add_type``, ``create_course``, ``user_create_user``, the manual enrolment plugin,
   ``add_moduleinfo``, ``grade_get_grades``);
6. stops the PHP server and PostgreSQL on exit.

Moodle's curl refuses loopback hosts and ports other than 80/443 by default
(``curlsecurityblockedhosts``, ``curlsecurityallowedport``); the site's config.php clears both so
that Moodle can fetch a tool's key set from 127.0.0.1 -- acceptable for a test site only.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "LAUNCH_CONTAINERS",
    "MoodleSite",
    "MoodleSiteError",
    "MoodleSource",
    "PrerequisiteMissing",
    "check_php",
    "moodle_source",
]

ADMIN_USER = "admin"
DB_NAME = "moodle"
#: How the LMS opens the tool (mod/lti/locallib.php's LTI_LAUNCH_CONTAINER_*).
LAUNCH_CONTAINERS = {"default": 1, "embed": 2, "embed_no_blocks": 3, "window": 4, "replace": 5}
#: ltiservice_gradesynchronization: 0 no, 1 grade sync only, 2 grade sync and column management.
GRADE_SYNC_AND_COLUMNS = 2
#: Debian packages bringing a PHP extension; the ones not listed come with php-cli (php8.x-common).
DEBIAN_PHP_PACKAGES = {
    "pgsql": "php-pgsql",
    "mbstring": "php-mbstring",
    "curl": "php-curl",
    "zip": "php-zip",
    "gd": "php-gd",
    "intl": "php-intl",
    "soap": "php-soap",
    "xml": "php-xml",
    "dom": "php-xml",
    "simplexml": "php-xml",
    "xmlreader": "php-xml",
    "xmlwriter": "php-xml",
    "xsl": "php-xml",
    "opcache": "php-opcache",
}
INSTALL_HINT = "tests/moodle/install-php.sh (as root) installs them"
_JSON_MARK = "@@MOODLE-SITE-JSON@@"


class MoodleSiteError(RuntimeError):
    """Something in making or driving the site failed; the message says what and where the log is."""


class PrerequisiteMissing(MoodleSiteError):
    """PHP, an extension or PostgreSQL is missing or too old; the message says what to install."""


# --- the source tree ---------------------------------------------------------------------


@dataclass(frozen=True)
class MoodleSource:
    """A Moodle tree: ``root`` holds config.php, ``dirroot`` Moodle's code (``root/public`` from 5.1)."""

    root: Path
    dirroot: Path
    release: str  # '4.5.6 (Build: 20250811)'
    version: str  # '2024100706.00'
    branch: str  # '405'

    @property
    def public(self) -> bool:
        return self.dirroot != self.root

    @property
    def major_minor(self) -> str:
        found = re.match(r"(\d+)\.(\d+)", self.release)
        if found is None:
            raise MoodleSiteError(f"cannot read Moodle's version from release {self.release!r}")
        return f"{found.group(1)}.{found.group(2)}"


def moodle_source(src: Path) -> MoodleSource:
    """Read ``src``'s version.php (at its top, or in ``public/`` for Moodle 5.1 and later)."""
    src = Path(src).resolve()
    for dirroot in (src / "public", src):
        if (dirroot / "version.php").is_file() and (dirroot / "lib" / "setup.php").is_file():
            break
    else:
        raise MoodleSiteError(
            f"{src} is not a Moodle source tree (no version.php and lib/setup.php there nor in "
            f"{src}/public); see tests/moodle/README.md for how to get one"
        )
    text = (dirroot / "version.php").read_text(encoding="utf-8", errors="replace")

    def field(name: str) -> str:
        found = re.search(rf"^\s*\${name}\s*=\s*'?([^';]*)'?\s*;", text, re.MULTILINE)
        return found.group(1).strip() if found else ""

    return MoodleSource(src, dirroot, field("release"), field("version"), field("branch"))


@dataclass(frozen=True)
class Requirements:
    php: str
    extensions: tuple[str, ...]
    optional_extensions: tuple[str, ...]
    postgres: str


def requirements(source: MoodleSource) -> Requirements:
    """What the tree's admin/environment.xml requires of its own version (PHP, extensions, PostgreSQL)."""
    path = source.dirroot / "admin" / "environment.xml"
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError) as error:
        raise MoodleSiteError(f"cannot read Moodle's environment checks {path}: {error}") from None
    wanted = source.major_minor
    block = next(
        (m for m in tree.getroot().iter("MOODLE") if m.get("version") == wanted),
        None,
    )
    if block is None:  # a development tree newer than its own file: take the newest block
        block = list(tree.getroot().iter("MOODLE"))[-1]
    php = block.find("PHP")
    vendor = block.find("DATABASE/VENDOR[@name='postgres']")
    required, optional = [], []
    for ext in block.iter("PHP_EXTENSION"):
        (required if ext.get("level") == "required" else optional).append(ext.get("name", ""))
    return Requirements(
        php=php.get("version", "0") if php is not None else "0",
        extensions=tuple(required) + ("pgsql",),  # the pgsql driver (lib/dml/pgsql_native...)
        optional_extensions=tuple(optional),
        postgres=vendor.get("version", "0") if vendor is not None else "0",
    )


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def check_php(source: MoodleSource, php: str = "php") -> str:
    """PHP's version, after checking it and its extensions against what ``source`` needs.

    Raises :class:`PrerequisiteMissing` naming the Debian packages to install.
    """
    need = requirements(source)
    packages = sorted(
        {"php-cli"}
        | {
            DEBIAN_PHP_PACKAGES.get(e, "php-cli")
            for e in need.extensions + need.optional_extensions
        }
    )
    install = f"apt-get install -y {' '.join(packages)}"
    executable = shutil.which(php)
    if executable is None:
        raise PrerequisiteMissing(
            f"PHP is not installed (no {php!r} on PATH); Moodle {source.release} needs PHP >= "
            f"{need.php} with {', '.join(need.extensions)}. Debian/Ubuntu: {install} ({INSTALL_HINT})"
        )
    probe = subprocess.run(
        [
            executable,
            "-r",
            'echo json_encode([PHP_VERSION, array_map("strtolower", get_loaded_extensions())]);',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    try:
        version, loaded = json.loads(probe.stdout)
    except ValueError:
        raise MoodleSiteError(
            f"{executable} -r failed: {probe.stderr.strip() or probe.stdout.strip()}"
        ) from None
    problems = []
    if _version_tuple(version) < _version_tuple(need.php):
        problems.append(
            f"PHP {version} is older than the {need.php} Moodle {source.release} requires"
        )
    missing = [e for e in need.extensions if e.lower() not in loaded]
    if missing:
        problems.append(f"PHP lacks the extensions {', '.join(missing)}")
    if problems:
        raise PrerequisiteMissing(
            "; ".join(problems)
            + f". Debian/Ubuntu: {install} ({INSTALL_HINT}); the packages for missing extensions: "
            + " ".join(
                sorted({DEBIAN_PHP_PACKAGES.get(e, "php-cli") for e in missing}) or ["(none)"]
            )
        )
    return version


# --- helpers ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _postgres_bin(minimum: str) -> Path:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[4])
    )
    if not found:
        raise PrerequisiteMissing(
            "PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/pg_ctl). "
            "Debian/Ubuntu: apt-get install -y postgresql"
        )
    bin_dir = Path(found[-1]).parent
    major = bin_dir.parent.name
    if _version_tuple(major) < _version_tuple(minimum)[:1]:
        raise PrerequisiteMissing(
            f"PostgreSQL {major} is older than the {minimum} this Moodle requires (admin/environment.xml)"
        )
    return bin_dir


def _php_string(value: str | Path) -> str:
    """A PHP single-quoted string literal."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _copy_tree(src: Path, dest: Path) -> str:
    """Copy ``src`` to ``dest`` without .git nor config.php: hard links if possible. Returns how."""
    ignore = shutil.ignore_patterns(".git")

    def skip_top_config(directory: str, names: list[str]) -> set[str]:
        skipped = set(ignore(directory, names))
        if Path(directory) == src:
            skipped |= {"config.php"} & set(names)
        return skipped

    try:
        shutil.copytree(src, dest, symlinks=True, ignore=skip_top_config, copy_function=os.link)
        return "hard links"
    except (OSError, shutil.Error):
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest, symlinks=True, ignore=skip_top_config)
        return "copies"


# --- the site --------------------------------------------------------------------------------


class MoodleSite(contextlib.AbstractContextManager):
    """A running Moodle site built from ``src`` in ``workdir`` (see the module's docstring).

    Attributes once entered: ``wwwroot``, ``source`` (a :class:`MoodleSource`), ``admin_password``,
    ``timings`` (seconds: ``copy``, ``install``, ``theme``, ``start``), ``reused`` (an earlier
    install was found in ``workdir``).
    """

    def __init__(
        self,
        src: Path,
        workdir: Path,
        *,
        php: str = "php",
        port: int | None = None,
        admin_password: str = "Admin-pass-1!",
        install_timeout: float = 3600,
        server_workers: int = 4,
        log=print,
    ) -> None:
        self.source = moodle_source(Path(src))
        self.workdir = Path(workdir).resolve()
        self.php = php
        self.port = port
        self.admin_password = admin_password
        self.install_timeout = install_timeout
        self.server_workers = server_workers
        self.log = log
        self.site = self.workdir / "site"
        self.dataroot = self.workdir / "moodledata"
        self.pgdata = self.workdir / "pgdata"
        self.pgrun = self.workdir / "pg-run"
        self.pgport = 0
        self.cli_script = self.workdir / "moodle_cli.php"
        self.marker = self.workdir / "installed.json"
        self.timings: dict[str, float] = {}
        self.reused = False
        self.wwwroot = ""
        self._server: subprocess.Popen | None = None
        self._server_log = None
        self._pg_started = False
        self._as_postgres: list[str] = []
        self._pg_bin: Path | None = None
        self._fresh_cluster = True
        self._last_course: dict | None = None

    # -- layout ---------------------------------------------------------------------------

    @property
    def site_dirroot(self) -> Path:
        return self.site / "public" if self.source.public else self.site

    @property
    def config_php(self) -> Path:
        return self.site / "config.php"

    @property
    def auth_url(self) -> str:
        return f"{self.wwwroot}/mod/lti/auth.php"

    @property
    def token_url(self) -> str:
        return f"{self.wwwroot}/mod/lti/token.php"

    @property
    def keyset_url(self) -> str:
        return f"{self.wwwroot}/mod/lti/certs.php"

    @property
    def login_url(self) -> str:
        return f"{self.wwwroot}/login/index.php"

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> MoodleSite:
        need = requirements(self.source)
        php_version = check_php(self.source, self.php)
        self._pg_bin = _postgres_bin(need.postgres)
        self.log(
            f"moodle-site: Moodle {self.source.release} from {self.source.root}, PHP {php_version}, "
            f"PostgreSQL {self._pg_bin.parent.name}, in {self.workdir}"
        )
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._prepare_postgres_user()
            self._start_postgres()
            self._install_or_reuse()
            self._start_server()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Stop the PHP server and PostgreSQL (the workdir stays)."""
        if self._server is not None:
            # php -S forks PHP_CLI_SERVER_WORKERS workers that outlive their parent: stop the
            # server's own process group (its session, started for it alone), not just the parent
            group = self._server.pid
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGTERM)
            try:
                self._server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)
                self._server.wait(timeout=20)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # the workers, after their parent
                try:
                    os.killpg(group, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.2)
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)
            self._server = None
        if self._server_log is not None:
            self._server_log.close()
            self._server_log = None
        if self._pg_started:
            self._pg_started = False
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                self._pg("pg_ctl", "-D", str(self.pgdata), "-w", "-m", "fast", "stop", timeout=60)

    # -- PostgreSQL -------------------------------------------------------------------------

    def _prepare_postgres_user(self) -> None:
        if os.geteuid() != 0:
            return
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            raise PrerequisiteMissing(
                "running as root and there is no 'postgres' user to run PostgreSQL as "
                "(Debian's postgresql package makes it)"
            ) from None
        self._as_postgres = ["runuser", "-u", "postgres", "--"]
        # PostgreSQL runs as postgres: it must reach workdir (a pytest tmp_path, 0700, it cannot)
        self.workdir.chmod(0o755)
        self.pgrun.mkdir(exist_ok=True)
        os.chown(self.pgrun, account.pw_uid, account.pw_gid)
        reach = subprocess.run(
            [*self._as_postgres, "test", "-w", str(self.pgrun)], capture_output=True
        )
        if reach.returncode != 0:
            raise MoodleSiteError(
                f"the postgres user cannot write to {self.pgrun}: a directory above it is closed to "
                "other users (pytest's tmp_path is); give a workdir under /tmp or /work instead"
            )

    def _pg(self, tool: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        assert self._pg_bin is not None
        done = subprocess.run(
            [*self._as_postgres, str(self._pg_bin / tool), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise MoodleSiteError(f"{tool} {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done

    def _start_postgres(self) -> None:
        self.pgrun.mkdir(exist_ok=True)
        fresh = not (self.pgdata / "PG_VERSION").is_file()
        self._fresh_cluster = fresh
        if fresh:
            if self.pgdata.exists():
                shutil.rmtree(self.pgdata)
            if self._as_postgres:
                self.pgdata.mkdir()
                account = pwd.getpwnam("postgres")
                os.chown(self.pgdata, account.pw_uid, account.pw_gid)
            self._pg(
                "initdb",
                "-D",
                str(self.pgdata),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            )
        elif (self.pgdata / "postmaster.pid").exists():  # a server left by a run that was killed
            with contextlib.suppress(MoodleSiteError, subprocess.SubprocessError):
                self._pg("pg_ctl", "-D", str(self.pgdata), "-w", "-m", "fast", "stop", timeout=60)
        self.pgport = _free_port()
        # fsync off: a throwaway site; a clean stop still writes everything out
        options = (
            f"-c listen_addresses='' -k {self.pgrun} -p {self.pgport} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off"
        )
        self._pg(
            "pg_ctl",
            "-D",
            str(self.pgdata),
            "-w",
            "-o",
            options,
            "-l",
            str(self.pgdata / "server.log"),
            "start",
            timeout=120,
        )
        self._pg_started = True

    def _recreate_database(self) -> None:
        where = ["-h", str(self.pgrun), "-p", str(self.pgport), "-U", "postgres"]
        self._pg("dropdb", *where, "--if-exists", DB_NAME)
        self._pg("createdb", *where, "-E", "UTF8", "-T", "template0", DB_NAME)

    # -- install ------------------------------------------------------------------------------

    def _write_config(self) -> None:
        require = "/public/lib/setup.php" if self.source.public else "/lib/setup.php"
        self.config_php.write_text(
            f"""<?php  // written by tests/moodle/moodle_site.py: a throwaway test site
unset($CFG);
global $CFG;
$CFG = new stdClass();
$CFG->dbtype    = 'pgsql';
$CFG->dblibrary = 'native';
$CFG->dbhost    = 'localhost';
$CFG->dbname    = '{DB_NAME}';
$CFG->dbuser    = 'postgres';
$CFG->dbpass    = '';
$CFG->prefix    = 'mdl_';
$CFG->dboptions = ['dbpersist' => 0, 'dbport' => {self.pgport}, 'dbsocket' => {_php_string(self.pgrun)}];
$CFG->wwwroot   = {_php_string(self.wwwroot)};
$CFG->dataroot  = {_php_string(self.dataroot)};
$CFG->admin     = 'admin';
$CFG->directorypermissions = 02777;
// The tools this site talks to run on 127.0.0.1 and high ports: let Moodle's curl reach them.
$CFG->curlsecurityblockedhosts = '';
$CFG->curlsecurityallowedport = '';
$CFG->noemailever = true;
$CFG->passwordpolicy = 0;
// Errors go to the PHP server's log (workdir/php-server.log), never into a page or the CLI's JSON.
$CFG->debug = E_ALL;
$CFG->debugdisplay = 0;
require_once(__DIR__ . '{require}');
""",
            encoding="utf-8",
        )

    def _install_or_reuse(self) -> None:
        previous = json.loads(self.marker.read_text()) if self.marker.is_file() else None
        self.port = self.port or _free_port()
        self.wwwroot = f"http://127.0.0.1:{self.port}"
        if (
            previous
            and previous.get("release") == self.source.release
            and self.site.is_dir()
            and not self._fresh_cluster
        ):
            self.reused = True
            self.admin_password = previous.get("admin_password", self.admin_password)
            self._write_config()
            self.log(
                f"moodle-site: reusing the site installed in {self.workdir} ({previous['install_seconds']:.0f} s then)"
            )
            return
        self.marker.unlink(missing_ok=True)
        for stale in (self.site, self.dataroot):
            if stale.exists():
                shutil.rmtree(stale)
        self._recreate_database()
        started = time.monotonic()
        how = _copy_tree(self.source.root, self.site)
        self.timings["copy"] = time.monotonic() - started
        self.dataroot.mkdir(mode=0o2777)
        self._write_config()
        self.log(
            f"moodle-site: tree copied ({how}, {self.timings['copy']:.0f} s); installing Moodle (minutes)..."
        )
        started = time.monotonic()
        try:
            self._install_database()
        except MoodleSiteError as error:
            raise MoodleSiteError(f"{error}{self._composer_hint()}") from None
        self.timings["install"] = time.monotonic() - started
        started = time.monotonic()
        theme_cli = self.site_dirroot / "admin" / "cli" / "build_theme_css.php"
        if theme_cli.is_file():  # compile the theme now, not in the first page load
            self._php_cli(
                [str(theme_cli), "--themes=boost"], log=self.workdir / "theme.log", timeout=900
            )
        self.timings["theme"] = time.monotonic() - started
        self.marker.write_text(
            json.dumps(
                {
                    "release": self.source.release,
                    "source": str(self.source.root),
                    "install_seconds": self.timings["install"],
                    "admin_password": self.admin_password,
                },
                indent=1,
            )
        )
        self.log(
            f"moodle-site: installed in {self.timings['install'] / 60:.1f} min "
            f"(theme {self.timings['theme']:.0f} s)"
        )

    def _install_database(self) -> None:
        """admin/cli/install_database.php: the tables, the admin, the site (the config.php is ours)."""
        self._php_cli(
            [
                str(self.site_dirroot / "admin" / "cli" / "install_database.php"),
                "--agree-license",
                "--lang=en",
                f"--adminuser={ADMIN_USER}",
                f"--adminpass={self.admin_password}",
                "--adminemail=admin@example.invalid",
                "--fullname=DP course LTI test site",
                "--shortname=dp-lti",
            ],
            log=self.workdir / "install.log",
            timeout=self.install_timeout,
        )

    def _composer_hint(self) -> str:
        """Newer Moodle trees may need their Composer libraries (vendor/) installed first."""
        manifest = self.source.root / "composer.json"
        try:
            needs = bool(json.loads(manifest.read_text()).get("require"))
        except (OSError, ValueError):
            return ""
        if needs and not (self.source.root / "vendor").is_dir():
            return (
                f"\n({self.source.root} has a composer.json with requirements and no vendor/: this "
                "Moodle may need `composer install --no-dev --classmap-authoritative` run there first)"
            )
        return ""

    def _php_cli(
        self, argv: list[str], *, log: Path, timeout: float, stdin: str | None = None
    ) -> str:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"\n$ {self.php} {' '.join(argv)}\n")
            out.flush()
            done = subprocess.run(
                [self.php, "-d", "memory_limit=1024M", "-d", "max_input_vars=5000", *argv],
                cwd=self.site_dirroot,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            out.write(done.stdout)
            out.write(done.stderr)
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-25:]
            raise MoodleSiteError(
                f"{' '.join(argv[:1])} failed (exit {done.returncode}; whole output in {log}):\n"
                + "\n".join(tail)
            )
        return done.stdout

    # -- the web server ---------------------------------------------------------------------

    def _start_server(self) -> None:
        started = time.monotonic()
        self._server_log = open(self.workdir / "php-server.log", "a", encoding="utf-8")
        env = dict(os.environ, PHP_CLI_SERVER_WORKERS=str(self.server_workers))
        self._server = subprocess.Popen(
            [
                self.php,
                "-d",
                "memory_limit=512M",
                "-d",
                "max_input_vars=5000",
                "-d",
                "post_max_size=64M",
                "-d",
                "upload_max_filesize=64M",
                "-d",
                "opcache.enable=1",
                "-d",
                "display_errors=stderr",
                "-S",
                f"127.0.0.1:{self.port}",
                "-t",
                str(self.site_dirroot),
            ],
            cwd=self.site_dirroot,
            env=env,
            stdout=self._server_log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 180
        last = ""
        while time.monotonic() < deadline:
            if self._server.poll() is not None:
                raise MoodleSiteError(
                    f"php -S exited ({self._server.returncode}); see {self.workdir / 'php-server.log'}"
                )
            try:
                with urllib.request.urlopen(self.login_url, timeout=60) as response:
                    if response.status == 200:
                        self.timings["start"] = time.monotonic() - started
                        self.log(
                            f"moodle-site: serving {self.wwwroot} ({self.timings['start']:.1f} s)"
                        )
                        return
            except (urllib.error.URLError, OSError) as error:
                last = str(error)
            time.sleep(0.5)
        raise MoodleSiteError(
            f"{self.login_url} did not answer 200 in 180 s ({last}); see php-server.log"
        )

    # -- configuring through Moodle's APIs ----------------------------------------------------

    def _write_cli_script(self) -> None:
        script = _CLI_SCRIPT.replace("@@CONFIG@@", _php_string(self.config_php)).replace(
            "@@MARK@@", _JSON_MARK
        )
        if not self.cli_script.is_file() or self.cli_script.read_text() != script:
            self.cli_script.write_text(script, encoding="utf-8")

    def call(self, command: str, **args: Any) -> Any:
        """Run one command of workdir/moodle_cli.php (as the site admin) and return its JSON result."""
        self._write_cli_script()
        out = self._php_cli(
            [str(self.cli_script)],
            log=self.workdir / "cli.log",
            timeout=600,
            stdin=json.dumps({"command": command, "args": args}),
        )
        if _JSON_MARK not in out:
            raise MoodleSiteError(f"moodle_cli.php {command} printed no result:\n{out[-3000:]}")
        result = json.loads(out.rsplit(_JSON_MARK, 1)[1])
        if "error" in result:
            raise MoodleSiteError(f"moodle_cli.php {command}: {result['error']}")
        return result["result"]

    def register_tool(
        self,
        name: str,
        base_url: str,
        login_url: str,
        redirect_uris: list[str] | str,
        jwks_url: str,
        custom: str = "assignment=pilot",
        *,
        client_id: str | None = None,
        launch_container: str = "window",
        send_name: bool = True,
        send_email: bool = True,
        accept_grades: bool = True,
        grade_sync: int = GRADE_SYNC_AND_COLUMNS,
        memberships: bool = True,
    ) -> dict:
        """Register an LTI 1.3 tool (a site-wide "preconfigured tool", as an admin would).

        ``custom`` is the tool's custom parameters, one ``name=value`` a line. Returns what the
        tool needs: ``issuer``, ``client_id``, ``deployment_id`` (the type id), ``auth_url``,
        ``token_url``, ``keyset_url``, and ``type_id``, ``name``.
        """
        uris = [redirect_uris] if isinstance(redirect_uris, str) else list(redirect_uris)
        typeinfo = self.call(
            "register_tool",
            name=name,
            base_url=base_url,
            login_url=login_url,
            redirect_uris=uris,
            jwks_url=jwks_url,
            custom=custom,
            client_id=client_id,
            launch_container=LAUNCH_CONTAINERS[launch_container],
            send_name=int(send_name),
            send_email=int(send_email),
            accept_grades=int(accept_grades),
            grade_sync=grade_sync,
            memberships=int(memberships),
        )
        return {
            "name": name,
            "type_id": typeinfo["type_id"],
            "issuer": self.wwwroot,
            "client_id": typeinfo["client_id"],
            "deployment_id": str(typeinfo["type_id"]),
            "auth_url": self.auth_url,
            "token_url": self.token_url,
            "keyset_url": self.keyset_url,
        }

    def update_tool(
        self,
        tool: dict | int,
        *,
        base_url: str,
        login_url: str,
        redirect_uris: list[str] | str,
        jwks_url: str,
    ) -> None:
        """Change a registered tool's URLs (its client id and deployment id stay), as an admin's
        "Edit preconfigured tool" does: for a tool whose address is known only after the
        platform gave it its client id and deployment id (a hub started with those)."""
        uris = [redirect_uris] if isinstance(redirect_uris, str) else list(redirect_uris)
        self.call(
            "update_tool",
            type_id=tool["type_id"] if isinstance(tool, dict) else int(tool),
            base_url=base_url,
            login_url=login_url,
            redirect_uris=uris,
            jwks_url=jwks_url,
        )

    def create_course(self, shortname: str, fullname: str | None = None) -> dict:
        """A course (or the existing one of that short name): ``{"id", "shortname", "url"}``."""
        course = self.call("create_course", shortname=shortname, fullname=fullname or shortname)
        course["url"] = f"{self.wwwroot}/course/view.php?id={course['id']}"
        self._last_course = course
        return course

    def create_user(
        self,
        username: str,
        password: str,
        role: str = "student",
        *,
        course: dict | int | None = None,
        firstname: str | None = None,
        lastname: str = "Tester",
        email: str | None = None,
    ) -> dict:
        """A manual-auth user enrolled (manual enrolment) in ``course`` -- by default the last
        course :meth:`create_course` made -- with ``role`` (``student``, ``editingteacher``,
        ``teacher``). Returns ``{"id", "username", "email"}``."""
        course = course if course is not None else self._last_course
        return self.call(
            "create_user",
            username=username,
            password=password,
            role=role,
            course_id=_id(course) if course is not None else None,
            firstname=firstname or username.capitalize(),
            lastname=lastname,
            email=email or f"{username}@example.invalid",
        )

    def add_activity(
        self,
        course: dict | int,
        tool: dict | int,
        name: str,
        custom: str = "",
        grade_max: float = 100,
        *,
        launch_container: str | None = None,
        section: int = 0,
    ) -> dict:
        """An "External tool" activity of ``tool`` in ``course`` that accepts grades up to ``grade_max``.

        ``custom``: the activity's own custom parameters (one ``name=value`` a line), sent with the
        tool's. Returns ``{"cmid", "instance", "course_id", "name", "launch_url", "view_url"}``.
        """
        container = LAUNCH_CONTAINERS[launch_container] if launch_container else 1  # 1: the tool's
        activity = self.call(
            "add_activity",
            course_id=_id(course),
            type_id=tool["type_id"] if isinstance(tool, dict) else int(tool),
            name=name,
            custom=custom,
            grade_max=grade_max,
            launch_container=container,
            section=section,
        )
        activity["launch_url"] = f"{self.wwwroot}/mod/lti/launch.php?id={activity['cmid']}"
        activity["view_url"] = f"{self.wwwroot}/mod/lti/view.php?id={activity['cmid']}"
        return activity

    def grade_of(self, username: str, activity: dict | int) -> float | None:
        """The activity's grade for ``username`` in Moodle's gradebook, or None if it has none."""
        return self.grades_of(username, activity)["grade"]

    def grades_of(self, username: str, activity: dict | int) -> dict:
        """``{"grade", "grademax", "str_grade", "items": [every grade item of the activity]}``."""
        cmid = activity["cmid"] if isinstance(activity, dict) else int(activity)
        return self.call("grade_of", username=username, cmid=cmid)


def _id(thing: dict | int) -> int:
    return int(thing["id"]) if isinstance(thing, dict) else int(thing)


# One script, one command a run: {"command": ..., "args": {...}} on stdin, the result as JSON
# after a marker on stdout (whatever Moodle prints before it is ignored).
_CLI_SCRIPT = r"""<?php
// Written by tests/moodle/moodle_site.py: configures the test site through Moodle's own APIs.
define('CLI_SCRIPT', true);
require(@@CONFIG@@);
require_once($CFG->libdir . '/clilib.php');
require_once($CFG->libdir . '/gradelib.php');
require_once($CFG->dirroot . '/course/lib.php');
require_once($CFG->dirroot . '/course/modlib.php');
require_once($CFG->dirroot . '/user/lib.php');
require_once($CFG->dirroot . '/mod/lti/locallib.php');

\core\session\manager::set_user(get_admin());
$request = json_decode(stream_get_contents(STDIN), true);
$a = $request['args'];

function register_tool(array $a): array {
    $type = new stdClass();
    $type->state = LTI_TOOL_STATE_CONFIGURED;  // what an admin's "Manage tools" form saves
    $config = new stdClass();
    $config->lti_typename = $a['name'];
    $config->lti_toolurl = $a['base_url'];
    $config->lti_description = '';
    $config->lti_ltiversion = LTI_VERSION_1P3;
    if (!empty($a['client_id'])) {
        $config->lti_clientid = $a['client_id'];  // otherwise lti_add_type makes one
    }
    $config->lti_keytype = LTI_JWK_KEYSET;
    $config->lti_publickeyset = $a['jwks_url'];
    $config->lti_initiatelogin = $a['login_url'];
    $config->lti_redirectionuris = implode("\n", $a['redirect_uris']);
    $config->lti_customparameters = $a['custom'];
    $config->lti_coursevisible = LTI_COURSEVISIBLE_ACTIVITYCHOOSER;
    $config->lti_launchcontainer = $a['launch_container'];
    $config->lti_contentitem = 0;
    $config->lti_sendname = $a['send_name'] ? LTI_SETTING_ALWAYS : LTI_SETTING_NEVER;
    $config->lti_sendemailaddr = $a['send_email'] ? LTI_SETTING_ALWAYS : LTI_SETTING_NEVER;
    $config->lti_acceptgrades = $a['accept_grades'] ? LTI_SETTING_ALWAYS : LTI_SETTING_NEVER;
    $config->lti_forcessl = 0;
    $config->lti_organizationid_default = LTI_DEFAULT_ORGID_SITEID;
    $config->ltiservice_gradesynchronization = $a['grade_sync'];
    $config->ltiservice_memberships = $a['memberships'];
    $config->ltiservice_toolsettings = 0;
    $id = lti_add_type($type, $config);
    $saved = lti_get_type($id);
    return ['type_id' => (int)$id, 'client_id' => $saved->clientid];
}

function update_tool(array $a): array {
    $type = lti_get_type($a['type_id']);
    if (!$type) {
        throw new coding_exception('no tool of type id ' . $a['type_id']);
    }
    $config = new stdClass();
    $config->lti_toolurl = $a['base_url'];
    $config->lti_ltiversion = $type->ltiversion;
    $config->lti_clientid = $type->clientid;
    $config->lti_publickeyset = $a['jwks_url'];
    $config->lti_initiatelogin = $a['login_url'];
    $config->lti_redirectionuris = implode("\n", $a['redirect_uris']);
    lti_update_type($type, $config);
    $saved = lti_get_type_type_config($type->id);
    return ['type_id' => (int)$type->id, 'client_id' => $type->clientid,
            'base_url' => lti_get_type($type->id)->baseurl,
            'login_url' => $saved->lti_initiatelogin, 'jwks_url' => $saved->lti_publickeyset];
}

function create_course_cmd(array $a): array {
    global $DB;
    $course = $DB->get_record('course', ['shortname' => $a['shortname']]);
    if (!$course) {
        $course = create_course((object)[
            'fullname' => $a['fullname'],
            'shortname' => $a['shortname'],
            'category' => \core_course_category::get_default()->id,
            'summary' => '',
            'summaryformat' => FORMAT_HTML,
            'format' => 'topics',
            'numsections' => 1,
        ]);
    }
    return ['id' => (int)$course->id, 'shortname' => $course->shortname];
}

function create_user_cmd(array $a): array {
    global $CFG, $DB;
    $username = core_text::strtolower($a['username']);
    $user = $DB->get_record('user', ['username' => $username, 'mnethostid' => $CFG->mnet_localhost_id]);
    if (!$user) {
        $id = user_create_user((object)[
            'username' => $username,
            'password' => $a['password'],
            'firstname' => $a['firstname'],
            'lastname' => $a['lastname'],
            'email' => $a['email'],
            'auth' => 'manual',
            'confirmed' => 1,
            'mnethostid' => $CFG->mnet_localhost_id,
            'lang' => 'en',
        ], true, false);
        $user = $DB->get_record('user', ['id' => $id], '*', MUST_EXIST);
    } else {
        update_internal_user_password($user, $a['password']);
    }
    if (!empty($a['course_id'])) {
        $instance = $DB->get_record('enrol', ['courseid' => $a['course_id'], 'enrol' => 'manual'], '*', MUST_EXIST);
        $roleid = $DB->get_field('role', 'id', ['shortname' => $a['role']], MUST_EXIST);
        enrol_get_plugin('manual')->enrol_user($instance, $user->id, $roleid);
    }
    return ['id' => (int)$user->id, 'username' => $user->username, 'email' => $user->email];
}

function add_activity(array $a): array {
    global $DB;
    $course = get_course($a['course_id']);
    $grade = $a['grade_max'];
    $info = (object)[
        'modulename' => 'lti',
        'module' => $DB->get_field('modules', 'id', ['name' => 'lti'], MUST_EXIST),
        'course' => $course->id,
        'section' => $a['section'],
        'visible' => 1,
        'visibleoncoursepage' => 1,
        'cmidnumber' => '',
        'groupmode' => 0,
        'groupingid' => 0,
        'availability' => null,
        'completion' => 0,
        'completionview' => 0,
        'completionexpected' => 0,
        'completionpassgrade' => 0,
        'name' => $a['name'],
        'intro' => '',
        'introformat' => FORMAT_HTML,
        'showdescription' => 0,
        'typeid' => $a['type_id'],
        'toolurl' => '',
        'securetoolurl' => '',
        'instructorchoicesendname' => LTI_SETTING_ALWAYS,
        'instructorchoicesendemailaddr' => LTI_SETTING_ALWAYS,
        'instructorchoiceacceptgrades' => LTI_SETTING_ALWAYS,
        'instructorcustomparameters' => $a['custom'],
        'grade' => $grade,
        'launchcontainer' => $a['launch_container'],
        'debuglaunch' => 0,
        'showtitlelaunch' => 1,
        'showdescriptionlaunch' => 0,
        'icon' => '',
        'secureicon' => '',
    ];
    $info = add_moduleinfo($info, $course);
    return [
        'cmid' => (int)$info->coursemodule,
        'instance' => (int)$info->instance,
        'course_id' => (int)$course->id,
        'name' => $a['name'],
    ];
}

function grade_of(array $a): array {
    global $DB, $CFG;
    $user = $DB->get_record('user', ['username' => core_text::strtolower($a['username']),
        'mnethostid' => $CFG->mnet_localhost_id], '*', MUST_EXIST);
    $cm = get_coursemodule_from_id('lti', $a['cmid'], 0, false, MUST_EXIST);
    $grades = grade_get_grades($cm->course, 'mod', 'lti', $cm->instance, $user->id);
    $items = [];
    $main = null;
    foreach ($grades->items as $number => $item) {
        $g = $item->grades[$user->id] ?? null;
        $entry = [
            'itemnumber' => (int)$number,
            'name' => $item->name,
            'grademax' => (float)$item->grademax,
            'grade' => ($g === null || $g->grade === null) ? null : (float)$g->grade,
            'str_grade' => $g ? $g->str_grade : null,
        ];
        $items[] = $entry;
        if ((int)$number === 0) {
            $main = $entry;
        }
    }
    $main = $main ?? ($items[0] ?? ['grade' => null, 'grademax' => null, 'str_grade' => null]);
    return ['grade' => $main['grade'], 'grademax' => $main['grademax'], 'str_grade' => $main['str_grade'],
            'items' => $items];
}

try {
    switch ($request['command']) {
        case 'register_tool': $result = register_tool($a); break;
        case 'update_tool': $result = update_tool($a); break;
        case 'create_course': $result = create_course_cmd($a); break;
        case 'create_user': $result = create_user_cmd($a); break;
        case 'add_activity': $result = add_activity($a); break;
        case 'grade_of': $result = grade_of($a); break;
        default: throw new coding_exception('unknown command ' . $request['command']);
    }
    echo "\n@@MARK@@" . json_encode(['result' => $result]) . "\n";
} catch (Throwable $e) {
    echo "\n@@MARK@@" . json_encode(['error' => get_class($e) . ': ' . $e->getMessage()
        . (isset($e->debuginfo) ? ' (' . $e->debuginfo . ')' : '')]) . "\n";
}
"""
