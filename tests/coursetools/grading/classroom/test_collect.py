"""Collecting a hostile class: nothing a student makes is followed, blocks, or leaks into outputs.

``coursetools.cli.collect_jobs`` (in ``coursetools/grading/classroom/collect.py``) builds one grading job per
(student, assignment) from ``SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb``. The grader
runs as root and students control everything under their own folder, so these tests build
submission trees with symbolic links (to another student, to the solutions, to the source
notebook), directories, FIFOs, sockets and devices in place of notebooks, oversized notebooks,
extra files, and names made to attack a spreadsheet or a terminal, and check that each is only
its own student's problem while honest students beside them are collected byte for byte.

No Jupyter kernel is needed: the outputs (CSV, terminal table, problem report, feedback paths)
are checked on result dicts shaped like :func:`coursetools.grading.grade.grade_job`'s.
"""

from __future__ import annotations

import csv
import io
import os
import socket
import stat
import threading
from pathlib import Path

import nbformat
import pytest

from coursetools import cli, rendering
from coursetools.authoring.release import notebook_bytes
from coursetools.grading.classroom import feedback, pipeline
from coursetools.grading.job import Options

ROOT = Path(__file__).resolve().parents[4]
PILOT_ROOT = ROOT / "tests" / "fixtures" / "solutions"
PILOT = PILOT_ROOT / "pilot" / "pilot.ipynb"
MAX_NOTEBOOK_BYTES = 16 * 1024**2
GUARD_SECONDS = 2.0  # a collection takes some 30 ms once nbgrader is imported


# --------------------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module", autouse=True)
def _warm(tmp_path_factory):
    """Import nbgrader's preprocessors once, so each collection below is fast."""
    base = tmp_path_factory.mktemp("warm")
    _honest(base, "someone")
    cli.collect_jobs(base, PILOT_ROOT, Options())  # no guard: the first import takes seconds


def collect(submissions: Path, source_root: Path = PILOT_ROOT):
    """``cli.collect_jobs`` in a thread: a collection that blocks fails instead of hanging."""
    out: dict = {}

    def run():
        try:
            out["value"] = cli.collect_jobs(submissions, source_root, Options())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GUARD_SECONDS)
    if thread.is_alive():
        _unblock_fifos(submissions)
        pytest.fail(f"collect_jobs blocked for more than {GUARD_SECONDS} s")
    if "error" in out:
        raise out["error"]
    return out["value"]


def _unblock_fifos(root: Path) -> None:
    """Open every FIFO under ``root`` for writing, so a reader stuck in ``open`` gets EOF."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if stat.S_ISFIFO(os.lstat(path).st_mode):
                try:
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass


def _honest(root: Path, student: str, assignment: str = "pilot", tag: str = "") -> bytes:
    """A real notebook handed in by ``student``; returns its bytes (unique per student)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"# {ascii(student)} {tag}")])
    data = notebook_bytes(nb)
    folder = root / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{assignment}.ipynb").write_bytes(data)
    return data


def _by_student(jobs) -> dict:
    return {j.student: j for j in jobs}


def _refused(job, *words: str) -> None:
    """``job`` has no notebook and a problem that says all of ``words``."""
    assert job.submission is None
    text = " ".join(job.problems)
    for word in words:
        assert word in text, (word, job.problems)


def _result(student: str, assignment: str = "pilot", problems=()) -> dict:
    return {
        "student": student,
        "assignment": assignment,
        "score": 0.0,
        "max_score": 7.0,
        "problems": list(problems),
        "notes": [],
    }


# ------------------------------------------------------------------------- links are never followed


def test_a_student_folder_linked_to_another_student_gets_nothing_of_hers(tmp_path):
    ada = _honest(tmp_path, "ada")
    (tmp_path / "mallory").symlink_to(tmp_path / "ada")
    jobs = _by_student(collect(tmp_path)[0])
    assert set(jobs) == {"ada", "mallory"}  # the linked folder still gets its row
    _refused(jobs["mallory"], "mallory is a symbolic link", "not followed")
    assert jobs["ada"].submission == ada and not jobs["ada"].problems


def test_a_student_folder_linked_to_the_solutions_gets_no_solution(tmp_path):
    ada = _honest(tmp_path, "ada")
    (tmp_path / "mallory").symlink_to(PILOT_ROOT)
    jobs, _ = collect(tmp_path)
    assert all(j.submission != PILOT.read_bytes() for j in jobs)
    _refused(_by_student(jobs)["mallory"], "mallory is a symbolic link")
    assert _by_student(jobs)["ada"].submission == ada


