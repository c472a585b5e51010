"""The formgrader guard against links a student writes for the instructor, fast.

The Chromium tests (``tests/browser/test_formgrader_links.py``) open the links; these check the
parts: nbgrader's templates render every value outside their inline scripts, the policy comes
from made-up values and never from the page, every formgrader handler nbgrader ships is known to
the guard, and ids and paths are refused by the rules the docs state.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

pytest.importorskip("nbgrader")

from jinja2 import Environment, FileSystemLoader  # noqa: E402
from nbgrader.server_extensions.formgrader import apihandlers, handlers  # noqa: E402

from coursetools.grading.classroom import formgrader_guard as guard  # noqa: E402

HOSTILE = (
    "x\";fetch('/pwned')//</script><script>fetch('/pwned')</script><img src=x onerror=alert(1)>"
)


def _script_src(policy: str) -> set[str]:
    return set(policy.split("script-src ")[1].split(";")[0].split())


def _inline(page: str) -> list[str]:
    parser = guard._InlineCode()
    parser.feed(page)
    return parser.scripts + parser.handlers


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader([handlers.template_path]))
    guard._guard_environment(env)
    env.autoescape = True
    return env


# formgrade_404.tpl imports a "formgrade_macros.tpl" nbgrader 0.9 does not ship: it never renders
TEMPLATES = sorted(
    p.name for p in Path(handlers.template_path).glob("*.tpl") if p.name != "formgrade_404.tpl"
)


@pytest.mark.parametrize("name", TEMPLATES)
def test_no_value_reaches_an_inline_script_of_nbgraders_pages(name):
    """Every value nbgrader passes in, hostile: no script or handler holds it; the policy allows
    exactly the page's scripts, computed without reading the page."""
    env = _environment()
    template = env.get_template(name)
    values = {
        k: HOSTILE
        for k in (
            "base_url",
            "assignment_id",
            "notebook_id",
            "student_id",
            "course_dir",
            "url_prefix",
            "default_timezone",
            "exchange",
            "current_config",
        )
    }
    values["resources"] = {
        "notebook_id": HOSTILE,
        "index": 0,
        "total": 1,
        "filename": HOSTILE,
        "base_url": HOSTILE,
        "submission_id": HOSTILE,
    }
    page = template.render(**values)
    assert not [s for s in _inline(page) if "pwned" in s or "alert" in s], name
    assert "<img src=x" not in page and "<script>fetch" not in page  # printed as text
    scripts, events = guard.script_hashes(page)
    policy = guard.template_policy(template.render, values)
    assert scripts | events <= _script_src(policy), name
    # the same hashes whatever the values: a page of real ids needs nothing more
    plain = template.render(**{**values, "assignment_id": "ps1", "base_url": ""})
    assert set().union(*guard.script_hashes(plain)) <= _script_src(policy)


def test_a_script_whose_text_varies_with_a_value_is_not_allowed():
    env = Environment(loader=FileSystemLoader([]))
    page = env.from_string('<script>var n = {{ n }};</script><script>var s = "{{ s }}";</script>')
    policy = guard.template_policy(page.render, {"n": "1", "s": "x"})
    assert guard._sha("var n = 1;") not in _script_src(policy)
    rewritten = env.from_string(
        guard.constant_scripts(page_source := ('<script>var s = "{{ s }}";</script>'))
    )
    assert page_source != guard.constant_scripts(page_source)
    out = rewritten.render(s=HOSTILE)
    assert '<script type="application/json">["x\\"' in out and "\\u003c/script\\u003e" in out
    assert len(guard.script_hashes(out)[0]) == 1
    assert guard.script_hashes(out)[0] == guard.script_hashes(rewritten.render(s="ps1"))[0]


def test_the_submission_page_policy_ignores_the_resources_and_the_notebook():
    from nbconvert import HTMLExporter

    exporter = guard._GuardedExporter(
        HTMLExporter(template_name="formgrade", extra_template_basedirs=[handlers.template_path])
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("<script>steal()</script>")])
    resources = {
        "assignment_id": HOSTILE,
        "notebook_id": HOSTILE,
        "submission_id": HOSTILE,
        "index": 0,
        "total": 1,
        "base_url": "",
        "student": HOSTILE,
        "last_name": HOSTILE,
        "first_name": None,
        "notebook_path": HOSTILE,
    }
    page, _ = exporter.from_notebook_node(nb, resources=dict(resources))
    allowed = _script_src(exporter.last_policy)
    scripts = _inline(page)
    assert not [s for s in scripts if "pwned" in s or "steal" in s]
    assert {guard._sha(s) for s in scripts} <= allowed
    # nbgrader's own: the ids, toggle_name, the data-link script
    assert sum("submission_id" in s for s in scripts) == 1


