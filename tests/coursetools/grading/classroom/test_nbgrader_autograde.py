"""nbgrader's own ``autograde`` and ``generate_feedback`` grade with the trusted grader.

Two copies of the pilot course (tests/support/pilot_course.py) get the same handed-in class in nbgrader's
submitted directory: the regular students of examples/make_class.py (ada_full 7/7, bob_partial
4/7, cy_blank 0/7), two attacks on a grader that runs tests in the student's kernel (h_patch:
every checker patched; h_forge: forged idle status and execute replies, both 0/7 when graded
safely) and a notebook that is not JSON, all as nbgrader's exchange collects them (a timestamp
and a secret beside each notebook). One copy is graded by ``make grade``'s command, the other by
``nbgrader autograde pilot`` run in the course directory with the course's nbgrader_config.py.

A raw nbgrader run, a preprocessor left in, or a different job would change a score, a
gradebook row, the autograded notebook or the feedback page, which are compared byte for byte.
Files handed in beside a notebook reach neither the autograded nor the feedback folder.
The control: the same course with nbgrader's own Autograde restored gives h_patch 7/7.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from pilot_course import PILOT, ROOT, hostile_suite, pilot_course  # noqa: E402

from coursetools.grading.classroom import feedback, gradebook, nbgrader_autograde  # noqa: E402

BIN = Path(sys.executable).parent
EXPECTED = {
    "ada_full": 7,
    "bob_partial": 4,
    "cy_blank": 0,
    "h_patch": 0,
    "h_forge": 0,
    "h_badjson": 0,
}
EXCHANGE = {"timestamp": "2026-11-20 09:30:00.000000 UTC", "secret": "0123abcd-secret"}


def _make_class():
    return hostile_suite()


def _env(course: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "NBGRADER_EXCHANGE": str(course.parent / "exchange"),
    }


def _run(argv: list[str], course: Path, cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    done = subprocess.run(
        argv, cwd=cwd, env=_env(course), capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done, time.monotonic() - start


def _hand_in(course: Path, hostile: Path) -> Path:
    submitted = course / "build" / "nbgrader" / "submitted"
    _make_class().make_class(course / "solutions", submitted)
    for student in ("h_patch", "h_forge", "h_badjson"):
        shutil.copytree(hostile / student, submitted / student)
    (course.parent / "exchange").mkdir(mode=0o1777)
    for number, student in enumerate(EXPECTED):
        folder = submitted / student / "pilot"
        (folder / "timestamp.txt").write_text(EXCHANGE["timestamp"])
        (folder / "submission_secret.txt").write_text(f"{EXCHANGE['secret']}-{number}")
    # files beside the notebook: make grade never takes them; nbgrader's Autograde would copy
    # them on to the feedback folder, and Release feedback would send the .html ones out
    (submitted / "h_patch" / "pilot" / "extra.html").write_text("<p>extra</p>")
    (submitted / "h_patch" / "pilot" / "peek.html").symlink_to(
        course / "solutions/pilot/pilot.ipynb"
    )
    return submitted


@pytest.fixture(scope="module")
def courses(tmp_path_factory):
    """(graded by ``make grade``, graded by ``nbgrader autograde``, seconds each took)."""
    base = tmp_path_factory.mktemp("buttons")
    _make_class().make_hostile(PILOT / "pilot.ipynb", base / "hostile")
    made, nbg = pilot_course(base / "make" / "course"), pilot_course(base / "nbg" / "course")
    submitted = _hand_in(made, base / "hostile")
    _hand_in(nbg, base / "hostile")
    _, make_seconds = _run(
        [
            sys.executable,
            "-m",
            "coursetools",
            "grade",
            str(submitted),
            "--workers",
            "1",
            "--source",
            str(made / "solutions"),
            "--grades",
            str(made / "build" / "grades.csv"),
            "--nbgrader-config",
            str(made / "nbgrader_config.py"),
        ],
        made,
        ROOT,
    )
    done, nbg_seconds = _run([str(BIN / "nbgrader"), "autograde", "pilot"], nbg, nbg)
    print(
        f"\nmake grade: {make_seconds:.1f} s, nbgrader autograde: {nbg_seconds:.1f} s "
        f"for {len(EXPECTED)} submissions"
    )
    return made, nbg, done.stderr


def _coursedir(course: Path):
    return gradebook.course_directory(course / "nbgrader_config.py")


def _rows(course: Path) -> dict:
    """Every grade and comment of the gradebook, keyed by (student, cell)."""
    rows = {}
    with gradebook.open_gradebook(_coursedir(course).db_url) as gb:
        for student in EXPECTED:
            submission = gb.find_submission("pilot", student)
            rows[student] = submission.score
            rows[student, "timestamp"] = str(submission.timestamp)
            for grade in gb.find_submission_notebook("pilot", "pilot", student).grades:
                rows[student, grade.name] = (grade.auto_score, grade.needs_manual_grade)
            for comment in gb.find_submission_notebook("pilot", "pilot", student).comments:
                rows[student, comment.name, "comment"] = comment.auto_comment
    return rows


def test_nbgrader_autograde_gives_make_grades_scores_and_attacks_get_nothing(courses):
    made, nbg, log = courses
    rows = _rows(nbg)
    assert {s: rows[s] for s in EXPECTED} == EXPECTED, log[-3000:]
    assert rows == _rows(made)  # every cell, manual flag, "No response." and timestamp
    assert rows["ada_full", "timestamp"].startswith("2026-11-20 09:30:00")
    assert "trusted grader" in log and "Executing notebook" not in log  # no kernel of nbgrader's


def test_the_autograded_notebooks_are_make_grades_inert_ones(courses):
    made, nbg, _ = courses
    for student in EXPECTED:
        path = Path("build", "nbgrader", "autograded", student, "pilot", "pilot.ipynb")
        assert nbformat.read(nbg / path, as_version=4) == nbformat.read(made / path, as_version=4)
    verdicts = "".join(
        o.get("text", "")
        for c in nbformat.read(
            nbg / path.parents[2] / "h_forge" / "pilot" / "pilot.ipynb", as_version=4
        ).cells
        for o in c.get("outputs", [])
    )
    assert "[grader] failed (0/2 points)" in verdicts and "passed" not in verdicts
    folder = nbg / "build" / "nbgrader" / "autograded" / "h_patch" / "pilot"
    assert sorted(p.name for p in folder.iterdir()) == [
        "pilot.ipynb",
        "submission_secret.txt",
        "timestamp.txt",
    ]


def test_generate_feedback_writes_the_course_page_and_release_feedback_sends_it(courses):
    made, nbg, _ = courses
    _run([str(BIN / "nbgrader"), "generate_feedback", "pilot"], nbg, nbg)
    for student in EXPECTED:
        ours = nbg / "build" / "nbgrader" / "feedback" / student / "pilot" / "pilot.html"
        page = ours.read_text(encoding="utf-8")
        assert page == (made / "build" / "feedback" / student / "pilot.html").read_text(
            encoding="utf-8"
        ), student
    assert (
        "Autograded score: 7 / 7"
        in (
            nbg / "build" / "nbgrader" / "feedback" / "ada_full" / "pilot" / "pilot.html"
        ).read_text()
    )
    folder = nbg / "build" / "nbgrader" / "feedback" / "h_patch" / "pilot"
    assert sorted(p.name for p in folder.iterdir()) == [
        "pilot.html",
        "submission_secret.txt",
        "timestamp.txt",
    ]
    _run([str(BIN / "nbgrader"), "release_feedback", "pilot"], nbg, nbg)
    released = (nbg.parent / "exchange" / "dp-course" / "feedback").glob("*.html")
    pages = {(made / "build" / "feedback" / s / "pilot.html").read_text() for s in EXPECTED}
    assert sorted(p.read_text() for p in released) == sorted(pages)  # one page per student


def test_generate_feedback_without_a_trusted_result_fails_and_says_why(courses):
    _, nbg, _ = courses
    kept = gradebook.result_path(_coursedir(nbg), "bob_partial", "pilot", "pilot")
    moved = kept.with_suffix(".away")
    kept.rename(moved)
    try:
        done = subprocess.run(
            [
                str(BIN / "nbgrader"),
                "generate_feedback",
                "pilot",
                "--student",
                "bob_partial",
                "--force",
            ],
            cwd=nbg,
            env=_env(nbg),
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        moved.rename(kept)
    assert done.returncode != 0
    assert "no result of the trusted grader for bob_partial/pilot" in done.stderr + done.stdout


def test_the_kept_result_renders_as_make_grades_page(courses):
    made, _, _ = courses
    kept = gradebook.result_path(_coursedir(made), "h_patch", "pilot", "pilot")
    result = json.loads(kept.read_text())
    assert result["score"] == 0 and result["student"] == "h_patch"
    assert (
        feedback.render_html(result)
        == (made / "build" / "feedback" / "h_patch" / "pilot.html").read_text()
    )


def test_bad_arguments_are_refused_with_the_argument_named(courses):
    _, nbg, _ = courses
    coursedir = _coursedir(nbg)
    with pytest.raises(ValueError, match="grade_args"):
        nbgrader_autograde.grading_options(coursedir, ["--no-such-option"])
    with pytest.raises(TypeError, match="grade_args"):
        nbgrader_autograde.grading_options(coursedir, "--with-outputs")
    options = nbgrader_autograde.grading_options(coursedir, ["--cell-timeout", "7"])
    assert options.cell_timeout == 7 and str(nbg / "solutions") in options.hide
    for bad in ("", "..", "a/b"):
        with pytest.raises(ValueError, match="student"):
            nbgrader_autograde.submission_job(coursedir, bad, "pilot", options)
    job = nbgrader_autograde.submission_job(coursedir, "nobody", "pilot", options)
    assert job.submission is None and job.problems == ["nothing handed in"]


RAW_NBGRADER = """
# the control: nbgrader's own Autograde, tests in the student's kernel
from nbgrader.converters import Autograde as _Autograde

for _name in ("sanitize_preprocessors", "autograde_preprocessors", "exporter_class"):
    setattr(c.Autograde, _name, _Autograde.class_traits()[_name].default())
c.Autograde.pre_convert_hook = None
"""


def test_control_raw_nbgrader_without_the_course_config_is_fooled_by_the_patched_kernel(courses):
    """The attack is real: nbgrader's own Autograde gives h_patch full marks (the hooks, 0)."""
    _, nbg, _ = courses
    raw = nbg.parent / "raw"
    shutil.copytree(nbg, raw)
    with (raw / "nbgrader_config.py").open("a") as config:
        config.write(RAW_NBGRADER)
    _run([str(BIN / "nbgrader"), "autograde", "pilot", "--student", "h_patch", "--force"], raw, raw)
    with gradebook.open_gradebook(_coursedir(raw).db_url) as gb:
        assert gb.find_submission("pilot", "h_patch").score == 7
