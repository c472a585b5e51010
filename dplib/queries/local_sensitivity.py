"""Local sensitivity, and local sensitivity at distance k, of the median and the mean.

The global sensitivity of a query is the largest change one person can cause on *any* dataset;
the **local sensitivity** is the largest change one person can cause on *this* dataset
(Nissim, Raskhodnikova & Smith 2007, Definition 2.1):

    LS_f(x) = max_{y : d(x, y) = 1} |f(x) - f(y)|.

It is often far smaller (the median of a thousand tightly packed values barely moves), but noise
scaled to it is **not** private: the noise scale itself depends on the data and tells neighbours
apart (notebook 09, and :func:`local_sensitivity`'s Notes). What the private constructions use
instead is the local sensitivity *at distance k*,

    A^(k)(x) = max_{y : d(x, y) <= k} LS_f(y),

the largest local sensitivity of any dataset within ``k`` changes of ``x``: smooth sensitivity
(:mod:`dplib.queries.smooth_sensitivity`) discounts it by ``e^{-k beta}``, and propose-test-release
(:mod:`dplib.queries.propose_test_release`) asks how far away it first exceeds a proposed bound.

**Neighbours are replace-one** (the Hamming distance of Nissim, Raskhodnikova & Smith): ``n`` is
public and ``d(x, y)`` counts the records in which ``x`` and ``y`` differ. Values are clamped to
the public range ``[lower, upper]``: the queries are the median and the mean of the clamped data.

**The median** of ``n`` values is the ``m``-th smallest, ``m = floor((n + 1) / 2)`` (the middle
value for odd ``n``, the lower middle one for even ``n``). With the sorted values
``x_1 <= ... <= x_n`` padded by ``x_i = lower`` for ``i <= 0`` and ``x_i = upper`` for ``i > n``,

    LS(x) = max(x_{m+1} - x_m, x_m - x_{m-1}),
    A^(k)(x) = max_{0 <= t <= k+1} (x_{m+t} - x_{m+t-k-1})

(Nissim, Raskhodnikova & Smith 2007, Section 3.1 and the proof of Proposition 3.4: ``k``
replacements can move the ``m``-th smallest value anywhere between ``x_{m-k}`` and ``x_{m+k}``).

**The mean** of ``n`` clamped values: replacing ``x_i`` moves the mean by at most
``max(x_i - lower, upper - x_i) / n``, so ``LS(x) = max_i max(x_i - lower, upper - x_i) / n``,
and one replacement (``x_i -> lower``) already reaches the global ``(upper - lower) / n``:
``A^(k)(x) = (upper - lower) / n`` for every ``k >= 1``. The mean gains nothing from local
sensitivity; the median gains a lot.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dplib._validation import check_bounds, check_data, check_integer

__all__ = [
    "LOCAL_SENSITIVITY_QUERIES",
    "median_rank",
    "local_sensitivity",
    "local_sensitivity_at_distance",
]

#: The queries whose local sensitivity this module computes.
LOCAL_SENSITIVITY_QUERIES = ("median", "mean")


def median_rank(n: int) -> int:
    """The rank ``m = floor((n + 1) / 2)`` (1-based) of the median of ``n`` values.

    ``m = 0`` for ``n = 0``: the padded value ``x_0 = lower`` stands for the empty table's median.
    """
    return (check_integer(n, "n", minimum=0) + 1) // 2


def _padded(x: Any, lower: Any, upper: Any) -> tuple[np.ndarray, int, int, float, float]:
    """Sorted clamped data with ``x_0 = lower`` in front and ``x_{n+1} = upper`` at the end."""
    lo, hi = check_bounds(lower, upper)
    data = check_data(x, "x", allow_empty=True, ndim=1, records=True)
    n = int(data.size)
    padded = np.concatenate(([lo], np.sort(np.clip(data, lo, hi)), [hi]))
    return padded, n, (n + 1) // 2, lo, hi


def _check_query(query: Any) -> str:
    if not isinstance(query, str):
        raise TypeError(
            f"query must be one of {LOCAL_SENSITIVITY_QUERIES}, got {type(query).__name__}"
        )
    if query not in LOCAL_SENSITIVITY_QUERIES:
        raise ValueError(f"query must be one of {LOCAL_SENSITIVITY_QUERIES}, got {query!r}")
    return query


def _median_at_distance(padded: np.ndarray, n: int, m: int, k: int) -> float:
    """``max_{0 <= t <= k+1} (x_{m+t} - x_{m+t-k-1})`` on the padded sorted data (unvalidated)."""
    t = np.arange(min(k, n + 1) + 2)  # beyond t = n + 1 - m + ... the indices only repeat the pads
    high = np.minimum(m + t, n + 1)
    low = np.maximum(m + t - k - 1, 0)
    return float(np.max(padded[high] - padded[low]))


def local_sensitivity(x: Any, lower: float, upper: float, *, query: str = "median") -> float:
    """Local sensitivity of the median (or mean) of ``x`` clamped to ``[lower, upper]``.

    Parameters
    ----------
    x : array_like, 1-d
        One number per person; may be empty. Values are clamped to ``[lower, upper]``.
    lower, upper : float
        The public range, ``lower < upper``.
    query : {"median", "mean"}, keyword-only
        The query.

    Returns
    -------
    float
        ``LS(x) = max |f(x) - f(y)|`` over the datasets ``y`` that differ from ``x`` in one record
        (replace-one; ``0.0`` for the empty table, which has no other neighbour).

    Raises
    ------
    TypeError, ValueError
        For data that is not a 1-d array of finite numbers, ``lower >= upper`` or an unknown query.

    Notes
    -----
    Median: ``max(x_{m+1} - x_m, x_m - x_{m-1})`` with the padding of the module docstring
    (Nissim, Raskhodnikova & Smith 2007, Section 3.1). Mean: ``max_i max(x_i - lower, upper -
    x_i) / n``.

    **Not a noise scale.** ``median + Laplace(LS(x) / epsilon)`` is not differentially private
    for any epsilon: on ``x = (5, 5, 5)`` in ``[0, 10]`` the local sensitivity is 0 and the output
    is exactly 5, while on the neighbour ``(5, 5, 6)`` it is 1 and the output is 5 with
    probability 0 (Nissim, Raskhodnikova & Smith 2007, Section 1.2).

    Examples
    --------
    >>> local_sensitivity([1.0, 2.0, 3.0, 10.0, 50.0], 0.0, 100.0)
    7.0
    >>> local_sensitivity([1.0, 2.0, 3.0], 0.0, 100.0, query="mean")
    33.0
    """
    padded, n, m, lo, hi = _padded(x, lower, upper)
    if _check_query(query) == "mean":
        if n == 0:
            return 0.0
        values = padded[1:-1]
        return float(np.max(np.maximum(values - lo, hi - values)) / n)
    if n == 0:
        return 0.0
    return float(max(padded[m + 1] - padded[m], padded[m] - padded[m - 1]))


def local_sensitivity_at_distance(
    x: Any, k: int, lower: float, upper: float, *, query: str = "median"
) -> float:
    """``A^(k)(x)``: the largest local sensitivity of a dataset within ``k`` replacements of ``x``.

    Parameters
    ----------
    x : array_like, 1-d
        One number per person; may be empty. Values are clamped to ``[lower, upper]``.
    k : int
        The distance, ``>= 0``. ``A^(0)(x)`` is :func:`local_sensitivity`.
    lower, upper : float
        The public range, ``lower < upper``.
    query : {"median", "mean"}, keyword-only

    Returns
    -------
    float
        ``max {LS(y) : y differs from x in at most k records}``; non-decreasing in ``k``, and
        ``upper - lower`` (median) or ``(upper - lower) / n`` (mean) once ``k`` is large enough.

    Raises
    ------
    TypeError, ValueError
        For bad data, ``k`` not an integer ``>= 0``, ``lower >= upper`` or an unknown query.

    Notes
    -----
    Median: ``max_{0 <= t <= k+1} (x_{m+t} - x_{m+t-k-1})`` on the padded sorted data (Nissim,
    Raskhodnikova & Smith 2007, proof of Proposition 3.4); the empty table (no neighbours) has 0.

    Examples
    --------
    >>> x = [1.0, 2.0, 3.0, 10.0, 50.0]
    >>> [local_sensitivity_at_distance(x, k, 0.0, 100.0) for k in range(4)]
    [7.0, 47.0, 97.0, 98.0]
    """
    kk = check_integer(k, "k", minimum=0)
    padded, n, m, lo, hi = _padded(x, lower, upper)
    if _check_query(query) == "mean":
        if n == 0:
            return 0.0
        if kk == 0:
            values = padded[1:-1]
            return float(np.max(np.maximum(values - lo, hi - values)) / n)
        return float((hi - lo) / n)
    if n == 0:
        return 0.0
    # A^(k) is constant from k = n + 1 on (the whole range): no huge index arithmetic
    return _median_at_distance(padded, n, m, min(kk, n + 1))