def _routes():
    for module in (handlers, apihandlers):
        for pattern, cls, *_rest in module.default_handlers:
            yield pattern, cls


def test_the_guard_knows_every_formgrader_handler_and_its_ids():
    """A handler a new nbgrader adds fails here (and is refused at run time) until listed."""
    from nbgrader.server_extensions.formgrader.base import BaseHandler

    kinds = guard._id_kinds()
    for pattern, cls in _routes():
        if not issubclass(cls, BaseHandler):
            continue  # tornado's StaticFileHandler: nbgrader's own files, '..' refused
        assert cls in kinds, cls
        groups = re.compile(pattern).groups
        assert len(kinds[cls]) == groups, (pattern, kinds[cls])


@pytest.mark.parametrize(
    "value",
    [
        "ps1",
        "01_randomized_response",
        "ada",
        "a.b",
        "Ünïcode",
        "f130060edb8f4c8d81d4be945413f5fe",
    ],
)
def test_ordinary_ids_pass(value):
    assert guard.unsafe_id(value) is None


@pytest.mark.parametrize(
    "value",
    [
        "",
        "x" * 101,
        'x"',
        "x'",
        "x<",
        "x>",
        "x&",
        "x`",
        "x\\",
        "x/y",
        "..",
        "a..b",
        "x%22",
        "x\n",
        "x\u2028",
        "x\x00",
        " ps1",
        "ps1 ",
        3,
        None,
    ],
)
def test_hostile_ids_are_refused(value):
    assert guard.unsafe_id(value)


@pytest.mark.parametrize(
    "path,dots",
    [
        ("/formgrader/submissions/s/fig.png", False),
        ("/formgrader/submissions/s/a..b.png", False),
        ("/formgrader/submissions/s/../x", True),
        ("/formgrader/submissions/s/..%2Fx", True),
        ("/formgrader/submissions/s/..%252Fx", True),
        ("/formgrader/submissions/s/%2E%2E%2Fx", True),
        ("/formgrader/submissions/s/%252E%252E/x", True),
        ("/formgrader/submissions/s/..%5Cx", True),
        ("/formgrader/submissions/s/..\\x", True),
        ("/formgrader/submissions/s/x%00.png", True),
        ("/formgrader/x/%" + "25" * 6 + "2E%" + "25" * 6 + "2E", True),
    ],
)
def test_dot_segments_in_any_encoding(path, dots):
    assert guard.has_dot_segment(path) is dots


class _Gradebook:
    def __init__(self):
        from nbgrader.api import MissingEntry

        self.missing = MissingEntry

    def _find(self, ok, value):
        if value not in ok:
            raise self.missing()
        return SimpleNamespace()

    def find_assignment(self, a):
        return self._find({"pilot"}, a)

    def find_student(self, s):
        return self._find({"ada"}, s)

    def find_notebook(self, n, a):
        return self._find({"pilot"}, n)

    def find_submission_notebook_by_id(self, i):
        return self._find({"abc123"}, i)

    def find_grade_by_id(self, i):
        return self._find({"g1"}, i)

    def find_comment_by_id(self, i):
        return self._find({"c1"}, i)


def _handler(cls, args=(), *, method="GET", query=None, path="/formgrader/x", tmp_path=None):
    """An instance of nbgrader's ``cls`` as tornado hands it a request, on a made-up gradebook."""
    root = tmp_path or Path("/nonexistent")
    coursedir = SimpleNamespace(
        source_directory="source",
        release_directory="release",
        submitted_directory="submitted",
        format_path=lambda step, student, assignment: str(root / step / student / assignment),
    )
    gradebook = _Gradebook()
    stand_in = type(
        cls.__name__,
        (cls,),
        {
            "gradebook": property(lambda self: gradebook),
            "coursedir": property(lambda self: coursedir),
        },
    )
    handler = stand_in.__new__(stand_in)
    handler.request = SimpleNamespace(method=method, path=path, query_arguments=query or {})
    handler.path_args, handler.path_kwargs = list(args), {}
    return handler


