"""Tests of dplib.mechanisms.gaussian: analytic and classic calibration, exact delta and epsilon,
and the Gaussian mechanism itself.

Statistical tests take their seed from ``SEED`` (overridable through the environment variable
``DPLIB_TEST_SEED``, to rerun them under many seeds); each of their assertions has a stated
false-failure probability of at most 1e-9.
"""

from __future__ import annotations

import itertools
import math
import os

import numpy as np
import pytest
from scipy import integrate, stats

from dplib.mechanisms.gaussian import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mechanism,
    gaussian_sigma,
)

SEED = int(os.environ.get("DPLIB_TEST_SEED", "20261122"))
FALSE_FAILURE = 1e-9  # per statistical assertion

# ---------------------------------------------------------------------------------------------
# Reference figures
# ---------------------------------------------------------------------------------------------

# (sensitivity, epsilon, delta, sigma). Sigma from dp-accounting 0.6.0 (Google),
# ``dp_accounting.get_sigma_gaussian(epsilon, delta, tol=1e-15) * sensitivity``, an independent
# implementation of Balle & Wang (2018), run in a throwaway virtualenv on 2026-11-22.
# diffprivlib 0.6.6 (IBM), ``GaussianAnalytic(epsilon=, delta=, sensitivity=)._scale``, agrees
# to better than 1e-10 relative on the rows marked "dpl"; on the others it loses precision
# (its Phi is 0.5 * (1 + erf(x)), which cancels in the tails): it gives 0.1513638073247769
# for epsilon = 50 (1% too large), 6.557818979596862 for delta = 1e-12 (5e-7 too small),
# 578.9979879813114 for (0.01, 1e-12) and 0.6830195302805182 for (10, 1e-10).
ANALYTIC_REFERENCE = [
    (1.0, 1.0, 1e-5, 3.7306316348159414),  # dpl 3.7306316348148236
    (1.0, 0.5, 1e-5, 7.0318266755824865),  # dpl 7.031826675581986
    (1.0, 0.1, 1e-6, 36.304690426195194),  # dpl 36.30469042621458
    (1.0, 3.0, 1e-6, 1.543861417775642),  # dpl 1.5438614177473857
    (2.0, 1.0, 1e-3, 5.149314037274409),  # dpl 5.149314037274428
    (1.0, 50.0, 1e-5, 0.14976060756083603),  # huge epsilon
    (1.0, 1.0, 1e-12, 6.557822067458828),  # tiny delta
    (1.0, 0.01, 1e-12, 578.9978670612381),  # tiny epsilon and delta
    (1.0, 10.0, 1e-10, 0.6830439672274813),
]


@pytest.mark.parametrize(("sensitivity", "epsilon", "delta", "expected"), ANALYTIC_REFERENCE)
def test_analytic_sigma_matches_dp_accounting(sensitivity, epsilon, delta, expected):
    sigma = gaussian_sigma(sensitivity, epsilon, delta)
    assert sigma == pytest.approx(expected, rel=1e-9)


def test_analytic_sigma_matches_pfl_research_case():
    # apple/pfl-research, tests/privacy/test_compute_parameters.py, TestAnalyticGM.test_specific:
    # "This example comes from an implementation entirely independent of the paper":
    # AnalyticGM_robust(epsilon=2.25, delta=0.00040834087) == approx(sqrt(2)) (sensitivity 1).
    assert gaussian_sigma(1.0, 2.25, 0.00040834087) == pytest.approx(math.sqrt(2), rel=1e-6)
    # and its inverse, to the 8 digits of the published delta
    assert gaussian_delta(math.sqrt(2), 1.0, 2.25) == pytest.approx(0.00040834087, rel=1e-8)


def test_classic_sigma_by_hand():
    # Dwork & Roth (2014), Theorem A.1: sigma = sqrt(2 ln(1.25/delta)) Delta / epsilon.
    # By hand for Delta = 1, epsilon = 0.5, delta = 1e-5: ln(125000) = 11.736069016284437,
    # sqrt(2 * 11.736069016284437) = 4.844805262605389, / 0.5 = 9.689610525210778.
    assert gaussian_sigma(1.0, 0.5, 1e-5, method="classic") == pytest.approx(
        9.689610525210778, rel=1e-12
    )
    # linear in the sensitivity
    assert gaussian_sigma(3.0, 0.5, 1e-5, method="classic") == pytest.approx(
        3 * 9.689610525210778, rel=1e-12
    )


