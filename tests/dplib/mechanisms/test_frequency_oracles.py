"""Frequency oracles (dplib.mechanisms.frequency_oracles): unary encoding and count-mean sketch.

Reference figures: Wang, Blocki, Li & Jha (2017), "Locally Differentially Private Protocols for
Frequency Estimation", USENIX Security: OUE has p = 1/2, q = 1/(e^eps + 1) and rare-item variance
4 e^eps / (n (e^eps - 1)^2) (Section 4.4, Equation (6)); SUE (basic RAPPOR) has
p = e^(eps/2) / (e^(eps/2) + 1) and variance e^(eps/2) / (n (e^(eps/2) - 1)^2) (Section 4.3);
direct encoding (k-RR) beats OUE exactly when k < 3 e^eps + 2 (Section 4.5).
Count-mean sketch: Apple (2017), "Learning with Privacy at Scale", flip probability
1 / (1 + e^(eps/2)) per entry, c_eps = (e^(eps/2) + 1) / (e^(eps/2) - 1).
"""

import math

import numpy as np
import pytest

from dplib.mechanisms.frequency_oracles import (
    cms_hash_table,
    count_mean_sketch,
    count_mean_sketch_estimate,
    unary_encoding,
    unary_encoding_estimate,
    unary_encoding_probabilities,
    unary_encoding_variance,
)
from dplib.mechanisms.randomized_response import k_rr_variance
from dplib.testing import assert_dp, assert_frequencies, assert_mean


@pytest.mark.parametrize("eps", [0.1, 1.0, math.log(3), 4.0])
def test_probabilities(eps):
    p, q = unary_encoding_probabilities(eps)
    assert (p, q) == (0.5, pytest.approx(1 / (math.exp(eps) + 1), rel=1e-14))
    ps, qs = unary_encoding_probabilities(eps, "symmetric")
    assert ps == pytest.approx(math.exp(eps / 2) / (math.exp(eps / 2) + 1), rel=1e-14)
    assert ps + qs == pytest.approx(1.0)
    for a, b in ((p, q), (ps, qs)):
        assert math.log(a * (1 - b) / (b * (1 - a))) == pytest.approx(eps, rel=1e-12)


def test_rare_item_variances_match_wang_et_al():
    eps, n = 1.3, 1000
    e = math.exp(eps)
    assert unary_encoding_variance([0.0], n, eps)[0] == pytest.approx(4 * e / (n * (e - 1) ** 2), rel=1e-12)
    assert unary_encoding_variance([0.0], n, eps, variant="symmetric")[0] == pytest.approx(
        math.exp(eps / 2) / (n * (math.exp(eps / 2) - 1) ** 2), rel=1e-12)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_krr_beats_oue_below_3e_eps_plus_2(eps):
    crossover = 3 * math.exp(eps) + 2
    oue = unary_encoding_variance([0.0], 100, eps)[0]
    for k in range(2, int(crossover) + 6):
        f = np.zeros(k)
        f[0] = 1.0
        krr = k_rr_variance(f, 100, k, eps)[1]          # a rare item
        assert (krr < oue) == (k < crossover), k


def test_unary_bits_are_independent_with_the_right_probabilities(rng_seed):
    eps, k, n = 1.0, 4, 60_000
    values = np.full(n, 2)
    reports = unary_encoding(values, k, eps, rng=rng_seed)
    assert reports.shape == (n, k) and reports.dtype == np.int8
    p, q = unary_encoding_probabilities(eps)
    # the joint law of bits 0, 2 and 3 (as a 3-bit code) is the product law
    code = reports[:, 0] * 4 + reports[:, 2] * 2 + reports[:, 3]
    probs = [(q if b0 else 1 - q) * (p if b2 else 1 - p) * (q if b3 else 1 - q)
             for b0 in (0, 1) for b2 in (0, 1) for b3 in (0, 1)]
    assert_frequencies(code, probs)


