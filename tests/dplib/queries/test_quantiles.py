"""Tests of dplib.queries.quantiles: several quantiles at once and a variance.

References: the score is OpenDP's ``make_quantile_score_candidates``,
``-|(1 - alpha) #{x < c} - alpha #{x > c}|`` (checked on hand-computed cases); one quantile is
the exponential mechanism, whose law is computed exactly here and compared with the draws; the
recursion and its budget (``ceil(log2(m + 1))`` levels) are Kaplan, Schnapp & Stemmer (2022)'s
``ApproximateQuantiles``. Statistical tests use dplib.testing (false-failure probability <= 1e-9 each) with
the ``rng_seed`` fixture.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dplib.queries import quantiles as qmod
from dplib.queries.quantiles import private_quantiles, private_variance, quantile_utility
from dplib.queries.selection import private_median_distribution
from dplib.testing import assert_dp, assert_frequencies

FAIL = 1e-9


def test_score_matches_opendps_on_hand_computed_cases():
    x = [1.0, 2.0, 3.0, 4.0]
    # alpha 1/2 at 2.5: 2 below, 2 above -> 0; at 0: 0 below, 4 above -> -2
    assert quantile_utility(x, [2.5, 0.0], 0.5).tolist() == [0.0, -2.0]
    # alpha 1/4 at 1.5: 1 below, 3 above -> |0.75 - 0.75| = 0; at 3.5: 3 below, 1 above -> -2
    assert quantile_utility(x, [1.5, 3.5], 0.25).tolist() == [0.0, -2.0]
    # values equal to c count on neither side
    assert quantile_utility(x, [2.0], 0.5).tolist() == [-0.5]


def test_score_sensitivity_is_at_most_one_under_add_remove():
    gen = np.random.default_rng(0)
    cands = np.linspace(-3, 3, 61)
    for _ in range(200):
        x = gen.normal(size=gen.integers(0, 30))
        extra = gen.normal()
        a = gen.uniform()
        diff = quantile_utility(np.append(x, extra), cands, a) - quantile_utility(x, cands, a)
        assert np.max(np.abs(diff)) <= max(a, 1 - a) + 1e-12


def _em_law(x, grid, level, eps):
    # the exponential mechanism with the score's sensitivity max(a, 1 - a)
    scores = quantile_utility(x, grid, level)
    w = np.exp(eps * (scores - scores.max()) / (2 * max(level, 1 - level)))
    return w / w.sum()


def test_the_median_has_the_law_of_dplibs_private_median():
    # an independent implementation: private_median's score -|below - above| (sensitivity 1)
    # is twice this one at a = 1/2 (sensitivity 1/2), so the two laws coincide
    x = [0.1, 0.2, 0.25, 0.7, 0.9, 0.95]
    grid = np.linspace(0, 1, 9)
    _, median_law = private_median_distribution(x, 0, 1, 1.3, grid=grid)
    assert np.allclose(_em_law(x, grid, 0.5, 1.3), median_law, rtol=1e-12)


def test_one_quantile_has_the_exponential_mechanisms_law(rng_seed):
    x = np.array([0.1, 0.2, 0.25, 0.7, 0.9])
    grid = np.linspace(0, 1, 6)
    law = _em_law(x, grid, 0.3, 1.0)
    gen = np.random.default_rng(rng_seed)
    draws = [
        int(
            np.flatnonzero(grid == private_quantiles(x, [0.3], 0, 1, 1.0, grid=grid, rng=gen)[0])[0]
        )
        for _ in range(6000)
    ]
    assert_frequencies(draws, law, failure_prob=FAIL)


def test_three_quantiles_use_two_levels_and_the_middle_one_has_the_law_at_half_budget(rng_seed):
    # m = 3: ceil(log2 4) = 2 levels, so the middle quantile is the mechanism at epsilon / 2
    x = np.array([0.05, 0.3, 0.35, 0.4, 0.8])
    grid = np.linspace(0, 1, 5)
    law = _em_law(x, grid, 0.5, 1.0)
    gen = np.random.default_rng(rng_seed)
    draws = [
        int(
            np.flatnonzero(
                grid == private_quantiles(x, [0.25, 0.5, 0.75], 0, 1, 2.0, grid=grid, rng=gen)[1]
            )[0]
        )
        for _ in range(6000)
    ]
    assert_frequencies(draws, law, failure_prob=FAIL)


def test_quantiles_are_sorted_and_follow_the_requested_order():
    x = np.random.default_rng(1).uniform(0, 100, 500)
    out = private_quantiles(x, [0.9, 0.1, 0.5, 0.5], 0, 100, 1.0, rng=0)
    assert out[1] <= out[2] <= out[0] and out[2] == out[3]


def test_accuracy_at_large_epsilon_is_within_a_few_grid_steps():
    # data 0..99, grid step 1, 5 quantiles (3 levels, eps 60 -> 20 per level); a candidate whose
    # score is t below the best is drawn with probability <= 101 exp(-20 t / 2): t >= 3 has
    # probability < 1e-11 per quantile, and a step of the grid moves the score by 1
    x = np.arange(100.0)
    levels = [0.1, 0.25, 0.5, 0.75, 0.9]
    out = private_quantiles(x, levels, 0, 100, 60.0, grid=101, rng=0)
    truth = np.array(levels) * 100
    assert np.all(np.abs(out - truth) <= 4)


def test_recursive_quantiles_beat_separate_ones_at_equal_budget():
    # Deterministic comparison through the exact law: with m = 7 levels at total epsilon, KSS22
    # spends epsilon / 3 per level of its recursion; 7 separate exponential mechanisms spend
    # epsilon / 7 each. For the middle quantile (the first one the recursion computes, on all
    # the data) the expected rank error under the exact law is smaller at epsilon / 3.
    x = np.arange(200.0)
    grid = np.arange(0.0, 201.0)
    eps = 0.5
    errors = []
    for share in (eps / 3, eps / 7):
        law = _em_law(x, grid, 0.5, share)
        errors.append(float(np.sum(law * np.abs(grid - 100))))
    assert errors[0] < 0.5 * errors[1]


def test_sampling_is_exact_rational_arithmetic(monkeypatch):
    # the acceptance test is a Bernoulli(exp(-gamma)) with a rational gamma (CKS20 Algorithm 1)
    seen = []
    real = qmod.bernoulli_exp_scalar

    def spy(gamma, rng):
        seen.append(gamma)
        return real(gamma, rng)

    monkeypatch.setattr(qmod, "bernoulli_exp_scalar", spy)
    private_quantiles([0.1, 0.9, 0.5], [0.5], 0, 1, 1.0, grid=11, rng=0)
    from fractions import Fraction

    assert seen and all(isinstance(g, Fraction) and g > 0 for g in seen)


# --------------------------------------------------------------------------- variance


def test_variance_is_accurate_at_large_epsilon():
    # noise scales (eps/3 each): count 3/eps, sum h 3/eps, squares h^2 3/eps with h = 0.5;
    # each |noise| <= scale log(6 / 1e-9) with probability >= 1 - 1e-9 / 3
    x = np.linspace(0, 1, 2001)
    eps = 30.0
    v = private_variance(x, 0.0, 1.0, eps, rng=0)
    t = 3 / eps * math.log(6 / FAIL)
    n = x.size
    # |S2/n - (S1/n)^2 - var| <= t h^2/(n - t) + 2 h t h/(n - t) + ... : a loose 10 t / n
    assert abs(v - x.var()) <= 10 * t / n


def test_variance_releases_only_lattice_statistics(monkeypatch):
    recorded = []
    real_sum = qmod.private_sum

    def spy(values, lower, upper, epsilon, **kw):
        out = real_sum(values, lower, upper, epsilon, **kw)
        recorded.append((out, lower, upper, epsilon))
        return out

    monkeypatch.setattr(qmod, "private_sum", spy)
    from dplib.queries import aggregates

    for data in ([], [0.25], [0.1, 0.9]):
        private_variance(data, 0.0, 1.0, 1.5, rng=0)
    assert len(recorded) == 6
    for out, lower, upper, eps in recorded:
        assert eps == 0.5
        span = max(abs(lower), abs(upper))
        step = math.ldexp(1.0, aggregates.grid_exponent(span, eps))
        assert out / step == round(out / step)


def test_variance_passes_a_dp_audit(rng_seed):
    def mechanism(data, rng):
        return private_variance(data, 0.0, 1.0, 1.0, rng=rng)

    d = [0.2, 0.4, 0.5]
    assert_dp(mechanism, d, d + [1.0], 1.0, n_samples=10_000, rng=rng_seed)


# --------------------------------------------------------------------------- audits of quantiles


def test_one_quantile_passes_a_dp_audit(rng_seed):
    def mechanism(data, rng):
        return float(private_quantiles(data, [0.5], 0, 1, 1.0, grid=5, rng=rng)[0])

    d = [0.1, 0.3, 0.6]
    assert_dp(mechanism, d, d + [0.95], 1.0, n_samples=10_000, rng=rng_seed)


def test_three_quantiles_pass_a_dp_audit(rng_seed):
    def mechanism(data, rng):
        return ",".join(
            f"{v:g}" for v in private_quantiles(data, [0.25, 0.5, 0.75], 0, 1, 1.0, grid=4, rng=rng)
        )

    d = [0.1, 0.3, 0.6, 0.7]
    assert_dp(mechanism, d, d + [0.05], 1.0, n_samples=10_000, rng=rng_seed)


# (A budget split that gives each level the whole epsilon is caught by the exact-law test of the
# middle quantile above, which pins its exponent to epsilon / 2 for m = 3; the black-box audit has
# little power there because the exponential mechanism is rarely tight on small inputs.)


# --------------------------------------------------------------------------- 0 records, refusals


def test_zero_and_one_records_are_answered_alike():
    for data in ([], [0.4]):
        out = private_quantiles(data, [0.1, 0.5], 0, 1, 1.0, grid=11, rng=0)
        assert out.shape == (2,) and np.all((out >= 0) & (out <= 1))
        v = private_variance(data, 0.0, 1.0, 1.0, rng=0)
        assert 0.0 <= v <= 0.25


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda g: private_quantiles([0.5], [1.5], 0, 1, 1.0, rng=g), ValueError),
        (lambda g: private_quantiles([0.5], [], 0, 1, 1.0, rng=g), ValueError),
        (lambda g: private_quantiles([0.5], "0.5", 0, 1, 1.0, rng=g), TypeError),
        (lambda g: private_quantiles([math.nan], [0.5], 0, 1, 1.0, rng=g), ValueError),
        (lambda g: private_quantiles([0.5], [0.5], 1, 0, 1.0, rng=g), ValueError),
        (lambda g: private_quantiles([0.5], [0.5], 0, 1, 0.0, rng=g), ValueError),
        (lambda g: private_quantiles([0.5], [0.5], 0, 1, 1.0, grid=[2.0], rng=g), ValueError),
        (lambda g: private_quantiles([0.5], [0.5], 0, 1, 1.0, grid=10**6, rng=g), ValueError),
        (lambda g: private_variance([0.5], 0, 1, -1.0, rng=g), ValueError),
        (lambda g: private_variance([], 0, 1, 1.0, neighbouring="replace", rng=g), ValueError),
        (lambda g: private_variance([[0.5, 0.1]], 0, 1, 1.0, rng=g), ValueError),
    ],
)
def test_bad_arguments_are_refused_before_any_draw(call, error):
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    with pytest.raises(error):
        call(gen)
    assert gen.bit_generator.state == state
