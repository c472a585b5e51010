"""The book's dplib API page says what ``help()`` says (coursetools/book/apidoc.py).

Every public name has one anchor and its signature; every word of every docstring is on the page
(markup and maths aside); maths is MathML; cross-references resolve; and a docstring is text:
``<script>`` in one, or in its maths, comes out inert.
"""

from __future__ import annotations

import html
import inspect
import re
import sys
import types
from html.parser import HTMLParser

import pytest

import dplib
from coursetools.book.apidoc import _signature, docstring_html, render_api


@pytest.fixture(scope="module")
def page():
    return render_api("dplib")


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.hrefs = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "a" and attrs.get("href", "").startswith("#"):
            self.hrefs.append(attrs["href"][1:])


def _parsed(body: str) -> _Ids:
    parser = _Ids()
    parser.feed(body)
    return parser


def _words(text: str) -> str:
    return " ".join(re.findall(r"[A-Za-z0-9]+", text))


def _item(body: str, anchor: str) -> str:
    """The HTML of one documented item: from its anchor to the next item."""
    start = body.index(f"id='{anchor}'")
    end = body.find("<div class='api-item'", start + 1)
    return body[start : end if end > 0 else len(body)]


def _page_text(fragment: str) -> str:
    fragment = re.sub(r"<math.*?</math>", " ", fragment, flags=re.DOTALL)
    return _words(html.unescape(re.sub(r"<[^>]+>", " ", fragment)))


def _doc_text(doc: str) -> str:
    doc = re.sub(r":math:`[^`]*`", " ", doc)
    doc = re.sub(r":(?:func|class|meth|mod|attr|data|obj):`~?", "`", doc)
    doc = re.sub(r"^[ \t]*-{3,}[ \t]*$", " ", doc, flags=re.MULTILINE)  # section underlines
    return _words(doc)


def test_every_public_name_has_one_anchor_and_its_signature(page):
    parsed = _parsed(page.body_html)
    assert len(parsed.ids) == len(set(parsed.ids)), "ids must be unique"
    for name in dplib.__all__:
        anchor = f"api-dplib.{name}"
        assert parsed.ids.count(anchor) == 1, name
        obj = getattr(dplib, name)
        if callable(obj):
            assert html.escape(_signature(obj)) in _item(page.body_html, anchor), name


def test_help_and_the_book_say_the_same(page):
    """Every word of every docstring, in order, in that name's entry (maths and markup aside)."""
    for name in dplib.__all__:
        obj = getattr(dplib, name)
        doc = inspect.getdoc(obj)
        assert doc, f"dplib.{name} has no docstring"
        shown = _page_text(_item(page.body_html, f"api-dplib.{name}"))
        formula_next = False
        for paragraph in re.split(r"\n\s*\n", doc):
            if paragraph.strip().startswith(".. math::") or formula_next:  # shown as MathML
                formula_next = paragraph.strip() == ".. math::"
                continue
            words = _doc_text(paragraph)
            assert words in shown, (name, words[:200])


def test_maths_is_mathml_and_no_rst_is_left_raw(page):
    body = page.body_html
    assert body.count("<math") > 50
    assert ":math:" not in body and ".. math::" not in body
    assert "display=\"block\"" in body  # the ``.. math::`` blocks
    assert not re.search(r"``|:func:|:class:", body)


def test_parameters_become_a_definition_list(page):
    entry = _item(page.body_html, "api-dplib.laplace_mechanism")
    names = [p for p in inspect.signature(dplib.laplace_mechanism).parameters]
    assert "<dl class='api-params'>" in entry
    for name in names:
        assert f"<dt><strong>{name}</strong>" in entry, name


def test_cross_references_and_the_toc_resolve(page):
    parsed = _parsed(page.body_html)
    assert parsed.hrefs, "See Also and backticked names link to their entries"
    assert set(parsed.hrefs) <= set(parsed.ids)
    assert [anchor for anchor, _ in page.toc] and {a for a, _ in page.toc} <= set(parsed.ids)
    # The subpackages a reader imports are documented too, not only the top level.
    assert any(label == "dplib.testing" or label.startswith("dplib.testing.") for _, label in page.toc)


