"""Noisy counts on a hierarchy: TopDown-style consistency and hierarchical range queries.

Two uses of the same idea, a tree of counts in which every person is counted once per level:

* **A geographic hierarchy** (state, counties, blocks; the 2020 US Census): noisy counts at
  every level, then post-processed so that they are non-negative integers-or-reals that add up
  (every parent equals the sum of its children). :func:`noisy_tree_counts` releases the counts,
  :func:`project_to_total` is the one-parent least-squares step and :func:`topdown_consistent`
  applies it from the root down, as the Census Bureau's TopDown algorithm does (Abowd et al.
  2022), in a much simplified form (one noisy count per node, plain least squares, no integer
  rounding, no invariants other than an optional root total).
* **A regular tree over an ordered domain** (a 1-d histogram, or a d-dimensional grid cut in
  ``branching`` pieces along each axis): :func:`hierarchical_histogram` releases every node of
  the tree, and a range query is answered from the few nodes that cover it exactly
  (:func:`range_decomposition`: at most ``2 (b - 1)`` nodes per level in 1-d), optionally after
  the constrained inference of Hay, Rastogi, Miklau & Suciu (2010)
  (:func:`constrained_inference`).

Privacy (add/remove one person, counts of people): a person is in exactly one node per level,
so with ``L`` levels the vector of all node counts has L1 sensitivity ``L``, and noise of scale
``L / epsilon`` on every node is epsilon-DP (sequential composition over the levels, parallel
composition within a level). Everything after the noise is post-processing. The noise is
discrete Laplace by default (integer counts stay integers, so no output rules a neighbour out:
the floating-point attack of Mironov 2012 does not apply; see :mod:`dplib.mechanisms._count_noise`);
``mechanism="laplace"`` gives the textbook floating-point Laplace noise, for teaching only.

References
----------
.. [HRMS10] M. Hay, V. Rastogi, G. Miklau, D. Suciu, "Boosting the Accuracy of Differentially
   Private Histograms Through Consistency", PVLDB 3(1), 2010, Section 4 and Theorem 3.
.. [A22] J. Abowd et al., "The 2020 Census Disclosure Avoidance System TopDown Algorithm",
   Harvard Data Science Review, 2022.
.. [DSSU] J. Duchi, S. Shalev-Shwartz, Y. Singer, T. Chandra, "Efficient projections onto the
   l1-ball for learning in high dimensions", ICML 2008, Figure 1 (projection onto the simplex).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_data,
    check_epsilon,
    check_integer,
    check_real,
    check_representable,
)
from dplib.mechanisms._count_noise import (
    add_count_noise,
    check_count_mechanism,
    check_counts,
    noise_scale,
    noise_variance,
)

__all__ = [
    "aggregate_tree",
    "noisy_tree_counts",
    "project_to_total",
    "topdown_consistent",
    "tree_levels",
    "range_decomposition",
    "constrained_inference",
    "HierarchicalHistogram",
    "hierarchical_histogram",
]

#: Largest number of leaves of a regular tree (memory guard).
_MAX_LEAVES = 2**24
#: range_decomposition: at most 2**62 leaves per axis (indices stay int64), 2**16 children per
#: node, and 2**22 nodes examined per level (the work of one level, about a second at most).
_MAX_SIDE_BITS = 62
_MAX_CHILD_BITS = 16
_MAX_FRONTIER = 2**22


# --------------------------------------------------------------------------- general trees


def _check_parents_list(parents: Any) -> None:
    if not isinstance(parents, Sequence) or isinstance(parents, str | bytes):
        raise TypeError(
            "parents must be a list of integer arrays, one per level below the root, "
            f"got {type(parents).__name__}"
        )


def _check_parents(parents: Any, n_leaves: int) -> list[np.ndarray]:
    _check_parents_list(parents)
    out = []
    size_above = 1
    for level, p in enumerate(parents):
        arr = check_data(p, f"parents[{level}]", dtype=float, ndim=1)
        if np.any(arr != np.round(arr)):
            raise ValueError(f"parents[{level}] must hold integer node indices")
        arr = arr.astype(np.int64)
        if np.any(arr < 0) or np.any(arr >= size_above):
            raise ValueError(
                f"parents[{level}] must hold indices of nodes of level {level} in [0, {size_above}), "
                f"got values in [{arr.min()}, {arr.max()}]"
            )
        if np.unique(arr).size != size_above:
            raise ValueError(f"every node of level {level} must have at least one child in parents[{level}]")
        out.append(arr)
        size_above = arr.size
    if size_above != n_leaves:
        raise ValueError(
            f"the last parents array must have one entry per leaf ({n_leaves}), got {size_above}"
        )
    return out


def aggregate_tree(leaf_counts: Any, parents: Sequence[Any]) -> list[np.ndarray]:
    """Exact counts of every node of a tree, from the counts of its leaves.

    Parameters
    ----------
    leaf_counts : array_like, 1-d
        Count of each leaf (e.g. each census block), finite.
    parents : list of 1-d integer arrays
        ``parents[l][i]`` is the index (within level ``l``) of the parent of node ``i`` of level
        ``l + 1``. Level 0 is a single root; the last array has one entry per leaf. Every node
        above the leaves must have at least one child.

    Returns
    -------
    list of numpy.ndarray
        ``levels[0]`` (shape ``(1,)``, the root) to ``levels[-1]`` (the leaves, a float copy).

    Raises
    ------
    ValueError, TypeError
        For empty or non-finite counts and malformed ``parents``.
    """
    leaves = check_data(leaf_counts, "leaf_counts", ndim=1)
    pars = _check_parents(parents, leaves.size)
    levels = [leaves.copy()]
    for level in range(len(pars) - 1, -1, -1):
        size = 1 if level == 0 else pars[level - 1].size
        levels.append(np.bincount(pars[level], weights=levels[-1], minlength=size))
    return levels[::-1]


def noisy_tree_counts(
    leaf_counts: Any,
    parents: Sequence[Any],
    epsilon: float,
    *,
    mechanism: str = "discrete_laplace",
    rng: Any = None,
) -> list[np.ndarray]:
    """Noise of scale ``L / epsilon`` on every node of an ``L``-level tree of counts.

    Parameters
    ----------
    leaf_counts, parents
        As in :func:`aggregate_tree`; the counts are counts of people, each person in one leaf:
        integers in ``[0, 2**53]`` (any reals ``>= 0`` for ``mechanism="laplace"``).
    epsilon : float
        Total budget, finite and > 0, split equally over the ``L = len(parents) + 1`` levels
        (``L / epsilon <= 2**40`` for the default mechanism).
    mechanism : {"discrete_laplace", "laplace"}, keyword-only
        ``"discrete_laplace"`` (default): discrete Laplace noise of scale ``L / epsilon``, so every
        noisy count is an integer (stored as a float) whatever the data, and the floating-point
        attack of Mironov (2012) has nothing to grip on. ``"laplace"``: the textbook
        ``count + Lap(L / epsilon)`` on doubles, for teaching only (its low-order bits can rule
        a neighbouring dataset out).
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness.

    Returns
    -------
    list of numpy.ndarray
        Noisy counts per level (root first), each node with its own independent noise.

    Raises
    ------
    ValueError, TypeError
        For malformed counts or ``parents`` (also negative counts, and non-integer counts for the
        default mechanism), a bad ``epsilon`` or ``mechanism``. Nothing is drawn then.

    Notes
    -----
    Add/remove one person changes one node per level by 1: the L1 sensitivity of all node
    counts together is ``L``, so noise of scale ``L / epsilon`` per node is epsilon-DP (Dwork &
    Roth 2014, Theorem 3.6 for Laplace; Ghosh, Roughgarden & Sundararajan 2009 for the discrete
    Laplace); equivalently each level spends ``epsilon / L`` (sequential composition) and the
    nodes of one level are disjoint (parallel composition). The discrete noise has variance
    ``1 / (2 sinh(epsilon / (2 L))**2)``, slightly below the textbook ``2 (L / epsilon)**2``.
    """
    method = check_count_mechanism(mechanism)
    levels = aggregate_tree(leaf_counts, parents)
    check_counts(levels[-1], "leaf_counts", method)
    eps = check_epsilon(epsilon)
    with np.errstate(over="ignore"):
        total = float(np.sum(levels[-1]))
    if not math.isfinite(total) or (method == "discrete_laplace" and total > 2.0**53):
        raise ValueError(
            "leaf_counts are too large: the root count (their sum) must be at most 2**53, "
            f"got {total!r}"
        )
    scale = noise_scale(len(levels), eps) if method == "discrete_laplace" else check_representable(
        len(levels) / eps, "the noise scale L / epsilon", eps
    )
    generator = as_generator(rng)
    return [add_count_noise(lv, scale, method, generator, eps) for lv in levels]


def project_to_total(values: Any, total: float) -> np.ndarray:
    """Closest non-negative vector (least squares) whose entries add up to ``total``.

    Parameters
    ----------
    values : array_like, 1-d
        Noisy counts of the children of one node, finite, not empty.
    total : float
        The (already consistent) count of the parent, finite and ``>= 0``.

    Returns
    -------
    numpy.ndarray
        ``argmin ||x - values||_2`` subject to ``x >= 0`` and ``sum(x) = total``, a new array:
        ``x = max(values - tau, 0)`` with the unique ``tau`` that makes the sum right.

    Raises
    ------
    ValueError, TypeError
        For empty, non-finite or non-numeric ``values``, or ``total`` negative or not finite.

    Notes
    -----
    The Euclidean projection onto the scaled simplex (Duchi et al. 2008, Figure 1): sort
    ``values`` in decreasing order as ``u``, let ``rho`` be the largest ``j`` with
    ``u_j - (sum_{i <= j} u_i - total) / j > 0`` and ``tau = (sum_{i <= rho} u_i - total) / rho``.
    The KKT conditions of the problem give exactly this form (one multiplier ``tau`` for the sum,
    and ``x_i = 0`` wherever ``values_i <= tau``). ``total = 0`` gives all zeros.

    Examples
    --------
    >>> project_to_total([5.0, -1.0, 2.0], 6.0).tolist()
    [4.5, 0.0, 1.5]
    """
    v = check_data(values, "values", ndim=1)
    t = check_real(total, "total", minimum=0.0)
    if t == 0.0:
        return np.zeros_like(v)
    u = np.sort(v)[::-1]
    with np.errstate(over="ignore", invalid="ignore"):
        css = np.cumsum(u) - t
    if not np.all(np.isfinite(css)):
        raise ValueError("values are too large: their sum overflows a float")
    j = np.arange(1, u.size + 1)
    # j = 1 always qualifies in exact arithmetic (u_1 - (u_1 - total) = total > 0), but not in
    # floating point when total is below the rounding of u_1: then rho = 0.
    above = np.nonzero(u - css / j > 0)[0]
    rho = int(above[-1]) if above.size else 0
    tau = css[rho] / (rho + 1)
    out = np.maximum(v - tau, 0.0)
    return out


def topdown_consistent(
    noisy_levels: Sequence[Any], parents: Sequence[Any], *, root_total: float | None = None
) -> list[np.ndarray]:
    """Make noisy tree counts non-negative and consistent, from the root down.

    Parameters
    ----------
    noisy_levels : list of 1-d arrays
        Noisy counts per level, root first (as from :func:`noisy_tree_counts`).
    parents : list of 1-d integer arrays
        The tree, as in :func:`aggregate_tree`.
    root_total : float, optional
        A public total for the root (an *invariant*, as the Census holds state populations
        exactly); by default the noisy root count clipped at 0.

    Returns
    -------
    list of numpy.ndarray
        New arrays: every entry ``>= 0`` and every parent equal to the sum of its children.

    Notes
    -----
    TopDown (Abowd et al. 2022) in its simplest form: fix the root, then for each node, replace
    its children's noisy counts by the closest (least squares) non-negative vector that adds up
    to the node's consistent count (:func:`project_to_total`), level after level. Pure
    post-processing: no privacy cost. The non-negativity makes the estimates biased (small
    counts pushed up, large ones down), the price of publishing plausible tables.
    """
    _check_parents_list(parents)
    if not isinstance(noisy_levels, Sequence) or len(noisy_levels) != len(parents) + 1:
        got = len(noisy_levels) if isinstance(noisy_levels, Sequence) else type(noisy_levels).__name__
        raise ValueError(
            "noisy_levels must be a list with one array per level: len(parents) + 1 = "
            f"{len(parents) + 1} arrays, got {got}"
        )
    levels = [check_data(lv, f"noisy_levels[{i}]", ndim=1) for i, lv in enumerate(noisy_levels)]
    for i, lv in enumerate(levels):
        with np.errstate(over="ignore"):
            overflows = not np.isfinite(np.abs(lv).sum())
        if overflows:
            raise ValueError(f"noisy_levels[{i}] is too large: the sum of its counts overflows a float")
    pars = _check_parents(parents, levels[-1].size)
    for i, lv in enumerate(levels[:-1]):
        expected = 1 if i == 0 else pars[i - 1].size
        if lv.size != expected:
            raise ValueError(f"noisy_levels[{i}] must have {expected} entries, got {lv.size}")
    root = max(float(levels[0][0]), 0.0) if root_total is None else check_real(root_total, "root_total", minimum=0.0)
    out = [np.array([root])]
    for level, par in enumerate(pars):
        # the children of each node, grouped once (a scan per node would cost nodes x children)
        order = np.argsort(par, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(par, minlength=out[level].size))])
        children = np.empty(par.size)
        for node, total in enumerate(out[level].tolist()):
            idx = order[bounds[node] : bounds[node + 1]]
            children[idx] = project_to_total(levels[level + 1][idx], total)
        out.append(children)
    return out


# --------------------------------------------------------------------------- regular trees


def _check_regular(counts: Any, branching: int) -> tuple[np.ndarray, int, int]:
    arr = check_data(counts, "counts")
    if arr.ndim == 0:
        raise ValueError(
            "counts must be an array with at least 1 dimension (a histogram or a grid of counts), "
            f"got the scalar {counts!r}: wrap a single count in a list"
        )
    b = check_integer(branching, "branching", minimum=2)
    side = arr.shape[0]
    if any(s != side for s in arr.shape):
        raise ValueError(f"counts must have the same length along every axis, got shape {arr.shape}")
    height = round(math.log(side, b)) if side > 1 else 0
    if b**height != side:
        raise ValueError(
            f"counts must have a power of branching = {b} cells along each axis (pad with zeros), "
            f"got {side}"
        )
    if arr.size > _MAX_LEAVES:
        raise ValueError(f"counts must have at most 2**24 cells, got {arr.size}")
    return arr, b, height


def _parent_level(child: np.ndarray, b: int) -> np.ndarray:
    """Sum blocks of ``b`` along every axis."""
    d = child.ndim
    side = child.shape[0] // b
    shaped = child.reshape(sum(((side, b) for _ in range(d)), ()))
    return shaped.sum(axis=tuple(range(1, 2 * d, 2)))


def _spread(parent: np.ndarray, b: int) -> np.ndarray:
    """Repeat every entry ``b`` times along every axis (parent value to each child)."""
    out = parent
    for axis in range(parent.ndim):
        out = np.repeat(out, b, axis=axis)
    return out


def tree_levels(counts: Any, branching: int = 2) -> list[np.ndarray]:
    """Exact counts of every node of the regular ``branching``-ary tree over a grid.

    Parameters
    ----------
    counts : array_like
        A 1-d histogram or a d-dimensional grid of counts with ``branching**h`` cells along
        every axis.
    branching : int, default 2
        Pieces each node is cut into along each axis (a node has ``branching**d`` children).

    Returns
    -------
    list of numpy.ndarray
        ``levels[l]`` has shape ``(branching**l,) * d``: level 0 is the total, level ``h`` the
        grid itself (a float copy).
    """
    arr, b, height = _check_regular(counts, branching)
    levels = [arr.copy()]
    for _ in range(height):
        levels.append(_parent_level(levels[-1], b))
    return levels[::-1]


def _check_box(lows: Any, highs: Any, d: int, side: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    lo = (lows,) if np.ndim(lows) == 0 else tuple(lows)
    hi = (highs,) if np.ndim(highs) == 0 else tuple(highs)
    if len(lo) != d or len(hi) != d:
        raise ValueError(f"lows and highs must give one bound per axis ({d}), got {lo} and {hi}")
    lo = tuple(check_integer(v, "lows") for v in lo)
    hi = tuple(check_integer(v, "highs") for v in hi)
    for a, c in zip(lo, hi, strict=True):
        if not 0 <= a <= c <= side:
            raise ValueError(f"need 0 <= low <= high <= {side} on every axis, got lows={lo}, highs={hi}")
    return lo, hi


def range_decomposition(
    lows: Any, highs: Any, height: int, branching: int = 2, ndim: int = 1
) -> list[tuple[int, tuple[int, ...]]]:
    """Fewest tree nodes whose cells make up exactly the box ``[lows, highs)``.

    Parameters
    ----------
    lows, highs : int or sequence of int
        Half-open bounds of the box in leaf coordinates, ``0 <= low <= high <= branching**height``
        on each axis (one int each in 1-d).
    height : int
        Height ``h >= 0`` of the tree (leaves at level ``h``).
    branching : int, default 2
        Pieces per axis at each split.
    ndim : int, default 1
        Number of axes ``d``.

    Raises
    ------
    ValueError, TypeError
        For bounds outside the tree, ``branching**height > 2**62``, ``branching**ndim > 2**16``,
        or a box whose cover would examine more than ``2**22`` nodes at one level.

    Returns
    -------
    list of (level, index) pairs
        ``index`` is a tuple of ``d`` ints, in depth-first order. Greedy from the root: a node inside the box is taken
        whole, a node meeting it partly is replaced by its children. In 1-d this uses at most
        ``2 (branching - 1)`` nodes per level ([HRMS10], Section 3): O(log n) in all.

    Notes
    -----
    The greedy cover is the smallest: a node of a cover that is not maximal (its parent lies
    inside the box too) can be replaced, with all its siblings, by that parent, which never
    increases the count; so some smallest cover consists of maximal nodes only, and the maximal
    nodes inside a box are disjoint and unique, which is what the greedy cover takes.

    Examples
    --------
    >>> range_decomposition(1, 7, height=3)
    [(3, (1,)), (2, (1,)), (2, (2,)), (3, (6,))]
    """
    h = check_integer(height, "height", minimum=0)
    b = check_integer(branching, "branching", minimum=2)
    d = check_integer(ndim, "ndim", minimum=1)
    if h * math.log2(b) > _MAX_SIDE_BITS:
        raise ValueError(
            f"height and branching must give at most 2**{_MAX_SIDE_BITS} leaves per axis "
            f"(branching**height), got height={height!r}, branching={branching!r}"
        )
    if d * math.log2(b) > _MAX_CHILD_BITS:
        raise ValueError(
            f"ndim and branching must give at most 2**{_MAX_CHILD_BITS} children per node "
            f"(branching**ndim), got ndim={ndim!r}, branching={branching!r}"
        )
    side = b**h
    lo, hi = _check_box(lows, highs, d, side)
    if any(a == c for a, c in zip(lo, hi, strict=True)):
        return []
    low, high = np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)
    offsets = np.array(list(itertools.product(range(b), repeat=d)), dtype=np.int64)
    frontier = np.zeros((1, d), dtype=np.int64)
    found: list[tuple[int, np.ndarray]] = []
    # Breadth first, all the nodes of a level at once: a node inside the box is taken whole, a
    # node meeting it partly is replaced by its children (the greedy cover of the docstring).
    for level in range(h + 1):
        width = b ** (h - level)
        start = frontier * width
        stop = start + width
        meets = np.all((start < high) & (stop > low), axis=1)
        inside = meets & np.all((low <= start) & (stop <= high), axis=1)
        if inside.any():
            found.append((level, frontier[inside]))
        partial = frontier[meets & ~inside]
        if not partial.shape[0]:
            break
        if partial.shape[0] * offsets.shape[0] > _MAX_FRONTIER:
            raise ValueError(
                f"the box [lows, highs) = [{lo}, {hi}) needs more than {_MAX_FRONTIER} tree nodes "
                f"at one level (ndim={d}, branching={b}): use fewer axes or a coarser tree"
            )
        frontier = (b * partial[:, None, :] + offsets[None, :, :]).reshape(-1, d)
    if not found:
        return []
    # Depth-first order (as a recursive greedy would list them): by the leaf cell at each node's
    # corner, read as base-b digits from the root down, the axes' digits interleaved per level.
    levels = np.concatenate([np.full(idx.shape[0], lv, dtype=np.int64) for lv, idx in found])
    nodes = np.concatenate([idx for _, idx in found])
    corners = nodes * (b ** (h - levels))[:, None]
    keys = []
    for depth in range(h, 0, -1):  # np.lexsort: the last key is the primary one
        digits = (corners // b ** (h - depth)) % b
        keys.append(digits @ (b ** np.arange(d - 1, -1, -1, dtype=np.int64)))
    order = np.lexsort(keys) if keys else np.arange(nodes.shape[0])
    return [(int(levels[i]), tuple(int(v) for v in nodes[i])) for i in order]


def constrained_inference(levels: Sequence[Any], branching: int = 2) -> list[np.ndarray]:
    """Least-squares consistent estimates from noisy counts of a regular tree ([HRMS10]).

    Parameters
    ----------
    levels : list of arrays
        Noisy counts, ``levels[l]`` of shape ``(branching**l,) * d``, all with noise of the same
        variance (as :func:`hierarchical_histogram` adds).
    branching : int, default 2
        Pieces per axis; every node has ``k = branching**d`` children.

    Returns
    -------
    list of numpy.ndarray
        The consistent tree closest to ``levels`` in least squares (every parent equals the sum
        of its children), by [HRMS10] Theorem 3: bottom up
        ``z[v] = (k**l - k**(l-1)) / (k**l - 1) * h[v] + (k**(l-1) - 1) / (k**l - 1) * sum z[children]``
        (``l`` = height of ``v``, leaves ``l = 1``, ``z = h`` there), then top down
        ``hbar[v] = z[v] + (hbar[parent] - sum z[siblings and v]) / k``.
        Post-processing: no privacy cost. Entries may be negative.
    """
    b = check_integer(branching, "branching", minimum=2)
    arrs = [check_data(lv, f"levels[{i}]") for i, lv in enumerate(levels)]
    if not arrs:
        raise ValueError("levels must not be empty")
    d = arrs[-1].ndim
    for i, lv in enumerate(arrs):
        if lv.shape != (b**i,) * d:
            raise ValueError(f"levels[{i}] must have shape {(b**i,) * d}, got {lv.shape}")
    for i, lv in enumerate(arrs):
        with np.errstate(over="ignore"):
            overflows = not np.isfinite(np.abs(lv).sum())
        if overflows:
            raise ValueError(f"levels[{i}] is too large: the sum of its counts overflows a float")
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused below
        k = b**d
        height = len(arrs) - 1
        z = [None] * len(arrs)
        z[height] = arrs[height].copy()
        for level in range(height - 1, -1, -1):
            ell = height - level + 1  # height of the node above the leaves (leaves: 1)
            child_sum = _parent_level(z[level + 1], b)
            z[level] = ((k**ell - k ** (ell - 1)) * arrs[level] + (k ** (ell - 1) - 1) * child_sum) / (k**ell - 1)
        out = [z[0].copy()]
        for level in range(1, len(arrs)):
            sibling_sum = _spread(_parent_level(z[level], b), b)
            out.append(z[level] + (_spread(out[level - 1], b) - sibling_sum) / k)
    if not all(np.all(np.isfinite(lv)) for lv in out):
        raise ValueError("levels are too large: the weighted sums of counts overflow a float")
    return out


@dataclass(frozen=True)
class HierarchicalHistogram:
    """Noisy counts of every node of a regular tree, and range queries answered from them.

    Attributes
    ----------
    levels : tuple of numpy.ndarray
        Released counts per level, root first (``levels[l]`` of shape ``(branching**l,) * d``).
    branching : int
        Pieces per axis at each split.
    scale : float
        Scale of the noise on every node, ``L / epsilon``.
    consistent : bool
        Whether constrained inference was applied (then any cover of a range gives the same
        answer, and leaves suffice).
    mechanism : str
        ``"discrete_laplace"`` (integer noise, the default) or ``"laplace"`` (textbook).
    """

    levels: tuple[np.ndarray, ...]
    branching: int
    scale: float
    consistent: bool
    mechanism: str = "discrete_laplace"

    @property
    def height(self) -> int:
        """Height of the tree: the leaves are at level ``height``."""
        return len(self.levels) - 1

    @property
    def node_variance(self) -> float:
        """Variance of the noise on one node (before constrained inference).

        ``1 / (2 sinh(1 / (2 scale))**2)`` for the discrete Laplace (Inusah & Kozubowski 2006:
        ``2 q / (1 - q)**2`` with ``q = exp(-1 / scale)``), a little below the textbook
        ``2 scale**2`` (by less than 1/6); ``2 scale**2`` for ``mechanism="laplace"``.
        """
        return noise_variance(self.scale, self.mechanism)

    def range_query(self, lows: Any, highs: Any) -> float:
        """Estimated count of the box ``[lows, highs)``, summed over its :func:`range_decomposition`."""
        nodes = range_decomposition(lows, highs, self.height, self.branching, self.levels[-1].ndim)
        return float(sum(self.levels[level][index] for level, index in nodes))


def hierarchical_histogram(
    counts: Any,
    epsilon: float,
    *,
    branching: int = 2,
    constrained: bool = False,
    mechanism: str = "discrete_laplace",
    rng: Any = None,
) -> HierarchicalHistogram:
    """Release every node of the regular tree over a histogram with noise of scale ``L / epsilon``.

    Parameters
    ----------
    counts : array_like
        Counts of people, a 1-d histogram or a d-dimensional grid with ``branching**h`` cells
        per axis (pad with zeros). Each person is in one cell. Counts are ``>= 0``, integers
        with a total of at most ``2**53`` for the default mechanism (any finite reals ``>= 0``
        for ``mechanism="laplace"``).
    epsilon : float
        Total budget, finite and > 0 (``L / epsilon <= 2**40`` for the default mechanism).
    branching : int, keyword-only, default 2
        Pieces per axis at each split.
    constrained : bool, keyword-only, default False
        Apply :func:`constrained_inference` ([HRMS10]) to the noisy tree.
    mechanism : {"discrete_laplace", "laplace"}, keyword-only
        ``"discrete_laplace"`` (default): discrete Laplace noise of scale ``L / epsilon`` on every
        node, so the released node counts are integers whatever the data (safe from the
        floating-point attack of Mironov 2012). ``"laplace"``: the textbook floating-point
        ``Lap(L / epsilon)``, for teaching only: its low-order bits can rule a neighbouring
        histogram out.
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness.

    Returns
    -------
    HierarchicalHistogram

    Raises
    ------
    ValueError, TypeError
        For malformed or negative counts (non-integer ones for the default mechanism), a bad
        ``epsilon``, ``branching``, ``constrained`` or ``mechanism``. Nothing is drawn then.

    Notes
    -----
    ``L = h + 1`` levels; add/remove one person changes one node per level by 1, so the L1
    sensitivity of the whole tree is ``L`` and noise of scale ``L / epsilon`` on every node,
    independently, is epsilon-DP ([HRMS10], Section 3; Dwork & Roth 2014, Theorem 3.6; Ghosh,
    Roughgarden & Sundararajan 2009 for the discrete Laplace). The variance per node is
    :attr:`HierarchicalHistogram.node_variance`, at most the textbook ``2 (L / epsilon)**2``. A 1-d
    range then costs the variance of O(log n) nodes instead of up to n leaves; in d dimensions a
    box still needs O(side**(d-1)) nodes, which is why hierarchies help less there.
    """
    method = check_count_mechanism(mechanism)
    arr, b, _height = _check_regular(counts, branching)
    check_counts(arr, "counts", method)
    eps = check_epsilon(epsilon)
    if not isinstance(constrained, bool | np.bool_):
        raise TypeError(f"constrained must be True or False, got {constrained!r}")
    with np.errstate(over="ignore", invalid="ignore"):
        levels = tree_levels(arr, b)
    root = float(levels[0].flat[0])
    if not math.isfinite(root) or (method == "discrete_laplace" and root > 2.0**53):
        raise ValueError(
            "counts are too large: the root count (their total) must be at most "
            f"{'2**53' if method == 'discrete_laplace' else 'the float maximum'}, got {root!r}"
        )
    if method == "discrete_laplace":
        scale = noise_scale(len(levels), eps)
    else:
        scale = check_representable(len(levels) / eps, "the noise scale L / epsilon", eps)
    generator = as_generator(rng)
    noisy = [add_count_noise(lv, scale, method, generator, eps) for lv in levels]
    if constrained:
        with np.errstate(over="ignore", invalid="ignore"):
            noisy = constrained_inference(noisy, b)
    if not all(np.all(np.isfinite(lv)) for lv in noisy):
        # counts near the float maximum (textbook mechanism), or noise of a huge scale
        largest = max(float(np.max(np.abs(lv))) for lv in levels)
        if largest >= scale:
            raise ValueError(f"counts are too large: the noisy counts overflow a float (largest {largest:g})")
        check_representable(math.inf, "the noisy counts", eps)
    return HierarchicalHistogram(tuple(noisy), b, scale, bool(constrained), method)
