"""HTML of the course book: page template, style sheet, cells and outputs, landing and API pages.

One job: turn already-stripped content (see :mod:`coursetools.book.build`, which decides what a reader
may see) into static pages that load nothing from the network:

* maths is MathML from :mod:`coursetools.rendering` (rendered natively by the browser: no
  MathJax, no CDN), code is highlighted by Pygments with CSS classes (rules in ``book.css``);
* figures are files beside the pages (``figures/<chapter>/<n>.png``), never ``data:`` URIs;
* every page carries :data:`BOOK_CSP`: no script at all, styles and images only from the site;
* a solution is folded in a ``<details>`` element, closed until the reader opens it (no script);
* the landing page's chapter map comes from each chapter's first cell and the README (its
  commands quoted verbatim), the dplib page from ``coursetools.book.apidoc`` (or a labelled fallback).
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coursetools.rendering import ANSI, SIGNATURES, markdown_to_html

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

#: The pages' Content-Security-Policy: no script, styles and images from the site only.
BOOK_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'"
)
SVG_SIGNATURE = re.compile(
    rb"\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*(<!DOCTYPE[^>]*>\s*)?<svg\b", re.S
)

_CSS = """
:root { --ink: #1d2330; --muted: #5b6475; --rule: #dfe3ea; --accent: #2456a6;
        --code: #f6f8fa; --sol: #f3f8f1; --solrule: #9cc49a; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); font: 16px/1.6 system-ui, -apple-system, "Segoe UI",
       Roboto, "Helvetica Neue", Arial, sans-serif; }
a { color: var(--accent); }
.sidebar { position: fixed; top: 0; left: 0; bottom: 0; width: 17rem; overflow-y: auto;
           padding: 1.2rem 1rem; border-right: 1px solid var(--rule); background: #fafbfc;
           font-size: 0.92rem; overflow-wrap: anywhere; }
.sidebar .book-title { display: block; font-weight: 700; margin-bottom: 1rem;
                       text-decoration: none; color: var(--ink); }
.sidebar ol, .sidebar ul { list-style: none; margin: 0; padding: 0; }
.sidebar li { margin: 0.15rem 0; }
.sidebar li a { text-decoration: none; display: block; padding: 0.1rem 0.4rem;
                border-radius: 4px; }
.sidebar li a[aria-current] { background: #e6edf8; font-weight: 600; }
.sidebar .toc { margin: 0.2rem 0 0.5rem 0.8rem; font-size: 0.85rem; }
.sidebar .toc a { color: var(--muted); }
.sidebar h2 { font-size: 0.8rem; text-transform: uppercase; letter-spacing: 0.05em;
              color: var(--muted); margin: 1.2rem 0 0.3rem; }
main { margin-left: 17rem; padding: 1.5rem 2.5rem 4rem; max-width: 62rem; }
@media (max-width: 50rem) {
  .sidebar { position: static; width: auto; border-right: 0; border-bottom: 1px solid var(--rule); }
  main { margin-left: 0; padding: 1rem; }
}
h1 { font-size: 1.9rem; line-height: 1.25; }
h2 { margin-top: 2.2rem; border-bottom: 1px solid var(--rule); padding-bottom: 0.2rem; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { border: 1px solid var(--rule); padding: 0.3rem 0.6rem; vertical-align: top; }
code { background: var(--code); padding: 0.05rem 0.25rem; border-radius: 3px; font-size: 0.9em; }
pre, .highlight pre { background: var(--code); padding: 0.7rem 0.9rem; overflow-x: auto;
                      border-radius: 4px; font-size: 0.86rem; line-height: 1.45; margin: 0; }
pre code { background: none; padding: 0; }
.cell { margin: 1rem 0; }
.cell.code .highlight, .cell.answer .highlight { border-left: 3px solid #c9d3e3; }
.output { margin-top: 0.4rem; }
.output pre { background: #fff; border: 1px solid var(--rule); }
.output pre.stderr { background: #fff8e6; }
.output pre.error { background: #fdecec; border-color: #e5a3a3; }
.output img { max-width: 100%; height: auto; display: block; }
.label { font-size: 0.8rem; font-weight: 600; color: var(--muted); text-transform: uppercase;
         letter-spacing: 0.04em; margin-bottom: 0.2rem; }
details.solution { margin-top: 0.5rem; border: 1px solid var(--solrule); border-radius: 4px;
                   background: var(--sol); padding: 0.3rem 0.8rem; }
details.solution > summary { cursor: pointer; font-weight: 600; color: #2c6b2a; }
details.solution[open] > summary { margin-bottom: 0.5rem; }
.written { border: 1px dashed #b7c0cf; border-radius: 4px; padding: 0.5rem 0.8rem; }
.note { background: #eef3fb; border-left: 4px solid var(--accent); padding: 0.6rem 0.9rem;
        margin: 1rem 0; font-size: 0.95rem; }
.fallback { background: #fff4e0; border-left: 4px solid #d08a00; padding: 0.6rem 0.9rem; }
.pager { display: flex; justify-content: space-between; margin-top: 3rem; padding-top: 1rem;
         border-top: 1px solid var(--rule); }
math[display="block"] { display: block math; margin: 0.8rem 0; overflow-x: auto; }
code.tex { color: #8a1f11; }
mtd[columnalign="right"] { text-align: right; }
mtd[columnalign="left"] { text-align: left; }
.chapters { list-style: none; padding-left: 0; }
.chapters > li { margin-bottom: 1rem; }
.chapters .teaches { color: var(--muted); margin: 0.1rem 0; }
.chapters details summary { cursor: pointer; color: var(--accent); font-size: 0.92rem; }
"""


def stylesheet() -> str:
    """The whole ``static/book.css``: the layout above and Pygments' highlighting rules."""
    from pygments.formatters import HtmlFormatter

    try:
        from coursetools.book.apidoc import API_CSS
    except ModuleNotFoundError:
        API_CSS = ""
    return (
        _CSS.lstrip()
        + API_CSS.lstrip()
        + HtmlFormatter(style="default").get_style_defs(".highlight")
        + "\n"
    )


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
    """One display_data/execute_result: a figure file, rendered markdown/LaTeX, or text."""
    alt = f"Figure {len(figures.written) + 1} of {figures.chapter}"
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


def outputs_html(outputs: Sequence[dict], figures: FigureWriter) -> str:
    """A code cell's stored outputs as HTML (streams merged, tracebacks without ANSI codes)."""
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
        "<nav class='sidebar' aria-label='Book'>"
        f"<a class='book-title' href='index.html'>{esc(book_title)}</a>"
        f"<h2>Chapters</h2><ol>{''.join(item(c) for c in chapters)}</ol>"
        f"<h2>Reference</h2><ul>{''.join(item(e) for e in extras)}</ul>"
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
) -> str:
    """A whole page: CSP, the local style sheet, the sidebar, the content and prev/next links."""
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
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f'<meta http-equiv="Content-Security-Policy" content="{BOOK_CSP}">\n'
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        f"<title>{esc(title)} | {esc(book_title)}</title>\n"
        "<link rel='stylesheet' href='static/book.css'>\n</head>\n<body>\n"
        + _sidebar(book_title, chapters, extras, current, toc)
        + f"\n<main>\n{body}\n{pager}\n</main>\n</body>\n</html>\n"
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
