"""Several quantiles at once, and a variance, from bounded data.

* :func:`private_quantiles` -- ``m`` quantiles by the recursive exponential mechanism of Kaplan,
  Schnapp & Stemmer (2022), "Differentially Private Approximate Quantiles", ICML
  (``ApproximateQuantiles``): the middle quantile first, then each half of the data for the
  quantiles on its side. A record lies in one sub-problem per level, so the ``ceil(log2(m + 1))``
  levels cost ``epsilon`` in all (parallel composition within a level, sequential across levels),
  where ``m`` separate medians-style releases would cost ``m`` times the budget of one.
* :func:`quantile_utility` -- the score of one candidate as the ``alpha``-quantile, OpenDP's
  ``-|(1 - alpha) #{x < c} - alpha #{x > c}|`` (``make_quantile_score_candidates``), sensitivity
  ``max(alpha, 1 - alpha) <= 1`` under add/remove.
* :func:`private_variance` -- the variance of values clamped to ``[lower, upper]`` from a noisy
  count, a noisy sum and a noisy sum of squares (the budget split in thirds), each released on a
  fixed grid with discrete Laplace noise (:func:`dplib.private_sum`).

Safe on IEEE doubles: every quantile is a point of a public grid, drawn *exactly* from the
exponential mechanism's law: the scores are rationals, the candidate is proposed uniformly (an
exact bounded integer) and accepted with probability ``exp(-gamma)`` for a rational ``gamma`` by
Canonne, Kamath & Steinke (2020), Algorithm 1, in integer arithmetic. No float decides an output.
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
    check_epsilon,
    check_integer,
    check_probability,
)
from dplib.mechanisms._exact import bernoulli_exp_scalar
from dplib.queries.aggregates import private_count, private_sum
from dplib.queries.sensitivity import check_neighbouring

__all__ = ["quantile_utility", "private_quantiles", "private_variance"]

DEFAULT_GRID = 1001
#: Largest number of candidates: the exact sampler proposes uniformly, so its expected number of
#: rounds is at most the number of candidates.
MAX_CANDIDATES = 10**5
#: Largest number of quantiles per call.
MAX_QUANTILES = 1000


def _column(x: Any) -> np.ndarray:
    return check_data(x, "x", allow_empty=True, ndim=1, records=True)


def _check_levels(quantiles: Any) -> np.ndarray:
    if isinstance(quantiles, str | bytes) or quantiles is None:
        raise TypeError(f"quantiles must be a 1-d array of levels in [0, 1], got {quantiles!r}")
    levels = check_data(quantiles, "quantiles")
    if levels.ndim == 0:
        levels = levels.reshape(1)
    if levels.ndim != 1:
        raise ValueError(
            f"quantiles must be a 1-d array of levels in [0, 1], got shape {levels.shape}"
        )
    if levels.size > MAX_QUANTILES:
        raise ValueError(f"quantiles must hold at most {MAX_QUANTILES} levels, got {levels.size}")
    if np.any(levels < 0) or np.any(levels > 1):
        raise ValueError(f"quantiles must be levels in [0, 1], got {levels.tolist()[:5]}")
    return levels


def _check_grid(lower: Any, upper: Any, grid: Any) -> np.ndarray:
    lo, hi = check_bounds(lower, upper)
    if grid is None:
        return np.linspace(lo, hi, DEFAULT_GRID)
    if isinstance(grid, int | np.integer) and not isinstance(grid, bool):
        size = check_integer(grid, "grid", minimum=2)
        if size > MAX_CANDIDATES:
            raise ValueError(
                f"grid must be None, an int in [2, 10**5] or a 1-d array, got {grid!r}"
            )
        with np.errstate(over="ignore", invalid="ignore"):
            points = np.linspace(lo, hi, size)
        if not np.all(np.isfinite(points)):
            raise ValueError(f"lower and upper are too far apart for a grid, got {lo!r}, {hi!r}")
        return points
    points = check_data(grid, "grid")
    if points.ndim != 1:
        raise ValueError(f"grid must be None, an int or a 1-d array, got shape {points.shape}")
    if points.size > MAX_CANDIDATES:
        raise ValueError(f"grid must hold at most 10**5 points, got {points.size}")
    if np.any(points < lo) or np.any(points > hi):
        raise ValueError(f"grid points must lie in [lower, upper] = [{lo}, {hi}]")
    return np.unique(points)


def quantile_utility(x: Any, candidates: Any, quantile: float) -> np.ndarray:
    """Score of each candidate as the ``quantile``-quantile: ``-|(1-a) #{x < c} - a #{x > c}|``.

    Parameters
    ----------
    x : array_like, 1-d
        The data, one finite number per person (may be empty).
    candidates : array_like, 1-d
        Candidate values ``c``, finite, non-empty.
    quantile : float
        The level ``a`` in ``[0, 1]``.

    Returns
    -------
    numpy.ndarray
        One score ``<= 0`` per candidate; 0 where ``a`` of the data lie below and ``1 - a``
        above. Adding or removing one value moves every score by at most ``max(a, 1 - a) <= 1``
        (the sensitivity :func:`private_quantiles` uses; at ``a = 1/2`` the mechanism is
        :func:`dplib.private_median`'s, whose score is twice this one with sensitivity 1).

    References
    ----------
    OpenDP, ``make_quantile_score_candidates`` (the score and its proof); Smith (2011), STOC.

    Examples
    --------
    >>> quantile_utility([1.0, 2.0, 3.0, 4.0], [2.5], 0.5)
    array([-0.])
    """
    data = np.sort(_column(x))
    cands = check_data(candidates, "candidates")
    if cands.ndim != 1:
        raise ValueError(f"candidates must be a 1-d array, got shape {cands.shape}")
    a = check_probability(quantile, "quantile")
    below = np.searchsorted(data, cands, side="left")
    above = data.size - np.searchsorted(data, cands, side="right")
    return -np.abs((1 - a) * below - a * above)


def _exact_choice(
    data: np.ndarray,
    cands: np.ndarray,
    level: Fraction,
    epsilon: Fraction,
    generator: np.random.Generator,
) -> int:
    """Index of a candidate drawn exactly with probability ∝ exp(epsilon u / (2 Delta)).

    ``u_c = -|(1 - a) below_c - a above_c|`` with ``a = P / Q``: ``u_c = -t_c / Q`` for the
    integer ``t_c = |(Q - P) below_c - P above_c|``; adding or removing one value moves ``u`` by
    at most ``Delta = max(a, 1 - a) = max(P, Q - P) / Q``. Rejection sampling: propose ``c``
    uniformly, accept with ``exp(-gamma_c)``, ``gamma_c = epsilon (t_c - min t) / (2 max(P,
    Q - P))`` (a rational, so Bernoulli(exp(-gamma)) is exact: Canonne, Kamath & Steinke 2020,
    Algorithm 1). The accepted ``c`` has the law of the exponential mechanism (McSherry & Talwar
    2007); the acceptance rate is at least ``1 / len(cands)``.
    """
    below = np.searchsorted(data, cands, side="left")
    above = data.size - np.searchsorted(data, cands, side="right")
    p, q = level.numerator, level.denominator
    t = [abs((q - p) * int(b) - p * int(a)) for b, a in zip(below, above, strict=True)]
    t_min = min(t)
    scale = epsilon / (2 * max(p, q - p))  # epsilon / (2 Delta Q), Delta = max(a, 1 - a)
    while True:
        index = int(generator.integers(0, cands.size))
        gap = t[index] - t_min
        if gap == 0 or bernoulli_exp_scalar(scale * gap, generator):
            return index


def private_quantiles(
    x: Any,
    quantiles: Any,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    grid: Any = None,
    rng: Any = None,
) -> np.ndarray:
    """Epsilon-DP estimates of several quantiles at once, on a public grid.

    Parameters
    ----------
    x : array_like, 1-d
        The data, one finite number per person (may be empty). Values outside
        ``[lower, upper]`` need no clamping (they count as below or above every candidate).
    quantiles : array_like of float
        Levels in ``[0, 1]`` (at most 1000), in any order; repeats allowed.
    lower, upper : float
        The public range of the answers, ``lower < upper``, chosen without looking at the data.
    epsilon : float
        The total budget, finite, > 0. Neighbours: add or remove one person.
    grid : None, int or array_like, keyword-only
        The candidates: ``None`` for 1001 equally spaced points from ``lower`` to ``upper``, an
        int in ``[2, 10**5]`` for that many, or a 1-d array of at most ``10**5`` points in
        ``[lower, upper]``.
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    numpy.ndarray
        One grid point per requested level, in the order given; non-decreasing in the level.

    Notes
    -----
    Kaplan, Schnapp & Stemmer (2022), ``ApproximateQuantiles``: sort the distinct levels; for the middle one,
    ``a_mid``, run the exponential mechanism over the candidates of the current interval with the
    score :func:`quantile_utility` at the level rescaled to the interval,
    ``(a_mid - a_lo) / (a_hi - a_lo)`` (``a_lo``, ``a_hi`` the levels already released at the
    interval's ends, 0 and 1 at first); split the data at the chosen value ``v`` (``x <= v``
    left, ``x > v`` right) and the candidates at ``v``; recurse on each side. Each of the
    ``L = ceil(log2(m + 1))`` levels of the recursion runs its mechanisms on disjoint parts of the
    data chosen from released values only, so it is ``epsilon / L``-DP (parallel composition;
    the score's sensitivity is ``Delta = max(a, 1 - a)`` for the rescaled level ``a`` and the
    exponent ``epsilon u / (2 L Delta)``), and the levels
    compose to ``epsilon`` (KSS22's privacy analysis, with the exponential mechanism of McSherry &
    Talwar 2007). Sampling is exact (see the module's notes): the output is a public grid point
    and its law is exactly the mechanism's, so the floating-point attack has nothing to exploit.
    Cost: the expected number of proposals per quantile is at most the number of candidates in
    its interval (reached when one candidate dominates), a few tens of microseconds each: 10**5
    candidates around one repeated value took 3.4 s on a loaded core; the default 1001, ms.

    Examples
    --------
    >>> x = np.arange(100.0)
    >>> private_quantiles(x, [0.25, 0.5, 0.75], 0.0, 100.0, 5.0, grid=101, rng=0).shape
    (3,)
    """
    data = np.sort(_column(x))
    levels = _check_levels(quantiles)
    cands = _check_grid(lower, upper, grid)
    eps = check_epsilon(epsilon)
    generator = as_generator(rng)
    distinct = sorted({Fraction(float(a)) for a in levels})
    depth = max(1, math.ceil(math.log2(len(distinct) + 1)))
    eps_level = Fraction(eps) / depth
    chosen: dict[Fraction, float] = {}

    def solve(lo: int, hi: int, part: np.ndarray, c_lo: int, c_hi: int, a_lo, a_hi) -> None:
        # levels distinct[lo:hi], data part, candidates cands[c_lo:c_hi + 1]
        if lo >= hi:
            return
        mid = (lo + hi) // 2
        a = distinct[mid]
        rescaled = (a - a_lo) / (a_hi - a_lo)  # KSS22: the level within the interval
        sub = cands[c_lo : c_hi + 1]
        index = c_lo + _exact_choice(part, sub, rescaled, eps_level, generator)
        value = float(cands[index])
        chosen[a] = value
        cut = np.searchsorted(part, value, side="right")
        solve(lo, mid, part[:cut], c_lo, index, a_lo, a)
        solve(mid + 1, hi, part[cut:], index, c_hi, a, a_hi)

    solve(0, len(distinct), data, 0, cands.size - 1, Fraction(0), Fraction(1))
    return np.array([chosen[Fraction(float(a))] for a in levels], dtype=float)


def private_variance(
    x: Any,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    neighbouring: str = "add_remove",
    rng: Any = None,
) -> float:
    """Epsilon-DP variance of ``x`` clamped to ``[lower, upper]``.

    Parameters
    ----------
    x : array_like, 1-d
        One value per person. May be empty under add/remove (the answer is then noise, clipped
        to the range of a variance); under ``"replace"`` the size is public and must be >= 1.
    lower, upper : float
        Data-independent bounds, ``lower < upper``.
    epsilon : float
        The total budget, finite, ``>= 3 * 2**-30``.
    neighbouring : {"add_remove", "replace"}, keyword-only
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    float
        ``S2 / n - (S1 / n)**2`` clipped to ``[0, ((upper - lower) / 2)**2]`` (the largest
        variance of values in the range), where, for the values centred by the public midpoint
        ``mid`` (variance is shift-invariant), ``S1`` is a noisy sum, ``S2`` a noisy sum of
        squares and ``n`` a noisy count (at least 1).

    Notes
    -----
    Budget split (stated, and fixed): under add/remove, ``epsilon / 3`` each to the count
    (sensitivity 1), the sum of centred values (in ``[-h, h]``, ``h = (upper - lower) / 2``:
    sensitivity ``h``) and the sum of their squares (in ``[0, h**2]``: sensitivity ``h**2``);
    under replace-one ``n`` is public and ``epsilon / 2`` goes to each sum (sensitivities
    ``2 h`` and ``h**2``). Each sum is :func:`dplib.private_sum`'s exact grid sum with discrete
    Laplace noise and the count is :func:`dplib.private_count`: the released statistics lie on
    lattices fixed in advance, and the variance is post-processing of them. This is the
    noisy-moments estimator of Du, Foot, Moniot, Bray & Groce (2020), "Differentially Private
    Confidence Intervals", arXiv:2001.02285 (the variance from noisy sufficient statistics), and of Google's ``BoundedVariance`` (count, sum and sum of squares);
    diffprivlib's ``tools.var`` instead adds noise to the variance itself with the replace-one
    sensitivity ``(upper - lower)**2 / n``.

    Examples
    --------
    >>> v = private_variance(np.linspace(0, 1, 1000), 0.0, 1.0, 3.0, rng=0)
    >>> 0.0 <= v <= 0.25
    True
    """
    lo, hi = check_bounds(lower, upper)
    eps = check_epsilon(epsilon)
    relation = check_neighbouring(neighbouring)
    values = _column(x)
    if relation == "replace" and values.size == 0:
        raise ValueError(
            "x must not be empty under neighbouring='replace' (n is public there and the "
            "variance of no values is undefined); neighbouring='add_remove' answers it"
        )
    mid = lo / 2 + hi / 2
    a, b = lo - mid, hi - mid
    h = max(abs(a), abs(b))
    if not math.isfinite(h * h) or h * h == 0:
        raise ValueError(
            f"lower and upper must be finite with ((upper - lower) / 2)**2 a positive finite "
            f"double, got lower={lower!r}, upper={upper!r}"
        )
    share = eps / 3 if relation == "add_remove" else eps / 2
    if share < 2.0**-30:
        raise ValueError(f"epsilon must be >= 3 * 2**-30 (each part >= 2**-30), got {epsilon!r}")
    generator = as_generator(rng)
    centred = np.clip(values, lo, hi) - mid
    squares = np.minimum(centred * centred, h * h)
    s1 = private_sum(centred, a, b, share, neighbouring=relation, rng=generator)
    s2 = private_sum(squares, 0.0, h * h, share, neighbouring=relation, rng=generator)
    if relation == "add_remove":
        n = max(private_count(values, share, rng=generator), 1)
    else:
        n = values.size
    mean = s1 / n
    return float(min(max(s2 / n - mean * mean, 0.0), h * h))
