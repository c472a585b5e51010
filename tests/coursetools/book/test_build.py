"""The course book (coursetools/book/build.py): an offline site built from a stripped, executed copy.

A tiny course is built once per module, with execution: the pilot fixture (three exercises with
hidden tests, a written answer) and a chapter made here with a figure, maths, a link to the pilot,
an image file, a mark scheme and a hidden test. The site is then read back as a browser would: every
link and image must resolve to a file, every figure must be a PNG file, nothing may come from the
network, and no hidden test, mark scheme or nbgrader marker may appear on any page.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from book_course import (  # tests/support
    MARK_SCHEME_TEXT,
    MARKERS,
    MODEL_ANSWER_TEXT,
    PILOT,
    make_course,
    notebook_cell,
    png,
)

from coursetools import cli
from coursetools.book import build as book
from coursetools.book import pages as book_site
from coursetools.rendering import markdown_to_html

# ---------------------------------------------------------------------------------- site reader


class _Page(HTMLParser):
    """What a browser would fetch from a page, its ids, and its visible text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.ids: set[str] = set()
        self.text: list[str] = []
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name) is not None:
                self.urls.append((tag, name, attrs[name]))

    def handle_data(self, data):
        self.text.append(data)


def _read(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _hidden_lines(notebook: Path) -> list[str]:
    """Lines between the hidden-test markers, read here independently of the book's code."""
    lines, inside = [], False
    for cell in nbformat.read(notebook, as_version=4).cells:
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) > 15:
                lines.append(line.strip())
    return lines


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("book")
    source = make_course(root)
    report = book.build_book(
        source, root / "_build" / "html", jobs=2, cache_dir=root / "cache", docs_root=root
    )
    return root, source, report


@pytest.fixture(scope="module")
def pages(site):
    root, _, report = site
    return {p.name: p for p in sorted((root / "_build" / "html").glob("*.html"))}


# ----------------------------------------------------------------------------------------- tests


def test_the_run_is_the_full_marks_student_of_make_class():
    from coursetools.authoring import example_class as make_class

    chapter = book.load_chapter(PILOT.parent, "pilot")
    assert chapter.filled == make_class.student_notebooks(PILOT / "pilot.ipynb")["ada_full"]


def test_every_chapter_executed_and_is_a_page_linked_from_the_landing_page(site, pages):
    _, _, report = site
    assert sorted(report.runs) == ["01_figures", "pilot"]
    assert not report.errors and sorted(report.executed) == ["01_figures", "pilot"]
    assert {"index.html", "api.html", "01_figures.html", "pilot.html"} <= set(pages)
    index = _read(pages["index.html"])
    hrefs = {value for tag, name, value in index.urls if tag == "a"}
    assert {"01_figures.html", "pilot.html", "api.html", "grading.html"} <= hrefs
    chapter = _read(pages["01_figures.html"])
    assert "visible test passed" in "".join(chapter.text), "a visible test's output is shown"
    assert ("a", "href", "pilot.html") in chapter.urls, "next chapter link"


def test_every_internal_link_and_image_resolves_to_a_file(pages):
    checked = 0
    for name, path in pages.items():
        page = _read(path)
        for tag, _, value in page.urls:
            if value.startswith(("http://", "https://", "mailto:")):
                continue
            target, _, anchor = value.partition("#")
            file = path.parent / target if target else path
            assert file.is_file(), f"{name}: {tag} -> {value} is missing"
            if anchor and file.suffix == ".html":
                assert anchor in _read(file).ids, f"{name}: {value}: no such anchor"
            checked += 1
    assert checked > 50
    chapter = _read(pages["01_figures.html"])
    assert ("a", "href", "pilot.html#Exercise-1:-clamp") in chapter.urls, (
        "a notebook link ../pilot/pilot.ipynb#anchor becomes the pilot's page, same anchor"
    )
    assert ("a", "href", "grading.html") in chapter.urls, "../docs/grading.md becomes its page"


def test_figures_are_png_files_beside_the_pages(pages):
    site_dir = pages["index.html"].parent
    chapter = _read(pages["01_figures.html"])
    images = [v for t, n, v in chapter.urls if t == "img"]
    assert len(images) == 2, images  # the matplotlib figure and the copied diagram
    for src in images:
        assert src.startswith("figures/01_figures/") and not src.startswith("data:")
        data = (site_dir / src).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n"), src
    assert 'alt="the loss against the step, rising from 0 to 4 over steps 0 to 2."' in pages["01_figures.html"].read_text()
    figure = site_dir / "figures" / "01_figures" / "1.png"
    assert figure.stat().st_size > 1000, "the executed cell's figure, not a placeholder"
    for path in pages.values():
        embedded = re.findall(r"""(?:src|href)=["']?data:""", path.read_text(encoding="utf-8"))
        assert not embedded, f"{path.name} embeds a data: URI"