def _delta_by_integration(sigma: float, sensitivity: float, epsilon: float) -> float:
    """delta(epsilon) = integral of (p(x) - e^eps q(x))_+ with p = N(Delta, s^2), q = N(0, s^2).

    The hockey-stick divergence between the outputs on two neighbours (Balle & Wang 2018,
    Section 2), integrated numerically: an evaluation independent of the closed form.
    """
    p = stats.norm(loc=sensitivity, scale=sigma)
    q = stats.norm(loc=0.0, scale=sigma)

    def integrand(x: float) -> float:
        return max(0.0, p.pdf(x) - math.exp(epsilon) * q.pdf(x))

    lo, hi = -12 * sigma, sensitivity + 12 * sigma
    # where p / q = e^eps: the integrand is zero to its left
    kink = sigma**2 * epsilon / sensitivity + sensitivity / 2
    value, _ = integrate.quad(integrand, lo, hi, points=[kink], epsabs=0, epsrel=1e-11, limit=200)
    return value


@pytest.mark.parametrize(
    ("sigma", "sensitivity", "epsilon"),
    [(1.0, 1.0, 0.0), (1.0, 1.0, 1.0), (3.0, 2.0, 0.5), (0.5, 1.0, 4.0), (10.0, 1.0, 0.01)],
)
def test_delta_matches_numerical_integration(sigma, sensitivity, epsilon):
    expected = _delta_by_integration(sigma, sensitivity, epsilon)
    assert gaussian_delta(sigma, sensitivity, epsilon) == pytest.approx(expected, rel=1e-8)


# ---------------------------------------------------------------------------------------------
# Round trips, safety, monotonicity, numerical stability
# ---------------------------------------------------------------------------------------------

EPSILONS = [1e-3, 0.1, 0.5, 1.0, 3.0, 10.0, 50.0, 1e3]
DELTAS = [1e-12, 1e-8, 1e-5, 1e-2, 0.3]


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_sigma_is_tight_and_on_the_safe_side(epsilon, delta):
    sigma = gaussian_sigma(1.0, epsilon, delta)
    assert math.isfinite(sigma) and sigma > 0
    achieved = gaussian_delta(sigma, 1.0, epsilon)
    assert achieved <= delta  # (epsilon, delta)-DP
    assert achieved >= delta * (1 - 1e-9)  # and not more noise than needed
    # a slightly smaller sigma is not (epsilon, delta)-DP any more
    assert gaussian_delta(sigma * (1 - 1e-6), 1.0, epsilon) > delta
    # the same with a sensitivity that is not 1
    sigma = gaussian_sigma(3.7, epsilon, delta)
    assert gaussian_delta(sigma, 3.7, epsilon) <= delta
    assert gaussian_delta(sigma * (1 - 1e-6), 3.7, epsilon) > delta


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_round_trip_sigma_epsilon_sigma(epsilon, delta):
    sigma = gaussian_sigma(1.0, epsilon, delta)
    assert gaussian_epsilon(sigma, 1.0, delta) == pytest.approx(epsilon, rel=1e-9)


@pytest.mark.parametrize(
    ("sigma", "epsilon"),
    [
        *itertools.product([0.2, 0.5, 1.0, 4.0], [0.01, 0.5, 2.0, 8.0]),
        (12.0, 0.5),
        (30.0, 0.1),
        (300.0, 0.001),
    ],
)
def test_round_trip_sigma_delta_sigma(sigma, epsilon):
    delta = gaussian_delta(sigma, 1.0, epsilon)  # from 0.99 down to 2e-225
    assert 0 < delta < 1
    assert gaussian_sigma(1.0, epsilon, delta) == pytest.approx(sigma, rel=1e-9)


@pytest.mark.parametrize("sigma", [0.2, 1.0, 5.0, 100.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 1e-3])
def test_round_trip_sigma_epsilon_delta(sigma, delta):
    epsilon = gaussian_epsilon(sigma, 1.0, delta)
    if epsilon == 0:
        # already (0, delta)-DP: then delta(0) <= delta
        assert gaussian_delta(sigma, 1.0, 0.0) <= delta
        return
    assert gaussian_delta(sigma, 1.0, epsilon) <= delta
    assert gaussian_delta(sigma, 1.0, epsilon) == pytest.approx(delta, rel=1e-8)
    assert gaussian_sigma(1.0, epsilon, delta) == pytest.approx(sigma, rel=1e-9)


