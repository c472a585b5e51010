"""Tests of dplib.attacks.dinur_nissim: the Dinur-Nissim reconstruction attack.

Dinur & Nissim (PODS 2003): answers within ``E = o(sqrt(n))`` of the truth let an attacker with
random subset queries recover all but ``o(n)`` bits. The tests use n = 128, m = 4n = 512 and
5 fixed seeds (``SEED``, overridable through ``DPLIB_TEST_SEED``).

Measured when written (10 seeds, uniform noise, min / mean / max fraction recovered):
E = 1 and E = sqrt(n)/10: 1.000 for both decoders on every seed; E = sqrt(n): least squares
0.70 / 0.76 / 0.80, LP 0.82 / 0.86 / 0.94; E = 3 sqrt(n): least squares 0.54 / 0.59 / 0.66,
LP 0.63 / 0.70 / 0.76. Hence the thresholds: >= 0.95 of the bits for small noise (a margin of
5% below the 100% observed, i.e. the o(n) of the theorem allows a few errors), and <= 0.70 on
average for least squares at E = 3 sqrt(n). The min-max LP is the maximum-likelihood decoder for
bounded uniform noise and does better there; it is held to <= 0.70 at E = n (= 11 sqrt(n)).
A least-squares coordinate has standard error about 2 sigma / sqrt(m) (sigma^2 = E^2 / 3), which
is 0.03 at E = 1 (every bit recovered) and 1.7 at E = 3 sqrt(n) (a coin flip biased to ~0.6).
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from dplib.attacks.dinur_nissim import noisy_subset_sums, reconstruct, subset_sum_queries

SEED = int(os.environ.get("DPLIB_TEST_SEED", "20261122"))
N = 128
M = 4 * N


def _recovery(noise_bound, method, seeds=range(5), noise="uniform"):
    rates = []
    for k in seeds:
        g = np.random.default_rng([SEED, k])
        secret = g.integers(0, 2, size=N)
        subsets = subset_sum_queries(N, M, rng=g)
        answers = noisy_subset_sums(secret, subsets, noise_bound, noise=noise, rng=g)
        rates.append(float(np.mean(reconstruct(subsets, answers, method=method) == secret)))
    return np.array(rates)


@pytest.mark.parametrize("method", ["lstsq", "lp"])
@pytest.mark.parametrize("noise_bound", [1.0, np.sqrt(N) / 10])
def test_small_noise_reveals_nearly_every_bit(method, noise_bound):
    rates = _recovery(noise_bound, method)
    assert rates.min() >= 0.95, rates


def test_small_laplace_noise_reveals_nearly_every_bit_to_least_squares():
    assert _recovery(1.0, "lstsq", noise="laplace").min() >= 0.95


def test_min_max_lp_is_hurt_by_heavy_tailed_noise():
    # The L-infinity fit chases the largest Laplace draws: measured 0.86-0.93 at scale 1 (5
    # seeds), where least squares recovers every bit. Still far above chance.
    rates = _recovery(1.0, "lp", noise="laplace")
    assert rates.mean() >= 0.8, rates
    assert rates.mean() < _recovery(1.0, "lstsq", noise="laplace").mean()


def test_large_noise_defeats_least_squares():
    rates = _recovery(3 * np.sqrt(N), "lstsq")
    assert rates.mean() <= 0.70, rates
    assert rates.max() <= 0.75, rates


def test_very_large_noise_defeats_the_lp():
    rates = _recovery(float(N), "lp")
    assert rates.mean() <= 0.70, rates


def test_noiseless_answers_are_decoded_exactly():
    g = np.random.default_rng(SEED)
    secret = g.integers(0, 2, size=50)
    subsets = subset_sum_queries(50, 200, rng=g)
    answers = noisy_subset_sums(secret, subsets, 0.0, rng=g)
    np.testing.assert_array_equal(answers, subsets @ secret)
    for method in ("lstsq", "lp"):
        np.testing.assert_array_equal(reconstruct(subsets, answers, method=method), secret)


def test_uniform_noise_is_bounded_by_e():
    g = np.random.default_rng(SEED)
    secret = g.integers(0, 2, size=20)
    subsets = subset_sum_queries(20, 5000, rng=g)
    z = noisy_subset_sums(secret, subsets, 2.5, rng=g) - subsets @ secret
    assert np.all(np.abs(z) <= 2.5)
    assert np.abs(z).max() > 2.4  # uses the whole range (P(all < 2.4) = 0.96^5000)


def test_queries_are_random_subsets():
    a = subset_sum_queries(100, 300, rng=SEED)
    assert a.shape == (300, 100)
    assert set(np.unique(a)) == {0.0, 1.0}
    # mean of 30000 fair bits: sd 0.0029; 0.02 is 6.9 sd (two-sided tail < 1e-11).
    assert abs(a.mean() - 0.5) < 0.02
    np.testing.assert_array_equal(a, subset_sum_queries(100, 300, rng=SEED))
    assert not np.array_equal(a, subset_sum_queries(100, 300, rng=SEED + 1))


def test_runs_in_a_few_seconds():
    start = time.perf_counter()
    _recovery(np.sqrt(N), "lp", seeds=range(1))
    _recovery(np.sqrt(N), "lstsq", seeds=range(1))
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [
        (lambda: subset_sum_queries(0, 5), ValueError, r"n must be an integer >= 1, got 0"),
        (lambda: subset_sum_queries(5, -1), ValueError, r"m must be an integer >= 1, got -1"),
        (lambda: subset_sum_queries(5.0, 5), TypeError, r"n must be an integer"),
        (lambda: subset_sum_queries(2**40, 2**40), ValueError, r"m \* n must be at most"),
        (lambda: subset_sum_queries(5, 5, rng="x"), TypeError, r"rng must be"),
        (lambda: noisy_subset_sums([0, 2], [[1, 1]], 1.0), ValueError,
         r"secret_bits must contain only 0 and 1, got 2"),
        (lambda: noisy_subset_sums([0, 1], [[1, 1, 1]], 1.0), ValueError,
         r"subsets must have one column per record \(2 columns\)"),
        (lambda: noisy_subset_sums([0, 1], [[1, 0.5]], 1.0), ValueError,
         r"subsets must contain only 0 and 1, got 0.5"),
        (lambda: noisy_subset_sums([0, 1], [1, 1], 1.0), ValueError, r"subsets must be a 2-d"),
        (lambda: noisy_subset_sums([0, 1], [[1, 1]], -1.0), ValueError,
         r"noise_bound must be a finite number >= 0, got -1"),
        (lambda: noisy_subset_sums([0, 1], [[1, 1]], float("nan")), ValueError, r"noise_bound"),
        (lambda: noisy_subset_sums([0, 1], [[1, 1]], 1.0, noise="gauss"), ValueError,
         r"noise must be one of 'uniform', 'laplace', got 'gauss'"),
        (lambda: noisy_subset_sums([0, 1], [[1, 1]], "1"), TypeError, r"noise_bound must be"),
        (lambda: reconstruct([[1, 1]], [1.0, 2.0]), ValueError,
         r"answers must have one entry per row of subsets \(1\), got 2"),
        (lambda: reconstruct([[1, 1]], [np.inf]), ValueError, r"answers must not contain NaN"),
        (lambda: reconstruct([[1, 1]], [1.0], method="l1"), ValueError,
         r"method must be one of 'lstsq', 'lp', got 'l1'"),
        (lambda: reconstruct([[1, 1]], [1.0], method=None), TypeError, r"method must be a str"),
        (lambda: reconstruct([[1, 1]], ["1"]), TypeError, r"answers must be an array"),
    ],
)
def test_bad_input_is_refused(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_refusal_draws_no_randomness():
    g = np.random.default_rng(0)
    state = g.bit_generator.state
    with pytest.raises(ValueError, match="noise_bound"):
        noisy_subset_sums([0, 1], [[1, 1]], -1.0, rng=g)
    with pytest.raises(ValueError, match="n must be"):
        subset_sum_queries(0, 3, rng=g)
    assert g.bit_generator.state == state
