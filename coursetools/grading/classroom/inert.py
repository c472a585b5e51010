"""Student notebooks made inert for the pages an instructor opens (nbgrader's formgrader).

One job: turn a notebook that a student wrote into one that no renderer can turn into live
markup, keeping every word the student wrote visible. nbgrader's formgrader renders the autograded
notebook with nbconvert, whose markdown filter passes raw HTML through and keeps ``javascript:``
links (``<img src=x onerror=...>`` in a written answer runs in the Jupyter origin, as the
instructor); raw cells and rich outputs (``text/html``, ``image/svg+xml``,
``application/javascript``, ``text/markdown``) are written into the page as they are.
:func:`inert_notebook` removes each of these doors:

* **Markdown and raw text** (:func:`defuse`): a ``<`` that could open a tag, a comment or an
  autolink (``<`` followed by a letter, ``/``, ``!`` or ``?``) gets a WORD JOINER (U+2060) after it,
  so every HTML and Markdown parser reads it as a plain ``<`` character; an ``&`` that could start
  a character reference gets one too (so ``&#106;avascript:`` stays text); a URL scheme that runs
  script (``javascript:``, ``vbscript:``, ``data:``, also written ``javascript\\:``) gets one before
  its colon, so a link to it is a relative link that goes nowhere. The joiner is invisible: the
  grader reads the student's words as written. Raw cells become markdown cells of defused text.
* **Outputs**: streams and tracebacks (as text), ``text/plain``, and PNG or JPEG figures whose
  bytes really are PNG or JPEG (:mod:`coursetools.grading.sandboxed.outputs`' check); everything else is dropped.
* **Metadata**: a cell keeps only nbgrader's fields, with their documented types and a
  ``grade_id`` of letters, digits, ``_`` and ``-`` (nbgrader's own rule, at most 100 characters),
  else it loses its nbgrader metadata; markdown attachments are kept only as checked PNG/JPEG; the
  notebook keeps only its kernel and language names.

A second wall stands behind this one: the Jupyter server that ``make lab`` and the hub start runs
:mod:`coursetools.grading.classroom.formgrader_guard`, which applies :func:`inert_notebook` again when the
formgrader renders a notebook and sends a Content-Security-Policy that lets no inline script run.
"""

from __future__ import annotations

import re
from typing import Any

import nbformat
from nbformat import NotebookNode

from coursetools.grading.sandboxed.outputs import ANSI, canonical_image

__all__ = ["SAFE_ID", "defuse", "inert_notebook", "is_safe_id"]

JOINER = "\u2060"  # WORD JOINER: invisible, not a letter, not whitespace
# A "<" an HTML or CommonMark parser could take as the start of a tag, comment, declaration,
# processing instruction or autolink.
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
# An "&" that could start a named or numeric character reference.
_ENTITY = re.compile(r"&(?=#|[A-Za-z])")
# A scheme that runs script or embeds a document, also with a backslash-escaped colon.
_SCHEME = re.compile(r"(?i)(script|data)(\\?:)")
# nbgrader's rule for grade ids (nbgrader.preprocessors.CheckCellMetadata), with a length cap.
SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
_NBGRADER_FIELDS = {
    "grade": bool,
    "solution": bool,
    "locked": bool,
    "task": bool,
    "points": (int, float),
    "grade_id": str,
    "schema_version": int,
    "checksum": str,
    "cell_type": str,
}
_TEXT_LIMIT = 200_000  # characters of text kept per output
_IMAGE_LIMIT = 2 * 1024**2  # bytes of one figure


def is_safe_id(value: object) -> bool:
    """Whether ``value`` is a grade id nbgrader would accept (and no markup can hide in)."""
    return isinstance(value, str) and SAFE_ID.fullmatch(value) is not None


def defuse(text: str) -> str:
    """``text`` with every place markup could start broken by an invisible WORD JOINER.

    >>> defuse('<img src=x onerror=alert(1)> [a](javascript:go) a < b')
    '<\u2060img src=x onerror=alert(1)> [a](javascript\u2060:go) a < b'
    """
    text = _TAG_OPEN.sub("<" + JOINER, text)
    text = _ENTITY.sub("&" + JOINER, text)
    return _SCHEME.sub(lambda m: m.group(1) + JOINER + m.group(2), text)


def _text(value: object) -> str:
    if isinstance(value, list):
        value = "".join(x for x in value if isinstance(x, str))
    if not isinstance(value, str):
        return ""
    return ANSI.sub("", value)[:_TEXT_LIMIT]


