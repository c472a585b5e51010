"""Shared fixtures.

Statistical tests take ``rng_seed``: they must pass for *every* seed, because their tolerances come
from concentration bounds with a false-failure probability of at most 1e-9 per assertion. CI runs
them with a seed drawn fresh each run (printed in the header, and reproducible with
``DPLIB_TEST_SEED=<seed> make test``).
"""

import os
import secrets

import pytest

_SEED = int(os.environ.get("DPLIB_TEST_SEED", secrets.randbits(32)))
# Test modules that read the variable directly (SEED = int(os.environ[...])) see the same seed.
os.environ["DPLIB_TEST_SEED"] = str(_SEED)


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
