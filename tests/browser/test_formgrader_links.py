"""A link in a student's answer never runs script in the instructor's formgrader.

nbgrader's formgrader templates copy ids from the URL into inline scripts and markup unescaped
(``var assignment_id = "{{ assignment_id }}";``), its JSON handlers answer as ``text/html`` and
its ``SubmissionFilesHandler`` follows an encoded ``..%2F``. A student needs only the server's
address: a written answer holding a link such as ``<server>/formgrader/gradebook/x%22%3B...``
is clicked by the instructor while grading it, in the instructor's logged-in Jupyter origin.

Every attack below opens such a link in Chromium, logged in as the instructor, and asserts the
safe outcome: the page's own script never ran the payload (no ``/pwned-`` request, no mark left
on the document) and nothing else happened (no file written). The same server then shows every
real formgrader page working: its tables filled by nbgrader's own scripts, no script refused by
the policy.
"""

from __future__ import annotations

import sqlite3
import urllib.parse

import nbformat
import pytest
from conftest import TOKEN, fill_answers, grade_class

STUDENT = "mallory"


def _js(n: str) -> str:
    return f"document.documentElement.dataset.pwned='{n}';fetch('/pwned-{n}')"


def _quote(text: str) -> str:
    return urllib.parse.quote(text, safe="")


# each id a URL can carry, broken out of its script string or into markup
BREAKOUTS = {
    "quote": lambda n: f'x";{_js(n)};//',
    "markup": lambda n: f"x</script><script>{_js(n)}</script>",
    "tag": lambda n: f'<img src=x onerror="{_js(n)}">',
}


def _attack_urls(sid: str) -> dict[str, str]:
    """name -> path of a link a student can write, every id kind and a few encodings."""
    urls = {}
    for style, make in BREAKOUTS.items():

        def bad(n, make=make):
            return _quote(make(n))

        urls |= {
            f"gradebook-assignment-{style}": f"/formgrader/gradebook/{bad('ga' + style)}",
            f"gradebook-notebook-{style}": f"/formgrader/gradebook/pilot/{bad('gn' + style)}",
            f"gradebook-assignment2-{style}": f"/formgrader/gradebook/{bad('gb' + style)}/pilot",
            f"manage-submissions-{style}": f"/formgrader/manage_submissions/{bad('ms' + style)}",
            f"manage-student-{style}": f"/formgrader/manage_students/{bad('mt' + style)}",
            f"manage-student2-{style}": f"/formgrader/manage_students/{bad('mu' + style)}/pilot",
            f"manage-student-assignment-{style}": f"/formgrader/manage_students/{STUDENT}/{bad('mv' + style)}",
            f"submission-{style}": f"/formgrader/submissions/{bad('sb' + style)}",
            f"navigation-{style}": f"/formgrader/submissions/{bad('sn' + style)}/next",
            f"unknown-page-{style}": f"/formgrader/{bad('un' + style)}",
            f"api-student-submissions-{style}": f"/formgrader/api/student_submissions/{bad('as' + style)}",
            f"api-student-notebooks-{style}": f"/formgrader/api/student_notebook_submissions/{bad('an' + style)}/pilot",
            f"api-notebooks-{style}": f"/formgrader/api/notebooks/{bad('ab' + style)}",
            f"api-submissions-{style}": f"/formgrader/api/submissions/{bad('ac' + style)}",
            f"api-submission-{style}": f"/formgrader/api/submission/pilot/{bad('ad' + style)}",
            f"api-assignment-{style}": f"/formgrader/api/assignment/{bad('ae' + style)}",
            f"api-grades-{style}": f"/formgrader/api/grades?submission_id={bad('af' + style)}",
            f"api-grade-{style}": f"/formgrader/api/grade/{bad('ag' + style)}",
        }
    # encoded once more, and a valid submission with a hostile query
    urls["double-encoded"] = "/formgrader/gradebook/" + _quote(_quote(BREAKOUTS["quote"]("de")))
    urls["valid-submission-hostile-index"] = (
        f"/formgrader/submissions/{sid}/next?index={_quote(BREAKOUTS['quote']('ix'))}"
    )
    urls["unicode-quote"] = "/formgrader/gradebook/" + _quote(f"x\u201c;{_js('uq')};//")
    return urls


