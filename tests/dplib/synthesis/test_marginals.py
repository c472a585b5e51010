"""Tests of dplib.synthesis.marginals (measure noisy marginals, fit by IPF, sample).

Reference figures: IPF (Deming & Stephan 1940) with consistent marginals of a chain A - B - C
converges to the maximum-entropy joint P(a, b) P(c | b) (computed here in closed form).
"""

import math

import numpy as np
import pytest
from discrete_reference import discrete_laplace_cdf  # noqa: E402
from scipy import stats

from dplib.synthesis.marginals import (
    fit_joint,
    marginal_table,
    measure_marginals,
    sample_records,
    synthesize,
)
from dplib.testing import assert_distribution, assert_frequencies

DOMAIN = (3, 2, 4)


def _records(n, rng):
    a = rng.integers(0, 3, n)
    b = (rng.random(n) < 0.2 + 0.3 * a).astype(int)
    c = np.minimum(3, b * 2 + rng.integers(0, 2, n))
    return np.stack([a, b, c], axis=1)


def test_marginal_table_counts():
    rec = np.array([[0, 1, 3], [0, 1, 2], [2, 0, 0]])
    t = marginal_table(rec, DOMAIN, (0, 1))
    assert t.shape == (3, 2) and t[0, 1] == 2 and t[2, 0] == 1 and t.sum() == 3
    assert marginal_table(rec, DOMAIN, (2, 0)).shape == (4, 3)


def test_measure_marginals_scale():
    rng = np.random.default_rng(1)
    rec = _records(500, rng)
    margs = [(0, 1), (1, 2)]
    truth = {m: marginal_table(rec, DOMAIN, m) for m in margs}
    noise = np.concatenate([np.concatenate([(measure_marginals(rec, DOMAIN, margs, 0.5, rng=rng)[m] - truth[m]).ravel()
                                            for m in margs]) for _ in range(500)])
    np.testing.assert_array_equal(noise, np.round(noise))    # default: integer (discrete Laplace) noise
    assert_distribution(noise, discrete_laplace_cdf(2 / 0.5))     # k = 2 marginals
    textbook = np.concatenate([
        np.concatenate([(measure_marginals(rec, DOMAIN, margs, 0.5, mechanism="laplace", rng=rng)[m] - truth[m]).ravel()
                        for m in margs]) for _ in range(300)])
    assert_distribution(textbook, stats.laplace(scale=2 / 0.5).cdf)


def test_ipf_recovers_the_chain_joint():
    rng = np.random.default_rng(2)
    p_ab = rng.dirichlet(np.ones(6)).reshape(3, 2)
    p_c_given_b = rng.dirichlet(np.ones(4), size=2)
    joint = p_ab[:, :, None] * p_c_given_b[None, :, :]
    measured = {(0, 1): joint.sum(axis=2) * 1000, (1, 2): joint.sum(axis=0) * 1000}
    assert np.allclose(fit_joint(measured, DOMAIN, iterations=50), joint, atol=1e-10)
    # the marginal given in another attribute order is handled
    measured2 = {(1, 0): joint.sum(axis=2).T, (2, 1): joint.sum(axis=0).T}
    assert np.allclose(fit_joint(measured2, DOMAIN, iterations=50), joint, atol=1e-10)


def test_fit_joint_cleans_negative_noise():
    measured = {(0,): np.array([-5.0, 10.0, 10.0])}
    joint = fit_joint(measured, DOMAIN)
    assert np.all(joint >= 0) and math.isclose(joint.sum(), 1.0)
    assert np.allclose(joint.sum(axis=(1, 2)), [0.0, 0.5, 0.5])


def test_sample_records_distribution():
    joint = np.array([[0.1, 0.2], [0.3, 0.4]])
    rec = sample_records(joint, 20000, rng=3)
    assert rec.shape == (20000, 2)
    assert_frequencies(rec[:, 0] * 2 + rec[:, 1], [0.1, 0.2, 0.3, 0.4])


def test_synthesize_preserves_measured_marginals():
    rng = np.random.default_rng(4)
    rec = _records(20000, rng)
    syn = synthesize(rec, DOMAIN, [(0, 1), (1, 2)], 5.0, rng=5)
    assert abs(len(syn) - 20000) < 100
    for m in [(0, 1), (1, 2)]:
        p = marginal_table(rec, DOMAIN, m) / len(rec)
        q = marginal_table(syn, DOMAIN, m) / len(syn)
        assert np.abs(p - q).max() < 0.03


def test_bad_input():
    rec = _records(10, np.random.default_rng(0))
    for eps in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            measure_marginals(rec, DOMAIN, [(0, 1)], eps, rng=0)
    with pytest.raises(ValueError):
        measure_marginals(rec, DOMAIN, [(0, 5)], 1.0, rng=0)
    with pytest.raises(ValueError):
        measure_marginals(rec + 10, DOMAIN, [(0, 1)], 1.0, rng=0)
    # 0 people is data: answered with noise only, not refused
    empty = measure_marginals(np.zeros((0, 3)), DOMAIN, [(0, 1)], 1.0, rng=0)
    assert empty[(0, 1)].shape == (DOMAIN[0], DOMAIN[1])
    with pytest.raises(ValueError):
        sample_records(np.array([0.5, 0.6]), 3, rng=0)
    with pytest.raises(ValueError):
        fit_joint({}, DOMAIN)