def test_epsilon_is_zero_when_already_zero_delta_private():
    # delta(0) = 2 Phi(Delta / (2 sigma)) - 1 = 0.00399 for sigma = 100, Delta = 1
    assert gaussian_delta(100.0, 1.0, 0.0) == pytest.approx(2 * stats.norm.cdf(0.005) - 1)
    assert gaussian_epsilon(100.0, 1.0, 0.01) == 0.0
    assert gaussian_epsilon(100.0, 1.0, 0.001) > 0.0


def test_sigma_is_monotone_and_linear_in_sensitivity():
    grid_eps = np.geomspace(1e-3, 100, 30)
    sigmas = [gaussian_sigma(1.0, e, 1e-6) for e in grid_eps]
    assert np.all(np.diff(sigmas) < 0)  # more epsilon, less noise
    grid_delta = np.geomspace(1e-15, 0.5, 30)
    sigmas = [gaussian_sigma(1.0, 1.0, d) for d in grid_delta]
    assert np.all(np.diff(sigmas) < 0)  # more delta, less noise
    for factor in (1e-6, 0.25, 7.0, 1e6):
        assert gaussian_sigma(factor, 0.7, 1e-5) == pytest.approx(
            factor * gaussian_sigma(1.0, 0.7, 1e-5), rel=1e-12
        )


def test_delta_is_monotone():
    deltas = [gaussian_delta(s, 1.0, 1.0) for s in np.geomspace(0.1, 20, 40)]
    assert np.all(np.diff(deltas) < 0)
    deltas = [gaussian_delta(2.0, 1.0, e) for e in np.linspace(0, 10, 40)]
    assert np.all(np.diff(deltas) < 0)
    assert all(0 < d < 1 for d in deltas)


@pytest.mark.parametrize("epsilon", [1e-3, 0.05, 0.3, 0.6, 0.9, 0.999])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-3, 0.05])
def test_classic_is_never_below_analytic(epsilon, delta):
    classic = gaussian_sigma(1.0, epsilon, delta, method="classic")
    analytic = gaussian_sigma(1.0, epsilon, delta, method="analytic")
    assert classic >= analytic
    # the classic sigma is (epsilon, delta)-DP, as Theorem A.1 says
    assert gaussian_delta(classic, 1.0, epsilon) <= delta


def test_huge_epsilon_and_tiny_delta_are_stable():
    for epsilon, delta in [(50.0, 1e-5), (1e3, 1e-12), (1e5, 0.5), (1.0, 1e-12), (1e-5, 1e-12)]:
        sigma = gaussian_sigma(1.0, epsilon, delta)
        assert math.isfinite(sigma) and sigma > 0
        assert gaussian_delta(sigma, 1.0, epsilon) == pytest.approx(delta, rel=1e-6)
    # e^50 * Phi(b) would be 5e21 * (something below 1e-300) in linear space
    assert 0 < gaussian_delta(0.15, 1.0, 50.0) < 1e-4
    assert gaussian_delta(0.01, 1.0, 1e3) > 0


def test_limits_and_float_range():
    # epsilon -> 0: the (0, delta)-DP sigma, 2 Phi(Delta / (2 sigma)) - 1 = delta
    limit = 1.0 / (2 * stats.norm.ppf((1 + 1e-5) / 2))
    assert gaussian_sigma(1.0, 1e-300, 1e-5) == pytest.approx(limit, rel=1e-9)
    assert gaussian_delta(1e-320, 1e10, 1.0) == 1.0  # noise negligible: no privacy
    assert gaussian_delta(1e300, 1e-300, 1.0) == 0.0
    # Issue 9: no silent inf. No epsilon <= 1e300 reaches delta when sigma is negligible.
    with pytest.raises(ValueError, match="sigma / sensitivity must be large enough"):
        gaussian_epsilon(1e-200, 1.0, 1e-5)
    with pytest.raises(ValueError, match="sigma overflows a float"):
        gaussian_sigma(1e308, 1.0, 1e-5)
    with pytest.raises(ValueError, match="sigma overflows a float"):
        gaussian_sigma(1.0, 1e-310, 1e-5, method="classic")


