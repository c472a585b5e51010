"""Propose-test-release for the median: pay for a sensitivity bound only where the data earn it.

Dwork & Lei (2009), "Differential privacy and robust statistics", STOC; in textbook form
Dwork & Roth (2014), *The Algorithmic Foundations of Differential Privacy*, Section 7.2
("Propose-test-release"), whose algorithm this module follows for the median:

1. **Propose** a bound ``b`` on the local sensitivity (public, chosen without the data).
2. **Test**: ``gamma(x)`` is the number of records one must replace in ``x`` to reach a dataset
   whose local sensitivity exceeds ``b`` (the *distance to instability*). It changes by at most
   1 between neighbours, so ``gamma + Lap(1 / epsilon_0)`` is epsilon_0-DP. If the noisy distance
   is at most ``ln(1 / delta) / epsilon_0``, output ⊥ (``None``).
3. **Release** otherwise ``median(x) + Lap(b / epsilon_0)``.

The whole is (2 epsilon_0, delta)-DP: on a dataset with ``gamma(x) = 0`` (local sensitivity
already above ``b``), the test passes with probability at most ``delta``, and everywhere else the
release step is epsilon_0-DP because the neighbour's median is within ``b``. Here ``epsilon`` is
the total: each step gets ``epsilon_0 = epsilon / 2``.

**Floating-point safety.** Both noises are integer (discrete Laplace, Ghosh, Roughgarden &
Sundararajan 2009): the distance is an integer, and the median is taken of the values clamped to
``[lower, upper]`` and rounded to a public grid ``lower + g Z`` with ``g`` a power of two fixed by
``upper - lower`` alone (``2**-20`` of it). The rounded median is the function released (rounding is
monotone, so its local sensitivities are those of the rounded data); the tail bound of the
discrete Laplace, ``P[Z >= j] <= e^{-epsilon_0 j}`` for ``j >= 1``, keeps the test's failure
probability below ``delta``.

Neighbours are replace-one (``n`` public), as for the local sensitivities this relies on
(:mod:`dplib.queries.local_sensitivity`).
"""

from __future__ import annotations

import math
import sys
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
from dplib.mechanisms.discrete import discrete_laplace_mechanism

__all__ = ["PTR_GRID_BITS", "distance_to_instability", "ptr_threshold", "ptr_median"]

#: The grid step of :func:`ptr_median` is ``2**(floor(log2(upper - lower)) - PTR_GRID_BITS)``.
PTR_GRID_BITS = 20
#: The discrete Laplace sampler accepts scales up to 2**40.
_MAX_SCALE = 2.0**40
#: Smallest range: the grid step 2**-20 of it stays a normal double.
_MIN_SPAN = 2.0**-1000


