"""Tests of dplib.mechanisms.exponential: the exponential mechanism, report-noisy-max and
permute-and-flip.

Statistical tests (named ``test_stat_*``) take their seed from ``SEED`` (overridable through the
environment variable ``DPLIB_TEST_SEED``, to rerun them under many seeds). Each compares the
counts of many draws with exact probabilities through per-candidate two-sided binomial tails,
with a Bonferroni correction so that the false-failure probability of each assertion is at
most 1e-9.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import warnings

import numpy as np
import pytest
from scipy import integrate, stats

from dplib.mechanisms import exponential as exponential_module
from dplib.mechanisms.exponential import (
    exponential_mechanism,
    exponential_mechanism_probabilities,
    permute_and_flip,
    report_noisy_max,
)

SEED = int(os.environ.get("DPLIB_TEST_SEED", "20261122"))
FALSE_FAILURE = 1e-9  # per statistical assertion
DRAWS = 200_000

SCORES = np.array([3.0, 2.0, 2.5, 0.0, -1.0])


def _rng(k: int) -> np.random.Generator:
    return np.random.default_rng([SEED, k])


# ---------------------------------------------------------------------------------------------
# Exact reference probabilities, computed independently of dplib
# ---------------------------------------------------------------------------------------------


def _em_exact(scores, sensitivity, epsilon, factor=2.0):
    """p_i ∝ exp(eps u_i / (factor Delta)), straight from McSherry & Talwar (2007)."""
    weights = np.exp(epsilon * np.asarray(scores, dtype=float) / (factor * sensitivity))
    return weights / weights.sum()


def _pf_exact(scores, sensitivity, epsilon):
    """Permute-and-flip probabilities by enumerating all orders (McKenna & Sheldon 2020).

    In order ``perm``, candidate ``perm[k]`` is returned with probability
    ``prod_{j < k} (1 - a_perm[j]) * a_perm[k]`` where ``a_r = exp(eps (u_r - u*) / (2 Delta))``;
    the best candidate has ``a = 1``, so every order returns something.
    """
    u = np.asarray(scores, dtype=float)
    accept = np.exp(epsilon * (u - u.max()) / (2 * sensitivity))
    probs = np.zeros(u.size)
    orders = list(itertools.permutations(range(u.size)))
    for order in orders:
        reach = 1.0
        for r in order:
            probs[r] += reach * accept[r]
            reach *= 1 - accept[r]
    return probs / len(orders)


def _pf_loop(scores, sensitivity, epsilon, rng, draws):
    """Direct, slow permute-and-flip: a Python loop over a random order, one coin per visit."""
    u = np.asarray(scores, dtype=float)
    accept = np.exp(epsilon * (u - u.max()) / (2 * sensitivity))
    out = np.empty(draws, dtype=np.int64)
    for t in range(draws):
        for r in rng.permutation(u.size):
            if rng.random() < accept[r]:
                out[t] = r
                break
    return out


def _rnm_exact(scores, noise):
    """P(argmax (u_i + Z_i) = i) = integral of f(z) prod_{j != i} F(u_i - u_j + z) dz."""
    u = np.asarray(scores, dtype=float)
    probs = np.zeros(u.size)
    for i in range(u.size):
        others = np.delete(u, i)

        def integrand(z, i=i, others=others):
            return noise.pdf(z) * np.prod(noise.cdf(u[i] - others + z))

        lo, hi = noise.ppf(1e-18), noise.isf(1e-18)
        kinks = sorted({float(x) for x in others - u[i]} | {0.0})
        kinks = [k for k in kinks if lo < k < hi]
        probs[i], _ = integrate.quad(
            integrand, lo, hi, points=kinks or None, epsabs=1e-13, epsrel=1e-11, limit=500
        )
    return probs


def assert_frequencies(indices, probabilities, total=FALSE_FAILURE):
    """Counts of ``indices`` agree with ``probabilities``, except with probability ``total``.

    For candidate i, count_i ~ Binomial(n, p_i). Under that law,
    P(count_i < binom.ppf(a/2)) < a/2 and P(count_i > binom.isf(a/2)) <= a/2, so the two-sided
    check fails with probability < a; with a = total / k (Bonferroni over the k candidates),
    the whole assertion fails with probability < total.
    """
    probabilities = np.asarray(probabilities, dtype=float)
    indices = np.asarray(indices)
    k, n = probabilities.size, indices.size
    assert indices.min() >= 0 and indices.max() < k
    counts = np.bincount(indices, minlength=k)
    alpha = total / k
    lo = stats.binom.ppf(alpha / 2, n, probabilities)
    hi = stats.binom.isf(alpha / 2, n, probabilities)
    assert np.all((lo <= counts) & (counts <= hi)), (counts / n, probabilities, lo / n, hi / n)


def assert_distinguishable(n, right, wrong, total=FALSE_FAILURE):
    """Power: for some candidate, the acceptance intervals of ``assert_frequencies`` under
    ``right`` and under ``wrong`` are disjoint, so ``n`` draws that pass the check for ``right``
    necessarily fail it for ``wrong``: the test would catch that mistake."""
    right, wrong = np.asarray(right, dtype=float), np.asarray(wrong, dtype=float)
    alpha = total / right.size
    lo_r, hi_r = stats.binom.ppf(alpha / 2, n, right), stats.binom.isf(alpha / 2, n, right)
    lo_w, hi_w = stats.binom.ppf(alpha / 2, n, wrong), stats.binom.isf(alpha / 2, n, wrong)
    assert np.any((hi_r < lo_w) | (hi_w < lo_r))


# ---------------------------------------------------------------------------------------------
# Exact probabilities
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1.0, 1.0), (2.5, 0.8), (0.1, 0.05)])
def test_probabilities_follow_the_exponential_mechanism(sensitivity, epsilon):
    probs = exponential_mechanism_probabilities(SCORES, sensitivity, epsilon)
    np.testing.assert_allclose(probs, _em_exact(SCORES, sensitivity, epsilon), rtol=1e-13)
    assert probs.sum() == pytest.approx(1.0, abs=1e-15)


def test_monotonic_doubles_the_exponent():
    mono = exponential_mechanism_probabilities(SCORES, 1.5, 0.7, monotonic=True)
    np.testing.assert_allclose(mono, _em_exact(SCORES, 1.5, 0.7, factor=1.0), rtol=1e-13)
    np.testing.assert_allclose(
        mono, exponential_mechanism_probabilities(SCORES, 1.5, 1.4), rtol=1e-13
    )
    assert not np.allclose(mono, exponential_mechanism_probabilities(SCORES, 1.5, 0.7))


def test_probabilities_are_stable_for_huge_scores():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warning either
        probs = exponential_mechanism_probabilities([1e6, 1e6 - 1, 0.0], 1.0, 1.0)
        # exp(1e6 / 2) overflows; only differences may be exponentiated
        expected = np.array([1.0, math.exp(-0.5), 0.0]) / (1 + math.exp(-0.5))
        np.testing.assert_allclose(probs, expected, rtol=1e-13, atol=0)
        probs = exponential_mechanism_probabilities([1e308, -1e308, 1e308], 1.0, 1.0)
        np.testing.assert_array_equal(probs, [0.5, 0.0, 0.5])
        probs = exponential_mechanism_probabilities([-5e8, -5e8 - 2], 1.0, 1.0, monotonic=True)
        np.testing.assert_allclose(probs, [1 / (1 + math.exp(-2)), 1 - 1 / (1 + math.exp(-2))])
    assert exponential_mechanism_probabilities([7.0], 1.0, 1.0).tolist() == [1.0]


def test_permute_and_flip_is_report_noisy_max_with_exponential_noise_exactly():
    # Ding et al. (2021): two independent exact computations of the same distribution, one by
    # enumerating the orders of permute-and-flip, one by integrating report-noisy-max.
    for scores, sensitivity, epsilon in [(SCORES, 1.0, 1.0), ([0.0, 1.0, 1.0, 4.0], 2.0, 3.0)]:
        noise = stats.expon(scale=2 * sensitivity / epsilon)
        np.testing.assert_allclose(
            _pf_exact(scores, sensitivity, epsilon), _rnm_exact(scores, noise), rtol=1e-7
        )


def test_report_noisy_max_with_gumbel_noise_is_the_exponential_mechanism_exactly():
    noise = stats.gumbel_r(scale=2 * 1.0 / 1.0)
    np.testing.assert_allclose(
        _rnm_exact(SCORES, noise), exponential_mechanism_probabilities(SCORES, 1.0, 1.0), rtol=1e-7
    )


def test_permute_and_flip_never_has_lower_expected_utility_than_exponential_mechanism():
    # McKenna & Sheldon (2020): E[u] under PF >= E[u] under EM, for every score vector.
    gen = np.random.default_rng(0)
    for _ in range(30):
        scores = gen.normal(0, 3, size=5)
        em = exponential_mechanism_probabilities(scores, 1.0, 1.0) @ scores
        pf = _pf_exact(scores, 1.0, 1.0) @ scores
        assert pf >= em - 1e-12


# ---------------------------------------------------------------------------------------------
# The epsilon-DP property, on exact probabilities
# ---------------------------------------------------------------------------------------------


def _max_log_ratio(p, q):
    return float(np.max(np.abs(np.log(p) - np.log(q))))


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1.0, 1.0), (3.0, 0.3), (0.5, 4.0)])
def test_probabilities_of_neighbours_differ_by_at_most_e_to_the_epsilon(sensitivity, epsilon):
    gen = np.random.default_rng(1)
    for _ in range(200):
        u = gen.normal(0, 5 * sensitivity, size=gen.integers(2, 30))
        v = u + gen.uniform(-sensitivity, sensitivity, size=u.size)  # each moves by <= Delta
        p = exponential_mechanism_probabilities(u, sensitivity, epsilon)
        q = exponential_mechanism_probabilities(v, sensitivity, epsilon)
        assert _max_log_ratio(p, q) <= epsilon * (1 + 1e-12)
        # monotonic neighbours: every score moves in the same direction
        w = u + gen.uniform(0, sensitivity, size=u.size) * gen.choice([-1, 1])
        p = exponential_mechanism_probabilities(u, sensitivity, epsilon, monotonic=True)
        q = exponential_mechanism_probabilities(w, sensitivity, epsilon, monotonic=True)
        assert _max_log_ratio(p, q) <= epsilon * (1 + 1e-12)
        # permute-and-flip (exact, by enumeration) on small candidate sets
        if u.size <= 5:
            assert _max_log_ratio(
                _pf_exact(u, sensitivity, epsilon), _pf_exact(v, sensitivity, epsilon)
            ) <= epsilon * (1 + 1e-9)


def test_the_factor_two_is_needed_for_non_monotonic_neighbours():
    # u = 0 everywhere; v raises candidate 0 by Delta and lowers the 999 others by Delta.
    # Then p_0(v) / p_0(u) = e^(eps/2) * 1000 / (e^(eps/2) + 999 e^(-eps/2)) ~ e^eps: the bound
    # is nearly attained, so an exponent eps u / Delta (no factor 2) would break it.
    epsilon, sensitivity = 1.0, 1.0
    u = np.zeros(1000)
    v = np.full(1000, -sensitivity)
    v[0] = sensitivity
    p = exponential_mechanism_probabilities(u, sensitivity, epsilon)
    q = exponential_mechanism_probabilities(v, sensitivity, epsilon)
    ratio = q[0] / p[0]
    assert math.exp(0.99 * epsilon) < ratio <= math.exp(epsilon)
    p = exponential_mechanism_probabilities(u, sensitivity, epsilon, monotonic=True)
    q = exponential_mechanism_probabilities(v, sensitivity, epsilon, monotonic=True)
    assert q[0] / p[0] > math.exp(1.9 * epsilon)  # monotonic=True is unsafe for such neighbours


# ---------------------------------------------------------------------------------------------
# Sampling: empirical frequencies against exact probabilities
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("monotonic", [False, True])
def test_stat_exponential_mechanism_frequencies(monotonic):
    factor = 1.0 if monotonic else 2.0
    draws = exponential_mechanism(
        SCORES, 1.0, 1.0, rng=_rng(1 + monotonic), monotonic=monotonic, size=DRAWS
    )
    assert_frequencies(draws, _em_exact(SCORES, 1.0, 1.0, factor=factor))
    # power: the other exponent (a missing or extra factor 2) would be caught
    assert_distinguishable(
        DRAWS,
        _em_exact(SCORES, 1.0, 1.0, factor=factor),
        _em_exact(SCORES, 1.0, 1.0, factor=3.0 - factor),
    )


def test_stat_exponential_mechanism_single_draws():
    gen = _rng(3)
    draws = [exponential_mechanism(SCORES, 2.0, 1.5, rng=gen) for _ in range(5_000)]
    assert all(type(d) is int for d in draws)
    assert_frequencies(draws, _em_exact(SCORES, 2.0, 1.5))


def test_stat_report_noisy_max_gumbel_is_the_exponential_mechanism():
    draws = report_noisy_max(SCORES, 1.0, 1.0, noise="gumbel", rng=_rng(4), size=DRAWS)
    assert_frequencies(draws, exponential_mechanism_probabilities(SCORES, 1.0, 1.0))
    assert_distinguishable(DRAWS, _em_exact(SCORES, 1.0, 1.0), _pf_exact(SCORES, 1.0, 1.0))


def test_stat_report_noisy_max_laplace_uses_scale_two_delta_over_epsilon():
    sensitivity, epsilon = 1.5, 2.0
    draws = report_noisy_max(SCORES, sensitivity, epsilon, noise="laplace", rng=_rng(5), size=DRAWS)
    exact = _rnm_exact(SCORES, stats.laplace(scale=2 * sensitivity / epsilon))
    assert_frequencies(draws, exact)
    # power: the scale Delta / epsilon (only valid for monotonic scores) would be caught
    assert_distinguishable(
        DRAWS, exact, _rnm_exact(SCORES, stats.laplace(scale=sensitivity / epsilon))
    )


def test_stat_report_noisy_max_exponential_is_permute_and_flip():
    draws = report_noisy_max(SCORES, 1.0, 1.0, noise="exponential", rng=_rng(6), size=DRAWS)
    assert_frequencies(draws, _pf_exact(SCORES, 1.0, 1.0))
    assert_distinguishable(DRAWS, _pf_exact(SCORES, 1.0, 1.0), _em_exact(SCORES, 1.0, 1.0))


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1.0, 1.0), (2.0, 3.0)])
def test_stat_permute_and_flip_frequencies(sensitivity, epsilon):
    exact = _pf_exact(SCORES, sensitivity, epsilon)
    # the enumeration agrees with the direct loop of McKenna & Sheldon ...
    assert_frequencies(_pf_loop(SCORES, sensitivity, epsilon, _rng(7), 20_000), exact)
    # ... and with the vectorized implementation
    draws = permute_and_flip(SCORES, sensitivity, epsilon, rng=_rng(8), size=DRAWS)
    assert_frequencies(draws, exact)
    # power: the exponential mechanism's distribution would be caught
    assert_distinguishable(DRAWS, exact, _em_exact(SCORES, sensitivity, epsilon))


def test_stat_huge_scores_sample_correctly():
    scores = [1e6, 1e6 - 1, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        em = exponential_mechanism(scores, 1.0, 1.0, rng=_rng(9), size=DRAWS)
        gumbel = report_noisy_max(scores, 1.0, 1.0, rng=_rng(10), size=DRAWS)
        laplace = report_noisy_max(scores, 1.0, 1.0, noise="laplace", rng=_rng(11), size=DRAWS)
        pf = permute_and_flip(scores, 1.0, 1.0, rng=_rng(12), size=DRAWS)
    expected = np.array([1.0, math.exp(-0.5), 0.0]) / (1 + math.exp(-0.5))
    assert_frequencies(em, expected)
    assert_frequencies(gumbel, expected)
    # candidate 2 is 1e6 below: Laplace noise of scale 2 never bridges that
    assert not np.any(laplace == 2)
    # PF: order (1, 0) returns 1 w.p. e^-1/2; candidate 2 is never accepted
    assert_frequencies(pf, [1 - math.exp(-0.5) / 2, math.exp(-0.5) / 2, 0.0])


def test_blocks_do_not_change_the_draws(monkeypatch):
    # report_noisy_max draws its noise in blocks; their boundaries must not matter
    expected = report_noisy_max(SCORES, 1.0, 1.0, noise="laplace", rng=SEED, size=1000)
    monkeypatch.setattr(exponential_module, "_MAX_BLOCK", 7)
    again = report_noisy_max(SCORES, 1.0, 1.0, noise="laplace", rng=SEED, size=1000)
    np.testing.assert_array_equal(again, expected)


# ---------------------------------------------------------------------------------------------
# Output types, sizes and seeds
# ---------------------------------------------------------------------------------------------

SAMPLERS = [
    pytest.param(lambda **kw: exponential_mechanism(SCORES, 1.0, 1.0, **kw), id="em"),
    pytest.param(
        lambda **kw: exponential_mechanism(SCORES, 1.0, 1.0, monotonic=True, **kw),
        id="em-monotonic",
    ),
    pytest.param(lambda **kw: report_noisy_max(SCORES, 1.0, 1.0, **kw), id="rnm-gumbel"),
    pytest.param(
        lambda **kw: report_noisy_max(SCORES, 1.0, 1.0, noise="exponential", **kw),
        id="rnm-exponential",
    ),
    pytest.param(
        lambda **kw: report_noisy_max(SCORES, 1.0, 1.0, noise="laplace", **kw), id="rnm-laplace"
    ),
    pytest.param(lambda **kw: permute_and_flip(SCORES, 1.0, 1.0, **kw), id="pf"),
]


@pytest.mark.parametrize("sample", SAMPLERS)
def test_output_types_and_sizes(sample):
    one = sample(rng=SEED)
    assert type(one) is int and 0 <= one < SCORES.size
    many = sample(rng=SEED, size=50)
    assert isinstance(many, np.ndarray) and many.shape == (50,) and many.dtype == np.int64
    assert many.min() >= 0 and many.max() < SCORES.size
    assert sample(rng=SEED, size=1).shape == (1,)
    assert sample(rng=SEED, size=np.int64(3)).shape == (3,)


@pytest.mark.parametrize("sample", SAMPLERS)
def test_same_seed_same_output(sample):
    np.testing.assert_array_equal(sample(rng=99, size=200), sample(rng=99, size=200))
    assert not np.array_equal(sample(rng=99, size=200), sample(rng=100, size=200))
    assert sample(rng=5) == sample(rng=5)
    # a Generator continues its stream
    gen = np.random.default_rng(5)
    first, second = sample(rng=gen, size=200), sample(rng=gen, size=200)
    assert not np.array_equal(first, second)


def test_a_single_candidate_is_always_chosen():
    for sample in (exponential_mechanism, report_noisy_max, permute_and_flip):
        assert sample([42.0], 1.0, 1.0, rng=SEED) == 0
        assert sample([42.0], 1.0, 1.0, rng=SEED, size=5).tolist() == [0] * 5


def test_overwhelming_score_is_always_chosen():
    scores = [0.0, 1e6, 0.0, -3.0]
    for sample in (exponential_mechanism, report_noisy_max, permute_and_flip):
        assert np.all(sample(scores, 1.0, 1.0, rng=SEED, size=1000) == 1)


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------

FUNCTIONS = [
    pytest.param(exponential_mechanism, True, id="exponential_mechanism"),
    pytest.param(exponential_mechanism_probabilities, False, id="probabilities"),
    pytest.param(report_noisy_max, True, id="report_noisy_max"),
    pytest.param(permute_and_flip, True, id="permute_and_flip"),
]

BAD_COMMON = [
    ({"scores": []}, ValueError, "scores must not be empty"),
    ({"scores": [1.0, math.nan]}, ValueError, "scores must not contain NaN or infinite values"),
    ({"scores": [1.0, math.inf]}, ValueError, "scores must not contain NaN or infinite values"),
    ({"scores": [1.0, -math.inf]}, ValueError, "scores must not contain NaN or infinite values"),
    ({"scores": [[1.0, 2.0], [3.0, 4.0]]}, ValueError, "scores must be a 1-d array"),
    ({"scores": 3.0}, ValueError, "scores must be a 1-d array of candidate scores, got shape ()"),
    ({"scores": ["a", "b"]}, TypeError, "scores must be an array of numbers"),
    ({"epsilon": 0.0}, ValueError, "epsilon must be a finite number > 0, got 0.0"),
    ({"epsilon": -1}, ValueError, "epsilon must be a finite number > 0, got -1"),
    ({"epsilon": math.inf}, ValueError, "epsilon must be a finite number > 0, got inf"),
    ({"epsilon": math.nan}, ValueError, "epsilon must be a finite number > 0"),
    ({"epsilon": "1"}, TypeError, "epsilon must be a real number"),
    ({"sensitivity": 0.0}, ValueError, "sensitivity must be a finite number > 0, got 0.0"),
    ({"sensitivity": 0}, ValueError, "sensitivity 0 is ill-defined"),
    ({"sensitivity": -1.0}, ValueError, "sensitivity must be a finite number > 0, got -1.0"),
    ({"sensitivity": math.inf}, ValueError, "sensitivity must be a finite number > 0"),
    ({"sensitivity": None}, TypeError, "sensitivity must be a real number"),
    ({"sensitivity": 5e-324}, ValueError, "epsilon / sensitivity must be representable"),
    ({"epsilon": 1e-320}, ValueError, "epsilon / sensitivity must be representable"),
]

BAD_SAMPLING = [
    ({"size": 0}, ValueError, "size must be an integer >= 1, got 0"),
    ({"size": -5}, ValueError, "size must be an integer >= 1"),
    ({"size": 2.0}, TypeError, "size must be an integer"),
    ({"size": True}, TypeError, "size must be an integer"),
    ({"rng": "seed"}, TypeError, "rng must be None"),
    ({"rng": -1}, ValueError, "rng seed must be a non-negative integer"),
]


@pytest.mark.parametrize(("function", "sampling"), FUNCTIONS)
@pytest.mark.parametrize(("overrides", "error", "message"), BAD_COMMON)
def test_refuses_bad_input_without_drawing(function, sampling, overrides, error, message):
    gen = np.random.default_rng(SEED)
    state = gen.bit_generator.state
    args = {"scores": SCORES, "sensitivity": 1.0, "epsilon": 1.0, **overrides}
    kwargs = {"rng": gen} if sampling else {}
    with pytest.raises(error, match=re.escape(message)):
        function(args["scores"], args["sensitivity"], args["epsilon"], **kwargs)
    assert gen.bit_generator.state == state  # nothing drawn, nothing released


@pytest.mark.parametrize("function", [exponential_mechanism, report_noisy_max, permute_and_flip])
@pytest.mark.parametrize(("overrides", "error", "message"), BAD_SAMPLING)
def test_sampling_refuses_bad_size_and_rng(function, overrides, error, message):
    gen = np.random.default_rng(SEED)
    state = gen.bit_generator.state
    kwargs = {"rng": gen, **overrides}
    with pytest.raises(error, match=re.escape(message)):
        function(SCORES, 1.0, 1.0, **kwargs)
    assert gen.bit_generator.state == state


def test_report_noisy_max_refuses_unknown_noise():
    with pytest.raises(
        ValueError, match=re.escape("noise must be one of 'gumbel', 'exponential', 'laplace'")
    ):
        report_noisy_max(SCORES, 1.0, 1.0, noise="normal")
    with pytest.raises(TypeError, match="noise must be a str"):
        report_noisy_max(SCORES, 1.0, 1.0, noise=None)


def test_monotonic_must_be_a_bool():
    with pytest.raises(TypeError, match="monotonic must be True or False"):
        exponential_mechanism_probabilities(SCORES, 1.0, 1.0, monotonic="yes")
    with pytest.raises(TypeError, match="monotonic must be True or False"):
        exponential_mechanism(SCORES, 1.0, 1.0, monotonic=1)