def _check(handler) -> bool:
    try:
        guard._check_request(handler)
    except guard._HTTP404:
        return False
    return True


@pytest.mark.parametrize(
    "cls,args,ok",
    [
        (handlers.GradebookNotebooksHandler, ["pilot"], True),
        (handlers.GradebookNotebooksHandler, ["pilot2"], False),
        (handlers.GradebookNotebooksHandler, ['x";alert(1)//'], False),
        (handlers.GradebookNotebookSubmissionsHandler, ["pilot", "pilot"], True),
        (handlers.GradebookNotebookSubmissionsHandler, ["pilot", "x</script>"], False),
        (handlers.ManageSubmissionsHandler, ["pilot"], True),
        (handlers.ManageStudentsAssignmentsHandler, ["ada"], True),
        (handlers.ManageStudentsAssignmentsHandler, ["eve"], False),
        (handlers.ManageStudentNotebookSubmissionsHandler, ["ada", "x'"], False),
        (handlers.SubmissionHandler, ["abc123"], True),
        (handlers.SubmissionHandler, ["abc124"], False),
        (handlers.SubmissionFilesHandler, ["abc123/fig.png"], True),
        (handlers.SubmissionFilesHandler, ["nope/fig.png"], False),
        (apihandlers.GradeHandler, ["g1"], True),
        (apihandlers.GradeHandler, ["<g1>"], False),
        (apihandlers.CommentHandler, ["c2"], False),
        (apihandlers.StudentSubmissionCollectionHandler, ["<script>"], False),
        (apihandlers.AutogradeHandler, ["pilot", "ada"], True),
    ],
)
def test_ids_are_checked_against_the_gradebook(cls, args, ok):
    assert _check(_handler(cls, args)) is ok


def test_a_student_handed_in_but_not_graded_yet_is_known(tmp_path):
    (tmp_path / "submitted" / "newcomer").mkdir(parents=True)
    assert _check(_handler(apihandlers.AutogradeHandler, ["pilot", "newcomer"], tmp_path=tmp_path))
    assert not _check(_handler(apihandlers.AutogradeHandler, ["pilot", "ghost"], tmp_path=tmp_path))


def test_a_new_assignment_or_student_is_created_only_under_a_safe_name():
    cls = apihandlers.AssignmentHandler
    assert _check(_handler(cls, ["ps2"], method="PUT"))
    assert not _check(_handler(cls, ["..%2F..%2Fetc"], method="PUT"))
    assert not _check(_handler(cls, ['ps2"'], method="PUT"))
    assert not _check(_handler(cls, ["ps2"]))  # GET: not in the gradebook
    assert _check(_handler(apihandlers.StudentHandler, ["bob"], method="PUT"))


def test_query_arguments_are_checked():
    fg = handlers.FormgraderHandler
    assert _check(_handler(fg))
    assert not _check(_handler(fg, query={"path": [b"/srv/exchange/inbound/x"]}))
    nav = handlers.SubmissionNavigationHandler
    assert _check(_handler(nav, ["abc123", "next"], query={"index": [b"3"]}))
    assert not _check(_handler(nav, ["abc123", "next"], query={"index": [b'3"><b>']}))
    assert not _check(_handler(nav, ["abc123", "sideways"]))
    grades = apihandlers.GradeCollectionHandler
    assert _check(_handler(grades, query={"submission_id": [b"abc123"]}))
    assert not _check(_handler(grades, query={"submission_id": [b"<x>"]}))


def test_a_dot_segment_in_the_request_path_is_refused_whatever_the_handler():
    assert not _check(
        _handler(handlers.GradebookAssignmentsHandler, path="/formgrader/gradebook/..%2F..%2Fapi")
    )


def test_policies_for_what_is_not_a_page_run_nothing():
    for value in (guard.JSON_POLICY, guard.FILE_POLICY, guard.CLASS_PAGE_POLICY):
        directives = dict(
            d.strip().split(" ", 1) if " " in d.strip() else (d.strip(), "")
            for d in value.split(";")
        )
        assert directives["default-src"] == "'none'" and "sandbox" in directives
        assert "allow-scripts" not in value and "allow-same-origin" not in value
        assert "script-src" not in value
