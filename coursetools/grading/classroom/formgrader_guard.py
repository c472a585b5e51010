"""A Jupyter server extension that keeps student work inert in the instructor's Jupyter.

One job: the second wall behind :mod:`coursetools.grading.classroom.inert`. nbgrader's formgrader renders a
student's notebook into a page of the Jupyter origin, where a script could read every solution
and hidden test through the contents API, write files or open a terminal as the instructor. The
first wall is the file: ``make grade`` writes the autograded notebooks inert. This extension,
loaded by the server that ``make lab`` and the hub's instructors start
(``deploy/jupyter/jupyter_server_config.py``), holds even for a notebook that got there another
way (nbgrader's own *Autograde* button, a hand-copied file), and against a *link* a student
writes into an answer for the instructor to click (issue 36):

* **Render inert.** The formgrader's exporter is wrapped: every notebook it renders goes through
  :func:`coursetools.grading.classroom.inert.inert_notebook` first, and its markdown through the course's own
  renderer (raw HTML escaped, maths as MathML: the page needs no MathJax from a CDN, which fails
  offline).
* **Scripts known in advance** (Content-Security-Policy). Every page of the server gets
  :data:`SERVER_POLICY`: scripts only from the server itself (and JupyterLab's one constant inline
  script, by hash; ``'unsafe-eval'``, without which JupyterLab does not start), no plugins, no
  foreign frames. A formgrader page gets a policy of its own whose ``script-src`` lists the
  SHA-256 of the inline scripts and event handlers of nbgrader's *templates*, never of the page
  being served: nbgrader's templates copy ids into inline scripts (``var assignment_id =
  "{{ assignment_id }}";``), so their sources are rewritten as they load (:func:`constant_scripts`):
  the values go into a ``<script type="application/json">`` block just before the script, which
  reads them from there, so every inline script is the same text whatever the ids. The hashes
  are those scripts that come out the same when the template is rendered twice with two sets of
  made-up values (:func:`template_policy`); a script that still depends on a value is not allowed.
* **Ids checked before nbgrader renders them.** Every formgrader handler's ids (assignment,
  notebook, student, submission, grade, comment; in the path or the query) must name an entry of
  the gradebook (an assignment may also be a source folder, and the API's create calls may name
  a new one) and hold no character that can open markup or leave a script string
  (:func:`unsafe_id`); anything else is a 404 that echoes nothing. nbgrader's own template
  environment escapes what it prints, too. ``/formgrader?path=DIR``, which would make nbgrader
  load (execute) ``DIR/nbgrader_config.py``, is refused.
* **No ``..``, no live files.** A formgrader URL whose path holds a ``..`` segment (raw, encoded,
  double-encoded, with backslashes) is refused before any handler sees it. nbgrader's
  ``SubmissionFilesHandler`` serves only regular files inside the submission's autograded folder,
  as attachments under ``sandbox`` (no scripts, no origin): raster images keep their type, every
  other file is ``application/octet-stream``.
* **JSON is not a page.** nbgrader's API handlers write their JSON as ``text/html``; here it is
  sent as ``text/plain`` (nbgrader's scripts parse it themselves) with ``nosniff`` and a policy
  that runs nothing.
* **The class page** (``build/class.html``, which JupyterLab's HTML viewer cannot show under the
  server's policy) is served at ``<server>/coursetools/class`` with the page's own policy: no
  script at all, sandboxed.

Enable it with ``c.ServerApp.jpserver_extensions.update({"coursetools.grading.classroom.formgrader_guard": True})``.
"""

from __future__ import annotations

import base64
import hashlib
import html.parser
import inspect
import os
import re
import urllib.parse
from pathlib import Path
from typing import Any

import jinja2
import nbformat

from coursetools.grading.classroom.inert import inert_notebook
from coursetools.rendering import markdown_to_html

__all__ = [
    "CLASS_PAGE_POLICY",
    "FILE_POLICY",
    "JSON_POLICY",
    "SERVER_POLICY",
    "constant_scripts",
    "has_dot_segment",
    "policy",
    "script_hashes",
    "template_policy",
    "unsafe_id",
]