def test_zero_sensitivity_needs_no_noise():
    assert gaussian_sigma(0.0, 1.0, 1e-5) == 0.0
    assert gaussian_sigma(0, 0.5, 1e-5, method="classic") == 0.0
    assert gaussian_delta(1.0, 0.0, 1.0) == 0.0
    assert gaussian_epsilon(1.0, 0.0, 1e-5) == 0.0
    out = gaussian_mechanism([1.5, -2.0], 0.0, 1.0, 1e-5, rng=SEED)
    np.testing.assert_array_equal(out, [1.5, -2.0])


# ---------------------------------------------------------------------------------------------
# The mechanism
# ---------------------------------------------------------------------------------------------


def test_stat_mechanism_mean_and_variance():
    sensitivity, epsilon, delta = 2.0, 0.5, 1e-5
    sigma = gaussian_sigma(sensitivity, epsilon, delta)  # 14.06; the classic sigma is 19.38
    value = np.full((400, 500), 3.0)
    noisy = gaussian_mechanism(value, sensitivity, epsilon, delta, rng=SEED, mechanism="textbook")
    assert noisy.shape == value.shape
    n = noisy.size
    # Mean of n i.i.d. N(3, sigma^2): (mean - 3) sqrt(n) / sigma ~ N(0, 1) exactly, so
    # |mean - 3| <= z sigma / sqrt(n) with z = Phi^-1(1 - 1e-9 / 2) fails with prob. 1e-9.
    z = stats.norm.isf(FALSE_FAILURE / 2)
    assert abs(noisy.mean() - 3.0) <= z * sigma / math.sqrt(n)
    # Sample variance of normals: (n - 1) s^2 / sigma^2 ~ chi2(n - 1) exactly (Cochran), so it
    # lies between the 0.5e-9 and 1 - 0.5e-9 quantiles except with probability 1e-9.
    statistic = (n - 1) * noisy.var(ddof=1) / sigma**2
    lo = stats.chi2.ppf(FALSE_FAILURE / 2, n - 1)
    hi = stats.chi2.isf(FALSE_FAILURE / 2, n - 1)
    assert lo <= statistic <= hi
    # power: had the classic sigma been used, even the smallest plausible statistic
    # (sigma_classic / sigma)^2 * lo would exceed hi, so this test would catch it
    sigma_classic = gaussian_sigma(sensitivity, epsilon, delta, method="classic")
    assert (sigma_classic / sigma) ** 2 * lo > hi


def test_scalar_in_float_out_and_shapes():
    out = gaussian_mechanism(5, 1.0, 1.0, 1e-5, rng=SEED)
    assert type(out) is float
    out = gaussian_mechanism(np.float64(5.0), 1.0, 1.0, 1e-5, rng=SEED)
    assert type(out) is float
    out = gaussian_mechanism([1, 2, 3], 1.0, 1.0, 1e-5, rng=SEED)
    assert isinstance(out, np.ndarray) and out.shape == (3,) and out.dtype == np.float64
    out = gaussian_mechanism(np.zeros((2, 3, 4)), 1.0, 1.0, 1e-5, rng=SEED)
    assert out.shape == (2, 3, 4)
    assert np.all(out != 0)


