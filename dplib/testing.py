"""Statistical assertions for randomized code, with a stated false-failure probability.

Every assertion here compares samples of a randomized function with what a correct
implementation would produce, using a tolerance *derived from a concentration inequality*
(named, with its source, in each docstring). A correct implementation fails with probability at
most ``failure_prob`` (1e-9 by default) whatever seed it uses; a plausibly wrong one (noise scale
off by a factor 2, a biased estimator, a wrong sensitivity) fails with high probability at the
sample sizes a test uses. Failures raise :class:`AssertionError` with a message that states what
was expected, what was observed, the tolerance, the sample size and the bound used.

Bad arguments (``failure_prob`` outside (0, 1), empty samples, NaN, ...) raise :class:`ValueError`
or :class:`TypeError`, as everywhere in dplib; an :class:`AssertionError` always means "the
samples contradict the claim".

The functions are used by dplib's own test suite and by the hidden tests of the course's graded
notebooks::

    samples = student_laplace(np.zeros(10_000), sensitivity=1.0, epsilon=0.5, rng=seed)
    assert_distribution(samples, scipy.stats.laplace(scale=2.0).cdf)
    assert_dp(lambda x, rng: student_laplace(x, 1.0, 1.0, rng=rng), 0.0, 1.0, epsilon=1.0)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats

from dplib._validation import (
    as_generator,
    check_bounds,
    check_data,
    check_delta,
    check_epsilon,
    check_integer,
    check_positive,
    check_probability,
)

__all__ = [
    "clopper_pearson",
    "mean_tolerance",
    "assert_mean",
    "assert_variance",
    "dkw_tolerance",
    "assert_distribution",
    "assert_frequencies",
    "DPAuditResult",
    "audit_dp",
    "assert_dp",
]

DEFAULT_FAILURE_PROB = 1e-9

_MEAN_METHODS = (
    "auto",
    "hoeffding",
    "bernstein",
    "empirical-bernstein",
    "median-of-means",
    "gaussian",
)
_VARIANCE_METHODS = ("auto", "bounded", "median-of-means", "gaussian")
# Largest number of groups tried by median-of-means (the optimum is ~40 for failure_prob=1e-9).
_MOM_MAX_GROUPS = 4001
# A fixed, data-independent permutation applied before forming median-of-means groups, so that
# sorted input (a multiset of i.i.d. draws) is handled; the assertions stay deterministic.
_PERMUTATION_SEED = 20091


# --------------------------------------------------------------------------------------------
# argument checking and message helpers
# --------------------------------------------------------------------------------------------
def _check_failure_prob(failure_prob: Any) -> float:
    return check_probability(failure_prob, "failure_prob", low_open=True, high_open=True)


def _check_samples(samples: Any, name: str = "samples", *, minimum: int = 1) -> np.ndarray:
    arr = check_data(samples, name).ravel()
    if arr.size < minimum:
        raise ValueError(f"{name} must contain at least {minimum} values, got {arr.size}")
    return arr


def _check_bounds_pair(bounds: Any) -> tuple[float, float] | None:
    if bounds is None:
        return None
    if (
        isinstance(bounds, str | bytes)
        or not isinstance(bounds, Sequence | np.ndarray)
        or len(bounds) != 2
    ):
        raise TypeError(f"bounds must be a pair (lower, upper), got {bounds!r}")
    return check_bounds(bounds[0], bounds[1])


def _check_method(method: Any, allowed: tuple[str, ...]) -> str:
    if method not in allowed:
        raise ValueError(f"method must be one of {', '.join(map(repr, allowed))}, got {method!r}")
    return method


def _check_real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real | np.ndarray):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    out = (
        float(np.asarray(value, dtype=float).item())
        if isinstance(value, np.ndarray)
        else float(value)
    )
    if not math.isfinite(out):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return out


def _check_within_bounds(
    arr: np.ndarray, bounds: tuple[float, float], name: str = "samples"
) -> None:
    lo, hi = bounds
    bad = (arr < lo) | (arr > hi)
    if np.any(bad):
        value = arr[np.argmax(bad)]
        raise AssertionError(
            f"{name} contain {np.count_nonzero(bad)} value(s) outside the declared bounds "
            f"[{lo:g}, {hi:g}], e.g. {value:g}; a correct implementation never produces them"
        )


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _permuted(arr: np.ndarray) -> np.ndarray:
    return arr[np.random.default_rng(_PERMUTATION_SEED).permutation(arr.size)]


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
    low, high = _cp_one_sided(k_arr, n, alpha / 2)
    if np.ndim(k) == 0:
        return float(low), float(high)
    return low, high


def _cp_one_sided(k: np.ndarray, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper-Pearson bounds, each holding with probability >= 1 - alpha."""
    k = np.asarray(k, dtype=float)
    with np.errstate(all="ignore"):
        low = np.where(k > 0, stats.beta.ppf(alpha, np.maximum(k, 1), n - k + 1), 0.0)
        high = np.where(k < n, stats.beta.isf(alpha, k + 1, np.maximum(n - k, 1)), 1.0)
    return low, high


