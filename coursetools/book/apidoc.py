"""dplib's public API as one HTML page of the book, generated from the docstrings.

One job: the text ``help(dplib.x)`` shows (:func:`inspect.getdoc`) for every name a reader imports,
laid out as a reference page, so the book and ``help()`` never disagree.

* What is documented: every name in ``package.__all__``, grouped by the module that defines it (its
  ``__module__``), and every public subpackage with its own ``__all__`` whose names are not
  re-exported (``dplib.testing``, ``dplib.attacks``, ...). Classes show their constructor and
  their public methods and properties.
* Docstrings are numpy style (numpydoc's sections). Parameters, Returns, Raises and the like become
  definition lists; Examples become highlighted code (Pygments); Notes and References are prose.
  RST inline markup: double backticks as code, ``*emphasis*``, ``**strong**``, a single-backticked
  name as a link when the page documents it, ``:math:`...``` and ``.. math::`` blocks as MathML
  (:func:`coursetools.rendering.math_to_html`: offline, sanitised). Every other character is
  escaped: a docstring is text, never markup.
"""

from __future__ import annotations

import html
import importlib
import inspect
import pkgutil
import re
import textwrap
import types
from dataclasses import dataclass

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonConsoleLexer

from coursetools.rendering import math_to_html

__all__ = ["ApiPage", "ApiModulePage", "render_api", "render_api_pages", "summary", "API_CSS"]

SECTIONS = (
    "Parameters", "Attributes", "Returns", "Yields", "Receives", "Other Parameters", "Raises",
    "Warns", "Warnings", "See Also", "Notes", "References", "Examples", "Methods",
)  # fmt: skip
LIST_SECTIONS = {"Parameters", "Attributes", "Returns", "Yields", "Receives", "Other Parameters",
                 "Raises", "Warns", "Methods"}  # fmt: skip
_FORMATTER = HtmlFormatter(cssclass="highlight", nowrap=False)
API_CSS = """
.api-group{margin-top:2.5rem}.api-item{border-top:1px solid #ddd;padding-top:.8rem;margin-top:1.6rem}
.api-sig{font-family:ui-monospace,monospace;background:#f3f5f8;padding:.4rem .6rem;border-radius:4px;
 overflow-x:auto;white-space:pre-wrap}
.api-sig .api-name{font-weight:700}.api-kind{color:#777;font-size:.85em;margin-right:.4rem}
.api-section{font-weight:600;margin:.8rem 0 .3rem}dl.api-params dt{font-family:ui-monospace,monospace}
dl.api-params dd{margin:0 0 .5rem 1.4rem}.api-method{margin-left:1.4rem}
"""


@dataclass(frozen=True)
class ApiPage:
    """The API page: its title, an HTML fragment, and (anchor, label) pairs for a sidebar."""

    title: str
    body_html: str
    toc: list[tuple[str, str]]


# ------------------------------------------------------------------------------- inline markup

_INLINE = re.compile(
    r":math:`(?P<math>[^`]+)`"
    r"|``(?P<code>.+?)``"
    r"|:(?:func|class|meth|mod|attr|data|obj):`~?(?P<role>[^`]+)`"
    r"|`(?P<ref>[^`]+)`_?"
    # RST: emphasis starts after a space or punctuation and ends before one (2**40 is no markup)
    r"|(?<![\w*])\*\*(?=\S)(?P<strong>[^*]+?)(?<=\S)\*\*(?![\w*])"
    r"|(?<![\w*])\*(?=[^\s*])(?P<em>[^*]+?)(?<=\S)\*(?![\w*])"
)


def _inline(text: str, anchors: dict[str, str]) -> str:
    """One paragraph's RST inline markup as HTML; everything else escaped."""
    out, last = [], 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[last : match.start()]))
        last = match.end()
        if match.group("math") is not None:
            out.append(math_to_html(match.group("math")))
        elif match.group("code") is not None:
            out.append(f"<code>{html.escape(match.group('code'))}</code>")
        elif match.group("strong") is not None:
            out.append(f"<strong>{html.escape(match.group('strong'))}</strong>")
        elif match.group("em") is not None:
            out.append(f"<em>{html.escape(match.group('em'))}</em>")
        else:
            out.append(_reference(match.group("role") or match.group("ref"), anchors))
    out.append(html.escape(text[last:]))
    return "".join(out)