def test_a_docstring_is_text_never_markup(monkeypatch):
    fake = types.ModuleType("fakepkg", "A fake package.")
    fake.__path__ = []

    def evil(x):
        """Do <script>alert(1)</script> things with :math:`\\text{<script>x</script>}`.

        .. math::

            \\text{<script>alert(2)</script>} + 1

        Parameters
        ----------
        x : <img src=x onerror=alert(1)>
            Any value, ``<b>code</b>`` and *<i>em</i>*.
        """

    evil.__module__ = "fakepkg"
    fake.evil = evil
    fake.__all__ = ["evil"]
    monkeypatch.setitem(sys.modules, "fakepkg", fake)
    body = render_api("fakepkg").body_html
    assert "<script" not in body and "<img" not in body and "<b>" not in body and "<i>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert body.count("<math") == 2


def test_unknown_or_unsuitable_packages_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="does not import"):
        render_api("no_such_package_here")
    plain = types.ModuleType("plainmod")
    monkeypatch.setitem(sys.modules, "plainmod", plain)
    with pytest.raises(ValueError, match="package with an __all__"):
        render_api("plainmod")


def test_sections_and_examples():
    doc = (
        "Summary line.\n\nParameters\n----------\nx : float\n    The value.\n\n"
        "See Also\n--------\nlaplace_mechanism : the additive mechanism.\n\n"
        "Examples\n--------\n>>> 1 + 1\n2\n"
    )
    out = docstring_html(doc, {"laplace_mechanism": "#api-dplib.laplace_mechanism"})
    assert "<p>Summary line.</p>" in out
    assert "<dt><strong>x</strong> : <em>float</em></dt>" in out
    assert "<a href='#api-dplib.laplace_mechanism'><code>laplace_mechanism</code></a>" in out
    assert "class=\"highlight\"" in out and "&gt;&gt;&gt;" in out


# ------------------------------------------------------------- a page per module


def test_a_page_per_module_in_course_order_each_name_once_with_its_chapter():
    from coursetools.book.apidoc import render_api_pages

    teaches = {  # as the book finds them: the chapter section that first uses a name
        "sparse_vector": ("04_composition.html#svt", "04 · Composition"),
        "randomized_response": ("01_randomized_response.html#rr", "01 · Randomized response"),
        "private_count": ("02_laplace_mechanism.html#count", "02 · Laplace"),
        "RDPAccountant": ("06_dp_sgd.html#acc", "06 · DP-SGD"),
    }
    teaches = {k: v for k, v in teaches.items() if k in dplib.__all__}
    pages, index = render_api_pages("dplib", teaches)
    modules = [p.module for p in pages]
    assert len(modules) == len(set(modules)) >= 8 and modules[0] == "dplib.mechanisms"
    first = {}
    for position, page in enumerate(pages):
        for dotted in page.names:
            first.setdefault(dotted.rpartition(".")[2], position)
    if "private_count" in teaches:  # taught in 02: its module comes after mechanisms (01)
        assert first["private_count"] > first["randomized_response"]
    names = [d for p in pages for d in p.names]
    assert len(names) == len(set(names)) and sorted(names) == sorted(index.names)
    for name in dplib.__all__:
        assert f"dplib.{name}" in names, name
    by_href = {p.href: p for p in pages}
    for page in pages:
        parsed = _parsed(page.body_html)
        assert len(parsed.ids) == len(set(parsed.ids))
        for name, (href, label) in teaches.items():
            if f"dplib.{name}" in page.names:
                entry = _item(page.body_html, f"api-dplib.{name}")
                assert f"Taught in <a href='{href}'>{html.escape(label)}</a>" in entry
                assert "data-search-title='dplib." in entry
    # Cross-references between pages resolve to a page and an id on it.
    links = re.findall(r"href='(api-[^'#]+\.html)#([^']+)'", "".join(p.body_html for p in pages))
    assert links, "See Also and backticked names link across pages"
    for href, anchor in links:
        assert anchor in _parsed(by_href[href].body_html).ids, (href, anchor)
    index_links = re.findall(r"<dt><a href='(api-[^'#]+\.html)#([^']+)'>", index.body_html)
    assert len(index_links) == len(names)
    assert all(anchor in _parsed(by_href[h].body_html).ids for h, anchor in index_links)
    assert "Not used in a chapter" in "".join(p.body_html for p in pages)


def test_pages_refuse_what_render_api_refuses():
    from coursetools.book.apidoc import render_api_pages

    with pytest.raises(ValueError, match="does not import"):
        render_api_pages("no_such_package_here")
