"""``make grade`` fills nbgrader's gradebook: the formgrader lists the written answers, export sums.

``coursetools.grading.classroom.gradebook.record_results`` takes the trusted grader's results and writes them where
nbgrader's own clients read: the gradebook database and the autograded directory. These tests read
them back through nbgrader's ``NbGraderAPI`` (the object behind the formgrader's pages) and through
``nbgrader export`` (the CSV an instructor hands on), so a wrong score, a written answer not
waiting for a human, a lost manual grade or a missing autograded notebook each fail.

No kernel runs: results are shaped like :func:`coursetools.grading.grade.grade_job`'s, for the pilot
fixture (three autograded exercises worth 2 + 2 + 3 points and a written answer worth 1).
"""

from __future__ import annotations

import copy
import csv
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from pilot_course import fill_answers

from coursetools.authoring.release import notebook_bytes, release_notebook
from coursetools.grading.classroom import gradebook
from coursetools.grading.job import Job

ROOT = Path(__file__).resolve().parents[4]
PILOT = ROOT / "tests" / "fixtures" / "solutions" / "pilot" / "pilot.ipynb"
AUTO = {"clamp_tests": 2.0, "validate_epsilon_tests": 2.0, "rr_estimate_tests": 3.0}
WRITTEN = "why_random"


@pytest.fixture(scope="module")
def empty_gradebook(tmp_path_factory) -> Path:
    """An empty gradebook, made once: nbgrader stamps each new one by running ``alembic``."""
    path = tmp_path_factory.mktemp("template") / "gradebook.db"
    with gradebook.open_gradebook(f"sqlite:///{path}"):
        pass
    return path


@pytest.fixture(autouse=True)
def _seeded_gradebook(tmp_path, empty_gradebook):
    (tmp_path / "build").mkdir()
    shutil.copy(empty_gradebook, tmp_path / "build" / "gradebook.db")
    shutil.copytree(PILOT.parent, tmp_path / "solutions" / "pilot")  # the course's source


def _course(tmp_path: Path):
    from nbgrader.coursedir import CourseDirectory

    (tmp_path / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(tmp_path)!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{tmp_path}/build/gradebook.db'\n"
        "c.CourseDirectory.source_directory = 'solutions'\n"
        "c.CourseDirectory.release_directory = 'notebooks'\n"
        "c.CourseDirectory.autograded_directory = 'build/autograded'\n"
        "c.CourseDirectory.submitted_directory = 'build/submitted'\n"
    )
    return gradebook.course_directory(tmp_path / "nbgrader_config.py"), CourseDirectory


def _job(student: str, answered: bool) -> Job:
    source = nbformat.read(PILOT, as_version=4)
    release = release_notebook(copy.deepcopy(source), "pilot")
    handed = copy.deepcopy(release)
    if answered:
        fill_answers(handed)
    return Job(
        student=student,
        assignment="pilot",
        source=nbformat.writes(source),
        release=nbformat.writes(release),
        submission=notebook_bytes(handed),
        notebook_name="pilot.ipynb",
    )


def _result(student: str, points: dict[str, float], message: str = "") -> dict:
    cells = [
        {"grade_id": gid, "kind": "auto", "points": points.get(gid, 0.0), "max_points": top,
         "status": "passed" if points.get(gid, 0.0) == top else "failed", "message": message}
        for gid, top in AUTO.items()
    ]
    cells.append({"grade_id": WRITTEN, "kind": "manual", "points": None, "max_points": 1.0,
                  "status": "graded by hand", "message": ""})
    return {"student": student, "assignment": "pilot", "cells": cells, "problems": [], "notes": []}


def _record(coursedir, ada_points=AUTO, bob_message="the estimate is biased"):
    jobs = [_job("ada", True), _job("bob", False)]
    results = [_result("ada", dict(ada_points)), _result("bob", {}, bob_message)]
    written, problems = gradebook.record_results(jobs, results, coursedir)
    assert problems == []
    return written


def _api(coursedir):
    from nbgrader.apps.api import NbGraderAPI

    return NbGraderAPI(coursedir=coursedir)