def _reference(name: str, anchors: dict[str, str]) -> str:
    """A name in single backticks: a link when the page documents it, else code."""
    name = name.strip()
    target = name.rstrip("()").lstrip("~")
    anchor = anchors.get(target) or anchors.get(target.rpartition(".")[2])
    if anchor:
        return f"<a href='{html.escape(anchor, quote=True)}'><code>{html.escape(name)}</code></a>"
    return f"<code>{html.escape(name)}</code>"


# ------------------------------------------------------------------------------------ blocks


def _split_sections(doc: str) -> list[tuple[str, str]]:
    """``[(section or "", text)]``: numpydoc headings are a known name underlined by dashes."""
    lines = doc.splitlines()
    parts, name, current = [], "", []
    i = 0
    while i < len(lines):
        line = lines[i]
        if (
            line.strip() in SECTIONS
            and i + 1 < len(lines)
            and re.fullmatch(r"\s*-{3,}\s*", lines[i + 1])
        ):
            parts.append((name, "\n".join(current)))
            name, current = line.strip(), []
            i += 2
            continue
        current.append(line)
        i += 1
    parts.append((name, "\n".join(current)))
    return [(n, t) for n, t in parts if t.strip() or n]


def _prose(text: str, anchors: dict[str, str]) -> str:
    """Paragraphs, bullet lists, ``.. math::`` blocks, literal (``::``) and doctest blocks."""
    out = []
    blocks = re.split(r"\n\s*\n", textwrap.dedent(text).strip("\n"))
    i = 0
    while i < len(blocks):
        block = blocks[i]
        stripped = block.strip()
        if not stripped:
            i += 1
            continue
        if stripped.startswith(".. math::"):
            body = stripped[len(".. math::") :].strip()
            if not body and i + 1 < len(blocks):  # the formula is the next, indented block
                i += 1
                body = blocks[i]
            out.append(math_to_html(textwrap.dedent(body).strip(), display=True))
        elif stripped.startswith(".. "):  # other directives (note, versionadded): as text
            out.append(f"<p>{_inline(stripped[3:], anchors)}</p>")
        elif stripped.startswith(">>>"):
            out.append(_code(stripped))
        elif block.startswith((" ", "\t")) and out and out[-1].endswith("::</p>"):
            out[-1] = out[-1][: -len("::</p>")] + ":</p>"
            out.append(f"<pre>{html.escape(textwrap.dedent(block))}</pre>")
        elif all(re.match(r"\s*[-*] ", line) or line.startswith("  ") for line in block.splitlines()):
            items = re.split(r"\n(?=\s*[-*] )", stripped)
            out.append(
                "<ul>"
                + "".join(
                    f"<li>{_inline(' '.join(re.sub(r'^[-*] ', '', it.strip()).split()), anchors)}</li>"
                    for it in items
                )
                + "</ul>"
            )
        elif re.match(r"\.\. \[\w+\]|\[\w+\] ", stripped):  # a reference list
            out.append(f"<p class='api-ref'>{_inline(' '.join(stripped.split()), anchors)}</p>")
        else:
            out.append(f"<p>{_inline(' '.join(stripped.split()), anchors)}</p>")
        i += 1
    return "".join(out)


def _code(source: str) -> str:
    return highlight(source, PythonConsoleLexer(), _FORMATTER)


def _definitions(text: str, anchors: dict[str, str]) -> str:
    """A numpydoc list section: ``name : type`` lines, each with an indented description."""
    text = textwrap.dedent(text).strip("\n")
    entries: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line and not line[0].isspace():
            entries.append((line.strip(), []))
        elif entries:
            entries[-1][1].append(line)
        elif line.strip():
            entries.append(("", [line]))
    items = []
    for head, body in entries:
        name, _, kind = head.partition(" : ")
        term = f"<strong>{html.escape(name)}</strong>" if name else ""
        if kind:
            term += f" : <em>{_inline(kind, anchors)}</em>"
        items.append(f"<dt>{term}</dt><dd>{_prose(chr(10).join(body), anchors)}</dd>")
    return f"<dl class='api-params'>{''.join(items)}</dl>"


