"""Private versions of the everyday statistics: count, sum, mean and histogram.

Each function clamps what must be clamped, uses the sensitivity from :mod:`dplib.sensitivity`, and
adds noise with the mechanism the course recommends for that output type: the discrete Laplace
(two-sided geometric) mechanism for integer outputs (counts, histograms), which is immune to the
floating-point attack, and the Laplace mechanism for real-valued outputs (sums, means).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_bounds,
    check_data,
    check_epsilon,
    check_integer,
)
from dplib.mechanisms.discrete import discrete_laplace_mechanism
from dplib.mechanisms.laplace import laplace_mechanism
from dplib.sensitivity import (
    check_neighbouring,
    count_sensitivity,
    histogram_sensitivity,
    mean_sensitivity,
    sum_sensitivity,
)

__all__ = ["clamp", "private_count", "private_sum", "private_mean", "private_histogram"]


def clamp(x: Any, lower: float, upper: float) -> np.ndarray | float:
    """Clip every value of ``x`` into ``[lower, upper]``.

    Clamping is what gives a sum or a mean a finite sensitivity: after it, one person can move a
    sum by at most ``max(|lower|, |upper|)`` (add/remove) or ``upper - lower`` (replace-one).
    The bounds must be chosen without looking at the data, or they leak it.

    Parameters
    ----------
    x : float or array_like
        Values, without NaN.
    lower, upper : float
        Finite bounds with ``lower < upper``.

    Returns
    -------
    float or numpy.ndarray
        ``min(max(x, lower), upper)`` elementwise, with the shape of ``x``.
    """
    lo, hi = check_bounds(lower, upper)
    arr = check_data(x, "x", allow_empty=True)
    out = np.clip(arr, lo, hi)
    return float(out) if out.ndim == 0 else out


def private_count(x: Any, epsilon: float, *, rng: Any = None) -> int:
    """Epsilon-DP count of the records in ``x`` (add/remove neighbours, sensitivity 1).

    Parameters
    ----------
    x : array_like
        The records to count. A boolean array counts its ``True`` entries (a predicate count:
        ``private_count(ages >= 65, ...)``); any other array counts its elements. May be empty.
    epsilon : float
        Privacy loss, finite and > 0.
    rng : None, int or numpy.random.Generator, optional

    Returns
    -------
    int
        ``count + Z`` with ``Z`` discrete Laplace of scale ``1 / epsilon``; may be negative (clip
        it afterwards if you like: post-processing costs no privacy).

    References
    ----------
    Ghosh, Roughgarden & Sundararajan (2012), "Universally utility-maximizing privacy mechanisms"
    (the geometric mechanism). Dwork & Roth (2014), Example 3.1 (counting queries).
    """
    epsilon = check_epsilon(epsilon)
    arr = np.asarray(x)
    count = int(np.count_nonzero(arr)) if arr.dtype == bool else int(arr.size)
    return int(discrete_laplace_mechanism(count, count_sensitivity(), epsilon, rng=rng))


def private_sum(
    x: Any,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    neighbouring: str = "add_remove",
    rng: Any = None,
) -> float:
    """Epsilon-DP sum of ``x`` clamped to ``[lower, upper]`` (Laplace mechanism).

    The sensitivity is ``max(|lower|, |upper|)`` for add/remove neighbours and ``upper - lower``
    for replace-one neighbours (:func:`dplib.sum_sensitivity`).

    Parameters
    ----------
    x : array_like
        Values (may be empty: the sum of nothing is 0).
    lower, upper : float
        Data-independent clamping bounds, ``lower < upper``.
    epsilon : float
        Privacy loss, finite and > 0.
    neighbouring : {"add_remove", "replace"}
    rng : None, int or numpy.random.Generator, optional
    """
    lo, hi = check_bounds(lower, upper)
    epsilon = check_epsilon(epsilon)
    sensitivity = sum_sensitivity(lo, hi, neighbouring=neighbouring)
    values = clamp(check_data(x, "x", allow_empty=True), lo, hi)
    return float(laplace_mechanism(float(np.sum(values)), sensitivity, epsilon, rng=rng))


def private_mean(
    x: Any,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    neighbouring: str = "replace",
    rng: Any = None,
) -> float:
    """Epsilon-DP mean of ``x`` clamped to ``[lower, upper]``.

    Two flavours, by the neighbouring relation:

    ``"replace"`` (default; the dataset size ``n`` is public)
        ``mean(clamp(x)) + Lap((upper - lower) / (n epsilon))``.
    ``"add_remove"`` (``n`` is private too)
        Half the budget on a noisy sum (sensitivity ``max(|lower|, |upper|)``), half on a noisy
        count (sensitivity 1); the ratio is clamped to ``[lower, upper]`` (post-processing).

    Parameters
    ----------
    x : array_like
        Non-empty values for ``"replace"``; may be empty for ``"add_remove"``.
    lower, upper : float
        Data-independent clamping bounds, ``lower < upper``.
    epsilon : float
        Total privacy loss, finite and > 0.
    neighbouring : {"replace", "add_remove"}
    rng : None, int or numpy.random.Generator, optional

    Returns
    -------
    float

    References
    ----------
    Dwork & Roth (2014), Section 3.3; Li, Lyu, Su & Yang (2016), *Differential Privacy: From
    Theory to Practice*, Section 2.5 (noisy sum over noisy count).
    """
    lo, hi = check_bounds(lower, upper)
    epsilon = check_epsilon(epsilon)
    neighbouring = check_neighbouring(neighbouring)
    values = clamp(check_data(x, "x", allow_empty=neighbouring == "add_remove"), lo, hi)
    values = np.atleast_1d(values)
    if neighbouring == "replace":
        sensitivity = mean_sensitivity(lo, hi, values.size, neighbouring="replace")
        return float(laplace_mechanism(float(values.mean()), sensitivity, epsilon, rng=rng))
    generator = as_generator(rng)
    noisy_sum = private_sum(values, lo, hi, epsilon / 2, neighbouring="add_remove", rng=generator)
    noisy_count = private_count(values, epsilon / 2, rng=generator)
    return float(np.clip(noisy_sum / max(noisy_count, 1), lo, hi))


def private_histogram(
    x: Any,
    bins: Any,
    epsilon: float,
    *,
    range: tuple[float, float] | None = None,
    neighbouring: str = "add_remove",
    rng: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Epsilon-DP histogram: exact bin counts plus discrete Laplace noise.

    One person changes one bin by one under add/remove (L1 sensitivity 1) and two bins by one
    under replace-one (sensitivity 2), whatever the number of bins: this is parallel composition
    (Dwork & Roth 2014, Example 3.2 and Section 3.5).

    Parameters
    ----------
    x : array_like
        Values (may be empty).
    bins : int or array_like
        Bin edges (as for :func:`numpy.histogram`), or a number of bins together with ``range``.
        Edges must not be derived from the data: numpy's default range (the data's min and max)
        would leak them, so an int needs an explicit ``range``.
    epsilon : float
        Privacy loss, finite and > 0.
    range : (float, float), optional
        Lower and upper edge when ``bins`` is an int.
    neighbouring : {"add_remove", "replace"}
    rng : None, int or numpy.random.Generator, optional

    Returns
    -------
    counts : numpy.ndarray of int64
        Noisy counts (may be negative; clip them if you need to: post-processing is free).
    edges : numpy.ndarray of float
        The bin edges.
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = histogram_sensitivity(neighbouring=neighbouring)
    values = check_data(x, "x", allow_empty=True).ravel()
    if np.ndim(bins) == 0:
        if range is None:
            raise ValueError(
                "private_histogram needs explicit bin edges, or an int number of bins together with "
                "range=(lower, upper): numpy's default range is the data's min and max, which leaks them"
            )
        lo, hi = check_bounds(*range)
        n_bins = check_integer(bins, "bins", minimum=1)
        edges = np.linspace(lo, hi, n_bins + 1)
    else:
        edges = check_data(bins, "bins")
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise ValueError("bins must be at least two strictly increasing edges")
    counts, edges = np.histogram(values, bins=edges)
    noisy = discrete_laplace_mechanism(counts.astype(np.int64), sensitivity, epsilon, rng=rng)
    return np.asarray(noisy, dtype=np.int64), edges
