"""Regression tests for the issue-9 contract fixes in the learning and accounting modules.

Each test is the exact shortest failing call that ``tests/dplib/test_contract.py`` reported (recorded in
``tests/support/contract_gaps.py``) before the fix: it must now raise a ValueError/TypeError naming the
hostile argument, or return the right finite value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dplib import (
    DPNaiveBayes,
    DPSGDClassifier,
    PrivacyAccountant,
    clip_gradients,
    noisy_gradient,
    per_example_gradients,
    pld_epsilon_subsampled_gaussian,
    rdp_to_dp,
    sequential_composition,
    zcdp_to_dp,
)

_rng = np.random.default_rng(20240609)
X = _rng.uniform(0.0, 1.0, size=(40, 2))
Y = (X[:, 0] > 0.5).astype(int)


# ------------------------------------------------------------------------------- DPNaiveBayes
@pytest.mark.parametrize("bounds", [0, -2.5, 5e-324, 1 + 2j, math.nan, 2**70])
def test_naive_bayes_bounds_not_a_pair_names_bounds(bounds):
    # Was: TypeError "object of type 'int' has no len()".
    with pytest.raises(TypeError, match=r"\bbounds\b"):
        DPNaiveBayes(1.0, bounds, [0, 1], random_state=0).fit(X, Y)


@pytest.mark.parametrize(
    ("bounds", "error"),
    [
        (np.array([math.nan, 1.0]), ValueError),  # was: "lower bound must not contain NaN"
        (np.zeros((2, 2)), ValueError),  # was: "every lower bound must be < ..." without 'bounds'
        (np.array([1e308, 1e308]), ValueError),
        (np.array([1 + 1j, 2.0]), TypeError),  # was: "lower bound must be an array of numbers"
    ],
)
def test_naive_bayes_bad_bounds_name_bounds(bounds, error):
    with pytest.raises(error, match=r"\bbounds\b"):
        DPNaiveBayes(1.0, bounds, [0, 1], random_state=0).fit(X, Y)


@pytest.mark.parametrize("var_floor", [None, [], 1 + 2j, np.array([]), np.array([1e308, 1e308])])
def test_naive_bayes_var_floor_of_wrong_type_names_var_floor(var_floor):
    # Was: TypeError "float() argument must be a string or a real number, not 'NoneType'".
    with pytest.raises(TypeError, match=r"\bvar_floor\b"):
        DPNaiveBayes(1.0, (0.0, 1.0), [0, 1], var_floor, 0).fit(X, Y)


@pytest.mark.parametrize("var_floor", [0, -1, math.nan, math.inf, 1e308, 0.26])
def test_naive_bayes_var_floor_out_of_range(var_floor):
    # Variances of values rescaled to [-1/2, 1/2] are at most 1/4: the floor lies in (0, 1/4].
    with pytest.raises(ValueError, match=r"var_floor must be a finite number > 0 and <= 0.25"):
        DPNaiveBayes(1.0, (0.0, 1.0), [0, 1], var_floor, 0).fit(X, Y)


@pytest.mark.parametrize(
    ("random_state", "error"),
    [(-1, ValueError), ("5", TypeError), (True, TypeError), (5e-324, TypeError), (np.array([]), TypeError)],
)
def test_naive_bayes_random_state_is_named(random_state, error):
    # Was: "rng seed must be a non-negative integer, got -1" (the user passed random_state).
    with pytest.raises(error, match=r"\brandom_state\b"):
        DPNaiveBayes(1.0, (0.0, 1.0), [0, 1], random_state=random_state).fit(X, Y)


def test_naive_bayes_per_feature_bounds_still_work():
    clf = DPNaiveBayes(5.0, ([0.0, 0.0], [1.0, 1.0]), [0, 1], random_state=0).fit(X, Y)
    assert clf.theta_.shape == (2, 2) and np.all(np.isfinite(clf.var_))


# ---------------------------------------------------------------------------- DPSGDClassifier
def _sgd(**kw):
    base = dict(batch_size=20, epochs=1, classes=[0, 1], noise_multiplier=1.0, random_state=0)
    base.update(kw)
    return DPSGDClassifier(5.0, 1e-05, **base)


@pytest.mark.parametrize("epochs", [10**9, 2**70, 100_001])
def test_sgd_epochs_has_an_explicit_range(epochs):
    # Was: epochs=10**9 never returned; 2**70 raised a PLD error naming steps, not epochs.
    with pytest.raises(ValueError, match=r"\bepochs\b.*100000"):
        _sgd(epochs=epochs).fit(X, Y)


def test_sgd_total_steps_are_bounded():
    # 60_000 epochs of 2 steps each: 120_000 steps > MAX_STEPS = 10**5.
    with pytest.raises(ValueError, match=r"\bepochs\b.*100000"):
        _sgd(epochs=60_000).fit(X, Y)


@pytest.mark.parametrize(
    ("random_state", "error"), [(-1, ValueError), ("5", TypeError), ([], TypeError), (1e308, TypeError)]
)
def test_sgd_random_state_is_named(random_state, error):
    with pytest.raises(error, match=r"\brandom_state\b"):
        _sgd(random_state=random_state).fit(X, Y)


@pytest.mark.parametrize("classes", [0, -1, True, 2.5, math.nan, 1 + 2j, "01", np.zeros((2, 2))])
def test_sgd_classes_not_a_sequence_names_classes(classes):
    # Was: TypeError "'int' object is not iterable".
    with pytest.raises(TypeError, match=r"\bclasses\b"):
        _sgd(classes=classes).fit(X, Y)


@pytest.mark.parametrize("hidden", [0, -1, [0], [-525, -525], 2**70, 10**9, [986389698, -525]])
def test_sgd_hidden_layer_sizes_are_named(hidden):
    # Was: "each hidden layer size must be ..." (no parameter name), or a MemoryError for 10**9.
    with pytest.raises(ValueError, match=r"\bhidden_layer_sizes\b"):
        _sgd(hidden_layer_sizes=hidden).fit(X, Y)


@pytest.mark.parametrize("activation", [np.array([math.nan, 1.0]), np.array([]), np.zeros((2, 2))])
def test_sgd_activation_array_names_activation(activation):
    # Was: numpy's "The truth value of an array ... is ambiguous".
    with pytest.raises(ValueError, match=r"\bactivation\b"):
        _sgd(activation=activation).fit(X, Y)


def test_sgd_small_mlp_still_fits():
    clf = _sgd(hidden_layer_sizes=(3,), classes=np.array([0, 1])).fit(X, Y)
    assert clf.steps_ == 2 and math.isfinite(clf.epsilon_spent_)


# -------------------------------------------------------------------------- PrivacyAccountant
@pytest.mark.parametrize("label", [math.nan, math.inf, 1 + 2j, np.array([math.nan, 1.0]), 5])
def test_accountant_label_must_be_a_string_and_nothing_is_spent(label):
    acc = PrivacyAccountant(1.0, 1e-05)
    with pytest.raises(TypeError, match=r"\blabel\b"):
        acc.spend(0.5, 1e-06, label=label)
    assert acc.ledger == ()  # refused before anything is recorded
    acc.spend(0.5, 1e-06, label="count")  # a str (or None) is still accepted
    acc.spend(0.1, label=None)


# ------------------------------------------------------------- clip_gradients, noisy_gradient
@pytest.mark.parametrize("grads", [0, -1, True, 2.5, None, 1 + 2j, math.nan, 2**70, 5e-324])
def test_clip_gradients_non_array_names_per_example_grads(grads):
    # Was: TypeError "'int' object is not iterable".
    with pytest.raises(TypeError, match=r"\bper_example_grads\b"):
        clip_gradients(grads, 1.0)


@pytest.mark.parametrize("grads", [0, None, 1 + 2j, math.inf, -(2**70)])
def test_noisy_gradient_non_array_names_per_example_grads(grads):
    with pytest.raises(TypeError, match=r"\bper_example_grads\b"):
        noisy_gradient(grads, 1.0, 1.0, 3.0, rng=0)


def test_noisy_gradient_tiny_expected_batch_size_is_refused():
    # Was: noisy_gradient(g, 1.0, 1.0, 5e-324, rng=0) returned [inf, inf].
    g = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    with pytest.raises(ValueError, match=r"\bexpected_batch_size\b.*>= 1e-06"):
        noisy_gradient(g, 1.0, 1.0, 5e-324, rng=0)


def test_clip_gradients_lists_and_tuples_of_blocks_still_work():
    g = np.array([[3.0, 4.0], [0.3, 0.4]])
    out = clip_gradients((g[:, :1], g[:, 1:]), 1.0)
    np.testing.assert_allclose(np.hstack(out), [[0.6, 0.8], [0.3, 0.4]])
    # The docstring's example: (clip(g1) + clip(g2)) / 2 with sigma = 0, [0.6+0.3, 0.8+0.4] / 2.
    assert noisy_gradient(g, 1.0, 0.0, 2.0).tolist() == pytest.approx([0.45, 0.6])


def test_clip_gradients_complex_grads_name_per_example_grads():
    with pytest.raises(TypeError, match=r"\bper_example_grads\b"):
        clip_gradients(np.array([[1 + 1j, 2.0]]), 1.0)


# ---------------------------------------------------------------------- per_example_gradients
@pytest.mark.parametrize(
    "activation", [np.array([math.nan, 1.0]), np.array([]), np.array([1e308, 1e308]), np.zeros((2, 2))]
)
def test_per_example_gradients_activation_array_names_activation(activation):
    params = [np.array([[0.1, 0.1], [0.1, 0.1]]), np.array([0.0, 0.0])]
    with pytest.raises(ValueError, match=r"\bactivation\b"):
        per_example_gradients(params, X[:5], np.zeros(5, dtype=int), activation=activation)


# ------------------------------------------------------------------- rdp_to_dp and zcdp_to_dp
@pytest.mark.parametrize("method", [np.array([math.nan, 1.0]), np.array([]), np.zeros((2, 2)), 1])
def test_rdp_to_dp_method_array_names_method(method):
    with pytest.raises(ValueError, match=r"\bmethod\b"):
        rdp_to_dp([2.0, 4.0, 8.0], [0.5, 1.0, 2.0], 1e-05, method=method)


@pytest.mark.parametrize("method", [np.array([math.nan, 1.0]), np.array([1e308, 1e308]), None])
def test_zcdp_to_dp_method_array_names_method(method):
    with pytest.raises(ValueError, match=r"\bmethod\b"):
        zcdp_to_dp(0.5, 1e-05, method=method)


def test_zcdp_to_dp_smallest_delta_is_finite():
    # Bun & Steinke 2016, Proposition 1.3: eps = rho + 2 sqrt(rho log(1/delta)); for the
    # subnormal delta = 5e-324, log(1/delta) = 744.44, so eps = 0.5 + 2 sqrt(372.22) = 39.086.
    expected = 0.5 + 2 * math.sqrt(0.5 * -math.log(5e-324))
    assert zcdp_to_dp(0.5, 5e-324) == pytest.approx(expected, rel=1e-9)


# --------------------------------------------------------------- pld_epsilon_subsampled_gaussian
@pytest.mark.parametrize("discretization", [1e308, 10**9, 7.84306010847968e100, 2**70, 1.5])
def test_pld_discretization_has_an_explicit_range(discretization):
    # Was: OverflowError "math range error" (expm1 of the grid step).
    with pytest.raises(ValueError, match=r"\bdiscretization\b.*<= 1"):
        pld_epsilon_subsampled_gaussian(0.01, 1.0, 100, 1e-05, discretization=discretization)


def test_pld_coarsest_grid_is_still_accepted_and_looser():
    fine = pld_epsilon_subsampled_gaussian(0.01, 1.0, 100, 1e-05)
    coarse = pld_epsilon_subsampled_gaussian(0.01, 1.0, 100, 1e-05, discretization=1.0)
    assert math.isfinite(coarse) and coarse >= fine  # every grid gives an upper bound


def test_pld_smallest_delta_is_refused_with_delta_named():
    with pytest.raises(ValueError, match=r"\bdelta\b"):
        pld_epsilon_subsampled_gaussian(0.01, 1.0, 100, 5e-324)


# --------------------------------------------------------------------- sequential_composition
def test_sequential_composition_overflowing_sum_names_epsilons():
    # Was: OverflowError "intermediate overflow in fsum"; 2e308 is not a float.
    with pytest.raises(ValueError, match=r"\bepsilons\b"):
        sequential_composition(np.array([1e308, 1e308]), [1e-06, 1e-06])


def test_sequential_composition_largest_finite_sum():
    # 8.9e307 + 8.9e307 = 1.78e308 < 1.797e308: computable, so computed exactly (fsum).
    assert sequential_composition([8.9e307, 8.9e307], [1e-06, 1e-06]) == (1.78e308, 2e-06)
