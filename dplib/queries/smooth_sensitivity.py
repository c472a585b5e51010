"""Smooth sensitivity of the median, and the (epsilon, delta)-DP median it gives.

Nissim, Raskhodnikova & Smith (2007), "Smooth sensitivity and sampling in private data
analysis", STOC. Noise scaled to the local sensitivity is not private
(:mod:`dplib.queries.local_sensitivity`): the scale itself must not change much between
neighbours. A **beta-smooth upper bound** ``S`` on the local sensitivity satisfies
``S(x) >= LS(x)`` and ``S(x) <= e^beta S(y)`` for neighbours ``x, y``; the smallest one is the
**beta-smooth sensitivity** (their Definitions 2.1-2.2 and Lemma 2.3)

    S*_beta(x) = max_y LS(y) e^{-beta d(x, y)} = max_{k >= 0} e^{-k beta} A^(k)(x)

(their Lemma 2.7 for the second form, ``A^(k)`` the local sensitivity at distance ``k``). For the
median (their Proposition 3.4), with the padded sorted data of
:mod:`dplib.queries.local_sensitivity`,

    S*_beta(median)(x) = max_{k = 0..n} e^{-k beta} max_{0 <= t <= k+1} (x_{m+t} - x_{m+t-k-1}).

Adding noise ``S(x) / alpha * Z`` is (epsilon, delta)-DP when ``Z`` is (alpha, beta)-*admissible*
(their Definition 2.5 and Lemma 2.6). The Laplace distribution is admissible with
``alpha = epsilon / 2`` and ``beta = epsilon / (2 ln(2 / delta))`` (their Lemma 2.9): that is
:func:`smooth_median`'s release. (For pure epsilon-DP the paper uses heavier-tailed noise with
density proportional to ``1 / (1 + |z|^gamma)``; not implemented here.)

Neighbours are replace-one (``n`` public), as in the paper.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_bounds,
    check_data,
    check_delta,
    check_epsilon,
    check_positive,
)

__all__ = [
    "smooth_sensitivity_median",
    "smooth_laplace_parameters",
    "smooth_median",
]


def _padded(x: Any, lower: Any, upper: Any) -> tuple[np.ndarray, int, int]:
    lo, hi = check_bounds(lower, upper)
    data = check_data(x, "x", allow_empty=True, ndim=1, records=True)
    n = int(data.size)
    return np.concatenate(([lo], np.sort(np.clip(data, lo, hi)), [hi])), n, (n + 1) // 2


def _smooth_median(padded: np.ndarray, n: int, m: int, beta: float) -> float:
    r"""``max over 0 <= i <= m <= j <= n+1, i < j, of (x_j - x_i) e^{-beta (j - i - 1)}``.

    The pairs ``(i, j) = (m + t - k - 1, m + t)`` of Proposition 3.4 are exactly those with
    ``i <= m <= j`` and ``j - i = k + 1``. For a fixed ``i`` the best ``j`` maximises
    ``ln(x_j - x_i) - beta j``, which has increasing differences in ``(j, x_i)``: the best ``j``
    is non-decreasing in ``i`` (Topkis), so divide and conquer finds every row's maximum in
    ``O(n log n)`` (the algorithm of Nissim, Raskhodnikova & Smith 2007, Section 3.1).
    """
    if n == 0:
        return float(padded[1] - padded[0])
    rows = np.arange(0, m + 1)  # i
    cols = np.arange(max(m, 1), n + 2)  # j (j >= 1 > i = 0 when m = 0 cannot happen for n >= 1)
    best = 0.0
    # iterative divide and conquer over rows, with the admissible range of columns
    stack = [(0, rows.size - 1, 0, cols.size - 1)]
    while stack:
        r_lo, r_hi, c_lo, c_hi = stack.pop()
        if r_lo > r_hi:
            continue
        r = (r_lo + r_hi) // 2
        i = int(rows[r])
        j = cols[c_lo : c_hi + 1]
        valid = j > i
        gaps = np.where(valid, padded[j] - padded[i], 0.0)
        with np.errstate(over="ignore", under="ignore"):
            values = gaps * np.exp(-beta * np.maximum(j - i - 1, 0))
        values = np.where(valid, values, -1.0)
        arg = int(np.argmax(values))  # the first maximiser: consistent, monotone choice
        best = max(best, float(values[arg]))
        stack.append((r_lo, r - 1, c_lo, c_lo + arg))
        stack.append((r + 1, r_hi, c_lo + arg, c_hi))
    return best


def smooth_sensitivity_median(x: Any, beta: float, lower: float, upper: float) -> float:
    """The beta-smooth sensitivity of the median of ``x`` clamped to ``[lower, upper]``.

    Parameters
    ----------
    x : array_like, 1-d
        One number per person; may be empty. Values are clamped to ``[lower, upper]``.
    beta : float
        The smoothness, finite and ``> 0``.
    lower, upper : float
        The public range, ``lower < upper``.

    Returns
    -------
    float
        ``S*_beta(x) = max_k e^{-k beta} A^(k)(x)`` (Nissim, Raskhodnikova & Smith 2007,
        Definition 2.2, Lemma 2.7 and Proposition 3.4), between the local sensitivity and
        ``upper - lower``. Replace-one neighbours; the median is the ``floor((n + 1) / 2)``-th
        smallest value.

    Raises
    ------
    TypeError, ValueError
        For bad data, ``beta`` not a finite number ``> 0`` or ``lower >= upper``.

    Notes
    -----
    Computed in ``O(n log n)`` after sorting, by divide and conquer over the pairs of padded
    order statistics (see the module docstring); the tests compare it with the definition
    ``max_y LS(y) e^{-beta d(x, y)}`` by brute force on small tables.

    Examples
    --------
    >>> smooth_sensitivity_median([1.0, 2.0, 3.0, 10.0, 50.0], 0.5, 0.0, 100.0)  # doctest: +ELLIPSIS
    35.684...
    """
    b = check_positive(beta, "beta")
    if not math.isfinite(b):
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
    padded, n, m = _padded(x, lower, upper)
    return _smooth_median(padded, n, m, b)


def smooth_laplace_parameters(epsilon: float, delta: float) -> tuple[float, float]:
    """``(alpha, beta)`` for which Laplace noise is admissible at ``(epsilon, delta)``.

    Parameters
    ----------
    epsilon : float
        Finite, ``> 0``.
    delta : float
        In ``(0, 1)``.

    Returns
    -------
    (float, float)
        ``alpha = epsilon / 2`` and ``beta = epsilon / (2 ln(2 / delta))``: releasing
        ``f(x) + S(x) / alpha * Z`` with ``Z ~ Laplace(1)`` and ``S`` a beta-smooth upper bound on
        the local sensitivity is (epsilon, delta)-DP (Nissim, Raskhodnikova & Smith 2007,
        Lemmas 2.6 and 2.9).

    Raises
    ------
    TypeError, ValueError
        If ``epsilon`` is not a finite number ``> 0`` or ``delta`` is not in ``(0, 1)``.

    Examples
    --------
    >>> smooth_laplace_parameters(1.0, 1e-6)  # doctest: +ELLIPSIS
    (0.5, 0.034...)
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    return eps / 2.0, eps / (2.0 * math.log(2.0 / dl))


