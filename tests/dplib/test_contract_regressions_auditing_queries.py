"""Regression tests for the issue-9 contract fixes in dplib.auditing, dplib.queries.selection and
dplib.queries.aggregates: each shortest failing call of ``tests/support/contract_gaps.py`` now either raises a
ValueError/TypeError naming the hostile argument (before any randomness is drawn) or returns
the right finite value."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import dplib


def _laplace_unit(x, rng, size=None):
    return x + rng.laplace(0.0, 1.0, size)


def _names(name: str) -> str:
    return rf"(?<![\w]){re.escape(name)}(?![\w])"


class _CountingGenerator:
    """Wraps a Generator's state check: nothing may be drawn when a call is refused."""

    def __init__(self, seed: int = 0) -> None:
        self.gen = np.random.default_rng(seed)
        self.state = self.gen.bit_generator.state

    def untouched(self) -> bool:
        return self.gen.bit_generator.state == self.state


# ----------------------------------------------------------------------------- audit_mechanism
def test_audit_mechanism_refuses_huge_n_samples_at_once():
    # was: audit_mechanism(..., n_samples=10**9) hung (8 GB of outputs per input)
    g = _CountingGenerator()
    with pytest.raises(ValueError, match=_names("n_samples") + r".*10\*\*7"):
        dplib.audit_mechanism(
            _laplace_unit, 0.0, 1.0, 1.0, n_samples=10**9, vectorized=True, rng=g.gen
        )
    assert g.untouched()
    with pytest.raises(ValueError, match=_names("n_samples")):
        dplib.audit_mechanism(_laplace_unit, 0.0, 1.0, 1.0, n_samples=2**70, vectorized=True, rng=0)


@pytest.mark.parametrize("bins", [2**70, 10**9])
def test_audit_mechanism_refuses_huge_bins(bins):
    # was: numpy's 'Maximum allowed size exceeded' / MemoryError
    with pytest.raises(ValueError, match=_names("bins")):
        dplib.audit_mechanism(
            _laplace_unit, 0.0, 1.0, 1.0, n_samples=1000, vectorized=True, bins=bins, rng=0
        )


def test_audit_mechanism_refuses_confidence_whose_complement_rounds_to_one():
    # was: "failure_prob must be in (0, 1), got 1.0"
    with pytest.raises(ValueError, match=_names("confidence")):
        dplib.audit_mechanism(
            _laplace_unit, 0.0, 1.0, 1.0, n_samples=1000, confidence=5e-324, vectorized=True, rng=0
        )


@pytest.mark.parametrize(
    "which, value, error",
    [
        ("a", float("-inf"), ValueError),  # was: 'mechanism returned NaN or infinite outputs'
        ("a", float("nan"), ValueError),
        ("b", float("inf"), ValueError),
        ("a", None, TypeError),  # was: "unsupported operand type(s) for +: 'NoneType' ..."
        ("b", "5", TypeError),  # was: UFuncTypeError not naming b
        ("a", [], ValueError),  # was: 'operands could not be broadcast together ...'
        ("b", np.zeros((2, 2)), ValueError),
        ("b", 1 + 2j, ValueError),  # was: '... got complex numbers' not naming b
    ],
)
def test_audit_mechanism_names_the_input_the_mechanism_fails_on(which, value, error):
    a, b = (value, 1.0) if which == "a" else (0.0, value)
    with pytest.raises(error, match=r"^" + re.escape(which) + r" must be an input"):
        dplib.audit_mechanism(_laplace_unit, a, b, 1.0, n_samples=1000, vectorized=True, rng=0)


def test_audit_mechanism_unvectorized_bad_outputs_name_the_input():
    def one(x, rng):
        return x + rng.laplace()

    with pytest.raises(ValueError, match=r"^b must be an input"):
        dplib.audit_mechanism(one, 0.0, float("nan"), 1.0, n_samples=100, rng=0)


def test_audit_mechanism_still_flags_and_passes():
    halved = lambda x, rng, size: x + rng.laplace(0.0, 0.5, size)  # noqa: E731 - true eps = 2
    assert dplib.audit_mechanism(
        halved, 0.0, 1.0, 1.0, n_samples=20_000, vectorized=True, rng=0
    ).flagged
    fine = dplib.audit_mechanism(
        _laplace_unit, 0.0, 1.0, 1.0, n_samples=20_000, vectorized=True, rng=0
    )
    assert not fine.flagged and math.isfinite(fine.epsilon_lower_bound)
    # categorical outputs still work through the wrapper
    coin = lambda x, rng: "yes" if rng.random() < (0.75 if x else 0.25) else "no"  # noqa: E731
    res = dplib.audit_mechanism(coin, 1, 0, 0.5, n_samples=2000, rng=0)
    assert res.flagged  # true eps = ln 3 > 0.5


# ---------------------------------------------------------------------- audit_training_one_run
@pytest.mark.parametrize("estimator", [0, float("nan"), None, np.zeros(2), object()])
def test_audit_training_one_run_checks_estimator(estimator):
    # was: AttributeError: 'int' object has no attribute 'fit'
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(40, 2)), np.array([0, 1] * 20)
    cx, cy = rng.uniform(size=(8, 2)), np.array([0, 1] * 4)
    g = _CountingGenerator()
    with pytest.raises(TypeError, match=_names("estimator") + r".*fit.*predict_proba"):
        dplib.audit_training_one_run(estimator, X, y, cx, cy, k_pos=2, k_neg=2, rng=g.gen)
    assert g.untouched()


