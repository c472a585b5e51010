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

import pytest

_SEED = int(os.environ.get("DPLIB_TEST_SEED", secrets.randbits(32)))
# Test modules that read the variable directly (SEED = int(os.environ[...])) see the same seed.
os.environ["DPLIB_TEST_SEED"] = str(_SEED)

#: Test files that start a kernel, a sandbox, a grader, a hub or execute notebooks: ``slow``, so
#: ``make test-fast`` leaves them out (``make test`` runs them all).
SLOW_FILES = {
    "test_book.py": "builds and executes a course",
    "test_budget.py": "grades notebooks in sandboxes",
    "test_cli_week.py": "runs make-style commands that grade",
    "test_collect.py": "grades collected submissions",
    "test_contract.py": "drives every public name in forked children (minutes)",
    "test_feedback_outputs.py": "grades in sandboxes",
    "test_forkserver.py": "starts the trusted fork server",
    "test_gradebook.py": "grades into nbgrader's gradebook",
    "test_grading.py": "grades a hostile class",
    "test_grading_adversarial.py": "grades hostile submissions",
    "test_handin.py": "runs the hand-in service",
    "test_hub.py": "runs a JupyterHub",
    "test_hub_handin.py": "runs a JupyterHub and the hand-in service",
    "test_limits.py": "starts sandboxed kernels",
    "test_nbgrader_buttons.py": "runs nbgrader's commands",
    "test_release.py": "executes every notebook",
    "test_sandbox_hardening.py": "grades in sandboxes",
    "test_solutions_run.py": "executes every solution notebook",
    "test_student_copy.py": "runs the student copy command",
    "test_trusted.py": "starts trusted runners",
    **{
        f"test_notebook0{n}_exercises.py": "grades wrong answers with the trusted grader"
        for n in range(9)
    },
}

#: The files that take longest (wall seconds with two workers; from ``--durations``), first.
HEAVY = {
    "test_notebook08_exercises.py": 566,
    "test_notebook07_exercises.py": 446,
    "test_release.py": 330,
    "test_notebook04_exercises.py": 202,
    "test_solutions_run.py": 55,
    "test_grading.py": 120,
    "test_notebook05_exercises.py": 102,
    "test_hub_handin.py": 84,
    "test_notebook06_exercises.py": 83,
    "test_notebook02_exercises.py": 72,
    "test_nbgrader_buttons.py": 65,
    "test_notebook00_exercises.py": 58,
    "test_notebook03_exercises.py": 54,
    "test_hub.py": 53,
    "test_sandbox_hardening.py": 40,
    "test_budget.py": 32,
    "test_notebook01_exercises.py": 22,
    "test_grading_adversarial.py": 20,
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


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    # The heavy files first, then the rest in collection order (a stable sort: a file's tests
    # stay together and in order). xdist hands files out in this order (--no-loadscope-reorder).
    items.sort(key=lambda item: -HEAVY.get(item.path.name, 0))


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