def test_no_hidden_test_mark_scheme_or_marker_on_any_page(site, pages):
    _, source, _ = site
    hidden = _hidden_lines(PILOT / "pilot.ipynb") + _hidden_lines(
        source / "01_figures" / "01_figures.ipynb"
    )
    assert len(hidden) >= 10
    reader_pages = {n: p for n, p in pages.items() if n not in ("grading.html", "jupyterhub.html")}
    for name, path in reader_pages.items():
        text = "".join(_read(path).text)
        raw = path.read_text(encoding="utf-8")
        for line in hidden:
            assert line not in text, f"{name} shows hidden-test text: {line!r}"
        for marker in MARKERS:
            assert marker not in text and marker not in raw, f"{name} shows {marker!r}"
        assert MARK_SCHEME_TEXT not in text
    for name in ("pilot.html", "01_figures.html"):
        raw = pages[name].read_text(encoding="utf-8")
        assert "nbgrader" not in raw and "grade_id" not in raw, f"{name} shows nbgrader metadata"


def test_nothing_is_loaded_from_the_network(pages):
    remote = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.I)
    for name, path in pages.items():
        page = _read(path)
        for tag, attr, value in page.urls:
            if tag in ("script", "img", "link", "iframe", "source", "video", "audio"):
                assert not remote.match(value), f"{name}: <{tag} {attr}={value}> is remote"
        scripts = [a.get("src") for tag, a in page.tags if tag == "script"]
        assert scripts and scripts[-1] == "static/book.js", f"{name}: {scripts}"
        for src in scripts:  # the site's own files, never inline code
            assert src and src.startswith("static/") and (path.parent / src).is_file(), src
        assert not re.search(r"<script\b[^>]*>[^<]+</script>", path.read_text(encoding="utf-8"))
        handler = re.search(r"<[a-z][^>]*\son[a-z]+\s*=", path.read_text(encoding="utf-8"))
        assert not handler, f"{name}: an inline event handler {handler.group(0)[:80]!r}"
        policy = [
            a.get("content", "")
            for t, a in page.tags
            if a.get("http-equiv") == "Content-Security-Policy"
        ]
        assert policy and "default-src 'none'" in policy[0] and "http" not in policy[0]
        directives = dict(d.strip().split(" ", 1) for d in policy[0].split(";"))
        assert directives["script-src"] == "'self'", "only the site's own script files"
        assert "unsafe" not in policy[0] and "connect-src" not in directives
    css = pages["index.html"].parent / "static" / "book.css"
    assert css.is_file() and "@import" not in css.read_text() and "url(" not in css.read_text()
    js = (pages["index.html"].parent / "static" / "book.js").read_text()
    for call in ("fetch(", "XMLHttpRequest", "WebSocket", "sendBeacon", "import(", "eval("):
        assert call not in js, f"book.js calls {call}"


def test_solutions_and_model_answers_are_folded_closed_and_starters_shown(pages):
    raw = pages["01_figures.html"].read_text(encoding="utf-8")
    text = "".join(_read(pages["01_figures.html"]).text)
    folds = re.findall(r"<details([^>]*)>(.*?)</details>", raw, re.S)
    assert len(folds) == 2
    assert all("open" not in attrs for attrs, _ in folds), "folded until the reader opens it"
    solution, model = folds[0][1], folds[1][1]
    assert "Show solution" in solution and "the solution line" in solution
    assert "Show a model answer" in model and MODEL_ANSWER_TEXT in model
    outside = re.sub(r"<details.*?</details>", "", raw, flags=re.S)
    assert "the solution line" not in outside and MODEL_ANSWER_TEXT not in outside
    assert "def double(x):\n    ...\n" in text, "the starter, its stub shown as ..."
    pilot = pages["pilot.html"].read_text(encoding="utf-8")
    assert pilot.count("<summary>Show solution</summary>") == 3
    assert pilot.count("<summary>Show a model answer</summary>") == 1


