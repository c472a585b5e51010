"""Amplification by shuffling (dplib.accounting.shuffle).

Reference figures: Feldman, McMillan & Talwar (2021), "Hiding among the clones" (FOCS,
arXiv:2012.12803), through the authors' implementation github.com/apple/ml-shuffling-amplification
(computeamplification.py): its README gives, for n = 10**5, epsilon0 = 4, delta = 1e-6, the closed
form 0.5378040242374512 and a numerical epsilon between 0.16754 and 0.17279. The other brackets
below are the authors' numericalanalysis(n, eps0, delta, 30, 10, False / True) (step 10, 30
bisection steps), which bound the exact value of the clone pair from below and above; the other
closed forms are their closedformanalysis.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dplib.accounting.shuffle import (
    clone_pair_delta,
    shuffle_closed_form_valid,
    shuffle_epsilon_closed_form,
    shuffle_epsilon_numerical,
)

# (epsilon0, n, delta): authors' closed form, numerical lower and upper bounds
AUTHORS = [
    ((4.0, 10**5, 1e-6), 0.5378040242374512, 0.16954507221640752, 0.17512131823400418),
    ((1.0, 10**4, 1e-6), 0.2332655961237434, 0.052970007314299794, 0.05496795740249892),
    ((8.0, 10**6, 1e-8), 1.087510551677382, 0.5525232188020218, 0.5724068024034583),
    ((2.0, 10**4, 1e-5), 0.49013253508313803, 0.1302391549896883, 0.1357717278136056),
    ((0.5, 10**3, 1e-6), 0.33483647172226294, 0.0702464456795869, 0.07181044966907903),
]


@pytest.mark.parametrize("args, closed, low, high", AUTHORS)
def test_closed_form_matches_the_authors_implementation(args, closed, low, high):
    assert shuffle_epsilon_closed_form(*args) == pytest.approx(closed, rel=1e-12)


@pytest.mark.parametrize("args, closed, low, high", AUTHORS)
def test_numerical_bound_lies_in_the_authors_bracket(args, closed, low, high):
    eps = shuffle_epsilon_numerical(*args)
    assert low <= eps <= high
    assert eps < closed / 1.9  # the numerical bound is 2 to 4 times tighter here


def test_readme_figure():
    # "for eps between 0.1675385583317841 and 0.172790550755978" (README, step 100, 10 iterations)
    assert 0.1675385583317841 <= shuffle_epsilon_numerical(4.0, 10**5, 1e-6) <= 0.172790550755978


def brute_force_delta(eps0, n, eps):
    """Enumerate every (c, a) of the clone pair: O(n^2), small n only."""
    alpha = math.exp(eps0) / (math.exp(eps0) + 1)
    total_pq = total_qp = 0.0
    for c in range(n):
        pc = stats.binom.pmf(c, n - 1, math.exp(-eps0))
        b = stats.binom.pmf(np.arange(c + 1), c, 0.5)
        b_prev = np.concatenate([[0.0], b])        # b_c(a - 1), a = 0..c+1
        b_here = np.concatenate([b, [0.0]])        # b_c(a)
        p = alpha * b_prev + (1 - alpha) * b_here
        q = (1 - alpha) * b_prev + alpha * b_here
        total_pq += pc * np.maximum(p - math.exp(eps) * q, 0).sum()
        total_qp += pc * np.maximum(q - math.exp(eps) * p, 0).sum()
    return max(total_pq, total_qp)


@pytest.mark.parametrize("eps0, n, eps", [(1.0, 2, 0.3), (2.0, 10, 0.5), (0.5, 40, 0.1),
                                          (3.0, 200, 0.4), (1.5, 150, 0.0), (6.0, 60, 1.0)])
def test_clone_delta_against_enumeration(eps0, n, eps):
    assert clone_pair_delta(eps0, n, eps) == pytest.approx(brute_force_delta(eps0, n, eps), rel=1e-9, abs=1e-15)


def test_one_user_is_randomized_response():
    # n = 1: no clones, the pair is binary randomized response with p = e^eps0 / (e^eps0 + 1)
    for eps0, eps in [(1.0, 0.0), (2.0, 0.5), (math.log(3), 0.2)]:
        alpha = math.exp(eps0) / (1 + math.exp(eps0))
        assert clone_pair_delta(eps0, 1, eps) == pytest.approx(alpha - math.exp(eps) * (1 - alpha), rel=1e-12)
    alpha = math.exp(2.0) / (1 + math.exp(2.0))
    want = math.log((alpha - 1e-6) / (1 - alpha))          # RR's profile equals delta there
    assert shuffle_epsilon_numerical(2.0, 1, 1e-6) == pytest.approx(want, abs=2e-7)


def test_monotone_and_never_above_epsilon0():
    assert clone_pair_delta(2.0, 1000, 2.0) == 0.0
    deltas = [clone_pair_delta(2.0, 1000, e) for e in (0.05, 0.1, 0.2, 0.4)]
    assert all(a > b for a, b in zip(deltas[:-1], deltas[1:], strict=True))
    eps_n = [shuffle_epsilon_numerical(2.0, n, 1e-6) for n in (100, 1000, 10_000, 100_000)]
    assert all(a > b for a, b in zip(eps_n[:-1], eps_n[1:], strict=True)) and eps_n[0] <= 2.0
    # ~ 1/sqrt(n) for large n
    assert eps_n[2] / eps_n[3] == pytest.approx(math.sqrt(10), rel=0.1)


def test_validity_range():
    # eps0 <= ln(n / (16 ln(4/delta))): n = 10**4, delta = 1e-6 gives ln(41.1) = 3.72
    assert shuffle_closed_form_valid(3.7, 10**4, 1e-6)
    assert not shuffle_closed_form_valid(3.75, 10**4, 1e-6)
    assert shuffle_epsilon_closed_form(3.75, 10**4, 1e-6) == 3.75   # outside: no amplification
    assert not shuffle_closed_form_valid(0.1, 100, 1e-6)             # n / (16 ln(4/delta)) < 1
    assert shuffle_epsilon_closed_form(3.7, 10**4, 1e-6) < 3.7


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_bad_epsilon0(bad):
    with pytest.raises(ValueError, match="epsilon0"):
        shuffle_epsilon_closed_form(bad, 1000, 1e-6)
    with pytest.raises(ValueError, match="epsilon0"):
        clone_pair_delta(bad, 1000, 0.1)
    with pytest.raises(ValueError, match="epsilon0"):
        shuffle_epsilon_numerical(bad, 1000, 1e-6)


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-6, 2.0, math.nan])
def test_bad_delta(bad):
    with pytest.raises(ValueError, match="delta"):
        shuffle_epsilon_closed_form(1.0, 1000, bad)
    with pytest.raises(ValueError, match="delta"):
        shuffle_epsilon_numerical(1.0, 1000, bad)


def test_bad_n_and_epsilon():
    with pytest.raises(ValueError, match="n"):
        shuffle_epsilon_closed_form(1.0, 0, 1e-6)
    with pytest.raises(TypeError, match="n"):
        shuffle_epsilon_numerical(1.0, 100.5, 1e-6)
    with pytest.raises(ValueError, match="epsilon"):
        clone_pair_delta(1.0, 100, -0.1)
    with pytest.raises(ValueError, match="epsilon"):
        clone_pair_delta(1.0, 100, math.inf)


@pytest.mark.parametrize("n", [10**6 + 1, 10**9, 2**70])
def test_numerical_bound_refuses_n_beyond_its_range_and_points_to_the_closed_form(n):
    with pytest.raises(ValueError, match=r"n must be .*10\*\*6.*shuffle_epsilon_closed_form"):
        shuffle_epsilon_numerical(1.0, n, 1e-6)
    assert 0 < shuffle_epsilon_closed_form(1.0, n, 1e-6) < 1.0


@pytest.mark.parametrize("bad", [5e-324, 1e-11, 0.0, -1e-3, math.nan, math.inf])
def test_numerical_bound_refuses_tol_below_its_floor(bad):
    with pytest.raises(ValueError, match=r"tol must be a finite number >= 1e-10"):
        shuffle_epsilon_numerical(1.0, 10_000, 1e-6, tol=bad)


@pytest.mark.parametrize("eps0", [100.0, 709.0, 1e9, 2.0**70, 1e308])
def test_numerical_bound_of_a_huge_epsilon0_is_the_trivial_bound(eps0):
    # no clone is representable: shuffled epsilon0-LDP reports are (epsilon0, 0)-DP, no better
    assert shuffle_epsilon_numerical(eps0, 10_000, 1e-6) == eps0
    # as the bisection finds just below the cut-off, where a clone is already negligible
    assert shuffle_epsilon_numerical(60.0, 10_000, 1e-6) == 60.0
