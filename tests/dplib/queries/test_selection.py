"""Tests of dplib.queries.selection: private median, private mode, the truncated-Beta coin estimate and
the exponential mechanism's utility bound.

Statistical tests take their seed from the ``rng_seed`` fixture (fresh each run) and use
dplib.testing's assertions, whose false-failure probability is at most 1e-9 per assertion.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dplib.mechanisms.exponential import exponential_mechanism_probabilities
from dplib.queries import selection
from dplib.queries.selection import (
    beta_bias_estimate,
    beta_bias_parameters,
    exponential_utility_bound,
    median_utility,
    median_utility_sensitivity,
    private_median,
    private_median_distribution,
    private_mode,
)
from dplib.testing import assert_distribution, assert_frequencies, clopper_pearson


# ------------------------------------------------------------------------------------------
# median utility
# ------------------------------------------------------------------------------------------
def test_median_utility_hand_computed():
    # x = 1, 2, 3, 10: at 0 four values lie above; at 2 one below and two above (2 itself on
    # neither side); at 2.5 two and two; at 11 four below.
    got = median_utility([1.0, 2.0, 3.0, 10.0], [0.0, 2.0, 2.5, 11.0])
    assert got.tolist() == [-4.0, -1.0, 0.0, -4.0]
    assert not np.signbit(got[2]), "no negative zero"


def test_median_utility_ties_and_empty():
    assert median_utility([5.0, 5.0, 5.0], [5.0, 4.0, 6.0]).tolist() == [0.0, -3.0, -3.0]
    assert median_utility([], [0.0, 1.0]).tolist() == [0.0, 0.0]


def _brute_utility(x, c):
    return -abs(sum(v < c for v in x) - sum(v > c for v in x))


def test_median_utility_matches_brute_force(rng_seed):
    gen = np.random.default_rng(rng_seed)
    x = gen.integers(0, 10, size=25).astype(float)
    cands = np.linspace(-1, 11, 49)
    assert median_utility(x, cands).tolist() == [_brute_utility(x, c) for c in cands]


def test_median_utility_sensitivity_is_attained_and_never_exceeded():
    # every neighbour of every small dataset on {0, 1, 2, 3}, candidates between and on them
    cands = np.array([-0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5])
    worst = {"add_remove": 0.0, "replace": 0.0}
    for n in range(0, 4):
        for x in itertools.product(range(4), repeat=n):
            u = median_utility(list(x), cands)
            for v in range(4):  # add v
                worst["add_remove"] = max(worst["add_remove"],
                                          np.abs(u - median_utility(list(x) + [v], cands)).max())
            for i in range(n):  # replace x[i] by v
                for v in range(4):
                    y = list(x)
                    y[i] = v
                    worst["replace"] = max(worst["replace"],
                                           np.abs(u - median_utility(y, cands)).max())
    assert worst["add_remove"] == median_utility_sensitivity("add_remove") == 1.0
    assert worst["replace"] == median_utility_sensitivity("replace") == 2.0
    with pytest.raises(ValueError, match="neighbouring"):
        median_utility_sensitivity("bounded")


# ------------------------------------------------------------------------------------------
# private median
# ------------------------------------------------------------------------------------------
def test_private_median_distribution_is_the_exponential_mechanism():
    x = np.array([3.0, 7.0, 8.0, 9.0, 40.0])
    cands, p = private_median_distribution(x, 0.0, 50.0, 0.8, grid=11)
    assert np.allclose(cands, np.linspace(0, 50, 11))
    weights = np.exp(0.8 * np.array([_brute_utility(x, c) for c in cands]) / 2.0)
    assert np.allclose(p, weights / weights.sum(), rtol=1e-12)
    _, p_rep = private_median_distribution(x, 0.0, 50.0, 0.8, grid=11, neighbouring="replace")
    weights = np.exp(0.8 * np.array([_brute_utility(x, c) for c in cands]) / 4.0)
    assert np.allclose(p_rep, weights / weights.sum(), rtol=1e-12)


def test_private_median_default_grid_and_explicit_grid():
    cands, p = private_median_distribution([1.0, 2.0], 0.0, 10.0, 1.0)
    assert cands.size == selection.DEFAULT_MEDIAN_GRID and cands[0] == 0.0 and cands[-1] == 10.0
    cands, _ = private_median_distribution([1.0, 2.0], 0.0, 10.0, 1.0, grid=[0.0, 5.0, 10.0])
    assert cands.tolist() == [0.0, 5.0, 10.0]
    with pytest.raises(ValueError, match="grid points"):
        private_median([1.0], 0.0, 10.0, 1.0, grid=[11.0])
    with pytest.raises(ValueError, match="grid"):
        private_median([1.0], 0.0, 10.0, 1.0, grid=1)


def test_stat_private_median_frequencies(rng_seed):
    gen = np.random.default_rng(rng_seed)
    x = gen.lognormal(3.0, 1.0, size=60)
    cands, p = private_median_distribution(x, 0.0, 100.0, 0.5, grid=26)
    draws = private_median(x, 0.0, 100.0, 0.5, grid=26, rng=gen, size=50_000)
    index = np.searchsorted(cands, draws)
    assert np.array_equal(cands[index], draws)
    assert_frequencies(index, p)


def test_private_median_scalar_and_reproducible():
    a = private_median(np.arange(50.0), 0.0, 100.0, 1.0, rng=3)
    assert isinstance(a, float)
    assert a == private_median(np.arange(50.0), 0.0, 100.0, 1.0, rng=3)


def test_private_median_refuses_before_drawing():
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    for kwargs in [dict(epsilon=0.0), dict(epsilon=1.0, size=0), dict(epsilon=1.0, neighbouring="x")]:
        with pytest.raises(ValueError):
            private_median([1.0, 2.0], 0.0, 10.0, rng=gen, **kwargs)
    with pytest.raises(ValueError):
        private_median([1.0, np.nan], 0.0, 10.0, 1.0, rng=gen)
    with pytest.raises(ValueError):
        private_median([1.0], 10.0, 0.0, 1.0, rng=gen)
    assert gen.bit_generator.state == state


# ------------------------------------------------------------------------------------------
# private mode
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("neighbouring, factor", [("add_remove", 1.0), ("replace", 2.0)])
def test_stat_private_mode(rng_seed, neighbouring, factor):
    values = np.repeat([0, 1, 2, 3], [3, 5, 4, 0])
    counts = np.array([3.0, 5.0, 4.0, 0.0])
    eps = 0.7
    weights = np.exp(eps * counts / factor)
    draws = private_mode(values, 4, eps, neighbouring=neighbouring, rng=rng_seed, size=40_000)
    assert_frequencies(draws, weights / weights.sum())


def test_private_mode_validation():
    with pytest.raises(ValueError, match="0, ..., k-1"):
        private_mode([0, 3], 3, 1.0)
    with pytest.raises(ValueError, match="0, ..., k-1"):
        private_mode([0.5], 3, 1.0)
    with pytest.raises(ValueError):
        private_mode([0], 0, 1.0)
    assert isinstance(private_mode([], 3, 1.0, rng=0), int)


# ------------------------------------------------------------------------------------------
# coin bias
# ------------------------------------------------------------------------------------------
def test_beta_bias_parameters_lecture_figures():
    # The lecture (epsilon = 0.1, theta in (0.1, 0.9), one flip added or removed):
    # Delta = -log 0.1 ≈ 2.3, and each flip counts for epsilon / (2 Delta) ≈ 0.022.
    a, b, delta = beta_bias_parameters(40, 100, 0.1)
    assert math.isclose(delta, math.log(10), rel_tol=1e-12)
    c = 0.1 / (2 * math.log(10))
    assert round(c, 3) == 0.022
    assert math.isclose(a, 1 + 40 * c) and math.isclose(b, 1 + 60 * c)
    # replace-one: a tail becomes a head, log(theta / (1 - theta)), at most ln 9 on [0.1, 0.9]
    _, _, delta = beta_bias_parameters(40, 100, 0.1, neighbouring="replace")
    assert math.isclose(delta, math.log(9), rel_tol=1e-12)
    # asymmetric interval
    _, _, delta = beta_bias_parameters(1, 2, 1.0, lower=0.2, upper=0.99)
    assert math.isclose(delta, -math.log(0.01), rel_tol=1e-12)


def test_beta_bias_sensitivity_by_brute_force():
    thetas = np.linspace(0.1, 0.9, 801)
    loglik = lambda h, t: h * np.log(thetas) + t * np.log1p(-thetas)  # noqa: E731
    add = max(np.abs(loglik(h + dh, t + dt) - loglik(h, t)).max()
              for h, t in [(3, 5)] for dh, dt in [(1, 0), (0, 1)])
    rep = np.abs(loglik(4, 4) - loglik(3, 5)).max()
    assert math.isclose(add, beta_bias_parameters(3, 8, 1.0)[2], rel_tol=1e-9)
    assert math.isclose(rep, beta_bias_parameters(3, 8, 1.0, neighbouring="replace")[2], rel_tol=1e-9)


def _truncated_beta_cdf(a, b, lo, hi):
    """Independent reference: normalise the density numerically (scipy.integrate.quad)."""
    density = lambda t: t ** (a - 1) * (1 - t) ** (b - 1)  # noqa: E731
    total = integrate.quad(density, lo, hi, epsabs=0, epsrel=1e-12)[0]

    def cdf(x):
        x = np.atleast_1d(np.clip(x, lo, hi))
        return np.array([integrate.quad(density, lo, v, epsabs=0, epsrel=1e-12)[0] for v in x]) / total

    return cdf


@pytest.mark.parametrize("heads, n, eps", [(30, 100, 1.0), (950, 1000, 2.0), (2, 500, 3.0), (0, 0, 1.0)])
def test_stat_beta_bias_estimate_distribution(rng_seed, heads, n, eps):
    a, b, _ = beta_bias_parameters(heads, n, eps)
    draws = beta_bias_estimate(heads, n, eps, rng=rng_seed, size=3_000)
    assert draws.min() >= 0.1 and draws.max() <= 0.9
    ref = stats.beta(a, b)
    lo, hi = ref.cdf(0.1), ref.cdf(0.9)
    assert_distribution(draws, lambda x: (ref.cdf(np.clip(x, 0.1, 0.9)) - lo) / (hi - lo))
    # and against numerical integration, on fewer draws (quad is slow)
    assert_distribution(draws[:300], _truncated_beta_cdf(a, b, 0.1, 0.9))


@pytest.mark.parametrize("a, b", [(40.0, 3.0), (3.0, 40.0), (300.0, 20.0)])
def test_stat_truncated_beta_rejection_branch(rng_seed, monkeypatch, a, b):
    # force the rejection sampler used when the interval's mass underflows
    monkeypatch.setattr(selection, "_MIN_MASS", 2.0)
    draws = selection._truncated_beta(a, b, 0.1, 0.9, np.random.default_rng(rng_seed), 3_000)
    assert_distribution(draws, _truncated_beta_cdf(a, b, 0.1, 0.9))


def test_beta_bias_estimate_extreme_counts():
    # the mass of Beta(1 + c n, 1) below 0.9 underflows: draws sit just below 0.9
    draws = beta_bias_estimate(100_000, 100_000, 1.0, rng=0, size=1_000)
    assert np.all((draws <= 0.9) & (draws > 0.899))
    draws = beta_bias_estimate(0, 100_000, 1.0, rng=0, size=1_000)
    assert np.all((draws >= 0.1) & (draws < 0.101))
    assert isinstance(beta_bias_estimate(5, 10, 1.0, rng=0), float)


def test_beta_bias_validation():
    for kwargs in [dict(heads=11, n=10), dict(heads=-1, n=10), dict(heads=1, n=10, lower=0.0),
                   dict(heads=1, n=10, lower=0.6, upper=0.5), dict(heads=1, n=10, upper=1.0)]:
        with pytest.raises(ValueError):
            beta_bias_estimate(epsilon=1.0, **kwargs)
    with pytest.raises(TypeError):
        beta_bias_parameters(1.5, 10, 1.0)


# ------------------------------------------------------------------------------------------
# utility bound
# ------------------------------------------------------------------------------------------
def test_exponential_utility_bound_reference():
    # Dwork & Roth 2014, Corollary 3.12 with |Y| = 100, Delta = 1, epsilon = 1, e^-t = 0.05
    assert math.isclose(exponential_utility_bound(100, 1.0, 1.0, 0.05), 2 * math.log(2000))
    assert math.isclose(exponential_utility_bound(100, 3.0, 0.5, 0.05, monotonic=True),
                        6.0 * math.log(2000))
    with pytest.raises(ValueError):
        exponential_utility_bound(0, 1.0, 1.0, 0.05)
    with pytest.raises(ValueError):
        exponential_utility_bound(10, 1.0, 1.0, 1.0)
    with pytest.raises(TypeError):
        exponential_utility_bound(10, 1.0, 1.0, 0.1, monotonic=1)


@pytest.mark.parametrize("m", [2, 50, 5_000])
def test_exponential_utility_bound_holds_exactly(m):
    # exact probability of a loss beyond the bound, for the hardest instance with one optimum:
    # every other candidate just below OPT - bound.
    for beta in (0.5, 0.05, 1e-3):
        bound = exponential_utility_bound(m, 1.0, 1.0, beta)
        scores = np.concatenate([[0.0], np.full(m - 1, -bound)])
        p = exponential_mechanism_probabilities(scores, 1.0, 1.0)
        assert p[1:].sum() <= beta
        monotone_bound = exponential_utility_bound(m, 1.0, 1.0, beta, monotonic=True)
        scores = np.concatenate([[0.0], np.full(m - 1, -monotone_bound)])
        p = exponential_mechanism_probabilities(scores, 1.0, 1.0, monotonic=True)
        assert p[1:].sum() <= beta


def test_stat_utility_bound_empirically(rng_seed):
    gen = np.random.default_rng(rng_seed)
    scores = np.concatenate([[0.0], -gen.uniform(0, 30, size=999)])
    bound = exponential_utility_bound(scores.size, 1.0, 1.0, 0.05)
    from dplib.mechanisms.exponential import exponential_mechanism

    chosen = exponential_mechanism(scores, 1.0, 1.0, rng=gen, size=20_000)
    k = int(np.sum(scores[chosen] < -bound))
    low, _ = clopper_pearson(k, 20_000, 1e-9)
    assert low <= 0.05
