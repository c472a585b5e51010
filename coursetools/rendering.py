"""Notebook markdown (with LaTeX maths) as safe, self-contained HTML, for the feedback pages.

One job: a markdown cell's source in, an HTML fragment out, with nothing fetched from the network
and nothing a student wrote able to run or load anything in the reader's browser.

* Maths is cut out first (``$$...$$``, ``\\[...\\]``, ``$...$``, ``\\(...\\)``; ``\\$`` is a dollar),
  so that markdown never sees its underscores and asterisks, and converted to MathML by
  ``latex2mathml``, which browsers render natively (Chromium 109+, Firefox, Safari): no MathJax,
  no CDN. The MathML is then parsed and rebuilt from an allow-list of MathML elements and
  attributes, because the converter copies ``\\text{...}`` verbatim (``\\text{<script>}`` would
  come out as a script element). A formula the converter cannot read is shown as its source, escaped.
* The rest is CommonMark by ``mistune`` (nbconvert's own markdown parser) with raw HTML escaped,
  and links restricted to http(s), mailto and in-page anchors.
* Pages that embed these fragments carry :data:`CONTENT_SECURITY_POLICY`: no scripts, no remote
  images, styles only inline; a fragment that slipped through could still load or run nothing.
"""

from __future__ import annotations

import html
import re
import secrets
import xml.etree.ElementTree as ET

import mistune
from latex2mathml.converter import convert as latex_to_mathml

__all__ = ["CONTENT_SECURITY_POLICY", "markdown_to_html", "math_to_html"]

#: For a ``<meta http-equiv="Content-Security-Policy">`` of a page showing student content.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
)

_MATHML = "http://www.w3.org/1998/Math/MathML"
_MATHML_TAGS = frozenset(
    "math mrow mi mn mo ms mtext mspace msub msup msubsup munder mover munderover mfrac msqrt "
    "mroot mstyle mtable mtr mtd mpadded mphantom menclose merror semantics annotation".split()
)
_MATHML_ATTRIBUTES = frozenset(
    "display mathvariant stretchy fence separator movablelimits accent accentunder largeop "
    "symmetric lspace rspace minsize maxsize width height depth linethickness displaystyle "
    "scriptlevel columnalign rowalign columnspacing rowspacing columnlines rowlines frame "
    "notation form".split()
)

# Display maths first, then inline; a backslash-escaped dollar is never a delimiter.
_MATH = re.compile(
    r"(?<!\\)\$\$(?P<d1>.+?)(?<!\\)\$\$"
    r"|\\\[(?P<d2>.+?)\\\]"
    r"|(?<![\\$])\$(?P<i1>[^$\n](?:[^$]|\\\$)*?)(?<!\\)\$(?!\$)"
    r"|\\\((?P<i2>.+?)\\\)",
    re.DOTALL,
)

ET.register_namespace("", _MATHML)
_markdown = mistune.create_markdown(escape=True, plugins=["strikethrough", "table"])
_SAFE_LINK = re.compile(r'href="(?!https?://|mailto:|#)[^"]*"')


def _clean(element: ET.Element) -> ET.Element:
    """A copy of a MathML tree with only allowed elements and attributes; others become text."""
    tag = element.tag.rpartition("}")[2]
    if tag not in _MATHML_TAGS:
        text = ET.Element(f"{{{_MATHML}}}mtext")
        text.text = "".join(element.itertext())
        text.tail = element.tail
        return text
    out = ET.Element(f"{{{_MATHML}}}{tag}")
    for name, value in element.attrib.items():
        if name in _MATHML_ATTRIBUTES and not re.search(r"[<>\"']|script:", value, re.IGNORECASE):
            out.set(name, value)
    out.text, out.tail = element.text, element.tail
    out.extend(_clean(child) for child in element)
    return out


def math_to_html(latex: str, *, display: bool = False) -> str:
    """One formula as sanitised MathML, or as its escaped source if it cannot be converted.

    Examples
    --------
    >>> math_to_html("x_1").startswith("<math")
    True
    >>> "<script" in math_to_html(r"\\text{<script>alert(1)</script>}")
    False
    """
    try:
        tree = ET.fromstring(latex_to_mathml(latex, display="block" if display else "inline"))
        return ET.tostring(_clean(tree), encoding="unicode", short_empty_elements=False)
    except Exception:  # noqa: BLE001 - any LaTeX the converter cannot read is shown as written
        delimiter = "$$" if display else "$"
        return f"<code class='tex'>{html.escape(delimiter + latex + delimiter)}</code>"


def markdown_to_html(source: str) -> str:
    """A markdown cell's source as an HTML fragment: maths as MathML, raw HTML escaped.

    Examples
    --------
    >>> markdown_to_html("**Bold** and $x_i$")[:24]
    '<p><strong>Bold</strong>'
    >>> "<script>" in markdown_to_html("<script>alert(1)</script>")
    False
    """
    nonce = secrets.token_hex(8)
    formulas: list[str] = []

    def cut(match: re.Match) -> str:
        display = match.group("d1") is not None or match.group("d2") is not None
        latex = next(g for g in match.group("d1", "d2", "i1", "i2") if g is not None)
        formulas.append(math_to_html(latex.strip(), display=display))
        return f"MATH{nonce}X{len(formulas) - 1}X"

    text = _MATH.sub(cut, str(source))
    rendered = _SAFE_LINK.sub('href="#"', _markdown(text))
    return re.sub(
        rf"MATH{nonce}X(\d+)X", lambda m: formulas[int(m.group(1))], rendered
    )