@pytest.fixture(scope="module")
def graded(course, lab):
    """The pilot handed in by mallory and graded; her submission's id."""
    release = nbformat.read(course / "notebooks" / "pilot" / "pilot.ipynb", as_version=4)
    if not (course / "build" / "nbgrader" / "autograded" / STUDENT).exists():
        grade_class(course, "hand-in-links", STUDENT, fill_answers(release), "links.csv")
    with sqlite3.connect(course / "build" / "gradebook.db") as db:
        (sid,) = db.execute(
            "select submitted_notebook.id from submitted_notebook join submitted_assignment"
            " on submitted_notebook.assignment_id = submitted_assignment.id"
            " where submitted_assignment.student_id = ?",
            (STUDENT,),
        ).fetchone()
    return sid


def _watch(page) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url))
    page.on(
        "console", lambda m: seen.append("csp: " + m.text) if "Content Security" in m.text else None
    )
    return seen


def _mark(page) -> str | None:
    try:
        return page.evaluate("() => document.documentElement.dataset.pwned || null")
    except Exception:  # noqa: BLE001 - a download or a page that is not a document: no mark
        return None


def _log_in(page, lab) -> None:
    page.goto(f"{lab}/?token={TOKEN}")


def test_no_link_to_the_formgrader_runs_a_students_script(page, lab, graded):
    """Each link opened in a tab of its own, as a click from a written answer would."""
    seen: list[str] = []
    page.context.on("request", lambda request: seen.append(request.url))
    _log_in(page, lab)
    ran = {}
    for name, path in _attack_urls(graded).items():
        tab = page.context.new_page()
        try:
            response = tab.goto(lab + path)
        except Exception:  # noqa: BLE001 - an error Chromium shows as its own page: nothing ran
            tab.close()
            continue
        mark = _mark(tab)
        if mark:
            ran[name] = (response.status if response else None, mark)
        tab.close()
    pwned = [u for u in seen if urllib.parse.urlsplit(u).path.startswith("/pwned-")]
    assert not ran and not pwned, (ran, pwned)


def test_every_hostile_id_is_refused_before_nbgrader_renders_it(page, lab, graded):
    """Not only inert: the formgrader answers 404 and echoes nothing of the id."""
    _log_in(page, lab)
    for name, path in _attack_urls(graded).items():
        if name == "valid-submission-hostile-index":
            continue
        response = page.request.get(lab + path, max_redirects=0)
        body = response.text()
        assert response.status in (400, 404), (name, response.status)
        assert "pwned" not in body, (name, body[:300])


def _hand_in_beside(course) -> None:
    """evil.html and evil.js handed in beside the notebook, as nbgrader's collect keeps them."""
    folder = course / "build" / "nbgrader" / "submitted" / STUDENT / "pilot"
    folder.mkdir(parents=True, exist_ok=True)
    up = _quote("../../../submitted/" + STUDENT + "/pilot/evil.js")
    (folder / "evil.html").write_text(
        f'<p>hello</p><script src="{up}"></script><script src="evil.js"></script>'
    )
    (folder / "evil.js").write_text(_js("evil"))


def test_a_file_handed_in_beside_the_notebook_never_runs(page, lab, course, graded):
    _hand_in_beside(course)
    seen = _watch(page)
    _log_in(page, lab)
    base = f"{lab}/formgrader/submissions/{graded}/"
    traversals = [
        _quote("../../../submitted/" + STUDENT + "/pilot/evil.html"),
        "..%2F..%2F..%2Fsubmitted%2F" + STUDENT + "%2Fpilot%2Fevil.html",
        "..%252F..%252F..%252Fsubmitted%252F" + STUDENT + "%252Fpilot%252Fevil.html",
        "%2E%2E%2F%2E%2E%2F%2E%2E%2Fsubmitted%2F" + STUDENT + "%2Fpilot%2Fevil.html",
        "..%5C..%5C..%5Csubmitted%5C" + STUDENT + "%5Cpilot%5Cevil.html",
        "x%2F..%2F..%2F..%2F..%2Fsubmitted%2F" + STUDENT + "%2Fpilot%2Fevil.html",
    ]
    for path in traversals:
        response = page.request.get(base + path, max_redirects=0)
        assert response.status in (400, 404), (path, response.status, response.text()[:200])
        try:
            page.goto(base + path)
        except Exception:  # noqa: BLE001 - a download starts: nothing rendered
            continue
        assert not _mark(page), path
    page.goto("about:blank")
    assert not [u for u in seen if urllib.parse.urlsplit(u).path.startswith("/pwned-")]


