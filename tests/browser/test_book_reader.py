"""The whole book as a reader's Chromium shows it: search, download, phone, print, dark.

The real course (``solutions/``) is built into a temporary folder (executed chapters come from
the book's cache, ``build/book/cache``, when nothing they depend on changed) and its pages are opened
from disk (``file://``) under their own Content-Security-Policy. The tests check features, not a
chapter's wording: a search lands on a section whose heading names the query; the downloaded
notebook is the release; at 390 x 844 no page is wider than the screen and the chapter's title is
in the first screen; printing hides the sidebar and shows the solutions; dark mode changes the
background; no request leaves the site. Screenshots go to ``build/book-screenshots/``.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

import nbformat
import pytest
from conftest import ROOT

from coursetools.authoring.release import notebook_bytes, release_notebook
from coursetools.book import search
from coursetools.book.build import DEFAULT_CACHE, build_book, hidden_lines

SHOTS = ROOT / "build" / "book-screenshots"
PHONE = {"width": 390, "height": 844}
QUERIES = {  # query -> a word the heading of the section it lands on must contain
    "sparse vector": "sparse vector",
    "clipping": "clipping",
    "floating-point": "floating",
}


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    out = tmp_path_factory.mktemp("reader") / "html"
    report = build_book(ROOT / "solutions", out, jobs=2, cache_dir=DEFAULT_CACHE, docs_root=ROOT)
    SHOTS.mkdir(parents=True, exist_ok=True)
    return out, report


@pytest.fixture
def watched(browser, book):
    """A factory of tabs (viewport, colour scheme) that record every request and console error."""
    contexts, requests, problems = [], [], []

    def open_tab(viewport=None, **options):
        context = browser.new_context(
            viewport=viewport or {"width": 1300, "height": 900}, **options
        )
        contexts.append(context)
        tab = context.new_page()
        tab.on("request", lambda r: requests.append(r.url))
        tab.on("pageerror", lambda exc: problems.append(str(exc)))
        tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        return tab

    yield open_tab, requests, problems
    for context in contexts:
        context.close()


@pytest.fixture
def served(book):
    """The site served over HTTP on 127.0.0.1 (as a web host would; Chromium does not download a
    file:// link, it shows it); its base URL."""
    import functools
    import http.server
    import threading

    out, _ = book
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _chapters(out):
    return sorted(p.name for p in out.glob("[0-9][0-9]_*.html"))


def _assert_local(requests, out):
    site = out if isinstance(out, str) else out.as_uri()
    outside = [u for u in requests if not u.startswith(site + "/") and not u.startswith("blob:")]
    assert not outside, f"requests left the site: {outside[:5]}"


def test_search_finds_the_three_queries_and_opens_the_section(watched, book):
    out, _ = book
    open_tab, requests, problems = watched
    tab = open_tab()
    for query, word in QUERIES.items():
        tab.goto((out / "02_laplace_mechanism.html").as_uri())
        box = tab.locator("nav.sidebar form.search input")
        box.fill(query)
        box.press("Enter")
        tab.wait_for_url(re.compile(r"search\.html\?q="))
        first = tab.locator("#search-results li a").first
        first.wait_for()
        if query == "sparse vector":
            tab.screenshot(path=str(SHOTS / "search-results.png"))
        target = first.get_attribute("href")
        assert "#" in target, f"{query!r}: the first result is a page, not a section: {target}"
        first.click()
        tab.wait_for_load_state("load")
        anchor = unquote(target.partition("#")[2])
        # the browser's URL is percent-encoded (a heading with an emoji or an accent), the href not
        assert unquote(tab.url).endswith("#" + anchor), (query, tab.url)
        heading = tab.locator(f"[id='{anchor}']")
        assert word in heading.inner_text().lower(), (query, heading.inner_text())
        box_ = heading.bounding_box()
        assert box_ and -2 <= box_["y"] < 900, f"{query!r}: the section is not on the screen"
    _assert_local(requests, out)
    assert not problems, problems


def test_the_browsers_ranking_is_the_pythons(watched, book):
    out, _ = book
    open_tab, _, problems = watched
    tab = open_tab()
    tab.goto((out / "search.html").as_uri() + "?q=clipping")
    raw = (out / search.INDEX_FILE).read_text(encoding="utf-8")
    entries = [search.Section(**d) for d in json.loads(raw[raw.index("[") : raw.rindex("]") + 1])]
    assert sum(e.k == "api" for e in entries) >= 100, "the API reference is in the index"
    for query in (*QUERIES, "laplace_mechanism", "Rényi", "k-anonymity", "x"):
        in_js = tab.evaluate(
            "q => BookSearch.rank(window.BOOK_SEARCH, q, 10).map(r => r.entry.u)", query
        )
        assert in_js == [e.u for e in search.rank(entries, query, 10)], query
    assert not problems, problems


def test_a_downloaded_notebook_is_the_release(watched, served):
    open_tab, requests, _ = watched
    tab = open_tab(accept_downloads=True)
    name = "02_laplace_mechanism"
    tab.goto(f"{served}/{name}.html")
    with tab.expect_download() as info:
        tab.get_by_text("Download this chapter's notebook").click()
    data = open(info.value.path(), "rb").read()
    source = nbformat.read(ROOT / "solutions" / name / f"{name}.ipynb", as_version=4)
    assert data == notebook_bytes(release_notebook(source, name)), "exactly the release"
    nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    nbformat.validate(nb)
    text = data.decode("utf-8")
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "BEGIN MARK SCHEME"):
        assert marker not in text
    hidden = hidden_lines(source)
    assert hidden, "the chapter has hidden tests to leave out"
    assert not [line for line in hidden if line in text]
    assert any("raise NotImplementedError()" in c.source for c in nb.cells), "exercises to do"
    _assert_local(requests, served)