@pytest.mark.parametrize("variant", ["optimized", "symmetric"])
def test_unary_encoding_is_epsilon_ldp(variant, rng_seed):
    k, eps = 3, 1.0

    def mech(v, rng, size):
        bits = unary_encoding(np.full(size, v), k, eps, variant=variant, rng=rng)
        return bits @ (2 ** np.arange(k))                 # the whole report as one category

    assert_dp(mech, 0, 1, eps, vectorized=True, n_samples=200_000, rng=rng_seed)
    with pytest.raises(AssertionError):                   # and not much better than claimed
        assert_dp(mech, 0, 1, 0.8 * eps, vectorized=True, n_samples=200_000, rng=rng_seed)


@pytest.mark.parametrize("variant", ["optimized", "symmetric"])
def test_unary_estimate_is_unbiased(variant, rng_seed):
    gen = np.random.default_rng(rng_seed)
    k, eps, n = 5, 1.0, 2000
    values = gen.choice(k, size=n, p=[0.5, 0.2, 0.2, 0.1, 0.0])
    truth = np.bincount(values, minlength=k) / n
    est = np.array([unary_encoding_estimate(unary_encoding(values, k, eps, variant=variant, rng=gen), eps,
                                            variant=variant) for _ in range(300)])
    sd = np.sqrt(unary_encoding_variance(truth, n, eps, variant=variant))
    for j in range(k):
        assert_mean(est[:, j], truth[j], bounds=(truth[j] - 30 * sd[j], truth[j] + 30 * sd[j]))
    assert est.var(axis=0) == pytest.approx(sd**2, rel=0.6)  # 300 draws: sd of the ratio ~0.08


def test_count_mean_sketch_reports_and_estimate(rng_seed):
    gen = np.random.default_rng(rng_seed)
    d, eps, n = 50, 2.0, 100_000
    values = gen.choice(d, size=n, p=np.r_[0.3, 0.2, np.full(d - 2, 0.5 / (d - 2))])
    reports, idx = count_mean_sketch(values, d, eps, num_hashes=8, width=32, rng=gen)
    assert reports.shape == (n, 32) and set(np.unique(reports)) <= {-1, 1}
    assert idx.min() >= 0 and idx.max() < 8
    est = count_mean_sketch_estimate(reports, idx, d, eps, num_hashes=8, width=32)
    truth = np.bincount(values, minlength=d) / n
    assert est.shape == (d,)
    assert abs(est[0] - truth[0]) < 0.05 and abs(est[1] - truth[1]) < 0.05
    assert np.mean(np.abs(est - truth)) < 0.03


def test_count_mean_sketch_flip_rate(rng_seed):
    eps, n = 1.0, 50_000
    reports, idx = count_mean_sketch(np.zeros(n, dtype=int), 10, eps, num_hashes=4, width=16, rng=rng_seed)
    table = cms_hash_table(10, 4, 16)
    own = reports[np.arange(n), table[idx, 0]]
    flip = 1 / (1 + math.exp(eps / 2))
    assert_frequencies(own, {1: 1 - flip, -1: flip})


