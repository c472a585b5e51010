"""Every solution notebook runs anywhere (issue 29): Run All in a plain kernel, and raw nbgrader.

The trusted grader (``make grade``) is the one whose grades count, but the notebooks must not
need it to run:

- every notebook in ``solutions/`` runs top to bottom with nbclient in a plain ``python3``
  kernel, hidden tests included, as an instructor's *Run All* in JupyterLab does: no cell raises
  and every autograded test cell gets its full points by nbgrader's own rule
  (``nbgrader.utils.determine_grade``: an error *or any output on stderr* is 0), so the hidden
  tests' batched calls (``coursetools.authoring.hidden_tests.repeat``/``map_calls``) work on plain functions;
- raw ``nbgrader autograde``, with a plain configuration (none of the course's), gives the
  example class (``examples/make_class.py``: ada_full, bob_partial, cy_blank) exactly the scores
  the trusted grader gives it (``coursetools.grading.grade.grade_job``, what ``make grade`` runs).

The nine solutions run once, two at a time (one per core). The raw-nbgrader comparison runs on
:data:`RAW_ASSIGNMENTS` only: it grades each of their three students twice (raw, then trusted),
which for all nine would add about six minutes to ``make test``; every notebook's ada_full and
cy_blank scores are already checked against the trusted grader by ``tests/test_release.py``.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from coursetools.authoring.release import find_assignments

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
SOURCES = {name: SOLUTIONS / name / f"{name}.ipynb" for name in find_assignments(SOLUTIONS)}
#: The notebooks graded by raw nbgrader and by the trusted grader, three students each: the two
#: cheapest to run (about 5 s each), so the comparison adds well under a minute to make test.
RAW_ASSIGNMENTS = ("01_randomized_response", "08_dp_in_practice")
STUDENTS = ("ada_full", "bob_partial", "cy_blank")


def _run_solution(path: str) -> dict:
    """The solution notebook executed by nbclient in a plain kernel: per-cell outcomes, seconds."""
    from nbclient import NotebookClient
    from nbgrader import utils

    source = Path(path)
    nb = nbformat.read(source, as_version=4)
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        allow_errors=True,  # every failing cell is reported, not only the first
        resources={"metadata": {"path": str(source.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    errors = [
        f"{c.source[:80]!r}: {o.get('ename')}: {o.get('evalue', '')[:300]}"
        for c in code
        for o in c.outputs
        if o.output_type == "error"
    ]
    tests = {}
    for c in code:
        if utils.is_grade(c) and not utils.is_solution(c):
            score, points = utils.determine_grade(c)
            stderr = "".join(
                o.get("text", "") for o in c.outputs if o.output_type == "stream" and o.name == "stderr"
            )
            tests[c.metadata.nbgrader["grade_id"]] = (score, points, stderr[:300])
    return {
        "seconds": seconds,
        "unexecuted": [c.source[:60] for c in code if c.execution_count is None],
        "errors": errors,
        "tests": tests,
    }


@pytest.fixture(scope="module")
def plain_runs():
    with cf.ProcessPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(_run_solution, str(path)) for name, path in SOURCES.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_solution_runs_top_to_bottom_in_a_plain_kernel(plain_runs, name):
    result = plain_runs[name]
    assert not result["unexecuted"], f"cells not run (the kernel died?): {result['unexecuted']}"
    assert not result["errors"], "\n".join(result["errors"])


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_test_cell_passes_in_a_plain_kernel(plain_runs, name):
    tests = plain_runs[name]["tests"]
    assert tests, "a solution notebook without autograded tests"
    failed = {gid: t for gid, t in tests.items() if t[0] != t[1]}
    assert not failed, failed


# ----------------------------------------------------------------------- raw nbgrader autograde

#: nbgrader's defaults and nothing of the course's (no coursetools, no preprocessors changed).
PLAIN_CONFIG = """c = get_config()  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = "sqlite:///" + {db!r}
c.Execute.timeout = 300
"""


def _make_class():
    from coursetools.authoring import example_class

    return example_class


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
                cwd=course, env=env, capture_output=True, text=True, timeout=900,
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


def _trusted(assignment: str, student: str) -> dict[str, float]:
    """The trusted grader's points per test cell (``coursetools.grading.grade.grade_job``, as make grade)."""
    from coursetools.authoring.release import notebook_bytes, release_notebook
    from coursetools.grading.grade import Job, Options, grade_job

    source = SOURCES[assignment]
    nb = nbformat.read(source, as_version=4)
    files = {
        p.name: p.read_bytes() for p in source.parent.iterdir() if p.is_file() and p.suffix != ".ipynb"
    }
    result = grade_job(
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
    assert not result["problems"], result["problems"]
    cells = {c["grade_id"]: float(c["points"]) for c in result["cells"] if c["kind"] == "auto"}
    assert sum(cells.values()) == result["score"]
    return cells


@pytest.fixture(scope="module")
def raw_and_trusted():
    with cf.ProcessPoolExecutor(max_workers=2) as pool:
        raw = {a: pool.submit(_raw_nbgrader, a) for a in RAW_ASSIGNMENTS}
        trusted = {
            (a, s): pool.submit(_trusted, a, s) for a in RAW_ASSIGNMENTS for s in STUDENTS
        }
        return {a: f.result() for a, f in raw.items()}, {k: f.result() for k, f in trusted.items()}


@pytest.mark.parametrize("assignment", RAW_ASSIGNMENTS)
def test_raw_nbgrader_gives_the_example_class_the_trusted_graders_scores(raw_and_trusted, assignment):
    raw, trusted = raw_and_trusted
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