def test_same_seed_same_output():
    a = gaussian_mechanism(np.zeros(10), 1.0, 1.0, 1e-5, rng=123)
    b = gaussian_mechanism(np.zeros(10), 1.0, 1.0, 1e-5, rng=123)
    c = gaussian_mechanism(np.zeros(10), 1.0, 1.0, 1e-5, rng=124)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # a Generator continues its stream
    gen = np.random.default_rng(7)
    first = gaussian_mechanism(0.0, 1.0, 1.0, 1e-5, rng=gen, mechanism="textbook")
    second = gaussian_mechanism(0.0, 1.0, 1.0, 1e-5, rng=gen, mechanism="textbook")
    assert first != second
    sigma = gaussian_sigma(1.0, 1.0, 1e-5)
    expected = np.random.default_rng(7).normal(0.0, sigma, size=2)
    np.testing.assert_allclose([first, second], expected, rtol=1e-15)


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"delta": 0.0}, ValueError, "never (epsilon, 0)-DP"),
        ({"delta": 0}, ValueError, "delta must be in (0, 1), got 0"),
        ({"delta": 1.0}, ValueError, "delta must be in (0, 1), got 1.0"),
        ({"delta": -0.1}, ValueError, "delta must be in (0, 1)"),
        ({"delta": "1e-5"}, TypeError, "delta must be a real number"),
        ({"epsilon": 0.0}, ValueError, "epsilon must be a finite number > 0, got 0.0"),
        ({"epsilon": -1}, ValueError, "epsilon must be a finite number > 0, got -1"),
        ({"epsilon": math.inf}, ValueError, "epsilon must be a finite number > 0"),
        ({"epsilon": math.nan}, ValueError, "epsilon must be a finite number > 0"),
        ({"sensitivity": -1.0}, ValueError, "sensitivity must be a finite number >= 0"),
        ({"sensitivity": math.inf}, ValueError, "sensitivity must be a finite number >= 0"),
        ({"sensitivity": None}, TypeError, "sensitivity must be a real number"),
        ({"method": "exact"}, ValueError, "method must be one of 'analytic', 'classic'"),
        ({"method": None}, TypeError, "method must be a str"),
        ({"method": "classic", "epsilon": 1.0}, ValueError, "only proven for epsilon < 1"),
        ({"method": "classic", "epsilon": 5.0}, ValueError, "use method='analytic'"),
    ],
)
def test_sigma_refuses_bad_input(kwargs, error, message):
    args = {"sensitivity": 1.0, "epsilon": 0.5, "delta": 1e-5, **kwargs}
    with pytest.raises(error, match=_literal(message)):
        gaussian_sigma(args.pop("sensitivity"), args.pop("epsilon"), args.pop("delta"), **args)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((0.0, 1.0, 1.0), ValueError, "sigma must be a finite number > 0, got 0.0"),
        ((-1.0, 1.0, 1.0), ValueError, "sigma must be a finite number > 0"),
        ((math.inf, 1.0, 1.0), ValueError, "sigma must be a finite number > 0"),
        ((1.0, -1.0, 1.0), ValueError, "sensitivity must be a finite number >= 0"),
        ((1.0, 1.0, -0.5), ValueError, "epsilon must be a finite number >= 0, got -0.5"),
        ((1.0, 1.0, math.inf), ValueError, "epsilon must be a finite number >= 0"),
        ((1.0, 1.0, "1"), TypeError, "epsilon must be a real number"),
    ],
)
def test_delta_refuses_bad_input(args, error, message):
    with pytest.raises(error, match=_literal(message)):
        gaussian_delta(*args)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((1.0, 1.0, 0.0), ValueError, "never (epsilon, 0)-DP"),
        ((1.0, 1.0, 1.0), ValueError, "delta must be in (0, 1)"),
        ((0.0, 1.0, 1e-5), ValueError, "sigma must be a finite number > 0"),
        ((1.0, -2.0, 1e-5), ValueError, "sensitivity must be a finite number >= 0"),
        ((True, 1.0, 1e-5), TypeError, "sigma must be a real number"),
    ],
)
def test_epsilon_refuses_bad_input(args, error, message):
    with pytest.raises(error, match=_literal(message)):
        gaussian_epsilon(*args)


