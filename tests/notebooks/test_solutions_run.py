"""Every solution notebook runs anywhere (issue 29): Run All in a plain kernel.

The trusted grader (``make grade``) is the one whose grades count, but the notebooks must not
need it to run: every notebook in ``solutions/`` runs top to bottom with nbclient in a plain
``python3`` kernel, hidden tests included, as an instructor's *Run All* in JupyterLab does: no cell
raises and every autograded test cell gets its full points by nbgrader's own rule
(``nbgrader.utils.determine_grade``: an error *or any output on stderr* is 0), so the hidden
tests' batched calls (``coursetools.authoring.hidden_tests.repeat``/``map_calls``) work on plain
functions.

This is the one run in a plain kernel of every cell, figures and experiments included: the
Validator's run of the filled release (``tests/coursetools/authoring/test_release.py``) leaves out
what no test needs. The solutions run once each, two at a time (one per core). That raw ``nbgrader autograde`` gives
the example class the trusted grader's scores is checked in ``tests/coursetools/authoring/test_release.py``, which
grades every solution with the trusted grader already (each notebook is graded once per run).
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from pathlib import Path

import nbformat
import pytest

from coursetools.authoring.release import find_assignments

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions"
SOURCES = {name: SOLUTIONS / name / f"{name}.ipynb" for name in find_assignments(SOLUTIONS)}


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
