"""Tests of dplib.testing: reference values, power against wrong implementations, calibration of
the false-failure probability, and refusals of bad arguments."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dplib.testing import (
    DPAuditResult,
    assert_distribution,
    assert_dp,
    assert_frequencies,
    assert_mean,
    assert_variance,
    audit_dp,
    clopper_pearson,
    dkw_tolerance,
    mean_tolerance,
)
from dplib.testing.moments import sample_variance_variance

P = 1e-9


def laplace_mechanism(scale):
    """A vectorized numpy Laplace mechanism x + Lap(scale), in assert_dp's calling convention."""
    return lambda x, rng, size: x + rng.laplace(0.0, scale, size)


def randomized_response(keep):
    """Report the bit x with probability keep, its flip otherwise (one output per call)."""
    return lambda x, rng: x if rng.random() < keep else 1 - x


# --------------------------------------------------------------------------------------------
# reference values of the tolerances
# --------------------------------------------------------------------------------------------
def test_hoeffding_tolerance_hand_computed():
    # Hoeffding (1963) Thm 2, range 1, n = 10000, p = 1e-9: sqrt(ln(2e9) / 20000) = 0.032723...
    assert mean_tolerance(10_000, bounds=(0, 1)) == pytest.approx(
        math.sqrt(math.log(2e9) / 20_000), rel=1e-12
    )
    assert mean_tolerance(10_000, bounds=(0, 1)) == pytest.approx(0.032723, abs=1e-6)
    # it scales with the range and as 1/sqrt(n)
    assert mean_tolerance(10_000, bounds=(-1, 1)) == pytest.approx(2 * 0.0327234, rel=1e-5)
    assert mean_tolerance(40_000, bounds=(0, 1)) == pytest.approx(0.0327234 / 2, rel=1e-5)


def test_dkw_tolerance_hand_computed():
    # Massart (1990): 2 exp(-2 n t^2) = p  <=>  t = sqrt(ln(2/p) / (2n)), the same number here
    assert dkw_tolerance(10_000) == pytest.approx(0.0327234, rel=1e-5)
    assert 2 * math.exp(-2 * 500 * dkw_tolerance(500, 0.01) ** 2) == pytest.approx(0.01)


def test_gaussian_tolerance_is_the_normal_quantile():
    # z_{1 - 5e-10} = 6.1094 (scipy.stats.norm.isf)
    assert mean_tolerance(10_000, variance=4.0, method="gaussian") == pytest.approx(
        6.1094 * 2 / 100, rel=1e-4
    )


def test_bernstein_tolerance_round_trip():
    n, var, width = 1000, 0.01, 1.0
    t = mean_tolerance(n, bounds=(0, width), variance=var, method="bernstein")
    assert 2 * math.exp(-n * t**2 / (2 * var + 2 * width * t / 3)) == pytest.approx(P, rel=1e-9)
    # with a small variance, auto picks Bernstein, which beats Hoeffding
    assert mean_tolerance(n, bounds=(0, 1), variance=var) == t < mean_tolerance(n, bounds=(0, 1))
    # with the largest variance allowed in [0, 1], Hoeffding is the smaller and is picked
    assert mean_tolerance(n, bounds=(0, 1), variance=0.25) == mean_tolerance(n, bounds=(0, 1))


