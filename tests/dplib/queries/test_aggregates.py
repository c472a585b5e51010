"""Private count, sum, mean and histogram, and the sensitivities they rest on."""

import math

import numpy as np
import pytest
from scipy import stats

from dplib.queries.aggregates import (
    clamp,
    private_count,
    private_histogram,
    private_mean,
    private_sum,
)
from dplib.queries.sensitivity import (
    count_sensitivity,
    histogram_sensitivity,
    mean_sensitivity,
    sum_sensitivity,
)
from dplib.testing import assert_distribution, assert_mean


def test_sensitivities_for_both_neighbouring_relations():
    # Dwork & Roth 2014, Example 3.2 (histograms) and Section 3.3 (counts, sums).
    assert count_sensitivity("add_remove") == count_sensitivity("replace") == 1
    assert histogram_sensitivity("add_remove") == 1 and histogram_sensitivity("replace") == 2
    assert sum_sensitivity(0, 100, "add_remove") == 100
    assert sum_sensitivity(0, 100, "replace") == 100
    assert sum_sensitivity(-5, 3, "add_remove") == 5
    assert sum_sensitivity(-5, 3, "replace") == 8
    assert mean_sensitivity(0, 100, 50, "replace") == 2.0


def test_sensitivity_is_attained_by_a_pair_of_neighbours():
    # The bound is tight: exhibit neighbours whose sums differ by exactly the sensitivity.
    data = np.array([3.0, -5.0, 1.0])
    assert abs(data.sum() - data[:-1].sum()) <= sum_sensitivity(-5, 3, "add_remove")
    assert abs(np.append(data, -5.0).sum() - data.sum()) == sum_sensitivity(-5, 3, "add_remove")
    replaced = data.copy()
    replaced[1] = 3.0
    assert abs(replaced.sum() - data.sum()) == sum_sensitivity(-5, 3, "replace")


def test_clamp():
    np.testing.assert_array_equal(clamp([-3.0, 0.5, 7.0], 0.0, 1.0), [0.0, 0.5, 1.0])
    assert clamp(5, 0, 1) == 1.0


def test_private_count_is_count_plus_discrete_laplace(rng_seed):
    rng = np.random.default_rng(rng_seed)
    draws = np.array([private_count(np.arange(37), 0.5, rng=rng) for _ in range(5_000)])
    assert draws.dtype.kind == "i"
    # Two-sided geometric with parameter e^-0.5 (Ghosh et al. 2012): P(Z <= z) on the integers.
    alpha = math.exp(-0.5)
    cdf = lambda z: np.where(  # noqa: E731
        z < 37,
        alpha ** (37 - np.floor(z)) / (1 + alpha),
        1 - alpha ** (np.floor(z) - 37 + 1) / (1 + alpha),
    )
    assert_distribution(draws, cdf)


def test_private_count_counts_true_entries_of_a_mask():
    # With a huge epsilon the noise is 0 with probability 1 - 2e^-1000/(1+e^-1000): exact counts.
    ages = np.array([12, 70, 65, 30, 90])
    assert private_count(ages >= 65, 1000.0, rng=0) == 3
    assert private_count(ages, 1000.0, rng=0) == 5
    assert private_count([], 1000.0, rng=0) == 0


def test_private_sum_clamps_then_adds_noise_of_the_right_scale(rng_seed):
    rng = np.random.default_rng(rng_seed)
    data = np.array([5.0, 50.0, 500.0])  # 500 is clamped to 100: true clamped sum 155
    draws = np.array([private_sum(data, 0, 100, 1.0, rng=rng) for _ in range(5_000)])
    assert_distribution(draws, stats.laplace(loc=155.0, scale=100.0).cdf)
    # The same check rejects the plausible mistakes: no clamping (true sum 555) and the
    # replace-one sensitivity confused with twice the add/remove one (scale 200). The CDFs differ
    # by >= 0.12 somewhere, against a DKW tolerance of 0.046 at n = 5000: a miss has probability
    # below 2 exp(-2 n 0.074^2) = 1e-23.
    for wrong in (stats.laplace(loc=555.0, scale=100.0), stats.laplace(loc=155.0, scale=200.0)):
        with pytest.raises(AssertionError):
            assert_distribution(draws, wrong.cdf)


def test_private_mean_replace_neighbours(rng_seed):
    rng = np.random.default_rng(rng_seed)
    data = np.linspace(0, 10, 50)
    draws = np.array([private_mean(data, 0, 10, 0.5, rng=rng) for _ in range(5_000)])
    assert_distribution(draws, stats.laplace(loc=5.0, scale=10 / 50 / 0.5).cdf)


def test_private_mean_add_remove_stays_in_bounds_and_is_accurate(rng_seed):
    rng = np.random.default_rng(rng_seed)
    data = np.full(10_000, 3.0)
    draws = np.array(
        [private_mean(data, 0, 10, 1.0, neighbouring="add_remove", rng=rng) for _ in range(2000)]
    )
    assert draws.min() >= 0 and draws.max() <= 10
    # Noise on the sum has scale 20 and on the count scale 2: the ratio is 3 +- ~0.01.
    assert_mean(draws, 3.0, bounds=(0.0, 10.0))


def test_private_histogram(rng_seed):
    data = np.array([0.5, 1.5, 1.7, 3.9])
    counts, edges = private_histogram(data, [0, 1, 2, 3, 4], 1000.0, rng=rng_seed)
    np.testing.assert_array_equal(counts, [1, 2, 0, 1])
    np.testing.assert_array_equal(edges, [0, 1, 2, 3, 4])
    counts, edges = private_histogram(data, 2, 1000.0, range=(0, 4), rng=rng_seed)
    np.testing.assert_array_equal(counts, [3, 1])


def test_private_histogram_noise_scale_by_neighbouring(rng_seed):
    # 20,000 empty bins in one release: each count is 0 + independent discrete Laplace noise.
    zeros, _ = private_histogram([], np.arange(20_001), 1.0, neighbouring="replace", rng=rng_seed)
    alpha = math.exp(-0.5)  # sensitivity 2 at epsilon 1: scale 2
    cdf = lambda z: np.where(z < 0, alpha ** (-np.floor(z)) / (1 + alpha), 1 - alpha ** (np.floor(z) + 1) / (1 + alpha))  # noqa: E731
    assert_distribution(zeros, cdf)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: private_histogram([1.0], 3, 1.0), ValueError, "range="),
        (lambda: private_histogram([1.0], [0, 0], 1.0), ValueError, "strictly increasing"),
        (lambda: private_histogram([1.0], 0, 1.0, range=(0, 1)), ValueError, "bins must be an integer >= 1"),
        (lambda: private_mean([], 0, 1, 1.0), ValueError, "x must not be empty"),
        (lambda: private_mean([1.0], 1, 0, 1.0), ValueError, "lower must be < upper"),
        (lambda: private_mean([1.0], 0, math.inf, 1.0), ValueError, "must be finite"),
        (lambda: private_mean([math.nan], 0, 1, 1.0), ValueError, "NaN"),
        (lambda: private_mean([1.0], 0, 1, 1.0, neighbouring="bounded"), ValueError, "neighbouring must be one of"),
        (lambda: private_sum([1.0], 0, 1, 0.0), ValueError, "epsilon must be a finite number > 0"),
        (lambda: private_count([1], -1.0), ValueError, "epsilon must be a finite number > 0"),
        (lambda: mean_sensitivity(0, 1, 0), ValueError, "n must be an integer >= 1"),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()
