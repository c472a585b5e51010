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
* Every page that shows a notebook's outputs (the book, the feedback, the grader's output capture)
  strips terminal codes with :data:`ANSI` and keeps a figure only if its bytes start with its
  format's :data:`SIGNATURES`.
"""

from __future__ import annotations

import functools
import html
import re
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Callable

import mistune
from latex2mathml.converter import convert as latex_to_mathml

__all__ = [
    "DISPLAY_MAX",
    "display_name",
    "format_number",
    "printable",
    "spreadsheet_text",
    "ANSI",
    "CONTENT_SECURITY_POLICY",
    "FOCUS_CSS",
    "SIGNATURES",
    "accessible_page",
    "keyboard_reachable",
    "markdown_to_html",
    "math_to_html",
]

#: Terminal escape codes (colours, cursor moves, window titles), removed from shown output text.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
#: The figure formats a page may show, by the first bytes their data must start with.
SIGNATURES = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}

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
# What mistune writes for a link or an image (values HTML-escaped, inside double quotes).
_URL_ATTRIBUTE = re.compile(r'<(?P<tag>a|img) (?P<name>href|src)="(?P<url>[^"]*)"')
# A rewritten target must still be harmless: web, mail, in-page, or a relative path (no scheme).
_SAFE_TARGET = re.compile(
    r"(?:https?://|mailto:|#)|(?![/\\]{2})(?![a-z][a-z0-9+.-]*:)[^\s\\]*$", re.IGNORECASE
)


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


@functools.lru_cache(maxsize=8192)
def math_to_html(latex: str, *, display: bool = False) -> str:
    """One formula as sanitised MathML, or as its escaped source if it cannot be converted.

    Cached: a class's feedback pages and a book's chapters repeat the same formulas, and
    converting one takes about half a millisecond.

    Examples
    --------
    >>> math_to_html("x_1").startswith("<math")
    True
    >>> "<script" in math_to_html(r"\\text{<script>alert(1)</script>}")
    False
    """
    # latex2mathml has no ``aligned`` (it writes its ``&`` as bare text, invalid XML), but renders
    # ``align*``, the same rows of right/left-aligned column pairs, as a table.
    converted = re.sub(r"\\(begin|end)\{aligned\}", r"\\\1{align*}", latex)
    try:
        tree = ET.fromstring(latex_to_mathml(converted, display="block" if display else "inline"))
        clean = _clean(tree)
        # the formula as written, for a screen reader without MathML support (attribute-escaped)
        clean.set("alttext", " ".join(latex.split())[:500])
        return ET.tostring(clean, encoding="unicode", short_empty_elements=False)
    except Exception:  # noqa: BLE001 - any LaTeX the converter cannot read is shown as written
        delimiter = "$$" if display else "$"
        return f"<code class='tex'>{html.escape(delimiter + latex + delimiter)}</code>"


def _rewrite_urls(rendered: str, rewrite_url: Callable[[str, str], str | None]) -> str:
    """Every ``<a href>`` and ``<img src>`` target passed through ``rewrite_url(url, tag)``."""

    def one(match: re.Match) -> str:
        tag, name, url = match.group("tag", "name", "url")
        target = html.unescape(url)
        new = target if tag == "a" and target.startswith("#") else rewrite_url(target, tag)
        if new is None or not _SAFE_TARGET.match(new):
            new = "#" if tag == "a" else ""
        return f'<{tag} {name}="{html.escape(new, quote=True)}"'

    return _URL_ATTRIBUTE.sub(one, rendered)


def markdown_to_html(
    source: str, *, rewrite_url: Callable[[str, str], str | None] | None = None
) -> str:
    """A markdown cell's source as an HTML fragment: maths as MathML, raw HTML escaped.

    Parameters
    ----------
    source : str
        The cell's markdown, with LaTeX maths.
    rewrite_url : callable, optional
        ``rewrite_url(url, tag)`` gives the target to use for each link (``tag == "a"``, except
        in-page ``#anchors``) and each image (``tag == "img"``), or ``None`` to drop it (a link
        then points to ``#``, an image gets an empty ``src``). A result with a scheme other than
        http(s) or mailto is dropped too. The default (``None``) keeps http(s), mailto and
        ``#`` links and turns every other link into ``#`` (the feedback pages' behaviour).

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
    if rewrite_url is None:
        rendered = _SAFE_LINK.sub('href="#"', _markdown(text))
    else:
        rendered = _rewrite_urls(_markdown(text), rewrite_url)
    return re.sub(
        rf"MATH{nonce}X(\d+)X", lambda m: formulas[int(m.group(1))], rendered
    )


#: Focus made visible on every page the course renders (WCAG 2.4.7), in one colour with at least
#: 3:1 contrast against white and against the dark theme's background.
FOCUS_CSS = (
    ":focus-visible{outline:3px solid #1a5fb4;outline-offset:2px}"
    "pre[tabindex]:focus-visible,[role=region]:focus-visible{outline-offset:0}"
)
_SCROLL_BOX = re.compile(r"<(pre|div|span)\b((?:(?!>)[^t]|t(?!abindex=))*?)>", re.S)
_BOX_LABELS = {"scroll": "table", "math-block": "formula", "wide": "table"}


def keyboard_reachable(page: str) -> str:
    """``page`` with every box that may scroll sideways reachable and scrollable by keyboard.

    WCAG 2.1.1 (axe's ``scrollable-region-focusable``): a ``<pre>`` (code, outputs, tracebacks) and
    the boxes tables and display formulas scroll in (``class="scroll"``, ``"math-block"``,
    ``"wide"``, and a long inline formula's ``"math-inline"``) get ``tabindex="0"``; the boxes also a ``role="region"`` and a short label, so a
    screen reader names what the keyboard reaches. Anything that already has a ``tabindex`` is
    left alone.
    """

    def reach(match: re.Match) -> str:
        tag, attributes = match.group(1), match.group(2)
        if tag == "pre":
            return f"<pre tabindex=\"0\"{attributes}>"
        found = re.search(r"""class=['"]([^'"]*)['"]""", attributes)
        classes = found.group(1).split() if found else []
        if tag == "span":  # a long inline formula that scrolls on a phone: reachable, no landmark
            return f"<span tabindex=\"0\"{attributes}>" if "math-inline" in classes else match.group(0)
        label = next((_BOX_LABELS[c] for c in (found.group(1).split() if found else []) if c in _BOX_LABELS), None)
        if label is None:
            return match.group(0)
        return f"<div tabindex=\"0\" role=\"region\" aria-label=\"{label}\"{attributes}>"

    return _SCROLL_BOX.sub(reach, page)


def accessible_page(page: str) -> str:
    """A whole page made keyboard-reachable (:func:`keyboard_reachable`) with its content in a
    ``<main>`` landmark (the feedback pages, the class page, the hand-in service's notices)."""
    if "<main" not in page:
        page = page.replace("<body>", "<body><main>", 1).replace("</body>", "</main></body>", 1)
    return keyboard_reachable(page)


# ----------------------------------------------------------------------------------------- names


DISPLAY_MAX = 40  # characters of a name shown on the terminal or in a page's title


#: A spreadsheet takes a cell starting with one of these for a formula (OWASP, CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(s: str) -> str:
    """A text cell of a CSV a spreadsheet opens (grades, an LMS import): never a formula.

    A cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading
    ``'`` (OWASP, "CSV Injection"); a byte that is not UTF-8 (kept by :func:`os.fsdecode`) is
    written ``\\xNN``.
    """
    s = str(s).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "'" + s if s.startswith(FORMULA_START) else s


def format_number(x: float | None) -> str:
    """A number as pages and the terminal show it (``:g``), ``-`` for none."""
    if x is None:
        return "-"
    return f"{x:g}"


_SHORT_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(ch: str) -> str:
    """``ch`` as shown: printable characters as they are, anything else as a Python escape."""
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    if ch.isprintable():
        return ch
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, kept by os.fsdecode
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(s: str) -> str:
    r"""``s`` safe to show on a terminal: nothing in it can move the cursor or change colours.

    Control, format and separator characters (ANSI escapes, newlines, bidi overrides, zero-width
    spaces), undecodable bytes kept by :func:`os.fsdecode` and backslashes are shown as Python
    escapes (``\x1b``, ``\n``, ``\u202e``, ``\xff``, ``\\``); other characters are kept.
    """
    return "".join(map(_escape_char, str(s)))


def display_name(s: str) -> str:
    r"""A student's or an assignment's name as shown to a person: escaped and short.

    Parameters
    ----------
    s : str
        A name, as decoded by :func:`os.fsdecode` (any character but ``/`` and NUL).

    Returns
    -------
    str
        :func:`printable` of ``s``, capped at 40 characters (the last one an ellipsis).

    Examples
    --------
    >>> display_name("ada")
    'ada'
    >>> print(display_name("\x1b[31mred\nline"))
    \x1b[31mred\nline
    >>> display_name("x" * 50)
    'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…'
    """
    pieces = [_escape_char(ch) for ch in str(s)]
    if sum(map(len, pieces)) <= DISPLAY_MAX:
        return "".join(pieces)
    out, length = [], 0
    for piece in pieces:  # whole escapes only, and room for the ellipsis
        if length + len(piece) > DISPLAY_MAX - 1:
            break
        out.append(piece)
        length += len(piece)
    return "".join(out) + "\u2026"