def _distance(padded: np.ndarray, n: int, m: int, bound: float) -> int:
    """``min {k : A^(k)(x) > bound}``, capped at ``n + 1``; binary search (A^(k) is monotone)."""

    def unstable(k: int) -> bool:
        t = np.arange(min(k, n + 1) + 2)
        high = np.minimum(m + t, n + 1)
        low = np.maximum(m + t - k - 1, 0)
        return bool(np.max(padded[high] - padded[low]) > bound)

    if n == 0:  # the empty table has no neighbour under replace-one: never unstable
        return 1
    lo, hi = 0, n + 1  # the answer lies in [lo, hi]; hi = n + 1 stands for "never unstable"
    while lo < hi:
        mid = (lo + hi) // 2
        if unstable(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _padded(x: Any, lower: Any, upper: Any) -> tuple[np.ndarray, int, int, float, float]:
    lo, hi = check_bounds(lower, upper)
    data = check_data(x, "x", allow_empty=True, ndim=1, records=True)
    n = int(data.size)
    padded = np.concatenate(([lo], np.sort(np.clip(data, lo, hi)), [hi]))
    return padded, n, (n + 1) // 2, lo, hi


def _check_bound(bound: Any) -> float:
    return check_positive(bound, "bound")


def distance_to_instability(x: Any, bound: float, lower: float, upper: float) -> int:
    """How many records must be replaced before the median's local sensitivity exceeds ``bound``.

    Parameters
    ----------
    x : array_like, 1-d
        One number per person; may be empty. Values are clamped to ``[lower, upper]``.
    bound : float
        The proposed bound ``b`` on the local sensitivity, finite and ``> 0``.
    lower, upper : float
        The public range, ``lower < upper``.

    Returns
    -------
    int
        ``gamma(x) = min {k >= 0 : A^(k)(x) > b}`` with ``A^(k)`` the local sensitivity at
        distance ``k`` (:func:`dplib.queries.local_sensitivity.local_sensitivity_at_distance`),
        capped at ``n + 1`` (when ``b >= upper - lower`` no dataset is ever unstable; the cap is
        1-Lipschitz, so ``gamma`` still moves by at most 1 between neighbours). ``0`` means
        that ``x`` itself has local sensitivity above ``b``.

    Raises
    ------
    TypeError, ValueError
        For bad data, ``bound`` not finite and ``> 0`` or ``lower >= upper``.

    Notes
    -----
    Dwork & Roth (2014), Section 7.2; Dwork & Lei (2009). A dataset within ``gamma(x) - 1``
    replacements of ``x`` has local sensitivity at most ``b``.

    Examples
    --------
    >>> distance_to_instability([1.0, 2.0, 3.0, 10.0, 50.0], 8.0, 0.0, 100.0)
    1
    >>> distance_to_instability([1.0, 2.0, 3.0, 10.0, 50.0], 5.0, 0.0, 100.0)
    0
    """
    b = _check_bound(bound)
    padded, n, m, _, _ = _padded(x, lower, upper)
    return _distance(padded, n, m, b)


def ptr_threshold(epsilon: float, delta: float) -> float:
    """The test's threshold ``ln(1 / delta) / epsilon_0`` with ``epsilon_0 = epsilon / 2``.

    Parameters
    ----------
    epsilon : float
        The total epsilon of :func:`ptr_median`, finite and ``> 0``.
    delta : float
        In ``(0, 1)``.

    Returns
    -------
    float
        The noisy distance must exceed this for :func:`ptr_median` to release.

    Examples
    --------
    >>> round(ptr_threshold(1.0, 1e-6), 3)
    27.631
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    # in log space: 1 / delta overflows for a subnormal delta (ln(1 / 5e-324) = 744.4), and
    # epsilon / 2 underflows to 0 for epsilon = 5e-324 (issue 49)
    threshold = -math.log(dl) * 2.0 / eps
    if not math.isfinite(threshold):
        smallest = -math.log(dl) * 2.0 / sys.float_info.max
        raise ValueError(
            f"epsilon must be a finite number >= 2 ln(1 / delta) / 1.8e308 = {smallest:.3g} (the "
            f"threshold 2 ln(1 / delta) / epsilon must be a double), got epsilon={epsilon!r}"
        )
    return threshold


def ptr_median(
    x: Any,
    lower: float,
    upper: float,
    bound: float,
    epsilon: float,
    delta: float,
    *,
    rng: Any = None,
) -> float | None:
    """Propose-test-release median: the median plus Laplace(b / epsilon_0) noise, or ⊥.

    Parameters
    ----------
    x : array_like, 1-d
        One number per person; may be empty. Values are clamped to ``[lower, upper]`` and
        rounded to the public grid ``lower + g Z`` (module docstring).
    lower, upper : float
        The public range, ``lower < upper``.
    bound : float
        The proposed local-sensitivity bound ``b``, finite and ``> 0``, chosen without the data.
    epsilon : float
        The total epsilon, finite and ``> 0``: ``epsilon / 2`` for the test, ``epsilon / 2`` for
        the release.
    delta : float
        In ``(0, 1)``: the probability with which an unstable dataset may pass the test.
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    float or None
        ``None`` (⊥) when ``gamma(x) + Z_1 <= ln(1 / delta) / epsilon_0``, else
        ``median(x) + g Z_2``; ``Z_1`` discrete Laplace of scale ``1 / epsilon_0`` and ``Z_2`` of
        scale ``max(1, floor(b / g)) / epsilon_0``, both integers. The empty table's median is
        ``lower``.

    Raises
    ------
    TypeError, ValueError
        For bad data, ``lower >= upper``, ``bound`` not finite and ``> 0``, ``epsilon`` not
        finite and ``> 0``, ``delta`` not in ``(0, 1)``, ``upper - lower`` below ``2**-1000`` or
        overflowing, ``epsilon < 2**-39``, or a noise scale beyond the sampler's ``2**40`` grid
        units (``bound / epsilon`` too large for the range); before any draw.

    Notes
    -----
    (epsilon, delta)-DP under replace-one neighbours: Dwork & Roth (2014), Section 7.2 (the
    propose-test-release algorithm and its ``(2 epsilon_0, delta)`` guarantee); Dwork & Lei
    (2009). The output is ``None`` or on the grid ``lower + g Z``, fixed before the data are
    seen.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(50, 5, size=2001)
    >>> out = ptr_median(x, 0.0, 100.0, 1.0, 1.0, 1e-6, rng=0)
    >>> out is not None and bool(abs(out - np.median(x)) < 20)
    True
    """
    b = _check_bound(bound)
    lo, hi = check_bounds(lower, upper)
    eps = check_epsilon(epsilon)
    dl = check_delta(delta, allow_zero=False)
    data = check_data(x, "x", allow_empty=True, ndim=1, records=True)
    span = hi - lo
    if not (math.isfinite(span) and span >= _MIN_SPAN):
        raise ValueError(
            f"upper - lower must be finite and at least 2**-1000 (the grid would underflow), got "
            f"lower={lower!r}, upper={upper!r}"
        )
    step = math.ldexp(1.0, math.floor(math.log2(span)) - PTR_GRID_BITS)
    eps0 = eps / 2.0
    if eps0 * _MAX_SCALE < 1.0:
        raise ValueError(
            f"epsilon must be at least 2**-39 (the test's noise scale 2 / epsilon), got {epsilon!r}"
        )
    units_bound = max(1, math.floor(b / step)) if math.isfinite(b / step) else math.inf
    if units_bound / eps0 > _MAX_SCALE:
        raise ValueError(
            f"bound / (epsilon / 2) = {b / eps0!r} is {units_bound / eps0:.3g} grid steps of "
            f"{step!r}, beyond the discrete Laplace sampler's 2**40: choose a smaller bound or a "
            "larger epsilon"
        )
    threshold = -math.log(dl) / eps0  # log space: 1 / delta overflows for a subnormal delta
    generator = as_generator(rng)
    # the data on the grid, in integer units above lower
    top = int(round((hi - lo) / step))
    units = np.rint((np.clip(data, lo, hi) - lo) / step).astype(np.int64)
    n = int(units.size)
    padded = np.concatenate(([0], np.sort(units), [top])).astype(np.int64)
    m = (n + 1) // 2
    gamma = _distance(padded, n, m, b / step)
    noisy_gamma = discrete_laplace_mechanism(gamma, 1, eps0, rng=generator)
    if noisy_gamma <= threshold:
        return None
    noisy = discrete_laplace_mechanism(int(padded[m]), units_bound, eps0, rng=generator)
    return float(lo + step * noisy)