def test_the_formgrader_lists_every_submission_with_its_autograded_score(tmp_path):
    coursedir, _ = _course(tmp_path)
    written = _record(coursedir)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == [
        "build/autograded/ada/pilot/pilot.ipynb",
        "build/autograded/bob/pilot/pilot.ipynb",
    ]
    rows = {r["student"]: r for r in _api(coursedir).get_notebook_submissions("pilot", "pilot")}
    assert set(rows) == {"ada", "bob"}
    assert rows["ada"]["code_score"] == 7.0 and rows["bob"]["code_score"] == 0.0
    assert rows["ada"]["max_code_score"] == 7.0 and rows["ada"]["max_written_score"] == 1.0
    # the written answer waits for a human, for both students
    assert rows["ada"]["needs_manual_grade"] and rows["bob"]["needs_manual_grade"]
    # Manage Assignments counts the submissions handed in
    assert _api(coursedir).get_assignment("pilot")["num_submissions"] == 2


def test_the_written_answer_waits_for_a_human_and_a_blank_one_says_no_response(tmp_path):
    coursedir, _ = _course(tmp_path)
    _record(coursedir)
    with gradebook.open_gradebook(coursedir.db_url) as gb:
        grade = gb.find_grade(WRITTEN, "pilot", "pilot", "ada")
        assert grade.auto_score is None and grade.needs_manual_grade
        passed = gb.find_grade("clamp_tests", "pilot", "pilot", "ada")
        assert passed.auto_score == 2.0 and not passed.needs_manual_grade
        assert gb.find_comment(WRITTEN, "pilot", "pilot", "bob").auto_comment == "No response."
        assert gb.find_comment(WRITTEN, "pilot", "pilot", "ada").auto_comment is None


def test_a_manual_grade_survives_a_regrade_and_export_adds_it(tmp_path):
    coursedir, _ = _course(tmp_path)
    _record(coursedir)
    with gradebook.open_gradebook(coursedir.db_url) as gb:  # what the formgrader's score box does
        grade = gb.find_grade(WRITTEN, "pilot", "pilot", "ada")
        grade.manual_score, grade.needs_manual_grade = 1.0, False  # what the formgrader's PUT does
        gb.db.commit()
    _record(coursedir, ada_points={**AUTO, "rr_estimate_tests": 0.0})  # graded again: 4 auto
    with gradebook.open_gradebook(coursedir.db_url) as gb:
        assert gb.find_grade(WRITTEN, "pilot", "pilot", "ada").manual_score == 1.0
        assert gb.find_grade("rr_estimate_tests", "pilot", "pilot", "ada").auto_score == 0.0
    out = tmp_path / "final.csv"
    bindir = Path(sys.executable).parent
    subprocess.run(
        [str(bindir / "nbgrader"), "export", "--to", str(out)],
        cwd=tmp_path, check=True, capture_output=True, timeout=120,
    )
    rows = {r["student_id"]: r for r in csv.DictReader(out.open())}
    assert float(rows["ada"]["score"]) == 5.0  # 4 autograded + 1 written
    assert float(rows["ada"]["max_score"]) == 8.0
    assert float(rows["bob"]["score"]) == 0.0


def test_the_autograded_notebook_shows_answers_hidden_tests_and_each_verdict(tmp_path):
    coursedir, _ = _course(tmp_path)
    _record(coursedir)
    bob = nbformat.read(tmp_path / "build/autograded/bob/pilot/pilot.ipynb", as_version=4)
    tests = {c.metadata["nbgrader"]["grade_id"]: c for c in bob.cells
             if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}
    assert set(tests) == set(AUTO)
    for cell in tests.values():
        assert "BEGIN HIDDEN TESTS" in cell.source  # the instructor sees what was run
        (output,) = cell.outputs
        assert output.text.startswith("[grader] failed (0/")
        assert "the estimate is biased" in output.text
    ada = nbformat.read(tmp_path / "build/autograded/ada/pilot/pilot.ipynb", as_version=4)
    answer = next(c for c in ada.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "clamp")
    assert "np.clip" in answer.source or "return" in answer.source
    assert "NotImplementedError" not in answer.source