def smooth_median(
    x: Any,
    lower: float,
    upper: float,
    epsilon: float,
    delta: float,
    *,
    rng: Any = None,
) -> float:
    """An (epsilon, delta)-DP median: Laplace noise scaled to the smooth sensitivity.

    Parameters
    ----------
    x : array_like, 1-d
        One number per person; may be empty. Values are clamped to ``[lower, upper]``.
    lower, upper : float
        The public range, ``lower < upper``, chosen without looking at the data.
    epsilon : float
        Finite, ``> 0``.
    delta : float
        In ``(0, 1)``.
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    float
        ``median(x) + S*_beta(x) / alpha * Z`` with ``Z ~ Laplace(1)``, ``(alpha, beta)`` from
        :func:`smooth_laplace_parameters` and ``S*_beta`` from :func:`smooth_sensitivity_median`.
        The empty table's median is ``lower`` (the padded ``x_0``).

    Raises
    ------
    TypeError, ValueError
        For bad data, ``lower >= upper``, ``epsilon`` not finite and ``> 0``, ``delta`` not in
        ``(0, 1)``, or a largest noise scale ``(upper - lower) / (epsilon / 2)`` that overflows a
        double; before any randomness is drawn.

    Notes
    -----
    (epsilon, delta)-DP under replace-one neighbours (``n`` public): Nissim, Raskhodnikova &
    Smith (2007), Lemma 2.6 with the Laplace parameters of Lemma 2.9. **A float release**: the
    noise is a double-precision Laplace draw multiplied by a data-dependent scale, so the
    guarantee is the one of the real-valued mechanism; the floating-point attack of Mironov
    (2012) is not ruled out here, because a lattice fixed in advance cannot follow a
    data-dependent scale. Use :func:`dplib.queries.propose_test_release.ptr_median` (integer
    noise on a fixed grid) or :func:`dplib.private_median` (exponential mechanism) where that
    matters.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(50, 5, size=1001)
    >>> bool(abs(smooth_median(x, 0.0, 100.0, 1.0, 1e-6, rng=1) - np.median(x)) < 5)
    True
    """
    padded, n, m = _padded(x, lower, upper)
    alpha, beta = smooth_laplace_parameters(epsilon, delta)
    span = padded[-1] - padded[0]
    if not (alpha > 0 and math.isfinite(span / alpha)):
        raise ValueError(
            "the largest noise scale (upper - lower) / (epsilon / 2) must be a finite double, got "
            f"lower={lower!r}, upper={upper!r}, epsilon={epsilon!r}"
        )
    generator = as_generator(rng)
    scale = _smooth_median(padded, n, m, beta) / alpha
    return float(padded[m] + scale * generator.laplace(0.0, 1.0))
