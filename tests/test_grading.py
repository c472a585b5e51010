"""Batch grading survives a hostile class, and gives the same grades however it is fanned out.

The class is generated from the pilot fixture (tests/fixtures/solutions/pilot: three autograded
exercises worth 2 + 2 + 3 = 7 points and a written answer graded by hand) by
examples/make_class.py. Expected autograded scores, out of 7:

=============  =====  ===========================================================================
student        score  why
=============  =====  ===========================================================================
ada_full       7      every answer right
bob_partial    4      clamp and validate_epsilon right (2 + 2), rr_estimate left as the stub
cy_blank       0      the release notebook untouched
h_loop         5      ``while True: pass`` in the clamp cell: that cell times out, clamp is never
                      defined (-2); the kernel is restarted and the rest is graded
h_exit         5      ``os._exit(1)`` in the validate_epsilon cell: the kernel dies (-2), restarted
h_oom          4      rr_estimate allocates 512 GiB: RLIMIT_AS turns it into a MemoryError (-3)
h_tamper       3      clamp wrong with its test emptied (restored: -2), validate_epsilon wrong with
                      its test deleted (put back: -2), rr_estimate right with its test pasted
                      twice (duplicate grade_id, the copy ``assert True``): counted once, +3
h_patch        0      all wrong, with numpy.testing / np.allclose / builtins.abs / forbidden_calls
                      patched, a ``__code__`` swap, a re-patching thread and IPython's exception
                      display disabled: the guard restores them all; validate_epsilon calls
                      dplib's checker (ForbiddenCallError)
h_warn         7      right, but warns and prints on stderr inside the tests (raw nbgrader: 0)
h_badjson      0      not JSON: reported, the class goes on
h_missing      0      no notebook in the folder: reported
h_symlink      0      the "notebook" is a symbolic link to the source notebook: not followed
h_snoop        7      right, but first tries to read solutions/, the source notebook, other
                      students' folders and to write a grade file: the sandbox shows it none of
                      them (a leak would fail clamp's tests: 5)
=============  =====  ===========================================================================
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import html
import importlib.util
import io
import os
from pathlib import Path

import nbformat
import pytest

from coursetools import cli, feedback, sandbox
from coursetools.grade import Job, Options, grade_job, merge
from coursetools.release import notebook_bytes, release_notebook

ROOT = Path(__file__).resolve().parents[1]
PILOT_ROOT = ROOT / "tests" / "fixtures" / "solutions"
PILOT = PILOT_ROOT / "pilot" / "pilot.ipynb"

EXPECTED = {
    "ada_full": 7,
    "bob_partial": 4,
    "cy_blank": 0,
    "h_loop": 5,
    "h_exit": 5,
    "h_oom": 4,
    "h_tamper": 3,
    "h_patch": 0,
    "h_warn": 7,
    "h_badjson": 0,
    "h_missing": 0,
    "h_snoop": 7,
    "h_symlink": 0,
}
WITH_PROBLEMS = {"h_loop", "h_exit", "h_tamper", "h_badjson", "h_missing", "h_symlink"}
OPTIONS = dict(cell_timeout=6.0, notebook_timeout=120.0)


def _make_class_module():
    spec = importlib.util.spec_from_file_location("make_class", ROOT / "examples" / "make_class.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """The pilot's class, regular and hostile students, and the canaries the snoop aims at."""
    base = tmp_path_factory.mktemp("grading")
    out = base / "class"
    canary = base / "instructor" / "grades.csv"
    canary.parent.mkdir()
    canary.write_text("student,assignment,score,max_score\n")
    module = _make_class_module()
    module.make_class(PILOT_ROOT, out)
    module.make_hostile(
        PILOT,
        out,
        probe_paths=[
            str(PILOT),
            str(ROOT / "solutions"),
            str(PILOT_ROOT),
            str(out),
            str(canary),
            str(Path.home()),
        ],
    )
    return out, canary


@pytest.fixture(scope="module")
def jobs(klass):
    out, canary = klass
    options = Options(**OPTIONS, hide=cli.hide_list(out, canary.parent))
    found, warnings = cli.collect_jobs(out, PILOT_ROOT, options)
    assert not warnings
    return found


@pytest.fixture(scope="module")
def parallel(jobs):
    return cli.grade_class(jobs, workers=2, stream=io.StringIO())


def _by_student(results):
    return {r["student"]: r for r in results}


def test_every_student_gets_the_expected_grade(parallel):
    got = {s: r["score"] for s, r in _by_student(parallel).items()}
    expected = dict(EXPECTED)
    if sandbox.detect_mode() == "rlimit":  # no isolation here: the snoop sees the files
        expected["h_snoop"] = got["h_snoop"]
    assert got == expected
    assert all(r["max_score"] == 7 and r["manual_max"] == 1 for r in parallel)


