"""How tests are written: the grading plan and the linter, on small notebooks and on the course."""

from __future__ import annotations

import inspect
from pathlib import Path

import nbformat
import pytest

import dplib
from coursetools.authoring import rules as authoring
from coursetools.authoring.release import find_assignments
from coursetools.grading.sandboxed import bans

ROOT = Path(__file__).resolve().parents[3]


def _cell(text, **meta):
    cell = nbformat.v4.new_code_cell(text)
    if meta:
        cell.metadata["nbgrader"] = {"schema_version": 3, "task": False, **meta}
    return cell


def _notebook(test_source: str):
    return nbformat.v4.new_notebook(
        cells=[
            _cell("%matplotlib inline\nimport numpy as np\nLN3 = np.log(3)", grade_id="setup", locked=True, grade=False, solution=False),
            _cell("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\nanswer = 3", grade_id="f", solution=True, grade=False, locked=False),
            _cell(test_source, grade_id="f_tests", grade=True, solution=False, locked=True, points=2),
        ]
    )


def test_the_plan_names_prelude_answers_tests_and_bans():
    nb = _notebook('assert f(1) == 1\n### BEGIN HIDDEN TESTS\nfrom coursetools.authoring.hidden_tests import forbid\nforbid("dplib.rr_estimate")\n### END HIDDEN TESTS')
    plan = authoring.plan(nb)
    assert plan.prelude == ["import numpy as np"]
    assert plan.answers == ["f", "answer"]
    assert plan.bans == ["dplib.rr_estimate"]
    assert plan.tests["f_tests"].hidden_lines == frozenset({3, 4})
    assert authoring.lint(nb) == []


@pytest.mark.parametrize(
    ("test_source", "complaint"),
    [
        ("assert f(LN3) > 1", "'LN3' is not available"),
        ("### BEGIN HIDDEN TESTS\nwith forbidden_calls(dplib.rr_estimate):\n    f(1)\n### END HIDDEN TESTS", "forbidden_calls is gone"),
        ("from coursetools.authoring.hidden_tests import forbid\nforbid('dplib.rr_estimate')", "belongs in the hidden part"),
        ("### BEGIN HIDDEN TESTS\nfrom coursetools.authoring.hidden_tests import forbid\nforbid('dplib.no_such')\n### END HIDDEN TESTS", "dplib has no"),
        ("### BEGIN HIDDEN TESTS\nfrom coursetools.authoring.hidden_tests import forbid\nforbid('numpy.mean')\n### END HIDDEN TESTS", "dplib function names"),
        ("results = f.map([(1,), (2,)])", "write map_calls(f, arg_tuples, kwargs=None)"),
        ("### BEGIN HIDDEN TESTS\nx = f.repeat(3, 1)\n### END HIDDEN TESTS", "write repeat(f, n, *args)"),
        # a method of an object the test built from an answer is a proxy too
        ("### BEGIN HIDDEN TESTS\nacc = f(1)\nx = acc.spend.repeat(3, 1)\n### END HIDDEN TESTS", "write repeat(acc.spend, n"),
        ("### BEGIN HIDDEN TESTS\nfor g in [f]:\n    g.map([1])\n### END HIDDEN TESTS", "'from coursetools.authoring.hidden_tests import map_calls'"),
        ("f(1)", "must not be an answer's value"),
        ("### BEGIN HIDDEN TESTS\nassert f(2) == 2\n### END HIDDEN TESTS", "a hidden assert needs a message"),
    ],
)
def test_each_rule_is_enforced(test_source, complaint):
    problems = authoring.lint(_notebook(test_source))
    assert any(complaint in p for p in problems), problems


def test_batched_calls_in_free_function_form_and_other_map_methods_pass():
    nb = _notebook(
        "import numpy as np\nfrom coursetools.authoring.hidden_tests import map_calls, repeat\n"
        "rows = np.repeat([1, 2], 2)\ntable = {1: 2}\nnames = list(map(str, rows))\n"
        "assert repeat(f, 2, 1) == [1, 1]\nassert map_calls(f, [(1,), (2,)]) == [1, 2]\n"
        "assert np.char.mod('%d', rows).tolist()\ncopy = dict(table)\ncopy.get(1)"
    )
    assert authoring.lint(nb) == []


@pytest.mark.parametrize("name", find_assignments(ROOT / "solutions") + ["pilot"])
def test_every_course_notebook_follows_the_rules(name):
    base = ROOT / "tests" / "fixtures" / "solutions" if name == "pilot" else ROOT / "solutions"
    nb = nbformat.read(base / name / f"{name}.ipynb", as_version=4)
    assert authoring.lint(nb) == []
    plan = authoring.plan(nb)
    assert plan.tests, "every notebook has autograded tests"


def test_the_grading_copy_of_dplib_lacks_the_banned_code(tmp_path):
    copy = bans.grading_dplib(["dplib.rr_estimate", "dplib.mechanisms.rr_confidence.rr_halfwidth"], tmp_path)
    original = Path(inspect.getsourcefile(dplib.rr_estimate))
    stubbed = (copy / original.relative_to(bans.real_dplib_dir())).read_text()
    real = original.read_text()
    body = inspect.getsource(dplib.rr_estimate)
    assert body in real and body not in stubbed
    assert "ForbiddenCallError" in stubbed
    assert stubbed.count("\n") == real.count("\n")  # tracebacks keep their line numbers
    untouched = copy / "mechanisms" / "laplace.py"
    assert untouched.read_text() == (bans.real_dplib_dir() / "mechanisms" / "laplace.py").read_text()
    assert bans.grading_dplib([], tmp_path / "none") is None


# ------------------------------------------------------------------ read by a screen reader too


@pytest.mark.parametrize(
    ("markdown", "complaint"),
    [
        ("## Starts at h2", "first heading is level 2"),
        ("# Title\n\n### A jump", "jumps from level 1 to 3"),
        ("# T\n\nSee [here](https://example.org).", "does not say where it goes"),
        ("# T\n\nSee [https://example.org](https://example.org).", "does not say where it goes"),
        ("# T\n\n| | b |\n|---|---|\n| 1 | 2 |", "leaves a column unnamed"),
        ("# T\n\n![](figure.png)", "has no description"),
    ],
)
def test_each_readability_rule_can_fail(markdown, complaint):
    from coursetools.authoring.readable import readability_problems

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(markdown)])
    problems = readability_problems(nb)
    assert any(complaint in p for p in problems), problems


def test_readable_markdown_passes_and_code_blocks_are_not_headings():
    from coursetools.authoring.readable import readability_problems

    good = "# T\n\n## Goals\n\n```python\n# a comment, not a heading\n```\n\n### Detail\n\n" \
           "Read [Dwork and Roth's book](https://example.org).\n\n| eps | error |\n|---|---|\n| 1 | 2 |"
    assert readability_problems(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(good)])) == []


@pytest.mark.parametrize("name", find_assignments(ROOT / "solutions") + ["pilot"])
def test_every_course_notebook_reads_well_with_a_screen_reader(name):
    """Headings without gaps, links that say where they go, tables with headers, images with text."""
    from coursetools.authoring.readable import readability_problems

    base = ROOT / "tests" / "fixtures" / "solutions" if name == "pilot" else ROOT / "solutions"
    nb = nbformat.read(base / name / f"{name}.ipynb", as_version=4)
    assert readability_problems(nb) == []