def test_on_a_phone_no_page_is_wider_than_the_screen_and_the_title_comes_first(watched, book):
    out, _ = book
    open_tab, requests, problems = watched
    tab = open_tab(PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    names = _chapters(out) + ["index.html", "api.html", "api-dplib.mechanisms.html", "search.html"]
    for name in names:
        tab.goto((out / name).as_uri())
        width = tab.evaluate(
            "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        )
        assert width <= PHONE["width"], f"{name} is {width} px wide at 390"
        title = tab.locator("main h1").first.bounding_box()
        assert title and title["y"] + title["height"] <= PHONE["height"], (
            f"{name}: title at {title}"
        )
        assert not tab.locator("nav.sidebar").is_visible(), f"{name}: the menu is open"
        if name == "02_laplace_mechanism.html":
            tab.screenshot(path=str(SHOTS / "phone-chapter.png"))
            tab.locator("div.math-block").first.scroll_into_view_if_needed()
            tab.screenshot(path=str(SHOTS / "phone-maths.png"))
    tab.goto((out / "search.html").as_uri() + "?q=clipping")
    tab.locator("#search-results li a").first.wait_for()
    assert tab.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    tab.screenshot(path=str(SHOTS / "phone-search.png"))
    tab.goto((out / "02_laplace_mechanism.html").as_uri())
    tab.locator(".topbar button.menu").click()
    nav = tab.locator("nav.sidebar")
    assert nav.is_visible()
    tab.screenshot(path=str(SHOTS / "phone-menu.png"))
    nav.get_by_role("link", name=re.compile("Composition")).first.click()
    tab.wait_for_url(re.compile(r"04_composition\.html"))
    _assert_local(requests, out)
    assert not problems, problems


def test_print_has_no_sidebar_and_shows_the_solutions(watched, book):
    out, _ = book
    open_tab, requests, problems = watched
    tab = open_tab()
    tab.goto((out / "02_laplace_mechanism.html").as_uri())
    solution = tab.locator("details.solution .highlight").first
    assert not solution.is_visible(), "folded on screen"
    tab.emulate_media(media="print")  # CDP Emulation.setEmulatedMedia
    assert not tab.locator("nav.sidebar").is_visible()
    assert not tab.locator(".topbar").is_visible()
    assert solution.is_visible(), "printed open"
    breaks = tab.evaluate(
        "() => [...document.querySelectorAll('main h2')].map(h => getComputedStyle(h).breakBefore)"
    )
    assert breaks and set(breaks) == {"page"}, breaks
    tab.screenshot(path=str(SHOTS / "print-emulated.png"))
    pdf = tab.pdf(path=str(SHOTS / "print-02_laplace_mechanism.pdf"), format="A4")
    assert pdf.startswith(b"%PDF")
    # The switch: "Print solutions" unticked leaves them out (and is remembered).
    tab.emulate_media(media="screen")
    tab.locator("#print-solutions").uncheck()
    tab.reload()
    tab.emulate_media(media="print")
    assert not solution.is_visible(), "left out when the reader unticked Print solutions"
    _assert_local(requests, out)
    assert not problems, problems


def test_dark_mode_changes_the_background(watched, book):
    out, _ = book
    open_tab, requests, problems = watched
    colours = {}
    for scheme in ("light", "dark"):
        tab = open_tab(color_scheme=scheme)
        tab.goto((out / "06_dp_sgd.html").as_uri())
        colours[scheme] = tab.evaluate(
            "() => [getComputedStyle(document.body).backgroundColor,"
            " getComputedStyle(document.body).color,"
            " getComputedStyle(document.querySelector('.highlight')).backgroundColor]"
        )
        tab.screenshot(path=str(SHOTS / f"{scheme}-chapter.png"))
    assert colours["light"][0] in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)")
    assert colours["dark"][0] != colours["light"][0]
    luminance = [int(v) for v in re.findall(r"\d+", colours["dark"][0])[:3]]
    assert sum(luminance) < 3 * 60, f"a dark background: {colours['dark']}"
    assert colours["dark"][1] != colours["light"][1] and colours["dark"][2] != colours["light"][2]
    _assert_local(requests, out)
    assert not problems, problems


def test_copy_buttons_copy_the_code(watched, book):
    (
        out,
        _,
    ) = book
    open_tab, _, problems = watched
    tab = open_tab()
    tab.add_init_script(
        "navigator.clipboard.writeText = t => { window.__copied = t; return Promise.resolve(); };"
    )
    tab.goto((out / "01_randomized_response.html").as_uri())
    blocks = tab.locator("main .highlight")
    assert (
        blocks.count() > 5 and tab.locator("main .highlight button.copy").count() == blocks.count()
    )
    block = tab.locator("main .cell.code .highlight").first
    block.locator("button.copy").click()
    tab.wait_for_function("() => window.__copied !== undefined")
    copied = tab.evaluate("window.__copied")
    assert copied == block.locator("pre").inner_text().rstrip("\n") and "Copy" not in copied
    assert block.locator("button.copy").inner_text() == "Copied"
    assert not problems, problems


def test_no_page_requests_anything_outside_the_site(watched, book):
    out, _ = book
    open_tab, requests, problems = watched
    tab = open_tab()
    pages = sorted(p.name for p in out.glob("*.html"))
    for name in pages:
        tab.goto((out / name).as_uri())
        tab.wait_for_load_state("load")
    assert len(requests) > len(pages) * 2  # pages, style sheet, script, figures
    _assert_local(requests, out)
    assert not problems, problems  # a CSP refusal is a console error