# JupyterLab's index page removes the login token from the address bar with one inline script
# (share/jupyter/lab/static/index.html); its hash is computed from the installed page.
_BASE = {
    "default-src": "'self'",
    "style-src": "'self' 'unsafe-inline'",  # JupyterLab and nbconvert set inline styles
    "img-src": "'self' data: blob:",
    "font-src": "'self' data:",
    "connect-src": "'self' ws: wss:",
    "worker-src": "'self' blob:",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'self'",  # JupyterLab frames the formgrader (same origin), nobody else
}
_EXECUTABLE_TYPES = ("", "text/javascript", "application/javascript", "module")

# what the formgrader sends that is not one of its pages: nothing runs, nothing is fetched
JSON_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox"
# a file of a submission: shown (an image), never run, in no origin
FILE_POLICY = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox"
# the class page: its figures are data: PNGs, its styles inline, it has no script
CLASS_PAGE_POLICY = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'self'; sandbox"
)
_RASTER = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
}


def _sha(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


class _InlineCode(html.parser.HTMLParser):
    """Collects a page's inline scripts and inline event handlers, as a browser parses them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[str] = []
        self.handlers: list[str] = []
        self._script: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.handlers += [value or "" for name, value in attrs if name.startswith("on")]
        if tag == "script":
            found = dict(attrs)
            kind = (found.get("type") or "").strip().lower()
            runs = "src" not in found and kind in _EXECUTABLE_TYPES
            self._script = [] if runs else None

    def handle_data(self, data):
        if self._script is not None:
            self._script.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._script is not None:
            self.scripts.append("".join(self._script))
            self._script = None


def script_hashes(page: str) -> tuple[set[str], set[str]]:
    """The CSP hash sources of ``page``'s inline scripts and of its inline event handlers.

    A ``<script>`` without ``src`` whose type a browser executes is hashed over its text, as CSP
    Level 3 specifies (``'sha256-...'``); an ``on...=`` attribute over its value with character
    references decoded (allowed only with ``'unsafe-hashes'``). The page is parsed as HTML, so
    text that merely looks like a tag is not counted.
    """
    parser = _InlineCode()
    parser.feed(page)
    parser.close()
    return {_sha(s) for s in parser.scripts}, {_sha(h) for h in parser.handlers}


def policy(
    scripts: set[str] = frozenset(), handlers: set[str] = frozenset(), *, allow_eval: bool = False
) -> str:
    """A Content-Security-Policy allowing the server's own scripts and the given inline hashes.

    ``allow_eval`` adds ``'unsafe-eval'``: JupyterLab compiles its settings schemas (ajv) with
    ``new Function`` and does not start without it. It lets a running script evaluate strings; it
    lets no inline script or event handler run.
    """
    sources = ["'self'", *(["'unsafe-eval'"] if allow_eval else []), *sorted(scripts)]
    if handlers:
        sources += ["'unsafe-hashes'", *sorted(handlers)]
    directives = {**_BASE, "script-src": " ".join(sources)}
    return "; ".join(f"{name} {value}" for name, value in directives.items())


def _lab_token_script_hashes() -> set[str]:
    """The hashes of the inline scripts of JupyterLab's built page (its token-removing script)."""
    from jupyter_core.paths import jupyter_path  # noqa: PLC0415

    found: set[str] = set()
    for folder in jupyter_path("lab"):
        try:
            text = (Path(folder) / "static" / "index.html").read_text(encoding="utf-8")
        except OSError:
            continue
        found |= {h for h in script_hashes(text)[0] if h != _sha("")}
    return found


SERVER_POLICY = policy(_lab_token_script_hashes(), allow_eval=True)


# ---------------------------------------------------------------------------------------------
# nbgrader's templates with constant inline scripts

_SCRIPT_BLOCK = re.compile(r"(<script\b[^>]*>)(.*?)(</script\s*>)", re.S | re.I)
_JINJA_EXPRESSION = re.compile(r"\{\{(.+?)\}\}", re.S)
# a JavaScript string literal in double quotes holding one Jinja expression: "pre{{ x }}post"
_QUOTED_EXPRESSION = re.compile(r'"([^"\\\n{}]*)\{\{(.+?)\}\}([^"\\\n{}]*)"', re.S)
_VALUES = "JSON.parse(document.currentScript.previousElementSibling.textContent)"


def _rewrite_script(match: re.Match) -> str:
    opening, body, closing = match.groups()
    attributes = dict(re.findall(r"""([a-zA-Z-]+)\s*=\s*["']([^"']*)["']""", opening))
    kind = attributes.get("type", "").strip().lower()
    if "src" in attributes or kind not in _EXECUTABLE_TYPES or "{{" not in body:
        return match.group(0)
    expressions: list[str] = []

    def value(found: re.Match) -> str:
        before, expression, after = found.groups()
        expressions.append(expression.strip().strip("-+").strip())
        return f'("{before}" + {_VALUES}[{len(expressions) - 1}] + "{after}")'

    body = _QUOTED_EXPRESSION.sub(value, body)
    if not expressions:
        return match.group(0)
    values = ", ".join(f"(({e}) | string)" for e in expressions)
    data = '<script type="application/json">{{ [' + values + "] | tojson }}</script>"
    return data + opening + body + closing


def constant_scripts(source: str) -> str:
    """``source`` (a Jinja template) with its inline scripts made independent of the values.

    Each ``"...{{ expression }}..."`` string of an inline script becomes a read of a JSON block
    written (``tojson``: no ``<``, ``>``, ``&`` or ``'`` survives) just before the script, so the
    script's text, and its hash, are the same for every value. Scripts with ``src``, of a type
    that does not run, or without expressions are left as they are; an expression outside a
    string literal is left too (the script then varies with the value and is not allowed).
    """
    return _SCRIPT_BLOCK.sub(_rewrite_script, source)


class _ConstantScriptLoader(jinja2.BaseLoader):
    """A Jinja loader handing out another loader's templates through :func:`constant_scripts`."""

    def __init__(self, loader: jinja2.BaseLoader) -> None:
        self.loader = loader

    def get_source(self, environment, template):
        source, filename, uptodate = self.loader.get_source(environment, template)
        return constant_scripts(source), filename, uptodate

    def list_templates(self):
        return self.loader.list_templates()


def _guard_environment(environment) -> None:
    if not isinstance(environment.loader, _ConstantScriptLoader):
        environment.loader = _ConstantScriptLoader(environment.loader)
        if environment.cache is not None:
            environment.cache.clear()


def _made_up(value: Any, which: int) -> Any:
    """``value`` replaced by a made-up one of its kind (strings, and ids that may be None)."""
    if isinstance(value, str) or value is None:
        return f"coursetools-made-up-{which}"
    if isinstance(value, dict):
        return {k: _made_up(v, which) for k, v in value.items()}
    return value


def template_policy(render, values: dict) -> str:
    """The policy of a page ``render(**values)`` makes, from two renders with made-up values.

    Only the inline scripts and handlers that come out the same when every string of ``values``
    is replaced by one made-up value and then by another are allowed: they are the template's
    own, whatever a URL or the gradebook holds. The page actually served is never read.
    """
    first = script_hashes(render(**_made_up(values, 1)))
    second = script_hashes(render(**_made_up(values, 2)))
    return policy(first[0] & second[0], first[1] & second[1])


# ---------------------------------------------------------------------------------------------
# ids and paths


def unsafe_id(value: str) -> str | None:
    """Why ``value`` cannot be an id in a formgrader URL, or None.

    The gradebook's own rule (:mod:`coursetools.grading.classroom.gradebook`): 1 to 100 printable
    characters, none of ``< > " ' & ` \\``; and no ``/``, ``%`` or ``..``, which no id needs.
    """
    if not isinstance(value, str) or not 1 <= len(value) <= 100:
        return "it must be 1 to 100 characters long"
    if any(c in value for c in "<>\"'&`\\/%") or not value.isprintable():
        return "it holds a character no id may hold"
    if ".." in value or value.strip() != value:
        return "it holds '..' or surrounding spaces"
    return None


def has_dot_segment(path: str) -> bool:
    """Whether ``path``, percent-decoded as often as it decodes, has a ``..`` segment (or a NUL)."""
    seen = path
    for _ in range(5):
        candidate = seen.replace("\\", "/")
        if "\x00" in candidate or ".." in candidate.split("/"):
            return True
        decoded = urllib.parse.unquote(seen)
        if decoded == seen:
            return False
        seen = decoded
    return True  # still decoding after five rounds: nobody's real path


# ---------------------------------------------------------------------------------------------
# the formgrader's exporter

_MATHJAX_SCRIPT = re.compile(r"""<script\s+src="[^"]*mathjax[^"]*"\s*>\s*</script>""", re.I)


def _markdown(source: str, *args: Any, **kwargs: Any) -> str:
    """The formgrader's markdown filter: the course's renderer (raw HTML escaped, MathML maths)."""
    return markdown_to_html(source)


class _GuardedExporter:
    """nbgrader's formgrade exporter, rendering inert notebooks and noting the template's hashes.

    Markdown goes through :func:`coursetools.rendering.markdown_to_html` (raw HTML escaped,
    links other than http(s), mailto and ``#`` dropped, maths as MathML), so the page needs no
    MathJax: its ``<script>`` from a CDN, which fails offline and which the policy would refuse,
    is left out. The template's inline scripts are made constant (:func:`constant_scripts`) and
    the page's policy is :func:`template_policy` of an empty notebook with made-up resources.
    """

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter
        exporter.register_filter("markdown2html", _markdown)
        self.last_policy = policy()

    def _render(self, nb, resources: dict | None, **kw: Any):
        environment = self.exporter.environment
        if not isinstance(environment.loader, _ConstantScriptLoader):
            _guard_environment(environment)
            self.exporter._invalidate_template_cache()
        page, out = self.exporter.from_notebook_node(nb, resources, **kw)
        return _MATHJAX_SCRIPT.sub("", page), out

    def from_filename(self, filename: str, resources: dict | None = None, **kw: Any):
        nb = nbformat.read(filename, as_version=4)
        return self.from_notebook_node(nb, resources, **kw)

    def from_notebook_node(self, nb, resources: dict | None = None, **kw: Any):
        def frame(**made_up):
            return self._render(nbformat.v4.new_notebook(), made_up, **kw)[0]

        # nbgrader prints these into markup unescaped; ids cannot hold a character that changes
        # (the gradebook's rule), names can (O'Brien), and are shown as text
        resources = {
            k: html.escape(v) if isinstance(v, str) else v for k, v in (resources or {}).items()
        }
        self.last_policy = template_policy(frame, dict(resources))
        return self._render(inert_notebook(nb), resources, **kw)


# ---------------------------------------------------------------------------------------------
# the formgrader's handlers


class _HTTP404(Exception):
    pass


def _id_kinds() -> dict[type, tuple[str, ...]]:
    """Each nbgrader formgrader handler -> what its path arguments are, in order."""
    from nbgrader.server_extensions.formgrader import apihandlers as a  # noqa: PLC0415
    from nbgrader.server_extensions.formgrader import handlers as h  # noqa: PLC0415

    return {
        h.FormgraderHandler: (),
        h.ManageAssignmentsHandler: (),
        h.ManageSubmissionsHandler: ("assignment",),
        h.GradebookAssignmentsHandler: (),
        h.GradebookNotebooksHandler: ("assignment",),
        h.GradebookNotebookSubmissionsHandler: ("assignment", "notebook"),
        h.SubmissionHandler: ("submission",),
        h.SubmissionNavigationHandler: ("submission", "action"),
        h.SubmissionFilesHandler: ("file",),
        h.ManageStudentsHandler: (),
        h.ManageStudentsAssignmentsHandler: ("student",),
        h.ManageStudentNotebookSubmissionsHandler: ("student", "assignment"),
        h.Template404: ("any",),
        a.StatusHandler: (),
        a.GradeCollectionHandler: (),
        a.CommentCollectionHandler: (),
        a.GradeHandler: ("grade",),
        a.CommentHandler: ("comment",),
        a.FlagSubmissionHandler: ("submission",),
        a.AssignmentCollectionHandler: (),
        a.AssignmentHandler: ("assignment",),
        a.NotebookCollectionHandler: ("assignment",),
        a.SubmissionCollectionHandler: ("assignment",),
        a.SubmissionHandler: ("assignment", "student"),
        a.SubmittedNotebookCollectionHandler: ("assignment", "notebook"),
        a.StudentCollectionHandler: (),
        a.StudentHandler: ("student",),
        a.StudentSubmissionCollectionHandler: ("student",),
        a.StudentNotebookSubmissionCollectionHandler: ("student", "assignment"),
        a.AssignHandler: ("assignment",),
        a.UnReleaseHandler: ("assignment",),
        a.ReleaseHandler: ("assignment",),
        a.CollectHandler: ("assignment",),
        a.AutogradeHandler: ("assignment", "student"),
        a.GenerateAllFeedbackHandler: ("assignment",),
        a.ReleaseAllFeedbackHandler: ("assignment",),
        a.GenerateFeedbackHandler: ("assignment", "student"),
        a.ReleaseFeedbackHandler: ("assignment", "student"),
    }


_QUERY_KINDS = {"submission_id": "submission", "index": "index", "path": "path"}


def _exists(handler, kind: str, value: str, previous: dict[str, str]) -> bool:
    """Whether ``value`` names an entry of the gradebook (or a source folder, or a new entry)."""
    from nbgrader.api import MissingEntry  # noqa: PLC0415

    creating = handler.request.method == "PUT" and kind in ("assignment", "student")
    gb = handler.gradebook
    try:
        if kind == "assignment":
            if creating:
                return True
            try:
                gb.find_assignment(value)
                return True
            except MissingEntry:  # a source folder not generated yet, or a release
                coursedir = handler.coursedir
                return any(
                    os.path.isdir(coursedir.format_path(step, ".", value))
                    for step in (coursedir.source_directory, coursedir.release_directory)
                )
        if kind == "student":
            if creating:
                return True
            try:
                gb.find_student(value)
                return True
            except MissingEntry:  # handed in, not graded yet: Manage Submissions lists it
                coursedir = handler.coursedir
                return os.path.isdir(
                    coursedir.format_path(coursedir.submitted_directory, value, ".")
                )
        if kind == "notebook":
            return bool(gb.find_notebook(value, previous["assignment"]))
        if kind == "submission":
            return bool(gb.find_submission_notebook_by_id(value))
        if kind == "grade":
            return bool(gb.find_grade_by_id(value))
        if kind == "comment":
            return bool(gb.find_comment_by_id(value))
    except MissingEntry:
        return False
    return False


def _check_request(handler) -> None:
    """Raise :class:`_HTTP404` unless every id ``handler``'s request carries is safe and known."""
    if has_dot_segment(handler.request.path):
        raise _HTTP404("'..' in the path")
    known = _id_kinds()
    kinds = next((known[c] for c in type(handler).__mro__ if c in known), None)
    if kinds is None:
        raise _HTTP404(f"{type(handler).__name__} is not a formgrader handler the guard knows")
    args = list(handler.path_args) + list(handler.path_kwargs.values())
    found: dict[str, str] = {}
    for kind, value in zip(kinds, args, strict=False):
        if kind == "any":
            continue
        if kind == "action":
            if value not in ("next", "prev", "next_incorrect", "prev_incorrect"):
                raise _HTTP404("no such action")
            continue
        if kind == "file":
            submission, _, rest = (value or "").lstrip("/").partition("/")
            if unsafe_id(submission) or not _exists(handler, "submission", submission, found):
                raise _HTTP404("no such submission")
            continue
        if unsafe_id(value) or not _exists(handler, kind, value, found):
            raise _HTTP404(f"no such {kind}")
        found[kind] = value
    for name, values in handler.request.query_arguments.items():
        kind = _QUERY_KINDS.get(name)
        for raw in values:
            value = raw.decode("utf-8", "replace")
            if kind == "path":
                raise _HTTP404("the formgrader loads no configuration from a path in its URL")
            if kind == "index" and not value.isdigit():
                raise _HTTP404("index is a number")
            if kind == "submission" and (
                unsafe_id(value) or not _exists(handler, "submission", value, found)
            ):
                raise _HTTP404("no such submission")


def _refuse(handler, why: str) -> None:
    handler.log.warning("coursetools formgrader guard: refused %s: %s", handler.request.method, why)
    handler.clear()
    handler.set_status(404)
    handler.set_header("Content-Type", "text/plain; charset=utf-8")
    handler.set_header("Content-Security-Policy", JSON_POLICY)
    handler.set_header("X-Content-Type-Options", "nosniff")
    handler._coursetools_policy = JSON_POLICY
    handler.finish("404: Not Found\n")


def _patch_submission_files(handlers) -> None:
    """nbgrader's SubmissionFilesHandler: regular files of the autograded folder, inert."""
    files = handlers.SubmissionFilesHandler
    original_parse = files.parse_url_path

    def parse_url_path(self, url_path):
        from tornado import web  # noqa: PLC0415

        submission, _, rest = url_path.lstrip("/").partition("/")
        if not rest or has_dot_segment(rest) or rest.startswith("/") or "\\" in rest:
            raise web.HTTPError(404)
        full = original_parse(self, url_path)
        sub = self.gradebook.find_submission_notebook_by_id(submission)
        self._coursetools_folder = os.path.realpath(
            self.coursedir.format_path(
                self.coursedir.autograded_directory, sub.student.id, sub.assignment.assignment.name
            )
        )
        return full

    def validate_absolute_path(self, root, absolute_path):
        from tornado import web  # noqa: PLC0415

        folder = getattr(self, "_coursetools_folder", None)
        real = os.path.realpath(absolute_path)
        if folder is None or not real.startswith(folder + os.sep) or not os.path.isfile(real):
            raise web.HTTPError(404)
        if os.path.islink(absolute_path):
            raise web.HTTPError(404)
        return real

    def get_content_type(self):
        suffix = os.path.splitext(self.absolute_path or "")[1].lower()
        return _RASTER.get(suffix, "application/octet-stream")

    def set_extra_headers(self, path):
        name = os.path.basename(path).encode("ascii", "replace").decode("ascii")
        name = re.sub(r"[^A-Za-z0-9._-]", "_", name) or "file"
        self.set_header("Content-Disposition", f'attachment; filename="{name}"')
        self.set_header("Content-Security-Policy", FILE_POLICY)
        self.set_header("X-Content-Type-Options", "nosniff")
        self._coursetools_policy = FILE_POLICY

    files.parse_url_path = parse_url_path
    files.validate_absolute_path = validate_absolute_path
    files.get_content_type = get_content_type
    files.set_extra_headers = set_extra_headers


def _patch_formgrader() -> bool:
    try:
        from nbgrader.server_extensions.formgrader import base, handlers  # noqa: PLC0415
    except ImportError:
        return False
    if getattr(base.BaseHandler, "_coursetools_guard", False):
        return True

    def exporter(self):
        guarded = self.settings.get("coursetools_guarded_exporter")
        if guarded is None or guarded.exporter is not self.settings["nbgrader_exporter"]:
            guarded = _GuardedExporter(self.settings["nbgrader_exporter"])
            self.settings["coursetools_guarded_exporter"] = guarded
        return guarded

    def content_security_policy(self):
        return policy()  # replaced by the response's own policy just before it is sent

    def render(self, name, **ns):
        environment = self.settings["nbgrader_jinja2_env"]
        if not isinstance(environment.loader, _ConstantScriptLoader):
            _guard_environment(environment)
            environment.autoescape = True  # ids and names printed as text, never as markup
        template = environment.get_template(name)
        self._coursetools_policy = template_policy(template.render, ns)
        return template.render(**ns)

    original_prepare = base.BaseHandler.prepare

    async def prepare(self, *args, **kwargs):
        result = original_prepare(self, *args, **kwargs)
        if inspect.isawaitable(result):
            await result
        if self._finished:
            return
        try:
            _check_request(self)
        except _HTTP404 as refused:
            _refuse(self, str(refused))

    original_finish = base.BaseHandler.finish

    def finish(self, chunk=None):
        if not self._finished:
            kind = str(self._headers.get("Content-Type", ""))
            own = getattr(self, "_coursetools_policy", None)
            if isinstance(self, base.BaseApiHandler) and self.get_status() < 400:
                # text, never markup: nbgrader's scripts JSON.parse the body themselves, and
                # jQuery would hand them an object for application/json
                self.set_header("Content-Type", "text/plain; charset=UTF-8")
                own = JSON_POLICY
            elif own is None and isinstance(self, handlers.SubmissionHandler):
                if self.get_status() == 200:
                    guarded = self.settings.get("coursetools_guarded_exporter")
                    own = guarded.last_policy if guarded is not None else None
            if own is not None or "html" in kind or not kind:
                # a page not rendered from nbgrader's templates here (an error page of
                # jupyter_server's, a redirect) allows no inline script at all
                self.set_header("Content-Security-Policy", own or policy())
            self.set_header("X-Content-Type-Options", "nosniff")
        return original_finish(self, chunk)

    base.BaseHandler.exporter = property(exporter)
    base.BaseHandler.content_security_policy = property(content_security_policy)
    base.BaseHandler.render = render
    base.BaseHandler.prepare = prepare
    base.BaseHandler.finish = finish
    _patch_submission_files(handlers)
    base.BaseHandler._coursetools_guard = True
    return True


# ---------------------------------------------------------------------------------------------
# routing: '..' refused before any handler; the class page


def _refusing_router(web_app, prefix: str):
    from tornado import web  # noqa: PLC0415

    class Refused(web.RequestHandler):
        def prepare(self):
            self.set_status(404)
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.set_header("Content-Security-Policy", JSON_POLICY)
            self.set_header("X-Content-Type-Options", "nosniff")
            self.finish("404: Not Found\n")

    original = web_app.find_handler

    def find_handler(request, **kwargs):
        path = request.path or ""
        if path.startswith(prefix) and has_dot_segment(path):
            return web_app.get_handler_delegate(request, Refused)
        return original(request, **kwargs)

    return find_handler


def _class_page_handler(serverapp):
    from jupyter_server.base.handlers import JupyterHandler  # noqa: PLC0415
    from tornado import web  # noqa: PLC0415

    class ClassPage(JupyterHandler):
        """``build/class.html`` of the course, under the class page's own policy (no script)."""

        auth_resource = "contents"

        @property
        def content_security_policy(self):
            return CLASS_PAGE_POLICY

        @web.authenticated
        def get(self):
            page = _class_page_path(serverapp)
            if page is None:
                raise web.HTTPError(404, "no class page: run make grade first")
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.set_header("X-Content-Type-Options", "nosniff")
            self.set_header("Content-Security-Policy", CLASS_PAGE_POLICY)
            self.finish(page.read_bytes())

    return ClassPage


def _class_page_path(serverapp) -> Path | None:
    """The course's ``build/class.html``: beside the gradebook nbgrader uses, or the server's root."""
    roots = []
    formgrader = serverapp.web_app.settings.get("nbgrader_formgrader")
    if formgrader is not None:
        try:
            roots.append(Path(formgrader.coursedir.root))
        except Exception:  # noqa: BLE001 - nbgrader misconfigured: the server's root still counts
            pass
    roots.append(Path(serverapp.root_dir))
    for root in roots:
        candidate = root / "build" / "class.html"
        if candidate.is_file() and not candidate.is_symlink():
            return candidate
    return None


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "coursetools.grading.classroom.formgrader_guard"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.utils import url_path_join  # noqa: PLC0415

    web_app = serverapp.web_app
    headers = web_app.settings.setdefault("headers", {})
    headers["Content-Security-Policy"] = SERVER_POLICY
    patched = _patch_formgrader()
    base_url = web_app.settings.get("base_url", "/")
    web_app.find_handler = _refusing_router(web_app, url_path_join(base_url, "formgrader"))
    web_app.add_handlers(
        ".*$", [(url_path_join(base_url, "coursetools", "class"), _class_page_handler(serverapp))]
    )
    serverapp.log.info(
        "coursetools.grading.classroom.formgrader_guard: Content-Security-Policy set%s; "
        "the class page at %s",
        "; formgrader pages render inert, ids checked" if patched else " (nbgrader not installed)",
        url_path_join(base_url, "coursetools", "class"),
    )
