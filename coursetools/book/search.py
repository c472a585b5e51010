"""The book's offline search: an index of sections written at build time, read by ``book.js``.

One job: cut each page into sections (a heading with an ``id``, or an element marked
``data-search-title``, such as one name of the API reference) and write them as
``static/search-index.js`` (``window.BOOK_SEARCH = [...]``), a script of the site itself: the pages'
Content-Security-Policy allows the site's own scripts and nothing else, and a page opened from
disk (``file://``) cannot ``fetch`` a JSON file, so the index is a script. No library: ranking is
in ``assets/book.js`` (:func:`rank` here is the same ranking in Python, for the tests and for a
reader without a browser).

Each entry: ``t`` the section's title, ``p`` the page's title, ``u`` the link (``page.html#id``),
``x`` the section's text (what a reader sees there, whitespace collapsed), ``k`` its kind
(``chapter``, ``api`` or ``guide``).
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["Section", "sections", "write_index", "rank", "normalise", "INDEX_FILE"]

INDEX_FILE = "static/search-index.js"
KINDS = ("chapter", "api", "guide", "page")
#: A section's score is multiplied by its kind's weight: a chapter that teaches a topic comes
#: before the reference entry that names it, and the landing page last.
WEIGHT = {"chapter": 1.0, "guide": 0.8, "api": 0.6, "page": 0.5}
_BOUNDARY = re.compile(
    r"<h(?P<level>[1-4])\s+id=[\"'](?P<hid>[^\"']+)[\"'][^>]*>(?P<heading>.*?)</h(?P=level)>"
    r"|<(?P<tag>div|section)\b[^>]*?\bid=[\"'](?P<did>[^\"']+)[\"'][^>]*?"
    r"\bdata-search-title=[\"'](?P<title>[^\"']*)[\"'][^>]*>",
    re.S,
)


@dataclass(frozen=True)
class Section:
    """One searchable section: its title, its page's title, its link, its text and kind."""

    t: str
    p: str
    u: str
    x: str
    k: str


def _text(fragment: str) -> str:
    """What a reader sees of an HTML fragment: tags dropped, entities decoded, spaces collapsed."""
    fragment = re.sub(r"<(script|style)\b.*?</\1>", " ", fragment, flags=re.S | re.I)
    # MathML: keep the symbols' text (a formula's letters are searchable), separate block tags.
    fragment = re.sub(r"<(?:/p|br|/li|/pre|/div|/h[1-6]|/tr|/dt|/dd)\b[^>]*>", " \n", fragment)
    text = html.unescape(re.sub(r"<[^>]+>", "", fragment))
    return re.sub(r"\s+", " ", text).strip()


def sections(body: str, href: str, page_title: str, kind: str = "chapter") -> list[Section]:
    """A page's body cut at its headings (with ids) and its ``data-search-title`` elements.

    Text before the first boundary is a section titled ``page_title`` linking to the page itself.

    Raises
    ------
    ValueError
        If ``kind`` is not one of :data:`KINDS` or ``href`` is empty.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not isinstance(href, str) or not href or "#" in href:
        raise ValueError(f"href must be a page's file name without an anchor, got {href!r}")
    found: list[Section] = []
    title, url, start = page_title, href, 0
    for match in _BOUNDARY.finditer(body):
        text = _text(body[start : match.start()])
        if text or url != href:
            found.append(Section(title, page_title, url, text, kind))
        if match.group("hid"):
            title = _text(match.group("heading")) or page_title
            url = f"{href}#{html.unescape(match.group('hid'))}"
            start = match.end()
        else:
            title = html.unescape(match.group("title")) or page_title
            url = f"{href}#{html.unescape(match.group('did'))}"
            start = match.end()
    text = _text(body[start:])
    if text or url != href:
        found.append(Section(title, page_title, url, text, kind))
    return found


def write_index(out: Path, entries: list[Section]) -> Path:
    """``out/static/search-index.js``: ``window.BOOK_SEARCH = [...]`` (JSON, one line)."""
    data = json.dumps([asdict(e) for e in entries], ensure_ascii=False, separators=(",", ":"))
    data = data.replace("</", "<\\/")  # harmless in a .js file; safe if ever inlined
    path = Path(out) / INDEX_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"window.BOOK_SEARCH = {data};\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------ the ranking of book.js, in Python


def normalise(text: str) -> str:
    """Lower case, accents dropped, every run of non-alphanumerics one space (as ``book.js``)."""
    text = unicodedata.normalize("NFKD", text or "").lower()
    text = "".join(c for c in text if not unicodedata.combining(c))
    return re.sub(r"[^a-z0-9]+", " ", text).strip()


def _count(haystack: str, needle: str) -> int:
    if not needle:
        return 0
    haystack, pattern = f" {haystack} ", f" {needle}"
    n = at = 0
    while (at := haystack.find(pattern, at)) != -1:
        n += 1
        at += len(pattern)
    return n


def _last_name(title: str) -> str:
    """The last identifier of a title: ``dplib.laplace_mechanism`` -> ``laplace_mechanism``."""
    names = [n for n in re.split(r"[^A-Za-z0-9_]+", title) if n]
    return names[-1].lower() if names else ""


def rank(entries: list[Section], query: str, limit: int = 30) -> list[Section]:
    """The sections ``book.js`` shows for ``query``, best first (the same scores, see there)."""
    phrase = normalise(query)
    if not phrase:
        return []
    words = [w for w in phrase.split(" ") if len(w) > 1 or w.isdigit()] or [phrase]
    scored = []
    for order, entry in enumerate(entries):
        title, body = normalise(entry.t), normalise(entry.x)
        score = missing = 0
        for word in words:
            in_title, in_body = _count(title, word), _count(body, word)
            missing += not in_title and not in_body
            score += 8 * min(in_title, 2) + min(in_body, 6)
        if missing == len(words):
            continue
        score -= 6 * missing
        if len(words) > 1 or " " not in phrase:
            score += 30 * min(_count(title, phrase), 1) + 4 * min(_count(body, phrase), 5)
        if _last_name(entry.t) == query.strip().lower():
            score += 25  # the name itself: laplace_mechanism before discrete_laplace_mechanism
        score *= WEIGHT.get(entry.k, 1)
        if score > 0:
            scored.append((-score, order, entry))
    scored.sort(key=lambda item: item[:2])
    return [entry for _, _, entry in scored[:limit]]