def test_maths_is_mathml_and_ansi_codes_are_gone(pages):
    raw = pages["01_figures.html"].read_text(encoding="utf-8")
    assert raw.count("<math") >= 3 and 'display="block"' in raw
    assert 'alttext="\\varepsilon"' in raw  # the source, for a screen reader without MathML
    shown = re.sub(r'alttext="[^"]*"', "", raw)
    assert "\\varepsilon" not in shown and "$$" not in shown
    printed = re.search(r"<pre[^>]*class='stdout'>(.*?)</pre>", raw, re.S).group(1)
    assert printed == "coloured output\n", "the ANSI colour codes are stripped from outputs"


def test_landing_page_quotes_the_readme_and_each_chapters_first_cell(site, pages):
    root, _, _ = site
    text = "".join(_read(pages["index.html"]).text)
    commands = re.search(r"```bash\n(.*?)```", (root / "README.md").read_text(), re.S).group(1)
    assert commands.strip() in text, "the README's two commands, verbatim"
    assert "01 · Figures and maths" in text and "Pilot: a tiny graded assignment" in text
    assert "plot the privacy loss" in text and "read the pilot first." in text  # learning goals
    assert "Who it is for" in text and "Teaching with it" in text


def test_a_second_build_executes_nothing_and_a_changed_chapter_runs_again(site, monkeypatch):
    root, source, _ = site
    out, cache = root / "_build" / "html", root / "cache"

    def refuse(*args, **kwargs):
        raise AssertionError("executed although cached")

    monkeypatch.setattr(book, "execute_notebook", refuse)
    again = book.build_book(source, out, jobs=2, cache_dir=cache, docs_root=root)
    assert again.executed == [] and all(run.cached for run in again.runs.values())
    assert (out / "figures" / "01_figures" / "1.png").is_file(), "figures re-rendered from cache"

    monkeypatch.undo()
    calls = []
    real = book.execute_notebook

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(book, "execute_notebook", counting)
    path = source / "01_figures" / "01_figures.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[3].source = nb.cells[3].source.replace("'loss'", "'privacy loss'")
    nbformat.write(nb, path)
    changed = book.build_book(source, out, jobs=2, cache_dir=cache, docs_root=root)
    assert changed.executed == ["01_figures"] and len(calls) == 1
    assert changed.runs["pilot"].cached


def test_a_failing_cell_shows_its_traceback_and_strict_fails(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "solutions" / "broken"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Broken"),
            nbformat.v4.new_code_cell("raise ValueError('boom at build time')"),
            nbformat.v4.new_code_cell("print('after the error')"),
        ]
    )
    nbformat.write(nb, folder / "broken.ipynb")
    args = ["book", "--source", str(tmp_path / "solutions"), "--out", str(tmp_path / "html")]
    args += ["--cache-dir", str(tmp_path / "cache"), "--jobs", "1"]
    real, runs = book.execute_notebook, []

    def record(*a, **k):
        runs.append(real(*a, **k))
        return runs[-1]

    monkeypatch.setattr(book, "execute_notebook", record)
    assert cli.main(args + ["--strict"]) == 1
    out = capsys.readouterr()
    assert "boom at build time" in out.out + out.err and "executed in" in out.out
    page = (tmp_path / "html" / "broken.html").read_text(encoding="utf-8")
    assert "ValueError" in page and "\x1b" not in page and "after the error" in page
    assert not list((tmp_path / "cache").glob("broken.*")), "a failed run is not cached"
    # The same failing run again (replayed: no second kernel), without --strict.
    monkeypatch.setattr(book, "execute_notebook", lambda *a, **k: runs[0])
    assert cli.main(args) == 0, "without --strict the book is still built"
    assert (tmp_path / "html" / "broken.html").read_text(encoding="utf-8") == page


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"jobs": 0}, "jobs must be a whole number >= 1"),
        ({"cell_timeout": 0}, "cell_timeout must be a number of seconds > 0"),
    ],
)
def test_bad_arguments_are_refused_with_what_is_allowed(tmp_path, kwargs, message):
    with pytest.raises(book.BookError, match=message):
        book.build_book(PILOT.parent, tmp_path / "html", cache_dir=tmp_path / "c", **kwargs)


def test_an_empty_source_is_refused(tmp_path):
    with pytest.raises(book.BookError, match="no chapter under"):
        book.build_book(tmp_path, tmp_path / "html", cache_dir=tmp_path / "c")