def test_median_of_means_tolerance_meets_its_failure_probability():
    n, var = 10_000, 2.0
    t = mean_tolerance(n, variance=var)
    # recover the plan: k odd groups of size >= n // k, Chebyshev q per group, binomial tail = p
    tails = []
    for k in range(1, 200, 2):
        q = var / ((n // k) * t**2)
        tails.append((stats.binom.sf((k - 1) // 2, k, min(q, 1.0)), k))
    best_tail, k = min(tails)
    assert best_tail == pytest.approx(P, rel=1e-6) and k == 39
    # Hoeffding's form of the tail, exp(-2k(1/2 - q)^2), is larger (the exact tail is used)
    q = var / ((n // k) * t**2)
    assert math.exp(-2 * k * (0.5 - q) ** 2) > P
    # rigorous but within a small factor of the asymptotic normal quantile, far below Chebyshev
    gauss = mean_tolerance(n, variance=var, method="gaussian")
    assert 2 * gauss < t < 4 * gauss
    assert t < math.sqrt(var / (n * P)) / 100


def test_variance_of_the_sample_variance_by_enumeration():
    # the formula behind the median-of-means variance bound, checked exactly on a small
    # three-point distribution by enumerating every sample of size 4
    values, probs = np.array([0.0, 1.0, 5.0]), np.array([0.5, 0.3, 0.2])
    mean = probs @ values
    sigma2, mu4 = probs @ (values - mean) ** 2, probs @ (values - mean) ** 4
    m = 4
    s2, weights = [], []
    for idx in itertools.product(range(3), repeat=m):
        s2.append(np.var(values[list(idx)], ddof=1))
        weights.append(np.prod(probs[list(idx)]))
    s2, weights = np.array(s2), np.array(weights)
    assert weights @ s2 == pytest.approx(sigma2)
    exact = weights @ (s2 - sigma2) ** 2
    assert sample_variance_variance(np.float64(m), sigma2, mu4) == pytest.approx(exact, rel=1e-12)


def test_clopper_pearson_reference_values():
    # k = 0: upper = 1 - (alpha/2)^(1/n) (Clopper & Pearson 1934), 0.3085 for n = 10, alpha = 0.05
    low, high = clopper_pearson(0, 10, 0.05)
    assert low == 0.0 and high == pytest.approx(1 - 0.025**0.1, rel=1e-12)
    assert high == pytest.approx(0.3085, abs=1e-4)
    low, high = clopper_pearson(10, 10, 0.05)
    assert low == pytest.approx(0.025**0.1, rel=1e-12) and high == 1.0
    # R: binom.test(5, 10)$conf.int = 0.1870860 0.8129140
    low, high = clopper_pearson(5, 10, 0.05)
    assert (low, high) == pytest.approx((0.1870860, 0.8129140), abs=1e-7)
    # arrays in, arrays out
    lows, highs = clopper_pearson(np.array([0, 5, 10]), 10, 0.05)
    assert lows.shape == (3,) and highs[1] == pytest.approx(0.8129140, abs=1e-7)


def test_clopper_pearson_coverage_is_exact_at_least_nominal():
    n, alpha = 30, 0.1
    low, high = clopper_pearson(np.arange(n + 1), n, alpha)
    for q in np.linspace(0.001, 0.999, 101):
        covered = (low <= q) & (q <= high)
        assert stats.binom.pmf(np.arange(n + 1), n, q)[covered].sum() >= 1 - alpha - 1e-12


# --------------------------------------------------------------------------------------------
# assert_mean
# --------------------------------------------------------------------------------------------
def test_assert_mean_accepts_correct_and_rejects_shift_of_five_tolerances():
    rng = np.random.default_rng(1)
    n = 10_000
    samples = rng.random(n)
    assert_mean(samples, 0.5, bounds=(0, 1))
    shift = 5 * mean_tolerance(n, bounds=(0, 1))
    with pytest.raises(
        AssertionError, match=r"sample mean 0\.\d+ differs from the expected .* tolerance .*n=10000"
    ):
        assert_mean(samples, 0.5 + shift, bounds=(0, 1))


def test_assert_mean_unbounded_noise_with_variance():
    rng = np.random.default_rng(2)
    n, scale = 10_000, 2.0
    noise = rng.laplace(0.0, scale, n)
    assert_mean(noise, 0.0, variance=2 * scale**2)
    assert_mean(noise, 0.0, variance=2 * scale**2, method="gaussian")
    t = mean_tolerance(n, variance=2 * scale**2)
    with pytest.raises(
        AssertionError,
        match="median-of-means estimate .* differs .* median-of-means with 39 groups",
    ):
        assert_mean(noise + 5 * t, 0.0, variance=2 * scale**2)
    # a biased estimator: the mean of |noise| is scale, not 0
    with pytest.raises(AssertionError, match="plain sample mean"):
        assert_mean(np.abs(noise), 0.0, variance=2 * scale**2)


def test_assert_mean_median_of_means_handles_sorted_samples():
    rng = np.random.default_rng(3)
    assert_mean(np.sort(rng.exponential(1.0, 10_000)), 1.0, variance=1.0)


def test_empirical_bernstein_catches_what_hoeffding_cannot():
    rng = np.random.default_rng(4)
    rare = (rng.random(100_000) < 0.01).astype(float)
    assert_mean(rare, 0.01, bounds=(0, 1))
    # 0.015 is within Hoeffding's tolerance (0.0074) but not the empirical Bernstein one (0.0027)
    assert_mean(rare, 0.015, bounds=(0, 1), method="hoeffding")
    with pytest.raises(AssertionError, match="empirical Bernstein"):
        assert_mean(rare, 0.015, bounds=(0, 1))


def test_assert_mean_samples_outside_bounds_fail():
    with pytest.raises(AssertionError, match=r"outside the declared bounds \[0, 1\], e.g. 1.5"):
        assert_mean([0.2, 0.4, 1.5], 0.5, bounds=(0, 1))


# --------------------------------------------------------------------------------------------
# assert_variance
# --------------------------------------------------------------------------------------------
def test_assert_variance_catches_a_factor_two_in_the_noise_scale():
    rng = np.random.default_rng(5)
    n, b = 10_000, 1.0
    var, mu4 = 2 * b**2, 24 * b**4  # Laplace(b): variance 2b^2, central fourth moment 24b^4
    assert_variance(rng.laplace(0.0, b, n), var, fourth_moment=mu4)
    with pytest.raises(
        AssertionError,
        match=r"variance .* differs from the expected variance 2: .*ratio (3\.[5-9]|4\.[0-4])",
    ):
        assert_variance(rng.laplace(0.0, 2 * b, n), var, fourth_moment=mu4)
    with pytest.raises(AssertionError, match=r"ratio 0\.(1[5-9]|2\d|3[0-4])"):
        assert_variance(rng.laplace(0.0, b / 2, n), var, fourth_moment=mu4)
    # Gaussian noise: fourth moment 3 sigma^4
    assert_variance(rng.normal(0.0, 3.0, n), 9.0, fourth_moment=3 * 81.0)
    assert_variance(rng.normal(0.0, 3.0, n), 9.0, fourth_moment=3 * 81.0, method="gaussian")


def test_assert_variance_bounded_samples():
    rng = np.random.default_rng(6)
    n = 10_000
    assert_variance(rng.random(n), 1 / 12, bounds=(0, 1))
    with pytest.raises(AssertionError, match="Hoeffding bound for U-statistics"):
        assert_variance(rng.random(n) / 2, 1 / 12, bounds=(0, 1))
    with pytest.raises(AssertionError, match=r"acceptance interval"):
        assert_variance(rng.random(n) * 0.999, 1 / 12 / 4, bounds=(0, 1))
    # small variances: Maurer-Pontil's bound on the standard deviation is the narrower one
    rare = (rng.random(100_000) < 0.002).astype(float)
    assert_variance(rare, 0.002 * 0.998, bounds=(0, 1))
    with pytest.raises(AssertionError, match="Maurer-Pontil"):
        assert_variance(rare, 4 * 0.002 * 0.998, bounds=(0, 1))


def test_assert_variance_relative_tolerance_only_widens():
    rng = np.random.default_rng(7)
    samples = rng.laplace(0.0, 1.0, 10_000)
    with pytest.raises(AssertionError):
        assert_variance(samples, 4.0, fourth_moment=6 * 16.0)
    assert_variance(samples, 4.0, fourth_moment=6 * 16.0, relative_tolerance=0.5)


# --------------------------------------------------------------------------------------------
# assert_distribution
# --------------------------------------------------------------------------------------------
def test_assert_distribution_laplace_versus_gaussian():
    rng = np.random.default_rng(8)
    n = 100_000
    assert_distribution(rng.laplace(0.0, 1.0, n), stats.laplace.cdf)
    # a Gaussian with the same variance as Laplace(1) is far in Kolmogorov-Smirnov distance
    with pytest.raises(
        AssertionError, match=r"empirical cdf differs .* tolerance 0\.01035 \(n=100000, .*Massart"
    ):
        assert_distribution(rng.normal(0.0, math.sqrt(2.0), n), stats.laplace.cdf)
    # half the scale
    with pytest.raises(AssertionError):
        assert_distribution(rng.laplace(0.0, 0.5, 10_000), stats.laplace.cdf)


def test_assert_distribution_discrete():
    rng = np.random.default_rng(9)
    n = 10_000
    assert_distribution(rng.poisson(3.0, n), stats.poisson(3.0).cdf)
    assert_distribution(rng.random(n) < 0.3, stats.bernoulli(0.3).cdf)
    # geometric mechanism style: two-sided geometric as a difference of geometrics
    alpha = math.exp(-1.0)
    two_sided = rng.geometric(1 - alpha, n) - rng.geometric(1 - alpha, n)
    support = np.arange(-60, 61)
    cumulative = np.cumsum((1 - alpha) / (1 + alpha) * alpha ** np.abs(support))

    def step_cdf(x):
        return np.concatenate([[0.0], cumulative])[np.searchsorted(support, x, side="right")]

    assert_distribution(two_sided, step_cdf)
    with pytest.raises(AssertionError):
        assert_distribution(rng.poisson(3.3, n), stats.poisson(3.0).cdf)
    with pytest.raises(AssertionError):
        assert_distribution(rng.random(n) < 0.4, stats.bernoulli(0.3).cdf)


# --------------------------------------------------------------------------------------------
# assert_frequencies
# --------------------------------------------------------------------------------------------
def test_assert_frequencies_samples_and_counts():
    rng = np.random.default_rng(10)
    n = 10_000
    probs = [0.1, 0.2, 0.3, 0.4]
    draws = rng.choice(4, size=n, p=probs)
    assert_frequencies(draws, probs)
    assert_frequencies(np.bincount(draws, minlength=4), probs, counts=True)
    assert_frequencies(rng.random(n) < 0.75, {True: 0.75, False: 0.25})
    words = rng.choice(["yes", "no"], size=n, p=[0.75, 0.25])
    assert_frequencies(words, {"yes": 0.75, "no": 0.25})
    with pytest.raises(
        AssertionError, match=r"category 'yes': observed count \d+ .* expected probability 0\.6"
    ):
        assert_frequencies(words, {"yes": 0.6, "no": 0.4})
    wrong = rng.choice(4, size=n, p=[0.1, 0.2, 0.4, 0.3])
    with pytest.raises(
        AssertionError,
        match=r"category [23]: .*count in \[\d+, \d+\].*Bonferroni over 4 categories",
    ):
        assert_frequencies(wrong, probs)


def test_assert_frequencies_impossible_outcomes_fail():
    with pytest.raises(AssertionError, match="observed value 7 .* not one of the categories"):
        assert_frequencies([0, 1, 7], [0.5, 0.5])
    with pytest.raises(AssertionError, match="category 2"):
        assert_frequencies([10, 10, 1], [0.5, 0.5, 0.0], counts=True)


# --------------------------------------------------------------------------------------------
# assert_dp
# --------------------------------------------------------------------------------------------
def test_assert_dp_laplace_correct_scale_passes_half_scale_fails():
    eps = 1.0
    result = assert_dp(
        laplace_mechanism(1.0 / eps), 0.0, 1.0, eps, n_samples=100_000, vectorized=True, rng=11
    )
    assert isinstance(result, DPAuditResult)
    assert 0.8 < result.epsilon_lower_bound <= eps  # tight mechanism: the bound comes close
    with pytest.raises(
        AssertionError,
        match=r"not 1-DP: the event 'output (<=|>) [-.\d]+' .* on input_[ab] .*certifies epsilon >= 1\.\d",
    ):
        assert_dp(
            laplace_mechanism(0.5 / eps), 0.0, 1.0, eps, n_samples=10_000, vectorized=True, rng=12
        )


def test_assert_dp_half_scale_laplace_small_epsilon():
    eps = 0.1
    assert_dp(laplace_mechanism(1.0 / eps), 0.0, 1.0, eps, vectorized=True, rng=13)
    with pytest.raises(AssertionError, match="not 0.1-DP"):
        assert_dp(laplace_mechanism(0.5 / eps), 0.0, 1.0, eps, vectorized=True, rng=14)


def test_assert_dp_one_call_per_output():
    eps = 1.0
    mech = lambda x, rng: x + rng.laplace(0.0, 1.0 / eps)  # noqa: E731
    slow = assert_dp(mech, 0.0, 1.0, eps, n_samples=20_000, rng=15)
    fast = assert_dp(
        laplace_mechanism(1.0 / eps), 0.0, 1.0, eps, n_samples=20_000, vectorized=True, rng=15
    )
    assert slow == fast  # the same stream of the generator either way


def test_assert_dp_randomized_response():
    eps = math.log(3)
    result = assert_dp(randomized_response(0.75), 0, 1, eps, n_samples=10_000, rng=16)
    assert result.event in ("output <= 0", "output > 0")
    with pytest.raises(AssertionError, match="not 1.099-DP"):
        assert_dp(randomized_response(0.8), 0, 1, eps, n_samples=10_000, rng=17)
    # categorical outputs work too
    words = lambda x, rng: ("yes" if x else "no") if rng.random() < 0.75 else ("no" if x else "yes")  # noqa: E731
    assert_dp(words, 1, 0, eps, n_samples=10_000, rng=18)
    with pytest.raises(AssertionError, match="output == 'yes'|output == 'no'"):
        assert_dp(words, 1, 0, 0.5, n_samples=10_000, rng=19)


def test_assert_dp_delta():
    eps, leak = math.log(3), 0.01

    def leaky(x, rng, size):
        """Randomized response, but with probability 0.01 the output reveals x: (ln 3, 0.01)-DP."""
        keep = rng.random(size) < 0.75
        out = np.where(keep, x, 1 - x)
        return np.where(rng.random(size) < leak, 10 + x, out)

    assert_dp(leaky, 0, 1, eps, delta=leak, n_samples=100_000, vectorized=True, rng=20)
    with pytest.raises(
        AssertionError, match=r"event 'output <= 10'|event 'output > 10'|with delta"
    ):
        assert_dp(leaky, 0, 1, eps, delta=0.001, n_samples=100_000, vectorized=True, rng=21)


def test_audit_dp_explicit_bins_and_reproducibility():
    mech = laplace_mechanism(0.5)
    first = audit_dp(
        mech, 0.0, 1.0, n_samples=5_000, bins=[-1.0, 0.0, 1.0, 2.0], vectorized=True, rng=22
    )
    again = audit_dp(
        mech,
        0.0,
        1.0,
        n_samples=5_000,
        bins=[-1.0, 0.0, 1.0, 2.0],
        vectorized=True,
        rng=np.random.default_rng(22),
    )
    assert first == again
    assert first.n_events == 4 + 4 + 3
    assert 1.0 < first.epsilon_lower_bound <= 2.0  # the true epsilon is 1 / 0.5 = 2


# --------------------------------------------------------------------------------------------
# calibration: the false-failure probability is really at most failure_prob
# --------------------------------------------------------------------------------------------
def _failure_count(check, trials):
    failures = 0
    for seed in range(trials):
        try:
            check(np.random.default_rng(seed))
        except AssertionError:
            failures += 1
    return failures


def _assert_rate_at_most(failures, trials, rate):
    # if the true failure rate were <= rate, exceeding this count has probability < 1e-9
    assert failures <= stats.binom.isf(P, trials, rate), (failures, trials)


def test_calibration_of_the_mean_assertions():
    trials, p = 1000, 0.1
    gaussian = _failure_count(
        lambda rng: assert_mean(
            rng.normal(0.0, 1.0, 50), 0.0, variance=1.0, method="gaussian", failure_prob=p
        ),
        trials,
    )
    # the normal quantile is exact for Gaussian data: the rate is p itself, not just below it
    _assert_rate_at_most(gaussian, trials, p)
    assert gaussian >= stats.binom.ppf(P, trials, p)
    for check in (
        lambda rng: assert_mean(rng.random(30) < 0.5, 0.5, bounds=(0, 1), failure_prob=p),
        lambda rng: assert_mean(
            rng.random(30) < 0.5, 0.5, bounds=(0, 1), method="hoeffding", failure_prob=p
        ),
        lambda rng: assert_mean(rng.standard_t(3, 200), 0.0, variance=3.0, failure_prob=p),
        lambda rng: assert_variance(rng.random(50), 1 / 12, bounds=(0, 1), failure_prob=p),
        lambda rng: assert_variance(
            rng.laplace(0.0, 1.0, 100), 2.0, fourth_moment=24.0, failure_prob=p
        ),
    ):
        _assert_rate_at_most(_failure_count(check, trials), trials, p)


def test_calibration_of_distribution_and_frequency_assertions():
    trials, p = 1000, 0.1
    ks = _failure_count(
        lambda rng: assert_distribution(
            rng.laplace(0.0, 1.0, 100), stats.laplace.cdf, failure_prob=p
        ),
        trials,
    )
    _assert_rate_at_most(ks, trials, p)
    # Massart's constant is tight: the Kolmogorov-Smirnov rate is close to p, not far below it
    assert ks >= stats.binom.ppf(P, trials, 0.05)
    freq = _failure_count(
        lambda rng: assert_frequencies(
            rng.choice(3, 100, p=[0.2, 0.3, 0.5]), [0.2, 0.3, 0.5], failure_prob=p
        ),
        trials,
    )
    _assert_rate_at_most(freq, trials, p)


def test_calibration_of_assert_dp():
    trials, p = 100, 0.1
    failures = _failure_count(
        lambda rng: assert_dp(
            laplace_mechanism(1.0),
            0.0,
            1.0,
            1.0,
            n_samples=1_000,
            vectorized=True,
            rng=rng,
            failure_prob=p,
        ),
        trials,
    )
    _assert_rate_at_most(failures, trials, p)


# --------------------------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_failure_prob_outside_open_unit_interval_is_refused(bad):
    with pytest.raises(ValueError, match=r"failure_prob must be in \(0, 1\)"):
        assert_mean([0.5], 0.5, bounds=(0, 1), failure_prob=bad)
    with pytest.raises(ValueError, match="failure_prob"):
        mean_tolerance(10, bounds=(0, 1), failure_prob=bad)
    with pytest.raises(ValueError, match="failure_prob"):
        assert_distribution([0.5], stats.uniform.cdf, failure_prob=bad)
    with pytest.raises(ValueError, match="failure_prob"):
        assert_frequencies([0], [1.0], failure_prob=bad)
    with pytest.raises(ValueError, match="failure_prob"):
        assert_variance([0.5, 0.6], 0.01, bounds=(0, 1), failure_prob=bad)


def test_empty_and_nan_samples_are_refused():
    with pytest.raises(ValueError, match="samples must not be empty"):
        assert_mean([], 0.0, bounds=(0, 1))
    with pytest.raises(ValueError, match="samples must not contain NaN"):
        assert_mean([0.1, float("nan")], 0.0, bounds=(0, 1))
    with pytest.raises(ValueError, match="samples must not contain NaN"):
        assert_distribution([0.1, float("nan")], stats.norm.cdf)
    with pytest.raises(ValueError, match="samples must not be empty"):
        assert_variance([], 1.0, fourth_moment=3.0)
    with pytest.raises(ValueError, match="observed must"):
        assert_frequencies([], [1.0])
    with pytest.raises(ValueError, match="expected must be a finite number"):
        assert_mean([0.1], float("nan"), bounds=(0, 1))


def test_missing_or_inconsistent_knowledge_is_refused():
    with pytest.raises(ValueError, match="needs bounds=.*or variance="):
        assert_mean([0.1, 0.2], 0.0)
    with pytest.raises(ValueError, match="lower must be < upper"):
        mean_tolerance(10, bounds=(1, 0))
    with pytest.raises(ValueError, match="variance must be a finite number > 0"):
        mean_tolerance(10, variance=-1.0)
    with pytest.raises(ValueError, match="Popoviciu"):
        mean_tolerance(10, bounds=(0, 1), variance=0.5)
    with pytest.raises(ValueError, match="method must be one of"):
        mean_tolerance(10, bounds=(0, 1), method="chebyshev")
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        mean_tolerance(0, bounds=(0, 1))
    with pytest.raises(ValueError, match="expected must lie within bounds"):
        assert_mean([0.5], 2.0, bounds=(0, 1))
    with pytest.raises(ValueError, match="needs bounds=.*or fourth_moment="):
        assert_variance([0.1, 0.2], 1.0)
    with pytest.raises(ValueError, match="fourth_moment must be >= expected_variance"):
        assert_variance([0.1, 0.2, 0.3, 0.4], 2.0, fourth_moment=1.0)


def test_bad_distribution_and_frequency_arguments_are_refused():
    with pytest.raises(TypeError, match="cdf must be callable"):
        assert_distribution([0.1], "laplace")
    with pytest.raises(ValueError, match=r"cdf must return values in \[0, 1\]"):
        assert_distribution([0.1], lambda x: 2 * np.ones_like(x))
    with pytest.raises(ValueError, match="sum to 1"):
        assert_frequencies([0, 1], [0.5, 0.6])
    with pytest.raises(ValueError, match="one count per category"):
        assert_frequencies([3, 4, 5], [0.5, 0.5], counts=True)
    with pytest.raises(ValueError, match="non-negative integers"):
        assert_frequencies([3, -4], [0.5, 0.5], counts=True)
    with pytest.raises(ValueError, match=r"k must be integers in \[0, n\]"):
        clopper_pearson(11, 10)
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\)"):
        clopper_pearson(1, 10, 0.0)


def test_bad_dp_arguments_are_refused_before_any_draw():
    calls = []

    def mech(x, rng):
        calls.append(x)
        return x

    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        assert_dp(mech, 0, 1, -1.0)
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        assert_dp(mech, 0, 1, 1.0, delta=1.0)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 100"):
        assert_dp(mech, 0, 1, 1.0, n_samples=10)
    with pytest.raises(ValueError, match="failure_prob"):
        assert_dp(mech, 0, 1, 1.0, failure_prob=2.0)
    with pytest.raises(TypeError, match="rng must be"):
        assert_dp(mech, 0, 1, 1.0, rng="seed")
    assert calls == []
    with pytest.raises(TypeError, match="mechanism must be callable"):
        assert_dp(None, 0, 1, 1.0)


def test_malformed_mechanism_outputs_are_refused():
    with pytest.raises(ValueError, match="must return 100 outputs"):
        audit_dp(
            lambda x, rng, size: rng.random(size + 1), 0, 1, n_samples=1000, vectorized=True, rng=0
        )
    with pytest.raises(ValueError, match="one number .* per call"):
        audit_dp(lambda x, rng: rng.random(2), 0, 1, n_samples=100, rng=0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        audit_dp(
            lambda x, rng, size: np.full(size, np.nan), 0, 1, n_samples=100, vectorized=True, rng=0
        )
