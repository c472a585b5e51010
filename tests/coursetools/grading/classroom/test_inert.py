"""Student notebooks made inert for the formgrader (coursetools.grading.classroom.inert, coursetools.grading.classroom.formgrader_guard).

The renderer is the one nbgrader's formgrader uses: nbconvert's ``markdown2html`` (mistune, raw
HTML passed through, ``javascript:`` links kept). Every rendering is parsed with the standard
library's HTML parser and checked for what could run: a tag outside Markdown's own, an ``on...``
attribute, or a link or source whose scheme runs script.
"""

from __future__ import annotations

import base64
import html.parser
import random

import nbformat
import pytest
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from coursetools.grading.classroom import formgrader_guard
from coursetools.grading.classroom.inert import JOINER, defuse, inert_notebook, is_safe_id

MARKDOWN_TAGS = {
    "p", "a", "em", "strong", "code", "pre", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5",
    "h6", "blockquote", "hr", "br", "img", "table", "thead", "tbody", "tr", "th", "td", "del",
    "span", "div", "dl", "dt", "dd",
}
PAYLOADS = [
    '<img src=x onerror="alert(1)">',
    "<svg onload=alert(1)>",
    "<details open ontoggle=alert(1)>",
    "<script>alert(1)</script>",
    '<iframe srcdoc="<script>alert(1)</script>">',
    "<math><mtext><img src=x onerror=alert(1)></mtext></math>",
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](javascript\\:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](&#x6A;avascript&colon;alert(1))",
    "<javascript:alert(1)>",
    "![x](javascript:alert(1))",
    "[x](data:text/html,<script>alert(1)</script>)",
    "<!--><img src=x onerror=alert(1)>-->",
    "<a/href=javascript:alert(1)>x</a>",
    "$<img src=x onerror=alert(1)>$",
    "```\n</code><img src=x onerror=alert(1)>\n```",
    "`</code><img src=x onerror=alert(1)>`",
    "[x]: javascript:alert(1)\n\n[link][x]",
]


class _Live(html.parser.HTMLParser):
    """Collects what in a page could run: foreign tags, handlers, script URLs."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in MARKDOWN_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"{tag}.{name}")
            if name in ("href", "src", "action", "formaction", "data", "srcdoc") and value:
                scheme = value.strip().split(":", 1)[0].lower() if ":" in value else ""
                if scheme.replace("\t", "").replace("\n", "") in ("javascript", "vbscript", "data"):
                    self.found.append(f"{tag}.{name}={value[:30]}")


def _live(markdown: str) -> list[str]:
    parser = _Live()
    parser.feed(markdown2html_mistune(markdown))
    return parser.found


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_renderer_the_formgrader_uses_runs_these_payloads_unless_defused(payload):
    live = _live(defuse(payload))
    assert live == [], live
    assert defuse(payload).replace(JOINER, "") == payload  # the student's words, all of them


def test_the_detector_sees_live_markup_in_the_raw_payloads():
    """Without defuse most payloads are live in nbconvert's rendering: the check has teeth."""
    assert sum(bool(_live(p)) for p in PAYLOADS) >= 12


def test_random_mixtures_of_markup_fragments_are_never_live():
    """5000 seeded random strings built from the pieces attacks are made of."""
    pieces = [
        "<", ">", "/", "!", "?", "-", "&", "#", ";", ":", "\\", '"', "'", "=", "(", ")", "[",
        "]", "`", "$", " ", "\n", "img", "svg", "script", "a", "href", "src", "onerror",
        "onload", "javascript", "JaVaScRiPt", "data", "x", "106", "x6A", "colon", "lt", "amp",
        "iframe", "srcdoc", "math", "mtext", "details", "ontoggle", "open", "!--", "\t",
    ]
    rng = random.Random(20261127)
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        assert _live(defuse(text)) == [], text
        assert defuse(text).replace(JOINER, "") == text