def test_the_cache_key_follows_the_notebook_and_the_chapters_files(tmp_path):
    import shutil

    shutil.copytree(PILOT, tmp_path / "pilot")
    first = book.cache_key(book.load_chapter(tmp_path, "pilot"), "env")
    assert first == book.cache_key(book.load_chapter(tmp_path, "pilot"), "env")
    assert first != book.cache_key(book.load_chapter(tmp_path, "pilot"), "other env")
    (tmp_path / "pilot" / "data.csv").write_text("a,b\n")
    assert first != book.cache_key(book.load_chapter(tmp_path, "pilot"), "env")


def test_link_rewriting_keeps_targets_harmless():
    def rewrite(url, tag):
        return {"a.ipynb": "a.html", "evil": "javascript:alert(1)", "proto": "//evil.org/x"}.get(
            url
        )

    out = markdown_to_html(
        "[a](a.ipynb) [b](evil) [c](proto) [d](#here) ![e](https://x.org/e.png)",
        rewrite_url=rewrite,
    )
    assert 'href="a.html"' in out and 'href="#here"' in out
    assert "javascript" not in out and "evil.org" not in out and "x.org" not in out
    assert markdown_to_html("[a](a.ipynb)") == '<p><a href="#">a</a></p>\n', "default unchanged"


def test_aligned_equations_become_a_mathml_table_not_source():
    out = markdown_to_html("$$\\begin{aligned} a &= b, \\\\ c &= d \\end{aligned}$$")
    assert "<mtable" in out and out.count("<mtr") == 2 and "class='tex'" not in out


def test_api_page_lists_every_public_dplib_name():
    if importlib.util.find_spec("coursetools.book.apidoc") is None:
        pytest.skip("coursetools.book.apidoc has not landed yet: the book uses its labelled fallback")
    import dplib

    title, body, toc = book_site.api_page()
    text = "".join(_read_fragment(body).text)
    missing = [name for name in dplib.__all__ if name not in text]
    assert not missing, f"the API page lacks {missing[:5]}"


def test_api_page_fallback_is_labelled_and_complete(monkeypatch):
    import dplib

    monkeypatch.setitem(sys.modules, "coursetools.book.apidoc", None)  # import fails
    title, body, toc = book_site.api_page()
    assert "Fallback page" in body
    assert {label for _, _, label in toc} == set(dplib.__all__)


def _read_fragment(fragment: str) -> _Page:
    page = _Page()
    page.feed(fragment)
    return page


# ------------------------------------------------------------------- reader features


def test_the_chapter_comes_before_the_menu_and_wide_content_scrolls_in_its_own_box(pages):
    raw = pages["01_figures.html"].read_text(encoding="utf-8")
    assert raw.index("<main") < raw.index("<nav class='sidebar'"), "the chapter first"
    assert "<button type='button' class='menu' aria-controls='book-nav'" in raw
    box = "<div tabindex=\"0\" role=\"region\" aria-label=\"formula\" class='math-block'>"  # a tab stop
    assert re.search(re.escape(box) + r"<math[^>]*display=\"block\"", raw)
    assert not re.search(r"(?<!" + re.escape(box) + r")<math[^>]*display=\"block\"", raw)
    wrapped = book_site.scrollable("<table><tr><td>1</td></tr></table><p>x</p>")
    assert wrapped == "<div class='scroll'><table><tr><td>1</td></tr></table></div><p>x</p>"
    long_inline = markdown_to_html("$a + b + c + d + e + f + g + h + i + j$ and $x$")
    boxed = book_site.scrollable(long_inline)
    assert boxed.count("<span class='math-inline'>") == 1, "only the long formula gets a box"


def test_the_style_sheet_has_dark_print_and_phone_rules():
    css = book_site.stylesheet()
    dark = css[css.index("@media (prefers-color-scheme: dark)") :]
    assert "--bg:" in dark and "--ink:" in dark, "dark mode swaps the colours"
    printing = css[css.index("@media print") :]
    assert re.search(r"\.sidebar[^{]*\{ display: none", printing)
    assert "break-before: page" in printing and "details-content" in printing
    assert "print-no-solutions details.solution { display: none; }" in printing
    assert "@media (max-width: 50rem)" in css and ".js .sidebar { display: none; }" in css


