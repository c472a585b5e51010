"""Tests of dplib.views.privtree (PrivTree, Zhang, Xiao & Xie 2016, Algorithm 2 and Theorem 1)."""

import math

import numpy as np
import pytest

from dplib.testing import assert_dp
from dplib.views.privtree import privtree_histogram


def test_blocks_partition_the_grid_and_estimate_is_spread():
    rng = np.random.default_rng(1)
    grid = np.zeros((16, 16))
    grid[2:4, 3:5] = 500.0                         # one crowded corner
    est, blocks = privtree_histogram(grid, 1.0, rng=rng)
    covered = np.zeros_like(grid)
    for box in blocks:
        covered[tuple(slice(a, b) for a, b in box)] += 1
    assert np.all(covered == 1), "blocks are disjoint and cover every cell"
    assert est.shape == grid.shape
    # the crowded region is cut finely, the empty space left in large blocks
    sizes = [math.prod(b - a for a, b in box) for box in blocks]
    assert min(sizes) <= 4 and max(sizes) >= 16
    assert abs(est.sum() - grid.sum()) < 200       # Laplace(2) per block, few blocks


def test_uniform_data_gives_few_blocks_with_low_counts():
    est, blocks = privtree_histogram(np.zeros((32, 32)), 1.0, rng=2)
    assert len(blocks) < 40


def test_dp_of_block_count_on_neighbours():
    # the number of blocks is a function of the partition, which is eps1-DP (Theorem 1)
    a = np.zeros((4, 4))
    a[0, 0] = 3
    b = a.copy()
    b[0, 0] = 4                                    # one more person
    eps = 1.0

    def mech(x, rng):
        return len(privtree_histogram(x, eps, tree_fraction=0.5, rng=rng)[1])

    assert_dp(mech, a, b, epsilon=0.5, n_samples=5_000, rng=3)


def test_bad_input():
    for eps in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            privtree_histogram(np.ones((4, 4)), eps, rng=0)
    with pytest.raises(ValueError):
        privtree_histogram(-np.ones((4, 4)), 1.0, rng=0)
    with pytest.raises(ValueError):
        privtree_histogram([], 1.0, rng=0)
    for frac in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError):
            privtree_histogram(np.ones((4, 4)), 1.0, tree_fraction=frac, rng=0)


@pytest.mark.parametrize("bad", [0, 5.0, True, 1e308, np.array(3.0)])
def test_scalar_counts_are_refused_naming_counts(bad):
    with pytest.raises(ValueError, match=r"counts must be an array with at least 1 dimension"):
        privtree_histogram(bad, 1.0, rng=0)


@pytest.mark.parametrize("eps", [5e-324, 1e-310])
def test_an_epsilon_too_small_to_represent_is_refused(eps):
    with pytest.raises(ValueError, match=r"epsilon is too small"):
        privtree_histogram([[3.0, 0.0], [5.0, 1.0]], eps, rng=0)
    with pytest.raises(ValueError, match=r"tree_fraction"):
        privtree_histogram([[3.0, 0.0], [5.0, 1.0]], 1.0, tree_fraction=5e-324, rng=0)


def test_counts_whose_total_overflows_are_refused():
    with pytest.raises(ValueError, match=r"counts .*overflow"):
        privtree_histogram(np.full((2, 2), 1e308), 1.0, mechanism="laplace", rng=0)
    est, _ = privtree_histogram(np.full((2, 2), 1e300), 1.0, mechanism="laplace", rng=0)
    assert np.all(np.isfinite(est))
    # the default (integer) mechanism: totals up to 2**53, exact as doubles
    with pytest.raises(ValueError, match=r"counts are too large.*2\*\*53"):
        privtree_histogram(np.full((2, 2), 2.0**52), 1.0, rng=0)
    with pytest.raises(ValueError, match=r"counts must be integer counts"):
        privtree_histogram([[0.5, 1.0]], 1.0, rng=0)


def test_estimate_is_each_blocks_noisy_count_over_its_cells():
    # the vectorised tree (summed-area table, block ids by inclusion-exclusion) against a direct
    # per-block computation: every cell holds k / cells(block) for one integer k per block, and
    # the blocks' k sum to the true total plus integer noise
    rng = np.random.default_rng(7)
    grid = rng.integers(0, 30, size=(12, 7, 5)).astype(float)     # odd sides, 3 axes
    est, blocks = privtree_histogram(grid, 2.0, rng=rng)
    covered = np.zeros_like(grid)
    for box in blocks:
        region = tuple(slice(a, b) for a, b in box)
        covered[region] += 1
        cells = math.prod(b - a for a, b in box)
        values = np.unique(est[region])
        assert values.size == 1
        k = round(values[0] * cells)
        assert values[0] == k / cells
    assert np.all(covered == 1)
