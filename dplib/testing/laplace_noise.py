r"""Exact checks for Laplace noise: its scale (a 10 % error caught either way) and the
independence of two noise arrays (noise shared between cells caught).

:func:`assert_distribution` (Kolmogorov-Smirnov) checks the *shape* of a distribution, but its
power against a small error in the scale is weak: the Kolmogorov distance between
``Laplace(b)`` and ``Laplace(1.1 b)`` is about 0.017, below the DKW tolerance 0.023 of 20 000
draws at failure probability 1e-9. The statistic used here is exact and much sharper: if
:math:`Z_1, \dots, Z_n` are i.i.d. ``Laplace(loc, b)`` then :math:`|Z_i - loc|` is exponential
with mean ``b``, so :math:`\sum_i |Z_i - loc| / b \sim \mathrm{Gamma}(n, 1)`. The test accepts
when the mean absolute deviation divided by ``b`` lies between the ``p/2`` and ``1 - p/2``
quantiles of :math:`\mathrm{Gamma}(n, 1)/n`.

Noise shared between cells that must be independent (one noise array broadcast over the rows
of a table) gives each cell the right marginal distribution, so no check of the marginals can
see it. :func:`assert_independent_laplace` checks the joint distribution of two cells through
their difference, which for independent ``Laplace(b)`` noise has the cdf
:func:`laplace_difference_cdf` and for shared noise is 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from dplib._validation import as_real, check_integer, check_positive
from dplib.testing._common import (
    DEFAULT_FAILURE_PROB,
    check_failure_prob,
    check_samples,
    format_figure,
)
from dplib.testing.distributions import assert_distribution

__all__ = [
    "assert_independent_laplace",
    "assert_laplace_scale",
    "laplace_difference_cdf",
    "laplace_scale_tolerance",
]


def laplace_scale_tolerance(n: int, failure_prob: float = DEFAULT_FAILURE_PROB) -> tuple[float, float]:
    r"""Acceptance interval for the mean of ``|Z_i - loc| / b`` over ``n`` i.i.d. Laplace draws.

    Returns the ``p/2`` and ``1 - p/2`` quantiles of :math:`\mathrm{Gamma}(n, 1) / n`: a
    correct sample falls outside with probability exactly ``p = failure_prob``.

    Power: at ``n = 20_000`` and ``p = 1e-9`` the interval is about ``[0.957, 1.044]``, and a
    scale 10 % too small or too large (mean 0.9 or 1.1) lies more than 7 standard deviations of
    the mean outside it (miss probability below 1e-11). At ``n = 5_000`` a scale 10 % too large
    is missed about one time in four: use ``n >= 20_000`` when a 10 % error must be caught.

    Raises
    ------
    ValueError
        If ``n < 1`` or ``failure_prob`` is not in (0, 1).
    """
    n = check_integer(n, "n", minimum=1)
    p = check_failure_prob(failure_prob)
    dist = stats.gamma(n)
    lo, hi = float(dist.ppf(p / 2) / n), float(dist.isf(p / 2) / n)
    if not (math.isfinite(lo) and math.isfinite(hi)):  # p / 2 underflows (p = 5e-324)
        raise ValueError(
            f"failure_prob is too small: the quantiles at failure_prob / 2 must be finite, got "
            f"failure_prob={failure_prob!r}"
        )
    return lo, hi


def assert_laplace_scale(
    samples: Any,
    scale: float,
    *,
    loc: float = 0.0,
    failure_prob: float = DEFAULT_FAILURE_PROB,
) -> None:
    r"""Assert that i.i.d. ``samples`` of ``loc + Laplace(scale)`` have that scale (exact test).

    The statistic :math:`\frac{1}{n b}\sum_i |x_i - loc|` is :math:`\mathrm{Gamma}(n, 1)/n` for
    correct samples (:func:`laplace_scale_tolerance`); a wrong location inflates it too.

    Parameters
    ----------
    samples : array_like
        The draws (flattened), non-empty and finite.
    scale : float
        The claimed scale ``b``, finite and > 0.
    loc : float
        The centre of the noise (the exact answer).
    failure_prob : float
        Probability in (0, 1) that correct samples fail.

    Raises
    ------
    AssertionError
        When the mean absolute deviation is outside the acceptance interval; the message gives
        the ratio observed / claimed and the interval.
    ValueError, TypeError
        For empty or non-finite samples, a scale that is not finite and > 0, a non-finite
        ``loc`` or a ``failure_prob`` outside (0, 1).

    References
    ----------
    |Z| of a Laplace(b) variable is Exponential(b), and a sum of n i.i.d. Exponential(b) is
    Gamma(n, b): e.g. N. L. Johnson, S. Kotz and N. Balakrishnan, *Continuous Univariate
    Distributions*, vol. 1, 2nd ed., 1994, chapters 17 and 19; Kotz, Kozubowski and Podgorski,
    *The Laplace Distribution and Generalizations*, 2001, Section 2.2.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> assert_laplace_scale(rng.laplace(5.0, 2.0, 20_000), 2.0, loc=5.0)
    """
    arr = check_samples(samples)
    b = check_positive(scale, "scale")
    centre = as_real(loc, "loc")
    if not math.isfinite(centre):
        raise ValueError(f"loc must be a finite number, got {loc!r}")
    p = check_failure_prob(failure_prob)
    lo, hi = laplace_scale_tolerance(arr.size, p)
    ratio = float(np.mean(np.abs(arr - centre)) / b)
    if not lo <= ratio <= hi:
        raise AssertionError(
            f"the mean absolute deviation from {format_figure(centre)} is {format_figure(ratio)} times the claimed "
            f"scale {format_figure(b)}, outside the acceptance interval [{format_figure(lo)}, {format_figure(hi)}] "
            f"(n={arr.size}, exact Gamma test, failure probability {p:g})"
        )


def laplace_difference_cdf(x: Any, scale: float) -> Any:
    r"""Cdf of :math:`Z_1 - Z_2` for independent :math:`Z_1, Z_2 \sim \mathrm{Laplace}(0, b)`.

    The density is :math:`(1 + |z|/b)\, e^{-|z|/b} / (4b)`, so for :math:`x \ge 0` the cdf is
    :math:`1 - \tfrac14 (2 + x/b)\, e^{-x/b}`, and it is symmetric about 0.

    Raises
    ------
    ValueError
        If ``scale`` is not finite and > 0, or ``x`` contains NaN.
    TypeError
        If ``x`` is not real numbers (strings such as ``"1"`` are not parsed).

    Notes
    -----
    ``x = ±inf``, or ``|x| / b`` beyond the float range, gives exactly 1 or 0 (the limit).

    References
    ----------
    Kotz, Kozubowski and Podgorski, *The Laplace Distribution and Generalizations*, 2001,
    Section 2.3 (sums and differences of Laplace variables).
    """
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise TypeError(f"x must be a real number or an array of them, got {type(x).__name__}") from exc
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"x must be a real number or an array of them, got {type(x).__name__} of dtype {raw.dtype}")
    values = raw.astype(float)
    if np.any(np.isnan(values)):
        raise ValueError("x must not contain NaN")
    b = check_positive(scale, "scale")
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.abs(values) / b
        tail = np.where(np.isinf(t), 0.0, 0.25 * (2.0 + t) * np.exp(-t))  # (2 + t) e^-t -> 0
    upper = 1.0 - tail
    out = np.where(values >= 0, upper, tail)
    return out if out.ndim else float(out)


def assert_independent_laplace(
    first: Any,
    second: Any,
    scale: float,
    *,
    failure_prob: float = DEFAULT_FAILURE_PROB,
) -> None:
    r"""Assert that ``first[i] - second[i]`` are i.i.d. differences of independent
    ``Laplace(scale)`` noises (Kolmogorov-Smirnov with the DKW bound).

    Pass the noise (output minus exact answer) of two cells that must be independent, over many
    calls, or of disjoint pairs of cells within calls, so that the differences are i.i.d.
    Noise shared between the two cells gives differences 0 and fails; the marginals of each
    cell are not checked here (use :func:`assert_laplace_scale`).

    Raises
    ------
    AssertionError
        When the differences do not follow :func:`laplace_difference_cdf`.
    ValueError, TypeError
        For empty, non-finite or differently shaped inputs, a bad scale or ``failure_prob``.
    """
    a = check_samples(first, "first")
    b = check_samples(second, "second")
    if a.shape != b.shape:
        raise ValueError(f"first and second must have the same size, got {a.size} and {b.size}")
    s = check_positive(scale, "scale")
    p = check_failure_prob(failure_prob)
    try:
        assert_distribution(a - b, lambda x: laplace_difference_cdf(x, s), failure_prob=p)
    except AssertionError as err:
        raise AssertionError(
            f"the differences between the two noise arrays are not those of independent "
            f"Laplace({format_figure(s)}) noises: {err}"
        ) from None
