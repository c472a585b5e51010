"""Tests of dplib.accounting.rdp: Rényi DP of the (subsampled) Gaussian and its conversions.

Reference figures were computed with Google's dp-accounting 0.6.0 (installed in a throwaway
virtualenv, never a dependency of dplib) and are hard-coded here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference_figures import DELTA, DP_ACCOUNTING_DPSGD
from scipy import integrate, optimize, special

from dplib.accounting.rdp import (
    DEFAULT_RDP_ORDERS,
    rdp_gaussian,
    rdp_subsampled_gaussian,
    rdp_to_dp,
    zcdp_to_dp,
)

# dp-accounting 0.6.0, rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(q, sigma,
# orders) for one step at orders [1.5, 2, 2.5, 8.1, 32, 256] (inf: the fractional series has not
# converged within 1000 terms and the order is excluded, in both libraries).
PER_ORDER = [1.5, 2.0, 2.5, 8.1, 32.0, 256.0]
DP_ACCOUNTING_PER_ORDER = {
    (0.01, 1.0): [0.00013236850293993048, 0.00017181342207455162, 0.00021777202424064354,
                  0.0009209164273748885, 11.246275937048072, 123.37677032308648],
    (0.1, 0.7): [math.inf, 0.06482182297604114, 0.11970811930483131, 5.638418501991672,
                 30.276199193012076, 258.9128749574616],
    (0.02, 0.5): [0.009817440852948861, 0.02121267194449598, 0.0735506595129011,
                  11.736987838903659, 59.961782704074174, 508.07263572788395],
    (256 / 60000, 1.1): [1.7713252208474904e-05, 2.339577600995332e-05, 2.936054929697007e-05,
                         9.965972767911822e-05, 7.59018834621011, 100.30680187454402],
}


# ---------------------------------------------------------------------------------------------
# default orders and the Gaussian
# ---------------------------------------------------------------------------------------------
def test_default_orders_are_dp_accountings():
    # dp_accounting/rdp/rdp_privacy_accountant.py (0.6.0): DEFAULT_RDP_ORDERS =
    # [1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024]
    orders = np.asarray(DEFAULT_RDP_ORDERS)
    assert orders.size == 156
    assert orders[0] == pytest.approx(1.1) and orders[98] == pytest.approx(10.9)
    assert list(orders[99:152]) == list(range(11, 64))
    assert list(orders[-4:]) == [128, 256, 512, 1024]


def test_rdp_gaussian_formula_mironov_prop7():
    # Mironov 2017 Proposition 7: alpha * Delta^2 / (2 sigma^2); dp-accounting's own test uses
    # alpha = 3.14159 and checks exactly this expression.
    assert rdp_gaussian(2.0, 3.0) == pytest.approx(0.375, rel=1e-15)
    assert rdp_gaussian(2.0, 3.14159, sensitivity=3.0) == pytest.approx(3.14159 * 9 / 8, rel=1e-15)
    out = rdp_gaussian(1.5, np.array([[2.0, 4.0], [8.0, 16.0]]))
    assert out.shape == (2, 2)
    np.testing.assert_allclose(out, np.array([[2, 4], [8, 16]]) / 4.5, rtol=1e-15)
    assert isinstance(rdp_gaussian(1.0, 2.0), float)


def test_q_one_reduces_to_gaussian_and_q_zero_is_free():
    orders = np.asarray(DEFAULT_RDP_ORDERS)
    np.testing.assert_allclose(rdp_subsampled_gaussian(1.0, 1.3, orders), rdp_gaussian(1.3, orders), rtol=1e-15)
    np.testing.assert_array_equal(rdp_subsampled_gaussian(0.0, 1.3, orders), 0.0)


# ---------------------------------------------------------------------------------------------
# the subsampled Gaussian against dp-accounting's figures
# ---------------------------------------------------------------------------------------------
def test_dp_accounting_test_suite_poisson_sampled_gaussian():
    # dp-accounting rdp_privacy_accountant_test.py, test_compute_rdp_poisson_sampled_gaussian:
    # q = 0.01, noise 2.5, count 50 (their tolerance rtol=1e-4; the figures have 9 digits).
    orders = [1.5, 2.5, 5, 50, 100]
    expected = [6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e02]
    np.testing.assert_allclose(50 * rdp_subsampled_gaussian(0.01, 2.5, orders), expected, rtol=1e-7)


@pytest.mark.parametrize(("q", "sigma"), list(DP_ACCOUNTING_PER_ORDER))
def test_per_order_values_match_dp_accounting(q, sigma):
    expected = np.array(DP_ACCOUNTING_PER_ORDER[(q, sigma)])
    got = rdp_subsampled_gaussian(q, sigma, PER_ORDER)
    gaussian = np.asarray(PER_ORDER, dtype=float) / (2 * sigma**2)
    finite = np.isfinite(expected) & (expected <= gaussian)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-9)
    # Where dp-accounting's series does not converge (inf) or overshoots the Gaussian's own
    # curve, dplib returns that curve alpha / (2 sigma^2): subsampling never costs more
    # (quasi-convexity of the Renyi divergence), so it is a finite, valid, tighter bound.
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got[~finite], gaussian[~finite], rtol=1e-12)


@pytest.mark.parametrize("setting", DP_ACCOUNTING_DPSGD, ids=lambda s: s.name)
def test_epsilon_matches_dp_accounting_rdp_accountant(setting):
    orders = np.asarray(DEFAULT_RDP_ORDERS)
    rdp = setting.steps * rdp_subsampled_gaussian(setting.q, setting.sigma, orders)
    eps, best = rdp_to_dp(orders, rdp, DELTA)
    assert eps == pytest.approx(setting.rdp_epsilon, rel=1e-8)
    assert best == pytest.approx(setting.rdp_order)


def _rdp_by_quadrature(q, sigma, alpha):
    # A_alpha = E_{z ~ N(0, sigma^2)} [((1 - q) + q exp((2z - 1) / (2 sigma^2)))^alpha], the
    # integral dp-accounting's test evaluates with mpmath; here adaptive quadrature on 400 pieces.
    def integrand(z):
        log_ratio = np.logaddexp(math.log1p(-q), math.log(q) + (2 * z - 1) / (2 * sigma**2))
        return math.exp(alpha * log_ratio - z * z / (2 * sigma**2)) / (sigma * math.sqrt(2 * math.pi))

    edges = np.linspace(-40 * sigma, 40 * sigma + 40, 400)
    a_alpha = sum(integrate.quad(integrand, a, b, epsabs=0, epsrel=1e-13)[0] for a, b in zip(edges[:-1], edges[1:], strict=True))
    return math.log(a_alpha) / (alpha - 1)


@pytest.mark.parametrize(("q", "sigma", "alpha"), [(0.01, 1.0, 3.0), (0.1, 2.0, 7.0), (0.3, 3.0, 12.0)])
def test_integer_orders_agree_with_numerical_integration(q, sigma, alpha):
    # Independent method; the finite binomial sum of Mironov et al. 2019 Sec. 3.3 is exact.
    assert rdp_subsampled_gaussian(q, sigma, alpha) == pytest.approx(_rdp_by_quadrature(q, sigma, alpha), rel=1e-9)


@pytest.mark.parametrize(("q", "sigma", "alpha"), [(0.01, 1.0, 2.5), (0.05, 0.8, 3.3), (0.02, 1.5, 10.5)])
def test_fractional_orders_are_a_slight_upper_bound(q, sigma, alpha):
    # dp-accounting's _compute_log_a_frac (which dplib reproduces) adds |C(alpha, i)| terms,
    # although the generalised binomial coefficients alternate in sign past i > alpha + 1:
    # the result is conservative, about 0.1% above the exact integral (1.14e-3 relative at
    # q = 0.05, sigma = 0.8, alpha = 3.3), never below it.
    exact = _rdp_by_quadrature(q, sigma, alpha)
    got = rdp_subsampled_gaussian(q, sigma, alpha)
    assert exact <= got <= exact * 1.005


def test_rdp_is_monotone_in_order_q_and_sigma():
    # Rényi divergence is non-decreasing in the order (van Erven & Harremoës 2014, Thm 3);
    # subsampling less or adding more noise can only help.
    orders = np.asarray(DEFAULT_RDP_ORDERS)
    rdp = rdp_subsampled_gaussian(0.01, 1.0, orders)
    assert np.all(np.diff(rdp[np.isfinite(rdp)]) >= 0)
    assert np.all(rdp_subsampled_gaussian(0.005, 1.0, orders) <= rdp)
    assert np.all(rdp_subsampled_gaussian(0.01, 1.2, orders) <= rdp)
    assert np.all(rdp <= rdp_gaussian(1.0, orders))  # subsampling amplifies privacy


# ---------------------------------------------------------------------------------------------
# conversions
# ---------------------------------------------------------------------------------------------
def test_dp_accounting_test_suite_pure_dp_conversion():
    # dp-accounting rdp_privacy_accountant_test.py, test_compute_epsilon_delta_pure_dp:
    # orders 2..32, rdp 1.1 at each, delta 1e-5 -> epsilon 1.32783806176 at order 32.
    eps, order = rdp_to_dp(range(2, 33), [1.1] * 31, 1e-5)
    assert eps == pytest.approx(1.32783806176, abs=1e-10)
    assert order == 32


def test_dp_accounting_test_suite_gaussian_conversion():
    # dp-accounting rdp_privacy_accountant_test.py, test_compute_epsilon_delta_gaussian:
    # noise 4.530877117 is exactly (1, 1e-6)-DP; orders 0.001 * i for i in 1000..99999.
    orders = 0.001 * np.arange(1000, 100000)
    sigma = 4.530877117
    # alpha / (2 sigma^2) at every order, including alpha = 1 where it is the KL divergence
    eps, _ = rdp_to_dp(orders, orders / (2 * sigma**2), 1e-6)
    assert eps == pytest.approx(1.0, abs=1e-7)
    np.testing.assert_allclose(rdp_gaussian(sigma, orders[1:]), orders[1:] / (2 * sigma**2), rtol=1e-15)


def test_classic_conversion_by_hand_and_tight_is_smaller():
    orders, rdp = np.array([2.0, 5.0, 20.0]), np.array([0.1, 0.3, 1.5])
    # Mironov 2017 Prop. 3: eps = rdp + log(1/delta)/(alpha - 1)
    by_hand = rdp + math.log(1e5) / (orders - 1)
    eps, order = rdp_to_dp(orders, rdp, 1e-5, method="classic")
    assert eps == pytest.approx(by_hand.min(), rel=1e-15) and order == orders[by_hand.argmin()]
    # Balle et al. 2020 Thm 21 subtracts (log(alpha) - (alpha - 1) log(1 - 1/alpha))/(alpha - 1) > 0
    tight = rdp + np.log1p(-1 / orders) - (math.log(1e-5) + np.log(orders)) / (orders - 1)
    assert rdp_to_dp(orders, rdp, 1e-5)[0] == pytest.approx(tight.min(), rel=1e-15)
    assert tight.min() < by_hand.min()


def test_kl_bound_gives_zero_and_inf_order_is_skipped():
    # delta^2 + expm1(-rdp) > 0: already (0, delta)-DP by the KL bound (as dp-accounting).
    assert rdp_to_dp([2.0, 3.0], [1e-12, 2e-12], 1e-3) == (0.0, 2.0)
    eps, order = rdp_to_dp([2.0, 3.0], [np.inf, 0.5], 1e-5)
    assert math.isfinite(eps) and order == 3.0


def test_zcdp_classic_formula_and_tight_conversion():
    rho, delta = 0.5, 1e-5
    # Bun & Steinke 2016 Prop. 1.3: rho + 2 sqrt(rho log(1/delta))
    assert zcdp_to_dp(rho, delta) == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-15)
    tight = zcdp_to_dp(rho, delta, method="tight")
    assert tight < zcdp_to_dp(rho, delta)
    # Independent: the tight RDP conversion of the curve rho * alpha over a fine grid of orders.
    orders = np.linspace(1.02, 60, 200_000)
    assert tight == pytest.approx(rdp_to_dp(orders, rho * orders, delta)[0], rel=1e-6)
    # Still valid: a Gaussian with sigma = 1 is 0.5-zCDP, and its exact epsilon (Balle & Wang
    # 2018, Theorem 8) can only be smaller.
    def exact_delta(eps, sigma=1.0):
        return special.ndtr(0.5 / sigma - eps * sigma) - math.exp(eps) * special.ndtr(-0.5 / sigma - eps * sigma)

    exact = optimize.brentq(lambda e: exact_delta(e) - delta, 0, 20)
    assert exact < tight
    # ... and it is the continuous-order version of dp-accounting's figure for one Gaussian step
    # with sigma = 1 (RdpAccountant over DEFAULT_RDP_ORDERS: 4.728507067217623, best order 5.4).
    assert tight <= 4.728507067217623
    assert tight == pytest.approx(4.728507067217623, rel=1e-4)


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rdp_gaussian(0.0, 2.0), "sigma must be a finite number > 0"),
        (lambda: rdp_gaussian(1.0, 2.0, sensitivity=-1), "sensitivity must be a finite number > 0"),
        (lambda: rdp_gaussian(1.0, [2.0, 1.0]), "orders must be finite numbers > 1"),
        (lambda: rdp_subsampled_gaussian(1.5, 1.0, 2.0), "q must be in [0, 1]"),
        (lambda: rdp_subsampled_gaussian(0.1, -1.0, 2.0), "sigma must be a finite number > 0"),
        (lambda: rdp_subsampled_gaussian(0.1, 1.0, [np.nan]), "orders must be finite numbers > 1"),
        (lambda: rdp_subsampled_gaussian(0.1, 1.0, []), "orders must not be empty"),
        (lambda: rdp_to_dp([2.0, 3.0], [0.1], 1e-5), "same length"),
        (lambda: rdp_to_dp([2.0], [-0.1], 1e-5), "rdp values must be >= 0"),
        (lambda: rdp_to_dp([0.5], [0.1], 1e-5), "orders must be finite numbers >= 1"),
        (lambda: rdp_to_dp([2.0], [0.1], 0.0), "delta must be in (0, 1)"),
        (lambda: rdp_to_dp([2.0], [0.1], 1.0), "delta must be in (0, 1)"),
        (lambda: rdp_to_dp([2.0], [0.1], 1e-5, method="moments"), "method must be one of ('tight', 'classic')"),
        (lambda: zcdp_to_dp(0.0, 1e-5), "rho must be a finite number > 0"),
        (lambda: zcdp_to_dp(0.1, 1e-5, method="exact"), "method must be one of"),
    ],
)
def test_bad_input_is_refused(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert message in str(info.value)


def test_wrong_types_are_type_errors():
    with pytest.raises(TypeError, match="sigma must be a real number"):
        rdp_gaussian("1", 2.0)
    with pytest.raises(TypeError, match="orders must be"):
        rdp_subsampled_gaussian(0.1, 1.0, ["a"])
