"""HTML of the course book: page template, style sheet, cells and outputs, landing and API pages.

One job: turn already-stripped content (see :mod:`coursetools.book.build`, which decides what a reader
may see) into static pages that load nothing from the network:

* maths is MathML from :mod:`coursetools.rendering` (rendered natively by the browser: no
  MathJax, no CDN), code is highlighted by Pygments with CSS classes (rules in ``book.css``);
* figures are files beside the pages (``figures/<chapter>/<n>.png``), never ``data:`` URIs;
* every page carries :data:`BOOK_CSP`: scripts, styles and images only from the site's own files
  (``static/book.js``, ``static/book.css``, the search index), no inline script, no network;
* the chapter comes first in the document, the sidebar after it (a phone shows it behind a Menu
  button); tables and display maths scroll in their own box (:func:`scrollable`); dark mode and
  the print style are in ``assets/book.css``; copy buttons and search are ``assets/book.js``;
* a solution is folded in a ``<details>`` element, closed until the reader opens it (no script;
  printed open);
* the landing page's chapter map comes from each chapter's first cell and the README (its
  commands quoted verbatim), the dplib page from ``coursetools.book.apidoc`` (or a labelled fallback).
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coursetools.cells import figure_descriptions
from coursetools.rendering import ANSI, FOCUS_CSS, SIGNATURES, keyboard_reachable, markdown_to_html

__all__ = [
    "BOOK_CSP",
    "ChapterSummary",
    "api_page",
    "book_title",
    "landing_body",
    "readme_commands",
    "readme_curriculum",
    "NavEntry",
    "FigureWriter",
    "add_heading_ids",
    "highlight",
    "outputs_html",
    "page_html",
    "stylesheet",
]

#: The pages' Content-Security-Policy: scripts, styles and images from the site's own files only
#: (no inline script, no network); forms never submit (the search box is handled by book.js).
BOOK_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'"
)
SVG_SIGNATURE = re.compile(
    rb"\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*(<!DOCTYPE[^>]*>\s*)?<svg\b", re.S
)

ASSETS = Path(__file__).resolve().parent / "assets"
#: The files under ``static/`` every page loads (copied from ``assets/``).
STATIC_FILES = ("book.css", "book.js")
#: Pygments' style for code in dark mode (the light one is ``default``).
DARK_CODE_STYLE = "monokai"


def stylesheet() -> str:
    """The whole ``static/book.css``: ``assets/book.css`` and Pygments' rules, light and dark."""
    from pygments.formatters import HtmlFormatter

    light = HtmlFormatter(style="default").get_style_defs(".highlight")
    dark = HtmlFormatter(style=DARK_CODE_STYLE).get_style_defs(".highlight")
    return (
        (ASSETS / "book.css").read_text(encoding="utf-8")
        + "\n/* Keyboard focus, on every page (coursetools.rendering.FOCUS_CSS) */\n"
        + FOCUS_CSS
        + "\n@media (prefers-color-scheme: dark) { :focus-visible { outline-color: #8ab4f8; } }\n"
        + "\n/* Code highlighting (Pygments) */\n"
        + light
        + "\n.highlight { background: var(--code); }\n.highlight pre { background: none; }\n"
        + "@media (prefers-color-scheme: dark) {\n"
        + dark
        + "\n.highlight { background: var(--code); }\n}\n"
        + "@media print {\n"
        + light
        + "\n}\n"
    )


def static_files() -> dict[str, str]:
    """``{file name: text}`` of what the site serves under ``static/`` (besides the index)."""
    return {"book.css": stylesheet(), "book.js": (ASSETS / "book.js").read_text(encoding="utf-8")}


_TABLE = re.compile(r"<table\b.*?</table>", re.S)
_MATH = re.compile(r"<math\b([^>]*)>.*?</math>", re.S)
_DISPLAY_BLOCK = re.compile(r"\bdisplay=[\"']block[\"']")
_MATH_TOKEN = re.compile(r"<m[ion]\b")
#: An inline formula with more tokens than this may be wider than a phone: it gets a box that
#: scrolls on narrow screens (the style sheet leaves the box inline elsewhere).
LONG_INLINE_MATH = 8