def test_an_assignment_folder_linked_to_another_student_gets_nothing_of_hers(tmp_path):
    ada = _honest(tmp_path, "ada")
    (tmp_path / "mallory").mkdir()
    (tmp_path / "mallory" / "pilot").symlink_to(tmp_path / "ada" / "pilot")
    jobs = _by_student(collect(tmp_path)[0])
    _refused(jobs["mallory"], "mallory/pilot is a symbolic link", "not followed")
    assert jobs["ada"].submission == ada and not jobs["ada"].problems


def test_a_notebook_linked_to_the_source_notebook_is_not_read(tmp_path):
    _honest(tmp_path, "ada")
    (tmp_path / "mallory" / "pilot").mkdir(parents=True)
    (tmp_path / "mallory" / "pilot" / "pilot.ipynb").symlink_to(PILOT)
    jobs = _by_student(collect(tmp_path)[0])
    _refused(jobs["mallory"], "mallory/pilot/pilot.ipynb is a symbolic link", "not followed")


# --------------------------------------------------------- not a regular file: refused, never opened


def _make_special(path: Path, kind: str, monkeypatch) -> None:
    if kind == "directory":
        path.mkdir()
        (path / "inside.txt").write_text("x")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        monkeypatch.chdir(path.parent)  # a socket's address is short: bind a relative name
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(path.name)
        sock.close()
    elif kind == "device":
        if os.geteuid() != 0:
            pytest.skip("creating a device node needs root")
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers


@pytest.mark.parametrize(
    "kind, words",
    [
        ("directory", "a directory"),
        ("fifo", "named pipe (FIFO)"),
        ("socket", "a socket"),
        ("device", "a device"),
    ],
)
def test_a_notebook_that_is_not_a_regular_file_is_refused_without_blocking(
    tmp_path, monkeypatch, kind, words
):
    ada = _honest(tmp_path, "ada")
    (tmp_path / "mallory" / "pilot").mkdir(parents=True)
    _make_special(tmp_path / "mallory" / "pilot" / "pilot.ipynb", kind, monkeypatch)
    jobs = _by_student(collect(tmp_path)[0])  # fails after GUARD_SECONDS if it blocks
    _refused(jobs["mallory"], "mallory/pilot/pilot.ipynb is", words, "not graded")
    assert jobs["ada"].submission == ada and not jobs["ada"].problems


def test_a_fifo_in_place_of_another_named_notebook_is_refused_without_blocking(tmp_path):
    (tmp_path / "mallory" / "pilot").mkdir(parents=True)
    os.mkfifo(tmp_path / "mallory" / "pilot" / "mine.ipynb")
    jobs = _by_student(collect(tmp_path)[0])
    _refused(jobs["mallory"], "mallory/pilot/mine.ipynb is a named pipe (FIFO)")


def test_an_oversized_notebook_is_refused_unread(tmp_path):
    ada = _honest(tmp_path, "ada")
    big = tmp_path / "mallory" / "pilot" / "pilot.ipynb"
    big.parent.mkdir(parents=True)
    with big.open("wb") as fh:  # sparse: no disk used
        fh.truncate(MAX_NOTEBOOK_BYTES + 1)
    jobs = _by_student(collect(tmp_path)[0])
    _refused(jobs["mallory"], "notebook larger than 16 MiB, not graded")
    assert jobs["ada"].submission == ada


def test_a_notebook_of_exactly_the_cap_is_read(tmp_path):
    path = tmp_path / "ada" / "pilot" / "pilot.ipynb"
    path.parent.mkdir(parents=True)
    with path.open("wb") as fh:
        fh.truncate(MAX_NOTEBOOK_BYTES)
    job = _by_student(collect(tmp_path)[0])["ada"]
    assert job.submission is not None and len(job.submission) == MAX_NOTEBOOK_BYTES


# ------------------------------------------------------------- only the notebook is taken from a student


