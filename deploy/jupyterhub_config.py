"""JupyterHub for the course: instructors grade in the course directory, students use nbgrader's exchange.

Run from the course's virtualenv (it has jupyterhub and a configurable-http-proxy)::

    COURSE_ROOT=/srv/dp-course INSTRUCTORS=alice STUDENTS=bob,carol \\
        .venv/bin/jupyterhub -f deploy/jupyterhub_config.py

Settings come from the environment (docs/jupyterhub.md has the whole walk-through):

``COURSE_ROOT``            the course directory (a clone of this repository): the instructors'
                           servers start there, so the formgrader finds solutions/ and build/.
``NBGRADER_EXCHANGE``      nbgrader's exchange, shared by everyone (default /srv/nbgrader/exchange;
                           made world-writable with the sticky bit, as nbgrader requires).
``INSTRUCTORS``, ``STUDENTS``  comma-separated user names (the allowed users; instructors are admins).
``HUB_IP``, ``HUB_PORT``   where the hub listens (default 127.0.0.1:8000; put TLS in front);
                           ``HUB_API_PORT`` (8081) and ``PROXY_API_PORT`` (8001) are internal.
``COURSE_HUB_STATE``       the hub's database, cookie secret and proxy token (default ./hub-state).
``COURSE_HUB_DEMO=1``      one machine, one operating-system account: a dummy authenticator (the
                           password in ``COURSE_HUB_DEMO_PASSWORD``) and every server run as the
                           hub's own user, each student known to nbgrader by the hub user name.
                           For a trial and the end-to-end test only: the students could read each
                           other's files. A class uses real accounts (the default: PAM and one
                           system user per person) or a container spawner.
``COURSE_HANDIN``         ``0`` turns off the hand-in service (default on: each submission graded
                           as it arrives, its feedback where Fetch Feedback finds it);
                           ``COURSE_HANDIN_SETTINGS`` its rules (default deploy/handin.toml),
                           ``COURSE_HANDIN_SCHEDULER`` a Dask scheduler to grade on
                           (default: the hub machine's cores).
``COURSE_INSTRUCTOR_GROUP`` optional: the operating-system group of the instructors. The hand-in
                           service writes grades, pages and the class page readable by its group
                           only (umask 027); with this set, ``COURSE_ROOT/build`` is made that
                           group's and setgid (2750), so instructors read what the service
                           (root) writes and students read none of it.
``COURSE_EXCHANGE=http``   the exchange over HTTP instead of the shared folder (no shared disk, as
                          on Kubernetes): ``EXCHANGE_PORT`` (8765), ``EXCHANGE_VOLUME`` (the
                          archives; default in COURSE_HUB_STATE), ``EXCHANGE_DATABASE`` (an
                          SQLAlchemy URL; default SQLite in the volume), ``EXCHANGE_MAX_MB`` (20).
``COURSE_HUB_ADMIN_TOKEN`` optional: an API token for a service that may manage users and
                           servers (the end-to-end test drives the hub with it).
``COURSE_AUTH=lti13``      students and instructors arrive from the LMS (LTI 1.3, docs/lms.md):
                           ``LTI_SETTINGS`` the registration (default deploy/lti.toml); the
                           LMS role picks the course group, graded hand-ins' scores go back to
                           the LMS's gradebook. ``HUB_PUBLIC_URL`` (https://...) makes the
                           launch's cookies cross-site (SameSite=None; Secure), as an LMS on
                           another site needs.
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 - provided by traitlets when JupyterHub loads this file

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent  # the virtualenv's bin/: jupyterhub-singleuser, the proxy
COURSE_ROOT = Path(os.environ.get("COURSE_ROOT", HERE.parent)).resolve()
EXCHANGE = Path(os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange"))
COURSE_ID = os.environ.get("COURSE_ID", "dp-course")
INSTRUCTORS = {u for u in os.environ.get("INSTRUCTORS", "").split(",") if u}
STUDENTS = {u for u in os.environ.get("STUDENTS", "").split(",") if u}
STATE = Path(os.environ.get("COURSE_HUB_STATE", "hub-state")).resolve()
DEMO = os.environ.get("COURSE_HUB_DEMO") == "1"

STATE.mkdir(parents=True, exist_ok=True, mode=0o700)
# COURSE_EXCHANGE=http: the exchange over HTTP, with no shared folder (see below)
HTTP_EXCHANGE = os.environ.get("COURSE_EXCHANGE", "files") == "http"
EXCHANGE_VOLUME = Path(os.environ.get("EXCHANGE_VOLUME", str(STATE / "exchange")))
EXCHANGE_DATABASE = os.environ.get("EXCHANGE_DATABASE", "")
if not HTTP_EXCHANGE:
    EXCHANGE.mkdir(parents=True, exist_ok=True)
    EXCHANGE.chmod(0o1777)  # nbgrader's exchange: everyone writes, nobody removes another's files

c.JupyterHub.ip = os.environ.get("HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("HUB_API_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('PROXY_API_PORT', '8001')}"
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.ConfigurableHTTPProxy.command = [str(BIN / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")

c.Authenticator.allowed_users = INSTRUCTORS | STUDENTS
c.Authenticator.admin_users = INSTRUCTORS
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 180

LTI = os.environ.get("COURSE_AUTH") == "lti13"
LTI_SETTINGS = Path(os.environ.get("LTI_SETTINGS", str(HERE / "lti.toml"))).resolve()
if DEMO and not LTI:
    c.JupyterHub.authenticator_class = "dummy"
    c.DummyAuthenticator.password = os.environ.get("COURSE_HUB_DEMO_PASSWORD", "")
if DEMO:
    c.JupyterHub.spawner_class = "simple"  # every server as the hub's own OS user
    c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "homes" / "{username}")
    if os.geteuid() == 0:  # a container or a VM where the hub runs as root
        c.Spawner.args = ["--allow-root"]

services = []
# Feedback at hand-in (docs/jupyterhub.md): a managed service (the hub starts it, and restarts it
# if it exits) that grades each submission as it lands in the exchange and puts the feedback page
# where the student's Fetch Feedback finds it. It runs as the hub's user (root on a real hub: the
# grading sandbox needs it). COURSE_HANDIN=0 turns it off; COURSE_HANDIN_SETTINGS names the rules
# (attempts, cool-down, deadline, hidden messages; default deploy/handin.toml).
if LTI:
    # The LMS signs students and instructors in (coursetools/lms/launch.py: ltiauthenticator's
    # checks, the deployment id, a nonce used once, the role from the standard claim only).
    c.JupyterHub.authenticator_class = "coursetools.lms.launch.CourseLTI13Authenticator"
    c.CourseLTI13Authenticator.settings_file = str(LTI_SETTINGS)
    c.CourseLTI13Authenticator.state_dir = str(STATE)
    c.CourseLTI13Authenticator.allow_http = os.environ.get("COURSE_LTI_ALLOW_HTTP") == "1"
    c.Authenticator.allowed_users = set()  # whoever the platform signs a launch for, by role
    if os.environ.get("HUB_PUBLIC_URL", "").startswith("https://"):
        # the launch's state and nonce cookies must come back with the LMS's cross-site POST
        c.JupyterHub.tornado_settings = {"cookie_options": {"SameSite": "None", "Secure": True}}

if os.environ.get("COURSE_HANDIN", "1") != "0":
    BUILD = COURSE_ROOT / "build"
    if os.environ.get("COURSE_INSTRUCTOR_GROUP"):  # what the service writes: instructors only
        import grp

        BUILD.mkdir(parents=True, exist_ok=True)
        os.chown(BUILD, -1, grp.getgrnam(os.environ["COURSE_INSTRUCTOR_GROUP"]).gr_gid)
        BUILD.chmod(0o2750)  # setgid: files and folders made inside keep the instructors' group
    services.append(
        {
            "name": "handin-grader",
            "command": [
                sys.executable, "-m", "coursetools", "handin", "serve",
                "--exchange", str(EXCHANGE),
                "--course-id", COURSE_ID,
                "--source", str(COURSE_ROOT / "solutions"),
                "--nbgrader-config", str(COURSE_ROOT / "nbgrader_config.py"),
                "--state", str(BUILD / "handin"),
                "--grades", str(BUILD / "grades.csv"),
                "--settings", os.environ.get("COURSE_HANDIN_SETTINGS", str(HERE / "handin.toml")),
                # one OS account on the demo hub: every folder is the hub's, so no owner check
                *(["--no-check-owner"] if DEMO else []),
                # the HTTP exchange: hand-ins from its store, pages back to it (no folder)
                *(["--http-exchange", str(EXCHANGE_VOLUME)] if HTTP_EXCHANGE else []),
                *(["--http-exchange-database", EXCHANGE_DATABASE] if HTTP_EXCHANGE and EXCHANGE_DATABASE else []),
                # grade on a Dask cluster (tcp://host:port) when one is configured
                *(["--scheduler", os.environ["COURSE_HANDIN_SCHEDULER"]]
                  if os.environ.get("COURSE_HANDIN_SCHEDULER") else []),
                # scores back to the LMS's gradebook (the launches the hub recorded say whose)
                *(["--lti", str(LTI_SETTINGS)] if LTI else []),
            ],
            "cwd": str(HERE.parent),  # the checkout whose coursetools this Python runs
            "environment": {
                "NBGRADER_EXCHANGE": str(EXCHANGE),
                "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                # the LTI records and key, in the hub's state folder as for the hub
                "COURSE_HUB_STATE": str(STATE),
                **({"COURSE_LTI_ALLOW_HTTP": "1"} if os.environ.get("COURSE_LTI_ALLOW_HTTP") == "1" else {}),
            },
        }
    )

roles = []
# The exchange over HTTP (COURSE_EXCHANGE=http; docs/jupyterhub.md, "No shared disk"): a managed
# service that keeps releases, hand-ins and feedback in its own database and volume, and knows each
# user by their hub token, as servers on Kubernetes need (one OS user, no shared folder). The
# course's roles are the hub groups formgrade-<course> (instructors) and nbgrader-<course>
# (students); the service reads them with its own token (scope read:groups).
EXCHANGE_URL = ""
if HTTP_EXCHANGE:
    exchange_port = int(os.environ.get("EXCHANGE_PORT", "8765"))
    services.append(
        {
            "name": "exchange",
            "url": f"http://127.0.0.1:{exchange_port}",
            "command": [
                sys.executable, "-m", "coursetools", "exchange", "serve",
                "--volume", str(EXCHANGE_VOLUME),
                *(["--database", EXCHANGE_DATABASE] if EXCHANGE_DATABASE else []),
                "--max-mb", os.environ.get("EXCHANGE_MAX_MB", "20"),
            ],
            "cwd": str(HERE.parent),
            "environment": {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"},
        }
    )
    roles.append({"name": "exchange", "scopes": ["read:groups"], "services": ["exchange"]})
    if not LTI:  # with LTI the launch sets each user's group from the LMS role
        c.JupyterHub.load_groups = {
            f"formgrade-{COURSE_ID}": {"users": sorted(INSTRUCTORS)},
            f"nbgrader-{COURSE_ID}": {"users": sorted(STUDENTS)},
        }
    # the servers reach the service directly; every request is checked against the hub anyway
    EXCHANGE_URL = f"http://127.0.0.1:{exchange_port}/services/exchange"

token = os.environ.get("COURSE_HUB_ADMIN_TOKEN")
if token:
    services.append({"name": "course-admin", "api_token": token})
    roles.append(
        {
            "name": "course-admin",
            "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "read:users", "groups"],
            "services": ["course-admin"],
        }
    )
c.JupyterHub.load_roles = roles
c.JupyterHub.services = services


def _per_user_settings(spawner):
    """Instructors work in the course directory; students in their home, without the formgrader."""
    name = spawner.user.name
    # an instructor: named in INSTRUCTORS, or in the course's instructors' group (set at each LTI
    # launch from the LMS role)
    teaches = name in INSTRUCTORS or any(g.name == f"formgrade-{COURSE_ID}" for g in spawner.user.groups)
    role = "instructor" if teaches else "student"
    env = {
        # nbgrader and Jupyter read this directory's nbgrader_config.py / jupyter_server_config.json
        # (instructors also load deploy/jupyter/: the formgrader shows student work inert)
        "JUPYTER_CONFIG_PATH": os.pathsep.join(
            [str(HERE / role)] + ([str(HERE / "jupyter")] if role == "instructor" else [])
        ),
        "NBGRADER_EXCHANGE": str(EXCHANGE),
        "COURSE_ID": COURSE_ID,
        "COURSE_ROOT": str(COURSE_ROOT),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
    }
    if DEMO:
        env["COURSE_HUB_DEMO"] = "1"
    if HTTP_EXCHANGE:
        env["NBGRADER_EXCHANGE_URL"] = EXCHANGE_URL
    spawner.environment.update(env)
    if role == "instructor":
        spawner.notebook_dir = str(COURSE_ROOT)  # the formgrader's links resolve from here
    if DEMO:
        Path(spawner.home_dir_template.format(username=name)).mkdir(parents=True, exist_ok=True)


c.Spawner.pre_spawn_hook = _per_user_settings