def test_each_chapter_offers_its_release_and_its_data_for_download(site, pages):
    root, source, _ = site
    out = root / "_build" / "html"
    from coursetools.authoring.release import notebook_bytes, release_notebook

    for name in ("pilot", "01_figures"):
        raw = pages[f"{name}.html"].read_text(encoding="utf-8")
        href = f"downloads/{name}/{name}.ipynb"
        assert f"<a href='{href}' download>" in raw and "jupyter lab" in raw
        data = (out / href).read_bytes()
        nb_source = nbformat.read(source / name / f"{name}.ipynb", as_version=4)
        assert data == notebook_bytes(release_notebook(nb_source, name)), "exactly the release"
        nbformat.validate(nbformat.reads(data.decode("utf-8"), as_version=4))
        text = data.decode("utf-8")
        for line in _hidden_lines(source / name / f"{name}.ipynb"):
            assert line not in text, f"{name}'s download shows hidden-test text {line!r}"
        for marker in MARKERS[:6]:
            assert marker not in text
    assert MODEL_ANSWER_TEXT not in (out / "downloads/01_figures/01_figures.ipynb").read_text()
    assert "the solution line" not in (out / "downloads/01_figures/01_figures.ipynb").read_text()
    # 01_figures has a data file: copied beside the notebook and zipped with it.
    assert (out / "downloads/01_figures/diagram.png").read_bytes() == png()
    import zipfile

    with zipfile.ZipFile(out / "downloads/01_figures/01_figures.zip") as zf:
        assert sorted(zf.namelist()) == ["01_figures/01_figures.ipynb", "01_figures/diagram.png"]
    assert "downloads/01_figures/01_figures.zip" in pages["01_figures.html"].read_text()
    assert not (out / "downloads/pilot/pilot.zip").exists(), "no data: no zip"


def test_a_release_that_would_leak_is_refused(tmp_path):
    import shutil

    shutil.copytree(PILOT, tmp_path / "pilot")
    chapter = book.load_chapter(tmp_path, "pilot")
    hidden = book.hidden_lines(chapter.source)[0]
    chapter.release.cells[-1].source += "\n" + hidden  # a release gone wrong
    with pytest.raises(book.BookError, match="its release holds instructor text"):
        book.write_downloads(chapter, tmp_path / "html")


def _index(out: Path) -> list:
    from coursetools.book import search

    raw = (out / search.INDEX_FILE).read_text(encoding="utf-8")
    assert raw.startswith("window.BOOK_SEARCH = [") and raw.rstrip().endswith("];")
    import json

    return [search.Section(**d) for d in json.loads(raw[raw.index("[") : raw.rindex("]") + 1])]


def test_the_search_index_covers_chapters_guides_and_the_api_and_every_link_resolves(site):
    from coursetools.book import search

    root, _, _ = site
    out = root / "_build" / "html"
    entries = _index(out)
    kinds = {e.k for e in entries}
    assert {"chapter", "api", "guide"} <= kinds
    import dplib

    api_urls = {e.u for e in entries if e.k == "api"}
    for name in dplib.__all__:
        assert any(u.endswith(f"#api-dplib.{name}") for u in api_urls), name
    for entry in entries:
        page, _, anchor = entry.u.partition("#")
        assert (out / page).is_file(), entry.u
        if anchor:
            assert anchor in _read(out / page).ids, entry.u
    top = search.rank(entries, "double it")[0]
    assert top.u == "01_figures.html#Exercise:-double-it" and top.k == "chapter"
    assert search.rank(entries, "laplace_mechanism")[0].u.endswith("#api-dplib.laplace_mechanism")
    assert "search.html" in {p.name for p in out.glob("*.html")}
    search_page = (out / "search.html").read_text(encoding="utf-8")
    assert "<script src='static/search-index.js'></script>" in search_page


def test_sections_cut_a_page_at_its_headings_and_marked_entries():
    from coursetools.book import search

    body = (
        "<p>intro &amp; more</p><h2 id='one'>First <em>part</em></h2><p>alpha</p>"
        "<div class='api-item' id='api-x' data-search-title='dplib.x'><p>beta</p></div>"
        "<h3 id='empty'>Empty</h3>"
    )
    found = search.sections(body, "p.html", "Page")
    assert [(s.t, s.u, s.x) for s in found] == [
        ("Page", "p.html", "intro & more"),
        ("First part", "p.html#one", "alpha"),
        ("dplib.x", "p.html#api-x", "beta"),
        ("Empty", "p.html#empty", ""),
    ]
    with pytest.raises(ValueError, match="kind must be one of"):
        search.sections(body, "p.html", "Page", kind="blog")
    with pytest.raises(ValueError, match="without an anchor"):
        search.sections(body, "p.html#x", "Page")


