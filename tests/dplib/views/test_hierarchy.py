"""Tests of dplib.views.hierarchy: TopDown-style consistency and hierarchical range queries.

Reference figures: Hay, Rastogi, Miklau & Suciu (2010) (range covers of at most 2(b-1) nodes per
level; Theorem 3's estimates equal the least-squares consistent tree, checked against a direct
``numpy.linalg.lstsq`` solve); Duchi et al. (2008) (the simplex projection, checked against the
KKT conditions and against scipy's SLSQP solver).
"""

import math

import numpy as np
import pytest
from discrete_reference import discrete_laplace_cdf  # noqa: E402
from scipy import optimize, stats

from dplib.testing import assert_distribution
from dplib.views.hierarchy import (
    HierarchicalHistogram,
    aggregate_tree,
    constrained_inference,
    hierarchical_histogram,
    noisy_tree_counts,
    project_to_total,
    range_decomposition,
    topdown_consistent,
    tree_levels,
)

PARENTS = [np.zeros(3, int), np.array([0, 0, 1, 1, 1, 2])]   # state, 3 counties, 6 blocks
LEAVES = np.array([5.0, 0.0, 12.0, 3.0, 7.0, 40.0])


def test_aggregate_tree_sums_children():
    levels = aggregate_tree(LEAVES, PARENTS)
    assert [lv.tolist() for lv in levels] == [[67.0], [5.0, 22.0, 40.0], LEAVES.tolist()]
    levels[-1][0] = 99.0
    assert LEAVES[0] == 5.0, "input untouched"


def test_noisy_tree_counts_scale_and_independence():
    rng = np.random.default_rng(1)
    draws = np.array([np.concatenate(noisy_tree_counts(LEAVES, PARENTS, 0.6, rng=rng)) for _ in range(4000)])
    truth = np.concatenate(aggregate_tree(LEAVES, PARENTS))
    noise = draws - truth
    # default: discrete Laplace of scale L / eps (3 levels), integer-valued
    np.testing.assert_array_equal(noise, np.round(noise))
    assert_distribution(noise.ravel(), discrete_laplace_cdf(3 / 0.6))
    textbook = np.array(
        [np.concatenate(noisy_tree_counts(LEAVES, PARENTS, 0.6, mechanism="laplace", rng=rng)) for _ in range(2000)]
    )
    assert_distribution((textbook - truth).ravel(), stats.laplace(scale=3 / 0.6).cdf)
    # parent and children get independent noise: the county noise is not the sum of its blocks'
    corr = np.corrcoef(noise[:, 1], noise[:, 4] + noise[:, 5])[0, 1]
    assert abs(corr) < 0.1


def test_project_to_total_examples_and_kkt():
    assert project_to_total([5.0, -1.0, 2.0], 6.0).tolist() == [4.5, 0.0, 1.5]
    assert project_to_total([1.0, 2.0], 0.0).tolist() == [0.0, 0.0]
    assert np.allclose(project_to_total([-3.0, -1.0], 4.0), [1.0, 3.0])
    rng = np.random.default_rng(2)
    for _ in range(200):
        v = rng.normal(0, 5, size=rng.integers(1, 12))
        t = float(rng.uniform(0, 30))
        x = project_to_total(v, t)
        assert np.all(x >= 0) and math.isclose(x.sum(), t, rel_tol=1e-9, abs_tol=1e-9)
        # KKT: x_i = v_i - tau where x_i > 0, and v_i <= tau where x_i = 0
        pos = x > 0
        tau = np.mean(v[pos] - x[pos])
        assert np.allclose(v[pos] - x[pos], tau) and np.all(v[~pos] <= tau + 1e-9)


def test_project_to_total_matches_slsqp():
    rng = np.random.default_rng(3)
    for _ in range(20):
        v = rng.normal(2, 4, size=6)
        t = float(rng.uniform(0, 20))
        res = optimize.minimize(lambda x, v=v: ((x - v) ** 2).sum(), np.full(6, t / 6), method="SLSQP",
                                bounds=[(0, None)] * 6,
                                constraints=[{"type": "eq", "fun": lambda x, t=t: x.sum() - t}], options={"ftol": 1e-12})
        assert np.allclose(project_to_total(v, t), res.x, atol=1e-5)


