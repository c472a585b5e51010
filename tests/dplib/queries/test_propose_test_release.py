"""dplib.queries.propose_test_release: the distance by its definition, the delta, a DP audit.

Reference: Dwork & Roth (2014), Section 7.2 (propose-test-release; the test passes on an
unstable dataset with probability at most delta) and Dwork & Lei (2009). The distance to
instability is checked against its definition, ``min {k : A^(k)(x) > b}`` with ``A^(k)`` by
brute force (tests/dplib/queries/test_local_sensitivity.py checks ``A^(k)`` itself).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dplib
from dplib.mechanisms.discrete import discrete_laplace_pmf
from dplib.queries.propose_test_release import PTR_GRID_BITS, ptr_threshold
from dplib.testing import assert_dp, assert_frequencies


def _by_definition(x, b, lo, hi):
    n = len(x)
    for k in range(n + 1):
        if dplib.local_sensitivity_at_distance(x, k, lo, hi) > b:
            return k
    return n + 1


def test_distance_is_its_definition():
    gen = np.random.default_rng(0)
    for _ in range(200):
        n = int(gen.integers(0, 40))
        x = np.round(gen.normal(50, 15, size=n))
        b = float(gen.choice([0.5, 1.0, 3.0, 10.0, 40.0, 100.0]))
        assert dplib.distance_to_instability(x, b, 0, 100) == _by_definition(x, b, 0, 100), (x, b)


def test_distance_moves_by_at_most_one_between_neighbours():
    gen = np.random.default_rng(1)
    for _ in range(300):
        x = np.round(gen.normal(50, 10, size=int(gen.integers(1, 30))))
        y = x.copy()
        y[int(gen.integers(x.size))] = float(gen.integers(0, 101))
        b = float(gen.choice([1.0, 2.0, 5.0]))
        gx = dplib.distance_to_instability(x, b, 0, 100)
        gy = dplib.distance_to_instability(y, b, 0, 100)
        assert abs(gx - gy) <= 1


def test_threshold_and_the_delta_on_an_unstable_dataset():
    assert math.isclose(ptr_threshold(1.0, 1e-6), 2 * math.log(1e6), rel_tol=1e-15)
    x = [0.0, 50.0, 100.0]  # local sensitivity 50 > b: gamma = 0
    assert dplib.distance_to_instability(x, 1.0, 0, 100) == 0
    eps, delta = 1.0, 0.05
    # exact pass probability: P[Z > T] for Z discrete Laplace of scale 2 / eps
    t = ptr_threshold(eps, delta)
    ks = np.arange(math.floor(t) + 1, 2000)
    p_pass = float(discrete_laplace_pmf(ks, 2.0 / eps).sum())
    assert p_pass <= delta
    gen = np.random.default_rng(2)
    passed = sum(
        dplib.ptr_median(x, 0, 100, 1.0, eps, delta, rng=gen) is not None for _ in range(20_000)
    )
    assert_frequencies([passed, 20_000 - passed], [p_pass, 1 - p_pass], counts=True)


def test_stable_data_release_the_median_with_discrete_laplace_noise_on_the_grid():
    x = np.full(301, 40.0)
    x[:100] = 30.0
    x[-100:] = 60.0  # median 40, very stable
    eps, delta, b = 2.0, 1e-6, 1.0
    step = math.ldexp(1.0, math.floor(math.log2(100)) - PTR_GRID_BITS)
    gen = np.random.default_rng(3)
    outs = [dplib.ptr_median(x, 0, 100, b, eps, delta, rng=gen) for _ in range(3000)]
    assert all(o is not None for o in outs)
    units = np.array([(o - 40.0) / step for o in outs])
    assert np.all(units == np.round(units))  # on the grid
    scale_units = math.floor(b / step) / (eps / 2)
    dplib.testing.assert_laplace_scale(units, scale_units)


def test_ptr_passes_a_black_box_audit_on_neighbours_at_the_edge_of_stability():
    # x is at distance 1 from instability for b = 5, its neighbour y at distance 0
    eps, delta, b = 1.0, 1e-3, 5.0
    x = [10.0, 20.0, 24.0, 27.0, 30.0, 40.0, 50.0]
    y = [10.0, 20.0, 24.0, 27.0, 36.0, 40.0, 50.0]
    gx = dplib.distance_to_instability(x, b, 0, 100)
    gy = dplib.distance_to_instability(y, b, 0, 100)
    assert abs(gx - gy) <= 1

    def mech(data, rng):
        out = dplib.ptr_median(data, 0, 100, b, eps, delta, rng=rng)
        return -1.0 if out is None else out

    assert_dp(mech, x, y, eps, delta=delta, n_samples=20_000, rng=4)


def test_without_the_test_the_release_is_not_private():
    """Noise Lap(b / eps) with b below the local sensitivity: the audit catches it."""
    x = [0.0, 50.0, 100.0]
    y = [0.0, 100.0, 100.0]  # the median jumps by 50 for a proposed b = 1

    def no_test(data, rng):
        med = float(np.sort(data)[1])
        return med + float(dplib.discrete_laplace_mechanism(0, 1, 0.5, rng=rng))

    with pytest.raises(AssertionError):
        assert_dp(no_test, x, y, 1.0, delta=1e-3, n_samples=2_000, rng=6)


def test_empty_data_is_answered():
    out = [dplib.ptr_median([], 0, 1, 0.5, 1.0, 1e-6, rng=s) for s in range(5)]
    assert all(o is None or 0 - 10 < o < 1 + 10 for o in out)


@pytest.mark.parametrize(
    "call",
    [
        lambda: dplib.ptr_median([1.0], 0, 1, 0.0, 1.0, 1e-6, rng=0),
        lambda: dplib.ptr_median([1.0], 0, 1, 0.5, 1.0, 0.0, rng=0),
        lambda: dplib.ptr_median([1.0], 0, 1, 0.5, 0.0, 1e-6, rng=0),
        lambda: dplib.ptr_median([1.0], 0, 1, 1e300, 1.0, 1e-6, rng=0),
        lambda: dplib.ptr_median([math.nan], 0, 1, 0.5, 1.0, 1e-6, rng=0),
        lambda: dplib.distance_to_instability([1.0], -1.0, 0, 1),
    ],
)
def test_bad_input_is_refused_before_drawing(call):
    with pytest.raises(ValueError):
        call()


def test_threshold_in_log_space_and_a_subnormal_epsilon_named():
    # Issue 49: ptr_threshold(1.0, 5e-324) returned inf (1 / delta overflowed), so ptr_median
    # always answered "no"; the threshold is 2 ln(1 / delta) / epsilon = 2 * 1074 ln 2 (5e-324 is
    # 2**-1074) = 1488.880...; ptr_threshold(5e-324, 1e-6) raised ZeroDivisionError.
    assert ptr_threshold(1.0, 5e-324) == pytest.approx(2 * 1074 * math.log(2), rel=1e-14)
    assert ptr_threshold(1.0, 5e-324) == pytest.approx(1488.88, abs=0.01)
    with pytest.raises(
        ValueError,
        match=r"epsilon must be a finite number >= 2 ln\(1 / delta\) / 1.8e308 = 1.5\de-307",
    ):
        ptr_threshold(5e-324, 1e-6)
    # ptr_median at delta = 5e-324 can release: 6001 equal values are 3000 changes from
    # instability, far above the threshold 1488.9 (a test noise of scale 2 falls short of the gap
    # 1511 with probability e**-755), so the answer is a value on the grid, never None
    for seed in range(5):
        out = dplib.ptr_median([0.5] * 6001, 0, 1, 0.1, 1.0, 5e-324, rng=seed)
        assert out is not None and out * 2**PTR_GRID_BITS == round(out * 2**PTR_GRID_BITS)
