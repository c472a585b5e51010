"""Randomized response: protocol probabilities, unbiasedness and variance.

Reference figures: the fair-coin protocol reports the truth with probability 3/4 and is ln 3-DP
(Dwork & Roth 2014, Section 3.2); its estimator's variance is pi(1-pi)/n + 3/(4n), at least 4x the
truthful survey's (Warner 1965). k-RR probabilities from Wang et al. 2017, Section 4.1.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dplib.mechanisms.randomized_response import (
    k_randomized_response,
    k_rr_estimate,
    k_rr_variance,
    randomized_response,
    rr_epsilon,
    rr_estimate,
    rr_truth_probability,
    rr_variance,
)
from dplib.testing import assert_frequencies, assert_mean

LN3 = math.log(3)


def test_fair_coin_protocol_is_ln3():
    assert rr_truth_probability(LN3) == pytest.approx(0.75, rel=1e-15)
    assert rr_epsilon(0.75) == pytest.approx(LN3, rel=1e-15)


def test_truth_probability_is_stable_for_huge_epsilon():
    assert rr_truth_probability(1000.0) == 1.0
    assert rr_epsilon(rr_truth_probability(5.0)) == pytest.approx(5.0, rel=1e-12)


def test_flip_frequencies_match_the_protocol(rng_seed):
    n = 200_000
    reports = randomized_response(np.ones(n, dtype=int), LN3, rng=rng_seed)
    assert reports.shape == (n,) and reports.dtype == np.int8
    assert_frequencies(np.bincount(reports, minlength=2), [0.25, 0.75], counts=True)
    reports = randomized_response(np.zeros(n, dtype=bool), LN3, rng=rng_seed + 1)
    assert_frequencies(np.bincount(reports, minlength=2), [0.75, 0.25], counts=True)


def test_estimator_is_unbiased(rng_seed):
    # 2000 surveys of 500 respondents with a true proportion of 0.3: the estimates average to 0.3.
    # Each estimate lies in [(0 - 1/4) / (1/2), (1 - 1/4) / (1/2)] = [-0.5, 1.5].
    rng = np.random.default_rng(rng_seed)
    truth = (np.arange(500) < 150).astype(int)
    estimates = [rr_estimate(randomized_response(truth, LN3, rng=rng), LN3) for _ in range(2000)]
    assert_mean(estimates, 0.3, bounds=(-0.5, 1.5))


def test_naive_mean_of_reports_is_biased_and_fails_the_same_check():
    # The plausible wrong answer (the raw proportion of "yes") must be caught: its mean is
    # 1/4 + 0.3/2 = 0.4, not 0.3.
    rng = np.random.default_rng(0)
    truth = (np.arange(500) < 150).astype(int)
    naive = [randomized_response(truth, LN3, rng=rng).mean() for _ in range(2000)]
    with pytest.raises(AssertionError):
        assert_mean(naive, 0.3, bounds=(0.0, 1.0))


def test_variance_formula_fair_coin():
    # pi(1-pi)/n + p(1-p)/(n(2p-1)^2) with p = 3/4: 0.21/n + 0.75/n.
    assert rr_variance(0.3, 100, LN3) == pytest.approx((0.21 + 0.75) / 100, rel=1e-12)
    # At least 4x the truthful variance, with equality at pi = 1/2.
    assert rr_variance(0.5, 1, LN3) / 0.25 == pytest.approx(4.0, rel=1e-12)
    for pi in (0.01, 0.2, 0.7):
        assert rr_variance(pi, 1, LN3) > 4 * pi * (1 - pi)


def _exact_estimate_distribution(pi, n, epsilon, sampled):
    """Exact distribution of rr_estimate: it depends on the reports only through K = #yes.

    Sampled respondents: K ~ Binomial(n, (1 - p) + pi (2p - 1)). Fixed respondents (n1 = pi n of
    them say yes): K ~ Binomial(n1, p) + Binomial(n - n1, 1 - p), a convolution.
    """
    p = rr_truth_probability(epsilon)
    ks = np.arange(n + 1)
    if sampled:
        pmf = stats.binom.pmf(ks, n, (1 - p) + pi * (2 * p - 1))
    else:
        n1 = round(pi * n)
        pmf = np.convolve(stats.binom.pmf(np.arange(n1 + 1), n1, p), stats.binom.pmf(np.arange(n - n1 + 1), n - n1, 1 - p))
    estimates = np.array([rr_estimate(np.r_[np.ones(k), np.zeros(n - k)], epsilon) for k in ks])
    return estimates, pmf


@pytest.mark.parametrize("sampled", [True, False])
@pytest.mark.parametrize("pi, n, epsilon", [(0.25, 100, 1.0), (0.5, 40, np.log(3)), (0.02, 500, 0.3)])
def test_estimator_mean_and_variance_are_exact(pi, n, epsilon, sampled):
    # An independent, exact derivation: enumerate every possible number of "yes" reports.
    estimates, pmf = _exact_estimate_distribution(pi, n, epsilon, sampled)
    mean = np.sum(pmf * estimates)
    assert mean == pytest.approx(pi, abs=1e-12)  # unbiased
    variance = np.sum(pmf * (estimates - mean) ** 2)
    assert variance == pytest.approx(rr_variance(pi, n, epsilon, include_sampling=sampled), rel=1e-9)


def test_k_rr_probabilities_and_estimate(rng_seed):
    k, epsilon, n = 4, 1.0, 100_000
    p = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    q = 1 / (math.exp(epsilon) + k - 1)
    reports = k_randomized_response(np.full(n, 2), k, epsilon, rng=rng_seed)
    assert reports.dtype == np.int64 and reports.min() >= 0 and reports.max() <= k - 1
    assert_frequencies(np.bincount(reports, minlength=k), [q, q, p, q], counts=True)
    # Unbiasedness: 1000 surveys of 200 respondents (true frequencies 0.1, 0.2, 0.3, 0.4). Each
    # coordinate of an estimate is an affine map of a proportion, so it lies in
    # [-q/(p-q), (1-q)/(p-q)] and Hoeffding applies to its average.
    rng = np.random.default_rng(rng_seed)
    values = np.repeat(np.arange(k), [20, 40, 60, 80])
    estimates = np.array(
        [k_rr_estimate(k_randomized_response(values, k, epsilon, rng=rng), k, epsilon) for _ in range(1000)]
    )
    np.testing.assert_allclose(estimates.sum(axis=1), 1.0, atol=1e-12)
    for j, truth in enumerate([0.1, 0.2, 0.3, 0.4]):
        assert_mean(estimates[:, j], truth, bounds=(-q / (p - q), (1 - q) / (p - q)))


def test_k_rr_reduces_to_binary_rr():
    # With k = 2, p = e^eps / (e^eps + 1): the same as binary randomized response.
    reports = k_randomized_response(np.ones(100_000, dtype=int), 2, 0.5, rng=3)
    binary = randomized_response(np.ones(100_000, dtype=int), 0.5, rng=3)
    assert abs(reports.mean() - binary.mean()) < 0.02
    assert k_rr_estimate([0, 1, 1], 2, 0.5)[1] == pytest.approx(rr_estimate([0, 1, 1], 0.5))


def test_scalar_in_scalar_out_and_reproducible():
    assert isinstance(randomized_response(1, 1.0, rng=0), int)
    assert isinstance(k_randomized_response(3, 5, 1.0, rng=0), int)
    a = randomized_response(np.ones(50, dtype=int), 0.1, rng=42)
    b = randomized_response(np.ones(50, dtype=int), 0.1, rng=42)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: randomized_response([0, 1], 0.0), "epsilon must be a finite number > 0"),
        (lambda: randomized_response([0, 1], float("inf")), "epsilon must be a finite number > 0"),
        (lambda: randomized_response([0, 1], float("nan")), "epsilon must be a finite number > 0"),
        (lambda: randomized_response([0, 2], 1.0), "only 0/1"),
        (lambda: randomized_response([0, float("nan")], 1.0), "NaN"),
        (lambda: rr_estimate([], 1.0), "must not be empty"),
        (lambda: rr_epsilon(0.5), "truth_probability must be a finite number > 0.5 and < 1"),
        (lambda: rr_variance(1.5, 10, 1.0), r"proportion must be in \[0, 1\]"),
        (lambda: rr_variance(0.5, 0, 1.0), "n must be an integer >= 1"),
        (lambda: k_randomized_response([0, 1], 1, 1.0), "k must be an integer >= 2"),
        (lambda: k_randomized_response([0, 5], 3, 1.0), r"integers in 0..k-1"),
        (lambda: k_randomized_response([0, 1.5], 3, 1.0), r"integers in 0..k-1"),
        (lambda: k_rr_estimate([0, 1], 3, -1.0), "epsilon must be a finite number > 0"),
        (lambda: k_rr_variance([0.5, 0.6], 10, 2, 1.0), "probability vector"),
    ],
)
def test_bad_input_is_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_bad_types_are_refused():
    with pytest.raises(TypeError, match="epsilon must be a real number"):
        randomized_response([0, 1], "1")
    with pytest.raises(TypeError, match="rng must be None"):
        randomized_response([0, 1], 1.0, rng=np.random.RandomState(0))
    with pytest.raises(TypeError, match="k must be an integer"):
        k_randomized_response([0, 1], 2.5, 1.0)


def test_k_rr_variance_with_two_categories_is_the_binary_variance():
    # Two independent derivations: Wang et al. 2017 (k-RR) and Warner 1965 (binary RR).
    for pi, n, epsilon in [(0.3, 100, 1.0), (0.5, 7, 0.1), (0.01, 10_000, 3.0)]:
        assert k_rr_variance([1 - pi, pi], n, 2, epsilon)[1] == pytest.approx(
            rr_variance(pi, n, epsilon), rel=1e-12
        )