def scrollable(fragment: str) -> str:
    """Tables, display formulas and long inline formulas in boxes that scroll sideways.

    On a phone the page itself never becomes wider than the screen: what is wider scrolls in its
    own box (``.scroll``, ``.math-block``; ``.math-inline`` only on narrow screens).
    """
    fragment = _TABLE.sub(lambda m: f"<div class='scroll'>{m.group(0)}</div>", fragment)

    def box(match: re.Match) -> str:
        if _DISPLAY_BLOCK.search(match.group(1)):
            return f"<div class='math-block'>{match.group(0)}</div>"
        if len(_MATH_TOKEN.findall(match.group(0))) > LONG_INLINE_MATH:
            return f"<span class='math-inline'>{match.group(0)}</span>"
        return match.group(0)

    return _MATH.sub(box, fragment)


def highlight(code: str) -> str:
    """Python (IPython: magics allowed) source as highlighted HTML, classes only (no styles)."""
    from pygments import highlight as pygments_highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
    from pygments.util import ClassNotFound

    try:
        from IPython.lib.lexers import IPython3Lexer

        lexer = IPython3Lexer()
    except (ImportError, ClassNotFound):  # pragma: no cover - IPython ships with the kernel
        lexer = PythonLexer()
    return pygments_highlight(code, lexer, HtmlFormatter(cssclass="highlight"))


# ------------------------------------------------------------------------------------ headings


def _slug(text: str, taken: set[str]) -> str:
    """JupyterLab's anchor for a heading (spaces become ``-``), made unique on the page."""
    base = re.sub(r"\s+", "-", text.strip()) or "section"
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def add_heading_ids(fragment: str, taken: set[str], toc: list[tuple[int, str, str]]) -> str:
    """``fragment`` with an ``id`` on every ``<h1>``..``<h4>``; appends (level, id, text) to toc."""

    def one(match: re.Match) -> str:
        level, inner = int(match.group(1)), match.group(2)
        text = html.unescape(re.sub(r"<[^>]+>", "", inner)).strip()
        anchor = _slug(text, taken)
        toc.append((level, anchor, text))
        return f'<h{level} id="{html.escape(anchor, quote=True)}">{inner}</h{level}>'

    return re.sub(r"<h([1-4])>(.*?)</h\1>", one, fragment, flags=re.S)


# ------------------------------------------------------------------------------------- outputs


@dataclass
class FigureWriter:
    """Writes a chapter's figures as ``<site>/figures/<chapter>/<n>.<ext>``; gives their URLs."""

    site: Path
    chapter: str
    written: list[Path] = field(default_factory=list)
    described: list[str] = field(default_factory=list)  # the current cell's figure descriptions
    undescribed: list[str] = field(default_factory=list)  # figures drawn without one (a lint error)

    def write(self, data: bytes, ext: str) -> str:
        folder = self.site / "figures" / self.chapter
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{len(self.written) + 1}.{ext}"
        path.write_bytes(data)
        self.written.append(path)
        return path.relative_to(self.site).as_posix()


def _text(value: object) -> str:
    if isinstance(value, list):
        return "".join(x for x in value if isinstance(x, str))
    return value if isinstance(value, str) else ""


