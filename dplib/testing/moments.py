r"""Assertions on the mean and the variance of i.i.d. samples.

:func:`assert_mean` catches a biased estimator or noise that is not centred; :func:`assert_variance`
catches a wrong noise scale (a factor 2 in the scale is a factor 4 in the variance). Their
tolerances come from :mod:`dplib.testing.intervals`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats

from dplib._validation import check_positive
from dplib.testing._common import (
    DEFAULT_FAILURE_PROB,
    check_bounds_pair,
    check_failure_prob,
    check_method,
    check_real_scalar,
    check_samples,
    check_within_bounds,
    format_figure,
)
from dplib.testing.intervals import (
    MEAN_METHODS,
    empirical_bernstein,
    hoeffding_halfwidth,
    mean_rule,
    mom_plan,
)

__all__ = ["assert_mean", "assert_variance"]

_VARIANCE_METHODS = ("auto", "bounded", "median-of-means", "gaussian")
# A fixed, data-independent permutation applied before forming median-of-means groups, so that
# sorted input (a multiset of i.i.d. draws) is handled; the assertions stay deterministic.
_PERMUTATION_SEED = 20091


# --------------------------------------------------------------------------------------------
# means
# --------------------------------------------------------------------------------------------
def _permuted(arr: np.ndarray) -> np.ndarray:
    return arr[np.random.default_rng(_PERMUTATION_SEED).permutation(arr.size)]


def _median_of_means(arr: np.ndarray, k: int, statistic: Callable[[np.ndarray], float]) -> float:
    groups = np.array_split(_permuted(arr), k)
    return float(np.median([statistic(g) for g in groups]))


def assert_mean(
    samples: Any,
    expected: float,
    *,
    bounds: tuple[float, float] | None = None,
    variance: float | None = None,
    failure_prob: float = DEFAULT_FAILURE_PROB,
    method: str = "auto",
) -> None:
    r"""Assert that i.i.d. ``samples`` have mean ``expected`` (two-sided).

    The tolerance is that of :func:`mean_tolerance`, except that with ``bounds`` only and
    ``method="auto"`` the data-dependent **empirical Bernstein** bound of Maurer & Pontil (2009,
    Theorem 4) is computed too, each bound at ``p/2`` (union bound), and the smaller is used:

    .. math:: t_{EB} = \sqrt{2 V_n \ln(4/p') / n} + 7 (b - a) \ln(4/p') / (3 (n - 1)),

    with :math:`V_n` the unbiased sample variance and :math:`p' = p/2`. This is much tighter than
    Hoeffding for low-variance samples (rare events, small noise). With only ``variance`` the
    estimate compared is the median of group means (see :func:`mean_tolerance`), formed after a
    fixed data-independent permutation (so sorted input is fine; the check is deterministic).

    Parameters
    ----------
    samples : array_like
        I.i.d. draws (any shape; flattened). Must be finite and non-empty.
    expected : float
        The mean a correct implementation has.
    bounds, variance, failure_prob
        As in :func:`mean_tolerance`. Samples outside ``bounds`` fail the assertion.
    method : {"auto", "hoeffding", "bernstein", "empirical-bernstein", "median-of-means", "gaussian"}
        See :func:`mean_tolerance`; ``"gaussian"`` is asymptotic only.

    Raises
    ------
    AssertionError
        When the estimate differs from ``expected`` by more than the tolerance, or a sample lies
        outside ``bounds``.
    ValueError
        For empty samples, NaN, ``failure_prob`` outside (0, 1), or missing ``bounds``/``variance``.

    References
    ----------
    A. Maurer and M. Pontil, "Empirical Bernstein bounds and sample variance penalization",
    COLT 2009, Theorem 4. See :func:`mean_tolerance` for the others.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> assert_mean(rng.random(10_000), 0.5, bounds=(0, 1))
    >>> assert_mean(rng.laplace(0.0, 2.0, 10_000), 0.0, variance=8.0)
    """
    p = check_failure_prob(failure_prob)
    bounds = check_bounds_pair(bounds)
    variance = None if variance is None else check_positive(variance, "variance")
    method = check_method(method, MEAN_METHODS)
    expected = check_real_scalar(expected, "expected")
    arr = check_samples(samples, minimum=2 if method == "empirical-bernstein" else 1)
    n = arr.size
    if bounds is not None:
        if not bounds[0] <= expected <= bounds[1]:
            raise ValueError(
                f"expected must lie within bounds [{bounds[0]:g}, {bounds[1]:g}], got {expected!r}"
            )
        check_within_bounds(arr, bounds)

    if method == "empirical-bernstein":
        if bounds is None:
            raise ValueError("method='empirical-bernstein' needs bounds=(lower, upper)")
        tol, name, k = (
            empirical_bernstein(arr, bounds[1] - bounds[0], p),
            "empirical Bernstein bound",
            None,
        )
    elif method == "auto" and bounds is not None and variance is None and n >= 2:
        width = bounds[1] - bounds[0]
        hoeff, eb = hoeffding_halfwidth(n, width, p / 2), empirical_bernstein(arr, width, p / 2)
        tol, name, k = (
            (hoeff, "Hoeffding bound", None)
            if hoeff <= eb
            else (eb, "empirical Bernstein bound", None)
        )
        name += " (union with the other bound)"
    else:
        tol, name, k = mean_rule(n, bounds, variance, p, method)

    if k is None:
        estimate, what = float(np.mean(arr)), "sample mean"
    else:
        estimate, what = _median_of_means(arr, k, np.mean), "median-of-means estimate"
    if not abs(estimate - expected) <= tol:
        extra = (
            f"; the plain sample mean is {format_figure(float(np.mean(arr)))}"
            if k is not None
            else ""
        )
        raise AssertionError(
            f"{what} {format_figure(estimate)} differs from the expected {format_figure(expected)} by "
            f"{format_figure(abs(estimate - expected))}, more than the tolerance {format_figure(tol)} "
            f"(n={n}, {name}, failure probability {p:g}){extra}"
        )


# --------------------------------------------------------------------------------------------
# variances
# --------------------------------------------------------------------------------------------
def sample_variance_variance(m: np.ndarray, sigma2: float, mu4: float) -> np.ndarray:
    # Var(s^2) = (mu4 - sigma^4 (m - 3) / (m - 1)) / m for the unbiased sample variance of m
    # i.i.d. values (Casella & Berger, Statistical Inference, 2nd ed., Exercise 5.8(b)).
    return (mu4 - sigma2**2 * (m - 3) / (m - 1)) / m


def assert_variance(
    samples: Any,
    expected_variance: float,
    *,
    bounds: tuple[float, float] | None = None,
    fourth_moment: float | None = None,
    failure_prob: float = DEFAULT_FAILURE_PROB,
    relative_tolerance: float | None = None,
    method: str = "auto",
) -> None:
    r"""Assert that i.i.d. ``samples`` have variance ``expected_variance`` (two-sided).

    Meant to catch a wrong noise scale: a factor 2 in the scale is a factor 4 in the variance.
    Write :math:`σ_0^2` for ``expected_variance``, :math:`V_n` for the unbiased sample variance
    and ``p`` for ``failure_prob``. The acceptance region comes from one of:

    * ``bounds=(a, b)`` (``method="bounded"``), whichever region is narrower (both are fixed
      before seeing data, so choosing costs nothing):

      - Hoeffding's bound for U-statistics (Hoeffding 1963, Section 5c): :math:`V_n` is a
        U-statistic with kernel :math:`(x-y)^2/2 \in [0, (b-a)^2/2]`, so
        :math:`|V_n - σ_0^2| \le \frac{(b-a)^2}{2}\sqrt{\ln(2/p) / (2\lfloor n/2 \rfloor)}`;
      - Maurer & Pontil (2009), Theorem 10, for the sample standard deviation of [0, 1]
        variables, both directions at ``p/2``, rescaled:
        :math:`|\sqrt{V_n} - σ_0| \le (b-a)\sqrt{2\ln(2/p)/(n-1)}`.

    * ``fourth_moment=μ4`` (the central fourth moment, e.g. ``6 σ^4`` for Laplace, ``3 σ^4`` for
      Gaussian noise; ``method="median-of-means"``): median of the sample variances of ``k``
      groups of size ``m``. Each has variance :math:`(μ_4 - σ^4 (m-3)/(m-1))/m` (Casella &
      Berger 2002, Exercise 5.8(b)); Chebyshev per group and the binomial tail for the median, ``k`` chosen to
      minimise the tolerance, as in :func:`mean_tolerance`.
    * ``method="gaussian"`` with ``fourth_moment``: normal approximation of :math:`V_n`,
      :math:`t = z_{1-p/2}\sqrt{Var(V_n)}`. Asymptotic only.

    Parameters
    ----------
    samples : array_like
        I.i.d. draws, at least 2 (at least 4 with ``fourth_moment``).
    expected_variance : float
        The variance a correct implementation has, ``> 0``.
    bounds : (float, float), optional
        Known bounds of every sample.
    fourth_moment : float, optional
        Central fourth moment :math:`E(X - μ)^4` of a correct implementation's samples,
        ``>= expected_variance**2``.
    failure_prob : float
        Probability in (0, 1) that a correct implementation is rejected.
    relative_tolerance : float, optional
        Extra slack: the region is widened by ``relative_tolerance * expected_variance`` on both
        sides, for when the expected variance is itself only approximate. Never narrows it.
    method : {"auto", "bounded", "median-of-means", "gaussian"}
        ``"auto"``: with ``bounds`` and ``fourth_moment`` both given, the narrower region.

    Raises
    ------
    AssertionError
        When the estimate lies outside the acceptance region, or a sample outside ``bounds``.
    ValueError
        For bad arguments, or when neither ``bounds`` nor ``fourth_moment`` is given (a variance
        cannot be bounded from the samples alone).

    References
    ----------
    W. Hoeffding (1963), JASA 58:13-30, Section 5c. A. Maurer and M. Pontil, "Empirical Bernstein
    bounds and sample variance penalization", COLT 2009, Theorem 10. G. Casella and R. L. Berger,
    *Statistical Inference*, 2nd ed., 2002, Exercise 5.8(b). Median of means: see :func:`mean_tolerance`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> assert_variance(rng.laplace(0.0, 1.0, 10_000), 2.0, fourth_moment=24.0)
    """
    p = check_failure_prob(failure_prob)
    sigma2 = check_positive(expected_variance, "expected_variance")
    bounds = check_bounds_pair(bounds)
    method = check_method(method, _VARIANCE_METHODS)
    mu4 = None if fourth_moment is None else check_positive(fourth_moment, "fourth_moment")
    slack = (
        0.0
        if relative_tolerance is None
        else check_positive(relative_tolerance, "relative_tolerance")
    )
    if mu4 is not None and mu4 < sigma2**2 * (1 - 1e-12):
        raise ValueError(
            f"fourth_moment must be >= expected_variance**2 = {sigma2**2:g} (Jensen), got {fourth_moment!r}"
        )
    if bounds is not None and sigma2 > (bounds[1] - bounds[0]) ** 2 / 4 * (1 + 1e-12):
        raise ValueError(
            f"expected_variance must be <= (upper - lower)^2 / 4 = {(bounds[1] - bounds[0]) ** 2 / 4:g} "
            f"for values within bounds (Popoviciu's inequality), got {expected_variance!r}"
        )
    if bounds is None and mu4 is None:
        raise ValueError(
            "assert_variance needs bounds=(lower, upper) or fourth_moment=...: a tolerance for the "
            "variance cannot be derived from the samples alone"
        )
    if method == "bounded" and bounds is None:
        raise ValueError("method='bounded' needs bounds=(lower, upper)")
    if method in ("median-of-means", "gaussian") and mu4 is None:
        raise ValueError(f"method={method!r} needs fourth_moment=...")
    arr = check_samples(samples, minimum=4 if method in ("median-of-means", "gaussian") else 2)
    n = arr.size
    if bounds is not None:
        check_within_bounds(arr, bounds)

    # candidate regions: (low, high, name, groups)
    candidates: list[tuple[float, float, str, int | None]] = []
    if bounds is not None and method in ("auto", "bounded"):
        width = bounds[1] - bounds[0]
        t_u = width**2 / 2 * math.sqrt(math.log(2 / p) / (2 * (n // 2)))
        candidates.append((sigma2 - t_u, sigma2 + t_u, "Hoeffding bound for U-statistics", None))
        t_sd = width * math.sqrt(2 * math.log(2 / p) / (n - 1))
        sigma = math.sqrt(sigma2)
        candidates.append(
            (
                max(sigma - t_sd, 0.0) ** 2,
                (sigma + t_sd) ** 2,
                "Maurer-Pontil bound on the standard deviation",
                None,
            )
        )
    if mu4 is not None and n >= 4 and method in ("auto", "median-of-means"):
        t, k = mom_plan(n, p, lambda m: sample_variance_variance(m, sigma2, mu4), min_group=2)
        candidates.append(
            (
                sigma2 - t,
                sigma2 + t,
                f"median-of-means with {k} groups, Chebyshev + binomial tail",
                k,
            )
        )
    if method == "gaussian":
        t = float(stats.norm.isf(p / 2)) * math.sqrt(
            sample_variance_variance(np.float64(n), sigma2, mu4)
        )
        candidates.append((sigma2 - t, sigma2 + t, "normal approximation (asymptotic)", None))
    if not candidates:
        raise ValueError("samples must contain at least 4 values for a bound from fourth_moment")
    low, high, name, k = min(candidates, key=lambda c: c[1] - c[0])
    low, high = max(low - slack * sigma2, 0.0), high + slack * sigma2

    if k is None:
        estimate, what = float(np.var(arr, ddof=1)), "sample variance"
    else:
        estimate, what = (
            _median_of_means(arr, k, lambda g: float(np.var(g, ddof=1))),
            "median-of-means variance estimate",
        )
    if not low <= estimate <= high:
        ratio = estimate / sigma2
        hint = (
            f" (ratio {format_figure(ratio)}; a noise scale off by a factor c changes the variance by c^2)"
            if ratio > 0
            else ""
        )
        raise AssertionError(
            f"{what} {format_figure(estimate)} differs from the expected variance {format_figure(sigma2)}: it is "
            f"outside the acceptance interval [{format_figure(low)}, {format_figure(high)}] (n={n}, {name}, "
            f"failure probability {p:g}){hint}"
        )