def test_files_a_student_hands_in_beside_the_notebook_are_not_in_the_job(tmp_path):
    source = tmp_path / "source" / "hw"
    source.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import numpy")])
    (source / "hw.ipynb").write_bytes(notebook_bytes(nb))
    (source / "data.csv").write_text("x\n1\n")
    (source / "sub").mkdir()
    (source / "sub" / "more.csv").write_text("y\n2\n")
    klass = tmp_path / "class"
    ada = _honest(klass, "ada", "hw")
    extras = {
        "ipython_config.py": "c.InteractiveShellApp.exec_lines = ['import os']",
        "numpy.py": "allclose = lambda *a, **k: True",
        ".ipython/profile_default/startup/00.py": "print('pwned')",
        "data.csv": "x\n999\n",  # over the instructor's data
        "sub/more.csv": "y\n999\n",
    }
    for name, text in extras.items():
        (klass / "ada" / "hw" / name).parent.mkdir(parents=True, exist_ok=True)
        (klass / "ada" / "hw" / name).write_text(text)
    jobs, _ = collect(klass, tmp_path / "source")
    job = _by_student(jobs)["ada"]
    assert job.submission == ada
    assert job.files == {"data.csv": b"x\n1\n", "sub/more.csv": b"y\n2\n"}


# --------------------------------------------------------------- kept behaviour, beside the attacks