def test_count_mean_sketch_is_epsilon_ldp(rng_seed):
    eps, width = 1.0, 4
    table = cms_hash_table(6, 1, width, hash_seed=3)
    a, b = next((a, b) for a in range(6) for b in range(6) if table[0, a] != table[0, b])

    def mech(v, rng, size):
        rep, _ = count_mean_sketch(np.full(size, v), 6, eps, num_hashes=1, width=width, hash_seed=3, rng=rng)
        return ((rep + 1) // 2) @ (2 ** np.arange(width))

    assert_dp(mech, a, b, eps, vectorized=True, n_samples=200_000, rng=rng_seed)


def test_randomness_comes_from_rng():
    v = np.arange(10) % 4
    assert np.array_equal(unary_encoding(v, 4, 1.0, rng=7), unary_encoding(v, 4, 1.0, rng=7))
    r1, i1 = count_mean_sketch(v, 4, 1.0, rng=7)
    r2, i2 = count_mean_sketch(v, 4, 1.0, rng=7)
    assert np.array_equal(r1, r2) and np.array_equal(i1, i2)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        unary_encoding([0, 1], 3, bad)
    with pytest.raises(ValueError, match="epsilon"):
        unary_encoding_estimate([[0, 1, 0]], bad)
    with pytest.raises(ValueError, match="epsilon"):
        count_mean_sketch([0, 1], 3, bad)


def test_bad_inputs():
    with pytest.raises(ValueError, match="values"):
        unary_encoding([0, 3], 3, 1.0)
    with pytest.raises(ValueError, match="values"):
        unary_encoding([0.5], 3, 1.0)
    # no user, no report: an empty input is answered with no report (0 records is data)
    assert unary_encoding(np.zeros(0, int), 3, 1.0, rng=0).shape == (0, 3)
    with pytest.raises(ValueError, match="k"):
        unary_encoding([0], 1, 1.0)
    with pytest.raises(ValueError, match="variant"):
        unary_encoding([0], 3, 1.0, variant="rappor")
    with pytest.raises(ValueError, match="0/1"):
        unary_encoding_estimate([[0, 2, 0]], 1.0)
    with pytest.raises(ValueError, match="2-d"):
        unary_encoding_estimate([0, 1, 0], 1.0)
    with pytest.raises(ValueError, match="frequencies"):
        unary_encoding_variance([1.5], 10, 1.0)
    with pytest.raises(ValueError, match="width"):
        count_mean_sketch([0], 3, 1.0, width=1)
    with pytest.raises(ValueError, match="-1"):
        count_mean_sketch_estimate(np.zeros((2, 64)), [0, 0], 3, 1.0)
    with pytest.raises(ValueError, match="hash_indices"):
        count_mean_sketch_estimate(np.ones((2, 64)), [0, 16], 3, 1.0)


@pytest.mark.parametrize("bad", [np.array(["optimized", "symmetric"]), np.array([]), np.zeros((2, 2)),
                                 None, 1, ["optimized"]])
def test_variant_must_be_one_of_the_names(bad):
    with pytest.raises(TypeError, match=r"variant must be a str"):
        unary_encoding([0, 2, 1], 3, 1.0, variant=bad, rng=0)
    with pytest.raises(TypeError, match=r"variant must be a str"):
        unary_encoding_estimate([[1, 0, 0], [0, 1, 1]], 1.0, variant=bad)
    assert unary_encoding_probabilities(1.0, np.str_("symmetric"))[0] > 0.5


@pytest.mark.parametrize("eps", [5e-324, 1e-300, 1e-17])
def test_an_epsilon_too_small_for_the_estimate_is_refused(eps):
    reports = [[1, 0, 0], [0, 1, 1], [0, 0, 1]]
    for variant in ("optimized", "symmetric"):
        with pytest.raises(ValueError, match=r"epsilon is too small"):
            unary_encoding_estimate(reports, eps, variant=variant)
        with pytest.raises(ValueError, match=r"epsilon is too small"):
            unary_encoding_variance([0.5], 10, eps, variant=variant)
    # the sketch's debiasing constant is 1 / tanh(eps / 4), exact down to eps / 4 = 5e-324
    cms = ([[1, -1, 1, -1, 1, -1, 1, -1]] * 3, [0, 1, 2], 5, eps)
    if eps / 4 == 0.0:
        with pytest.raises(ValueError, match=r"epsilon is too small"):
            count_mean_sketch_estimate(*cms, num_hashes=4, width=8)
    else:
        assert np.all(np.isfinite(count_mean_sketch_estimate(*cms, num_hashes=4, width=8)))
    # the reports themselves are fine: near-zero epsilon is near-uniform noise
    assert unary_encoding([0, 2, 1], 3, eps, rng=0).shape == (3, 3)
    assert count_mean_sketch([0, 2, 1], 5, eps, num_hashes=4, width=8, rng=0)[0].shape == (3, 8)
