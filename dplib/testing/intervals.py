r"""Tolerances and confidence intervals derived from concentration inequalities.

Each function returns a bound fixed before the samples are seen, with a stated failure
probability: :func:`clopper_pearson` (exact binomial interval), :func:`mean_tolerance`
(Hoeffding, Bernstein, median of means, or the asymptotic normal quantile) and
:func:`dkw_tolerance` (Dvoretzky-Kiefer-Wolfowitz-Massart, for the Kolmogorov-Smirnov distance).
The assertions of :mod:`dplib.testing` compare samples against these tolerances.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats

from dplib._validation import check_data, check_integer, check_positive, check_probability
from dplib.testing._common import (
    DEFAULT_FAILURE_PROB,
    check_bounds_pair,
    check_failure_prob,
    check_method,
)

__all__ = ["clopper_pearson", "mean_tolerance", "dkw_tolerance"]

MEAN_METHODS = (
    "auto",
    "hoeffding",
    "bernstein",
    "empirical-bernstein",
    "median-of-means",
    "gaussian",
)
# Largest number of groups tried by median-of-means (the optimum is ~40 for failure_prob=1e-9).
_MOM_MAX_GROUPS = 4001


# --------------------------------------------------------------------------------------------
# Clopper-Pearson
# --------------------------------------------------------------------------------------------
def clopper_pearson(k: Any, n: int, alpha: float = 0.05) -> tuple[Any, Any]:
    """Exact two-sided Clopper-Pearson confidence interval for a binomial proportion.

    The interval ``[low, high]`` contains the success probability ``q`` of ``k ~ Binomial(n, q)``
    with probability at least ``1 - alpha``, for every ``q``:

    ``low = Beta.ppf(alpha / 2; k, n - k + 1)`` (0 when ``k = 0``),
    ``high = Beta.isf(alpha / 2; k + 1, n - k)`` (1 when ``k = n``).

    Parameters
    ----------
    k : int or array_like of int
        Numbers of successes, each in ``[0, n]``.
    n : int
        Number of trials, ``>= 1``.
    alpha : float
        Total non-coverage probability, in (0, 1); each side gets ``alpha / 2``.

    Returns
    -------
    (low, high) : tuple of floats, or of arrays shaped like ``k``

    Raises
    ------
    ValueError
        If ``k`` is not integer-valued in ``[0, n]``, ``n < 1`` or ``alpha`` is not in (0, 1).

    Notes
    -----
    The bounds are the beta quantiles of Clopper & Pearson (1934), eq. for the "central" interval,
    using the identity ``P(Binomial(n, q) >= k) = I_q(k, n - k + 1)`` between binomial tails and the
    regularized incomplete beta function. For ``k = 0`` the upper bound is ``1 - (alpha/2)**(1/n)``.

    References
    ----------
    C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits illustrated in the
    case of the binomial", Biometrika 26(4):404-413, 1934.

    Examples
    --------
    >>> low, high = clopper_pearson(0, 10, 0.05)
    >>> round(high, 4)  # 1 - 0.025 ** (1 / 10)
    0.3085
    """
    n = check_integer(n, "n", minimum=1)
    alpha = check_probability(alpha, "alpha", low_open=True, high_open=True)
    k_arr = check_data(k, "k")
    if np.any(k_arr != np.round(k_arr)) or np.any(k_arr < 0) or np.any(k_arr > n):
        raise ValueError(f"k must be integers in [0, n] = [0, {n}], got {k!r}")
    low, high = cp_one_sided(k_arr, n, alpha / 2)
    if np.ndim(k) == 0:
        return float(low), float(high)
    return low, high


def cp_one_sided(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper-Pearson bounds, each holding with probability >= 1 - alpha."""
    k = np.asarray(k, dtype=float)
    with np.errstate(all="ignore"):
        low = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1), n - k + 1), 0.0)
        high = np.where(k < n, stats.beta.isf(alpha, k + 1, np.maximum(n - k, 1)), 1.0)
    return low, high


# --------------------------------------------------------------------------------------------
# means
# --------------------------------------------------------------------------------------------
def hoeffding_halfwidth(n: int, width: float, p: float) -> float:
    # Hoeffding (1963), Theorem 2: P(|mean - mu| >= t) <= 2 exp(-2 n t^2 / (b - a)^2).
    return width * math.sqrt(math.log(2.0 / p) / (2.0 * n))


def _bernstein(n: int, width: float, variance: float, p: float) -> float:
    # Bernstein: P(|mean - mu| >= t) <= 2 exp(-n t^2 / (2 sigma^2 + 2 c t / 3)), |X - mu| <= c;
    # c = b - a. Solving for t gives the positive root below (Boucheron et al. 2013, Cor. 2.11).
    log_term = math.log(2.0 / p)
    c = width * log_term / (3.0 * n)
    return c + math.sqrt(c * c + 2.0 * variance * log_term / n)


