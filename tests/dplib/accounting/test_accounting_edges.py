"""Hostile inputs for dplib.accounting and dplib.dpsgd: every call either returns
finite values or raises ValueError/TypeError naming the argument, within a time limit."""

import math
import time

import hostile
import numpy as np
import pytest

from dplib.accounting.accountant import PrivacyAccountant
from dplib.accounting.composition import (
    advanced_composition,
    optimal_composition,
    parallel_composition,
    sequential_composition,
)
from dplib.accounting.dpsgd import dpsgd_epsilon, noise_multiplier_for
from dplib.accounting.pld import (
    pld_delta_subsampled_gaussian,
    pld_epsilon_subsampled_gaussian,
    subsampled_gaussian_pld,
)
from dplib.accounting.rdp import rdp_gaussian, rdp_subsampled_gaussian, rdp_to_dp, zcdp_to_dp
from dplib.dpsgd import DPSGDClassifier, poisson_sample

HOSTILE = [0, -1, math.nan, math.inf, -math.inf, 5e-324, 1e308, 2**70, 10**12, "1", None,
           1j, True, np.ones((2, 2)), np.array([])]

# (function, valid arguments, names of the arguments in order)
CALLS = [
    (dpsgd_epsilon, (0.01, 1.0, 100, 1e-5), ("sampling_rate", "noise_multiplier", "steps", "delta")),
    (lambda q, s, t, d: dpsgd_epsilon(q, s, t, d, accountant="pld"), (0.01, 1.0, 100, 1e-5),
     ("sampling_rate", "noise_multiplier", "steps", "delta")),
    (rdp_gaussian, (1.0, [2, 3]), ("sigma", "orders")),
    (rdp_subsampled_gaussian, (0.1, 1.0, [2, 3.5]), ("q", "sigma", "orders")),
    (lambda d: rdp_to_dp([2, 3], [0.1, 0.2], d), (1e-5,), ("delta",)),
    (zcdp_to_dp, (0.5, 1e-5), ("rho", "delta")),
    (advanced_composition, (0.1, 0.0, 10, 1e-5), ("epsilon", "delta", "k", "delta_prime")),
    (optimal_composition, (0.1, 0.0, 10, 1e-5), ("epsilon", "delta", "k", "delta_prime")),
    (sequential_composition, ([0.1, 0.2],), ("epsilons",)),
    (parallel_composition, ([0.1, 0.2],), ("epsilons",)),
    (pld_epsilon_subsampled_gaussian, (0.1, 1.0, 10, 1e-5), ("q", "sigma", "steps", "delta")),
    (pld_delta_subsampled_gaussian, (0.1, 1.0, 10, 1.0), ("q", "sigma", "steps", "epsilon")),
    (lambda q, s: subsampled_gaussian_pld(q, s).probs, (0.1, 1.0), ("q", "sigma")),
    (lambda e, d: PrivacyAccountant(e, d).budget, (1.0, 1e-5), ("epsilon", "delta")),
    (lambda s, q, c: PrivacyAccountant(1e6, 1e-5).spend_gaussian(s, sampling_rate=q, count=c),
     (1.0, 0.01, 10), ("noise_multiplier", "sampling_rate", "count")),
    (lambda n, q: poisson_sample(n, q, rng=0), (100, 0.5), ("n", "sampling_rate")),
]
CASES = [
    pytest.param(f, args, names, i, bad, id=f"{k}-{names[i]}-{type(bad).__name__}:{str(bad)[:12]}")
    for k, (f, args, names) in enumerate(CALLS)
    for i in range(len(args))
    for bad in HOSTILE
]
TIME_LIMIT = 20.0  # CPU seconds per call (tests/support/hostile.py) (PLD with 10**12 steps takes 4 s here; typical calls take ms)


def _finite(value):
    if value is None:
        return True
    if isinstance(value, tuple):
        return all(_finite(v) for v in value)
    return bool(np.all(np.isfinite(np.asarray(value, dtype=float))))


@pytest.mark.parametrize(("func", "args", "names", "position", "bad"), CASES)
def test_hostile_argument(func, args, names, position, bad):
    call = list(args)
    call[position] = bad
    outcome = hostile.call_within(func, *call, time_limit=TIME_LIMIT)
    if outcome.error is not None:
        assert isinstance(outcome.error, ValueError | TypeError), repr(outcome.error)
        message = str(outcome.error)
        assert any(name in message for name in names), message
        assert "larger discretization" not in message or "discretization=" in message, message
    else:
        assert _finite(outcome.result), outcome.result
    assert outcome.within(TIME_LIMIT), f"took {outcome.cpu_seconds:.2f} CPU seconds"


# ---- the exact calls of the issue ----------------------------------------------------------