# ----------------------------------------------------------------------- loss_threshold_attack
@pytest.mark.parametrize("bad", [[], 0, float("nan"), None, "5", np.zeros((2, 2)), 1 + 2j, 2**70])
def test_loss_threshold_attack_names_model_or_losses(bad):
    # was: "losses must not be empty" (the parameter is model_or_losses)
    with pytest.raises((ValueError, TypeError), match=_names("model_or_losses")):
        dplib.loss_threshold_attack(bad)


def test_loss_threshold_attack_values_unchanged():
    assert dplib.loss_threshold_attack([0.1, 2.3, 0.7]).tolist() == [-0.1, -2.3, -0.7]


# ------------------------------------------------------------------- exponential_utility_bound
@pytest.mark.parametrize("sensitivity, epsilon", [(1e308, 1.0), (1.0, 5e-324)])
def test_exponential_utility_bound_refuses_a_bound_beyond_float_range(sensitivity, epsilon):
    # was: inf. The true value, 2 * 1e308 * ln(200) ~ 1.06e309, exceeds the largest double.
    with pytest.raises(ValueError, match=_names("sensitivity") + ".*" + _names("epsilon")):
        dplib.exponential_utility_bound(10, sensitivity, epsilon, 0.05)


def test_exponential_utility_bound_huge_but_finite_values():
    # Dwork & Roth (2014), Corollary 3.12: (2 Delta / epsilon) ln(|Y| / beta).
    assert dplib.exponential_utility_bound(100, 1.0, 1.0, 0.05) == pytest.approx(
        2.0 * math.log(100 / 0.05), rel=1e-15
    )
    # sensitivity / epsilon = 1e305 is finite and so is the bound: no spurious overflow
    assert dplib.exponential_utility_bound(10, 1e300, 1e-5, 0.05, monotonic=True) == pytest.approx(
        1e305 * math.log(200), rel=1e-14
    )
    # 2 * 1e307 * ln(200) ~ 1.0597e308 < 1.797e308: right value, not inf
    assert dplib.exponential_utility_bound(10, 1e307, 1.0, 0.05) == pytest.approx(
        2e307 * math.log(200), rel=1e-14
    )
    # a subnormal bound (about 1.4e-310) is computed, not flushed to 0
    assert dplib.exponential_utility_bound(1, 1e-300, 1e10, 0.5) == pytest.approx(
        1e-310 * 2 * math.log(2), rel=1e-6
    )


# --------------------------------------------------------------------------- private_histogram
@pytest.mark.parametrize("bins", [2**70, 10**9])
def test_private_histogram_refuses_huge_bins(bins):
    # was: numpy's 'Maximum allowed size exceeded' / MemoryError
    g = _CountingGenerator()
    with pytest.raises(ValueError, match=_names("bins") + r".*10\*\*7"):
        dplib.private_histogram([0.1, 0.5, 0.9], bins, 1.0, range=(0.0, 1.0), rng=g.gen)
    assert g.untouched()


@pytest.mark.parametrize(
    "bad",
    [
        "5",
        [],
        0,
        1e308,
        float("nan"),
        [1, 2, 3],
        np.array([[0.0, 0.0], [0.0, 0.0]]),
        np.array([1 + 1j, 2]),
        np.array([np.nan, 1.0]),
        np.array([1e308, 1e308]),
        1 + 2j,
        (-1e308, 1e308),
        (0.0, 5e-324),
    ],
)
def test_private_histogram_names_range(bad):
    # was: "check_bounds() missing 1 required positional argument: 'upper'" and the like
    g = _CountingGenerator()
    with pytest.raises((ValueError, TypeError), match=_names("range")):
        dplib.private_histogram([0.1, 0.5, 0.9], 10, 1.0, range=bad, rng=g.gen)
    assert g.untouched()


def test_private_histogram_still_works():
    counts, edges = dplib.private_histogram([0.1, 0.5, 0.9], 2, 1e6, range=(0.0, 1.0), rng=0)
    assert edges.tolist() == [0.0, 0.5, 1.0]
    assert counts.tolist() == [1, 2]  # epsilon 1e6: the discrete Laplace noise is 0


# ------------------------------------------------------------------ private_median / private_mode
@pytest.mark.parametrize("size", [2**70, 10**9])
def test_private_median_refuses_huge_size(size):
    # was: OverflowError: Python int too large to convert to C long / MemoryError
    g = _CountingGenerator()
    with pytest.raises(ValueError, match=_names("size") + r".*10\*\*7"):
        dplib.private_median([0.1, 0.4, 0.8], 0.0, 1.0, 1.0, rng=g.gen, size=size)
    assert g.untouched()


@pytest.mark.parametrize("grid", [2**70, 10**9])
def test_private_median_refuses_huge_grid(grid):
    # was: 'Maximum allowed size exceeded' / MemoryError
    with pytest.raises(ValueError, match=_names("grid") + r".*10\*\*7"):
        dplib.private_median([0.1, 0.4, 0.8], 0.0, 1.0, 1.0, grid=grid, rng=0)


@pytest.mark.parametrize("k", [2**70, 10**9])
def test_private_mode_refuses_huge_k(k):
    # was: OverflowError: Python int too large to convert to C long / MemoryError
    g = _CountingGenerator()
    with pytest.raises(ValueError, match=_names("k") + r".*10\*\*7"):
        dplib.private_mode([0, 1, 1, 2], k, 1.0, rng=g.gen)
    assert g.untouched()


def test_private_median_and_mode_still_work():
    assert dplib.private_median([0.1, 0.4, 0.8], 0.0, 1.0, 1.0, rng=0, size=5).shape == (5,)
    assert 0 <= dplib.private_mode([0, 1, 1, 2], 3, 1.0, rng=0) < 3