def empirical_bernstein(arr: np.ndarray, width: float, p: float) -> float:
    # Maurer & Pontil (2009), Theorem 4, for [0, 1] variables, one-sided at delta:
    #   E X - mean <= sqrt(2 V_n ln(2/delta) / n) + 7 ln(2/delta) / (3 (n - 1)),
    # applied to X and 1 - X with delta = p / 2 each (hence ln(4/p)) and rescaled by b - a.
    n = arr.size
    log_term = math.log(4.0 / p)
    sample_var = float(np.var(arr, ddof=1))
    return math.sqrt(2.0 * sample_var * log_term / n) + 7.0 * width * log_term / (3.0 * (n - 1))


@lru_cache(maxsize=128)
def _mom_quantiles(p: float, max_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Odd group counts k and the largest per-group failure probability q_k they tolerate.

    The median of k group estimates is off by more than t only if at least (k + 1) / 2 of them
    are, so P(fail) <= P(Binomial(k, q) >= (k + 1) / 2) = I_q((k + 1) / 2, (k + 1) / 2), the
    regularized incomplete beta function; q_k solves I_q = p.
    """
    k = np.arange(1, max(max_groups, 1) + 1, 2)
    j = (k + 1) // 2
    q = stats.beta.ppf(p, j, k - j + 1)
    return k, q


def mom_plan(
    n: int, p: float, group_variance: Callable[[np.ndarray], np.ndarray], min_group: int = 1
) -> tuple[float, int]:
    """Number of groups k and tolerance t minimizing the median-of-means tolerance.

    ``group_variance(m)`` is the variance of one group's statistic for a group of size m.
    Chebyshev gives P(|group - target| >= t) <= group_variance(m) / t^2 =: q; the groups have
    sizes n // k or n // k + 1, so the smallest size bounds every group's q.
    """
    max_groups = min(n // min_group, _MOM_MAX_GROUPS)
    if max_groups < 1:
        raise ValueError(f"samples must contain at least {min_group} values, got {n}")
    k, q = _mom_quantiles(p, max_groups if max_groups % 2 else max_groups - 1 or 1)
    sizes = n // k
    tolerance = np.sqrt(group_variance(sizes.astype(float)) / q)
    best = int(np.argmin(tolerance))
    return float(tolerance[best]), int(k[best])


def mean_rule(
    n: int,
    bounds: tuple[float, float] | None,
    variance: float | None,
    p: float,
    method: str,
) -> tuple[float, str, int | None]:
    """Data-independent tolerance for the mean: (t, name of the bound, groups or None)."""
    width = None if bounds is None else bounds[1] - bounds[0]
    if width is not None and variance is not None and variance > width**2 / 4 * (1 + 1e-12):
        raise ValueError(
            f"variance must be <= (upper - lower)^2 / 4 = {width**2 / 4:g} for values within "
            f"bounds (Popoviciu's inequality), got {variance!r}"
        )
    if method == "auto":
        if width is not None and variance is not None:
            hoeff, bern = hoeffding_halfwidth(n, width, p), _bernstein(n, width, variance, p)
            return (
                (hoeff, "Hoeffding bound", None)
                if hoeff <= bern
                else (bern, "Bernstein bound", None)
            )
        if width is not None:
            return hoeffding_halfwidth(n, width, p), "Hoeffding bound", None
        if variance is not None:
            method = "median-of-means"
        else:
            raise ValueError(
                "a tolerance needs bounds=(lower, upper) for bounded samples or variance=... for "
                "unbounded ones; neither was given"
            )
    if method == "hoeffding":
        if width is None:
            raise ValueError("method='hoeffding' needs bounds=(lower, upper)")
        return hoeffding_halfwidth(n, width, p), "Hoeffding bound", None
    if method == "bernstein":
        if width is None or variance is None:
            raise ValueError("method='bernstein' needs both bounds=(lower, upper) and variance=...")
        return _bernstein(n, width, variance, p), "Bernstein bound", None
    if method == "median-of-means":
        if variance is None:
            raise ValueError("method='median-of-means' needs variance=...")
        t, k = mom_plan(n, p, lambda m: variance / m)
        return t, f"median-of-means with {k} groups, Chebyshev + binomial tail", k
    if method == "gaussian":
        if variance is None and width is None:
            raise ValueError("method='gaussian' needs variance=... (or bounds, for the worst case)")
        var = variance if variance is not None else width**2 / 4
        t = float(stats.norm.isf(p / 2)) * math.sqrt(var / n)
        return t, "normal approximation (CLT, asymptotic)", None
    raise ValueError(f"method={method!r} is not available here")  # pragma: no cover


def mean_tolerance(
    n: int,
    *,
    bounds: tuple[float, float] | None = None,
    variance: float | None = None,
    failure_prob: float = DEFAULT_FAILURE_PROB,
    method: str = "auto",
) -> float:
    r"""Tolerance ``t`` such that an estimate of the mean from ``n`` i.i.d. samples satisfies
    ``P(|estimate - mean| > t) <= failure_prob``.

    The bound depends on what is known about the samples:

    * ``bounds=(a, b)`` (values in ``[a, b]``), Hoeffding's inequality for the sample mean:
      :math:`t = (b - a)\sqrt{\ln(2/p) / (2n)}`.
    * ``bounds`` and ``variance=σ²``: the smaller of Hoeffding and Bernstein,
      :math:`P(|\bar X - \mu| \ge t) \le 2\exp(-n t^2 / (2σ^2 + 2(b-a)t/3))`, solved for ``t``.
      Both tolerances are fixed before seeing data, so taking the smaller costs nothing.
    * only ``variance=σ²`` (unbounded samples such as Laplace noise): the **median-of-means**
      estimator. The samples are split into ``k`` (odd) groups; by Chebyshev each group mean is
      off by ``>= t`` with probability at most :math:`q = kσ^2/(n t^2)`; the median is off only if
      at least ``(k+1)/2`` groups are, which has probability at most
      :math:`P(\mathrm{Bin}(k, q) \ge (k+1)/2) \le \exp(-2k(1/2 - q)^2)` (Hoeffding). The exact
      binomial tail is used, and ``k`` is chosen to minimise ``t`` (for ``p = 1e-9``: ``k = 39``,
      :math:`t \approx 18.5\,σ/\sqrt n`).
    * ``method="gaussian"``: the CLT quantile :math:`t = z_{1-p/2}\, σ/\sqrt n` (``6.11 σ/√n`` for
      ``p = 1e-9``). **Asymptotic only**: valid for sums of many i.i.d. light-tailed terms, with no
      finite-sample guarantee so far in the tail. Never chosen by default.

    Parameters
    ----------
    n : int
        Number of samples, ``>= 1``.
    bounds : (float, float), optional
        Known lower and upper bounds of every sample.
    variance : float, optional
        Known variance of one sample, ``> 0``.
    failure_prob : float
        Probability ``p`` in (0, 1) that a correct implementation is rejected.
    method : {"auto", "hoeffding", "bernstein", "median-of-means", "gaussian"}
        ``"auto"`` (default) picks the rigorous bound as above. ``"empirical-bernstein"`` is
        data-dependent and only available in :func:`assert_mean`.

    Returns
    -------
    float
        The tolerance ``t``. For ``median-of-means`` it applies to the median-of-means estimate
        that :func:`assert_mean` computes, not to the plain sample mean.

    Raises
    ------
    ValueError
        For ``n < 1``, ``failure_prob`` outside (0, 1), neither ``bounds`` nor ``variance``,
        a variance above ``(b - a)^2 / 4``, or a method lacking what it needs.

    References
    ----------
    W. Hoeffding, "Probability inequalities for sums of bounded random variables", JASA 58:13-30,
    1963, Theorem 2. S. Boucheron, G. Lugosi and P. Massart, *Concentration Inequalities*, OUP
    2013, Corollary 2.11 (Bernstein). Median of means: A. Nemirovski and D. Yudin, *Problem
    complexity and method efficiency in optimization*, 1983; G. Lugosi and S. Mendelson, "Mean
    estimation and regression under heavy-tailed distributions: a survey", FoCM 19:1145-1190, 2019,
    Section 2 (Chebyshev per group, binomial tail for the median).

    Examples
    --------
    >>> round(mean_tolerance(10_000, bounds=(0, 1)), 6)  # sqrt(ln(2e9) / 20000)
    0.032723
    """
    n = check_integer(n, "n", minimum=1)
    p = check_failure_prob(failure_prob)
    bounds = check_bounds_pair(bounds)
    variance = None if variance is None else check_positive(variance, "variance")
    method = check_method(method, MEAN_METHODS)
    if method == "empirical-bernstein":
        raise ValueError("method='empirical-bernstein' depends on the samples: use assert_mean")
    return mean_rule(n, bounds, variance, p, method)[0]


# --------------------------------------------------------------------------------------------
# distributions: the Kolmogorov-Smirnov distance
# --------------------------------------------------------------------------------------------
def dkw_tolerance(n: int, failure_prob: float = DEFAULT_FAILURE_PROB) -> float:
    r"""Tolerance on the Kolmogorov-Smirnov distance from the DKW inequality.

    :math:`P(\sup_x |F_n(x) - F(x)| > t) \le 2 e^{-2 n t^2}` (Massart 1990, tight constant), hence
    :math:`t = \sqrt{\ln(2/p) / (2n)}`.

    Parameters
    ----------
    n : int
        Number of samples, ``>= 1``.
    failure_prob : float
        ``p``, in (0, 1).

    Returns
    -------
    float

    References
    ----------
    P. Massart, "The tight constant in the Dvoretzky-Kiefer-Wolfowitz inequality", Annals of
    Probability 18(3):1269-1283, 1990, Theorem 1 (two-sided form, valid for every ``t``).
    """
    n = check_integer(n, "n", minimum=1)
    p = check_failure_prob(failure_prob)
    return math.sqrt(math.log(2.0 / p) / (2.0 * n))