def _see_also(text: str, anchors: dict[str, str]) -> str:
    items = []
    for line in textwrap.dedent(text).strip().splitlines():
        if not line.strip():
            continue
        if line[0].isspace() and items:
            items[-1] += " " + _inline(line.strip(), anchors)
            continue
        names, _, note = line.partition(" : ")
        refs = ", ".join(_reference(n, anchors) for n in names.split(",") if n.strip())
        items.append(refs + (f": {_inline(note.strip(), anchors)}" if note else ""))
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def docstring_html(doc: str, anchors: dict[str, str]) -> str:
    """A numpy-style docstring (as :func:`inspect.getdoc` gives it) as an HTML fragment."""
    out = []
    for name, text in _split_sections(doc or ""):
        if name:
            out.append(f"<p class='api-section'>{html.escape(name)}</p>")
        if name in LIST_SECTIONS:
            out.append(_definitions(text, anchors))
        elif name == "See Also":
            out.append(_see_also(text, anchors))
        elif name == "Examples":
            out.append(_examples(text, anchors))
        else:
            out.append(_prose(text, anchors))
    return "".join(out)


def _examples(text: str, anchors: dict[str, str]) -> str:
    """Doctest sessions as code (with their expected output), prose between them as prose."""
    out, code, prose = [], [], []
    for line in textwrap.dedent(text).strip("\n").splitlines() + [""]:
        in_code = bool(code) and line.strip() != ""
        if line.lstrip().startswith((">>>", "...")) or in_code:
            if prose:
                out.append(_prose("\n".join(prose), anchors))
                prose = []
            code.append(line)
        else:
            if code:
                out.append(_code("\n".join(code)))
                code = []
            prose.append(line)
    if prose and "".join(prose).strip():
        out.append(_prose("\n".join(prose), anchors))
    return "".join(out)


# ----------------------------------------------------------------------------------- the page


class _Annotation:
    """An annotation kept as written (``from __future__ import annotations`` makes it a string)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _signature(obj: object, *, method: bool = False) -> str:
    """``(x, epsilon: float, *, rng=None) -> ndarray``: annotations unquoted, ``self`` dropped."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    params = list(signature.parameters.values())
    if method and params and params[0].name in ("self", "cls"):
        params = params[1:]
    params = [
        p.replace(annotation=_Annotation(p.annotation)) if isinstance(p.annotation, str) else p
        for p in params
    ]
    ret = signature.return_annotation
    ret = _Annotation(ret) if isinstance(ret, str) else ret
    if inspect.isclass(obj):  # a constructor's "-> None" says nothing
        ret = inspect.Signature.empty
    return str(signature.replace(parameters=params, return_annotation=ret))


def _members(cls: type) -> list[tuple[str, object]]:
    """A class's own public methods and properties, in source order."""
    out = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            out.append((name, value))
    return out


def _documented(package: types.ModuleType) -> list[tuple[str, list[tuple[str, object]]]]:
    """``[(module name, [(public name, object)])]`` in a reading order."""
    groups: dict[str, list[tuple[str, object]]] = {}
    exported = set()
    for name in package.__all__:
        obj = getattr(package, name)
        module = getattr(obj, "__module__", None) or package.__name__
        groups.setdefault(module, []).append((f"{package.__name__}.{name}", obj))
        exported.add(id(obj))
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if info.name.rpartition(".")[2].startswith("_") or not info.ispkg:
            continue
        sub = importlib.import_module(info.name)
        for name in getattr(sub, "__all__", []):
            obj = getattr(sub, name)
            if id(obj) in exported:
                continue
            exported.add(id(obj))
            groups.setdefault(sub.__name__, []).append((f"{sub.__name__}.{name}", obj))
    return sorted(groups.items(), key=lambda item: item[0])


def _anchor(dotted: str) -> str:
    return "api-" + re.sub(r"[^A-Za-z0-9_.-]", "-", dotted)


def render_api(package: str = "dplib") -> ApiPage:
    """The API reference page of ``package`` (default dplib).

    Raises
    ------
    ValueError
        If ``package`` cannot be imported, or is not a package with an ``__all__``.
    """
    try:
        module = importlib.import_module(package)
    except ImportError as exc:
        raise ValueError(f"cannot document {package!r}: it does not import ({exc})") from exc
    if not hasattr(module, "__path__") or not isinstance(getattr(module, "__all__", None), (list, tuple)):
        raise ValueError(f"cannot document {package!r}: it must be a package with an __all__ list")
    groups = _documented(module)
    anchors: dict[str, str] = {}
    for _, items in groups:
        for dotted, _obj in items:
            short = dotted.rpartition(".")[2]
            anchors[dotted] = "#" + _anchor(dotted)
            anchors.setdefault(short, "#" + _anchor(dotted))
    body, toc = [], []
    for module_name, items in groups:
        group_id = _anchor(module_name) + "-module"
        toc.append((group_id, module_name))
        intro = (inspect.getdoc(importlib.import_module(module_name)) or "").split("\n\n")[0]
        body.append(f"<section class='api-group' id='{group_id}'><h2>{html.escape(module_name)}</h2>")
        if intro:
            body.append(_prose(intro, anchors))
        for dotted, obj in items:
            body.append(_item(dotted, obj, anchors))
        body.append("</section>")
    return ApiPage(title=f"{package} API reference", body_html="".join(body), toc=toc)


