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
:func:`smooth_median`'s release, made on a lattice fixed in advance (the data rounded to a public
grid, the scale rounded up to a public set that keeps it beta-smooth, the noise rounded to the
grid and drawn exactly: its Notes), so that the floating-point attack finds nothing. (For pure epsilon-DP the paper uses heavier-tailed noise with
density proportional to ``1 / (1 + |z|^gamma)``; not implemented here.)

Neighbours are replace-one (``n`` public), as in the paper.
"""

from __future__ import annotations

import math
from fractions import Fraction
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
from dplib.mechanisms._exact import bernoulli_exp_scalar, sample_discrete_laplace_exact

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


#: The public grid of :func:`smooth_median`: ``lower + g Z``, ``g = 2**(floor(log2(upper - lower))
#: - SMOOTH_GRID_BITS)`` (as :func:`dplib.queries.propose_test_release.ptr_median`'s).
SMOOTH_GRID_BITS = 20
_MIN_SPAN = 2.0**-1000
#: Largest noise scale, in grid units (the exact discrete Laplace sampler's range).
_MAX_UNITS_SCALE = 2.0**40
#: Smallest public scale, in grid units: a floor that keeps the scale beta-smooth (a maximum of
#: a beta-smooth function and a constant is beta-smooth) and above any floating-point underflow.
_SCALE_FLOOR = 2.0**-30


def _mantissa_bits(beta: float) -> int:
    """``p`` with ``2**-p <= beta / 16``: the scale is rounded up to ``p``-bit mantissas."""
    return max(4, math.ceil(math.log2(16.0 / beta)))


def _round_up(value: float, bits: int) -> Fraction:
    """The smallest ``M 2**e >= value`` with an integer ``M < 2**(bits + 1)``: within ``2**-bits``."""
    e = math.frexp(value)[1] - 1 - bits  # value = f 2**(e + bits), 1 <= f < 2
    return Fraction(math.ceil(Fraction(value) / Fraction(2) ** e)) * Fraction(2) ** e


def _lattice_plan(x: Any, lower: Any, upper: Any, epsilon: Any, delta: Any):
    """Validated inputs of :func:`smooth_median`: ``(lo, g, median in grid units, b)``.

    ``b`` is the noise scale in grid units, the exact rational ``S'(x) / alpha`` (see the Notes
    of :func:`smooth_median`). Raises before any randomness is drawn.
    """
    lo, hi = check_bounds(lower, upper)
    data = check_data(x, "x", allow_empty=True, ndim=1, records=True)
    alpha, beta = smooth_laplace_parameters(epsilon, delta)
    span = hi - lo
    if not (math.isfinite(span) and span >= _MIN_SPAN):
        raise ValueError(
            f"upper - lower must be finite and at least 2**-1000 (the grid would underflow), got "
            f"lower={lower!r}, upper={upper!r}"
        )
    if beta < 2.0**-36:
        raise ValueError(
            "epsilon / (2 ln(2 / delta)) must be at least 2**-36 (the smoothness beta that the "
            f"public scales keep), got epsilon={epsilon!r}, delta={delta!r}"
        )
    step = math.ldexp(1.0, math.floor(math.log2(span)) - SMOOTH_GRID_BITS)
    top = int(round(span / step))  # fewer than 2**22 grid units: every gap below is exact
    units = np.rint((np.clip(data, lo, hi) - lo) / step)
    n = int(units.size)
    padded = np.concatenate(([0.0], np.sort(units), [float(top)]))
    m = (n + 1) // 2
    bits = _mantissa_bits(beta)
    beta0 = beta - math.ldexp(1.0, 1 - bits)  # >= 7/8 beta
    # A refusal is an output: it is decided on the largest scale any table could need (the
    # smooth sensitivity is at most the whole range, ``top`` grid units), never on this one's.
    largest = _round_up(max(float(top), _SCALE_FLOOR), bits) / Fraction(alpha)
    if largest > _MAX_UNITS_SCALE:
        raise ValueError(
            f"the noise scale could reach {float(largest):.3g} grid steps of {step!r}, beyond the "
            f"exact sampler's 2**40: epsilon={epsilon!r} is too small for the range"
        )
    smooth = _smooth_median(padded, n, m, beta0)
    scale = _round_up(max(smooth, _SCALE_FLOOR), bits) / Fraction(alpha)
    return lo, step, int(padded[m]), scale


def _rounded_laplace(scale: Fraction, rng: np.random.Generator) -> int:
    """``round(scale Z)`` for ``Z ~ Laplace(1)``, exactly (integer arithmetic on every step).

    ``P(0) = 1 - exp(-1/(2b))`` and ``P(+-k) = exp(-k/b) sinh(1/(2b))`` for ``k >= 1``
    (``b = scale``): a Bernoulli(``exp(-1/(2b))``) trial for ``K != 0``, a fair sign, and
    ``|K| - 1`` geometric with ratio ``exp(-1/b)``, the law of a discrete Laplace of scale ``b``
    given that it is not 0, minus one. CKS20's Algorithm 1 for the Bernoulli trials; the exact
    discrete Laplace sampler of :mod:`dplib.mechanisms._exact` for ``b > 1`` (a draw is not 0
    with probability ``1 - tanh(1/(2b)) > 1/2``), Bernoulli(``exp(-1/b)``) trials for ``b <= 1``
    (fewer than 0.6 on average).
    """
    if not bernoulli_exp_scalar(1 / (2 * scale), rng):
        return 0
    if scale > 1:
        while True:  # ends with probability > 1/2 a round
            draw = int(sample_discrete_laplace_exact(scale, 1, rng)[0])
            if draw != 0:
                return draw
    magnitude = 1
    while bernoulli_exp_scalar(1 / scale, rng):  # continues with probability <= e^-1
        magnitude += 1
    return magnitude if int(rng.integers(0, 2)) else -magnitude


def smooth_median(
    x: Any,
    lower: float,
    upper: float,
    epsilon: float,
    delta: float,
    *,
    rng: Any = None,
) -> float:
    """An (epsilon, delta)-DP median: Laplace noise scaled to the smooth sensitivity, on a grid.

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
        ``lower + g (median + round(S'(x) / alpha * Z))`` in grid units, ``Z ~ Laplace(1)``:
        the median of the data rounded to the public grid ``lower + g Z``, plus Laplace noise
        scaled to a beta-smooth bound ``S'`` on its local sensitivity (``S*_beta0`` of
        :func:`smooth_sensitivity_median` on the grid, rounded up to a public set) and rounded
        to the grid; ``(alpha, beta)`` from :func:`smooth_laplace_parameters` (Notes). The empty
        table's median is ``lower`` (the padded ``x_0``).

    Raises
    ------
    TypeError, ValueError
        For bad data, ``lower >= upper``, ``epsilon`` not finite and ``> 0``, ``delta`` not in
        ``(0, 1)``, ``upper - lower`` below ``2**-1000`` or overflowing, ``epsilon / (2 ln(2 /
        delta)) < 2**-36`` or a noise scale beyond ``2**40`` grid steps; before any randomness is
        drawn.

    Notes
    -----
    (epsilon, delta)-DP under replace-one neighbours (``n`` public), **on a lattice fixed in
    advance** (issue 49: the float release ``median + S/alpha * numpy Laplace`` fell to the
    floating-point attack of Mironov 2012, 71.5 % of its outputs on one table impossible on its
    neighbour). The release, with ``g`` the public grid step of ``[lower, upper]``
    (:data:`SMOOTH_GRID_BITS`) and everything below in grid units:

    1. each value is clamped and rounded to ``lower + g Z`` (a map of each record alone, so
       neighbours stay neighbours); ``f(x)`` is the median of the rounded values, a grid point;
    2. ``S(x) = S*_beta0(x)``, the beta0-smooth sensitivity of that median (Nissim,
       Raskhodnikova & Smith 2007, Definition 2.2, Lemma 2.7, Proposition 3.4), with
       ``beta0 = beta - 2**(1 - p)`` and ``2**-p <= beta / 16``;
    3. the scale is rounded **up** to a public set: ``S'(x) = up_p(max(S(x), 2**-30))``, the
       smallest ``M 2**e >= `` its argument with a ``p + 1``-bit integer ``M``. Then
       ``S' >= S >= LS`` and ``S'(x) <= (1 + 2**-p) e**beta0 S'(y) <= e**beta S'(y)`` for
       neighbours (a maximum with a constant keeps smoothness; the ``2**-p`` left over covers the
       floating-point error of ``S``, below ``1e-15`` relative): ``S'`` is a beta-smooth upper
       bound on the local sensitivity (their Definition 2.1);
    4. ``f(x) + S'(x)/alpha * Z``, ``Z ~ Laplace(1)``, is (epsilon, delta)-DP with ``alpha =
       epsilon / 2``, ``beta = epsilon / (2 ln(2 / delta))`` (their Lemmas 2.6 and 2.9);
    5. the output is that value rounded to the grid, post-processing: ``f(x) + round(b Z)``
       with ``b = S'(x) / alpha`` (``f(x)`` is on the grid), and ``round(b Z)`` is drawn exactly
       in integer arithmetic (:func:`_rounded_laplace`). The double returned is
       ``lower + g (f(x) + K)`` for the integer ``K``: a function of the integer alone, so no
       output of one table is out of reach of its neighbour (``K`` takes every integer).

    Refused before any draw: ``upper - lower`` below ``2**-1000`` or overflowing, ``beta <
    2**-36``, a scale beyond ``2**40`` grid units.

    Reference: Nissim, Raskhodnikova & Smith (2007), "Smooth sensitivity and sampling in private
    data analysis", STOC, Definitions 2.1-2.2, Lemmas 2.6, 2.7 and 2.9, Proposition 3.4.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(50, 5, size=1001)
    >>> bool(abs(smooth_median(x, 0.0, 100.0, 1.0, 1e-6, rng=1) - np.median(x)) < 5)
    True
    """
    lo, step, median, scale = _lattice_plan(x, lower, upper, epsilon, delta)
    generator = as_generator(rng)
    return float(lo + step * (median + _rounded_laplace(scale, generator)))
