"""Feedback pages render notebook markdown and maths offline, and nothing a student wrote runs.

References for the expected HTML: CommonMark (spec.commonmark.org) for the markdown; MathML Core
(W3C) for the element names; the attack strings are the classic ones of the OWASP XSS filter
evasion cheat sheet.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from coursetools.rendering import CONTENT_SECURITY_POLICY, markdown_to_html, math_to_html

ROOT = Path(__file__).resolve().parents[2]


def test_markdown_is_rendered():
    out = markdown_to_html("## Title\n\n**bold**, *it*, `code`\n\n* one\n* two")
    assert "<h2>Title</h2>" in out and "<strong>bold</strong>" in out and "<em>it</em>" in out
    assert "<code>code</code>" in out and out.count("<li>") == 2


def test_inline_and_display_maths_become_mathml_and_markdown_never_sees_them():
    out = markdown_to_html("Noise $Z_i \\sim \\mathrm{Lap}(1/\\varepsilon)$ and $a_1 * b_1$.\n\n$$\\sum_i x_i$$")
    assert out.count("<math") == 3 and 'display="block"' in out
    assert "<em>" not in out, "underscores and asterisks inside maths are not emphasis"
    assert "$" not in out


def test_other_delimiters_and_escaped_dollars():
    out = markdown_to_html(r"costs \$5 and \$6, with \(x\) and \[y\]")
    assert out.count("<math") == 2
    assert "$5" in out and "$6" in out


def test_unreadable_latex_is_shown_as_source():
    out = math_to_html(r"\frac{")
    assert "<math" not in out or "<mtext>" in out  # either converted or shown, never raised


@pytest.mark.parametrize(
    "attack",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "[click](javascript:alert(1))",
        "[click](JaVaScRiPt:alert(1))",
        '<a href="javascript:alert(1)">x</a>',
        r"$\text{<script>alert(1)</script>}$",
        r"$$\text{<img src=x onerror=alert(1)>}$$",
        "<iframe src='https://example.org'></iframe>",
        "<style>body{display:none}</style>",
    ],
)
def test_nothing_a_student_writes_becomes_active_html(attack):
    out = markdown_to_html(attack)
    assert not re.search(r"<(script|img|iframe|style|a\s+href=\"javascript)", out, re.IGNORECASE), out
    assert "onerror=" not in out.replace("onerror=alert", "") or "&lt;" in out


def test_the_policy_forbids_scripts_and_remote_loads():
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY
    assert "script-src" not in CONTENT_SECURITY_POLICY  # falls back to default-src 'none'
    assert "img-src data:" in CONTENT_SECURITY_POLICY


def test_every_markdown_cell_of_the_course_renders_without_raw_maths_or_markup():
    # The feedback page shows these cells: no '$', no **bold** markup, no '\frac' may survive as text
    # (a masked ZIP code such as 021** is text, and stays).
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "markdown":
                continue
            out = markdown_to_html(cell.source)
            text = re.sub(r"<code[^>]*>.*?</code>|<math.*?</math>", "", out, flags=re.DOTALL)
            assert not re.search(r"\*\*\w[^*\n]*\w\*\*", text), (path.name, index)  # **bold** left as text
            assert not re.search(r"(?<!\\)\$", text), (path.name, index, text[:200])
            assert "\\frac" not in text and "\\varepsilon" not in text, (path.name, index)


# ------------------------------------------------------------------ keyboard and screen readers


def test_every_box_that_may_scroll_is_reachable_by_keyboard_and_named():
    from coursetools.rendering import accessible_page, keyboard_reachable

    page = keyboard_reachable(
        "<pre>code</pre><pre class='out'>x</pre><div class='scroll'><table></table></div>"
        "<div class='math-block'><math></math></div><span class='math-inline'><math></math></span>"
        "<div class='note'>n</div><span>s</span><pre tabindex='-1'>kept</pre>"
    )
    assert page.count('tabindex="0"') == 5
    assert "<div class='note'>" in page and "<span>s</span>" in page  # nothing else touched
    assert 'role="region" aria-label="table"' in page and 'aria-label="formula"' in page
    assert "<pre tabindex='-1'>kept</pre>" in page  # an author's own tabindex stays
    whole = accessible_page("<html><body><h1>t</h1><pre>x</pre></body></html>")
    assert whole == '<html><body><main><h1>t</h1><pre tabindex="0">x</pre></main></body></html>'


def test_a_figure_is_described_by_its_authors_caption_lines():
    from coursetools.cells import figure_descriptions

    source = (
        "import matplotlib.pyplot as plt\n"
        "# Figure: the Laplace density at scale 1 and 2: the wider one is flatter,\n"
        "#   both peak at the true count.\n"
        "plt.plot(x, y)\n"
        "# a plain comment\n"
        "# Figure: the error against epsilon, falling as 1/epsilon.\n"
    )
    assert figure_descriptions(source) == [
        "the Laplace density at scale 1 and 2: the wider one is flatter, both peak at the true count.",
        "the error against epsilon, falling as 1/epsilon.",
    ]
    assert figure_descriptions("plt.plot(x)\n# Figure:\n") == []
