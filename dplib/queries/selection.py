"""Private selection built on the exponential mechanism: medians, modes and a coin's bias.

The mechanisms themselves live in :mod:`dplib.mechanisms.exponential`; this module supplies the
*utilities* (scores) and sensitivities of three classic selection problems, and the exponential
mechanism's utility guarantee:

* :func:`median_utility` / :func:`private_median`: the median of numbers over a grid of
  candidates, with utility ``-|#{x < c} - #{x > c}|`` (sensitivity 1 under add/remove, 2 under
  replace-one): twice the alpha = 1/2 case of OpenDP's quantile score, almost Smith's (2011)
  (the exponential mechanism itself is Dwork & Roth 2014, Section 3.4);
* :func:`private_mode`: the most common category, with the counts as utilities (monotonic under
  add/remove, so the exponent can be ``epsilon u / Delta``);
* :func:`beta_bias_parameters` / :func:`beta_bias_estimate`: a coin's bias by the exponential
  mechanism over ``theta`` in ``[lower, upper]`` with the log-likelihood as utility, whose output
  is a truncated Beta distribution;
* :func:`exponential_utility_bound`: with probability at least ``1 - beta`` the exponential
  mechanism's choice is within ``(2 Delta / epsilon) ln(|Y| / beta)`` of the best score
  (Dwork & Roth 2014, Corollary 3.12).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from dplib._validation import (
    as_generator,
    check_bounds,
    check_data,
    check_epsilon,
    check_integer,
    check_probability,
    check_sensitivity,
)
from dplib.mechanisms.exponential import (
    exponential_mechanism,
    exponential_mechanism_probabilities,
)
from dplib.queries.sensitivity import check_neighbouring

__all__ = [
    "median_utility",
    "median_utility_sensitivity",
    "private_median_distribution",
    "private_median",
    "private_mode",
    "beta_bias_parameters",
    "beta_bias_estimate",
    "exponential_utility_bound",
]

DEFAULT_MEDIAN_GRID = 1001
#: Largest number of candidates (an int ``grid`` of :func:`private_median`, ``k`` of
#: :func:`private_mode`): 80 MB of float64 scores, about a second.
_MAX_CANDIDATES = 10**7
#: Largest ``size`` of :func:`private_median` (about a second of draws).
_MAX_MEDIAN_SIZE = 10**7
# Below this interval mass the inverse cdf of the truncated Beta loses its precision.
_MIN_MASS = 1e-280


def _column(x: Any, name: str) -> np.ndarray:
    """``x`` as a 1-d float array, one value per person; a 2-d table is refused, not flattened."""
    return check_data(x, name, allow_empty=True, ndim=1, records=True)


# --------------------------------------------------------------------------------------------
# the median
# --------------------------------------------------------------------------------------------
def median_utility(x: Any, candidates: Any) -> np.ndarray:
    """Utility of each candidate as a median: ``-|#{x_i < c} - #{x_i > c}|``.

    Parameters
    ----------
    x : array_like
        The data, one finite number per person (1-d; a 2-d table is refused); may be empty.
    candidates : array_like, 1-d
        The candidate medians ``c``, finite, non-empty.

    Returns
    -------
    numpy.ndarray
        One float score per candidate, ``<= 0``; 0 exactly at a point with as many data below as
        above (values equal to ``c`` count on neither side).

    Notes
    -----
    Adding or removing one value changes one of the two counts by at most one, so every score
    moves by at most 1 (sensitivity 1 under add/remove); replacing a value below ``c`` by one
    above ``c`` moves the difference by 2 (sensitivity 2 under replace-one). See
    :func:`median_utility_sensitivity`. Without ties the score is ``-2 |rank(c) - n/2|`` with
    ``rank(c) = #{x_i < c}``. It is twice OpenDP's quantile score at alpha = 1/2,
    ``-|(1 - alpha) #{x < c} - alpha #{x > c}|`` (``make_quantile_score_candidates``), and almost
    Smith's (2011), which counts values equal to ``c`` as below.

    Examples
    --------
    >>> median_utility([1.0, 2.0, 3.0, 10.0], [0.0, 2.0, 2.5, 11.0])
    array([-4., -1.,  0., -4.])
    """
    data = np.sort(_column(x, "x"))
    cands = check_data(candidates, "candidates")
    if cands.ndim != 1:
        raise ValueError(f"candidates must be a 1-d array, got shape {cands.shape}")
    below = np.searchsorted(data, cands, side="left")
    above = data.size - np.searchsorted(data, cands, side="right")
    return 0.0 - np.abs(below - above).astype(float)  # 0.0 - : no negative zeros


def median_utility_sensitivity(neighbouring: str = "add_remove") -> float:
    """Sensitivity of :func:`median_utility`: 1 (add/remove) or 2 (replace-one)."""
    return 1.0 if check_neighbouring(neighbouring) == "add_remove" else 2.0


def _median_grid(lower: Any, upper: Any, grid: Any) -> np.ndarray:
    lo, hi = check_bounds(lower, upper)
    if grid is None:
        return np.linspace(lo, hi, DEFAULT_MEDIAN_GRID)
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        m = check_integer(grid, "grid", minimum=2)
        if m > _MAX_CANDIDATES:
            raise ValueError(f"grid must be None, an int in [2, 10**7] or a 1-d array, got {grid!r}")
        return np.linspace(lo, hi, m)
    cands = check_data(grid, "grid")
    if cands.ndim != 1:
        raise ValueError(f"grid must be None, an int >= 2 or a 1-d array, got shape {cands.shape}")
    if np.any(cands < lo) or np.any(cands > hi):
        raise ValueError(f"grid points must lie in [lower, upper] = [{lo}, {hi}]")
    return cands


def private_median_distribution(
    x: Any,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    grid: Any = None,
    neighbouring: str = "add_remove",
) -> tuple[np.ndarray, np.ndarray]:
    """The candidates of :func:`private_median` and the exact probability of each.

    Parameters are those of :func:`private_median`. Returns ``(candidates, probabilities)``.
    """
    cands = _median_grid(lower, upper, grid)
    eps = check_epsilon(epsilon)
    sensitivity = median_utility_sensitivity(neighbouring)
    scores = median_utility(x, cands)
    # McSherry & Talwar 2007: p(c) ∝ exp(eps u(c) / (2 Delta)); the median utility is not
    # monotonic (adding a value raises the counts on one side only), so the factor 2 stays.
    return cands, exponential_mechanism_probabilities(scores, sensitivity, eps)


def private_median(
    x: Any,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    grid: Any = None,
    neighbouring: str = "add_remove",
    rng: Any = None,
    size: int | None = None,
) -> float | np.ndarray:
    """An epsilon-DP median by the exponential mechanism over a grid in ``[lower, upper]``.

    Parameters
    ----------
    x : array_like
        The data, one finite number per person (1-d: a 2-d table is refused, since flattening
        it would let one person, one row, move several counts); values outside ``[lower, upper]`` are allowed and
        need no clamping (they count as below or above every candidate).
    lower, upper : float
        The public range of the answer, ``lower < upper``, chosen without looking at the data.
    epsilon : float
        Finite, > 0.
    grid : None, int or array_like, keyword-only
        The candidates: ``None`` for 1001 equally spaced points from ``lower`` to ``upper``
        (both included), an int ``m`` in ``[2, 10**7]`` for ``m`` such points, or a 1-d array of points in
        ``[lower, upper]``.
    neighbouring : {"add_remove", "replace"}, keyword-only
        The neighbouring relation; it sets the utility's sensitivity (1 or 2).
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness.
    size : int or None, keyword-only
        ``None`` for one release, else the number of independent releases, at most
        ``10**7`` (each costs ``epsilon``).

    Returns
    -------
    float or numpy.ndarray
        The chosen grid point(s).

    Raises
    ------
    TypeError, ValueError
        For bad arguments (NaN data, ``lower >= upper``, ``epsilon <= 0``, unknown
        ``neighbouring``, grid points outside the range, ``size < 1``). Nothing is drawn from
        ``rng`` when a call is refused.

    Notes
    -----
    Candidate ``c`` is drawn with probability
    ``∝ exp(epsilon * (-|#{x < c} - #{x > c}|) / (2 Delta))``: the exponential mechanism
    (McSherry & Talwar 2007; Dwork & Roth 2014, Section 3.4) with OpenDP's quantile score. With probability ``1 - beta`` the chosen point has at most
    ``(2 Delta / epsilon) ln(m / beta)`` more data on one side than the grid's best point.
    The accuracy is in *rank*, so it is insensitive to outliers; its error in *value* depends on
    how dense the data are around the median and on the grid's spacing.
    The output is a point of the public grid whatever the data, so the floating-point attack on
    the Laplace mechanism (Mironov 2012) has no impossible outputs to exploit.

    References
    ----------
    C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014,
    Section 3.4 (the mechanism). OpenDP, ``make_quantile_score_candidates`` and its proof (the
    score). A. Smith, "Privacy-preserving statistical estimation with optimal convergence
    rates", STOC 2011.

    Examples
    --------
    >>> x = np.arange(1.0, 100.0)
    >>> float(private_median(x, 0.0, 200.0, epsilon=5.0, grid=201, rng=0))  # doctest: +SKIP
    50.0
    """
    cands, probabilities = private_median_distribution(
        x, lower, upper, epsilon, grid=grid, neighbouring=neighbouring
    )
    n = None if size is None else check_integer(size, "size", minimum=1)
    if n is not None and n > _MAX_MEDIAN_SIZE:
        raise ValueError(f"size must be None or an int in [1, 10**7], got {size!r}")
    generator = as_generator(rng)
    index = generator.choice(cands.size, size=n, p=probabilities)
    if n is None:
        return float(cands[int(index)])
    return cands[np.asarray(index, dtype=np.int64)]


# --------------------------------------------------------------------------------------------
# the most common category
# --------------------------------------------------------------------------------------------
def private_mode(
    values: Any,
    k: int,
    epsilon: float,
    *,
    neighbouring: str = "add_remove",
    rng: Any = None,
    size: int | None = None,
) -> int | np.ndarray:
    """An epsilon-DP choice of the most common category among ``0, ..., k-1``.

    Parameters
    ----------
    values : array_like of int, 1-d
        One category per person, each in ``0, ..., k-1``; may be empty. A 2-d table is refused.
    k : int
        The number of categories (public), in ``[1, 10**7]``.
    epsilon : float
        Finite, > 0.
    neighbouring : {"add_remove", "replace"}, keyword-only
        Under add/remove one person raises or lowers a single count and no other, so all
        scores move in the same direction: the utility is *monotonic* and the mechanism uses
        ``exp(epsilon * count / 1)``. Under replace-one a count goes down while another goes up,
        and the factor 2 is needed: ``exp(epsilon * count / 2)``.
    rng : None, int or numpy.random.Generator, keyword-only
    size : int or None, keyword-only
        ``None`` for one choice, else the number of independent choices.

    Returns
    -------
    int or numpy.ndarray
        The chosen category (or ``size`` of them).

    Notes
    -----
    The exponential mechanism with utility ``u(c) = #{i : values_i = c}`` and sensitivity 1
    (McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10 and the remark on monotonic
    utilities after it). The output is one of the ``k`` public categories whatever the data, so
    the floating-point attack on the Laplace mechanism (Mironov 2012), which exploits outputs that
    are impossible on one of two neighbours, has nothing to exploit; the probabilities are
    computed in double precision (relative error of order ``2**-52``).
    """
    kk = check_integer(k, "k", minimum=1)
    if kk > _MAX_CANDIDATES:
        raise ValueError(f"k must be an integer in [1, 10**7] (the number of categories), got {k!r}")
    cats = _column(values, "values")
    if np.any(cats != np.round(cats)) or np.any(cats < 0) or np.any(cats >= kk):
        raise ValueError(f"values must be integers in 0, ..., k-1 = {kk - 1}")
    relation = check_neighbouring(neighbouring)
    eps = check_epsilon(epsilon)
    counts = np.bincount(cats.astype(np.int64), minlength=kk).astype(float)
    return exponential_mechanism(
        counts, 1.0, eps, rng=rng, monotonic=relation == "add_remove", size=size
    )


# --------------------------------------------------------------------------------------------
# a coin's bias: the truncated Beta distribution
# --------------------------------------------------------------------------------------------
def _check_coin(heads: Any, n: Any, lower: Any, upper: Any) -> tuple[int, int, float, float]:
    nn = check_integer(n, "n", minimum=0)
    h = check_integer(heads, "heads", minimum=0)
    if h > nn:
        raise ValueError(f"heads must be <= n = {nn}, got {h}")
    lo = check_probability(lower, "lower", low_open=True, high_open=True)
    hi = check_probability(upper, "upper", low_open=True, high_open=True)
    if not lo < hi:
        raise ValueError(f"lower must be < upper, got lower={lower!r}, upper={upper!r}")
    return h, nn, lo, hi


def beta_bias_parameters(
    heads: int,
    n: int,
    epsilon: float,
    *,
    lower: float = 0.1,
    upper: float = 0.9,
    neighbouring: str = "add_remove",
) -> tuple[float, float, float]:
    """Parameters of the exponential mechanism for a coin's bias with log-likelihood utility.

    Parameters
    ----------
    heads, n : int
        ``heads`` heads among ``n`` flips, ``0 <= heads <= n``.
    epsilon : float
        Finite, > 0.
    lower, upper : float, keyword-only
        The candidate biases ``theta`` range over ``[lower, upper]``, ``0 < lower < upper < 1``.
        On all of ``[0, 1]`` the log-likelihood has infinite sensitivity (``log 0``).
    neighbouring : {"add_remove", "replace"}, keyword-only
        Adding or removing a flip changes the log-likelihood ``u(theta)`` by ``log theta`` or
        ``log(1 - theta)``: sensitivity ``max(-log lower, -log(1 - upper))``. Replacing a tail
        by a head changes it by ``log(theta / (1 - theta))``: sensitivity
        ``max(|logit lower|, |logit upper|)``.

    Returns
    -------
    (a, b, sensitivity) : tuple of float
        The output density is ``∝ theta^(a-1) (1 - theta)^(b-1)`` on ``[lower, upper]``, a Beta(a, b)
        truncated there, with ``a = 1 + c heads``, ``b = 1 + c (n - heads)`` and
        ``c = epsilon / (2 sensitivity)``.

    Notes
    -----
    ``exp(epsilon u(theta) / (2 Delta)) = theta^(c H) (1 - theta)^(c T)`` (McSherry & Talwar
    2007): a tempered likelihood, like a Bayesian posterior under a uniform prior in which each
    flip counts for ``c`` flips. Notebook 03's figures (epsilon = 0.1 on ``[0.1, 0.9]``, add/remove)
    give ``Delta = ln 10 ≈ 2.3`` and ``c ≈ 0.022``.

    Examples
    --------
    >>> a, b, d = beta_bias_parameters(30, 100, 0.1)
    >>> round(d, 4), round(a, 4), round(b, 4)
    (2.3026, 1.6514, 2.52)
    """
    h, nn, lo, hi = _check_coin(heads, n, lower, upper)
    eps = check_epsilon(epsilon)
    if check_neighbouring(neighbouring) == "add_remove":
        sensitivity = max(-math.log(lo), -math.log1p(-hi))
    else:
        sensitivity = max(abs(math.log(lo / (1 - lo))), abs(math.log(hi / (1 - hi))))
    c = eps / (2.0 * sensitivity)
    return 1.0 + c * h, 1.0 + c * (nn - h), sensitivity


def _truncated_beta(
    a: float, b: float, lo: float, hi: float, gen: np.random.Generator, n: int
) -> np.ndarray:
    """``n`` draws of Beta(a, b) (a, b >= 1) restricted to ``[lo, hi]``, by inverse cdf.

    The cdf is used when the mode lies above the interval's middle and the survival function
    otherwise, so that the interval's mass is never a difference of two numbers close to 1. If
    that mass still underflows (the density is squeezed against one end), the draws come from
    exact rejection sampling against the exponential tangent of the log-density at that end,
    which dominates the log-concave density. (The mass can underflow only when the mode lies
    beyond that end, where the tangent's slope points towards it, as the rejection step needs.)
    """
    # scipy.special.betainc is the Beta(a, b) cdf, betaincc its survival function; their
    # inverses are the quantile functions (scipy.stats.beta calls the same routines).
    mode = (a - 1.0) / (a + b - 2.0) if a + b > 2.0 else 0.5
    u = gen.random(n)
    if mode >= 0.5 * (lo + hi):
        f_lo, f_hi = special.betainc(a, b, lo), special.betainc(a, b, hi)
        if f_hi - f_lo > _MIN_MASS:
            return np.clip(special.betaincinv(a, b, f_lo + u * (f_hi - f_lo)), lo, hi)
        end, sign = hi, 1.0
    else:
        s_lo, s_hi = special.betaincc(a, b, lo), special.betaincc(a, b, hi)
        if s_lo - s_hi > _MIN_MASS:
            return np.clip(special.betainccinv(a, b, s_hi + u * (s_lo - s_hi)), lo, hi)
        end, sign = lo, -1.0

    def log_density(t: np.ndarray) -> np.ndarray:
        return (a - 1.0) * np.log(t) + (b - 1.0) * np.log1p(-t)

    slope = (a - 1.0) / end - (b - 1.0) / (1.0 - end)  # d/dt log density at the end
    rate = abs(slope)
    width = hi - lo
    out = np.empty(n)
    filled = 0
    while filled < n:
        m = 2 * (n - filled) + 16
        # distance d from the end, density ∝ exp(-rate d) on [0, width]
        v = gen.random(m)
        d = -np.log1p(-v * (-np.expm1(-rate * width))) / rate
        t = end - sign * d
        log_accept = log_density(t) - (log_density(np.array(end)) - rate * d)
        keep = t[np.log(gen.random(m)) <= log_accept][: n - filled]
        out[filled : filled + keep.size] = keep
        filled += keep.size
    return np.clip(out, lo, hi)


def beta_bias_estimate(
    heads: int,
    n: int,
    epsilon: float,
    *,
    lower: float = 0.1,
    upper: float = 0.9,
    neighbouring: str = "add_remove",
    rng: Any = None,
    size: int | None = None,
) -> float | np.ndarray:
    """An epsilon-DP estimate of a coin's bias: the exponential mechanism over ``[lower, upper]``.

    Draws ``theta`` from the truncated Beta distribution of :func:`beta_bias_parameters` (same
    parameters), by inverse-cdf sampling (the Beta cdf and quantile function of :mod:`scipy.special`). Returns a float, or an array
    of ``size`` independent releases (each costs ``epsilon``).

    The estimate's variance around ``heads / n`` is of order ``1 / (c n)``, i.e. ``O(1/n)``,
    whereas a Laplace-noised ``heads / n`` has variance ``2 / (epsilon n)^2``: the log-likelihood
    utility spends the privacy budget on every flip, the count spends it once.

    Examples
    --------
    >>> theta = beta_bias_estimate(700, 1000, epsilon=1.0, rng=0)
    >>> 0.1 <= theta <= 0.9
    True
    """
    a, b, _ = beta_bias_parameters(
        heads, n, epsilon, lower=lower, upper=upper, neighbouring=neighbouring
    )
    m = None if size is None else check_integer(size, "size", minimum=1)
    generator = as_generator(rng)
    draws = _truncated_beta(a, b, float(lower), float(upper), generator, 1 if m is None else m)
    return float(draws[0]) if m is None else draws


# --------------------------------------------------------------------------------------------
# the utility guarantee
# --------------------------------------------------------------------------------------------
def exponential_utility_bound(
    n_candidates: int,
    sensitivity: float,
    epsilon: float,
    beta: float,
    *,
    monotonic: bool = False,
) -> float:
    """Utility loss the exponential mechanism exceeds with probability at most ``beta``.

    Parameters
    ----------
    n_candidates : int
        ``|Y|``, the number of candidates, ``>= 1``.
    sensitivity : float
        ``Delta`` of the utility, > 0.
    epsilon : float
        Finite, > 0.
    beta : float
        In (0, 1).
    monotonic : bool, keyword-only
        Whether the mechanism used the sharper exponent ``epsilon u / Delta``.

    Returns
    -------
    float
        ``(2 Delta / epsilon) ln(|Y| / beta)`` (``Delta / epsilon`` when monotonic): the
        chosen candidate's utility is below ``OPT`` minus this with probability at most
        ``beta``.

    Raises
    ------
    ValueError
        For arguments out of range, or when the bound exceeds the largest float (about
        1.8e308; e.g. ``sensitivity=1e308, epsilon=1``): the message names ``sensitivity`` and
        ``epsilon``.

    Notes
    -----
    Dwork & Roth (2014), Theorem 3.11 / Corollary 3.12: for every ``t``,
    ``P[u(output) <= OPT - (2 Delta / epsilon)(ln |Y| + t)] <= e^{-t}``; set ``t = ln(1/beta)``.
    The bound can be sharpened to ``ln(|Y| / |Y_OPT|)`` when several candidates are optimal.

    Examples
    --------
    >>> round(exponential_utility_bound(100, 1.0, 1.0, 0.05), 4)
    15.2018
    """
    m = check_integer(n_candidates, "n_candidates", minimum=1)
    delta_u = check_sensitivity(sensitivity, allow_zero=False)
    eps = check_epsilon(epsilon)
    p = check_probability(beta, "beta", low_open=True, high_open=True)
    if not isinstance(monotonic, (bool, np.bool_)):
        raise TypeError(f"monotonic must be a bool, got {type(monotonic).__name__}")
    factor = 1.0 if monotonic else 2.0
    log_term = math.log(m) - math.log(p)  # ln(|Y| / beta) > 0, at most about 793
    # factor * Delta * ln(|Y| / beta) / epsilon, computed on mantissas and exponents so that no
    # intermediate quotient or product overflows or underflows when the result itself does not
    # (sensitivity / epsilon alone may exceed the float range while the bound is finite).
    (m_u, e_u), (m_l, e_l), (m_e, e_e) = math.frexp(delta_u), math.frexp(log_term), math.frexp(eps)
    try:
        return math.ldexp(factor * m_u * m_l / m_e, e_u + e_l - e_e)
    except OverflowError:
        raise ValueError(
            f"sensitivity / epsilon is too large: the bound {factor:g} * sensitivity * "
            f"ln(n_candidates / beta) / epsilon exceeds the largest float (1.8e308) with "
            f"sensitivity={sensitivity!r} and epsilon={epsilon!r}; rescale the utility (a smaller "
            "sensitivity) or use a larger epsilon"
        ) from None
