"""Confidence intervals for randomized-response estimates, from Hoeffding's inequality.

A randomized-response estimate is an affine function of a mean of bits. Hoeffding's inequality
bounds how far a mean of ``n`` independent values in ``[a, b]`` strays from its expectation:

``P(|Ybar - E Ybar| >= t) <= 2 exp(-2 n t^2 / (b - a)^2)``   (Hoeffding 1963, Theorem 2),

so ``t = (b - a) sqrt(ln(2 / alpha) / (2 n))`` holds with probability at least ``1 - alpha``.
The binary estimator ``pi_hat = (Ybar - (1 - p)) / (2p - 1)`` moves ``1 / (2p - 1)`` times as
far as ``Ybar`` does, so its half-width is ``t / (2p - 1)``; the k-ary estimator
``(f_j - q) / (p - q)`` has half-width ``t / (p - q)`` per category.

These intervals hold for every ``n`` (no normal approximation) and whatever the true proportion,
at the price of being conservative: their coverage is usually well above ``1 - alpha``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import (
    check_bool,
    check_epsilon,
    check_integer,
    check_positive,
    check_probability,
)
from dplib.mechanisms.randomized_response import (
    check_k,
    k_rr_estimate,
    krr_probabilities,
    rr_estimate,
)

__all__ = [
    "hoeffding_halfwidth",
    "rr_halfwidth",
    "rr_confidence_interval",
    "rr_sample_size",
    "k_rr_halfwidth",
    "k_rr_confidence_intervals",
]


#: rr_sample_size refuses sample sizes above 2**53 (not exact as doubles, and never needed).
_MAX_SAMPLE_SIZE = 2.0**53


def _check_alpha(alpha: Any) -> float:
    return check_probability(alpha, "alpha", low_open=True, high_open=True)


def _finite_width(value: float, names: str, **args: Any) -> float:
    """Return ``value`` if finite, else refuse the arguments that made it overflow."""
    if not math.isfinite(value):
        got = ", ".join(f"{key}={val!r}" for key, val in args.items())
        raise ValueError(f"{names} give a half-width that overflows a float, got {got}")
    return value


def hoeffding_halfwidth(n: int, alpha: float = 0.05, *, width: float = 1.0) -> float:
    """Half-width ``t`` with ``P(|mean - E mean| >= t) <= alpha`` for ``n`` values in a range of ``width``.

    ``t = width * sqrt(ln(2 / alpha) / (2 n))`` (Hoeffding 1963, Theorem 2, two-sided).

    Parameters
    ----------
    n : int
        Number of independent values, >= 1.
    alpha : float
        Probability in (0, 1) that the deviation reaches ``t``.
    width : float
        ``b - a`` for values in ``[a, b]``; 1 for bits.

    Returns
    -------
    float

    References
    ----------
    W. Hoeffding, "Probability inequalities for sums of bounded random variables", JASA 58
    (1963), Theorem 2.

    Examples
    --------
    >>> round(hoeffding_halfwidth(1000, 0.05), 4)
    0.0429
    """
    n = check_integer(n, "n", minimum=1)
    alpha = _check_alpha(alpha)
    width = check_positive(width, "width")
    # ln 2 - ln alpha rather than ln(2 / alpha), which overflows for subnormal alpha.
    halfwidth = width * math.sqrt((math.log(2.0) - math.log(alpha)) / (2.0 * n))
    return _finite_width(halfwidth, "width and alpha", width=width, alpha=alpha)


def rr_halfwidth(n: int, epsilon: float, alpha: float = 0.05) -> float:
    """Half-width of the ``1 - alpha`` Hoeffding interval for :func:`~dplib.rr_estimate`.

    ``sqrt(ln(2 / alpha) / (2 n)) / (2p - 1)`` with ``p = e^eps / (1 + e^eps)``, so
    ``2p - 1 = tanh(eps / 2)``: for small epsilon the half-width grows like ``2 / eps``.

    Parameters
    ----------
    n : int
        Number of respondents, >= 1.
    epsilon : float
        The epsilon of the randomized response, finite and > 0.
    alpha : float
        Non-coverage probability, in (0, 1).

    Examples
    --------
    >>> round(rr_halfwidth(1000, math.log(3), 0.05), 4)  # the two-coin protocol: 2p - 1 = 1/2
    0.0859
    """
    n = check_integer(n, "n", minimum=1)
    epsilon = check_epsilon(epsilon)
    alpha = _check_alpha(alpha)
    # 2p - 1 = tanh(eps / 2), computed without cancellation for small epsilon.
    gap = math.tanh(epsilon / 2.0)
    halfwidth = hoeffding_halfwidth(n, alpha) / gap if gap > 0 else math.inf
    return _finite_width(halfwidth, "epsilon and alpha", epsilon=epsilon, alpha=alpha)


def rr_confidence_interval(
    reports: Any, epsilon: float, alpha: float = 0.05, *, clip: bool = True
) -> tuple[float, float]:
    """Hoeffding confidence interval for the true proportion behind randomized-response reports.

    Returns ``(pi_hat - h, pi_hat + h)`` with ``pi_hat = rr_estimate(reports, epsilon)`` and
    ``h = rr_halfwidth(n, epsilon, alpha)``; it contains the true proportion with probability at
    least ``1 - alpha``. With ``clip=True`` (default) the interval is intersected with ``[0, 1]``,
    which cannot lose coverage because the true proportion lies there.

    Parameters
    ----------
    reports : array_like of {0, 1}
        Non-empty noisy reports, produced with :func:`~dplib.randomized_response` at ``epsilon``.
    epsilon : float
        Finite and > 0.
    alpha : float
        Non-coverage probability, in (0, 1).
    clip : bool
        Whether to intersect the interval with ``[0, 1]``.

    Returns
    -------
    (float, float)
    """
    clip = check_bool(clip, "clip")
    estimate = rr_estimate(reports, epsilon)
    h = rr_halfwidth(int(np.size(reports)), epsilon, alpha)
    low, high = estimate - h, estimate + h
    if clip:
        low, high = max(low, 0.0), min(high, 1.0)
    return float(low), float(high)


def rr_sample_size(halfwidth: float, epsilon: float, alpha: float = 0.05) -> int:
    """Smallest ``n`` whose :func:`rr_halfwidth` is at most ``halfwidth``.

    Solving ``sqrt(ln(2/alpha) / (2n)) / tanh(eps/2) <= halfwidth`` for ``n`` gives
    ``n >= ln(2/alpha) / (2 halfwidth^2 tanh(eps/2)^2)``.

    Examples
    --------
    >>> rr_sample_size(0.05, math.log(3), 0.05)  # +-5 points, 95%, two fair coins
    2952
    """
    halfwidth = check_positive(halfwidth, "halfwidth")
    epsilon = check_epsilon(epsilon)
    alpha = _check_alpha(alpha)
    # ln(2/alpha) / (2 (h tanh(eps/2))^2), arranged so that no intermediate overflows.
    scaled = halfwidth * math.tanh(epsilon / 2.0)
    n = (math.log(2.0) - math.log(alpha)) / 2.0 / scaled / scaled if scaled > 0 else math.inf
    if not n <= _MAX_SAMPLE_SIZE:
        raise ValueError(
            f"halfwidth and epsilon must be large enough that n <= 2**53, got "
            f"halfwidth={halfwidth!r}, epsilon={epsilon!r} and alpha={alpha!r} (n would be {n:.3g})"
        )
    n_int = max(1, math.ceil(n))
    # Guard against rounding in the closed form (a relative error of a few ulps, so a few steps
    # at most): step to the exact boundary.
    for _ in range(64):
        if not (n_int > 1 and rr_halfwidth(n_int - 1, epsilon, alpha) <= halfwidth):
            break
        n_int -= 1
    for _ in range(64):
        if rr_halfwidth(n_int, epsilon, alpha) <= halfwidth:
            break
        n_int += 1
    return n_int


def k_rr_halfwidth(n: int, k: int, epsilon: float, alpha: float = 0.05, *, simultaneous: bool = True) -> float:
    """Half-width of Hoeffding intervals for the k-ary RR frequency estimates.

    Each ``f_j`` is a mean of ``n`` indicator bits, and ``pi_hat_j = (f_j - q) / (p - q)``, so one
    category's half-width is ``sqrt(ln(2 / alpha') / (2 n)) / (p - q)``. With
    ``simultaneous=True`` (default) ``alpha' = alpha / k`` (Bonferroni), so that all ``k``
    intervals hold together with probability at least ``1 - alpha``; otherwise ``alpha' = alpha``
    and each interval holds on its own.

    ``p - q = (e^eps - 1) / (e^eps + k - 1)``.
    """
    n = check_integer(n, "n", minimum=1)
    k = check_k(k)
    epsilon = check_epsilon(epsilon)
    alpha = _check_alpha(alpha)
    simultaneous = check_bool(simultaneous, "simultaneous")
    p, q = krr_probabilities(k, epsilon)
    # p - q = expm1(eps) / (e^eps + k - 1) = p * (-expm1(-eps)), exact for small epsilon.
    gap = p * -math.expm1(-epsilon)
    base = hoeffding_halfwidth(n, alpha / k if simultaneous else alpha)
    halfwidth = base / gap if gap > 0 else math.inf
    return _finite_width(halfwidth, "epsilon and alpha", epsilon=epsilon, alpha=alpha)


def k_rr_confidence_intervals(
    reports: Any, k: int, epsilon: float, alpha: float = 0.05, *, simultaneous: bool = True, clip: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Hoeffding intervals ``(low, high)``, arrays of shape ``(k,)``, for the k-RR frequencies.

    Centred on :func:`~dplib.k_rr_estimate`, with half-width :func:`k_rr_halfwidth`; clipped to
    ``[0, 1]`` when ``clip`` is True.
    """
    clip = check_bool(clip, "clip")
    estimate = k_rr_estimate(reports, k, epsilon)
    h = k_rr_halfwidth(int(np.size(reports)), k, epsilon, alpha, simultaneous=simultaneous)
    low, high = estimate - h, estimate + h
    if clip:
        low, high = np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)
    return low, high