def test_hostile_submissions_are_reported_with_a_reason(parallel):
    results = _by_student(parallel)
    flagged = {s for s, r in results.items() if r["problems"] or r["notes"]}
    assert flagged == WITH_PROBLEMS
    text = " ".join(results["h_loop"]["problems"])
    assert "timed out" in text
    assert "kernel died" in " ".join(results["h_exit"]["problems"])
    assert "not a valid notebook" in " ".join(results["h_badjson"]["problems"])
    assert "no notebook" in " ".join(results["h_missing"]["problems"])
    notes = " ".join(results["h_tamper"]["notes"])
    assert "edited" in notes and "deleted" in notes and "more than once" in notes


def test_failures_say_why(parallel):
    results = _by_student(parallel)
    messages = {c["grade_id"]: c["message"] for c in results["h_oom"]["cells"]}
    assert messages["rr_estimate_tests"].startswith("MemoryError")
    messages = {c["grade_id"]: c["message"] for c in results["h_patch"]["cells"]}
    assert messages["validate_epsilon_tests"].startswith("ForbiddenCallError")
    assert all(c["status"] == "failed" for c in results["h_patch"]["cells"] if c["kind"] == "auto")


def test_the_sandbox_hides_instructor_files_and_nothing_is_overwritten(parallel, klass):
    _, canary = klass
    snoop = _by_student(parallel)["h_snoop"]
    if snoop["sandbox"] == "rlimit":
        pytest.skip("neither bubblewrap nor root namespaces here: nothing is hidden (rlimit mode)")
    assert snoop["score"] == 7, snoop["cells"]
    assert canary.read_text() == "student,assignment,score,max_score\n"
    assert b"h_snoop" not in PILOT.read_bytes()


@pytest.mark.skipif(
    os.geteuid() != 0 or sandbox.detect_mode() != "bwrap",
    reason="the fallback is tested where bubblewrap is the default",
)
def test_setuid_fallback_also_hides_instructor_files(jobs, klass):
    _, canary = klass
    job = next(j for j in jobs if j.student == "h_snoop")
    job = dataclasses.replace(
        job, options=Options(**OPTIONS, sandbox="setuid", hide=job.options.hide)
    )
    result = grade_job(job)
    assert result["sandbox"] == "setuid" and result["score"] == 7, result["cells"]
    assert canary.read_text() == "student,assignment,score,max_score\n"


def test_serial_grading_gives_the_same_grades(jobs, parallel):
    serial = cli.grade_class(jobs, workers=1, stream=io.StringIO())

    def key(rs):
        return {
            (r["student"], r["assignment"]): (
                r["score"],
                [(c["grade_id"], c["points"]) for c in r["cells"]],
            )
            for r in rs
        }

    assert key(serial) == key(parallel)


def test_dask_local_cluster_gives_the_same_grades(jobs, parallel):
    distributed = pytest.importorskip("distributed")
    subset = [j for j in jobs if j.student in ("ada_full", "h_tamper", "h_badjson")]
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as cluster:
        results = cli.grade_class(subset, scheduler=cluster, stream=io.StringIO())
    expected = _by_student(parallel)
    assert {r["student"]: r["score"] for r in results} == {
        j.student: expected[j.student]["score"] for j in subset
    }


def test_grades_csv_feedback_and_summary(parallel, tmp_path):
    grades = tmp_path / "out" / "grades.csv"
    cli.write_outputs(parallel, grades, tmp_path / "out" / "feedback")
    rows = list(csv.DictReader(grades.open()))
    assert list(rows[0]) == ["student", "assignment", "score", "max_score"]
    assert {r["student"]: float(r["score"]) for r in rows} == EXPECTED
    source = nbformat.read(PILOT, as_version=4)
    release = release_notebook(source, "pilot")
    shown = {line.strip() for cell in release.cells for line in cell.source.splitlines()}
    hidden = [
        line.strip()
        for cell in source.cells
        if cell.metadata.get("nbgrader", {}).get("grade")
        for line in _hidden_part(cell.source)
        if len(line.strip()) > 10 and line.strip() not in shown
    ]
    assert len(hidden) >= 6  # the pilot does have hidden tests
    for student in EXPECTED:
        page = (tmp_path / "out" / "feedback" / student / "pilot.html").read_text()
        assert "Autograded score" in page
        for line in hidden:
            assert html.escape(line) not in page, (student, line)
    page = (tmp_path / "out" / "feedback" / "h_oom" / "pilot.html").read_text()
    assert "MemoryError" in page and "rr_estimate_tests" in page
    table = feedback.summary_table(parallel)
    assert "h_patch" in table and "0/7" in table
    assert "h_loop/pilot: cell 'clamp' timed out" in feedback.problem_report(parallel)


def _hidden_part(text):
    lines = text.splitlines()
    if "### BEGIN HIDDEN TESTS" not in lines:
        return []
    return lines[lines.index("### BEGIN HIDDEN TESTS") + 1 : lines.index("### END HIDDEN TESTS")]


# ------------------------------------------------------------------------- merge, without kernels


def _pilot():
    source = nbformat.read(PILOT, as_version=4)
    return source, release_notebook(source, "pilot")


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _ids(nb):
    return [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]