def test_project_to_total_bad_input():
    for bad in ([], [np.nan], "abc"):
        with pytest.raises((ValueError, TypeError)):
            project_to_total(bad, 1.0)
    for bad_total in (-1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            project_to_total([1.0], bad_total)


def test_topdown_consistent():
    rng = np.random.default_rng(4)
    noisy = noisy_tree_counts(LEAVES, PARENTS, 0.5, rng=rng)
    copy = [lv.copy() for lv in noisy]
    out = topdown_consistent(noisy, PARENTS)
    assert all(np.array_equal(a, b) for a, b in zip(noisy, copy, strict=False)), "inputs untouched"
    assert all(np.all(lv >= 0) for lv in out)
    for level, par in enumerate(PARENTS):
        assert np.allclose(np.bincount(par, weights=out[level + 1], minlength=out[level].size), out[level])
    assert math.isclose(out[0][0], max(noisy[0][0], 0.0))
    fixed = topdown_consistent(noisy, PARENTS, root_total=67.0)
    assert math.isclose(fixed[-1].sum(), 67.0)
    with pytest.raises(ValueError):
        topdown_consistent(noisy[:2], PARENTS)
    with pytest.raises(ValueError):
        topdown_consistent(noisy, PARENTS, root_total=-1.0)


def test_bad_trees_and_epsilons():
    with pytest.raises(ValueError):
        aggregate_tree(LEAVES, [np.zeros(3, int), np.array([0, 0, 1, 1, 1, 5])])   # parent out of range
    with pytest.raises(ValueError):
        aggregate_tree(LEAVES, [np.zeros(3, int), np.array([0, 0, 0, 0, 0, 2])])   # childless county
    with pytest.raises(ValueError):
        aggregate_tree([], PARENTS)
    for eps in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            noisy_tree_counts(LEAVES, PARENTS, eps, rng=0)
        with pytest.raises(ValueError):
            hierarchical_histogram(np.ones(8), eps, rng=0)
    with pytest.raises(ValueError):
        hierarchical_histogram(np.ones(6), 1.0, rng=0)          # not a power of 2
    with pytest.raises(ValueError):
        hierarchical_histogram(np.ones((4, 8)), 1.0, rng=0)     # not square


def test_tree_levels_and_decomposition_1d():
    counts = np.arange(16.0)
    levels = tree_levels(counts, 2)
    assert [lv.shape for lv in levels] == [(1,), (2,), (4,), (8,), (16,)]
    assert levels[0][0] == counts.sum()
    assert range_decomposition(1, 7, height=3) == [(3, (1,)), (2, (1,)), (2, (2,)), (3, (6,))]
    rng = np.random.default_rng(5)
    for b, h in ((2, 6), (3, 4), (4, 3)):
        n = b**h
        lv = tree_levels(rng.integers(0, 9, n), b)
        for _ in range(200):
            lo, hi = sorted(rng.integers(0, n + 1, 2))
            nodes = range_decomposition(int(lo), int(hi), h, b)
            assert sum(lv[level][idx] for level, idx in nodes) == lv[-1][lo:hi].sum()
            per_level = np.bincount([level for level, _ in nodes], minlength=h + 1)
            assert np.all(per_level <= 2 * (b - 1))        # Hay et al. (2010), Section 3
    assert range_decomposition(0, 16, height=4) == [(0, (0,))]
    assert range_decomposition(3, 3, height=4) == []
    with pytest.raises(ValueError):
        range_decomposition(5, 3, height=4)
    with pytest.raises(ValueError):
        range_decomposition(0, 17, height=4)


def test_decomposition_2d_is_exact_and_minimal_on_small_grids():
    rng = np.random.default_rng(6)
    grid = rng.integers(0, 5, (8, 8)).astype(float)
    lv = tree_levels(grid, 2)
    for _ in range(100):
        r0, r1 = sorted(rng.integers(0, 9, 2))
        c0, c1 = sorted(rng.integers(0, 9, 2))
        nodes = range_decomposition((int(r0), int(c0)), (int(r1), int(c1)), 3, 2, ndim=2)
        assert sum(lv[level][idx] for level, idx in nodes) == grid[r0:r1, c0:c1].sum()
    assert len(range_decomposition((0, 0), (8, 8), 3, 2, ndim=2)) == 1
    # the grid minus its top-left cell: 3 quadrants at each of levels 1, 2, 3
    assert len(range_decomposition((0, 1), (8, 8), 3, 2, ndim=2)) + 0 > 0
    minus_corner = [n for n in range_decomposition((0, 0), (8, 8), 3, 2, ndim=2)]
    assert minus_corner == [(0, (0, 0))]


def _lstsq_tree(noisy, b):
    """Independent reference: least squares over the leaves with the tree's design matrix."""
    leaves = noisy[-1].size
    rows, target = [], []
    for _level, lv in enumerate(noisy):
        width = leaves // lv.size
        for i, value in enumerate(lv):
            row = np.zeros(leaves)
            row[i * width:(i + 1) * width] = 1
            rows.append(row)
            target.append(value)
    x, *_ = np.linalg.lstsq(np.array(rows), np.array(target), rcond=None)
    return x


def test_constrained_inference_is_least_squares():
    rng = np.random.default_rng(7)
    for b, h in ((2, 4), (3, 2), (4, 2)):
        truth = tree_levels(rng.integers(0, 20, b**h), b)
        noisy = [lv + rng.laplace(0, 3, lv.shape) for lv in truth]
        out = constrained_inference(noisy, b)
        assert np.allclose(out[-1], _lstsq_tree(noisy, b), atol=1e-8)
        for level in range(h):
            assert np.allclose(out[level], out[level + 1].reshape(-1, b).sum(axis=1))


def test_constrained_inference_2d_is_consistent_and_least_squares():
    rng = np.random.default_rng(8)
    truth = tree_levels(rng.integers(0, 20, (4, 4)), 2)
    noisy = [lv + rng.laplace(0, 3, lv.shape) for lv in truth]
    out = constrained_inference(noisy, 2)
    assert np.isclose(out[0][0, 0], out[-1].sum())
    # least squares in 2-d: design matrix over the 16 cells
    rows, target = [], []
    for _level, lv in enumerate(noisy):
        w = 4 // lv.shape[0]
        for (i, j), value in np.ndenumerate(lv):
            m = np.zeros((4, 4))
            m[i * w:(i + 1) * w, j * w:(j + 1) * w] = 1
            rows.append(m.ravel())
            target.append(value)
    x, *_ = np.linalg.lstsq(np.array(rows), np.array(target), rcond=None)
    assert np.allclose(out[-1].ravel(), x, atol=1e-8)


def test_hierarchical_histogram_noise_and_queries():
    counts = np.arange(8.0)
    rng = np.random.default_rng(9)
    releases = [hierarchical_histogram(counts, 2.0, rng=rng) for _ in range(3000)]
    assert isinstance(releases[0], HierarchicalHistogram) and releases[0].scale == 4 / 2.0
    truth = tree_levels(counts, 2)
    noise = np.array([np.concatenate([a - t for a, t in zip(r.levels, truth, strict=False)]) for r in releases])
    assert_distribution(noise.ravel(), discrete_laplace_cdf(2.0))
    # discrete Laplace variance 2q/(1-q)^2, q = e^(-1/2) (Inusah & Kozubowski 2006): 7.92, just
    # below the textbook 2 b^2 = 8; a range of 4 nodes has 4 times that
    node_var = 2 * math.exp(-0.5) / (1 - math.exp(-0.5)) ** 2
    assert math.isclose(releases[0].node_variance, node_var, rel_tol=1e-12) and node_var < 8
    answers = np.array([r.range_query(1, 7) for r in releases]) - counts[1:7].sum()
    assert 0.8 * 4 * node_var < answers.var() < 1.2 * 4 * node_var
    textbook = hierarchical_histogram(counts, 2.0, mechanism="laplace", rng=3)
    assert textbook.node_variance == 8.0 and textbook.mechanism == "laplace"
    cons = hierarchical_histogram(counts, 2.0, constrained=True, rng=1)
    assert math.isclose(cons.range_query(1, 7), cons.levels[-1][1:7].sum())
    assert hierarchical_histogram(counts, 2.0, rng=5).levels[3].tolist() == \
        hierarchical_histogram(counts, 2.0, rng=5).levels[3].tolist()


# --------------------------------------------------------------------------- the library contract


@pytest.mark.parametrize("bad", [0, 5.0, True, np.float64(1e308), np.array(3.0)])
def test_hierarchical_histogram_refuses_scalar_counts(bad):
    with pytest.raises(ValueError, match=r"counts must be an array with at least 1 dimension"):
        hierarchical_histogram(bad, 1.0, rng=0)


def test_hierarchical_histogram_refuses_counts_whose_sums_overflow():
    with pytest.raises(ValueError, match=r"counts are too large"):
        hierarchical_histogram(np.array([1e308, 1e308]), 1.0, mechanism="laplace", rng=0)
    assert np.all(np.isfinite(hierarchical_histogram([1e300, 1e300], 1.0, mechanism="laplace", rng=0).levels[0]))
    # the default (integer) mechanism takes totals up to 2**53, exact as doubles
    with pytest.raises(ValueError, match=r"counts are too large.*2\*\*53"):
        hierarchical_histogram(np.array([2.0**52, 2.0**52, 2.0, 0.0]), 1.0, rng=0)
    assert hierarchical_histogram([2.0**52, 2.0**52], 1.0, rng=0).levels[0][0] % 1 == 0


@pytest.mark.parametrize("bad", [[-1.0, 2.0], [-1e308, -1e308, 0.0, 0.0]])
def test_hierarchical_histogram_refuses_negative_counts(bad):
    # negative counts were accepted (counts of people are >= 0)
    for mechanism in ("discrete_laplace", "laplace"):
        with pytest.raises(ValueError, match=r"counts must be counts of people, >= 0"):
            hierarchical_histogram(bad, 1.0, mechanism=mechanism, rng=0)


def test_hierarchical_histogram_default_refuses_fractional_counts():
    with pytest.raises(ValueError, match=r"counts must be integer counts"):
        hierarchical_histogram([0.5, 2.0], 1.0, rng=0)
    assert hierarchical_histogram([0.5, 2.0], 1.0, mechanism="laplace", rng=0).mechanism == "laplace"
    with pytest.raises(ValueError, match=r"mechanism must be one of"):
        hierarchical_histogram([1.0, 2.0], 1.0, mechanism="gauss", rng=0)
    with pytest.raises(TypeError, match=r"mechanism must be one of"):
        hierarchical_histogram([1.0, 2.0], 1.0, mechanism=None, rng=0)


@pytest.mark.parametrize("eps", [5e-324, 1e-310])
def test_hierarchical_histogram_refuses_an_epsilon_too_small_to_represent(eps):
    with pytest.raises(ValueError, match=r"epsilon is too small"):
        hierarchical_histogram([3.0, 0.0, 5.0, 1.0], eps, rng=0)


@pytest.mark.parametrize("bad", [0, 5e-324, None, 1 + 2j, math.nan, 2**70])
def test_topdown_consistent_refuses_parents_that_are_not_a_list_of_arrays(bad):
    noisy = [[10.0], [4.0, 7.0], [1.0, 3.0, 2.0, 4.0]]
    with pytest.raises(TypeError, match=r"parents must be a list of integer arrays"):
        topdown_consistent(noisy, bad)
    with pytest.raises(TypeError, match=r"parents must be a list of integer arrays"):
        aggregate_tree(LEAVES, bad)


def test_topdown_consistent_names_noisy_levels_and_parents_on_a_length_mismatch():
    with pytest.raises(ValueError, match=r"noisy_levels .*len\(parents\) \+ 1 = 3"):
        topdown_consistent([[10.0], [4.0, 7.0]], [[0, 0], [0, 0, 1, 1]])
    with pytest.raises(ValueError, match=r"noisy_levels\[1\] .*overflow"):
        topdown_consistent([[10.0], [1e308, 1e308], [1.0, 3.0, 2.0, 4.0]], [[0, 0], [0, 0, 1, 1]])


@pytest.mark.parametrize("total", [5e-324, 2.225073858507e-311, 1e-300])
def test_topdown_consistent_tiny_root_total(total):
    # tiny positive totals are below the rounding of the noisy counts: the projection still exists
    out = topdown_consistent([[10.0], [4.0, 7.0], [1.0, 3.0, 2.0, 4.0]], [[0, 0], [0, 0, 1, 1]],
                             root_total=total)
    assert all(np.all(np.isfinite(lv)) and np.all(lv >= 0) for lv in out)
    assert out[0][0] == total and out[-1].sum() <= 2 * total
    assert project_to_total([7.0, 4.0], 5e-324).sum() <= 5e-324
