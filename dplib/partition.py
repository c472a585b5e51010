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

__all__ = ["privtree_histogram"]

#: Largest number of cells of the grid (memory guard).
_MAX_CELLS = 2**24


def privtree_histogram(
    counts: Any,
    epsilon: float,
    *,
    tree_fraction: float = 0.5,
    rng: Any = None,
) -> tuple[np.ndarray, list[tuple[tuple[int, int], ...]]]:
    """Estimate a grid of counts from a PrivTree partition and one noisy count per block.

    Parameters
    ----------
    counts : array_like
        Counts of people on a grid (any number of axes), each person in one cell; ``>= 0``.
    epsilon : float
        Total budget, finite and > 0.
    tree_fraction : float, keyword-only, default 0.5
        Share of ``epsilon`` spent choosing the partition, in (0, 1); the rest measures the
        blocks.
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness.

    Returns
    -------
    estimate : numpy.ndarray
        Same shape as ``counts``: each block's noisy count spread uniformly over its cells.
    blocks : list
        The blocks of the partition, each a tuple of ``(start, stop)`` per axis.

    Raises
    ------
    ValueError, TypeError
        For negative, non-finite or empty counts, a bad ``epsilon`` or ``tree_fraction``.

    Notes
    -----
    [ZXX16] Algorithm 2 with fanout ``beta = 2`` (a block is halved along its longest axis):
    with ``eps1 = tree_fraction * epsilon``, ``lambda = (2 beta - 1) / ((beta - 1) eps1) = 3 / eps1``,
    ``delta = lambda ln beta`` and threshold ``theta = 0``, a block ``v`` at depth ``dep(v)`` is
    split when ``max(c(v) - dep(v) delta, theta - delta) + Lap(lambda) > theta``. Theorem 1:
    the partition is eps1-DP under add/remove one person, whatever its depth. Blocks of one cell
    are never split (a rule that looks at the domain only). The blocks are disjoint, so
    ``Lap(1 / eps2)`` on each block's count is eps2-DP (parallel composition), with
    ``eps2 = epsilon - eps1``; the total is epsilon (sequential composition). The uniform spread
    within a block is post-processing.
    """
    arr = check_data(counts, "counts")
    if arr.ndim == 0:
        raise ValueError(
            "counts must be an array with at least 1 dimension (a grid of counts), "
            f"got the scalar {counts!r}: wrap a single count in a list"
        )
    if np.any(arr < 0):
        raise ValueError("counts must be >= 0 (counts of people)")
    if arr.size > _MAX_CELLS:
        raise ValueError(f"counts must have at most 2**24 cells, got {arr.size}")
    with np.errstate(over="ignore"):
        total = float(arr.sum())
    if not math.isfinite(total):  # counts >= 0: every block's count is finite when the total is
        raise ValueError("counts are too large: their total overflows a float")
    eps = check_epsilon(epsilon)
    frac = check_probability(tree_fraction, "tree_fraction", low_open=True, high_open=True)
    generator = as_generator(rng)
    eps1, eps2 = frac * eps, (1.0 - frac) * eps
    beta = 2
    if eps1 == 0.0 or not math.isfinite((2 * beta - 1) / eps1) or not math.isfinite(1.0 / eps2):
        # the split noise Lap(3 / eps1) and the block noise Lap(1 / eps2) need finite scales
        which = "tree_fraction" if frac < 0.5 else "1 - tree_fraction"
        raise ValueError(
            f"epsilon is too small for the noise scales 3 / (tree_fraction * epsilon) and "
            f"1 / ((1 - tree_fraction) * epsilon) to be representable as floats ({which} * epsilon "
            f"underflows), got epsilon={epsilon!r}, tree_fraction={tree_fraction!r}"
        )
    lam = (2 * beta - 1) / ((beta - 1) * eps1)
    delta = lam * math.log(beta)
    theta = 0.0

    blocks: list[tuple[tuple[int, int], ...]] = []
    todo = [(tuple((0, s) for s in arr.shape), 0)]
    while todo:
        box, depth = todo.pop()
        sizes = [b - a for a, b in box]
        if max(sizes) == 1:
            blocks.append(box)
            continue
        count = float(arr[tuple(slice(a, b) for a, b in box)].sum())
        biased = max(count - depth * delta, theta - delta)
        if biased + generator.laplace(0.0, lam) > theta:
            axis = int(np.argmax(sizes))
            a, b = box[axis]
            mid = (a + b) // 2
            for half in ((a, mid), (mid, b)):
                todo.append((box[:axis] + (half,) + box[axis + 1 :], depth + 1))
        else:
            blocks.append(box)
    estimate = np.zeros_like(arr, dtype=float)
    noise = check_representable(generator.laplace(0.0, 1.0 / eps2, size=len(blocks)), "the noise", eps)
    for box, z in zip(blocks, noise, strict=False):
        region = tuple(slice(a, b) for a, b in box)
        cells = math.prod(b - a for a, b in box)
        estimate[region] = (float(arr[region].sum()) + z) / cells
    if not np.all(np.isfinite(estimate)):  # counts and noise both near the float maximum
        raise ValueError("counts are too large: a block's count plus its noise overflows a float")
    return estimate, blocks
