"""Tests of dplib.mechanisms.sparse_vector (AboveThreshold and Sparse, Dwork & Roth 2014 §3.6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dplib.mechanisms.sparse_vector import above_threshold, sparse_vector
from dplib.testing import assert_dp, assert_frequencies, audit_dp


def _p_above_single(gap: float, epsilon: float, delta_f: float = 1.0) -> float:
    """P(q + nu >= T + rho) for one query, gap = T - q, nu ~ Lap(4D/e), rho ~ Lap(2D/e).

    nu - rho is a sum of two independent Laplace variables of scales a = 4D/e and b = 2D/e; its
    upper tail is (a^2 e^{-t/a} - b^2 e^{-t/b}) / (2 (a^2 - b^2)) for t >= 0.
    """
    a, b = 4 * delta_f / epsilon, 2 * delta_f / epsilon
    t = abs(gap)
    tail = (a * a * math.exp(-t / a) - b * b * math.exp(-t / b)) / (2 * (a * a - b * b))
    return tail if gap >= 0 else 1.0 - tail


def test_closed_form_agrees_with_numerical_integration():
    # independent method: P(nu >= gap + rho) = E_rho[ sf_nu(gap + rho) ]
    for gap, eps in [(0.0, 1.0), (3.0, 1.0), (-2.0, 0.5), (10.0, 2.0)]:
        val, _ = integrate.quad(
            lambda r, gap=gap, eps=eps: stats.laplace.sf(gap + r, scale=4 / eps)
            * stats.laplace.pdf(r, scale=2 / eps),
            -np.inf,
            np.inf,
        )
        assert _p_above_single(gap, eps) == pytest.approx(val, rel=1e-7)


@pytest.mark.parametrize(("q", "threshold", "eps"), [(0.0, 0.0, 1.0), (0.0, 3.0, 1.0), (2.0, 0.0, 0.5)])
def test_single_query_probability_of_above(q, threshold, eps):
    gen = np.random.default_rng(12)
    n = 20_000
    hits = sum(above_threshold([q], threshold, eps, rng=gen) == 0 for _ in range(n))
    p = _p_above_single(threshold - q, eps)
    assert_frequencies([hits, n - hits], [p, 1 - p], counts=True)  # failure prob 1e-9


def test_sparse_single_query_uses_epsilon_over_c_noise():
    # c = 1: Sparse is AboveThreshold; one query gives the same closed form
    gen = np.random.default_rng(3)
    n = 20_000
    hits = sum(bool(sparse_vector([0.0], 2.0, 1.0, 1, rng=gen)[0]) for _ in range(n))
    p = _p_above_single(2.0, 1.0)
    assert_frequencies([hits, n - hits], [p, 1 - p], counts=True)


def test_sparse_two_above_with_c_two_uses_scale_4c_over_eps():
    # queries [q1, q2], c = 2: the first answer has threshold noise Lap(4/e), query noise Lap(8/e)
    # (epsilon / 2 per run), i.e. the closed form at epsilon / 2
    gen = np.random.default_rng(4)
    n = 20_000
    first = np.array([sparse_vector([0.0, 0.0], 3.0, 2.0, 2, rng=gen)[0] for _ in range(n)])
    p = _p_above_single(3.0, 1.0)
    hits = int(first.sum())
    assert_frequencies([hits, n - hits], [p, 1 - p], counts=True)


def test_sparse_vector_stops_after_c_above_and_redraws():
    q = np.array([0.0, 1e6, 0.0, 1e6, 0.0, 1e6, 0.0])
    out = sparse_vector(q, 5e5, 1.0, 2, rng=0)
    assert out.dtype == bool
    np.testing.assert_array_equal(out, [False, True, False, True])
    out = sparse_vector(q, 5e5, 1.0, 3, rng=0)
    np.testing.assert_array_equal(out, [False, True, False, True, False, True])
    # fewer than c above: every query answered
    assert sparse_vector(np.zeros(6), 1e6, 1.0, 2, rng=0).tolist() == [False] * 6


def test_above_threshold_none_and_index():
    assert above_threshold(np.zeros(5), 1e6, 1.0, rng=0) is None
    assert above_threshold([0.0, 0.0, 1e6, 1e6], 5e5, 1.0, rng=0) == 2


# ------------------------------------------------------------------ privacy audits
def _at_vectorized(eps, nu_scale_factor, threshold_noise=True):
    """AboveThreshold sampled for `size` runs at once; -1 stands for None."""

    def mech(q, rng, size):
        q = np.asarray(q, float)
        rho = rng.laplace(0, 2 / eps, size=(size, 1)) if threshold_noise else np.zeros((size, 1))
        noise = rng.laplace(0, nu_scale_factor / eps, size=(size, q.size)) if nu_scale_factor else 0
        above = q + noise >= rho
        return np.where(above.any(1), above.argmax(1), -1)

    return mech


# Lyu et al.-style worst case: the first m queries go up by Delta, the last goes down
M = 5
D_A = [0.0] * M + [1.0]
D_B = [1.0] * M + [0.0]


def test_audit_correct_above_threshold_passes():
    gen = np.random.default_rng(7)

    def mech(q, rng):
        out = above_threshold(q, 0.0, 1.0, rng=rng)
        return -1 if out is None else out

    result = assert_dp(mech, D_A, D_B, epsilon=1.0, n_samples=30_000, rng=gen)
    assert result.epsilon_lower_bound <= 1.0


def test_audit_correct_noise_vectorized_passes_with_power():
    # same algorithm as above_threshold (checked against it by the closed-form tests), 1e6 runs
    result = assert_dp(_at_vectorized(1.0, 4), D_A, D_B, 1.0, vectorized=True,
                       n_samples=1_000_000, rng=1)
    assert result.epsilon_lower_bound > 0.5  # the audit has power: it sees most of the epsilon


def test_audit_rejects_query_noise_without_factor_two():
    # (a) nu ~ Lap(2 Delta / eps): measured lower bound 1.35 > 1 at these settings
    result = audit_dp(_at_vectorized(1.0, 2), D_A, D_B, vectorized=True, n_samples=1_000_000,
                      rng=1)
    assert result.epsilon_lower_bound > 1.0
    with pytest.raises(AssertionError, match="not 1-DP"):
        assert_dp(_at_vectorized(1.0, 2), D_A, D_B, 1.0, vectorized=True, n_samples=1_000_000,
                  rng=2)


def test_audit_rejects_no_query_noise():
    # (b) Lyu et al. Algorithm 6-style: no noise on the queries, only on the threshold.
    # Inputs [0, 1] and [1, 0]: index 1 is possible on the first, impossible on the second.
    result = audit_dp(_at_vectorized(1.0, 0), [0.0, 1.0], [1.0, 0.0], vectorized=True,
                      n_samples=100_000, rng=1)
    assert result.epsilon_lower_bound > 3.0


# ------------------------------------------------------------------ input checks and rng
@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"queries": []}, ValueError, "queries"),
        ({"queries": [[1.0, 2.0]]}, ValueError, "queries"),
        ({"queries": [1.0, float("nan")]}, ValueError, "queries"),
        ({"queries": ["1"]}, TypeError, "queries"),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"sensitivity": -1.0}, ValueError, "sensitivity"),
        ({"threshold": float("inf")}, ValueError, "threshold"),
        ({"threshold": float("nan")}, ValueError, "threshold"),
        ({"rng": "seed"}, TypeError, "rng"),
    ],
)
@pytest.mark.parametrize("func", ["above_threshold", "sparse_vector"])
def test_bad_input_refused(kwargs, exc, name, func):
    args = {"queries": [1.0, 2.0, 3.0], "threshold": 1.0, "epsilon": 1.0}
    args.update(kwargs)
    if func == "sparse_vector":
        args["max_above"] = 1
        fn = sparse_vector
    else:
        fn = above_threshold
    with pytest.raises(exc, match=name):
        fn(**args)


@pytest.mark.parametrize(("c", "exc"), [(0, ValueError), (4, ValueError), (1.0, TypeError), (True, TypeError)])
def test_max_above_refused(c, exc):
    with pytest.raises(exc, match="max_above"):
        sparse_vector([1.0, 2.0, 3.0], 1.0, 1.0, c)


def test_refusal_draws_no_randomness():
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    with pytest.raises(ValueError):
        sparse_vector([1.0, 2.0], 1.0, 1.0, 3, rng=gen)
    with pytest.raises(ValueError):
        above_threshold([1.0, 2.0], float("nan"), 1.0, rng=gen)
    assert gen.bit_generator.state == state


def test_rng_honoured():
    q = np.zeros(50)
    a = [above_threshold(q, 5.0, 1.0, rng=s) for s in range(20)]
    assert a == [above_threshold(q, 5.0, 1.0, rng=s) for s in range(20)]
    assert len(set(a)) > 1
    s1 = sparse_vector(q, 5.0, 1.0, 3, rng=1)
    np.testing.assert_array_equal(s1, sparse_vector(q, 5.0, 1.0, 3, rng=1))
    outs = {tuple(sparse_vector(q, 5.0, 1.0, 3, rng=s)) for s in range(20)}
    assert len(outs) > 1
