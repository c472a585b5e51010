"""Tests of dplib.accounting.dpsgd: DP-SGD epsilon and noise calibration.

Reference figures were computed with Google's dp-accounting 0.6.0 (in a throwaway virtualenv,
never a dependency of dplib) and are hard-coded here.
"""

from __future__ import annotations

import math

import pytest
from reference_figures import DELTA, DP_ACCOUNTING_DPSGD

from dplib.accounting.dpsgd import ACCOUNTANTS, dpsgd_epsilon, noise_multiplier_for

CHEAP_PLD = {"q0.01_s1", "q1_s1", "q0.001_s4", "mnist"}

# dp-accounting 0.6.0, mechanism_calibration.calibrate_dp_mechanism(accountant, make_event,
# target_epsilon, target_delta, LowerEndpointAndGuess(0.1, 1.0), tol=1e-7) with make_event(s) =
# SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(s)), steps); it returns the
# bracket's upper end, so it is at most 1e-7 above the exact root.
# (accountant, epsilon, delta, q, steps, sigma)
DP_ACCOUNTING_CALIBRATION = [
    ("rdp", 2.0, 1e-5, 0.01, 1000, 1.0222898397920437),
    ("rdp", 1.0, 1e-5, 0.05, 50, 1.8394546076499143),
    ("rdp", 8.0, 1e-5, 256 / 60000, 14062, 0.6780892443134148),
    ("pld", 1.0, 1e-5, 0.05, 50, 1.6942372653716147),
]


@pytest.mark.parametrize("setting", DP_ACCOUNTING_DPSGD, ids=lambda s: s.name)
def test_epsilon_matches_dp_accounting(setting):
    q, sigma, steps = setting.q, setting.sigma, setting.steps
    assert dpsgd_epsilon(q, sigma, steps, DELTA) == pytest.approx(setting.rdp_epsilon, rel=1e-8)
    if setting.name in CHEAP_PLD:  # the costly PLD settings are covered in test_pld.py
        pld = dpsgd_epsilon(q, sigma, steps, DELTA, accountant="pld")
        assert pld == pytest.approx(setting.pld_epsilon, rel=1e-6)
        assert pld < setting.rdp_epsilon


@pytest.mark.parametrize(("accountant", "epsilon", "delta", "q", "steps", "sigma"), DP_ACCOUNTING_CALIBRATION)
def test_noise_multiplier_matches_dp_accounting_calibration(accountant, epsilon, delta, q, steps, sigma):
    got = noise_multiplier_for(epsilon, delta, q, steps, accountant=accountant)
    assert got == pytest.approx(sigma, rel=1e-6)
    # round trip: the calibrated sigma gives back the target epsilon, from below
    achieved = dpsgd_epsilon(q, got, steps, delta, accountant=accountant)
    assert achieved <= epsilon
    assert achieved == pytest.approx(epsilon, rel=1e-7)


def test_pld_needs_less_noise_than_rdp():
    # same target, from the calibration figures above: PLD is the tighter accountant
    rdp = {(e, q, t): s for a, e, _, q, t, s in DP_ACCOUNTING_CALIBRATION if a == "rdp"}
    pld = {(e, q, t): s for a, e, _, q, t, s in DP_ACCOUNTING_CALIBRATION if a == "pld"}
    for key, sigma in pld.items():
        assert sigma < rdp[key]


@pytest.mark.parametrize(("epsilon", "q", "steps"), [(2.0, 0.01, 1000), (0.5, 0.02, 300), (10.0, 0.1, 100)])
def test_rdp_round_trip_is_exact_and_minimal(epsilon, q, steps):
    sigma = noise_multiplier_for(epsilon, 1e-5, q, steps)
    achieved = dpsgd_epsilon(q, sigma, steps, 1e-5)
    assert achieved <= epsilon  # the returned sigma meets the target ...
    assert achieved == pytest.approx(epsilon, rel=1e-8)  # ... with nothing to spare
    assert dpsgd_epsilon(q, sigma * (1 - 1e-6), steps, 1e-5) > epsilon


def test_more_budget_means_less_noise():
    sigmas = [noise_multiplier_for(eps, 1e-5, 0.01, 500) for eps in (0.5, 2.0, 8.0)]
    assert sigmas == sorted(sigmas, reverse=True)


def test_unreachable_target_is_explained():
    # With the default orders (at most 1024) RDP cannot certify below ~0.0035 at delta = 1e-5.
    with pytest.raises(ValueError, match="unreachable"):
        noise_multiplier_for(1e-4, 1e-5, 0.01, 1000)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: dpsgd_epsilon(0.0, 1.0, 10, 1e-5), "sampling_rate must be in (0, 1], got 0.0"),
        (lambda: dpsgd_epsilon(1.5, 1.0, 10, 1e-5), "sampling_rate must be in (0, 1], got 1.5"),
        (lambda: dpsgd_epsilon(0.1, 0.0, 10, 1e-5), "noise_multiplier must be a finite number > 0"),
        (lambda: dpsgd_epsilon(0.1, -1.0, 10, 1e-5), "noise_multiplier must be a finite number > 0"),
        (lambda: dpsgd_epsilon(0.1, 1.0, 0, 1e-5), "steps must be an integer >= 1"),
        (lambda: dpsgd_epsilon(0.1, 1.0, 10, 0.0), "delta must be in (0, 1)"),
        (lambda: dpsgd_epsilon(0.1, 1.0, 10, 1.0), "delta must be in (0, 1)"),
        (lambda: dpsgd_epsilon(0.1, 1.0, 10, 1e-5, accountant="moments"), "accountant must be one of ('rdp', 'pld')"),
        (lambda: noise_multiplier_for(0.0, 1e-5, 0.1, 10), "epsilon must be a finite number > 0"),
        (lambda: noise_multiplier_for(1.0, 1e-5, 0.1, 10, accountant="prv"), "accountant must be one of ('rdp', 'pld')"),
        (lambda: noise_multiplier_for(1.0, 2.0, 0.1, 10), "delta must be in (0, 1)"),
        (lambda: noise_multiplier_for(1.0, 1e-5, 0.0, 10), "sampling_rate must be in (0, 1]"),
    ],
)
def test_bad_input_is_refused(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert message in str(info.value)


def test_non_integer_steps_is_a_type_error():
    with pytest.raises(TypeError, match="steps must be an integer"):
        dpsgd_epsilon(0.1, 1.0, 10.5, 1e-5)
    with pytest.raises(TypeError, match="steps must be an integer"):
        noise_multiplier_for(1.0, 1e-5, 0.1, 10.0)


def test_accountants_constant_and_q_one_is_the_gaussian():
    assert ACCOUNTANTS == ("rdp", "pld")
    # q = 1 is the plain Gaussian mechanism: the same for both accountants' inputs
    assert math.isfinite(dpsgd_epsilon(1.0, 2.0, 3, 1e-5))
    assert dpsgd_epsilon(1.0, 2.0, 3, 1e-5, accountant="pld") < dpsgd_epsilon(1.0, 2.0, 3, 1e-5)