def test_ranking_prefers_titles_then_the_phrase_and_ignores_punctuation():
    from coursetools.book.search import Section, normalise, rank

    entries = [
        Section("Noise", "A", "a.html#n", "the vector is sparse and the noise is large", "chapter"),
        Section("Tricks", "A", "a.html#t", "a sparse vector, then another sparse vector", "chapter"),
        Section("The sparse vector technique", "B", "b.html#s", "answers above a threshold", "chapter"),
        Section("dplib.sparse_vector", "API", "api.html#s", "sparse vector technique", "api"),
        Section("Floating-point numbers", "C", "c.html#f", "doubles", "chapter"),
    ]
    assert [e.u for e in rank(entries, "sparse vector")][:3] == ["b.html#s", "api.html#s", "a.html#t"]
    assert rank(entries, "floating point")[0].u == "c.html#f"
    assert rank(entries, "FLOATING-POINT")[0].u == "c.html#f"
    assert normalise("Rényi  DP-SGD!") == "renyi dp sgd"
    assert rank(entries, "") == [] and rank(entries, " -- ") == []
    assert rank(entries, "zebra") == []


def test_the_api_reference_is_a_page_per_module_with_an_index_and_chapter_links(site, pages):
    import dplib

    root, _, _ = site
    out = root / "_build" / "html"
    modules = sorted(p.name for p in out.glob("api-*.html"))
    assert "api-dplib.mechanisms.html" in modules and len(modules) >= 8
    index = _read(pages["api.html"])
    index_links = {v for t, _, v in index.urls if t == "a"}
    for name in dplib.__all__:
        assert any(v.endswith(f"#api-dplib.{name}") for v in index_links), f"index lacks {name}"
    where = {}
    for module in modules:
        for anchor in _read(out / module).ids:
            if anchor.startswith("api-dplib.") and not anchor.endswith("-module"):
                assert anchor not in where, f"{anchor} on two pages"
                where[anchor] = module
    assert where["api-dplib.laplace_mechanism"] == "api-dplib.mechanisms.html"
    # The tiny course's pilot uses clamp: its entry links to the pilot's section that uses it.
    mechanisms = (out / where["api-dplib.clamp"]).read_text(encoding="utf-8")
    entry = mechanisms[mechanisms.index("id='api-dplib.clamp'") :][:2000]
    assert re.search(r"Taught in <a href='pilot\.html#[^']+'>", entry), entry[:400]


def test_a_name_is_taught_where_it_is_used_most_and_also_used_elsewhere():
    uses = {
        "laplace_mechanism": [
            ("00_a.html#preview", "00 · A", 1),
            ("02_b.html#five", "02 · B", 6),
            ("08_c.html#x", "08 · C", 6),
        ],
        "clamp": [("02_b.html#clamp", "02 · B", 2)],
    }
    taught, also = book.teaching_chapters(uses)
    assert taught["laplace_mechanism"] == ("02_b.html#five", "02 · B"), "most cells, earliest"
    assert also["laplace_mechanism"] == [("00_a.html#preview", "00 · A"), ("08_c.html#x", "08 · C")]
    assert taught["clamp"] == ("02_b.html#clamp", "02 · B") and also["clamp"] == []
    from coursetools.book.apidoc import render_api_pages

    pages, _ = render_api_pages("dplib", taught, also)
    body = "".join(p.body_html for p in pages)
    assert (
        "Taught in <a href='02_b.html#five'>02 · B</a> (also used in "
        "<a href='00_a.html#preview'>00</a>, <a href='08_c.html#x'>08</a>)"
    ) in body


def test_teaching_sections_count_uses_not_imports(tmp_path):
    folder = tmp_path / "01_x"
    folder.mkdir()
    cells = [
        notebook_cell("markdown", "# Title"),
        notebook_cell("code", "from dplib import laplace_mechanism, clamp\n%matplotlib inline"),
        notebook_cell("markdown", "## Using it\n\nCall `dplib.clamp()` first."),
        notebook_cell("code", "y = laplace_mechanism(1.0, 1.0, 1.0)"),
        notebook_cell("code", "z = dplib.laplace_mechanism(2.0, 1.0, 1.0)"),
    ]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / "01_x.ipynb")
    chapter = book.load_chapter(tmp_path, "01_x")
    toc = [(1, "Title", "Title"), (2, "Using-it", "Using it")]
    found = book.teaching_sections(chapter, toc, [1, 1, 2, 2, 2], {"laplace_mechanism", "clamp"})
    assert found == {
        "laplace_mechanism": ("01_x.html#Using-it", 2),
        "clamp": ("01_x.html#Using-it", 1),
    }