def _output(output: dict) -> NotebookNode | None:
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        return nbformat.v4.new_output("stream", name=name, text=_text(output.get("text")))
    if kind == "error":
        lines = output.get("traceback")
        text = _text("\n".join(x for x in lines if isinstance(x, str)) if isinstance(lines, list) else "")
        return nbformat.v4.new_output("stream", name="stderr", text=text)
    if kind in ("execute_result", "display_data"):
        data = output.get("data") if isinstance(output.get("data"), dict) else {}
        kept: dict[str, Any] = {}
        for mime in ("image/png", "image/jpeg"):
            image = canonical_image(data.get(mime), mime, _IMAGE_LIMIT) if mime in data else None
            if image is not None:
                kept[mime] = image
        if "text/plain" in data:
            kept["text/plain"] = _text(data["text/plain"])
        if not kept:
            return None
        if kind == "execute_result":
            return nbformat.v4.new_output("execute_result", data=kept, execution_count=None)
        return nbformat.v4.new_output("display_data", data=kept)
    return None


def _nbgrader(meta: object) -> dict | None:
    if not isinstance(meta, dict) or not is_safe_id(meta.get("grade_id")):
        return None
    kept = {}
    for key, kind in _NBGRADER_FIELDS.items():
        value = meta.get(key)
        if isinstance(value, kind) and not (kind is not bool and isinstance(value, bool)):
            kept[key] = value
    if "checksum" in kept and not re.fullmatch(r"[0-9a-f]{1,128}", kept["checksum"]):
        del kept["checksum"]
    if "cell_type" in kept and kept["cell_type"] not in ("code", "markdown", "raw"):
        del kept["cell_type"]
    return kept


def _attachments(value: object) -> dict:
    kept = {}
    if isinstance(value, dict):
        for name, bundle in value.items():
            if not (is_safe_id(str(name).replace(".", "_")) and isinstance(bundle, dict)):
                continue
            images = {m: canonical_image(bundle.get(m), m, _IMAGE_LIMIT) for m in ("image/png", "image/jpeg")}
            images = {m: v for m, v in images.items() if v is not None}
            if images:
                kept[str(name)] = images
    return kept


def _metadata(nb_metadata: object) -> dict:
    kept: dict[str, Any] = {}
    meta = nb_metadata if isinstance(nb_metadata, dict) else {}
    spec = meta.get("kernelspec")
    if isinstance(spec, dict) and is_safe_id(spec.get("name")):
        kept["kernelspec"] = {"name": spec["name"], "display_name": "Python 3", "language": "python"}
    info = meta.get("language_info")
    if isinstance(info, dict) and is_safe_id(info.get("name")):
        kept["language_info"] = {"name": info["name"]}
    return kept


def inert_notebook(nb: NotebookNode) -> NotebookNode:
    """A copy of ``nb`` that renders as inert text and checked images in any notebook renderer.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        A version-4 notebook, possibly written by a student (any content, any metadata).

    Returns
    -------
    nbformat.NotebookNode
        A new notebook with the same cells in the same order: markdown and raw text defused
        (:func:`defuse`; raw cells become markdown), code sources unchanged (renderers escape
        them), outputs reduced to text and checked PNG/JPEG, nbgrader metadata validated, every
        other metadata field and attachment dropped. Cell ids are ``cell-0000``, ``cell-0001``...
    """
    out = nbformat.v4.new_notebook(metadata=_metadata(nb.get("metadata")))
    for index, cell in enumerate(nb.get("cells", [])):
        if not isinstance(cell, dict):
            continue
        source = _text(cell.get("source"))
        meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        nbgrader = _nbgrader(meta.get("nbgrader"))
        metadata = {"nbgrader": nbgrader} if nbgrader is not None else {}
        if cell.get("cell_type") == "code":
            new = nbformat.v4.new_code_cell(source=source, metadata=metadata)
            outputs = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
            new.outputs = [o for o in (_output(x) for x in outputs if isinstance(x, dict)) if o]
        else:
            new = nbformat.v4.new_markdown_cell(source=defuse(source), metadata=metadata)
            markdown = cell.get("cell_type") == "markdown"
            attachments = _attachments(cell.get("attachments")) if markdown else {}
            if attachments:
                new.attachments = attachments
        new.id = f"cell-{index:04d}"
        out.cells.append(new)
    return out
