"""Tests of dplib.testing.laplace_noise: an exact test of a Laplace noise scale and a test of
independence between two noise arrays.

Reference figures:
- the sum of n absolute values of Laplace(b) noise is Gamma(n, b) (|Z| ~ Exponential(b));
  its quantiles are compared with scipy.stats.gamma (an independent implementation) and with
  the Wilson-Hilferty approximation;
- the difference of two independent Laplace(b) variables has density
  (1 + |z|/b) exp(-|z|/b) / (4b) (e.g. Kotz, Kozubowski & Podgorski, "The Laplace
  Distribution and Generalizations", 2001, Section 2.3); its cdf is checked against numerical
  integration of that density and against a simulation.
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dplib.testing.laplace_noise import (
    assert_independent_laplace,
    assert_laplace_scale,
    laplace_difference_cdf,
    laplace_scale_tolerance,
)


def test_tolerance_matches_gamma_quantiles():
    # n = 20000, p = 1e-9: the mean |Z| / b lies in [lo, hi] except with probability 1e-9
    lo, hi = laplace_scale_tolerance(20_000, 1e-9)
    assert math.isclose(lo, stats.gamma(20_000).ppf(5e-10) / 20_000, rel_tol=1e-9)
    assert math.isclose(hi, stats.gamma(20_000).isf(5e-10) / 20_000, rel_tol=1e-9)
    # Wilson-Hilferty: Gamma(n) ~ n (1 - 1/(9n) + z sqrt(1/(9n)))^3, z = 6.109 for 5e-10
    z = stats.norm.isf(5e-10)
    wh = (1 - 1 / (9 * 20_000) + z * math.sqrt(1 / (9 * 20_000))) ** 3
    assert abs(hi - wh) < 1e-4
    assert 0.95 < lo < 1 < hi < 1.05


def test_power_against_ten_percent_from_20000_draws():
    # a 10% error in either direction is outside the tolerance by more than 4.7 standard
    # deviations of the mean (miss probability < 1e-6) at n = 20000
    lo, hi = laplace_scale_tolerance(20_000, 1e-9)
    sd = 1 / math.sqrt(20_000)
    assert 1.1 - 4.75 * 1.1 * sd > hi
    assert 0.9 + 4.75 * 0.9 * sd < lo


@pytest.mark.parametrize("seed", range(5))
def test_correct_scale_passes(seed):
    rng = np.random.default_rng(seed)
    assert_laplace_scale(rng.laplace(3.0, 2.0, 20_000), 2.0, loc=3.0)
    assert_laplace_scale(rng.laplace(0.0, 0.5, (100, 200)), 0.5)


@pytest.mark.parametrize("factor", [0.9, 1.1])
def test_ten_percent_off_fails(factor):
    for seed in range(5):
        rng = np.random.default_rng(seed)
        with pytest.raises(AssertionError, match="scale"):
            assert_laplace_scale(rng.laplace(0.0, 2.0 * factor, 20_000), 2.0)


def test_wrong_location_fails():
    rng = np.random.default_rng(1)
    with pytest.raises(AssertionError):
        assert_laplace_scale(rng.laplace(0.5, 1.0, 20_000), 1.0, loc=0.0)


def test_difference_cdf_reference():
    b = 1.7
    dens = lambda z: (1 + abs(z) / b) * math.exp(-abs(z) / b) / (4 * b)  # noqa: E731
    for x in (-5.0, -1.0, 0.0, 0.3, 2.0, 9.0):
        want = integrate.quad(dens, -np.inf, x)[0]
        assert math.isclose(float(laplace_difference_cdf(x, b)), want, rel_tol=1e-9, abs_tol=1e-12)
    assert float(laplace_difference_cdf(0.0, b)) == 0.5
    xs = np.linspace(-10, 10, 7)
    assert np.allclose(laplace_difference_cdf(xs, b), [laplace_difference_cdf(x, b) for x in xs])


@pytest.mark.parametrize("seed", range(5))
def test_independent_noise_passes(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.laplace(0, 2.0, 10_000), rng.laplace(0, 2.0, 10_000)
    assert_independent_laplace(a, b, 2.0)


def test_shared_noise_fails():
    rng = np.random.default_rng(0)
    z = rng.laplace(0, 1.0, 10_000)
    with pytest.raises(AssertionError, match="independent"):
        assert_independent_laplace(z, z.copy(), 1.0)
    # half shared: Z1 = A + B1, Z2 = A + B2 rescaled to the same marginal scale is not Laplace,
    # but a 50/50 mixture of shared and fresh noise is caught too
    w = rng.laplace(0, 1.0, 10_000)
    mixed = np.where(rng.random(10_000) < 0.5, z, w)
    with pytest.raises(AssertionError):
        assert_independent_laplace(z, mixed, 1.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: assert_laplace_scale([], 1.0),
        lambda: assert_laplace_scale([1.0, np.nan], 1.0),
        lambda: assert_laplace_scale([1.0], 0.0),
        lambda: assert_laplace_scale([1.0], -1.0),
        lambda: assert_laplace_scale([1.0], math.inf),
        lambda: assert_laplace_scale([1.0], 1.0, failure_prob=0.0),
        lambda: assert_laplace_scale([1.0], 1.0, loc=math.nan),
        lambda: assert_independent_laplace([1.0, 2.0], [1.0], 1.0),
        lambda: assert_independent_laplace([], [], 1.0),
        lambda: laplace_difference_cdf(0.0, 0.0),
        lambda: laplace_scale_tolerance(0, 1e-9),
        lambda: laplace_scale_tolerance(10, 1.5),
    ],
)
def test_bad_input_raises_value_error(call):
    with pytest.raises((ValueError, TypeError)):
        call()
