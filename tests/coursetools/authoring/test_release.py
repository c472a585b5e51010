"""The student release is exactly what `make release` generates from solutions/, and it is sound.

- notebooks/ is byte-for-byte what coursetools.authoring.release regenerates (no drift, no hand edits);
- generation is deterministic (twice the same bytes; stable cell ids, no outputs, fixed metadata);
- no solution text and no hidden test reaches a release notebook;
- every release notebook with its answers filled in passes all its visible tests with nbgrader's
  own Validator (``nbgrader validate`` exits 0 even when cells fail, so the API's result is
  checked);
- every release notebook runs to the end and fails every autograded test cell;
- every solution, handed in as the example class's ada_full, gets full marks from the trusted
  grader, and raw ``nbgrader autograde`` with a plain configuration (none of the course's) gives
  the example class (ada_full, bob_partial, cy_blank) exactly the trusted grader's scores (issue
  29), on :data:`RAW_ASSIGNMENTS`.

Parametrized over every notebook under solutions/ plus the pilot fixture (tests/fixtures), so a
new notebook is covered as soon as it lands. The notebooks run two at a time (one per core),
once per session: each trusted grading here is done once (the raw comparison reads ada_full's
from the full-marks test's), and tests/notebooks/test_solutions_run.py runs the solutions in a
plain kernel.

The figures and experiments (the cells no test reads a name from) run whole in two places: in
tests/notebooks/test_solutions_run.py's plain kernel, where no cell may raise, and in the trusted
grading of ada_full here, under the sandbox's limits and bans (where a cell that calls a banned
function raises, as in a student's graded run) and where no cell may time out or kill the kernel.
The Validator's run and the release's leave them out (``notebook_probes.without_figures``): what
those runs alone show is about the tests.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from coursetools.authoring.release import (
    find_assignments,
    hidden_test_regions,
    notebook_bytes,
    release_all,
    release_notebook,
)
from coursetools.cells import BEGIN_HIDDEN, BEGIN_SOLUTION, END_HIDDEN, END_SOLUTION

ROOT = Path(__file__).resolve().parents[3]
SOLUTIONS, NOTEBOOKS = ROOT / "solutions", ROOT / "notebooks"
PILOT = ROOT / "tests" / "fixtures" / "solutions"

SOURCES = {name: SOLUTIONS / name / f"{name}.ipynb" for name in find_assignments(SOLUTIONS)}
SOURCES["pilot"] = PILOT / "pilot" / "pilot.ipynb"
#: The notebooks graded by raw nbgrader and by the trusted grader, three students each: the two
#: cheapest to run (Run All: 3.5 and 5.1 s on a quiet machine; 08, once the cheapest, now takes
#: twice as long), so the comparison adds well under a minute to make test.
RAW_ASSIGNMENTS = ("01_randomized_response", "03_exponential_mechanism")
STUDENTS = ("ada_full", "bob_partial", "cy_blank")


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".ipynb_checkpoints" not in p.parts and not p.name.startswith(".")
    }


def test_notebooks_dir_is_exactly_the_generated_release(tmp_path):
    release_all(SOLUTIONS, tmp_path / "release")
    expected = _files(tmp_path / "release")
    actual = _files(NOTEBOOKS) if NOTEBOOKS.is_dir() else {}
    assert sorted(actual) == sorted(expected), "run `make release`: notebooks/ lists other files"
    stale = [name for name in expected if actual[name] != expected[name]]
    assert not stale, f"run `make release`: these differ from what solutions/ generates: {stale}"


def test_generation_is_deterministic(tmp_path):
    release_all(PILOT, tmp_path / "a")
    release_all(PILOT, tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    nb = nbformat.read(tmp_path / "a" / "pilot" / "pilot.ipynb", as_version=4)
    source = nbformat.read(SOURCES["pilot"], as_version=4)
    assert [c.id for c in nb.cells] == [c.id for c in source.cells]  # ids kept from the source
    assert all(
        c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code"
    )
    assert set(nb.metadata) == {"kernelspec", "language_info"}


def test_missing_cell_ids_get_stable_ids():
    source = nbformat.read(SOURCES["pilot"], as_version=4)
    for cell in source.cells:
        del cell["id"]
    source.nbformat_minor = 4
    first = release_notebook(source, "pilot")
    second = release_notebook(source, "pilot")
    ids = [c.id for c in first.cells]
    assert ids == [c.id for c in second.cells] and len(set(ids)) == len(ids)
    assert notebook_bytes(first) == notebook_bytes(second)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_release_holds_no_solution_and_no_hidden_test(name):
    source = nbformat.read(SOURCES[name], as_version=4)
    release = notebook_bytes(release_notebook(source, name)).decode()
    for marker in (BEGIN_SOLUTION, END_SOLUTION, BEGIN_HIDDEN, END_HIDDEN):
        assert marker not in release
    # Every non-trivial line of a solution or hidden region that appears nowhere else in the
    # source must be absent from the release.
    outside = "\n".join(_outside_regions(c.source) for c in source.cells)
    text = "\n".join(c.source for c in nbformat.reads(release, as_version=4).cells)
    leaked = [
        line.strip()
        for region in hidden_test_regions(source)
        for line in region.splitlines()
        if len(line.strip()) >= 12 and line.strip() not in outside and line.strip() in text
    ]
    assert not leaked, leaked


def _outside_regions(text: str) -> str:
    keep, inside = [], False
    for line in text.splitlines():
        if BEGIN_SOLUTION in line or BEGIN_HIDDEN in line:
            inside = True
        elif END_SOLUTION in line or END_HIDDEN in line:
            inside = False
        elif not inside:
            keep.append(line)
    return "\n".join(keep)


# ----------------------------------------------------------------------- execution (one per core)


def _validate_filled_release(path: str) -> dict:
    """nbgrader's Validator on the release with every answer filled in (the student's button).

    Without the figures and experiments no graded cell needs (``notebook_probes.without_figures``):
    the Validator judges the test cells only, and every cell of the notebook, figures included,
    runs in tests/notebooks/test_solutions_run.py (hidden tests included, every test cell
    scored there too). What this run alone shows is that the visible tests pass when the hidden
    ones are absent.
    """
    from nbgrader.validator import Validator
    from notebook_probes import without_figures
    from traitlets.config import Config

    source = Path(path)
    with tempfile.TemporaryDirectory() as tmp:
        for data in source.parent.iterdir():
            if data.is_file() and data.suffix != ".ipynb":
                (Path(tmp) / data.name).write_bytes(data.read_bytes())
        filled = Path(tmp) / source.name
        nb = nbformat.reads(
            _make_class().student_notebooks(source)["ada_full"].decode(), as_version=4
        )
        filled.write_bytes(notebook_bytes(without_figures(nb)))
        return Validator(config=Config({"Execute": {"timeout": 600}})).validate(str(filled))


def _make_class():
    from coursetools.authoring import example_class

    return example_class


def _run_release(payload: tuple[str, str]) -> dict:
    """Execute a release notebook with nbgrader's Execute preprocessor; score with nbgrader.

    Without the figures and experiments no graded cell needs: a release's other cells are the
    solution's, byte for byte, and run whole in tests/notebooks/test_solutions_run.py; its stubs,
    its test cells and every cell they read a name from run here.
    """
    from nbgrader import utils
    from nbgrader.preprocessors import Execute
    from notebook_probes import without_figures
    from traitlets.config import Config

    name, path = payload
    nb = without_figures(release_notebook(nbformat.read(path, as_version=4), name))
    nb, _ = Execute(config=Config({"Execute": {"timeout": 600}})).preprocess(
        nb, {"metadata": {"path": str(Path(path).parent)}}
    )
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    return {
        "unexecuted": [c.source[:60] for c in code if c.execution_count is None],
        "passed": [
            c.metadata.nbgrader["grade_id"]
            for c in code
            if utils.is_grade(c)
            and not utils.is_solution(c)
            and utils.determine_grade(c)[0] == utils.determine_grade(c)[1] > 0
        ],
        "tests": sum(1 for c in code if utils.is_grade(c) and not utils.is_solution(c)),
    }


@pytest.fixture(scope="module")
def executed():
    """Every source validated, every release run, every solution graded by the trusted grader
    (as ada_full), and raw nbgrader and the trusted grader on the example class of
    :data:`RAW_ASSIGNMENTS`: two notebooks at a time, each grading once."""
    with cf.ProcessPoolExecutor(max_workers=2) as pool:
        raw = {a: pool.submit(_raw_nbgrader, a) for a in RAW_ASSIGNMENTS}
        graded = {n: pool.submit(_trusted, n, "ada_full") for n in SOURCES}
        others = {
            (a, s): pool.submit(_trusted, a, s)
            for a in RAW_ASSIGNMENTS
            for s in STUDENTS
            if s != "ada_full"
        }
        validations = {n: pool.submit(_validate_filled_release, str(p)) for n, p in SOURCES.items()}
        releases = {n: pool.submit(_run_release, (n, str(p))) for n, p in SOURCES.items()}
        graded = {n: f.result() for n, f in graded.items()}
        return (
            {n: f.result() for n, f in validations.items()},
            {n: f.result() for n, f in releases.items()},
            graded,
            {a: f.result() for a, f in raw.items()},
            {(a, "ada_full"): graded[a] for a in RAW_ASSIGNMENTS}
            | {k: f.result() for k, f in others.items()},
        )


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_solution_notebook_validates_with_full_marks(executed, name):
    result = executed[0][name]
    failed = result.get("failed", []) + result.get("type_changed", []) + result.get("changed", [])
    assert not failed, "\n\n".join(
        f"{c['source'][:200]}\n-> {c.get('raw_error', '')[-500:]}" for c in failed
    )


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_solution_gets_full_marks_from_the_trusted_grader(executed, name):
    result = executed[2][name]
    assert result["score"] == result["max_score"] > 0, [
        c for c in result["cells"] if c["kind"] == "auto" and c["status"] != "passed"
    ]
    assert not result["problems"], result["problems"]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_release_notebook_runs_to_the_end_and_fails_every_test(executed, name):
    result = executed[1][name]
    assert result["tests"] > 0
    assert not result["unexecuted"], f"cells not run (the kernel died?): {result['unexecuted']}"
    assert not result["passed"], (
        f"autograded tests that an untouched notebook passes: {result['passed']}"
    )


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_cells_the_release_run_leaves_out_are_the_solutions_own(name):
    """What makes the release run's trim safe: each cell it leaves out is a cell of the solution,
    unchanged, which tests/notebooks/test_solutions_run.py runs in a plain kernel."""
    from notebook_probes import without_figures

    source = nbformat.read(SOURCES[name], as_version=4)
    release = release_notebook(source, name)
    kept = {c.id for c in without_figures(release).cells}
    left_out = [c for c in release.cells if c.id not in kept]
    solution = {c.id: c.source for c in source.cells}
    assert all(c.cell_type == "code" for c in left_out)
    changed = [c.id for c in left_out if solution.get(c.id) != c.source]
    assert not changed, (
        f"cells left out of the release run that differ from the solution's: {changed}"
    )


# ----------------------------------------------------------------------- raw nbgrader autograde

#: nbgrader's defaults and nothing of the course's (no coursetools, no preprocessors changed).
PLAIN_CONFIG = """c = get_config()  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = "sqlite:///" + {db!r}
c.Execute.timeout = 300
"""


def _test_cells(nb) -> dict[str, float]:
    """grade_id -> points of the autograded test cells (graded, not an answer)."""
    return {
        meta["grade_id"]: float(meta.get("points", 0) or 0)
        for cell in nb.cells
        if (meta := cell.metadata.get("nbgrader", {})).get("grade") and not meta.get("solution")
    }


def _raw_nbgrader(assignment: str) -> dict[str, dict[str, float]]:
    """``nbgrader generate_assignment`` then ``nbgrader autograde`` on the example class.

    A course directory of its own, in a temporary folder, with :data:`PLAIN_CONFIG`; Jupyter
    and IPython configuration directories empty, so nothing of this machine's or the course's
    configuration applies. Returns {student: {grade_id: points}} for the test cells.
    """
    from nbgrader.api import Gradebook

    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / "course"
        shutil.copytree(
            SOLUTIONS / assignment,
            course / "source" / assignment,
            ignore=shutil.ignore_patterns(".ipynb_checkpoints"),
        )
        db = course / "gradebook.db"
        (course / "nbgrader_config.py").write_text(
            PLAIN_CONFIG.format(root=str(course), db=str(db)), encoding="utf-8"
        )
        for name in ("jupyter-config", "jupyter-data", "ipython"):
            (Path(tmp) / name).mkdir()
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("JUPYTER", "IPYTHON", "PYTHON"))
        }
        env.update(
            JUPYTER_CONFIG_DIR=str(Path(tmp) / "jupyter-config"),
            JUPYTER_DATA_DIR=str(Path(tmp) / "jupyter-data"),
            IPYTHONDIR=str(Path(tmp) / "ipython"),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",  # alembic
        )
        _make_class().make_class(SOLUTIONS, course / "submitted", [assignment])
        for command in ("generate_assignment", "autograde"):
            done = subprocess.run(
                [sys.executable, "-m", "nbgrader", command, assignment, "--force"],
                cwd=course,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert done.returncode == 0, done.stderr[-3000:]
        tests = _test_cells(nbformat.read(SOURCES[assignment], as_version=4))
        scores: dict[str, dict[str, float]] = {}
        with Gradebook("sqlite:///" + str(db)) as gradebook:
            for submission in gradebook.assignment_submissions(assignment):
                scores[submission.student.id] = {
                    grade.name: float(grade.score)
                    for notebook in submission.notebooks
                    for grade in notebook.grades
                    if grade.name in tests
                }
        return scores


def _trusted(assignment: str, student: str) -> dict:
    """The trusted grader's result for a student of the example class (``grade_job``, as make grade)."""
    from coursetools.grading.grade import grade_job
    from coursetools.grading.job import Job, Options

    source = SOURCES[assignment]
    nb = nbformat.read(source, as_version=4)
    files = {
        p.name: p.read_bytes()
        for p in source.parent.iterdir()
        if p.is_file() and p.suffix != ".ipynb"
    }
    return grade_job(
        Job(
            student=student,
            assignment=assignment,
            source=nbformat.writes(nb),
            release=notebook_bytes(release_notebook(nb, assignment)).decode(),
            submission=_make_class().student_notebooks(source)[student],
            notebook_name=f"{assignment}.ipynb",
            files=files,
            options=Options(cell_timeout=300.0, notebook_timeout=900.0),
        )
    )


