"""Shared fixtures, the run's seed, the ``slow`` mark and how ``make test`` shares out the files.

Statistical tests take ``rng_seed``: they must pass for *every* seed, because their tolerances come
from concentration bounds with a false-failure probability of at most 1e-9 per assertion. CI runs
them with a seed drawn fresh each run (printed in the header, and reproducible with
``DPLIB_TEST_SEED=<seed> make test``). Under pytest-xdist every worker uses the controller's seed.

``make test`` runs the suite on pytest-xdist workers (``-n 2 --dist loadfile``): a file runs
whole on one worker, so its module fixtures (a graded class, a built book, notebook runs) run
once. The files that take longest (:data:`HEAVY`) are handed out first, so that the last file to
finish is a short one. ``make test-fast`` deselects the ``slow`` tests: every test in the files of
:data:`SLOW_FILES` (kernels, sandboxes, notebook runs, hubs, graders) and the tests marked
``@pytest.mark.slow`` one by one.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# One BLAS thread in every process the tests start (kernels, graders, workers), as make test sets
# for the workers themselves: on two cores, two workers' two-thread BLAS calls wait on each other.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

_SEED = int(os.environ.get("DPLIB_TEST_SEED", secrets.randbits(32)))
# Test modules that read the variable directly (SEED = int(os.environ[...])) see the same seed.
os.environ["DPLIB_TEST_SEED"] = str(_SEED)

#: Test files (paths under tests/) that start a kernel, a sandbox, a grader, a hub or execute notebooks: ``slow``, so
#: ``make test-fast`` leaves them out (``make test`` runs them all).
SLOW_FILES = {
    "coursetools/book/test_build.py": "builds and executes a course",
    "coursetools/grading/sandboxed/test_budget.py": "grades notebooks in sandboxes",
    "coursetools/test_cli.py": "runs make-style commands that grade",
    "coursetools/grading/classroom/test_collect.py": "grades collected submissions",
    "dplib/test_contract.py": "drives every public name in forked children (minutes)",
    "coursetools/grading/test_feedback_outputs.py": "grades in sandboxes",
    "coursetools/grading/trusted/test_forkserver.py": "starts the trusted fork server",
    "coursetools/grading/classroom/test_gradebook.py": "grades into nbgrader's gradebook",
    "coursetools/grading/test_grade.py": "grades a hostile class",
    "coursetools/grading/test_grade_adversarial.py": "grades hostile submissions",
    "coursetools/grading/handin/test_service.py": "runs the hand-in service",
    "deploy/test_hub.py": "runs a JupyterHub",
    "coursetools/grading/handin/test_hub_handin.py": "runs a JupyterHub and the hand-in service",
    "coursetools/grading/sandboxed/test_limits.py": "starts sandboxed kernels",
    "coursetools/grading/classroom/test_nbgrader_autograde.py": "runs nbgrader's commands",
    "coursetools/authoring/test_release.py": "executes every notebook",
    "coursetools/grading/sandboxed/test_sandbox.py": "grades in sandboxes",
    "notebooks/test_solutions_run.py": "executes every solution notebook",
    "coursetools/test_student_copy.py": "runs the student copy command",
    "coursetools/grading/trusted/test_runner.py": "starts trusted runners",
    "coursetools/exchange/test_server.py": "runs a JupyterHub and the exchange service",
    "coursetools/exchange/test_client.py": "runs a JupyterHub and nbgrader's commands",
    "coursetools/exchange/test_client_in_jupyterlab.py": "runs a JupyterHub, its servers and the grader",
    "coursetools/lms/test_launch.py": "runs a JupyterHub signing in from a test LMS",
    "coursetools/lms/test_lti_class.py": "runs a JupyterHub, the hand-in service and a class of 20",
    "coursetools/lms/test_open_assignment.py": "runs a Jupyter server and nbgrader's fetch",
    "coursetools/lms/test_outbox.py": "grades into a real gradebook",
    "coursetools/grading/classroom/test_gradebook_on_postgresql.py": "grades into PostgreSQL",
    **{
        f"notebooks/test_0{n}_exercises.py": "grades wrong answers with the trusted grader"
        for n in range(10)
    },
}

#: The files that take longest, first (wall seconds with two workers, from ``--durations`` on a quiet
#: two-core machine, 29 Nov 2026, make test's two workers: the sum of each file's setup, call and teardown).
HEAVY = {
    "coursetools/authoring/test_release.py": 123,
    "coursetools/grading/test_grade.py": 72,
    "notebooks/test_08_exercises.py": 70,
    "notebooks/test_04_exercises.py": 69,
    "notebooks/test_solutions_run.py": 59,
    "coursetools/grading/handin/test_hub_handin.py": 38,
    "coursetools/lms/test_lti_class.py": 38,
    "notebooks/test_05_exercises.py": 38,
    "notebooks/test_07_exercises.py": 35,
    "coursetools/grading/sandboxed/test_budget.py": 34,
    "notebooks/test_09_exercises.py": 24,
    "coursetools/grading/classroom/test_nbgrader_autograde.py": 24,
    "notebooks/test_02_exercises.py": 24,
    "coursetools/grading/sandboxed/test_sandbox.py": 14,
    "deploy/test_hub.py": 14,
    "notebooks/test_03_exercises.py": 13,
    "dplib/test_release_lattice.py": 12,
    "coursetools/grading/test_grade_adversarial.py": 12,
    "notebooks/test_00_exercises.py": 11,
    "coursetools/grading/test_feedback_outputs.py": 11,
    "notebooks/test_06_exercises.py": 11,
    "coursetools/book/test_build.py": 11,
    "dplib/test_contract.py": 11,
    "dplib/queries/test_partition_selection.py": 8,
    "dplib/queries/test_contributions.py": 8,
}


def pytest_configure(config):
    global _SEED
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:  # an xdist worker: the controller's seed, whatever the env says
        _SEED = workerinput["dplib_test_seed"]
        os.environ["DPLIB_TEST_SEED"] = str(_SEED)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist's controller: every worker gets this run's seed."""
    node.workerinput["dplib_test_seed"] = _SEED


def _relative(item) -> str:
    """The test file's path under tests/ (``dplib/test_contract.py``), the key of the tables above."""
    try:
        return item.path.relative_to(TESTS).as_posix()
    except ValueError:  # a doctest in dplib/
        return ""


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _relative(item) in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    # The heavy files first, then the rest in collection order (a stable sort: a file's tests
    # stay together and in order). xdist hands files out in this order (--no-loadscope-reorder).
    items.sort(key=lambda item: -HEAVY.get(_relative(item), 0))


def pytest_report_header(config):
    return f"dplib statistical tests: DPLIB_TEST_SEED={_SEED}"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The seed again at the end, where `pytest -q` (which drops the header) still shows it."""
    terminalreporter.write_line(
        f"statistical tests ran with DPLIB_TEST_SEED={_SEED}; replay: DPLIB_TEST_SEED={_SEED} make test"
    )


@pytest.fixture
def rng_seed(request) -> int:
    """A seed that differs per run and per test (derived from DPLIB_TEST_SEED and the test name)."""
    return (_SEED + sum(map(ord, request.node.nodeid)) * 7919) % 2**32