def test_honest_students_beside_every_attack_are_collected_as_before(tmp_path):
    honest = {s: _honest(tmp_path, s) for s in ("ada", "bob", "zoe")}
    other = tmp_path / "cy" / "pilot" / "my_copy.ipynb"  # another single notebook: graded, noted
    other.parent.mkdir(parents=True)
    other.write_bytes(honest["ada"] + b" ")
    (tmp_path / "dan").mkdir()  # handed in nothing
    (tmp_path / "ada" / "notes").mkdir()  # not an assignment: a warning
    (tmp_path / "ada" / "pilot" / "numpy.py").write_text("x = 1\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "README.txt").write_text("not a student\n")
    (tmp_path / "m_link").symlink_to(tmp_path / "ada")
    (tmp_path / "m_sol").symlink_to(PILOT_ROOT)
    (tmp_path / "m_sub" / "pilot").mkdir(parents=True)
    (tmp_path / "m_sub" / "pilot" / "pilot.ipynb").symlink_to(PILOT)
    (tmp_path / "m_dir" / "pilot" / "pilot.ipynb").mkdir(parents=True)
    (tmp_path / "m_fifo" / "pilot").mkdir(parents=True)
    os.mkfifo(tmp_path / "m_fifo" / "pilot" / "pilot.ipynb")
    (tmp_path / "m_folder").mkdir()
    (tmp_path / "m_folder" / "pilot").symlink_to(tmp_path / "bob" / "pilot")
    jobs, warnings = collect(tmp_path)
    by = _by_student(jobs)
    assert [j.student for j in jobs] == sorted(by) and all(j.assignment == "pilot" for j in jobs)
    assert set(by) == {"ada", "bob", "zoe", "cy", "dan"} | {s for s in by if s.startswith("m_")}
    assert len(by) == 11
    for student, data in honest.items():
        assert by[student].submission == data and not by[student].problems
        assert by[student].files == {} and by[student].notebook_name == "pilot.ipynb"
    assert by["cy"].submission == honest["ada"] + b" "
    assert by["cy"].problems == ["no pilot.ipynb: graded my_copy.ipynb instead"]
    _refused(by["dan"], "nothing handed in")
    assert warnings == ["ada/notes: not an assignment of the course, skipped"]
    for student in (s for s in by if s.startswith("m_")):
        _refused(by[student], "not graded")
    assert all(j.source == PILOT.read_text(encoding="utf-8") for j in jobs)


def test_a_folder_with_no_notebook_is_reported(tmp_path):
    (tmp_path / "ada" / "pilot").mkdir(parents=True)
    (tmp_path / "ada" / "pilot" / "README.txt").write_text("forgot it\n")
    (tmp_path / "ada" / "pilot" / "._pilot.ipynb").write_text("macOS resource fork\n")
    (tmp_path / "ada" / "pilot" / "dir.ipynb").mkdir()
    (tmp_path / "bob" / "pilot").mkdir(parents=True)
    (tmp_path / "bob" / "pilot" / "pilot.ipynb").write_bytes(PILOT.read_bytes())
    jobs = _by_student(collect(tmp_path)[0])
    _refused(jobs["ada"], "ada/pilot/dir.ipynb is a directory, not a notebook file")
    assert len(jobs["ada"].problems) == 1
    assert jobs["bob"].submission == PILOT.read_bytes()


# ------------------------------------------------------------------------------------ names


NASTY = ["=1+1", "+1", "-1", "@SUM(A1)", "\x1b[31mred\nline", "tab\there", "\u202eevil"]


def test_any_directory_name_is_collected_under_its_own_name(tmp_path):
    names = [*NASTY, os.fsdecode(b"caf\xe9-latin1"), "x" * 200]
    data = {name: _honest(tmp_path, name) for name in names}
    jobs, _ = collect(tmp_path)
    assert {j.student: j.submission for j in jobs} == data
    assert all(not j.problems for j in jobs)


@pytest.mark.parametrize(
    "name",
    ['=HYPERLINK("http://x","y")', "+1", "-1", "@SUM(A1)", "\tTAB", "\rCR", "-x\r=1+1\n@y"],
)
def test_a_name_that_a_spreadsheet_would_run_is_escaped_in_the_csv(tmp_path, name):
    grades = tmp_path / "grades.csv"
    feedback.write_grades([_result(name), _result("ada")], grades)
    with grades.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 3  # a carriage return or a newline in a name adds no row
    assert rows[0] == ["student", "assignment", "score", "max_score"]
    assert rows[1] == ["'" + name, "pilot", "0", "7"]  # the name is text, intact
    assert rows[2] == ["ada", "pilot", "0", "7"]  # numbers and plain names unchanged
    assert all(row[0][0] not in "=+-@\t\r" for row in rows)


def test_plain_names_and_scores_are_written_as_before(tmp_path):
    results = [_result("bob"), _result("ada, jr."), _result('say "hi"')]
    results[0].update(score=6.5, max_score=7.0)
    feedback.write_grades(results, tmp_path / "grades.csv")
    assert (tmp_path / "grades.csv").read_bytes() == (
        b'student,assignment,score,max_score\n"ada, jr.",pilot,0,7\n'
        b'bob,pilot,6.5,7\n"say ""hi""",pilot,0,7\n'
    )


def test_an_undecodable_name_is_written_to_every_output(tmp_path):
    name = os.fsdecode(b"\xff\xfe=x")
    result = _result(name, problems=["nothing handed in for this assignment"])
    feedback.write_grades([result], tmp_path / "grades.csv")
    assert "\\xff\\xfe=x,pilot,0,7" in (tmp_path / "grades.csv").read_text(encoding="utf-8")
    assert "\\xff\\xfe=x" in feedback.summary_table([result])
    assert "\\xff\\xfe=x/pilot" in feedback.problem_report([result])
    result.update(cells=[], feedback=[], manual_max=0.0)
    (path,) = feedback.write_feedback([result], tmp_path / "feedback")
    assert path == tmp_path / "feedback" / name / "pilot.html"
    assert "\\xff\\xfe=x" in path.read_text(encoding="utf-8")


def test_a_name_with_ansi_escapes_or_newlines_is_shown_escaped():
    name = "\x1b[31mred\nline"
    results = [_result(name, problems=["nothing handed in\x1b[2J"]), _result("ada")]
    for text in (feedback.summary_table(results), feedback.problem_report(results)):
        assert "\x1b" not in text and "\\x1b[31mred\\nline" in text
        assert not any("line" in row and "red" not in row for row in text.splitlines())
    table = feedback.summary_table(results).splitlines()
    assert len({len(row) for row in table[:4]}) == 1  # the columns still line up
    assert "nothing handed in\\x1b[2J" in feedback.problem_report(results)


def test_display_name_escapes_and_caps():
    assert rendering.display_name("ada") == "ada"
    assert rendering.display_name("\x1b[31m\r\t\x00\x7f") == "\\x1b[31m\\r\\t\\x00\\x7f"
    assert rendering.display_name("a\u202eb\u200bc") == "a\\u202eb\\u200bc"  # bidi, zero width
    assert rendering.display_name(os.fsdecode(b"\xff")) == "\\xff"
    assert rendering.display_name("a\\x1b") == "a\\\\x1b"  # a backslash is not an escape
    assert rendering.display_name("élève 学生") == "élève 学生"
    long = rendering.display_name("x" * 100)
    assert len(long) == 40 and long.endswith("\u2026")
    assert len(rendering.display_name("\x1b" * 100)) <= 40


def test_the_page_title_shows_the_name_escaped(tmp_path):
    name = "\x1b[31m" + "y" * 60
    result = _result(name)
    result.update(cells=[], feedback=[], manual_max=0.0)
    page = feedback.render_html(result)
    title = page.split("<title>")[1].split("</title>")[0]
    assert "\x1b" not in page and "\\x1b[31m" in title and "\u2026" in title
    assert len(title) <= len("pilot: feedback for ") + 40
    (path,) = feedback.write_feedback([result], tmp_path)
    assert path.parent.parent == tmp_path and path.parent.name == name


def test_a_class_with_hostile_names_goes_through_every_output(tmp_path):
    """No kernel: only jobs without a notebook, which ``grade_job`` scores 0 without running."""
    klass, out = tmp_path / "class", tmp_path / "out"
    names = ["\x1b[31mred\nline", "=1+1", os.fsdecode(b"\xff\xfe"), "\u202eevil"]
    for name in names:
        (klass / name / "pilot").mkdir(parents=True)
    (klass / "ada" / "pilot").mkdir(parents=True)
    (klass / "ada" / "pilot" / "pilot.ipynb").symlink_to(PILOT)
    jobs, _ = collect(klass)
    assert {j.student for j in jobs} == {"ada", *names}
    stream = io.StringIO()
    results = pipeline.grade(jobs, workers=1, stream=stream)
    assert {r["student"] for r in results} == {"ada", *names}
    pipeline.write_outputs(results, out / "grades.csv", out / "feedback")
    text = stream.getvalue() + cli.report(results, out / "grades.csv", out / "feedback")
    assert "\x1b" not in text and "\u202e" not in text and "\\x1b[31mred\\nline" in text
    progress = [line for line in stream.getvalue().splitlines() if line.startswith("[")]
    assert len(progress) == len(jobs)  # one line per submission, whatever the name
    pages = sorted(p.relative_to(out / "feedback") for p in (out / "feedback").rglob("*.html"))
    assert pages == sorted(Path(name, "pilot.html") for name in ["ada", *names])
    with (out / "grades.csv").open(newline="", encoding="utf-8") as fh:
        assert len(list(csv.reader(fh))) == 1 + len(jobs)


@pytest.mark.parametrize("name", ["..", ".", "", "a/b", "../x", "a\0b"])
def test_a_feedback_path_is_always_inside_the_feedback_directory(tmp_path, name):
    with pytest.raises(ValueError):
        feedback.feedback_path(tmp_path, name, "pilot")
    with pytest.raises(ValueError):
        feedback.feedback_path(tmp_path, "ada", name)
    assert feedback.feedback_path(tmp_path, "..ada", "pilot") == tmp_path / "..ada" / "pilot.html"


def test_the_page_renders_markdown_and_maths_and_names_tests_by_their_exercise():
    result = _result("ada")
    result.update(
        manual_max=2.0,
        cells=[
            {"grade_id": "avg_tests", "kind": "auto", "points": 0.0, "max_points": 3.0,
             "status": "failed", "message": "the noise is not fresh"},
            {"grade_id": "why_answer", "kind": "manual", "points": None, "max_points": 2.0,
             "status": "graded by hand", "message": ""},
        ],
        feedback=[
            {"type": "markdown", "kind": "text",
             "source": "### ✏️ Exercise 1 (3 points): run the attack at $\\varepsilon$\n\nThe sd is $\\sqrt2/\\varepsilon$."},
            {"type": "code", "kind": "answer", "source": "def f(): pass"},
            {"type": "code", "kind": "test", "grade_id": "avg_tests", "source": "assert f()",
             "status": "failed", "points": 0.0, "max_points": 3.0, "message": "the noise is not fresh"},
            {"type": "markdown", "kind": "text", "source": "### ✍️ Written question 1 (2 points): why"},
            {"type": "markdown", "kind": "manual", "grade_id": "why_answer", "max_points": 2.0,
             "source": "**Because** $x_i$ <script>alert(1)</script> [x](javascript:alert(1))"},
        ],
    )
    page = feedback.render_html(result)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    tests_table = page.split("<h2>Your notebook")[0]
    assert "Exercise 1 (3 points): run the attack at <math" in tests_table  # its maths rendered too
    assert "Written question 1 (2 points): why" in page.split("<h2>Your notebook")[0]
    assert "<strong>Because</strong>" in page and "$" not in page
    assert "<script>" not in page and "javascript:" not in page
    assert "the noise is not fresh" in page


# ------------------------------------------------------------- nbgrader's exchange metadata


def _with_exchange_files(root: Path, student: str, timestamp, secret) -> Path:
    _honest(root, student)
    folder = root / student / "pilot"
    for name, value in (("timestamp.txt", timestamp), ("submission_secret.txt", secret)):
        if isinstance(value, str):
            (folder / name).write_text(value)
        elif value is not None:
            value(folder / name)
    return folder


def test_the_exchange_timestamp_and_secret_are_kept_when_sane(tmp_path):
    _with_exchange_files(tmp_path, "ana", "2026-11-23 20:51:02.123456 UTC", "3f2a9c0d-41e7")
    (job,) = collect(tmp_path)[0]
    assert job.exchange == {"timestamp": "2026-11-23 20:51:02.123456 UTC", "secret": "3f2a9c0d-41e7"}


@pytest.mark.parametrize(
    "timestamp, secret",
    [
        (lambda p: p.symlink_to("/etc/shadow"), "abc"),  # a link is never followed
        ("2026-11-23 20:51:02", lambda p: p.symlink_to("/etc/hostname")),
        ("2026-11-23 20:51:02", "x" * 300),  # too big
        ("<script>", "abc"),  # not a timestamp
        ("2026-11-23", "../../../etc"),  # not a secret
        ("2026-11-23", None),  # only one of the two
        (lambda p: p.mkdir(), "abc"),  # a directory
    ],
)
def test_exchange_files_of_the_wrong_kind_or_shape_are_ignored_not_followed(
    tmp_path, timestamp, secret
):
    _with_exchange_files(tmp_path, "ana", timestamp, secret)
    (job,) = collect(tmp_path)[0]
    assert job.submission is not None and job.problems == []  # graded as usual
    assert job.exchange == {}  # but nothing is taken from those files


# ------------------------------------------------------ a notebook's shape is capped too

from coursetools.grading.classroom import collect as collect_module  # noqa: E402


def _markdown_notebook(cells: int, text: str = "x") -> bytes:
    """A valid nbformat 4 notebook of ``cells`` markdown cells, compact (about 50 bytes a cell)."""
    import json

    cell = {"cell_type": "markdown", "metadata": {}, "source": text}
    nb = {"cells": [cell] * cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    return json.dumps(nb, separators=(",", ":")).encode()


def test_every_course_notebook_is_far_inside_the_shape_caps():
    notebooks = sorted((ROOT / "solutions").glob("*/*.ipynb")) + [PILOT]
    assert len(notebooks) >= 2
    for path in notebooks:
        data = path.read_bytes()
        assert collect_module.check_shape(data) is None, path
        cells = nbformat.reads(data.decode(), as_version=4).cells
        assert len(cells) * 10 < collect_module.MAX_CELLS, path  # the caps are 30x and more


def test_200000_markdown_cells_are_refused_at_collection_with_the_reason(tmp_path):
    ada = _honest(tmp_path, "ada")
    path = tmp_path / "mallory" / "pilot" / "pilot.ipynb"
    path.parent.mkdir(parents=True)
    path.write_bytes(_markdown_notebook(200_000))
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES  # under the size cap: the shape catches it
    jobs, _ = collect(tmp_path)
    jobs = _by_student(jobs)
    _refused(jobs["mallory"], "more than 2,000 cells", "not graded")
    assert jobs["ada"].submission == ada


def test_shape_caps_cannot_be_dodged_by_escaping_the_cell_type_key():
    # "cell\u005ftype" is the same key to a JSON parser but not to a byte count
    data = _markdown_notebook(collect_module.MAX_CELLS + 1).replace(b'"cell_type"', b'"cell\\u005ftype"')
    assert b'"cell_type"' not in data
    assert collect_module.check_shape(data) == "notebook has more than 2,000 cells"
    assert collect_module.check_shape(_markdown_notebook(collect_module.MAX_CELLS)) is None


def test_source_size_and_json_parts_are_capped():
    long = _markdown_notebook(2, "y" * (collect_module.MAX_SOURCE_CHARS // 2 + 1))
    assert "MiB of cell source" in collect_module.check_shape(long)
    parts = b'{"cells": [], "metadata": {"x": [' + b"{}," * collect_module.MAX_NOTEBOOK_PARTS + b"{}]}}"
    assert "JSON parts" in collect_module.check_shape(parts)
    assert collect_module.check_shape(b"not json") is None  # the grader says why, later
    with pytest.raises(TypeError, match="data must be bytes"):
        collect_module.check_shape("{}")
