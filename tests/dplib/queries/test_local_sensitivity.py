"""dplib.queries.local_sensitivity against brute force, and the attack on local-sensitivity noise.

Reference figures: the definitions of Nissim, Raskhodnikova & Smith (2007), Definition 2.1
(local sensitivity) and the local sensitivity at distance k used in their Lemma 2.7 and
Proposition 3.4, computed by enumerating every dataset on a small integer grid (the grid holds
the range's ends, where the extreme medians and means are reached).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest

import dplib
from dplib.queries.local_sensitivity import median_rank

LO, HI = 0, 6
GRID = range(LO, HI + 1)


def _median(y):
    y = sorted(y)
    return float(y[median_rank(len(y)) - 1]) if y else float(LO)


def _mean(y):
    return float(np.mean(y)) if len(y) else 0.0


def _brute_ls(x, f):
    best = 0.0
    for i in range(len(x)):
        for v in GRID:
            y = list(x)
            y[i] = v
            best = max(best, abs(f(y) - f(x)))
    return best


@functools.cache
def _brute_ls_on_grid(y: tuple, query: str) -> float:
    """:func:`_brute_ls` of a grid dataset, computed once: a ball of radius k around every x of
    the test below holds most of the grid, and the same datasets recur from ball to ball."""
    return _brute_ls(y, _median if query == "median" else _mean)


def _within(x, k):
    """Every dataset on the grid within k replacements of x."""
    for y in itertools.product(GRID, repeat=len(x)):
        if sum(a != b for a, b in zip(x, y, strict=True)) <= k:
            yield y


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_local_sensitivity_is_the_definition_by_brute_force(n):
    gen = np.random.default_rng(n)
    for _ in range(25):
        x = [int(v) for v in gen.integers(LO, HI + 1, size=n)]
        assert dplib.local_sensitivity(x, LO, HI) == _brute_ls(x, _median), x
        assert math.isclose(
            dplib.local_sensitivity(x, LO, HI, query="mean"), _brute_ls(x, _mean)
        ), x


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_local_sensitivity_at_distance_is_the_definition_by_brute_force(n):
    gen = np.random.default_rng(10 + n)
    for _ in range(6):
        x = tuple(int(v) for v in gen.integers(LO, HI + 1, size=n))
        for k in range(n + 2):
            want = max(_brute_ls_on_grid(y, "median") for y in _within(x, k))
            assert dplib.local_sensitivity_at_distance(x, k, LO, HI) == want, (x, k)
            want_mean = max(_brute_ls_on_grid(y, "mean") for y in _within(x, k))
            got = dplib.local_sensitivity_at_distance(x, k, LO, HI, query="mean")
            assert math.isclose(got, want_mean), (x, k)


def test_paper_formula_on_a_worked_example():
    # x = (1, 2, 3, 10, 50) in [0, 100], m = 3: LS = max(10 - 3, 3 - 2); k = 1 reaches
    # (1, 2, 3, 50, 50) with LS 47; k = 2 reaches (1, 2, 3, 100, 100) with LS 97
    x = [50.0, 1.0, 10.0, 3.0, 2.0]
    assert dplib.local_sensitivity(x, 0, 100) == 7.0
    assert [dplib.local_sensitivity_at_distance(x, k, 0, 100) for k in range(6)] == [
        7.0,
        47.0,
        97.0,
        98.0,
        99.0,
        100.0,
    ]


def test_values_outside_the_range_are_clamped_and_empty_data_has_no_neighbours():
    assert dplib.local_sensitivity([-5.0, 3.0, 200.0], 0, 10) == dplib.local_sensitivity(
        [0.0, 3.0, 10.0], 0, 10
    )
    assert dplib.local_sensitivity([], 0, 10) == 0.0
    assert dplib.local_sensitivity_at_distance([], 3, 0, 10, query="mean") == 0.0


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: dplib.local_sensitivity([1.0, float("nan")], 0, 1), ValueError),
        (lambda: dplib.local_sensitivity([[1.0, 2.0]], 0, 1), ValueError),
        (lambda: dplib.local_sensitivity([1.0], 1, 0), ValueError),
        (lambda: dplib.local_sensitivity([1.0], 0, 1, query="mode"), ValueError),
        (lambda: dplib.local_sensitivity([1.0], 0, 1, query=None), TypeError),
        (lambda: dplib.local_sensitivity_at_distance([1.0], -1, 0, 1), ValueError),
        (lambda: dplib.local_sensitivity_at_distance([1.0], 1.5, 0, 1), (TypeError, ValueError)),
    ],
)
def test_bad_input_is_refused(call, error):
    with pytest.raises(error):
        call()


def test_noise_scaled_to_local_sensitivity_tells_neighbours_apart_with_certainty():
    """The attack (Nissim, Raskhodnikova & Smith 2007, Section 1.2): median + Lap(LS / eps).

    x = (5, 5, 5) has local sensitivity 0, so the output is exactly 5; its neighbour
    y = (5, 5, 6) has local sensitivity 1, so its output is continuous and equals 5 with
    probability 0. The event {output = 5} has probability 1 under x and 0 under y: no epsilon.
    """
    x, y, eps = [5.0, 5.0, 5.0], [5.0, 5.0, 6.0], 1.0
    assert dplib.local_sensitivity(x, 0, 10) == 0.0
    assert dplib.local_sensitivity(y, 0, 10) == 1.0

    def release(data, rng):
        scale = dplib.local_sensitivity(data, 0, 10) / eps
        return float(np.median(data)) + (rng.laplace(0.0, scale) if scale > 0 else 0.0)

    gen = np.random.default_rng(0)
    out_x = np.array([release(x, gen) for _ in range(2000)])
    out_y = np.array([release(y, gen) for _ in range(2000)])
    # exact: P_x[output == 5] = 1, P_y[output == 5] = 0 (a continuous law has no atoms)
    assert np.all(out_x == 5.0)
    assert not np.any(out_y == 5.0)
    # the black-box audit finds it too, on the event 4.999 < output <= 5
    with pytest.raises(AssertionError):
        dplib.testing.assert_dp(release, x, y, eps, n_samples=2000, bins=[4.999, 5.0], rng=1)


def test_a_masked_array_is_refused_not_read_through():
    # Issue 49: local_sensitivity(np.ma.array([1, 2, 99], mask=[0, 0, 1]), 0, 10) was 8.0 (the
    # masked 99 counted, clamped to 10); the right answer for [1, 2] is 1.0, and dplib refuses the
    # masked array rather than guess whether the masked entry is a person.
    with pytest.raises(TypeError, match="x is a masked array with 1 masked entries"):
        dplib.local_sensitivity(np.ma.array([1, 2, 99], mask=[0, 0, 1]), 0, 10)
    assert dplib.local_sensitivity(np.ma.array([1, 2, 99], mask=[0, 0, 1]).compressed(), 0, 10) == (
        dplib.local_sensitivity([1.0, 2.0], 0, 10)
    )