@pytest.mark.parametrize(
    ("value", "kwargs", "error", "message"),
    [
        ([1.0, math.nan], {}, ValueError, "value must not contain NaN"),
        ([1.0, math.inf], {}, ValueError, "value must not contain NaN or infinite values"),
        (math.nan, {}, ValueError, "value must not contain NaN"),
        ([], {}, ValueError, "value must not be empty"),
        ("abc", {}, TypeError, "value must be an array of numbers"),
        ([1.0], {"delta": 0.0}, ValueError, "never (epsilon, 0)-DP"),
        ([1.0], {"epsilon": -1.0}, ValueError, "epsilon must be a finite number > 0"),
        ([1.0], {"sensitivity": -1.0}, ValueError, "sensitivity must be a finite number >= 0"),
    ],
)
def test_mechanism_refuses_bad_input_without_drawing(value, kwargs, error, message):
    args = {"sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-5, **kwargs}
    gen = np.random.default_rng(SEED)
    state = gen.bit_generator.state
    with pytest.raises(error, match=_literal(message)):
        gaussian_mechanism(value, args["sensitivity"], args["epsilon"], args["delta"], rng=gen)
    assert gen.bit_generator.state == state  # nothing drawn, nothing released


def test_mechanism_refuses_bad_rng():
    with pytest.raises(TypeError, match="rng must be None"):
        gaussian_mechanism(1.0, 1.0, 1.0, 1e-5, rng="seed")
    with pytest.raises(TypeError, match="rng must be None"):
        gaussian_mechanism(1.0, 1.0, 1.0, 1e-5, rng=np.random.RandomState(0))
    with pytest.raises(ValueError, match="rng seed must be a non-negative integer"):
        gaussian_mechanism(1.0, 1.0, 1.0, 1e-5, rng=-1)


def _literal(message: str) -> str:
    import re

    return re.escape(message)


# ---------------------------------------------------------------------------------------------
# The safe default: discrete Gaussian on a grid
# ---------------------------------------------------------------------------------------------


def test_default_outputs_lie_on_the_public_grid():
    # Both neighbours' outputs are multiples of the grid step, which depends on public
    # parameters only: no output of one is impossible under the other (Mironov 2012).
    from dplib.mechanisms.gaussian import _discrete_plan

    for size, values in ((1, (0.0, 1.0)), (3, ([0.1, 0.2, 0.3], [0.1, 0.2, 1.3]))):
        step = _discrete_plan(1.0, 1.0, 1e-5, size)[0]
        for value in values:
            out = np.asarray([gaussian_mechanism(value, 1.0, 1.0, 1e-5, rng=s) for s in range(200)])
            assert np.array_equal(out / step, np.round(out / step))
            assert np.unique(out).size > 150  # the noise is there
    textbook = np.asarray(
        [gaussian_mechanism(0.1, 1.0, 1.0, 1e-5, rng=s, mechanism="textbook") for s in range(50)]
    )
    assert not np.array_equal(textbook / step, np.round(textbook / step))


def test_default_scalar_calibration_is_cks20_theorem_7():
    # One value: the exact discrete curve on the integer sensitivity floor(1/g) + 2 grid units;
    # within 1e-5 of the analytic continuous sigma (Balle & Wang 2018: 3.7306 at (1, 1e-5)).
    from dplib.mechanisms.discrete_gaussian import discrete_gaussian_delta
    from dplib.mechanisms.gaussian import _discrete_plan

    for sens, eps, delta in [(1.0, 1.0, 1e-5), (77 / 40, 0.5, 1e-6), (3.0, 2.0, 1e-3)]:
        g, sigma_units, sigma = _discrete_plan(sens, eps, delta, 1)
        units = math.floor(sens / g) + 2
        assert discrete_gaussian_delta(sigma_units, units, eps) <= delta
        assert sigma == pytest.approx(gaussian_sigma(sens, eps, delta), rel=2e-5)


def test_default_array_calibration_is_zcdp_with_the_rounding_counted():
    # m values: L2 sensitivity Delta/g + sqrt(m) grid units, rho-zCDP with rho = units² /
    # (2 sigma_u²) (CKS20 Theorem 14), converted by CKS20 Corollary 13: at most epsilon.
    from dplib import zcdp_to_dp
    from dplib.mechanisms.gaussian import _discrete_plan

    for sens, eps, delta, m in [(1.0, 1.0, 1e-5, 2), (2.0, 0.5, 1e-5, 10_000), (0.3, 3.0, 1e-8, 7)]:
        g, sigma_units, sigma = _discrete_plan(sens, eps, delta, m)
        units = sens / g + math.sqrt(m)
        assert units * g <= sens * (1 + 2**-10)  # the rounding costs at most 0.1 %
        assert zcdp_to_dp(units**2 / (2 * sigma_units**2), delta, method="tight") <= eps
        # about 8 % more noise than the analytic continuous calibration, never less
        assert 1.0 < sigma / gaussian_sigma(sens, eps, delta) < 1.2


def test_default_noise_is_discrete_gaussian_of_the_planned_sigma():
    # 200,000 noisy zeros in grid units against N(0, sigma_u²) rounded (the discrete Gaussian
    # at sigma_u ~ 6.6e4 is that to far better than the DKW band): DKW at 1e-9 catches a sigma
    # off by 5 %.
    from dplib.mechanisms.gaussian import _discrete_plan
    from dplib.testing import assert_distribution

    g, sigma_units, _ = _discrete_plan(1.0, 1.0, 1e-5, 100)
    noise = np.concatenate(
        [gaussian_mechanism(np.zeros(100), 1.0, 1.0, 1e-5, rng=s) / g for s in range(2000)]
    )
    assert np.array_equal(noise, np.round(noise))
    assert_distribution(noise, lambda x: stats.norm.cdf((np.floor(x) + 0.5) / sigma_units))


def test_unknown_mechanism_is_refused():
    with pytest.raises(ValueError, match="mechanism must be one of"):
        gaussian_mechanism(1.0, 1.0, 1.0, 1e-5, mechanism="laplace")