def test_a_file_in_the_autograded_folder_is_served_sandboxed_as_an_attachment(
    page, lab, course, graded
):
    """A file that did reach the autograded folder (hand-copied, nbgrader's own autograde)."""
    folder = course / "build" / "nbgrader" / "autograded" / STUDENT / "pilot"
    (folder / "copied.html").write_text(f"<script>{_js('copied')}</script>")
    (folder / "copied.svg").write_text(
        f'<svg xmlns="http://www.w3.org/2000/svg" onload="{_js("svg")}"/>'
    )
    _log_in(page, lab)
    for name in ("copied.html", "copied.svg"):
        for method in ("get", "head"):
            response = getattr(page.request, method)(
                f"{lab}/formgrader/submissions/{graded}/{name}", max_redirects=0
            )
            if response.status in (403, 404):
                continue
            headers = response.headers
            csp = headers.get("content-security-policy", "")
            assert "sandbox" in csp and "allow-same-origin" not in csp, (name, csp)
            assert "allow-scripts" not in csp, (name, csp)
            assert headers.get("content-disposition", "").startswith("attachment"), headers
            assert headers.get("x-content-type-options") == "nosniff", headers
            assert "html" not in headers.get("content-type", "") and "svg" not in headers.get(
                "content-type", ""
            ), headers


def test_formgrader_path_argument_loads_no_configuration(page, lab, course, tmp_path):
    """``/formgrader?path=DIR`` would make nbgrader execute DIR/nbgrader_config.py."""
    hostile = tmp_path / "inbound-folder"
    hostile.mkdir()
    marker = tmp_path / "ran"
    (hostile / "nbgrader_config.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    _log_in(page, lab)
    response = page.request.get(f"{lab}/formgrader/?path={_quote(str(hostile))}", max_redirects=0)
    assert response.status in (400, 403, 404), response.status
    page.request.get(f"{lab}/formgrader/manage_assignments")
    assert not marker.exists()


REAL_PAGES = {  # page -> what its table shows once nbgrader's scripts filled it
    "manage_assignments": "pilot",
    "manage_submissions/pilot": STUDENT,
    "gradebook": "pilot",
    "gradebook/pilot": "pilot",
    "gradebook/pilot/pilot": "Submission #1",
    "manage_students": STUDENT,
    f"manage_students/{STUDENT}": "pilot",
    f"manage_students/{STUDENT}/pilot": "pilot",
}


def test_the_real_pages_still_work(page, lab, graded):
    seen = _watch(page)
    _log_in(page, lab)
    for path, shown in REAL_PAGES.items():
        page.goto(f"{lab}/formgrader/{path}")
        # nbgrader's own scripts asked the API and filled the table
        page.wait_for_function(
            "() => { const t = document.querySelector('#main-table');"
            " return t && t.rows.length && !t.innerText.includes('Loading'); }",
            timeout=60_000,
        )
        assert shown in page.locator("#main-table").inner_text(), path
    page.goto(f"{lab}/formgrader/submissions/{graded}/")
    page.locator("#notebook-container").first.wait_for(timeout=60_000)
    # the submission page's own script ran: the scores were loaded into the form
    page.wait_for_function(
        "() => window.submission_id && window.assignment_id === 'pilot'"
        " && window.notebook_id === 'pilot'",
        timeout=30_000,
    )
    assert page.evaluate("() => window.submission_id") == graded
    refused = [s for s in seen if s.startswith("csp: ")]
    assert not refused, refused


def test_the_json_api_is_never_a_page(page, lab, graded):
    """nbgrader writes its JSON as text/html: a student's string in it would be markup."""
    _log_in(page, lab)
    for path in ("api/assignments", f"api/student_submissions/{STUDENT}", "api/students"):
        response = page.request.get(f"{lab}/formgrader/{path}")
        assert response.status == 200, path
        headers = response.headers
        assert headers["content-type"].startswith("text/plain"), (path, headers)
        assert headers["x-content-type-options"] == "nosniff"
        assert "sandbox" in headers["content-security-policy"]
        assert response.json() is not None  # still JSON for nbgrader's scripts