def _item(
    dotted: str, obj: object, anchors: dict[str, str], taught: tuple[str, str] | None = None,
    search: bool = False, also: list[tuple[str, str]] | None = None,
) -> str:
    short = dotted.rpartition(".")[2]
    kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "data"
    signature = _signature(obj) if callable(obj) else ""
    marked = f" data-search-title='{html.escape(dotted, quote=True)}'" if search else ""
    where = ""
    if taught is not None:
        href, label = taught
        more = ", ".join(
            f"<a href='{html.escape(h, quote=True)}'>{html.escape(label_.split(' ')[0])}</a>"
            for h, label_ in also or []
        )
        where = (
            f"<p class='api-taught'>Taught in <a href='{html.escape(href, quote=True)}'>"
            f"{html.escape(label)}</a>" + (f" (also used in {more})" if more else "") + "</p>"
        )
    elif search:
        where = "<p class='api-taught'>Not used in a chapter: a reference for the curious.</p>"
    parts = [
        f"<div class='api-item' id='{_anchor(dotted)}'{marked}>",
        f"<div class='api-sig'><span class='api-kind'>{kind}</span>{html.escape(dotted.rpartition('.')[0])}."
        f"<span class='api-name'>{html.escape(short)}</span>{html.escape(signature)}</div>",
        where,
        docstring_html(inspect.getdoc(obj) or "", anchors),
    ]
    if inspect.isclass(obj):
        for name, member in _members(obj):
            label = "property" if isinstance(member, property) else "method"
            sig = "" if isinstance(member, property) else _signature(member, method=True)
            doc = inspect.getdoc(member) or ""
            parts.append(
                f"<div class='api-method' id='{_anchor(dotted)}.{html.escape(name)}'>"
                f"<div class='api-sig'><span class='api-kind'>{label}</span>"
                f"<span class='api-name'>{html.escape(name)}</span>{html.escape(sig)}</div>"
                f"{docstring_html(doc, anchors)}</div>"
            )
    parts.append("</div>")
    return "".join(parts)


# ------------------------------------------------------------------ one page per module, an index


@dataclass(frozen=True)
class ApiModulePage:
    """One page of the multi-page reference: its file, module, title, HTML, toc and names."""

    href: str
    module: str
    title: str
    body_html: str
    toc: list[tuple[str, str]]
    names: list[str]


def _page_module(module_name: str, package: str) -> str:
    """The page a defining module belongs to: ``dplib.mechanisms.laplace`` -> ``dplib.mechanisms``."""
    parts = module_name.split(".")
    if parts[0] != package or len(parts) < 2:
        return package
    return ".".join(parts[:2])


def summary(obj: object) -> str:
    """The first paragraph of an object's docstring, one line (empty without a docstring)."""
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _import(package: str) -> types.ModuleType:
    try:
        module = importlib.import_module(package)
    except ImportError as exc:
        raise ValueError(f"cannot document {package!r}: it does not import ({exc})") from exc
    if not hasattr(module, "__path__") or not isinstance(getattr(module, "__all__", None), (list, tuple)):
        raise ValueError(f"cannot document {package!r}: it must be a package with an __all__ list")
    return module


