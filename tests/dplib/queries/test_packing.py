"""dplib.queries.packing: the packing lower bound and the Laplace mechanism's error.

Reference: Vadhan (2017), "The complexity of differential privacy", Section 5.2 (and his CS 229r
note "A simpler example of the packing lower bound", Theorem 1): an epsilon-DP mechanism that
answers the k one-way marginals of {0,1}^k-valued rows with error below n/2, with probability
1/2, needs epsilon >= (k - 1) ln 2 / n.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dplib


@pytest.mark.parametrize("k", [1, 2, 10, 100, 1000])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_the_bound_at_beta_one_half_is_vadhans(k, eps):
    # error < alpha with alpha = n / 2 needs n >= (k - 1) ln 2 / eps: alpha > ((k-1) ln2 / eps - 1) / 2
    want = max(0.0, ((k - 1) * math.log(2) / eps - 1) / 2)
    assert math.isclose(
        dplib.marginals_error_lower_bound(k, eps), want, rel_tol=1e-12, abs_tol=1e-12
    )


def test_the_bound_grows_like_k_over_epsilon_and_beta():
    assert (
        dplib.marginals_error_lower_bound(200, 1.0)
        > 2 * dplib.marginals_error_lower_bound(100, 1.0) - 1
    )
    assert dplib.marginals_error_lower_bound(100, 0.5) > dplib.marginals_error_lower_bound(100, 1.0)
    # asking for success more often (smaller beta) cannot make the bound smaller
    assert dplib.marginals_error_lower_bound(100, 1.0, 0.01) > dplib.marginals_error_lower_bound(
        100, 1.0, 0.5
    )


@pytest.mark.parametrize("k", [1, 5, 50, 500])
@pytest.mark.parametrize("beta", [0.01, 0.5, 0.9])
def test_laplace_error_round_trip_and_it_is_above_the_bound(k, beta):
    eps = 0.7
    a = dplib.marginals_laplace_error(k, eps, beta)
    # P[max_j |Lap(k/eps)| < a] = (1 - exp(-a eps / k))^k = 1 - beta
    assert math.isclose((-math.expm1(-a * eps / k)) ** k, 1 - beta, rel_tol=1e-12)
    assert a > dplib.marginals_error_lower_bound(k, eps, beta)


def test_laplace_error_by_simulation():
    k, eps, beta = 20, 1.0, 0.5
    a = dplib.marginals_laplace_error(k, eps, beta)
    gen = np.random.default_rng(0)
    hits = int((np.abs(gen.laplace(0, k / eps, size=(20_000, k))).max(axis=1) < a).sum())
    dplib.testing.assert_frequencies([hits, 20_000 - hits], [1 - beta, beta], counts=True)


@pytest.mark.parametrize(
    "call",
    [
        lambda: dplib.marginals_error_lower_bound(0, 1.0),
        lambda: dplib.marginals_error_lower_bound(3, 0.0),
        lambda: dplib.marginals_error_lower_bound(3, 1.0, 1.0),
        lambda: dplib.marginals_laplace_error(3, 1.0, 0.0),
        lambda: dplib.marginals_laplace_error(3, math.inf),
    ],
)
def test_bad_input_is_refused(call):
    with pytest.raises(ValueError):
        call()
