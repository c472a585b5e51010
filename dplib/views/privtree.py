"""A data-aware private partition of a grid of counts: PrivTree (Zhang, Xiao & Xie 2016).

Fixed hierarchies and the identity mechanism put the same noise on every cell or node, whether
the region is crowded or empty. A *data-aware* partition cuts crowded regions finely and leaves
empty ones as large blocks: one noisy count per block (small perturbation error) at the price of
spreading a block's count uniformly over its cells (aggregation error). HDPView (Kato et al.,
VLDB 2022) chooses the cuts to balance the two errors; :func:`privtree_histogram` implements the
simpler PrivTree, one of HDPView's baselines, whose splitting rule has a privacy cost that does
not grow with the depth of the tree.

References
----------
.. [ZXX16] J. Zhang, X. Xiao, X. Xie, "PrivTree: A Differentially Private Algorithm for
   Hierarchical Decompositions", SIGMOD 2016, Algorithm 2 and Theorem 1 (Section 3).
.. [K22] F. Kato, T. Takahashi, S. Takagi, Y. Cao, S. P. Liew, M. Yoshikawa, "HDPView:
   Differentially Private Materialized View for Exploring High Dimensional Relational Data",
   PVLDB 15(9), 2022.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_data,
    check_epsilon,
    check_probability,
    check_representable,
)
from dplib.mechanisms._count_noise import (
    add_count_noise,
    check_count_mechanism,
    check_counts,
    noise_scale,
)

__all__ = ["privtree_histogram"]

#: Largest number of cells of the grid. Every cell may end up a block of its own, and the
#: blocks are returned as a list of Python tuples (about 0.3 kB each): 2**20 cells bound both the
#: output (~300 MB) and the time (a second or two) of the worst case.
_MAX_CELLS = 2**20
#: Largest ``cells * 2**ndim``: each block's count is read from a summed-area table at its
#: ``2**ndim`` corners (inclusion-exclusion), for up to ``2 * cells`` blocks.
_MAX_CORNER_WORK = 2**24


def _corners(d: int) -> np.ndarray:
    """The ``2**d`` corners of a box as 0/1 rows (1: take the upper bound on that axis)."""
    return np.array(list(np.ndindex(*(2,) * d)), dtype=np.int64).reshape(-1, d)


def _box_sums(table: np.ndarray, lo: np.ndarray, hi: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """Sums of the boxes ``[lo, hi)`` (rows) from the summed-area ``table`` (exact for integers)."""
    out = np.zeros(lo.shape[0])
    for corner in corners:
        index = np.where(corner == 1, hi, lo)
        sign = -1.0 if (corner.size - int(corner.sum())) % 2 else 1.0
        out += sign * table[tuple(index.T)]
    return out


def _summed_area(arr: np.ndarray) -> np.ndarray:
    """``S[i_1, ..., i_d] = sum of arr[:i_1, ..., :i_d]`` (a zero row in front on every axis)."""
    table = np.zeros(tuple(s + 1 for s in arr.shape))
    table[tuple(slice(1, None) for _ in arr.shape)] = arr
    for axis in range(arr.ndim):
        np.cumsum(table, axis=axis, out=table)
    return table


def _block_ids(shape: tuple[int, ...], lo: np.ndarray, hi: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """Index of the block holding each cell, for disjoint boxes covering the grid (int64 exact)."""
    diff = np.zeros(tuple(s + 1 for s in shape), dtype=np.int64)
    ids = np.arange(lo.shape[0], dtype=np.int64)
    for corner in corners:
        index = np.where(corner == 1, hi, lo)
        sign = -1 if int(corner.sum()) % 2 else 1
        np.add.at(diff, tuple(index.T), sign * ids)
    for axis in range(len(shape)):
        np.cumsum(diff, axis=axis, out=diff)
    return diff[tuple(slice(0, s) for s in shape)]


def privtree_histogram(
    counts: Any,
    epsilon: float,
    *,
    tree_fraction: float = 0.5,
    mechanism: str = "discrete_laplace",
    rng: Any = None,
) -> tuple[np.ndarray, list[tuple[tuple[int, int], ...]]]:
    """Estimate a grid of counts from a PrivTree partition and one noisy count per block.

    Parameters
    ----------
    counts : array_like
        Counts of people on a grid (any number of axes), each person in one cell; ``>= 0``,
        integers with a total of at most ``2**53`` for the default mechanism. At most ``2**20``
        cells, and ``cells * 2**ndim <= 2**24``.
    epsilon : float
        Total budget, finite and > 0.
    tree_fraction : float, keyword-only, default 0.5
        Share of ``epsilon`` spent choosing the partition, in (0, 1); the rest measures the
        blocks.
    mechanism : {"discrete_laplace", "laplace"}, keyword-only
        Noise on the block counts. ``"discrete_laplace"`` (default): discrete Laplace of scale
        ``1 / eps2``, so a block of ``c`` cells releases ``k / c`` per cell with ``k`` an integer,
        whatever the data (safe from the floating-point attack of Mironov 2012);
        ``"laplace"``: the textbook ``Lap(1 / eps2)`` on doubles, for teaching only.
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness.

    Returns
    -------
    estimate : numpy.ndarray
        Same shape as ``counts``: each block's noisy count spread uniformly over its cells.
    blocks : list
        The blocks of the partition, each a tuple of ``(start, stop)`` per axis, in the order
        they were settled (depth by depth, from the root).

    Raises
    ------
    ValueError, TypeError
        For negative, non-finite or empty counts (non-integer ones for the default mechanism),
        too many cells, a bad ``epsilon``, ``tree_fraction`` or ``mechanism``.

    Notes
    -----
    [ZXX16] Algorithm 2 with fanout ``beta = 2`` (a block is halved along its longest axis):
    with ``eps1 = tree_fraction * epsilon``, ``lambda = (2 beta - 1) / ((beta - 1) eps1) = 3 / eps1``,
    ``delta = lambda ln beta`` and threshold ``theta = 0``, a block ``v`` at depth ``dep(v)`` is
    split when ``max(c(v) - dep(v) delta, theta - delta) + Lap(lambda) > theta``. Theorem 1:
    the partition is eps1-DP under add/remove one person, whatever its depth. Blocks of one cell
    are never split (a rule that looks at the domain only). The blocks are disjoint, so noise of
    scale ``1 / eps2`` on each block's count is eps2-DP (parallel composition), with
    ``eps2 = epsilon - eps1``; the total is epsilon (sequential composition). The uniform spread
    within a block is post-processing. The discrete Laplace block noise has variance
    ``1 / (2 sinh(eps2 / 2)**2)``, slightly below the textbook ``2 / eps2**2``.

    The tree is grown depth by depth, all blocks of a depth at once; a block's count is read
    from a summed-area table (exact for integer counts), so the work is ``O(cells 2**ndim)``.
    """
    method = check_count_mechanism(mechanism)
    arr = check_data(counts, "counts")
    if arr.ndim == 0:
        raise ValueError(
            "counts must be an array with at least 1 dimension (a grid of counts), "
            f"got the scalar {counts!r}: wrap a single count in a list"
        )
    if arr.size > _MAX_CELLS or arr.size * 2**arr.ndim > _MAX_CORNER_WORK:
        raise ValueError(
            f"counts must have at most 2**20 cells and cells * 2**ndim <= 2**24, got shape {arr.shape}"
        )
    check_counts(arr, "counts", method)
    with np.errstate(over="ignore"):
        total = float(arr.sum())
    if not math.isfinite(total):  # counts >= 0: every block's count is finite when the total is
        raise ValueError("counts are too large: their total overflows a float")
    if method == "discrete_laplace" and total > 2.0**53:
        raise ValueError(f"counts are too large: their total must be at most 2**53, got {total!r}")
    eps = check_epsilon(epsilon)
    frac = check_probability(tree_fraction, "tree_fraction", low_open=True, high_open=True)
    eps1, eps2 = frac * eps, (1.0 - frac) * eps
    beta = 2
    if eps1 == 0.0 or not math.isfinite((2 * beta - 1) / eps1) or not math.isfinite(1.0 / eps2):
        # the split noise Lap(3 / eps1) and the block noise of scale 1 / eps2 need finite scales
        which = "tree_fraction" if frac < 0.5 else "1 - tree_fraction"
        raise ValueError(
            f"epsilon is too small for the noise scales 3 / (tree_fraction * epsilon) and "
            f"1 / ((1 - tree_fraction) * epsilon) to be representable as floats ({which} * epsilon "
            f"underflows), got epsilon={epsilon!r}, tree_fraction={tree_fraction!r}"
        )
    block_scale = noise_scale(1, eps2) if method == "discrete_laplace" else 1.0 / eps2
    generator = as_generator(rng)
    lam = (2 * beta - 1) / ((beta - 1) * eps1)
    delta = lam * math.log(beta)
    theta = 0.0

    d = arr.ndim
    corners = _corners(d)
    with np.errstate(over="ignore", invalid="ignore"):
        table = _summed_area(arr)
    shape = np.array(arr.shape, dtype=np.int64)
    lo, hi = np.zeros((1, d), dtype=np.int64), shape[None, :].copy()
    done_lo, done_hi = [], []
    depth = 0
    while lo.shape[0]:
        sizes = hi - lo
        splittable = sizes.max(axis=1) > 1
        done_lo.append(lo[~splittable])
        done_hi.append(hi[~splittable])
        lo, hi, sizes = lo[splittable], hi[splittable], sizes[splittable]
        if not lo.shape[0]:
            break
        count = _box_sums(table, lo, hi, corners)
        biased = np.maximum(count - depth * delta, theta - delta)
        split = biased + generator.laplace(0.0, lam, size=lo.shape[0]) > theta
        done_lo.append(lo[~split])
        done_hi.append(hi[~split])
        lo, hi, sizes = lo[split], hi[split], sizes[split]
        rows = np.arange(lo.shape[0])
        axis = np.argmax(sizes, axis=1)
        mid = (lo[rows, axis] + hi[rows, axis]) // 2
        first_hi, second_lo = hi.copy(), lo.copy()
        first_hi[rows, axis] = mid
        second_lo[rows, axis] = mid
        lo, hi = np.concatenate([lo, second_lo]), np.concatenate([first_hi, hi])
        depth += 1
    block_lo, block_hi = np.concatenate(done_lo), np.concatenate(done_hi)
    block_counts = _box_sums(table, block_lo, block_hi, corners)
    if method == "discrete_laplace":
        block_counts = np.rint(block_counts)  # exact already: integer partial sums below 2**53
    noisy = add_count_noise(block_counts, block_scale, method, generator, eps)
    check_representable(noisy, "the noise", eps)
    cells = np.prod(block_hi - block_lo, axis=1).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        per_cell = noisy / cells
    if not np.all(np.isfinite(per_cell)):  # counts and noise both near the float maximum
        raise ValueError("counts are too large: a block's count plus its noise overflows a float")
    estimate = per_cell[_block_ids(arr.shape, block_lo, block_hi, corners)]
    blocks = [
        tuple(zip(a.tolist(), b.tolist(), strict=True)) for a, b in zip(block_lo, block_hi, strict=True)
    ]
    return estimate, blocks