# --------------------------------------------------------------------------------------------
# means
# --------------------------------------------------------------------------------------------
def _hoeffding(n: int, width: float, p: float) -> float:
    # Hoeffding (1963), Theorem 2: P(|mean - mu| >= t) <= 2 exp(-2 n t^2 / (b - a)^2).
    return width * math.sqrt(math.log(2.0 / p) / (2.0 * n))


def _bernstein(n: int, width: float, variance: float, p: float) -> float:
    # Bernstein: P(|mean - mu| >= t) <= 2 exp(-n t^2 / (2 sigma^2 + 2 c t / 3)), |X - mu| <= c;
    # c = b - a. Solving for t gives the positive root below (Boucheron et al. 2013, Cor. 2.11).
    log_term = math.log(2.0 / p)
    c = width * log_term / (3.0 * n)
    return c + math.sqrt(c * c + 2.0 * variance * log_term / n)


def _empirical_bernstein(arr: np.ndarray, width: float, p: float) -> float:
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


def _mom_plan(
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


def _mean_rule(
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
            hoeff, bern = _hoeffding(n, width, p), _bernstein(n, width, variance, p)
            return (
                (hoeff, "Hoeffding bound", None)
                if hoeff <= bern
                else (bern, "Bernstein bound", None)
            )
        if width is not None:
            return _hoeffding(n, width, p), "Hoeffding bound", None
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
        return _hoeffding(n, width, p), "Hoeffding bound", None
    if method == "bernstein":
        if width is None or variance is None:
            raise ValueError("method='bernstein' needs both bounds=(lower, upper) and variance=...")
        return _bernstein(n, width, variance, p), "Bernstein bound", None
    if method == "median-of-means":
        if variance is None:
            raise ValueError("method='median-of-means' needs variance=...")
        t, k = _mom_plan(n, p, lambda m: variance / m)
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
    p = _check_failure_prob(failure_prob)
    bounds = _check_bounds_pair(bounds)
    variance = None if variance is None else check_positive(variance, "variance")
    method = _check_method(method, _MEAN_METHODS)
    if method == "empirical-bernstein":
        raise ValueError("method='empirical-bernstein' depends on the samples: use assert_mean")
    return _mean_rule(n, bounds, variance, p, method)[0]


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
    p = _check_failure_prob(failure_prob)
    bounds = _check_bounds_pair(bounds)
    variance = None if variance is None else check_positive(variance, "variance")
    method = _check_method(method, _MEAN_METHODS)
    expected = _check_real(expected, "expected")
    arr = _check_samples(samples, minimum=2 if method == "empirical-bernstein" else 1)
    n = arr.size
    if bounds is not None:
        if not bounds[0] <= expected <= bounds[1]:
            raise ValueError(
                f"expected must lie within bounds [{bounds[0]:g}, {bounds[1]:g}], got {expected!r}"
            )
        _check_within_bounds(arr, bounds)

    if method == "empirical-bernstein":
        if bounds is None:
            raise ValueError("method='empirical-bernstein' needs bounds=(lower, upper)")
        tol, name, k = (
            _empirical_bernstein(arr, bounds[1] - bounds[0], p),
            "empirical Bernstein bound",
            None,
        )
    elif method == "auto" and bounds is not None and variance is None and n >= 2:
        width = bounds[1] - bounds[0]
        hoeff, eb = _hoeffding(n, width, p / 2), _empirical_bernstein(arr, width, p / 2)
        tol, name, k = (
            (hoeff, "Hoeffding bound", None)
            if hoeff <= eb
            else (eb, "empirical Bernstein bound", None)
        )
        name += " (union with the other bound)"
    else:
        tol, name, k = _mean_rule(n, bounds, variance, p, method)

    if k is None:
        estimate, what = float(np.mean(arr)), "sample mean"
    else:
        estimate, what = _median_of_means(arr, k, np.mean), "median-of-means estimate"
    if not abs(estimate - expected) <= tol:
        extra = f"; the plain sample mean is {_fmt(float(np.mean(arr)))}" if k is not None else ""
        raise AssertionError(
            f"{what} {_fmt(estimate)} differs from the expected {_fmt(expected)} by "
            f"{_fmt(abs(estimate - expected))}, more than the tolerance {_fmt(tol)} "
            f"(n={n}, {name}, failure probability {p:g}){extra}"
        )


# --------------------------------------------------------------------------------------------
# variances
# --------------------------------------------------------------------------------------------
def _sample_variance_variance(m: np.ndarray, sigma2: float, mu4: float) -> np.ndarray:
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
    p = _check_failure_prob(failure_prob)
    sigma2 = check_positive(expected_variance, "expected_variance")
    bounds = _check_bounds_pair(bounds)
    method = _check_method(method, _VARIANCE_METHODS)
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
    arr = _check_samples(samples, minimum=4 if method in ("median-of-means", "gaussian") else 2)
    n = arr.size
    if bounds is not None:
        _check_within_bounds(arr, bounds)

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
        t, k = _mom_plan(n, p, lambda m: _sample_variance_variance(m, sigma2, mu4), min_group=2)
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
            _sample_variance_variance(np.float64(n), sigma2, mu4)
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
            f" (ratio {_fmt(ratio)}; a noise scale off by a factor c changes the variance by c^2)"
            if ratio > 0
            else ""
        )
        raise AssertionError(
            f"{what} {_fmt(estimate)} differs from the expected variance {_fmt(sigma2)}: it is "
            f"outside the acceptance interval [{_fmt(low)}, {_fmt(high)}] (n={n}, {name}, "
            f"failure probability {p:g}){hint}"
        )


# --------------------------------------------------------------------------------------------
# distributions
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
    p = _check_failure_prob(failure_prob)
    return math.sqrt(math.log(2.0 / p) / (2.0 * n))


def _evaluate_cdf(cdf: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    try:
        values = np.asarray(cdf(x), dtype=float)
        if values.shape != x.shape:
            raise ValueError
    except Exception:  # not vectorized: call it value by value
        values = np.array([float(cdf(v)) for v in x])
    if not np.all(np.isfinite(values)) or np.any(values < -1e-12) or np.any(values > 1 + 1e-12):
        raise ValueError("cdf must return values in [0, 1]")
    return np.clip(values, 0.0, 1.0)


def assert_distribution(
    samples: Any,
    cdf: Callable[[Any], Any],
    *,
    failure_prob: float = DEFAULT_FAILURE_PROB,
) -> None:
    r"""Assert that i.i.d. ``samples`` follow the distribution with cumulative distribution
    function ``cdf`` (Kolmogorov-Smirnov test with the DKW-Massart tolerance).

    The statistic is :math:`D_n = \sup_x |F_n(x) - F(x)|` and the test fails when
    :math:`D_n > \sqrt{\ln(2/p)/(2n)}` (:func:`dkw_tolerance`).

    :math:`D_n` is computed exactly from the values of :math:`|F_n - F|` at each sample ``x`` and
    just below it (at ``numpy.nextafter(x, -inf)``); between samples :math:`F_n` is constant and
    ``F`` monotone, so these points attain the supremum for continuous **and** discrete ``F``
    (``scipy.stats.poisson(3).cdf``, ``scipy.stats.geom(0.5).cdf``, a step function on the
    integers, ...). Each value is a genuine evaluation, so :math:`D_n` never exceeds the true
    supremum and the false-failure guarantee holds for any ``F``: writing :math:`X = F^{-1}(U)`
    with uniform ``U``, :math:`\sup_x|F_n - F| \le \sup_u |G_n(u) - u|` for the uniform empirical
    cdf :math:`G_n`, to which Massart's inequality applies.

    Parameters
    ----------
    samples : array_like
        I.i.d. real draws (flattened), non-empty and finite.
    cdf : callable
        The expected cdf, e.g. ``scipy.stats.laplace(scale=2).cdf``. It is called with a float
        array (or, if that fails, value by value) and must return values in [0, 1].
    failure_prob : float
        ``p``, in (0, 1).

    Raises
    ------
    AssertionError
        When :math:`D_n` exceeds the tolerance.
    ValueError
        For empty samples, NaN, ``failure_prob`` outside (0, 1), or a cdf returning values
        outside [0, 1].
    TypeError
        If ``cdf`` is not callable.

    References
    ----------
    A. Dvoretzky, J. Kiefer and J. Wolfowitz, Ann. Math. Statist. 27(3):642-669, 1956.
    P. Massart, Annals of Probability 18(3):1269-1283, 1990, Theorem 1.

    Examples
    --------
    >>> from scipy import stats
    >>> rng = np.random.default_rng(0)
    >>> assert_distribution(rng.laplace(0.0, 2.0, 10_000), stats.laplace(scale=2.0).cdf)
    """
    p = _check_failure_prob(failure_prob)
    if not callable(cdf):
        raise TypeError(f"cdf must be callable, got {type(cdf).__name__}")
    arr = np.sort(_check_samples(samples))
    n = arr.size
    below = np.nextafter(arr, -np.inf)
    points = np.concatenate([arr, below])
    empirical = np.searchsorted(arr, points, side="right") / n
    expected = _evaluate_cdf(cdf, points)
    gaps = np.abs(empirical - expected)
    worst = int(np.argmax(gaps))
    distance = float(gaps[worst])
    tol = math.sqrt(math.log(2.0 / p) / (2.0 * n))
    if not distance <= tol:
        x = arr[worst % n]
        where = f"at x={_fmt(x)}" if worst < n else f"just below x={_fmt(x)}"
        raise AssertionError(
            f"the empirical cdf differs from the expected cdf by {_fmt(distance)} {where} "
            f"(empirical {_fmt(empirical[worst])}, expected {_fmt(expected[worst])}), more than "
            f"the tolerance {_fmt(tol)} (n={n}, Kolmogorov-Smirnov distance with the "
            f"Dvoretzky-Kiefer-Wolfowitz-Massart bound, failure probability {p:g})"
        )


def assert_frequencies(
    observed: Any,
    probabilities: Sequence[float] | Mapping[Any, float] | np.ndarray,
    *,
    counts: bool = False,
    failure_prob: float = DEFAULT_FAILURE_PROB,
) -> None:
    r"""Assert that categorical outcomes occur with the given ``probabilities``.

    Each category ``c`` is tested on its own with the exact two-sided binomial test: its count
    :math:`K_c \sim \mathrm{Bin}(n, π_c)` under the claim, with p-value
    :math:`\min(1, 2\min(P(K \le k_c), P(K \ge k_c)))` (scipy.stats.binom), and the assertion
    fails when some p-value is at most ``failure_prob / C`` (Bonferroni over the ``C``
    categories). A category with probability 0 that occurs fails at once.

    Parameters
    ----------
    observed : array_like or mapping
        With ``counts=False`` (default): the samples, each a category. With ``counts=True``: the
        count of each category, aligned with ``probabilities`` (a mapping with the same keys is
        accepted too).
    probabilities : sequence or mapping
        A sequence gives category ``i`` probability ``probabilities[i]`` (categories
        ``0, ..., C-1``); a mapping ``{category: probability}`` allows any hashable categories
        (strings, booleans, ...). Must sum to 1.
    counts : bool
        Whether ``observed`` holds counts rather than samples.
    failure_prob : float
        Probability in (0, 1) that a correct implementation is rejected.

    Raises
    ------
    AssertionError
        Naming the worst category: observed and expected counts, the acceptance range of counts.
    ValueError
        For probabilities that are not in [0, 1] or do not sum to 1, negative or non-integer
        counts, no observations, NaN, or ``failure_prob`` outside (0, 1).

    References
    ----------
    C. J. Clopper and E. S. Pearson (1934), Biometrika 26(4):404-413 (exact binomial tails);
    the doubled one-sided p-value is a valid two-sided p-value (P(p-value <= u) <= u).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> assert_frequencies(rng.random(10_000) < 0.75, {True: 0.75, False: 0.25})
    """
    p = _check_failure_prob(failure_prob)
    if isinstance(probabilities, Mapping):
        categories = list(probabilities.keys())
        probs = check_data([probabilities[c] for c in categories], "probabilities")
    else:
        probs = check_data(probabilities, "probabilities").ravel()
        categories = list(range(probs.size))
    if (
        np.any(probs < 0)
        or np.any(probs > 1)
        or abs(float(probs.sum()) - 1.0) > 1e-9 * max(probs.size, 1e3)
    ):
        raise ValueError(
            f"probabilities must be in [0, 1] and sum to 1, got sum {float(probs.sum())!r}"
        )

    if counts:
        if isinstance(observed, Mapping):
            if set(observed) - set(categories):
                raise ValueError(
                    f"observed has categories not in probabilities: {sorted(map(str, set(observed) - set(categories)))}"
                )
            observed = [observed.get(c, 0) for c in categories]
        k = check_data(observed, "observed").ravel()
        if k.size != probs.size:
            raise ValueError(
                f"observed must have one count per category ({probs.size}), got {k.size}"
            )
        if np.any(k < 0) or np.any(k != np.round(k)):
            raise ValueError("observed counts must be non-negative integers")
        k = k.astype(np.int64)
    else:
        values = np.asarray(observed).ravel() if not isinstance(observed, Mapping) else None
        if values is None or values.size == 0:
            raise ValueError("observed must be a non-empty array of samples")
        if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
            raise ValueError("observed must not contain NaN or infinite values")
        index = {c: i for i, c in enumerate(categories)}
        uniq, uniq_counts = np.unique(values, return_counts=True)
        k = np.zeros(probs.size, dtype=np.int64)
        for value, c in zip(uniq.tolist(), uniq_counts.tolist(), strict=True):
            if value not in index:
                raise AssertionError(
                    f"observed value {value!r} ({c} times) is not one of the categories "
                    f"{categories if len(categories) <= 10 else str(categories[:10])[:-1] + ', ...]'}, "
                    "so a correct implementation never produces it"
                )
            k[index[value]] += c
    n = int(k.sum())
    if n == 0:
        raise ValueError("observed must contain at least one observation")

    alpha = p / probs.size
    lower_tail = stats.binom.cdf(k, n, probs)
    upper_tail = stats.binom.sf(k - 1, n, probs)
    pvalues = np.minimum(1.0, 2.0 * np.minimum(lower_tail, upper_tail))
    worst = int(np.argmin(pvalues))
    if pvalues[worst] <= alpha:
        q = float(probs[worst])
        lo = int(stats.binom.ppf(alpha / 2, n, q))
        hi = int(stats.binom.isf(alpha / 2, n, q))
        raise AssertionError(
            f"category {categories[worst]!r}: observed count {int(k[worst])} (frequency "
            f"{_fmt(k[worst] / n)}) but expected probability {_fmt(q)} (expected count "
            f"{_fmt(n * q)}); a correct implementation gives a count in [{lo}, {hi}] "
            f"(p-value {pvalues[worst]:.3g}; n={n}, exact binomial test, Bonferroni over "
            f"{probs.size} categories, failure probability {p:g})"
        )


# --------------------------------------------------------------------------------------------
# differential privacy audits
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DPAuditResult:
    """The outcome of :func:`audit_dp`: a certified lower bound on a mechanism's epsilon.

    Attributes
    ----------
    epsilon_lower_bound : float
        With probability at least ``1 - failure_prob``, the mechanism is **not** (ε, δ)-DP for
        any ε below this value (0.0 when nothing is certified).
    event : str
        The output event that certifies it, e.g. ``"output > 0.9871"``.
    direction : str
        ``"a/b"`` when the event is likelier on ``input_a``, ``"b/a"`` otherwise.
    count_a, count_b : int
        How often the event occurred among the ``n_samples`` outputs on each input.
    prob_a, prob_b : (float, float)
        Clopper-Pearson bounds ``(low, high)`` on the event's probability on each input.
    n_samples : int
        Outputs drawn per input (besides the pilot draws that placed the bins).
    n_events : int
        Number of events examined.
    delta : float
        The δ the bound is computed for.
    failure_prob : float
        Probability that the bound is wrong.
    """

    epsilon_lower_bound: float
    event: str
    direction: str
    count_a: int
    count_b: int
    prob_a: tuple[float, float]
    prob_b: tuple[float, float]
    n_samples: int
    n_events: int
    delta: float
    failure_prob: float


def _draw(
    mechanism: Callable[..., Any], x: Any, n: int, gen: np.random.Generator, vectorized: bool
) -> np.ndarray:
    if vectorized:
        out = np.asarray(mechanism(x, rng=gen, size=n))
        if out.size != n:
            raise ValueError(
                f"with vectorized=True, mechanism(x, rng=rng, size={n}) must return {n} outputs, "
                f"got shape {out.shape}"
            )
        out = out.reshape(n)
    else:
        out = np.asarray([mechanism(x, rng=gen) for _ in range(n)])
        if out.shape != (n,):
            raise ValueError(
                "mechanism(x, rng=rng) must return one number (or one category) per call, "
                f"got outputs of shape {out.shape[1:]}"
            )
    if out.dtype == bool:
        out = out.astype(np.int64)
    if out.dtype.kind in "fc" and not np.all(np.isfinite(out)):
        raise ValueError("mechanism returned NaN or infinite outputs")
    if out.dtype.kind == "c":
        raise ValueError("mechanism must return real numbers or categories, got complex numbers")
    return out


def _events_numeric(thresholds: np.ndarray, sa: np.ndarray, sb: np.ndarray):
    """Counts of the events {Y <= t_j}, {Y > t_j} and (t_{j-1}, t_j] for sorted outputs."""
    la = np.searchsorted(sa, thresholds, side="right")
    lb = np.searchsorted(sb, thresholds, side="right")
    n = sa.size
    names = [f"output <= {_fmt(t)}" for t in thresholds]
    ka, kb = [la], [lb]
    # complements {Y > t_j}: their Clopper-Pearson bounds are those of {Y <= t_j}, so they add
    # nothing to the Bonferroni count
    names += [f"output > {_fmt(t)}" for t in thresholds]
    ka.append(n - la)
    kb.append(n - lb)
    names += [
        f"{_fmt(t0)} < output <= {_fmt(t1)}"
        for t0, t1 in zip(thresholds[:-1], thresholds[1:], strict=True)
    ]
    ka.append(np.diff(la))
    kb.append(np.diff(lb))
    n_distinct = 2 * thresholds.size - 1
    return names, np.concatenate(ka), np.concatenate(kb), n_distinct


def audit_dp(
    mechanism: Callable[..., Any],
    input_a: Any,
    input_b: Any,
    *,
    delta: float = 0.0,
    n_samples: int = 100_000,
    bins: int | Sequence[float] | None = None,
    vectorized: bool = False,
    rng: Any = None,
    failure_prob: float = DEFAULT_FAILURE_PROB,
) -> DPAuditResult:
    r"""Certified lower bound on the ε of ``mechanism`` from its outputs on two inputs.

    (ε, δ)-DP requires :math:`P_a(E) \le e^ε P_b(E) + δ` for every event ``E`` and both orders of
    the neighbouring inputs. For each examined event, Clopper-Pearson gives a lower bound
    :math:`\underline{P}_a(E)` and an upper bound :math:`\overline{P}_b(E)`; then
    :math:`ε \ge \ln((\underline{P}_a(E) - δ) / \overline{P}_b(E))`. With a Bonferroni split of
    ``failure_prob`` over all the one-sided bounds, the largest such value is a lower bound on the
    true ε with probability at least ``1 - failure_prob``.

    **Calling convention.** ``mechanism(x, rng=generator)`` returns one output (a number, a bool
    or a category such as a string); it is called ``n_samples`` times per input. With
    ``vectorized=True`` it is called once per input as ``mechanism(x, rng=generator, size=n)``
    and returns ``n`` outputs, which is much faster. The same generator (from ``rng`` via
    :func:`dplib._validation.as_generator`) is passed to every call, so a seed makes the audit
    reproducible. Wrap a mechanism with other parameters in a lambda::

        audit_dp(lambda x, rng: laplace_mechanism(x, 1.0, 1.0, rng=rng), 0.0, 1.0)

    **Events.** Bins are placed from an independent pilot run (``max(n_samples // 10, 100)``
    outputs per input, drawn first) so that the events are fixed before the counted outputs are
    drawn, as Clopper-Pearson requires:

    * ``bins=None`` (default): numeric outputs with at most 64 distinct pilot values (bits,
      counts, integer-valued noise) get a threshold at each distinct value; other numeric outputs
      get thresholds at the quantiles ``j / 20`` (``j = 1, ..., 19``) of the pooled pilot outputs;
    * ``bins=k`` (an int ``>= 2``): thresholds at the pooled pilot quantiles ``j / k``;
    * ``bins=[t1, ..., tm]``: those thresholds, and no pilot run;
    * non-numeric outputs (strings, ...): one event per distinct pilot value.

    For numeric outputs the events are the tails :math:`\{Y \le t\}`, :math:`\{Y > t\}` and the
    bins between consecutive thresholds. Tails are what catch too little Laplace noise: with
    inputs 0 and 1, :math:`\{Y > 1\}` has probability ratio :math:`e^{Δ/b}`.

    Parameters
    ----------
    mechanism : callable
        See the calling convention above.
    input_a, input_b : any
        Two neighbouring inputs, passed to ``mechanism`` as they are.
    delta : float
        δ in [0, 1).
    n_samples : int
        Counted outputs per input, ``>= 100``.
    bins : int, sequence of float or None
        See *Events*.
    vectorized : bool
        Whether ``mechanism`` accepts ``size=``.
    rng : None, int or numpy.random.Generator
        Randomness passed to the mechanism.
    failure_prob : float
        Probability in (0, 1) that the returned bound exceeds the true ε.

    Returns
    -------
    DPAuditResult

    Raises
    ------
    ValueError
        For bad arguments, or outputs that are NaN, infinite or not one per call.
    TypeError
        If ``mechanism`` is not callable.

    References
    ----------
    Clopper and Pearson (1934), see :func:`clopper_pearson`. The hypothesis-testing view of DP
    audits: Z. Ding, Y. Wang, G. Wang, D. Zhang and D. Kifer, "Detecting violations of
    differential privacy", CCS 2018; M. Jagielski, J. Ullman and A. Oprea, "Auditing
    differentially private machine learning: how private is private SGD?", NeurIPS 2020
    (Clopper-Pearson lower bounds on ε, their Algorithm 2).
    """
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable, got {type(mechanism).__name__}")
    delta = check_delta(delta)
    n = check_integer(n_samples, "n_samples", minimum=100)
    p = _check_failure_prob(failure_prob)
    if not isinstance(vectorized, bool):
        raise TypeError(f"vectorized must be True or False, got {type(vectorized).__name__}")
    edges: np.ndarray | None = None
    n_bins = 20
    if isinstance(bins, bool):
        raise TypeError("bins must be None, an int or a sequence of thresholds, got bool")
    if isinstance(bins, numbers.Integral):
        n_bins = check_integer(bins, "bins", minimum=2)
    elif bins is not None:
        edges = check_data(bins, "bins").ravel()
        if np.any(np.diff(edges) <= 0):
            raise ValueError("bins must be strictly increasing thresholds")
    gen = as_generator(rng)

    categories: np.ndarray | None = None
    if edges is None:
        n_pilot = max(n // 10, 100)
        pilot = np.concatenate(
            [
                _draw(mechanism, input_a, n_pilot, gen, vectorized),
                _draw(mechanism, input_b, n_pilot, gen, vectorized),
            ]
        )
        distinct = np.unique(pilot)
        if pilot.dtype.kind not in "iuf":
            categories = distinct
        elif distinct.size <= 64 and not isinstance(bins, numbers.Integral):
            edges = distinct[:-1].astype(float) if distinct.size > 1 else distinct.astype(float)
        else:
            edges = np.unique(np.quantile(pilot, np.arange(1, n_bins) / n_bins))
    out_a = _draw(mechanism, input_a, n, gen, vectorized)
    out_b = _draw(mechanism, input_b, n, gen, vectorized)

    if categories is not None:
        names = [f"output == {c!r}" for c in categories.tolist()]
        ka = np.array([np.count_nonzero(out_a == c) for c in categories])
        kb = np.array([np.count_nonzero(out_b == c) for c in categories])
        n_distinct = len(names)
    else:
        if out_a.dtype.kind not in "iuf" or out_b.dtype.kind not in "iuf":
            raise ValueError("mechanism returned non-numeric outputs where numbers were expected")
        names, ka, kb, n_distinct = _events_numeric(
            edges, np.sort(out_a.astype(float)), np.sort(out_b.astype(float))
        )

    # 4 one-sided bounds per distinct event (lower and upper, on each input)
    alpha = p / (4 * n_distinct)
    low_a, high_a = _cp_one_sided(ka, n, alpha)
    low_b, high_b = _cp_one_sided(kb, n, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps_ab = np.where(low_a > delta, np.log((low_a - delta) / high_b), 0.0)
        eps_ba = np.where(low_b > delta, np.log((low_b - delta) / high_a), 0.0)
    i_ab, i_ba = int(np.argmax(eps_ab)), int(np.argmax(eps_ba))
    i, direction, best = (
        (i_ab, "a/b", eps_ab[i_ab]) if eps_ab[i_ab] >= eps_ba[i_ba] else (i_ba, "b/a", eps_ba[i_ba])
    )
    return DPAuditResult(
        epsilon_lower_bound=max(float(best), 0.0),
        event=names[i],
        direction=direction,
        count_a=int(ka[i]),
        count_b=int(kb[i]),
        prob_a=(float(low_a[i]), float(high_a[i])),
        prob_b=(float(low_b[i]), float(high_b[i])),
        n_samples=n,
        n_events=len(names),
        delta=delta,
        failure_prob=p,
    )


def assert_dp(
    mechanism: Callable[..., Any],
    input_a: Any,
    input_b: Any,
    epsilon: float,
    *,
    delta: float = 0.0,
    n_samples: int = 100_000,
    bins: int | Sequence[float] | None = None,
    vectorized: bool = False,
    rng: Any = None,
    failure_prob: float = DEFAULT_FAILURE_PROB,
) -> DPAuditResult:
    r"""Assert that no event separates ``mechanism(input_a)`` from ``mechanism(input_b)`` by more
    than :math:`e^ε` (plus δ), empirically.

    Fails when :func:`audit_dp` certifies, at confidence ``1 - failure_prob``, an ε larger than
    the claimed one, i.e. when for some event ``E`` and some order of the inputs
    :math:`\underline{P}_a(E) > e^ε\,\overline{P}_b(E) + δ` with Clopper-Pearson bounds. A correct
    mechanism therefore fails with probability at most ``failure_prob``. A passing audit is
    evidence, not proof: only the two given inputs and the examined events are checked.

    Power (measured with ``bins=None``, 200 seeds per cell): Laplace noise of half the correct
    scale (true ε twice the claim) on inputs 0 and 1 is rejected

    ======  =====================  ==============================
    ε       rejected 200/200 at    rejection rate one step below
    ======  =====================  ==============================
    1       ``n_samples=1_000``    --
    0.5     ``3_000``              10% at 1_000
    0.3     ``10_000``             50% at 3_000
    0.1     ``100_000`` (default)  98.5% at 30_000
    0.05    ``300_000``            84.5% at 100_000
    ======  =====================  ==============================

    roughly ``n ≈ 3_000 / ε²``; smaller errors in the noise scale need more samples.

    Parameters
    ----------
    mechanism, input_a, input_b, delta, n_samples, bins, vectorized, rng, failure_prob
        See :func:`audit_dp`.
    epsilon : float
        The claimed ε, ``> 0``.

    Returns
    -------
    DPAuditResult
        The audit, when it passes (its ``epsilon_lower_bound`` is then at most ``epsilon``).

    Raises
    ------
    AssertionError
        Naming the separating event, its counts and probability bounds on both inputs, and the
        certified lower bound on ε.
    ValueError, TypeError
        For bad arguments (see :func:`audit_dp`).

    Examples
    --------
    >>> laplace = lambda x, rng, size: x + rng.laplace(0.0, 1.0 / 0.5, size)
    >>> result = assert_dp(laplace, 0.0, 1.0, epsilon=0.5, vectorized=True, rng=0)
    >>> result.epsilon_lower_bound <= 0.5
    True
    """
    epsilon = check_epsilon(epsilon)
    result = audit_dp(
        mechanism,
        input_a,
        input_b,
        delta=delta,
        n_samples=n_samples,
        bins=bins,
        vectorized=vectorized,
        rng=rng,
        failure_prob=failure_prob,
    )
    if result.epsilon_lower_bound > epsilon:
        first, second = (
            ("input_a", "input_b") if result.direction == "a/b" else ("input_b", "input_a")
        )
        (k1, b1), (k2, b2) = (
            ((result.count_a, result.prob_a), (result.count_b, result.prob_b))
            if result.direction == "a/b"
            else ((result.count_b, result.prob_b), (result.count_a, result.prob_a))
        )
        delta_part = f" + delta ({result.delta:g})" if result.delta > 0 else ""
        raise AssertionError(
            f"the mechanism is not {_fmt(epsilon)}-DP"
            + (f" with delta={result.delta:g}" if result.delta else "")
            + f": the event '{result.event}' has probability at least {_fmt(b1[0])} on {first} "
            f"({k1}/{result.n_samples} outputs) but at most {_fmt(b2[1])} on {second} "
            f"({k2}/{result.n_samples}), more than e^epsilon = {_fmt(math.exp(epsilon))} times "
            f"that{delta_part}; this certifies epsilon >= {_fmt(result.epsilon_lower_bound)} "
            f"(n={result.n_samples} per input, Clopper-Pearson bounds with Bonferroni over "
            f"{result.n_events} events, failure probability {result.failure_prob:g}). "
            "Check the noise scale (sensitivity / epsilon) and the sensitivity."
        )
    return result