def render_api_pages(
    package: str = "dplib",
    teaches: dict[str, tuple[str, str]] | None = None,
    also: dict[str, list[tuple[str, str]]] | None = None,
) -> tuple[list[ApiModulePage], ApiModulePage]:
    """A page per module of ``package`` in course order, and an index page of every name.

    Parameters
    ----------
    package : str
        The package to document (default dplib).
    teaches : dict, optional
        ``{public name: (link, label)}``: the chapter section that teaches each name (first use in
        the course). A module's pages come in the order of the first chapter that uses one of its
        names (modules no chapter uses come last, by name); each entry links to its chapter.
    also : dict, optional
        ``{public name: [(link, label)]}``: the other chapters that use a name (label's first
        word shown: the chapter's number).

    Returns
    -------
    (pages, index)
        ``pages[i].href`` is ``api-<module>.html``; ``index.href`` is ``api.html``.

    Raises
    ------
    ValueError
        If ``package`` cannot be imported, or is not a package with an ``__all__``.
    """
    module = _import(package)
    teaches = dict(teaches or {})
    groups = _documented(module)
    by_page: dict[str, list[tuple[str, list[tuple[str, object]]]]] = {}
    for module_name, items in groups:
        by_page.setdefault(_page_module(module_name, package), []).append((module_name, items))
    hrefs = {page: f"api-{page}.html" for page in by_page}
    anchors: dict[str, str] = {}
    for page, modules in by_page.items():
        for _, items in modules:
            for dotted, _obj in items:
                short = dotted.rpartition(".")[2]
                anchors[dotted] = f"{hrefs[page]}#{_anchor(dotted)}"
                anchors.setdefault(short, anchors[dotted])
    order = [href for href, _ in teaches.values()]

    chapter_files = sorted({h.partition("#")[0] for h in order})  # 00_..., 01_...: course order

    def chapter_rank(href: str) -> int:
        return chapter_files.index(href.partition("#")[0])

    def page_key(page: str) -> tuple[int, str]:
        uses = [
            chapter_rank(teaches[d.rpartition(".")[2]][0])
            for _, items in by_page[page]
            for d, _ in items
            if d.rpartition(".")[2] in teaches
        ]
        return (min(uses) if uses else 10**6, page)

    pages: list[ApiModulePage] = []
    entries: list[tuple[str, str, object, str]] = []  # (short, dotted, obj, page)
    for page in sorted(by_page, key=page_key):
        body, toc, names = [], [], []
        intro = (inspect.getdoc(importlib.import_module(page)) or "").split("\n\n")[0]
        body.append(f"<h1>{html.escape(page)}</h1>")
        if intro:
            body.append(_prose(intro, anchors))
        for module_name, items in by_page[page]:
            group_id = _anchor(module_name) + "-module"
            toc.append((group_id, module_name))
            body.append(f"<section class='api-group' id='{group_id}'><h2>{html.escape(module_name)}</h2>")
            if module_name != page:
                first = (inspect.getdoc(importlib.import_module(module_name)) or "").split("\n\n")[0]
                if first:
                    body.append(_prose(first, anchors))
            for dotted, obj in items:
                short = dotted.rpartition(".")[2]
                body.append(
                    _item(dotted, obj, anchors, teaches.get(short), search=True,
                          also=(also or {}).get(short))
                )
                names.append(dotted)
                entries.append((short, dotted, obj, page))
            body.append("</section>")
        pages.append(ApiModulePage(hrefs[page], page, f"{page}: API reference", "".join(body), toc, names))

    index = ["<h1>" + html.escape(package) + " API: every public name</h1>",
             "<p>Every name a reader imports, A to Z, with its one-line summary, its module's page and "
             "the chapter that teaches it (the one that uses it most). The modules, in the order "
             "the course teaches them: "
             + ", ".join(f"<a href='{p.href}'>{html.escape(p.module)}</a>" for p in pages)
             + ".</p>"]
    letters: dict[str, list[str]] = {}
    for short, dotted, obj, page in sorted(entries, key=lambda e: (e[0].lower(), e[1])):
        taught = teaches.get(short)
        where = f"<a href='{hrefs[page]}'>{html.escape(page)}</a>"
        if taught:
            where += f" · taught in <a href='{html.escape(taught[0], quote=True)}'>{html.escape(taught[1])}</a>"
        signature = html.escape(_signature(obj)) if callable(obj) else ""
        letters.setdefault(short[0].upper(), []).append(
            f"<dt><a href='{anchors[dotted]}'>{html.escape(dotted)}</a>{signature}</dt>"
            f"<dd>{_inline(summary(obj), anchors)} <span class='where'>({where})</span></dd>"
        )
    toc = []
    for letter, items in letters.items():
        toc.append((f"api-index-{letter}", letter))
        index.append(f"<h2 id='api-index-{letter}'>{letter}</h2><dl class='api-index'>{''.join(items)}</dl>")
    index_page = ApiModulePage("api.html", package, f"{package} API", "".join(index), toc,
                               [d for _, d, _, _ in entries])
    return pages, index_page
