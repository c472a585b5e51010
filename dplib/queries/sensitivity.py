"""Global sensitivities of the everyday queries under the two neighbouring relations.

``"add_remove"`` (unbounded DP): neighbours differ by adding or removing one person's record.
``"replace"`` (bounded DP): neighbours have the same size and differ in one person's record.
A replacement is a removal followed by an addition, so replace-one sensitivities are at most twice
the add/remove ones (Dwork & Roth 2014, Definition 2.4 and the remark after it; Kifer &
Machanavajjhala 2011, "No free lunch in data privacy").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import check_bounds, check_data, check_integer

__all__ = [
    "NEIGHBOURING_RELATIONS",
    "check_neighbouring",
    "count_sensitivity",
    "histogram_sensitivity",
    "sum_sensitivity",
    "mean_sensitivity",
    "linear_query_sensitivity",
]

NEIGHBOURING_RELATIONS = ("add_remove", "replace")


def check_neighbouring(neighbouring: str) -> str:
    """Return ``neighbouring`` if it is ``"add_remove"`` or ``"replace"``.

    Raises
    ------
    TypeError
        If ``neighbouring`` is not a str.
    ValueError
        If it is another string.
    """
    if not isinstance(neighbouring, str):
        raise TypeError(
            f"neighbouring must be one of {NEIGHBOURING_RELATIONS}, got {type(neighbouring).__name__}"
        )
    if neighbouring not in NEIGHBOURING_RELATIONS:
        raise ValueError(
            f"neighbouring must be one of {NEIGHBOURING_RELATIONS}, got {neighbouring!r}"
        )
    return neighbouring


def count_sensitivity(neighbouring: str = "add_remove") -> float:
    """L1 sensitivity of a counting query ("how many records satisfy P?"): 1 for both relations.

    Adding or removing a record changes the count by at most 1; replacing one record can turn a
    record that satisfies P into one that does not, again by at most 1. (The *size* of the
    dataset has sensitivity 0 under replace-one: it is public there.)
    """
    check_neighbouring(neighbouring)
    return 1.0


def histogram_sensitivity(neighbouring: str = "add_remove") -> float:
    """L1 sensitivity of a histogram with disjoint bins: 1 (add/remove) or 2 (replace-one).

    A replacement moves one record from one bin to another: one count goes down by one and
    another goes up by one (Dwork & Roth 2014, Example 3.2).
    """
    return 1.0 if check_neighbouring(neighbouring) == "add_remove" else 2.0


def sum_sensitivity(lower: float, upper: float, neighbouring: str = "add_remove") -> float:
    """L1 sensitivity of the sum of values clamped to ``[lower, upper]``.

    ``max(|lower|, |upper|)`` under add/remove (one value appears or vanishes) and
    ``upper - lower`` under replace-one (one value moves across the whole range).
    """
    lo, hi = check_bounds(lower, upper)
    if check_neighbouring(neighbouring) == "add_remove":
        return max(abs(lo), abs(hi))
    return hi - lo


def mean_sensitivity(lower: float, upper: float, n: int, neighbouring: str = "replace") -> float:
    """L1 sensitivity of the mean of ``n`` values clamped to ``[lower, upper]``.

    ``(upper - lower) / n`` under replace-one, where ``n`` is public. Under add/remove the same
    bound holds with ``n`` the size of the larger of the two neighbours
    (``|mean(D + x) - mean(D)| = |x - mean(D)| / (n + 1)``), but ``n`` itself is then private, which
    is why :func:`dplib.private_mean` with ``neighbouring="add_remove"`` divides a noisy sum by a
    noisy count instead.
    """
    lo, hi = check_bounds(lower, upper)
    check_neighbouring(neighbouring)
    n = check_integer(n, "n", minimum=1)
    return (hi - lo) / n


#: Largest arithmetic work of the replace-one computation: the cheaper of ``d * d * m`` (every
#: pair of columns) and ``2**(m - 1) * d * m`` (every sign vector, see linear_query_sensitivity).
#: About a second at the cap.
_MAX_REPLACE_WORK = 2 * 10**8
#: Sign vectors projected at once in the sign-vector computation (bounds its memory).
_SIGN_CHUNK = 256


def _l1_diameter_by_signs(w: np.ndarray) -> float:
    """``max_{j,k} ||w[:, k] - w[:, j]||_1`` as ``max_s (max_k s.w_k - min_j s.w_j)``.

    ``||x||_1 = max over s in {-1, 1}^m of s.x``, so the L1 diameter of the columns is the largest
    spread of their projections on a sign vector; ``s`` and ``-s`` give the same spread, so the
    first sign is fixed to +1: ``2**(m - 1)`` projections of ``d`` columns.
    """
    m = w.shape[0]
    best = 0.0
    for first in range(0, 2 ** (m - 1), _SIGN_CHUNK):
        codes = np.arange(first, min(first + _SIGN_CHUNK, 2 ** (m - 1)), dtype=np.int64)
        bits = (codes[:, None] >> np.arange(m - 1, dtype=np.int64)) & 1
        signs = np.concatenate([np.ones((codes.size, 1)), 1.0 - 2.0 * bits], axis=1)
        projections = signs @ w
        best = max(best, float((projections.max(axis=1) - projections.min(axis=1)).max()))
    return best


def linear_query_sensitivity(queries: Any, neighbouring: str = "add_remove") -> float:
    r"""L1 sensitivity of a workload of linear queries answered on a histogram.

    The data is a histogram :math:`h \in \mathbb{R}^d` (one count per domain element) and the
    workload a matrix :math:`W` of shape ``(m, d)``, one query per row, answered all at once as
    :math:`Wh`. One person is one unit of one count, so

    * add/remove changes :math:`h` by :math:`\pm e_j` and the answers by the column
      :math:`W_{:,j}`: :math:`\Delta_1 = \max_j \lVert W_{:,j} \rVert_1` (Li, Hay, Rastogi,
      Miklau & McGregor 2010, Proposition 2);
    * replace-one changes it by :math:`e_k - e_j`:
      :math:`\Delta_1 = \max_{j, k} \lVert W_{:,k} - W_{:,j} \rVert_1`, at most twice the
      add/remove value.

    Laplace noise of scale :math:`\Delta_1 / \varepsilon` on every answer makes the whole vector
    :math:`\varepsilon`-DP. For a histogram (identity workload) this is 1 or 2, as
    :func:`histogram_sensitivity`; for the :math:`m` prefix queries it is :math:`m`, no better than
    sequential composition; for disjoint queries it is 1 whatever :math:`m` (parallel composition).

    Parameters
    ----------
    queries : array_like, 2-d
        The workload ``W``, shape ``(m, d)``, finite real weights (0/1 for counting queries).
    neighbouring : {"add_remove", "replace"}
        The neighbouring relation. Under ``"replace"`` the work, the smaller of ``d * d * m``
        and ``2**(m - 1) * d * m``, must be at most ``2e8`` (any ``d`` for ``m = 1``; ``d`` up to
        about 1700 for any ``m``).

    Returns
    -------
    float
        The L1 sensitivity of :math:`h \mapsto Wh`.

    Raises
    ------
    TypeError
        If ``queries`` is not numeric or ``neighbouring`` not a str.
    ValueError
        If ``queries`` is not a non-empty 2-d array of finite numbers, or ``neighbouring`` is not
        one of the two relations.

    Examples
    --------
    >>> linear_query_sensitivity([[1, 1, 0], [0, 1, 1]])        # both ranges contain element 1
    2.0
    >>> linear_query_sensitivity([[1, 0, 0], [0, 1, 1]])        # disjoint: parallel composition
    1.0
    """
    neighbouring = check_neighbouring(neighbouring)
    w = check_data(queries, "queries", ndim=2)
    if neighbouring == "add_remove":
        return float(np.abs(w).sum(axis=0).max())
    m, d = w.shape
    pairs = d * d * m
    signs = 2 ** (m - 1) * d * m if m < 64 else math.inf
    if min(pairs, signs) > _MAX_REPLACE_WORK:
        raise ValueError(
            f"queries is too large for neighbouring='replace': the work min(d * d * m, "
            f"2**(m - 1) * d * m) must be at most {_MAX_REPLACE_WORK:.0e}, got shape {w.shape}"
        )
    if signs < pairs:
        return _l1_diameter_by_signs(w)
    best = 0.0
    for j in range(d):
        best = max(best, float(np.abs(w - w[:, j : j + 1]).sum(axis=0).max()))
    return best
