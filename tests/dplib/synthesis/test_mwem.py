"""Tests of dplib.synthesis.mwem: MWEM (Hardt, Ligett & McSherry 2012, Algorithm 1).

The accuracy tests run with fixed seeds (``SEED``, overridable through ``DPLIB_TEST_SEED``) and
compare averages over 10 seeds with margins of 2x or more of the figures measured when the tests
were written (noted beside each assertion); the exact tests replace the noise by spies.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from scipy.special import softmax

from dplib.synthesis import mwem as synthetic
from dplib.synthesis.mwem import mwem

SEED = int(os.environ.get("DPLIB_TEST_SEED", "20261122"))
D = 64


def _problem(k: int) -> tuple[np.ndarray, np.ndarray]:
    """A skewed histogram of 1000 people over 64 bins and 100 random range queries."""
    g = np.random.default_rng([SEED, k])
    hist = g.multinomial(1000, g.dirichlet(np.full(D, 0.3))).astype(float)
    ends = np.sort(g.integers(0, D, size=(100, 2)), axis=1)
    idx = np.arange(D)
    queries = ((idx >= ends[:, :1]) & (idx <= ends[:, 1:])).astype(float)
    return hist, queries


def _max_error(a: np.ndarray, hist: np.ndarray, queries: np.ndarray) -> float:
    return float(np.max(np.abs(queries @ a - queries @ hist)))


def _mean_errors(epsilon, iterations, **kwargs):
    errors, uniform = [], []
    for k in range(10):
        hist, queries = _problem(k)
        a = mwem(hist, queries, epsilon, iterations, rng=np.random.default_rng([SEED, 100 + k]), **kwargs)
        errors.append(_max_error(a, hist, queries))
        uniform.append(_max_error(np.full(D, hist.sum() / D), hist, queries))
    return float(np.mean(errors)), float(np.mean(uniform))


def test_output_is_a_nonnegative_histogram_summing_to_n():
    hist, queries = _problem(0)
    for kwargs in ({}, {"average": False}, {"replay": True}):
        # replace-one: n is public and the table sums to it
        a = mwem(hist, queries, 1.0, 7, rng=SEED, neighbouring="replace", **kwargs)
        assert a.shape == (D,) and a.dtype == float
        assert np.all(a >= 0)
        assert a.sum() == pytest.approx(hist.sum(), rel=1e-12)
        # add/remove (default): the table sums to a noisy integer total n_hat >= 1
        b = mwem(hist, queries, 1.0, 7, rng=SEED, **kwargs)
        assert np.all(b >= 0) and b.sum() >= 1 - 1e-9
        assert b.sum() == pytest.approx(round(b.sum()), rel=1e-12)


def test_add_remove_total_is_noisy_and_replace_total_is_exact():
    # the table summed to the exact n (3 on [3, 0, 0, 0], 4 after adding one person)
    # in 200 of 200 runs, telling add/remove neighbours apart with certainty. Now the total is
    # n + Z, Z discrete Laplace of scale 1 / (0.1 * 2) = 5 (count_fraction 0.1 of epsilon 2):
    # P(Z = 0) = tanh(1/10) = 0.0997 (Inusah & Kozubowski 2006), so among 400 runs the exact n
    # shows up 40 times on average, and at most 100 times except with probability < 1e-9
    # (Chernoff: P(Bin(400, 0.0997) >= 100) <= exp(-400 KL(0.25 || 0.0997)) = e^-36).
    queries = np.eye(4)
    g = np.random.default_rng([SEED, 27])
    totals = np.array([mwem([3.0, 0, 0, 0], queries, 2.0, 3, rng=g).sum() for _ in range(400)])
    np.testing.assert_allclose(totals, np.round(totals), rtol=1e-12)
    assert np.sum(np.round(totals) == 3) <= 100
    assert np.unique(np.round(totals)).size >= 5
    exact = [mwem([3.0, 0, 0, 0], queries, 2.0, 3, rng=g, neighbouring="replace").sum() for _ in range(20)]
    np.testing.assert_allclose(exact, 3.0, rtol=1e-12)


def test_beats_answering_uniform_at_large_epsilon():
    # Measured: 24.8 (replay, T=40) and 109 (Algorithm 1, T=40) against 226 for the uniform
    # histogram, over 10 seeds.
    err_replay, uniform = _mean_errors(100.0, 40, replay=True)
    assert err_replay < 0.25 * uniform
    err_plain, _ = _mean_errors(100.0, 40)
    assert err_plain < 0.75 * uniform


def test_error_decreases_with_iterations():
    # Measured (10 seeds, epsilon = 100): Algorithm 1 175 (T=5) -> 109 (T=40);
    # with replay 100 (T=5) -> 25 (T=40).
    plain_5, _ = _mean_errors(100.0, 5)
    plain_40, _ = _mean_errors(100.0, 40)
    assert plain_40 < 0.8 * plain_5
    replay_5, _ = _mean_errors(100.0, 5, replay=True)
    replay_40, _ = _mean_errors(100.0, 40, replay=True)
    assert replay_40 < 0.5 * replay_5


class _Spy:
    """Replaces the exponential and Laplace mechanisms: records their arguments, no noise."""

    def __init__(self, monkeypatch, pick=None):
        self.em_calls, self.lap_calls = [], []
        self.pick = pick

        def em(scores, sensitivity, epsilon, *, rng=None):
            self.em_calls.append((np.array(scores), sensitivity, epsilon))
            return int(np.argmax(scores)) if self.pick is None else self.pick

        def measure(value, epsilon, generator, step):
            self.lap_calls.append((value, 1.0, epsilon))
            return float(value)

        monkeypatch.setattr(synthetic, "exponential_mechanism", em)
        monkeypatch.setattr(synthetic, "_measure", measure)


def test_scores_sensitivity_budget_and_update_are_algorithm_1(monkeypatch):
    # D = [90, 10, 0, 0], n = 100; A_0 = [25] * 4. Query 0 (bin 0) errs by 65, query 1 (bins
    # 2, 3) by 50, query 2 (everything) by 0: the scores are exactly |q.A_0 - q.D|.
    hist = np.array([90.0, 10.0, 0.0, 0.0])
    queries = np.array([[1, 0, 0, 0], [0, 0, 1, 1], [1, 1, 1, 1]], dtype=float)
    spy = _Spy(monkeypatch)
    out = mwem(hist, queries, 3.0, 2, average=False, neighbouring="replace")
    scores0, sens0, eps0 = spy.em_calls[0]
    np.testing.assert_allclose(scores0, [65.0, 50.0, 0.0])
    assert sens0 == 1.0 and eps0 == pytest.approx(3.0 / 4)
    assert spy.lap_calls[0] == (90.0, 1.0, pytest.approx(3.0 / 4))
    # A_1(x) ∝ A_0(x) exp(q(x) (m - q.A_0) / (2n)) with m = 90, q.A_0 = 25, n = 100.
    a1 = 100 * softmax(np.log(np.full(4, 25.0)) + queries[0] * (90 - 25) / 200)
    np.testing.assert_allclose(spy.em_calls[1][0], np.abs(queries @ a1 - queries @ hist))
    step = int(np.argmax(spy.em_calls[1][0]))
    a2 = 100 * softmax(
        np.log(a1) + queries[step] * (queries[step] @ hist - queries[step] @ a1) / 200
    )
    np.testing.assert_allclose(out, a2, rtol=1e-12)
    assert len(spy.em_calls) == len(spy.lap_calls) == 2


def test_average_is_the_mean_of_the_iterates(monkeypatch):
    hist = np.array([90.0, 10.0, 0.0, 0.0])
    queries = np.array([[1, 0, 0, 0], [0, 0, 1, 1]], dtype=float)
    _Spy(monkeypatch)
    last = [mwem(hist, queries, 1.0, t, average=False, neighbouring="replace") for t in (1, 2, 3)]
    np.testing.assert_allclose(
        mwem(hist, queries, 1.0, 3, neighbouring="replace"), np.mean(last, axis=0), rtol=1e-12
    )


def test_forced_argmax_with_the_real_mechanism():
    # One query errs by n/2 = 5e5, the other by 0: exp(eps * 5e5 / 2) makes the choice certain,
    # and the update moves mass towards bin 0 (A_0(0) = 5e5 < D(0) = 1e6).
    hist = np.array([1e6, 0.0])
    queries = np.array([[0.0, 0.0], [1.0, 0.0]])
    out = mwem(hist, queries, 1.0, 1, rng=SEED)
    assert out[0] > 5e5 > out[1]


def test_rng_is_honoured():
    hist, queries = _problem(1)
    a = mwem(hist, queries, 1.0, 5, rng=7)
    np.testing.assert_array_equal(a, mwem(hist, queries, 1.0, 5, rng=7))
    np.testing.assert_array_equal(
        a, mwem(hist, queries, 1.0, 5, rng=np.random.default_rng(7))
    )
    assert not np.array_equal(a, mwem(hist, queries, 1.0, 5, rng=8))
    g = np.random.default_rng(7)
    first = mwem(hist, queries, 1.0, 5, rng=g)
    assert not np.array_equal(first, mwem(hist, queries, 1.0, 5, rng=g))  # stream continues
    with pytest.raises(TypeError, match="rng"):
        mwem(hist, queries, 1.0, 5, rng="7")


GOOD = {"histogram": [1.0, 2.0, 3.0], "queries": [[1, 0, 0], [0, 1, 1]], "epsilon": 1.0,
        "iterations": 2}


@pytest.mark.parametrize(
    ("name", "value", "error", "pattern"),
    [
        ("histogram", [1.0, -1.0, 3.0], ValueError, r"histogram must contain counts >= 0, got -1"),
        ("histogram", [[1.0, 2.0, 3.0]], ValueError, r"histogram must be a 1-d"),
        ("histogram", [1.0, np.nan, 3.0], ValueError, r"histogram must not contain NaN"),
        ("histogram", [1e308, 1e308, 1.0], ValueError, r"histogram must have a total count n"),
        ("histogram", ["1", "2", "3"], TypeError, r"histogram must be an array of numbers"),
        ("queries", [[1, 0], [0, 1]], ValueError, r"queries must have one column per domain"),
        ("queries", [1, 0, 0], ValueError, r"queries must be a 2-d array"),
        ("queries", [[2, 0, 0]], ValueError, r"queries must have entries in \[0, 1\].*got 2"),
        ("queries", [[-0.5, 0, 0]], ValueError, r"queries must have entries in \[0, 1\]"),
        ("epsilon", 0.0, ValueError, r"epsilon must be a finite number > 0, got 0.0"),
        ("epsilon", float("inf"), ValueError, r"epsilon must be a finite number > 0"),
        ("epsilon", 5e-324, ValueError, r"epsilon is too small"),
        ("epsilon", "1", TypeError, r"epsilon must be a real number"),
        ("iterations", 0, ValueError, r"iterations must be an integer >= 1, got 0"),
        ("iterations", 2**70, ValueError, r"iterations must be an integer in \[1, 100000\]"),
        ("iterations", 2.0, TypeError, r"iterations must be an integer"),
        ("histogram", [1.5, 2.0, 3.0], ValueError, r"histogram must hold integer counts"),
        ("neighbouring", "swap", ValueError, r"neighbouring must be one of"),
        ("count_fraction", 1.0, ValueError, r"count_fraction"),
    ],
)
def test_bad_input_is_refused_before_any_randomness(name, value, error, pattern):
    g = np.random.default_rng(0)
    state = g.bit_generator.state
    with pytest.raises(error, match=pattern):
        mwem(**{**GOOD, name: value}, rng=g)
    assert g.bit_generator.state == state


@pytest.mark.parametrize("name", ["average", "replay"])
def test_flags_must_be_bools(name):
    with pytest.raises(TypeError, match=name):
        mwem(**GOOD, **{name: 1})


# --------------------------------------------------------------------------- large totals


def _one_round_first_cell(n: float) -> float:
    # Algorithm 1, T = 1, from A_0 = n/4 with query e_0 chosen and measured as m = n (the noise,
    # of scale ~2/epsilon, moves the result by far less than the tolerance):
    # A_1(0) = n e^{(n - n/4)/(2n)} / (e^{3/8} + 3) = n e^{3/8} / (e^{3/8} + 3).
    return n * math.exp(0.375) / (math.exp(0.375) + 3.0)


@pytest.mark.parametrize("n", [1e9, 2.0**40, 2.0**53])
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_mwem_measures_large_totals_correctly(n, relation):
    # Issue 38: measurements were clamped at 2**52 grid units, so at epsilon 1000 every answer
    # above 8.4e6 was measured at the clamp and mwem([1e9, 0, 0, 0], eye(4), 1000, 1,
    # neighbouring="replace") gave about [2.3e8, 2.6e8, 2.6e8, 2.6e8] (the first cell *below*
    # the others). The grid now follows the public bound on the answers, up to n = 2**53.
    out = mwem([n, 0.0, 0.0, 0.0], np.eye(4), 1000.0, 1, neighbouring=relation, rng=3)
    expected = _one_round_first_cell(n)
    assert out[0] == pytest.approx(expected, rel=1e-6)
    assert out[0] > out[1]
    assert out.sum() == pytest.approx(n, rel=1e-6)


def test_mwem_grid_depends_on_public_quantities_only():
    # replace: the grid step follows n (public); small totals keep the fine grid of epsilon
    assert synthetic._grid_step(500.0, 100.0) == math.ldexp(1.0, synthetic.grid_exponent(1.0, 500.0))
    assert synthetic._grid_step(500.0, 2.0**53) == 2.0
    assert synthetic._grid_step(500.0, 2.0**53) * 2**52 >= 2.0**53

