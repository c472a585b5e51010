"""Hoeffding confidence intervals for randomized response.

Reference figures: Hoeffding (1963), Theorem 2, t = sqrt(ln(2/alpha) / (2n)); for the two-coin
protocol (epsilon = ln 3, 2p - 1 = 1/2) the estimate's half-width is twice that.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dplib.mechanisms.randomized_response import (
    k_randomized_response,
    k_rr_estimate,
    randomized_response,
    rr_estimate,
    rr_truth_probability,
)
from dplib.mechanisms.rr_confidence import (
    hoeffding_halfwidth,
    k_rr_confidence_intervals,
    k_rr_halfwidth,
    rr_confidence_interval,
    rr_halfwidth,
    rr_sample_size,
)
from dplib.testing import mean_tolerance

LN3 = math.log(3)


def test_hoeffding_reference_value():
    # sqrt(ln(40) / 2000) = 0.0429469...
    assert hoeffding_halfwidth(1000, 0.05) == pytest.approx(math.sqrt(math.log(40) / 2000), rel=1e-15)
    assert hoeffding_halfwidth(1000, 0.05, width=3.0) == pytest.approx(3 * 0.04294694083467376, rel=1e-12)


def test_hoeffding_agrees_with_dplib_testing():
    # Two independent implementations of the same bound.
    for n, alpha in [(10, 0.1), (1000, 0.05), (123_456, 1e-9)]:
        assert hoeffding_halfwidth(n, alpha) == pytest.approx(
            mean_tolerance(n, bounds=(0.0, 1.0), failure_prob=alpha, method="hoeffding"), rel=1e-12
        )


def test_two_coin_halfwidth_is_twice_hoeffding():
    assert rr_halfwidth(1000, LN3, 0.05) == pytest.approx(2 * hoeffding_halfwidth(1000, 0.05), rel=1e-12)


def test_halfwidth_matches_the_definition_via_p():
    for eps in (0.01, 0.5, 1.0, 4.0):
        p = rr_truth_probability(eps)
        assert rr_halfwidth(500, eps, 0.01) == pytest.approx(hoeffding_halfwidth(500, 0.01) / (2 * p - 1), rel=1e-9)


def test_halfwidth_blows_up_like_two_over_epsilon():
    eps = 1e-4
    assert rr_halfwidth(100, eps, 0.05) * eps / 2 == pytest.approx(hoeffding_halfwidth(100, 0.05), rel=1e-8)


def test_sample_size_is_the_smallest_sufficient_n():
    for h, eps, alpha in [(0.05, LN3, 0.05), (0.01, 1.0, 0.05), (0.1, 0.2, 0.01)]:
        n = rr_sample_size(h, eps, alpha)
        assert rr_halfwidth(n, eps, alpha) <= h
        assert n == 1 or rr_halfwidth(n - 1, eps, alpha) > h
    assert rr_sample_size(0.05, LN3, 0.05) == 2952


def test_interval_is_centred_on_rr_estimate_and_clipped():
    reports = randomized_response(np.ones(400, dtype=int), LN3, rng=3)
    low, high = rr_confidence_interval(reports, LN3, 0.05, clip=False)
    est, h = rr_estimate(reports, LN3), rr_halfwidth(400, LN3, 0.05)
    assert (low, high) == pytest.approx((est - h, est + h), rel=1e-12)
    low_c, high_c = rr_confidence_interval(reports, LN3, 0.05)
    assert 0.0 <= low_c <= high_c <= 1.0 and high_c == min(high, 1.0)


def test_coverage_is_at_least_one_minus_alpha(rng_seed):
    # 4000 simulated surveys of n = 300 with true proportion 0.3. Each interval misses with
    # probability <= alpha = 0.1, so the number of misses is stochastically below Binomial(4000, 0.1);
    # the test fails for a correct interval with probability <= 1e-9.
    rng = np.random.default_rng(rng_seed)
    n, runs, alpha, eps = 300, 4000, 0.1, 0.7
    truth = (np.arange(n) < 90).astype(int)
    misses = 0
    for _ in range(runs):
        low, high = rr_confidence_interval(randomized_response(truth, eps, rng=rng), eps, alpha)
        misses += not (low <= 0.3 <= high)
    assert misses <= stats.binom.isf(1e-9, runs, alpha)


def test_k_rr_halfwidth_matches_definition():
    k, eps = 5, 1.0
    p = math.exp(eps) / (math.exp(eps) + k - 1)
    q = 1 / (math.exp(eps) + k - 1)
    assert k_rr_halfwidth(1000, k, eps, 0.05) == pytest.approx(hoeffding_halfwidth(1000, 0.01) / (p - q), rel=1e-12)
    assert k_rr_halfwidth(1000, k, eps, 0.05, simultaneous=False) == pytest.approx(
        hoeffding_halfwidth(1000, 0.05) / (p - q), rel=1e-12
    )
    # Small epsilon: no cancellation in p - q.
    assert k_rr_halfwidth(10, 2, 1e-12, 0.05) == pytest.approx(rr_halfwidth(10, 1e-12, 0.025), rel=1e-6)


def test_k_rr_intervals_cover_simultaneously(rng_seed):
    # 1500 surveys, alpha = 0.1: misses (any category outside its interval) <= Binomial(1500, 0.1).
    rng = np.random.default_rng(rng_seed)
    k, eps, n, runs, alpha = 4, 1.5, 500, 1500, 0.1
    pi = np.array([0.1, 0.2, 0.3, 0.4])
    values = np.repeat(np.arange(k), (pi * n).astype(int))
    misses = 0
    for _ in range(runs):
        reports = k_randomized_response(values, k, eps, rng=rng)
        low, high = k_rr_confidence_intervals(reports, k, eps, alpha)
        misses += not np.all((low <= pi) & (pi <= high))
    assert misses <= stats.binom.isf(1e-9, runs, alpha)
    est = k_rr_estimate(reports, k, eps)
    low, high = k_rr_confidence_intervals(reports, k, eps, alpha, clip=False)
    np.testing.assert_allclose((low + high) / 2, est, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda: hoeffding_halfwidth(0, 0.05),
        lambda: hoeffding_halfwidth(10, 0.0),
        lambda: hoeffding_halfwidth(10, 1.0),
        lambda: hoeffding_halfwidth(10, 0.05, width=-1.0),
        lambda: rr_halfwidth(10, 0.0, 0.05),
        lambda: rr_halfwidth(10, float("nan"), 0.05),
        lambda: rr_confidence_interval([], LN3),
        lambda: rr_confidence_interval([0, 2], LN3),
        lambda: rr_sample_size(0.0, LN3),
        lambda: k_rr_halfwidth(10, 1, 1.0),
    ],
)
def test_bad_input_is_refused(call):
    with pytest.raises(ValueError):
        call()


def test_wrong_types_are_refused():
    with pytest.raises(TypeError):
        hoeffding_halfwidth(10.5, 0.05)
    with pytest.raises(TypeError):
        k_rr_halfwidth(10, 3, 1.0, simultaneous="yes")
