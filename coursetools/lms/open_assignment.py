"""Where a launch from the LMS lands: the assignment it names, open in the student's JupyterLab.

One job: a Jupyter server extension for students' servers (enabled in
``deploy/student/jupyter_server_config.json``) with one page, ``GET /course/open/<assignment>``,
which the hub sends a student to after an LTI launch whose resource link names an assignment
(:mod:`coursetools.lms.launch`). It

- answers only the server's own user (``@web.authenticated``: the hub's login, or the token);
- takes only an assignment name (:data:`coursetools.lms.settings.NAME`; anything else is 400);
- fetches the assignment with nbgrader's own fetch for the exchange nbgrader is configured with
  (the shared folder or the HTTP exchange: ``ExchangeFactory``, as the Assignments tab's fetch),
  for the course of nbgrader's configuration, when its folder is not in the server's root
  directory yet. The release is fetched into a hidden folder beside it and renamed into place,
  so the folder appears whole or not at all;
- never touches a folder that is there already: a second launch opens the student's own work;
- then redirects to JupyterLab on the assignment's notebook (``<assignment>.ipynb``, or else
  the first ``.ipynb`` by name). An assignment not released yet, a name taken by a file, or an
  exchange that fails get a short accessible page saying so, with a link to JupyterLab; every
  value on it is escaped.

It runs in every student's server: it imports the standard library, tornado, Jupyter Server,
nbgrader and :mod:`coursetools.lms.settings` only.
"""

from __future__ import annotations

import asyncio
import copy
import html
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web

from coursetools.lms.settings import NAME

__all__ = ["OpenAssignmentHandler", "Opened", "open_assignment"]

#: The page's route, under the server's base URL.
ROUTE = r"/course/open/([^/]+)"
_LOCK = "course_open_lock"


@dataclass(frozen=True)
class Opened:
    """What :func:`open_assignment` found or did.

    ``state`` is ``"there"`` (the folder was there: nothing fetched), ``"fetched"``,
    ``"not-released"``, ``"taken"`` (a file has the folder's name), ``"no-course"`` (nbgrader's
    configuration names no course) or ``"failed"`` (the exchange failed: ``message`` says how);
    ``path`` the notebook (or the folder) to open, relative to the root directory, POSIX.
    """

    state: str
    path: str = ""
    course: str = ""
    message: str = ""


def nbgrader_config(root_dir: Path) -> Any:
    """nbgrader's configuration as the Assignments tab reads it: the Jupyter configuration path,
    then ``nbgrader_config.py`` of the root directory, without changing the working directory."""
    from jupyter_core.application import JupyterApp  # noqa: PLC0415 - imported at first use
    from nbgrader.apps import NbGrader  # noqa: PLC0415

    app = NbGrader()
    app.load_cwd_config = False  # nbgrader's handler chdir()s; the root directory is read below
    app.load_config_file()
    super(JupyterApp, app).load_config_file(app.config_file_name, str(root_dir))
    return app.config


def _notebook(folder: Path, assignment: str) -> Path | None:
    """``<assignment>.ipynb`` of the folder, or its first notebook by name."""
    named = folder / f"{assignment}.ipynb"
    if named.is_file():
        return named
    notebooks = sorted(
        p for p in folder.glob("*.ipynb") if p.is_file() and not p.name.startswith(".")
    )
    return notebooks[0] if notebooks else None


