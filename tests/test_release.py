"""The student release is exactly what `make release` generates from solutions/, and it is sound.

- notebooks/ is byte-for-byte what coursetools.authoring.release regenerates (no drift, no hand edits);
- generation is deterministic (twice the same bytes; stable cell ids, no outputs, fixed metadata);
- no solution text and no hidden test reaches a release notebook;
- every solution notebook passes all its tests with nbgrader's own Validator (``nbgrader
  validate`` exits 0 even when cells fail, so the API's result is checked);
- every release notebook runs to the end and fails every autograded test cell.

Parametrized over every notebook under solutions/ plus the pilot fixture (tests/fixtures), so a
new notebook is covered as soon as it lands. The notebooks run two at a time (one per core),
once per session.
"""

from __future__ import annotations

import concurrent.futures as cf
from pathlib import Path

import nbformat
import pytest

from coursetools.authoring.release import (
    BEGIN_HIDDEN,
    BEGIN_SOLUTION,
    END_HIDDEN,
    END_SOLUTION,
    find_assignments,
    hidden_test_regions,
    notebook_bytes,
    release_all,
    release_notebook,
)

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS, NOTEBOOKS = ROOT / "solutions", ROOT / "notebooks"
PILOT = ROOT / "tests" / "fixtures" / "solutions"

SOURCES = {name: SOLUTIONS / name / f"{name}.ipynb" for name in find_assignments(SOLUTIONS)}
SOURCES["pilot"] = PILOT / "pilot" / "pilot.ipynb"


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
    """nbgrader's Validator on the release with every answer filled in (the student's button)."""
    import tempfile

    from nbgrader.validator import Validator
    from traitlets.config import Config

    source = Path(path)
    with tempfile.TemporaryDirectory() as tmp:
        for data in source.parent.iterdir():
            if data.is_file() and data.suffix != ".ipynb":
                (Path(tmp) / data.name).write_bytes(data.read_bytes())
        filled = Path(tmp) / source.name
        filled.write_bytes(_make_class().student_notebooks(source)["ada_full"])
        return Validator(config=Config({"Execute": {"timeout": 600}})).validate(str(filled))


def _make_class():
    from coursetools.authoring import example_class

    return example_class


def _grade_solution(path: str) -> dict:
    """The solution as a student would hand it in, graded by the real (trusted) grader."""
    from coursetools.grading.grade import Job, Options, grade_job

    source = Path(path)
    name = source.stem
    nb = nbformat.read(source, as_version=4)
    files = {
        p.name: p.read_bytes() for p in source.parent.iterdir() if p.is_file() and p.suffix != ".ipynb"
    }
    job = Job(
        student="solution",
        assignment=name,
        source=nbformat.writes(nb),
        release=notebook_bytes(release_notebook(nb, name)).decode(),
        submission=_make_class().student_notebooks(source)["ada_full"],
        notebook_name=f"{name}.ipynb",
        files=files,
        options=Options(cell_timeout=300.0, notebook_timeout=900.0),
    )
    return grade_job(job)


def _run_release(payload: tuple[str, str]) -> dict:
    """Execute a release notebook with nbgrader's Execute preprocessor; score with nbgrader."""
    from nbgrader import utils
    from nbgrader.preprocessors import Execute
    from traitlets.config import Config

    name, path = payload
    nb = release_notebook(nbformat.read(path, as_version=4), name)
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
    """Every source validated and every release run, two notebooks at a time."""
    with cf.ProcessPoolExecutor(max_workers=2) as pool:
        validations = {
            n: pool.submit(_validate_filled_release, str(p)) for n, p in SOURCES.items()
        }
        releases = {n: pool.submit(_run_release, (n, str(p))) for n, p in SOURCES.items()}
        graded = {n: pool.submit(_grade_solution, str(p)) for n, p in SOURCES.items()}
        return (
            {n: f.result() for n, f in validations.items()},
            {n: f.result() for n, f in releases.items()},
            {n: f.result() for n, f in graded.items()},
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