def test_tiny_noise_multiplier_pld_is_a_value_error():
    with pytest.raises(ValueError, match="noise_multiplier must be >= 1e-100"):
        dpsgd_epsilon(0.01, 1e-300, 100, 1e-5, accountant="pld")


def test_huge_noise_multiplier_costs_nothing():
    # More noise never costs more privacy (post-processing): epsilon is 0.
    assert dpsgd_epsilon(0.01, 1e308, 100, 1e-5) == 0.0
    assert dpsgd_epsilon(0.01, 1e308, 100, 1e-5, accountant="pld") == 0.0
    assert rdp_gaussian(1e308, [2, 3]).tolist() == [0.0, 0.0]


def test_composition_overflow_is_a_value_error():
    with pytest.raises(ValueError, match="epsilon must be <= 700"):
        advanced_composition(1e308, 0, 10, 1e-5)
    with pytest.raises(ValueError, match="k \\* epsilon must be <= 1e\\+300"):
        optimal_composition(1e308, 0, 10, 1e-5)
    with pytest.raises(ValueError, match="k must be <= 1000000"):
        optimal_composition(0.1, 0, 10**8, 1e-5)


def test_unbounded_allocations_are_refused_or_bounded():
    with pytest.raises(ValueError, match="n must be <= 100000000"):
        poisson_sample(10**12, 0.5)
    start = time.perf_counter()
    eps = dpsgd_epsilon(0.5, 1.0, 10**9, 1e-5, accountant="pld")  # coarser grid, valid bound
    assert math.isfinite(eps) and eps > 0
    assert eps <= dpsgd_epsilon(0.5, 1.0, 10**9, 1e-5) * (1 + 1e-9)  # never above RDP
    assert time.perf_counter() - start < 20


def test_subsampled_rdp_tiny_sigma_is_a_value_error():
    with pytest.raises(ValueError, match="sigma must be >= 1e-100"):
        rdp_subsampled_gaussian(0.1, 1e-300, [2, 3.5])
    assert np.all(np.isfinite(rdp_subsampled_gaussian(0.1, 1e-100, [2, 3.5])))


def test_use_pld_must_be_a_bool():
    with pytest.raises(TypeError, match="use_pld"):
        PrivacyAccountant(1.0, 1e-5, use_pld="yes")


def test_accountant_chooses_its_own_discretization():
    accountant = PrivacyAccountant(1e6, 1e-5)
    accountant.spend_gaussian(0.015, sampling_rate=1e-4)
    rdp_only = PrivacyAccountant(1e6, 1e-5, use_pld=False)
    rdp_only.spend_gaussian(0.015, sampling_rate=1e-4)
    assert 0 < accountant.spent[0] <= rdp_only.spent[0]


def test_classifier_huge_clipping_norm_is_refused():
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.arange(40) % 2
    clf = DPSGDClassifier(epsilon=1.0, delta=1e-5, max_grad_norm=1e308, epochs=1, batch_size=10,
                          classes=[0, 1], random_state=0)
    with pytest.raises(ValueError, match="max_grad_norm"):
        clf.fit(X, y)


# ---- the PLD calibration overshoot ---------------------------------------------------------

# Found by a random search with the code of commit 1d235da: noise_multiplier_for returned
# sigma = 0.8031254242296889, whose PLD epsilon was 0.5000000017967974 > 0.5.
OVERSHOOT = (0.5, 2.4725790537178437e-08, 0.0010711830265116749, 37)


@pytest.mark.parametrize("setting", [
    OVERSHOOT,
    (0.5, 1e-5, 0.01, 100),
    (0.5, 1e-5, 1.0, 1),
    (0.5, 1e-6, 0.03, 5),
    (2.0, 1e-5, 0.004, 1000),
])
def test_pld_calibration_never_overshoots(setting):
    target, delta, q, steps = setting
    sigma = noise_multiplier_for(target, delta, q, steps, accountant="pld")
    assert dpsgd_epsilon(q, sigma, steps, delta, accountant="pld") <= target
    # and it is tight: 0.1% less noise overshoots
    assert dpsgd_epsilon(q, sigma * 0.999, steps, delta, accountant="pld") > target


@pytest.mark.parametrize("rdp", [["0.1", "0.2"], [True, False], "0.1", None])
def test_rdp_to_dp_refuses_strings_and_booleans_as_rdp_values(rdp):
    # Issue 38, finding 5: rdp_to_dp(..., ['0.1', '0.2'], ...) parsed the strings as numbers.
    from dplib import rdp_to_dp

    with pytest.raises(TypeError, match="rdp must be"):
        rdp_to_dp([2.0, 3.0], rdp, 1e-5)
    assert rdp_to_dp([2.0, 3.0], [0.1, 0.2], 1e-5)[0] > 0