def test_merge_puts_deleted_tests_back_in_place_and_drops_copies():
    source, release = _pilot()
    student = copy.deepcopy(release)
    student.cells.remove(_cell(student, "clamp_tests"))
    twin = copy.deepcopy(_cell(student, "rr_estimate_tests"))
    twin.source = "assert True"
    student.cells.append(twin)
    merged, notes = merge(source, release, student)
    assert _ids(merged) == _ids(source)
    assert len(notes) == 2
    src_tests = {
        c.metadata.nbgrader.grade_id: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    }
    for cell in merged.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in src_tests and not cell.metadata.nbgrader.get("solution"):
            assert cell.source == src_tests[gid]  # hidden tests are back


def test_merge_keeps_student_cells_and_answers_but_never_their_points():
    source, release = _pilot()
    student = copy.deepcopy(release)
    answer = _cell(student, "clamp")
    answer.source = "def clamp(x, lower, upper):\n    return 0"
    answer.metadata.nbgrader.update(points=100, grade=True)
    student.cells.insert(0, nbformat.v4.new_code_cell("helper = 1"))
    fake = nbformat.v4.new_code_cell("pass")
    fake.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "bonus",
        "points": 50,
        "solution": False,
    }
    student.cells.append(fake)
    merged, notes = merge(source, release, student)
    assert merged.cells[0].source == "helper = 1"
    clamp = _cell(merged, "clamp")
    assert clamp.source.endswith("return 0") and not clamp.metadata.nbgrader.get("points")
    assert "bonus" not in _ids(merged) and any("bonus" in n for n in notes)


def test_a_missing_submission_scores_zero_without_running_anything():
    source, release = _pilot()
    job = Job(
        student="x",
        assignment="pilot",
        source=nbformat.writes(source),
        release=notebook_bytes(release).decode(),
        submission=None,
    )
    result = grade_job(job)
    assert result["score"] == 0 and result["max_score"] == 7 and result["problems"]


def test_a_test_cell_that_ends_the_notebook_is_graded():
    # Regression: injected guard cells must never take the place of the notebook's last cell.
    source, _ = _pilot()
    last = [c.metadata.get("nbgrader", {}).get("grade_id") for c in source.cells].index(
        "rr_estimate_tests"
    )
    source.cells = source.cells[: last + 1]
    release = release_notebook(source, "pilot")
    full = _make_class_module()._answered(source, release, 1.0)
    job = Job(
        student="x",
        assignment="pilot",
        source=nbformat.writes(source),
        release=notebook_bytes(release).decode(),
        submission=notebook_bytes(full),
        options=Options(**OPTIONS),
    )
    result = grade_job(job)
    assert result["score"] == 7, result["cells"]
    assert result["feedback"][-1]["grade_id"] == "rr_estimate_tests"


def _tiny_assignment():
    """An assignment whose hidden test trusts dplib.testing (imported by the read-only cell)."""

    def cell(kind, text, **meta):
        c = nbformat.v4.new_code_cell(text)
        if meta:
            c.metadata["nbgrader"] = {"schema_version": 3, "task": False, **meta}
        return c

    source = nbformat.v4.new_notebook(
        cells=[
            cell(
                "code",
                "import numpy as np\nfrom dplib.testing import assert_mean",
                grade_id="setup",
                locked=True,
                grade=False,
                solution=False,
            ),
            cell(
                "code",
                "def coin(n, rng):\n    ### BEGIN SOLUTION\n"
                "    return rng.integers(0, 2, size=n)\n    ### END SOLUTION",
                grade_id="coin",
                solution=True,
                grade=False,
                locked=False,
            ),
            cell(
                "code",
                "### BEGIN HIDDEN TESTS\n"
                "assert_mean(coin(20_000, np.random.default_rng(5)), 0.5, bounds=(0, 1))\n"
                "### END HIDDEN TESTS",
                grade_id="coin_tests",
                grade=True,
                solution=False,
                locked=True,
                points=1,
            ),
        ],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    return source, release_notebook(source, "tiny")


@pytest.mark.parametrize(
    ("answer", "points"),
    [
        ("def coin(n, rng):\n    return rng.integers(0, 2, size=n)", 1),
        # Wrong (always heads), with dplib.testing's assertion patched three ways.
        (
            "import dplib.testing, dplib.testing.moments\n"
            "def coin(n, rng):\n    return np.ones(n)\n"
            "dplib.testing.assert_mean = lambda *a, **k: None\n"
            "dplib.testing.moments.assert_mean.__code__ = (lambda *a, **k: None).__code__\n"
            "assert_mean = lambda *a, **k: None",
            0,
        ),
    ],
    ids=["right", "wrong-and-patched"],
)
def test_patched_dplib_testing_cannot_pass_a_wrong_answer(answer, points):
    source, release = _tiny_assignment()
    student = copy.deepcopy(release)
    _cell(student, "coin").source = answer
    job = Job(
        student="x",
        assignment="tiny",
        source=nbformat.writes(source),
        release=notebook_bytes(release).decode(),
        submission=notebook_bytes(student),
        options=Options(cell_timeout=60.0, notebook_timeout=120.0),
    )
    result = grade_job(job)
    assert result["score"] == points, result["cells"]