def test_changing_an_assignment_after_grading_says_what_to_do(tmp_path):
    coursedir, _ = _course(tmp_path)
    _record(coursedir)
    job = _job("cy", True)
    release = nbformat.reads(job.release, as_version=4)
    extra = copy.deepcopy(next(c for c in release.cells
                               if c.metadata.get("nbgrader", {}).get("grade_id") == "clamp_tests"))
    extra.metadata["nbgrader"]["grade_id"] = "new_tests"
    extra.id = "new-tests"
    release.cells.append(extra)
    job.release = nbformat.writes(release)
    with pytest.raises(RuntimeError, match="fresh gradebook"):
        gradebook.record_results([job], [_result("cy", {})], coursedir)


def test_jobs_and_results_must_pair_up(tmp_path):
    coursedir, _ = _course(tmp_path)
    with pytest.raises(ValueError, match="must pair up"):
        gradebook.record_results([_job("ada", True)], [], coursedir)


def test_nothing_handed_in_records_no_submission(tmp_path):
    coursedir, _ = _course(tmp_path)
    job = _job("dan", False)
    job.submission = None
    assert gradebook.record_results([job], [_result("dan", {})], coursedir) == ([], [])
    assert _api(coursedir).get_notebook_submissions("pilot", "pilot") == [] or all(
        not r["submitted"] for r in _api(coursedir).get_notebook_submissions("pilot", "pilot")
    )


def test_a_name_the_gradebook_cannot_store_is_reported_and_the_others_recorded(tmp_path):
    coursedir, _ = _course(tmp_path)
    odd = _job("caf\udce9", True)  # an undecodable directory name, as os.listdir gives it
    written, problems = gradebook.record_results(
        [odd, _job("ada", True)], [_result("caf\udce9", {}), _result("ada", AUTO)], coursedir
    )
    assert [p.parent.parent.name for p in written] == ["ada"]
    assert len(problems) == 1 and "not UTF-8" in problems[0]


def test_a_name_that_could_carry_markup_never_reaches_the_formgrader(tmp_path):
    """The formgrader writes student ids into its pages unescaped: such a name is refused."""
    coursedir, _ = _course(tmp_path)
    hostile = '<img src=x onerror="fetch(1)">'
    written, problems = gradebook.record_results(
        [_job(hostile, True), _job("ada", True)], [_result(hostile, {}), _result("ada", AUTO)],
        coursedir,
    )
    assert [p.parent.parent.name for p in written] == ["ada"]
    assert len(problems) == 1 and "not recorded in the gradebook" in problems[0]
    assert [s.id for s in _api(coursedir).gradebook.students] == ["ada"]


