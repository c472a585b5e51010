"""The textbook Laplace mechanism: scale, distribution, DP ratio, tail bound, refusals."""

import math

import numpy as np
import pytest
from scipy import stats

from dplib.mechanisms.laplace import laplace_mechanism, laplace_scale, laplace_tail_bound
from dplib.testing import assert_distribution, assert_dp, assert_variance


def test_scale_is_sensitivity_over_epsilon():
    assert laplace_scale(1.0, 0.5) == 2.0
    assert laplace_scale(3.0, 0.1) == pytest.approx(30.0)
    assert laplace_scale(0.0, 1.0) == 0.0


def test_noise_follows_laplace_with_the_right_scale(rng_seed):
    noisy = laplace_mechanism(np.full(100_000, 10.0), sensitivity=2.0, epsilon=0.5, rng=rng_seed)
    assert noisy.shape == (100_000,)
    assert_distribution(noisy, stats.laplace(loc=10.0, scale=4.0).cdf)


def test_wrong_scale_is_detected():
    # Noise of scale epsilon / sensitivity (the inverted formula) is a plausible student bug.
    noisy = 10.0 + np.random.default_rng(1).laplace(0.0, 0.25, size=100_000)
    with pytest.raises(AssertionError):
        assert_distribution(noisy, stats.laplace(loc=10.0, scale=4.0).cdf)


def test_variance_is_two_b_squared(rng_seed):
    noisy = laplace_mechanism(np.zeros(200_000), sensitivity=1.0, epsilon=1.0, rng=rng_seed)
    # Var(Lap(b)) = 2 b^2 = 2. Clip at 40 b: P(|Lap| > 40) = e^-40, negligible.
    assert_variance(np.clip(noisy, -40, 40), 2.0, bounds=(-40.0, 40.0))


def test_laplace_is_epsilon_dp_empirically(rng_seed):
    def mechanism(x, rng, size):
        return laplace_mechanism(np.full(size, x), 1.0, 1.0, rng=rng)

    assert_dp(mechanism, 0.0, 1.0, epsilon=1.0, vectorized=True, rng=rng_seed)


def test_half_scale_laplace_fails_the_dp_check(rng_seed):
    # Noise of scale sensitivity / (2 epsilon) is 2-DP, not 1-DP. dplib.testing documents that
    # 1,000 samples already reject it at claimed epsilon 1 (200 of 200 seeds); 100,000 leave no doubt.
    def mechanism(x, rng, size):
        return laplace_mechanism(np.full(size, x), 1.0, 2.0, rng=rng)

    with pytest.raises(AssertionError):
        assert_dp(mechanism, 0.0, 1.0, epsilon=1.0, vectorized=True, rng=rng_seed)


def test_tail_bound_formula_and_coverage(rng_seed):
    # P(|Lap(b)| > b ln(1/beta)) = beta exactly (Dwork & Roth 2014, Fact 3.7).
    t = laplace_tail_bound(1.0, 0.5, 0.05)
    assert t == pytest.approx(2.0 * math.log(20))
    assert stats.laplace(scale=2.0).sf(t) * 2 == pytest.approx(0.05, rel=1e-12)


def test_scalar_in_float_out_and_shape_preserved():
    assert isinstance(laplace_mechanism(3, 1.0, 1.0, rng=0), float)
    out = laplace_mechanism(np.zeros((3, 4)), 1.0, 1.0, rng=0)
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out, laplace_mechanism(np.zeros((3, 4)), 1.0, 1.0, rng=0))
    assert laplace_mechanism(5.0, 0.0, 1.0, rng=0) == 5.0  # zero sensitivity needs no noise


def test_generator_stream_continues():
    rng = np.random.default_rng(5)
    first, second = laplace_mechanism(0.0, 1.0, 1.0, rng=rng), laplace_mechanism(0.0, 1.0, 1.0, rng=rng)
    assert first != second


@pytest.mark.parametrize(
    "args, error, message",
    [
        ((1.0, 1.0, 0.0), ValueError, "epsilon must be a finite number > 0, got 0.0"),
        ((1.0, 1.0, -1), ValueError, "epsilon must be a finite number > 0, got -1"),
        ((1.0, 1.0, math.inf), ValueError, "epsilon must be a finite number > 0"),
        ((1.0, -1.0, 1.0), ValueError, "sensitivity must be a finite number >= 0"),
        ((1.0, math.nan, 1.0), ValueError, "sensitivity must be a finite number >= 0"),
        ((math.nan, 1.0, 1.0), ValueError, "value must not contain NaN"),
        (([1.0, math.inf], 1.0, 1.0), ValueError, "value must not contain NaN or infinite"),
        (("abc", 1.0, 1.0), TypeError, "value must be an array of numbers"),
        ((1.0, 1.0, None), TypeError, "epsilon must be a real number"),
    ],
)
def test_bad_input_is_refused(args, error, message):
    with pytest.raises(error, match=message):
        laplace_mechanism(*args, rng=0)


def test_tail_bound_refuses_bad_beta():
    with pytest.raises(ValueError, match=r"beta must be in \(0, 1\)"):
        laplace_tail_bound(1.0, 1.0, 0.0)
