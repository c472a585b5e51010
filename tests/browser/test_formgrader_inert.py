"""A student's markup never runs in the instructor's formgrader.

The formgrader renders a submission in the instructor's Jupyter origin, where a script could read
``/api/contents/solutions/...`` (every hidden test) or write files. Each payload below tries to
request ``/pwned-<n>`` from that origin; the test records every request the page makes (frames
included) and asserts none was made, while the student's words stay readable:

* through ``make grade`` (the first wall: the autograded notebook is written inert);
* with a hostile notebook copied straight into the autograded folder, as nbgrader's own
  *Autograde* button or a hand-copied file would leave it (the second wall: the server extension
  renders it inert and its Content-Security-Policy allows only nbgrader's template scripts);
* as a control, the same notebook rendered by stock nbconvert and opened from disk: the payloads
  do run there, so the detector is not blind.
"""

from __future__ import annotations

import functools
import http.server
import threading

import nbformat
from conftest import TOKEN, fill_answers, grade_class

JS = "fetch('/pwned-{n}')"
MARKDOWN_PAYLOADS = {
    1: '<img src=x onerror="{js}">',
    2: '<svg onload="{js}"></svg>',
    3: '<details open ontoggle="{js}"><summary>more</summary></details>',
    4: "<script>{js}</script>",
    5: '<iframe srcdoc="<script>{js}</script>"></iframe>',
    6: '<math><mtext><img src=x onerror="{js}"></mtext></math>',
    7: '<a href="javascript:{js}">a link</a>',
    8: "[a markdown link](javascript:{js})",
    9: "[an encoded link](&#106;avascript:{js})",
    10: "<javascript:{js}>",
    11: '<object data="javascript:{js}"></object>',
}
WORDS = "Randomness protects the respondent because 3 < 4 and a&b"


MATHS = r"so $\varepsilon = \ln 3$ for the fair coin"


def _payloads() -> str:
    lines = [WORDS, MATHS]
    lines += [p.format(js=JS.format(n=n)) for n, p in MARKDOWN_PAYLOADS.items()]
    return "\n\n".join(lines)


def _hostile(nb):
    """The release ``nb`` answered, with every payload in the written answer and beyond."""
    nb = fill_answers(nb)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "why_random":
            cell.source = _payloads()
    raw = nbformat.v4.new_raw_cell(f'<img src=x onerror="{JS.format(n=20)}">')
    raw.metadata["raw_mimetype"] = "text/html"
    code = nbformat.v4.new_code_cell("1 + 1")
    code.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/html": f'<img src=x onerror="{JS.format(n=21)}">',
                "image/svg+xml": f'<svg xmlns="http://www.w3.org/2000/svg" onload="{JS.format(n=22)}"/>',
                "application/javascript": JS.format(n=23),
                "text/markdown": f'<img src=x onerror="{JS.format(n=24)}">',
                "text/plain": "2",
            },
        )
    ]
    forged = nbformat.v4.new_markdown_cell("forged metadata")
    forged.metadata["nbgrader"] = {
        "grade": True, "solution": True, "points": 1, "schema_version": 3,
        "grade_id": f'x" autofocus onfocus="{JS.format(n=25)}" y="',
    }
    nb.cells += [raw, code, forged]
    return nb


def _watch(page) -> list[str]:
    """Every URL the page requests, and (as "csp: ...") every Content-Security-Policy report."""
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url))
    page.on("console", lambda m: seen.append("csp: " + m.text) if "Content Security" in m.text else None)
    return seen


def _pwned(seen: list[str]) -> list[str]:
    return [url for url in seen if "/pwned-" in url]


def _grade(course, nb) -> None:
    grade_class(course, "hand-in-hostile", "mallory", nb, "hostile.csv")


def _open_submission(page, lab, student: str) -> None:
    page.goto(f"{lab}/?token={TOKEN}")
    page.goto(f"{lab}/formgrader/gradebook/pilot/pilot")
    links = page.locator("a", has_text="Submission #")
    links.first.wait_for(timeout=60_000)
    for index in range(links.count()):
        links.nth(index).click()
        page.locator("#notebook-container").first.wait_for(timeout=60_000)
        if student in page.evaluate("() => document.querySelector('.name-shown')?.textContent || ''"):
            return
        page.go_back()
        links.first.wait_for(timeout=60_000)
    raise AssertionError(f"no submission of {student} in the formgrader")


def _assert_inert(page, seen) -> None:
    page.wait_for_timeout(1500)  # let every onload/onerror/ontoggle fire
    text = page.locator("#notebook").first.inner_text().replace("\u2060", "")
    assert WORDS in text, "the student's words must stay readable"
    assert "<img src=x onerror=" in text, "the markup is shown as the student's text"
    # maths rendered offline as MathML (no MathJax from a CDN)
    assert page.locator("#notebook-container math").count() >= 1
    hrefs = page.evaluate(
        "() => [...document.querySelectorAll('#notebook-container a[href]')]"
        ".map(a => new URL(a.href).protocol)"
    )
    assert set(hrefs) <= {"http:", "https:"}, hrefs  # no javascript: link left to click
    assert not _pwned(seen), _pwned(seen)
    # nothing was refused either: nbgrader's own scripts are allowed, and no student markup was
    # left for the policy to stop
    assert not [s for s in seen if s.startswith("csp: ")], [s for s in seen if s.startswith("csp")]


def test_payloads_in_a_graded_submission_stay_inert(page, lab, course):
    release = nbformat.read(course / "notebooks" / "pilot" / "pilot.ipynb", as_version=4)
    _grade(course, _hostile(release))
    seen = _watch(page)
    _open_submission(page, lab, "mallory")
    _assert_inert(page, seen)


def test_a_hostile_notebook_copied_into_autograded_stays_inert(page, lab, course):
    """The second wall: a notebook that never went through make grade's inert writer."""
    release = nbformat.read(course / "notebooks" / "pilot" / "pilot.ipynb", as_version=4)
    if not (course / "build" / "nbgrader" / "autograded" / "mallory").exists():
        _grade(course, _hostile(release))
    target = course / "build" / "nbgrader" / "autograded" / "mallory" / "pilot" / "pilot.ipynb"
    nbformat.write(_hostile(release), str(target))  # the raw payloads, not made inert
    seen = _watch(page)
    csp: list[str] = []

    def record(response) -> None:
        if "/formgrader/submissions/" in response.url:
            csp.append(response.headers.get("content-security-policy", ""))

    page.on("response", record)
    _open_submission(page, lab, "mallory")
    _assert_inert(page, seen)
    scripts = [p.split("script-src")[1].split(";")[0] for p in csp if "script-src" in p]
    assert scripts and all("'unsafe-inline'" not in s for s in scripts), csp


def test_the_detector_sees_the_payloads_run_without_the_walls(page, course, tmp_path):
    """Control: stock nbconvert's page of the same notebook, served plainly, runs them."""
    from nbconvert import HTMLExporter

    release = nbformat.read(course / "notebooks" / "pilot" / "pilot.ipynb", as_version=4)
    body, _ = HTMLExporter(template_name="classic").from_notebook_node(_hostile(release))
    (tmp_path / "stock.html").write_text(body, encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        seen = _watch(page)
        page.goto(f"http://127.0.0.1:{server.server_port}/stock.html")
        page.wait_for_timeout(1500)
    finally:
        server.shutdown()
    fired = {url.rsplit("-", 1)[1] for url in _pwned(seen)}
    assert {"1", "2", "3", "4", "5", "6"} <= fired, fired