def _decoded(value: object, mime: str) -> bytes | None:
    try:
        raw = base64.b64decode("".join(_text(value).split()), validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if raw.startswith(SIGNATURES[mime]) else None


def _image_tag(src: str, alt: str, meta: object) -> str:
    size = ""
    if isinstance(meta, dict):
        for dim in ("width", "height"):
            if isinstance(meta.get(dim), (int, float)) and meta[dim] > 0:
                size += f' {dim}="{int(meta[dim])}"'
    return f'<img src="{html.escape(src)}" alt="{html.escape(alt)}"{size}>'


def _rich_html(data: dict, metadata: dict, figures: FigureWriter) -> str:
    """One display_data/execute_result: a figure file, rendered markdown/LaTeX, or text.

    A figure's alt text is the author's description (the cell's ``# Figure:`` lines,
    :func:`coursetools.cells.figure_descriptions`, in order); a figure without one is recorded in
    ``figures.undescribed`` and gets a placeholder.
    """
    if any(m in data for m in ("image/png", "image/jpeg", "image/svg+xml")):  # a figure: its description
        if figures.described:
            alt = figures.described.pop(0)
        else:
            alt = f"Figure {len(figures.written) + 1} of {figures.chapter} (no description)"
            figures.undescribed.append(f"{figures.chapter}: figure {len(figures.written) + 1}")
    for mime, ext in (("image/png", "png"), ("image/jpeg", "jpg")):
        if mime in data:
            raw = _decoded(data[mime], mime)
            if raw is not None:
                return _image_tag(figures.write(raw, ext), alt, metadata.get(mime))
    if "image/svg+xml" in data:
        raw = _text(data["image/svg+xml"]).encode("utf-8")
        if SVG_SIGNATURE.match(raw):  # loaded through <img>: an SVG's scripts never run there
            return _image_tag(figures.write(raw, "svg"), alt, metadata.get("image/svg+xml"))
    if "text/markdown" in data:
        return f"<div class='markdown'>{markdown_to_html(_text(data['text/markdown']))}</div>"
    if "text/latex" in data:
        return f"<div class='markdown'>{markdown_to_html(_text(data['text/latex']))}</div>"
    # text/html, JavaScript and widgets are never embedded: their plain-text form stands in.
    plain = _text(data.get("text/plain"))
    return f"<pre>{html.escape(plain)}</pre>" if plain else ""


def outputs_html(outputs: Sequence[dict], figures: FigureWriter, source: str = "") -> str:
    """A code cell's stored outputs as HTML (streams merged, tracebacks without ANSI codes);
    ``source`` is the cell's code, whose ``# Figure:`` lines describe its figures."""
    figures.described = figure_descriptions(source)
    parts: list[str] = []
    stream_name, stream_text = None, ""

    def flush() -> None:
        nonlocal stream_name, stream_text
        if stream_text:
            parts.append(
                f"<pre class='{stream_name}'>{html.escape(ANSI.sub('', stream_text))}</pre>"
            )
        stream_name, stream_text = None, ""

    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            name = "stderr" if output.get("name") == "stderr" else "stdout"
            if name != stream_name:
                flush()
                stream_name = name
            stream_text += _text(output.get("text"))
            continue
        flush()
        if kind == "error":
            trace = "\n".join(_text(line) for line in output.get("traceback") or [])
            trace = trace or f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
            parts.append(f"<pre class='error'>{html.escape(ANSI.sub('', trace))}</pre>")
        elif kind in ("display_data", "execute_result"):
            data, meta = output.get("data") or {}, output.get("metadata") or {}
            if isinstance(data, dict):
                parts.append(_rich_html(data, meta if isinstance(meta, dict) else {}, figures))
    flush()
    body = "".join(p for p in parts if p)
    return f"<div class='output'>{body}</div>" if body else ""


# --------------------------------------------------------------------------------------- pages


@dataclass(frozen=True)
class NavEntry:
    """One page in the sidebar: its file name (``02_x.html``) and label."""

    href: str
    label: str


def _sidebar(
    book_title: str,
    chapters: Sequence[NavEntry],
    extras: Sequence[NavEntry],
    current: str,
    toc: Iterable[tuple[int, str, str]],
) -> str:
    esc = html.escape
    here_toc = "".join(
        f"<li><a href='#{esc(anchor)}'>{esc(text)}</a></li>"
        for level, anchor, text in toc
        if level == 2
    )

    def item(entry: NavEntry) -> str:
        mark = " aria-current='page'" if entry.href == current else ""
        sub = f"<ul class='toc'>{here_toc}</ul>" if entry.href == current and here_toc else ""
        return f"<li><a href='{esc(entry.href)}'{mark}>{esc(entry.label)}</a>{sub}</li>"

    return (
        "<nav class='sidebar' id='book-nav' aria-label='Book'>"
        f"<a class='book-title' href='index.html'>{esc(book_title)}</a>"
        "<form class='search' role='search'>"
        "<input type='search' name='q' placeholder='Search the book' aria-label='Search the book'>"
        "</form>"
        f"<h2>Chapters</h2><ol>{''.join(item(c) for c in chapters)}</ol>"
        f"<h2>Reference</h2><ul>{''.join(item(e) for e in extras)}</ul>"
        "<label class='print-switch'><input type='checkbox' id='print-solutions' checked> "
        "Print solutions (folded answers printed open)</label>"
        "</nav>"
    )


def page_html(
    *,
    title: str,
    body: str,
    book_title: str,
    chapters: Sequence[NavEntry],
    extras: Sequence[NavEntry],
    current: str,
    toc: Iterable[tuple[int, str, str]] = (),
    previous: NavEntry | None = None,
    following: NavEntry | None = None,
    scripts: Sequence[str] = (),
) -> str:
    """A whole page: CSP, the local style sheet and script, the content, then the sidebar.

    The content comes before the sidebar in the document, so that a phone (and a screen reader)
    starts with the chapter; ``scripts`` are more of the site's own script files (the search
    page's index), loaded before ``static/book.js``.
    """
    esc = html.escape
    pager = ""
    if previous or following:
        left = (
            f"<a rel='prev' href='{esc(previous.href)}'>← {esc(previous.label)}</a>"
            if previous
            else "<span></span>"
        )
        right = (
            f"<a rel='next' href='{esc(following.href)}'>{esc(following.label)} →</a>"
            if following
            else "<span></span>"
        )
        pager = f"<nav class='pager' aria-label='Previous and next'>{left}{right}</nav>"
    head_scripts = "".join(
        f"<script src='{esc(src)}'></script>\n" for src in (*scripts, "static/book.js")
    )
    topbar = (
        "<header class='topbar'>"
        f"<a class='book-title' href='index.html'>{esc(book_title)}</a>"
        "<a class='search-link' href='search.html'>Search</a>"
        "<button type='button' class='menu' aria-controls='book-nav' aria-expanded='false'>"
        "Menu</button></header>\n"
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f'<meta http-equiv="Content-Security-Policy" content="{BOOK_CSP}">\n'
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        "<meta name='color-scheme' content='light dark'>\n"
        f"<title>{esc(title)} | {esc(book_title)}</title>\n"
        "<link rel='stylesheet' href='static/book.css'>\n"
        + head_scripts
        + "</head>\n<body>\n"
        + "<a class='skip' href='#content'>Skip to the content</a>\n"  # first stop of the keyboard
        + topbar
        + f"<main id='content'>\n{keyboard_reachable(scrollable(body))}\n{pager}\n</main>\n"
        + _sidebar(book_title, chapters, extras, current, toc)
        + "\n</body>\n</html>\n"
    )


def code_cell_html(code: str, outputs: str, *, kind: str, label: str = "") -> str:
    """A code cell (``kind``: ``code`` or ``tests``) with its outputs."""
    head = f"<div class='label'>{html.escape(label)}</div>" if label else ""
    return f"<div class='cell {kind}'>{head}{highlight(code)}{outputs}</div>"


def answer_cell_html(starter: str, solution: str, outputs: str) -> str:
    """An exercise: its starter code, then the solution (and its outputs) folded, closed."""
    return (
        "<div class='cell answer'><div class='label'>Exercise: your code</div>"
        f"{highlight(starter)}"
        "<details class='solution'><summary>Show solution</summary>"
        f"{highlight(solution)}{outputs}</details></div>"
    )


def written_cell_html(prompt_html: str, model_html: str) -> str:
    """A written question's answer box, with a model answer folded if there is one."""
    prompt = prompt_html or "<p><em>Write your answer in the notebook.</em></p>"
    folded = (
        f"<details class='solution'><summary>Show a model answer</summary>{model_html}</details>"
        if model_html
        else ""
    )
    return (
        f"<div class='cell written'><div class='label'>Written answer</div>{prompt}{folded}</div>"
    )


def markdown_cell_html(source: str, rewrite_url: Callable[[str, str], str | None]) -> str:
    """A markdown cell (maths as MathML, links rewritten to the book's pages)."""
    return f"<div class='cell markdown'>{markdown_to_html(source, rewrite_url=rewrite_url)}</div>"


# --------------------------------------------------------------------------------- other pages


def readme_commands(readme: str) -> str:
    """The README's first shell block (its two commands), verbatim."""
    match = re.search(r"```(?:bash|sh|shell|console)\n(.*?)```", readme, re.S)
    return match.group(1).rstrip() if match else "make course\nmake test"


def readme_curriculum(readme: str) -> dict[str, str]:
    """``{"02": "what it teaches", ...}`` from the README's curriculum table."""
    rows = re.findall(r"^\|\s*(\d\d)\s*\|[^|]*\|\s*(.+?)\s*\|\s*$", readme, re.M)
    return dict(rows)


def book_title(readme: str) -> str:
    """The README's first heading: the course's name."""
    match = re.search(r"^# (.+)$", readme, re.M)
    return match.group(1).strip() if match else "Differential privacy"


def _inline(markdown: str) -> str:
    """One line of markdown as inline HTML (the paragraph around it removed)."""
    return re.sub(r"^<p>|</p>\s*$", "", markdown_to_html(markdown).strip())


@dataclass(frozen=True)
class ChapterSummary:
    """A chapter on the landing page: its page, title, learning goals (markdown)."""

    name: str
    title: str
    goals: Sequence[str]


def landing_body(chapters: Sequence[ChapterSummary], readme: str, guides: dict[str, str]) -> str:
    """The landing page: who the course is for, the chapter map, running it, grading it.

    ``guides`` maps each instructor guide's page to its label; the one-line summary of a chapter
    is the README's curriculum row with the chapter's number, when there is one.
    """
    esc = html.escape
    teaches = readme_curriculum(readme)
    items = []
    for chapter in chapters:
        goals = chapter.goals
        goal_items = "".join(f"<li>{_inline(g)}</li>" for g in goals)
        line = teaches.get(chapter.name[:2], "")
        items.append(
            f"<li><a href='{esc(chapter.name)}.html'>"
            f"<strong>{esc(chapter.title)}</strong></a>"
            + (f"<p class='teaches'>{esc(line)}</p>" if line else "")
            + (
                f"<details><summary>Learning goals ({len(goals)})</summary><ol>{goal_items}</ol>"
                "</details>"
                if goals
                else ""
            )
            + "</li>"
        )
    guides = " and ".join(
        f"<a href='{esc(href)}'>{esc(label)}</a>" for href, label in guides.items()
    )
    return f"""
<h1>{esc(book_title(readme))}</h1>
<p>This is the whole course as a book. It starts with anonymization that fails in practice and
ends with training a neural network under differential privacy. Each chapter is one of the
course's Jupyter notebooks, executed from top to bottom when this site was built, so every figure
and every number on these pages is what the code printed. Nothing here is fetched from the
network: the maths is rendered by the browser itself.</p>

<h2 id="who-it-is-for">Who it is for</h2>
<ul>
<li><strong>Self-paced readers</strong> who know some Python and numpy and the basics of
probability (expectation, variance, Bayes' rule), and no privacy theory yet. Read the chapters in
order; each exercise shows its starter code, and its solution stays folded until you ask for it,
so you can try first.</li>
<li><strong>Students in a class</strong> work in the same notebooks in JupyterLab: they fill in
the exercises, check themselves with the visible tests, and hand them in to be graded.</li>
<li><strong>Instructors</strong> teach from the notebooks, edit one source of truth, and grade a
whole class automatically (see below).</li>
</ul>

<h2 id="chapters">The chapters</h2>
<ol class="chapters">{"".join(items)}</ol>
<p>All chapters use one small reference library, <code>dplib</code>; its public functions are
documented on the <a href="api.html">dplib API</a> page.</p>

<h2 id="run-it-yourself">Run the notebooks yourself</h2>
<p>On a machine with only <code>python3</code> (3.11 or newer) and <code>make</code>, in a clone
of the repository, the README's two commands build everything (the first run installs the
packages into <code>.venv</code>):</p>
<pre><code>{esc(readme_commands(readme))}</code></pre>
<p>Then <code>make lab</code> opens JupyterLab: the exercises are in <code>notebooks/</code>, one
folder per chapter. Each chapter runs in well under a minute on a laptop and downloads nothing.
<code>make book</code> rebuilds this site.</p>

<h2 id="teaching-with-it">Teaching with it: release and grading</h2>
<p>Instructors edit only <code>solutions/</code>: the prose, the solutions and the tests, visible
and hidden. <code>make release</code> regenerates the student notebooks in <code>notebooks/</code>
from it, and <code>make grade</code> grades a folder of hand-ins in parallel: each submission runs
in a sandbox, the hidden tests run in a separate trusted process, scores go to a CSV file and to
nbgrader's gradebook, and every student gets a feedback page. Written answers are graded by hand
in nbgrader's formgrader (<code>make lab</code>). The guides: {guides}.</p>
"""


def api_page() -> tuple[str, str, list[tuple[int, str, str]]]:
    """(title, body HTML, toc) of the dplib API page: ``coursetools.book.apidoc`` or a fallback."""
    try:
        from coursetools.book.apidoc import render_api
    except ModuleNotFoundError as exc:  # only its absence: a broken apidoc fails the build
        if exc.name != "coursetools.book.apidoc":
            raise
        return _api_fallback()
    page = render_api("dplib")
    toc = [(2, anchor, label) for anchor, label in page.toc]
    body = page.body_html
    if "<h1" not in body:
        body = f"<h1>{html.escape(page.title)}</h1>\n{body}"
    return page.title, body, toc


def _api_fallback() -> tuple[str, str, list[tuple[int, str, str]]]:
    """Every name in ``dplib.__all__`` with its signature and docstring, as plain text."""
    import inspect

    import dplib

    esc = html.escape
    parts = [
        "<h1>dplib API</h1>",
        "<p class='fallback'><strong>Fallback page.</strong> The generated API reference "
        "(<code>coursetools.book.apidoc</code>) is not available in this checkout, so this page lists "
        "each public name with its signature and its docstring as plain text, the docstring "
        "<code>help()</code> shows.</p>",
    ]
    toc = []
    for name in sorted(getattr(dplib, "__all__", [])):
        obj = getattr(dplib, name, None)
        try:
            signature = str(inspect.signature(obj)) if callable(obj) else ""
        except (TypeError, ValueError):
            signature = ""
        doc = inspect.getdoc(obj) or ""
        anchor = f"dplib.{name}"
        toc.append((2, anchor, name))
        parts.append(
            f"<h2 id='{esc(anchor)}'><code>{esc(name)}</code></h2>"
            f"<pre>dplib.{esc(name)}{esc(signature)}\n\n{esc(doc)}</pre>"
        )
    return "dplib API", "\n".join(parts), toc


# ----------------------------------------------------------------- downloads, search, API pages


def download_html(name: str, files: Sequence[str]) -> str:
    """The chapter's download box: its release notebook (and data), and how to open it."""
    esc = html.escape
    if not files:
        return ""
    notebook = files[0]
    others = [f for f in files[1:] if not f.endswith(".zip")]
    archive = [f for f in files[1:] if f.endswith(".zip")]
    extra = ""
    if others:
        data = ", ".join(
            f"<a href='{esc(f)}' download>{esc(f.rpartition('/')[2])}</a>" for f in others
        )
        extra = f" Its data files: {data}"
        if archive:
            extra += f"; or everything in one <a href='{esc(archive[0])}' download>zip file</a>"
        extra += "."
    return (
        "<div class='download'>"
        f"<p><a href='{esc(notebook)}' download><strong>Download this chapter's notebook</strong>"
        f"</a> (<code>{esc(name)}.ipynb</code>: the student release, exercises to fill in, no "
        f"solutions).{extra}</p>"
        "<p class='how'>To run it: save it in a folder, then <code>jupyter lab "
        f"{esc(name)}.ipynb</code> there (with the course's <code>dplib</code> installed: "
        "<code>pip install -e .</code> in a clone), or <code>make student-lab</code> in a clone "
        "of the course.</p></div>"
    )


def search_body() -> str:
    """The search page's content: a box, a status line and the results (filled by book.js)."""
    return (
        "<h1>Search</h1>"
        "<form class='search search-page' role='search'>"
        "<input id='search-page-input' type='search' name='q' placeholder='a word or a phrase' "
        "aria-label='Search the book' autocomplete='off'></form>"
        "<p id='search-status' class='search-status'>Search runs in your browser from an index "
        "built with the book (nothing is sent anywhere); it needs JavaScript.</p>"
        "<ol id='search-results' class='search-results'></ol>"
    )


@dataclass(frozen=True)
class ApiPageOut:
    """One page of the API reference, ready for :func:`page_html`."""

    href: str
    title: str
    body: str
    toc: list[tuple[int, str, str]]


def _apidoc():
    try:
        from coursetools.book import apidoc
    except ModuleNotFoundError as exc:  # only its absence: a broken apidoc fails the build
        if exc.name != "coursetools.book.apidoc":
            raise
        return None
    return apidoc


@functools.lru_cache(maxsize=2)
def _plain_api_pages(package: str):
    """The reference's pages without chapter links (for its names and its modules' order)."""
    return _apidoc().render_api_pages(package)


def api_names() -> set[str]:
    """Every public name the API reference documents (short names: ``laplace_mechanism``)."""
    import dplib

    names = set(getattr(dplib, "__all__", []))
    apidoc = _apidoc()
    if apidoc is not None:
        _, index = _plain_api_pages("dplib")
        names |= {dotted.rpartition(".")[2] for dotted in index.names}
    return names


def api_modules() -> list[tuple[str, str]]:
    """``[(module, page)]`` of the API reference, in course order when pages are generated."""
    apidoc = _apidoc()
    if apidoc is None:
        return []
    pages, _ = _plain_api_pages("dplib")
    return [(p.module, p.href) for p in pages]


def api_pages(
    taught: dict[str, tuple[str, str]], also: dict[str, list[tuple[str, str]]] | None = None
) -> list[ApiPageOut]:
    """The API reference: the index ``api.html`` and a page per module (or the fallback page).

    ``taught``: ``{name: (link, chapter)}`` the chapter that teaches each name; ``also``: the other
    chapters that use it.
    """
    apidoc = _apidoc()
    if apidoc is None:
        title, body, toc = _api_fallback()
        return [ApiPageOut("api.html", title, body, toc)]
    pages, index = apidoc.render_api_pages("dplib", taught, also)
    out = [
        ApiPageOut(
            index.href, index.title, index.body_html, [(2, a, label) for a, label in index.toc]
        )
    ]
    for page in pages:
        out.append(
            ApiPageOut(
                page.href, page.title, page.body_html, [(2, a, label) for a, label in page.toc]
            )
        )
    return out
