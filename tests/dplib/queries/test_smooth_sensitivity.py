"""dplib.queries.smooth_sensitivity: the definition by brute force, the paper's formula, a DP audit.

Reference figures: Nissim, Raskhodnikova & Smith (2007), Definition 2.2
(``S*_beta(x) = max_y LS(y) e^{-beta d(x, y)}``), computed by enumerating every dataset ``y`` on a
small integer grid; their Proposition 3.4 (the O(n^2) formula over k and t), computed directly;
their Lemma 2.9 (Laplace: alpha = eps / 2, beta = eps / (2 ln(2 / delta))). The same median
formula is in RelM's ``median_smooth_sensitivity_naive`` (Lumen Research, relm/mechanisms),
an independent implementation.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import dplib
from dplib.queries.smooth_sensitivity import _lattice_plan, _mantissa_bits, _rounded_laplace
from dplib.testing import assert_dp

LO, HI = 0, 5
GRID = range(LO, HI + 1)


def _ls(y):
    return dplib.local_sensitivity(y, LO, HI)


def _brute_smooth(x, beta):
    best = 0.0
    for y in itertools.product(GRID, repeat=len(x)):
        d = sum(a != b for a, b in zip(x, y, strict=True))
        best = max(best, _ls(y) * math.exp(-beta * d))
    return best


def _proposition_3_4(x, beta, lo, hi):
    xs = np.concatenate(([lo], np.sort(np.clip(x, lo, hi)), [hi]))
    n = len(x)
    m = (n + 1) // 2
    best = 0.0
    for k in range(n + 1):
        a = max(xs[min(m + t, n + 1)] - xs[max(m + t - k - 1, 0)] for t in range(k + 2))
        best = max(best, math.exp(-k * beta) * a)
    return best


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("beta", [0.05, 0.5, 2.0])
def test_smooth_sensitivity_is_the_definition_by_brute_force(n, beta):
    gen = np.random.default_rng(100 * n + int(10 * beta))
    for _ in range(8):
        x = tuple(int(v) for v in gen.integers(LO, HI + 1, size=n))
        want = _brute_smooth(x, beta)
        assert math.isclose(
            dplib.smooth_sensitivity_median(x, beta, LO, HI), want, rel_tol=1e-12
        ), x


def test_divide_and_conquer_agrees_with_proposition_3_4_on_larger_tables():
    gen = np.random.default_rng(7)
    for trial in range(120):
        n = int(gen.integers(1, 160))
        kind = trial % 3
        if kind == 0:
            x = gen.normal(50, 10, size=n)
        elif kind == 1:
            x = gen.integers(0, 5, size=n).astype(float) * 25  # many ties
        else:
            x = np.concatenate([np.full(n // 2, 50.0), gen.uniform(0, 100, size=n - n // 2)])
        for beta in (1e-3, 0.01, 0.1, 1.0, 30.0):
            got = dplib.smooth_sensitivity_median(x, beta, 0.0, 100.0)
            want = _proposition_3_4(x, beta, 0.0, 100.0)
            assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-300), (trial, n, beta)


def test_smooth_sensitivity_is_a_smooth_upper_bound():
    gen = np.random.default_rng(3)
    beta = 0.2
    for _ in range(50):
        x = gen.uniform(0, 10, size=int(gen.integers(1, 30)))
        s = dplib.smooth_sensitivity_median(x, beta, 0, 10)
        assert s >= dplib.local_sensitivity(x, 0, 10)
        y = x.copy()
        y[int(gen.integers(x.size))] = gen.uniform(0, 10)
        assert s <= math.exp(beta) * dplib.smooth_sensitivity_median(y, beta, 0, 10) * (1 + 1e-12)


def test_worked_example_and_limits():
    x = [1.0, 2.0, 3.0, 10.0, 50.0]
    # max(7, 47 e^-0.5, 97 e^-1, 98 e^-1.5, 100 e^-2) = 97 / e
    assert math.isclose(dplib.smooth_sensitivity_median(x, 0.5, 0, 100), 97 / math.e, rel_tol=1e-14)
    assert dplib.smooth_sensitivity_median(x, 1e6, 0, 100) == dplib.local_sensitivity(x, 0, 100)
    assert math.isclose(dplib.smooth_sensitivity_median(x, 1e-12, 0, 100), 100.0, rel_tol=1e-9)
    assert dplib.smooth_sensitivity_median([], 0.1, 0, 100) == 100.0


def test_laplace_parameters_are_lemma_2_9():
    alpha, beta = dplib.smooth_laplace_parameters(1.0, 1e-6)
    assert alpha == 0.5
    assert math.isclose(beta, 1.0 / (2 * math.log(2e6)), rel_tol=1e-15)


@pytest.mark.parametrize(
    "call",
    [
        lambda: dplib.smooth_sensitivity_median([1.0], 0.0, 0, 1),
        lambda: dplib.smooth_sensitivity_median([1.0], math.inf, 0, 1),
        lambda: dplib.smooth_sensitivity_median([math.nan], 1.0, 0, 1),
        lambda: dplib.smooth_laplace_parameters(1.0, 0.0),
        lambda: dplib.smooth_laplace_parameters(-1.0, 1e-6),
        lambda: dplib.smooth_median([1.0], 0, 1, 1.0, 1.0, rng=0),
        lambda: dplib.smooth_median([1.0], 1, 0, 1.0, 1e-6, rng=0),
    ],
)
def test_bad_input_is_refused_before_drawing(call):
    with pytest.raises(ValueError):
        call()


def test_release_is_median_plus_laplace_of_the_smooth_scale():
    x = np.array([1.0, 2.0, 3.0, 10.0, 50.0])
    eps, delta = 1.0, 1e-6
    alpha, beta = dplib.smooth_laplace_parameters(eps, delta)
    lo, step, median, scale = _lattice_plan(x, 0, 100, eps, delta)
    assert lo + step * median == 3.0  # 3 is on the grid 2**-14
    # the public scale: S*_beta0 (beta0 = beta - 2**(1 - p) < beta: at least S*_beta) rounded up
    # to p + 1 significant bits (x is on the grid, so S*_beta0 in grid units is the same)
    bits = _mantissa_bits(beta)
    beta0 = beta - 2.0 ** (1 - bits)
    assert 2.0**-bits <= beta / 16 and beta0 >= 7 / 8 * beta
    smooth0 = dplib.smooth_sensitivity_median(x, beta0, 0, 100) / alpha
    assert dplib.smooth_sensitivity_median(x, beta, 0, 100) / alpha <= smooth0
    assert smooth0 <= float(scale) * step <= smooth0 * (1 + 2.0**-bits)
    gen = np.random.default_rng(11)
    got = np.array([dplib.smooth_median(x, 0, 100, eps, delta, rng=gen) for _ in range(4000)])
    dplib.testing.assert_laplace_scale(got - 3.0, float(scale) * step)


@pytest.mark.parametrize("b", [Fraction(7, 10), Fraction(7, 2)])
def test_rounded_laplace_noise_has_its_exact_law(b):
    # round(b Z), Z ~ Laplace(1): P(0) = 1 - exp(-1/(2b)), P(+-k) = exp(-k/b) sinh(1/(2b)),
    # both branches (b <= 1: Bernoulli trials; b > 1: the exact discrete Laplace sampler).
    # Exact binomial test per category, Bonferroni, failure probability 1e-9.
    gen = np.random.default_rng(49)
    draws = np.array([_rounded_laplace(b, gen) for _ in range(30_000)])
    bf = float(b)
    pmf = {str(k): math.exp(-abs(k) / bf) * math.sinh(0.5 / bf) for k in range(-8, 9) if k}
    pmf["0"] = -math.expm1(-0.5 / bf)
    pmf["tail"] = 1.0 - sum(pmf.values())
    observed = [str(k) if abs(k) <= 8 else "tail" for k in draws.tolist()]
    dplib.testing.assert_frequencies(observed, pmf)


def test_the_public_scale_is_a_beta_smooth_upper_bound_on_every_pair_of_neighbours():
    # Nissim, Raskhodnikova & Smith (2007), Definition 2.1, checked exactly on every replace-one
    # neighbour of small tables on the grid: S'(x) >= LS(x) and S'(x) <= e**beta S'(y).
    eps, delta = 1.0, 0.2  # beta = 0.216: a smoothness that bites on tables of 5
    alpha, beta = dplib.smooth_laplace_parameters(eps, delta)
    values = [0.0, 1.0, 2.5, 7.0, 16.0]
    bound = Fraction(math.exp(beta)) * (1 - Fraction(1, 2**50))
    checked = 0
    for x in itertools.combinations_with_replacement(values, 5):
        _, step, _, sx = _lattice_plan(x, 0, 16, eps, delta)
        ls_units = Fraction(dplib.local_sensitivity(x, 0, 16)) / Fraction(step)
        assert sx * Fraction(alpha) >= ls_units
        for i, v in itertools.product(range(5), values):
            y = x[:i] + (v,) + x[i + 1 :]
            sy = _lattice_plan(y, 0, 16, eps, delta)[3]
            assert sx <= bound * sy, (x, y, float(sx / sy), math.exp(beta))
            checked += 1
    assert checked == 126 * 25


def test_release_passes_a_black_box_audit_and_the_local_scale_fails_it():
    # neighbours (replace-one): the median moves from 3 to 10, the smooth scale follows slowly
    x = [1.0, 2.0, 3.0, 10.0, 50.0]
    y = [1.0, 2.0, 40.0, 10.0, 50.0]
    eps, delta = 1.0, 1e-6

    def smooth(data, rng):
        return dplib.smooth_median(data, 0, 100, eps, delta, rng=rng)

    assert_dp(smooth, x, y, eps, delta=delta, n_samples=20_000, rng=5)

    def local(data, rng):  # the broken release: Laplace scaled to the local sensitivity
        return float(np.sort(data)[2]) + rng.laplace(0, dplib.local_sensitivity(data, 0, 100) / eps)

    tight = [1.0, 3.0, 3.0, 3.0, 50.0]  # LS 0 ...
    loose = [1.0, 3.0, 3.0, 10.0, 50.0]  # ... its neighbour, LS 7
    with pytest.raises(AssertionError):
        assert_dp(
            local, tight, loose, eps, delta=delta, n_samples=2_000, bins=[2.9, 3.0, 3.1], rng=5
        )


def test_a_refusal_for_too_small_an_epsilon_never_depends_on_the_data():
    """A refusal is an output. The exact sampler's 2**40 cap on the noise scale was checked on the
    table's own scale: at epsilon 1e-6 on [0, 1] a table of 4e6 copies of 0.5 (scale 0.26 of the
    range) was answered and the same number of 0s and 1s (scale the whole range) refused. The two
    are joined by a chain of replace-one neighbours, so somewhere along it one table answered and
    its neighbour refused. Now the cap is checked on the largest scale any table could need."""
    n = 4_000_000
    for x in (np.full(n, 0.5), np.r_[np.zeros(n // 2), np.ones(n // 2)]):
        with pytest.raises(ValueError, match="could reach"):
            dplib.smooth_median(x, 0.0, 1.0, 1e-6, 0.5, rng=0)
    # where the largest scale fits, every table is answered, whatever its own scale
    for x in (np.full(1001, 0.5), np.r_[np.zeros(500), np.ones(501)]):
        assert np.isfinite(dplib.smooth_median(x, 0.0, 1.0, 1e-5, 0.5, rng=0))