def test_the_notebooks_written_for_the_formgrader_are_inert(tmp_path):
    """Raw HTML, script links, rich outputs and forged grade ids never reach the formgrader's files."""
    coursedir, _ = _course(tmp_path)
    job = _job("ada", True)
    nb = nbformat.reads(job.submission.decode(), as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == WRITTEN:
            cell.source = 'My answer <img src=x onerror="fetch(1)"> [x](javascript:fetch(2))'
    shown = nbformat.v4.new_code_cell("1")
    shown.outputs = [nbformat.v4.new_output(
        "display_data", data={"text/html": "<script>fetch(3)</script>", "text/plain": "1"})]
    nb.cells.append(shown)
    job.submission = notebook_bytes(nb)
    (graded,) = gradebook.record_results([job], [_result("ada", AUTO)], coursedir)[0]
    handed_in = Path(coursedir.format_path(coursedir.submitted_directory, "ada", "pilot"))
    for path in (graded, handed_in / "pilot.ipynb"):
        text = path.read_text(encoding="utf-8")
        assert "<img" not in text and "javascript:" not in text and "<script" not in text, path
        assert "text/html" not in text, path
        sources = [c.source for c in nbformat.read(str(path), as_version=4).cells]
        assert any("My answer <\u2060img" in s for s in sources), path  # words kept, tag broken


def test_make_lab_serves_the_course_root_so_the_formgrader_links_resolve():
    """The formgrader refuses a course root outside the server root (its Edit/Preview links 404)."""
    import os
    import re
    import shlex

    dry = subprocess.run(
        ["make", "-n", "lab"], cwd=ROOT, capture_output=True,
        text=True, check=True, timeout=60,
    ).stdout
    (line,) = [ln for ln in dry.splitlines() if "jupyter lab" in ln]
    (root_dir,) = re.findall(r"--ServerApp\.root_dir=(\S+)", line)
    root_dir = shlex.split(root_dir)[0]
    course_root = gradebook.course_directory().root
    assert not os.path.relpath(course_root, root_dir).startswith(".."), (course_root, root_dir)
    assert f"{ROOT}/.venv/bin" in line.split()[0]  # nbgrader runs `alembic` by name
    assert ("--allow-root" in line) == (os.geteuid() == 0)


def test_the_class_page_takes_the_roster_waiting_answers_and_attempts_from_nbgrader(tmp_path):
    """Issue 33, item 3: who has not handed in comes from the gradebook's roster, the written
    answers waiting from its grades (one graded by hand stops waiting), attempts from the
    exchange's inbound folder."""
    import re

    from coursetools.grading.classroom.pipeline import write_class_overview

    coursedir, _ = _course(tmp_path)
    exchange = tmp_path / "exchange"
    with open(tmp_path / "nbgrader_config.py", "a") as f:
        f.write(f"c.Exchange.root = {str(exchange)!r}\nc.CourseDirectory.course_id = 'dp'\n")
    for stamp in ("2026-11-20 10:00:00.000000 UTC+a1", "2026-11-20 11:00:00.000000 UTC+b2",
                  "2026-11-20 12:00:00.000000 UTC+c3"):
        (exchange / "dp" / "inbound" / f"bob+pilot+{stamp}").mkdir(parents=True)
    _record(coursedir)
    results = [dict(_result("ada", dict(AUTO)), score=7.0, max_score=7.0),
               dict(_result("bob", {}), score=0.0, max_score=7.0)]
    with gradebook.open_gradebook(coursedir.db_url) as gb:
        gb.add_student("cy")

    def text():
        page = write_class_overview(results, tmp_path / "out", nbgrader_config=tmp_path /
                                    "nbgrader_config.py", use_gradebook=True)
        return " ".join(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")).split())

    first = text()
    assert "2 of 3 handed in" in first and "not handed in: cy" in first
    assert "written answers waiting in the formgrader: 2" in first
    assert "attempts used: bob 3" in first
    with gradebook.open_gradebook(coursedir.db_url) as gb:
        grade = gb.find_grade(WRITTEN, "pilot", "pilot", "ada")
        grade.manual_score, grade.needs_manual_grade = 1.0, False  # what the formgrader's PUT does
        gb.db.commit()
    assert "written answers waiting in the formgrader: 1" in text()


# ------------------------------------------------------------- grades out to the LMS


def _lms_setup(tmp_path):
    coursedir, _ = _course(tmp_path)
    _record(coursedir)
    with gradebook.open_gradebook(coursedir.db_url) as gb:
        gb.add_student("cy", first_name="Cy", last_name="=HYPERLINK(1)", email="cy@example.org")
        gb.update_or_create_student("ada", first_name="Ada", last_name="Lovelace", email="ada@example.org")
        gb.update_or_create_student("bob", email="bob@example.org")
        grade = gb.find_grade(WRITTEN, "pilot", "pilot", "ada")
        grade.manual_score, grade.needs_manual_grade = 1.0, False
        gb.db.commit()
    return coursedir


def test_the_final_grades_are_nbgraders_own_figures(tmp_path):
    """The same figures as `nbgrader export`: autograded plus hand-graded points; nothing handed
    in is None (not 0: the LMS keeps what it has unless the mapping says zero)."""
    import csv as _csv

    from nbgrader.apps import NbGraderAPI  # noqa: F401 - nbgrader's own export for the reference
    from nbgrader.plugins.export import CsvExportPlugin

    from coursetools.lms import csv_export as lms_export

    coursedir = _lms_setup(tmp_path)
    ours = {(g.student_id, g.assignment): g for g in lms_export.final_grades(coursedir.db_url)}
    reference = tmp_path / "nbgrader.csv"
    with gradebook.open_gradebook(coursedir.db_url) as gb:
        CsvExportPlugin(to=str(reference)).export(gb)
    for row in _csv.DictReader(reference.open()):
        g = ours[(row["student_id"], row["assignment"])]
        assert (g.score or 0.0) == float(row["score"]) and g.max_score == float(row["max_score"])
    assert ours[("ada", "pilot")].score == 8.0 and ours[("cy", "pilot")].score is None


def test_canvas_csv_has_canvas_columns_points_possible_and_mapped_titles(tmp_path):
    import csv as _csv

    from coursetools.lms import csv_export as lms_export

    coursedir = _lms_setup(tmp_path)
    mapping_file = tmp_path / "lms.toml"
    mapping_file.write_text(
        '[canvas]\nidentifier_column = "SIS User ID"\nstudent_field = "email"\n'
        '[canvas.assignments]\npilot = "Pilot notebook (4711)"\n'
    )
    mapping = lms_export.load_mapping("canvas", mapping_file)
    path = lms_export.write_csv(lms_export.final_grades(coursedir.db_url), mapping, tmp_path / "c.csv")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")  # a BOM: Excel reads UTF-8
    rows = list(_csv.reader(path.read_text(encoding="utf-8-sig").splitlines()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Pilot notebook (4711)"]
    assert rows[1][0] == "Points Possible" and rows[1][5] == "8"
    body = {r[2]: r for r in rows[2:]}
    assert body["ada@example.org"][0] == "Lovelace, Ada" and body["ada@example.org"][5] == "8"
    assert body["bob@example.org"][5] == "0"
    assert body["cy@example.org"][5] == ""  # nothing handed in: blank, Canvas keeps its grade
    assert body["cy@example.org"][0] == "'=HYPERLINK(1), Cy"  # never a formula


def test_moodle_csv_and_missing_as_zero(tmp_path):
    import csv as _csv

    from coursetools.lms import csv_export as lms_export

    coursedir = _lms_setup(tmp_path)
    mapping = lms_export.Mapping("moodle", identifier_column="Username", missing="zero")
    text = lms_export.render_csv(lms_export.final_grades(coursedir.db_url), mapping)
    rows = list(_csv.reader(text.splitlines()))
    assert rows == [["Username", "pilot"], ["ada", "8"], ["bob", "0"], ["cy", "0"]]


def test_a_bad_mapping_is_refused_with_what_is_allowed(tmp_path):
    from coursetools.lms import csv_export as lms_export

    with pytest.raises(ValueError, match="SIS User ID"):
        lms_export.Mapping("canvas", identifier_column="Username")
    with pytest.raises(ValueError, match="canvas, moodle"):
        lms_export.Mapping("blackboard")
    with pytest.raises(ValueError, match="'blank' or 'zero'"):
        lms_export.Mapping("moodle", identifier_column="Username", missing="nan")
    bad = tmp_path / "lms.toml"
    bad.write_text("[moodle]\nidentifer_column = 'Username'\n")
    with pytest.raises(ValueError, match="unknown key"):
        lms_export.load_mapping("moodle", bad)
    grades = [lms_export.FinalGrade("a", "", "", "", "x", 1.0, 1.0),
              lms_export.FinalGrade("a", "", "", "", "y", 1.0, 1.0)]
    with pytest.raises(ValueError, match="same column"):
        lms_export.render_csv(grades, lms_export.Mapping("moodle", identifier_column="Username",
                                                         assignments={"x": "T", "y": "T"}))


def test_make_exports_lms_csv_from_the_shipped_mapping(tmp_path):
    """`make export`'s second step: the command reads deploy/lms.toml (valid for both systems)."""
    from coursetools import cli

    coursedir = _lms_setup(tmp_path)
    config = tmp_path / "nbgrader_config.py"
    for system in ("canvas", "moodle"):
        out = tmp_path / "lms" / f"{system}.csv"
        assert cli.main(["lms-export", "--system", system, "--to", str(out),
                         "--nbgrader-config", str(config)]) == 0
        lines = out.read_text(encoding="utf-8-sig").splitlines()
        assert len(lines) == (2 if system == "canvas" else 1) + 3  # a header (+ points), 3 students
    assert cli.main(["lms-export", "--system", "moodle", "--to", str(tmp_path / "x.csv"),
                     "--nbgrader-config", str(config), "--mapping", str(tmp_path / "none.toml")]) == 2
    assert coursedir is not None