def _png() -> str:
    import io

    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(0.2, 0.2))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def test_inert_notebook_keeps_text_and_real_images_only():
    png = _png()
    code = nbformat.v4.new_code_cell("x = 1\nprint('<b>')")
    code.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="<script>alert(1)</script>\n"),
        nbformat.v4.new_output(
            "display_data",
            data={"text/html": "<script>alert(1)</script>", "image/svg+xml": "<svg onload=a>",
                  "application/javascript": "alert(1)", "text/markdown": "<img onerror=a>",
                  "image/png": png, "text/plain": "<Figure>"},
        ),
        nbformat.v4.new_output("display_data", data={"image/png": base64.b64encode(b"<svg/>").decode()}),
        nbformat.v4.new_output("error", ename="E", evalue="v", traceback=["\x1b[31mboom\x1b[0m"]),
    ]
    raw = nbformat.v4.new_raw_cell("<img src=x onerror=alert(1)>")
    raw.metadata["raw_mimetype"] = "text/html"
    forged = nbformat.v4.new_markdown_cell("text")
    forged.metadata["nbgrader"] = {"grade": True, "points": 1, "grade_id": 'a" onfocus="x'}
    answer = nbformat.v4.new_markdown_cell("<b>bold</b> claim")
    answer.metadata.update(nbgrader={"grade": True, "solution": True, "points": 2,
                                     "grade_id": "why_random", "schema_version": 3},
                           tags=["<x>"], jupyter={"source_hidden": True})
    answer.attachments = {"a.png": {"image/png": png}, "b.svg": {"image/svg+xml": "<svg/>"}}
    nb = nbformat.v4.new_notebook(cells=[code, raw, forged, answer],
                                  metadata={"title": "<script>", "kernelspec": {
                                      "name": "python3", "display_name": "<b>"}})
    out = inert_notebook(nb)
    nbformat.validate(out)
    code_out, raw_out, forged_out, answer_out = out.cells
    assert code_out.source == code.source  # code is shown escaped by every renderer
    kinds = [o.get("data", {}).keys() if "data" in o else o.output_type for o in code_out.outputs]
    assert [set(k) if not isinstance(k, str) else k for k in kinds] == [
        "stream", {"image/png", "text/plain"}, "stream"]
    assert code_out.outputs[2].text == "boom"
    assert raw_out.cell_type == "markdown" and _live(raw_out.source) == []
    assert "nbgrader" not in forged_out.metadata
    assert answer_out.metadata == {"nbgrader": {"grade": True, "solution": True, "points": 2,
                                                "grade_id": "why_random", "schema_version": 3}}
    assert set(answer_out.attachments) == {"a.png"}
    assert dict(out.metadata) == {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                 "language": "python"}}
    assert [c.id for c in out.cells] == ["cell-0000", "cell-0001", "cell-0002", "cell-0003"]


@pytest.mark.parametrize("value,ok", [("why_random", True), ("a-b_9", True), ("", False),
                                      ('a" x', False), ("a<b", False), ("x" * 101, False), (3, False)])
def test_grade_ids_follow_nbgraders_rule(value, ok):
    assert is_safe_id(value) is ok


def _formgrade_exporter():
    from nbconvert import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers

    return HTMLExporter(template_name="formgrade", extra_template_basedirs=[handlers.template_path])


RESOURCES = {"assignment_id": "ps1", "notebook_id": "ps1", "submission_id": "abc", "index": 0,
             "total": 1, "base_url": "", "student": "ada", "last_name": None,
             "first_name": None, "notebook_path": "/x"}


def test_the_submission_pages_policy_hashes_the_template_and_never_the_notebook():
    """Even a script that got past inert_notebook has no hash in the page's policy."""
    stock = _formgrade_exporter()
    hostile = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "<script>fetch('/api/contents/solutions')</script>\n\n<b onclick=\"steal()\">x</b>")])
    page, _ = stock.from_notebook_node(hostile, resources=dict(RESOURCES))
    scripts, handlers = formgrader_guard.script_hashes(page)
    student_script = formgrader_guard._sha("fetch('/api/contents/solutions')")
    assert student_script in scripts and formgrader_guard._sha("steal()") in handlers  # live raw
    guarded = formgrader_guard._GuardedExporter(stock)
    shown, _ = guarded.from_notebook_node(hostile, resources=dict(RESOURCES))
    shown_scripts, shown_handlers = formgrader_guard.script_hashes(shown)
    assert student_script not in shown_scripts  # the first wall: rendered as text
    assert formgrader_guard._sha("steal()") not in shown_handlers
    policy = guarded.last_policy
    script_src = policy.split("script-src ")[1].split(";")[0]
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
    assert student_script not in script_src and formgrader_guard._sha("steal()") not in script_src
    template_scripts, template_handlers = formgrader_guard.script_hashes(
        stock.from_notebook_node(nbformat.v4.new_notebook(), resources=dict(RESOURCES))[0])
    assert template_scripts and template_scripts | template_handlers <= set(script_src.split())


def test_every_page_of_the_server_gets_a_policy_without_inline_script():
    """JupyterLab needs 'unsafe-eval' (ajv compiles its settings schemas); no page allows inline."""
    policy = formgrader_guard.SERVER_POLICY
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'self'"
    assert "'unsafe-inline'" not in directives["script-src"]
    assert "'unsafe-eval'" not in formgrader_guard.policy().split("script-src")[1]
