"""Tests of dplib.accounting.composition: basic, parallel, advanced and optimal composition."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dplib.accounting.composition import (
    advanced_composition,
    optimal_composition,
    parallel_composition,
    sequential_composition,
)

# dp-accounting 0.6.0: privacy_loss_distribution.from_privacy_parameters(
#     DifferentialPrivacyParameters(epsilon, delta), value_discretization_interval=1e-4)
#   .self_compose(k).get_epsilon_for_delta(1 - (1 - delta)**k * (1 - delta_prime))
# -- the exact PLD of k-fold (epsilon, delta) composition, an independent implementation of
# Kairouz, Oh & Viswanath 2015, Theorem 3.3 (epsilon on its grid, so it is exact here).
# (epsilon, delta, k, delta_prime, epsilon_total)
DP_ACCOUNTING_OPTIMAL = [
    (0.1, 0.0, 100, 1e-5, 4.306791372575093),
    (0.5, 1e-6, 20, 1e-5, 9.859411024123268),
    (0.01, 0.0, 10000, 1e-5, 4.376384504702403),
    (1.0, 0.0, 10, 1e-3, 9.976799010198915),
]


def test_sequential_composition_adds_up():
    # Dwork & Roth 2014, Theorem 3.16
    assert sequential_composition([0.5, 0.25, 0.25], [1e-6, 0.0, 1e-6]) == (1.0, 2e-6)
    assert sequential_composition([0.1] * 10) == pytest.approx((1.0, 0.0))
    assert sequential_composition(np.array([0.3])) == (0.3, 0.0)
    assert sequential_composition([0.1, 0.2], [0.6, 0.7])[1] == 1.0  # a probability stays <= 1


def test_parallel_composition_takes_the_worst():
    # McSherry 2009, Theorem 4
    assert parallel_composition([0.5, 1.0, 0.25]) == (1.0, 0.0)
    assert parallel_composition([0.5, 1.0], [1e-5, 1e-7]) == (1.0, 1e-5)


def test_advanced_composition_formula_by_hand():
    # Dwork & Roth 2014, Theorem 3.20: sqrt(2k ln(1/delta')) eps + k eps (e^eps - 1), k delta + delta'
    eps, delta = advanced_composition(0.1, 1e-7, 100, 1e-5)
    assert eps == pytest.approx(math.sqrt(200 * math.log(1e5)) * 0.1 + 100 * 0.1 * math.expm1(0.1), rel=1e-15)
    assert eps == pytest.approx(5.8502350929445575, rel=1e-12)
    assert delta == pytest.approx(100 * 1e-7 + 1e-5, rel=1e-15)


@pytest.mark.parametrize(("epsilon", "delta", "k", "delta_prime", "expected"), DP_ACCOUNTING_OPTIMAL)
def test_optimal_composition_matches_dp_accounting_pld(epsilon, delta, k, delta_prime, expected):
    eps, delta_total = optimal_composition(epsilon, delta, k, delta_prime)
    assert eps == pytest.approx(expected, rel=1e-8)  # 1e-9 apart at k = 10^4 (FFT round-off)
    assert delta_total == pytest.approx(1 - (1 - delta) ** k * (1 - delta_prime), rel=1e-12)
    assert delta_total <= k * delta + delta_prime


def _brute_force_delta(epsilon, k, eps_total):
    """δ(ε') of k-fold randomized response by enumerating all 2^k outcome vectors."""
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    total = 0.0
    for outcome in itertools.product((0, 1), repeat=k):
        flips = sum(outcome)
        prob_p = p ** (k - flips) * (1 - p) ** flips
        prob_q = p**flips * (1 - p) ** (k - flips)
        total += max(0.0, prob_p - math.exp(eps_total) * prob_q)
    return total


@pytest.mark.parametrize(("epsilon", "k", "delta_prime"), [(0.1, 10, 1e-3), (0.5, 7, 1e-2), (1.0, 5, 0.05), (0.3, 1, 0.1), (0.05, 2, 1e-6)])
def test_optimal_composition_agrees_with_enumeration(epsilon, k, delta_prime):
    # Independent method: Kairouz et al. 2015 show k-fold randomized response is the worst case;
    # enumerate its 2^k outcomes and check the returned epsilon' sits exactly at delta'.
    eps, _ = optimal_composition(epsilon, 0.0, k, delta_prime)
    assert _brute_force_delta(epsilon, k, eps) == pytest.approx(delta_prime, rel=1e-9)
    assert _brute_force_delta(epsilon, k, eps * 0.999) > delta_prime  # and it is the smallest


def test_single_mechanism_closed_form():
    # k = 1: delta(eps') = e^eps/(1 + e^eps) (1 - e^(eps' - eps))  =>  eps' solves it exactly.
    epsilon, delta_prime = 0.8, 0.05
    expected = epsilon + math.log1p(-delta_prime * (1 + math.exp(epsilon)) / math.exp(epsilon))
    assert optimal_composition(epsilon, 0.0, 1, delta_prime)[0] == pytest.approx(expected, rel=1e-12)
    assert optimal_composition(epsilon, 0.0, 1, 0.9) == (0.0, pytest.approx(0.9))


@pytest.mark.parametrize("k", [1, 2, 10, 100, 1000, 10_000])
@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0])
def test_optimal_is_never_worse_than_basic_or_advanced(k, epsilon):
    eps, _ = optimal_composition(epsilon, 0.0, k, 1e-6)
    assert math.isfinite(eps) and eps >= 0
    assert eps <= k * epsilon * (1 + 1e-12)
    assert eps <= advanced_composition(epsilon, 0.0, k, 1e-6)[0]


def test_optimal_is_monotone_in_k_and_delta_prime():
    values = [optimal_composition(0.05, 0.0, k, 1e-6)[0] for k in (10, 100, 1000, 10_000)]
    assert values == sorted(values)
    assert optimal_composition(0.05, 0.0, 500, 1e-3)[0] < optimal_composition(0.05, 0.0, 500, 1e-9)[0]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: sequential_composition([]), "epsilons must not be empty"),
        (lambda: sequential_composition([0.1, -0.1]), "epsilons must all be finite numbers >= 0"),
        (lambda: sequential_composition([0.1, np.inf]), "epsilons must not contain NaN or infinite"),
        (lambda: sequential_composition([0.1, 0.2], [1e-5]), "deltas must have one entry per epsilon"),
        (lambda: parallel_composition([0.1], [1.5]), "deltas must all be in [0, 1]"),
        (lambda: sequential_composition([[0.1, 0.2]]), "epsilons must be a 1-d sequence"),
        (lambda: advanced_composition(0.0, 0.0, 10, 1e-5), "epsilon must be a finite number > 0"),
        (lambda: advanced_composition(0.1, 1.0, 10, 1e-5), "delta must be in [0, 1)"),
        (lambda: advanced_composition(0.1, 0.0, 0, 1e-5), "k must be an integer >= 1"),
        (lambda: advanced_composition(0.1, 0.0, 10, 0.0), "delta_prime must be in (0, 1)"),
        (lambda: optimal_composition(-1.0, 0.0, 10, 1e-5), "epsilon must be a finite number > 0"),
        (lambda: optimal_composition(0.1, 0.0, 10, 1.0), "delta_prime must be in (0, 1)"),
    ],
)
def test_bad_input_is_refused(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert message in str(info.value)


def test_wrong_types_are_type_errors():
    with pytest.raises(TypeError, match="k must be an integer"):
        optimal_composition(0.1, 0.0, 10.0, 1e-5)
    with pytest.raises(TypeError, match="epsilons must be an array of numbers"):
        sequential_composition(["a", "b"])