def _points(result: dict) -> dict[str, float]:
    """grade_id -> points of each autograded test cell of a trusted grader's result."""
    assert not result["problems"], result["problems"]
    cells = {c["grade_id"]: float(c["points"]) for c in result["cells"] if c["kind"] == "auto"}
    assert sum(cells.values()) == result["score"]
    return cells


@pytest.mark.parametrize("assignment", RAW_ASSIGNMENTS)
def test_raw_nbgrader_gives_the_example_class_the_trusted_graders_scores(executed, assignment):
    raw, graded = executed[3], executed[4]
    trusted = {(assignment, s): _points(graded[assignment, s]) for s in STUDENTS}
    tests = _test_cells(nbformat.read(SOURCES[assignment], as_version=4))
    assert sorted(raw[assignment]) == sorted(STUDENTS)
    for student in STUDENTS:
        by_raw, by_trusted = raw[assignment][student], trusted[assignment, student]
        assert set(by_raw) == set(by_trusted) == set(tests)
        differing = {g: (by_raw[g], by_trusted[g]) for g in tests if by_raw[g] != by_trusted[g]}
        assert not differing, f"{student}: (raw nbgrader, trusted grader) per test: {differing}"
    # the class spans the range, so equal scores are not equal by being all zero or all full
    total = sum(tests.values())
    scores = {s: sum(trusted[assignment, s].values()) for s in STUDENTS}
    assert scores["ada_full"] == total > scores["bob_partial"] > scores["cy_blank"] == 0.0
