"""A Jupyter server extension that keeps student work inert in the instructor's Jupyter.

One job: the second wall behind :mod:`coursetools.grading.classroom.inert`. nbgrader's formgrader renders a
student's notebook into a page of the Jupyter origin, where a script could read every solution
and hidden test through the contents API, write files or open a terminal as the instructor. The
first wall is the file: ``make grade`` writes the autograded notebooks inert. This extension,
loaded by the server that ``make lab`` and the hub's instructors start
(``deploy/instructor/jupyter_server_config.py``), holds even for a notebook that got there another
way (nbgrader's own *Autograde* button, a hand-copied file):

* **Render inert.** The formgrader's exporter is wrapped: every notebook it renders goes through
  :func:`coursetools.grading.classroom.inert.inert_notebook` first, and its markdown through the course's own
  renderer (raw HTML escaped, maths as MathML: the page needs no MathJax from a CDN, which fails
  offline).
* **No inline script runs** (Content-Security-Policy). Every page of the server gets
  :data:`SERVER_POLICY`: scripts only from the server itself (and JupyterLab's one constant inline
  script, by hash; ``'unsafe-eval'``, without which JupyterLab does not start), no plugins, no
  foreign frames. A formgrader page gets a policy of its own whose
  ``script-src`` lists the SHA-256 of exactly the inline scripts and event handlers of nbgrader's
  *template*: for a submission, computed by rendering the same page around an empty notebook, so a
  script that a student managed to put in the notebook part has no hash and is refused.

Enable it with ``c.ServerApp.jpserver_extensions.update({"coursetools.grading.classroom.formgrader_guard": True})``.
"""

from __future__ import annotations

import base64
import hashlib
import html.parser
import re
from pathlib import Path
from typing import Any

import nbformat

from coursetools.grading.classroom.inert import inert_notebook
from coursetools.rendering import markdown_to_html

__all__ = ["SERVER_POLICY", "policy", "script_hashes"]

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


_MATHJAX_SCRIPT = re.compile(r"""<script\s+src="[^"]*mathjax[^"]*"\s*>\s*</script>""", re.I)


def _markdown(source: str, *args: Any, **kwargs: Any) -> str:
    """The formgrader's markdown filter: the course's renderer (raw HTML escaped, MathML maths)."""
    return markdown_to_html(source)


class _GuardedExporter:
    """nbgrader's formgrade exporter, rendering inert notebooks and noting the template's hashes.

    Markdown goes through :func:`coursetools.rendering.markdown_to_html` (raw HTML escaped,
    links other than http(s), mailto and ``#`` dropped, maths as MathML), so the page needs no
    MathJax: its ``<script>`` from a CDN, which fails offline and which the policy would refuse,
    is left out.
    """

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter
        exporter.register_filter("markdown2html", _markdown)
        self.last_policy = policy()

    def _render(self, nb, resources: dict | None, **kw: Any):
        page, out = self.exporter.from_notebook_node(nb, resources, **kw)
        return _MATHJAX_SCRIPT.sub("", page), out

    def from_filename(self, filename: str, resources: dict | None = None, **kw: Any):
        nb = nbformat.read(filename, as_version=4)
        return self.from_notebook_node(nb, resources, **kw)

    def from_notebook_node(self, nb, resources: dict | None = None, **kw: Any):
        empty = nbformat.v4.new_notebook(metadata=inert_notebook(nb).metadata)
        frame, _ = self._render(empty, dict(resources or {}), **kw)
        self.last_policy = policy(*script_hashes(frame))
        return self._render(inert_notebook(nb), resources, **kw)


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
        return policy()  # replaced by the page's own policy just before it is sent

    original_finish = base.BaseHandler.finish

    def finish(self, chunk=None):
        if not self._finished and "html" in str(self._headers.get("Content-Type", "")):
            if isinstance(self, handlers.SubmissionHandler) and self.get_status() == 200:
                guarded = self.settings.get("coursetools_guarded_exporter")
                page_policy = guarded.last_policy if guarded is not None else policy()
            else:  # nbgrader's own templates, filled with ids the gradebook validated
                body = b"".join(self._write_buffer) + (
                    chunk.encode("utf-8") if isinstance(chunk, str) else chunk or b""
                )
                page_policy = policy(*script_hashes(body.decode("utf-8", "replace")))
            self.set_header("Content-Security-Policy", page_policy)
        return original_finish(self, chunk)

    base.BaseHandler.exporter = property(exporter)
    base.BaseHandler.content_security_policy = property(content_security_policy)
    base.BaseHandler.finish = finish
    base.BaseHandler._coursetools_guard = True
    return True


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "coursetools.grading.classroom.formgrader_guard"}]


def _load_jupyter_server_extension(serverapp) -> None:
    headers = serverapp.web_app.settings.setdefault("headers", {})
    headers["Content-Security-Policy"] = SERVER_POLICY
    patched = _patch_formgrader()
    serverapp.log.info(
        "coursetools.grading.classroom.formgrader_guard: Content-Security-Policy set%s",
        "; formgrader pages render inert" if patched else " (nbgrader not installed)",
    )