def open_assignment(root_dir: Path, assignment: str, *, log: Any = None) -> Opened:
    """Make sure ``root_dir`` holds the fetched ``assignment`` (fetched at most once); what to open.

    Blocking (files and the exchange): the handler runs it in a thread.

    Raises
    ------
    ValueError
        If ``assignment`` is not an assignment name.
    """
    from nbgrader.auth import Authenticator  # noqa: PLC0415 - nbgrader only where it runs
    from nbgrader.coursedir import CourseDirectory  # noqa: PLC0415
    from nbgrader.exchange import ExchangeFactory  # noqa: PLC0415

    if not NAME.fullmatch(assignment):
        raise ValueError(f"not an assignment name: {assignment!r}")
    root = Path(root_dir).resolve()
    config = nbgrader_config(root)
    config.CourseDirectory.assignment_id = assignment
    course = CourseDirectory(config=config).course_id
    if not course or not NAME.fullmatch(course):
        return Opened("no-course", message="nbgrader's configuration names no course")
    config.CourseDirectory.course_id = course
    factory = ExchangeFactory(config=config)
    extra = {"log": log} if log is not None else {}

    def exchange_class(kind, dest: Path):
        settings = copy.deepcopy(config)
        settings.Exchange.assignment_dir = str(dest)
        return kind(
            coursedir=CourseDirectory(config=settings),
            authenticator=Authenticator(config=settings),
            config=settings,
            **extra,
        )

    lister = exchange_class(factory.List, root)
    relative = Path(course, assignment) if lister.path_includes_course else Path(assignment)
    folder = root / relative
    if folder.is_dir():
        return Opened("there", _opened_path(root, folder, assignment), course)
    if folder.exists() or folder.is_symlink():
        return Opened("taken", relative.as_posix(), course)
    try:
        listed = lister.start()
    except Exception as exc:  # noqa: BLE001 - the exchange's failure, shown on the page
        return Opened("failed", course=course, message=_why(exc))
    released = [
        a
        for a in listed or []
        if a.get("assignment_id") == assignment and a.get("course_id") == course
    ]
    if not released:
        return Opened("not-released", course=course)
    # fetched beside the folder (same file system), then renamed: whole or not at all
    staging = Path(tempfile.mkdtemp(prefix=".course-open-", dir=root))
    try:
        try:
            exchange_class(factory.FetchAssignment, staging).start()
        except Exception as exc:  # noqa: BLE001 - the exchange's failure, shown on the page
            return Opened("failed", course=course, message=_why(exc))
        fetched = staging / relative
        if not fetched.is_dir():
            return Opened("failed", course=course, message="the fetch left no assignment folder")
        folder.parent.mkdir(parents=True, exist_ok=True)
        if folder.exists() or folder.is_symlink():  # made meanwhile: the student's is kept
            return Opened("there", _opened_path(root, folder, assignment), course)
        os.rename(fetched, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Opened("fetched", _opened_path(root, folder, assignment), course)


def _opened_path(root: Path, folder: Path, assignment: str) -> str:
    notebook = _notebook(folder, assignment)
    return (notebook or folder).relative_to(root).as_posix()


def _why(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:500]


def _page(title: str, paragraphs: list[str], lab_url: str) -> str:
    """A small accessible page: a language, a title, one heading, the text, a link to the lab.
    ``paragraphs`` are plain text (escaped here)."""
    esc = html.escape
    body = "\n".join(f"<p>{esc(p)}</p>" for p in paragraphs)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n</head>\n<body>\n<main>\n<h1>{esc(title)}</h1>\n{body}\n"
        f'<p><a href="{esc(lab_url, quote=True)}">Open JupyterLab</a></p>\n</main>\n</body>\n</html>\n'
    )


class OpenAssignmentHandler(JupyterHandler):
    """``GET /course/open/<assignment>``: fetch it once if need be, then open its notebook."""

    @web.authenticated
    async def get(self, assignment: str) -> None:
        if not NAME.fullmatch(assignment):
            raise web.HTTPError(400, "not an assignment name (letters, digits, '_', '.', '-')")
        root = Path(self.settings.get("server_root_dir") or os.getcwd())
        async with self.settings[_LOCK]:  # two launches at once: one fetch
            opened = await asyncio.get_running_loop().run_in_executor(
                None, lambda: open_assignment(root, assignment, log=self.log)
            )
        lab = url_path_join(self.base_url, "lab")
        if opened.state in ("there", "fetched"):
            self.redirect(url_path_join(lab, "tree", quote(opened.path)))
            return
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        if opened.state == "not-released":
            self.set_status(404)
            self.finish(_page(
                f"{assignment} is not released yet",
                [f"The assignment {assignment} of {opened.course} is not released yet. "
                 "Open it again from the course page once your instructor has released it."],
                lab,
            ))  # fmt: skip
        elif opened.state == "taken":
            self.set_status(409)
            self.finish(_page(
                f"{assignment} cannot be fetched",
                [f"Your files already have something named {opened.path} that is not the "
                 "assignment's folder. Rename it in JupyterLab, then open the assignment again."],
                lab,
            ))  # fmt: skip
        else:
            self.log.warning("course/open/%s: %s %s", assignment, opened.state, opened.message)
            self.set_status(502 if opened.state == "failed" else 500)
            self.finish(_page(
                f"{assignment} could not be fetched",
                [f"The course's exchange could not give you {assignment}: {opened.message}.",
                 "Try again in a minute, or fetch it from the Assignments tab of JupyterLab."],
                lab,
            ))  # fmt: skip


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "coursetools.lms.open_assignment"}]


def _load_jupyter_server_extension(serverapp) -> None:
    web_app = serverapp.web_app
    route = url_path_join(web_app.settings["base_url"], ROUTE)
    web_app.settings[_LOCK] = asyncio.Lock()
    web_app.add_handlers(".*$", [(route, OpenAssignmentHandler)])
    serverapp.log.info("coursetools: /course/open/<assignment> opens an assignment from the LMS")
