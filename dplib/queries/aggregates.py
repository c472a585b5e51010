"""Private versions of the everyday statistics: count, sum, mean and histogram.

Each function clamps what must be clamped, uses the sensitivity from :mod:`dplib.queries.sensitivity`, and
adds noise that is safe on IEEE doubles by default:

* counts and histograms are integers, released with the discrete Laplace (two-sided geometric)
  mechanism (Ghosh, Roughgarden & Sundararajan 2012);
* sums and means put the clamped values on a fixed power-of-two grid, sum them *exactly* as
  integers and add discrete Laplace noise in grid units (:func:`private_sum`). The textbook
  Laplace mechanism on doubles is vulnerable to the floating-point attack of Mironov (2012):
  the doubles it can output depend on the true answer, so one output can rule a neighbouring
  dataset out. The textbook version stays available with ``mechanism="laplace"``.

**Rows are people.** Every query takes a 1-d array with one value per person. A 2-d table is
refused rather than flattened: flattening a table of 10 people with 3 columns would count 30
records, and one person (one row) would then move a count by 3, not by the sensitivity 1 the
noise is calibrated for. Pass one column (``table[:, j]``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_bounds,
    check_data,
    check_epsilon,
    check_integer,
)
from dplib.mechanisms._count_noise import COUNT_MECHANISMS, check_count_mechanism
from dplib.mechanisms.discrete import discrete_laplace_mechanism
from dplib.mechanisms.laplace import laplace_mechanism
from dplib.queries.sensitivity import (
    check_neighbouring,
    count_sensitivity,
    histogram_sensitivity,
    mean_sensitivity,
    sum_sensitivity,
)

__all__ = ["clamp", "private_count", "private_sum", "private_mean", "private_histogram"]

#: The mechanisms of :func:`private_sum` and :func:`private_mean`: the floating-point-safe
#: default and the textbook one.
MECHANISMS = COUNT_MECHANISMS
#: Grid resolution: the grid step is at most 2**-20 of the sensitivity and of the noise scale ...
_GRID_BITS = 20
#: ... but no finer than 2**-30 of the largest |value| (so that grid units stay below 2**31) ...
_MAX_GRID_BITS = 30
#: ... and coarse enough that the noise scale in grid units stays below 2**39 (the discrete
#: Laplace sampler accepts scales up to 2**40).
_MAX_UNITS_SCALE_BITS = 39
#: Smallest epsilon accepted by the discrete sum (below it the grid would exceed the values).
MIN_DISCRETE_EPSILON = 2.0**-30
#: Smallest span max(|lower - mid|, |upper - mid|) for which the grid step is a normal double.
MIN_SPAN = 2.0**-1000
#: The exact integer total is clamped to +-2**52 (the discrete Laplace mechanism takes answers up
#: to 2**53); clamping is 1-Lipschitz, so the sensitivity is unchanged.
MAX_TOTAL = 2**52


def _column(x: Any, name: str = "x", *, allow_empty: bool = True) -> np.ndarray:
    """``x`` as a 1-d float array of one value per person; a table (2-d) is refused, not flattened."""
    return check_data(x, name, allow_empty=allow_empty, ndim=1, records=True)


def _check_mechanism(mechanism: Any) -> str:
    return check_count_mechanism(mechanism)


def grid_exponent(span: float, epsilon: float) -> int:
    """The ``e`` of the grid step ``2**e`` of :func:`_discrete_sum` (data-independent)."""
    log_span = math.log2(span)
    log_scale = log_span - math.log2(epsilon)  # log2 of the noise scale span / epsilon, no overflow
    return max(
        math.floor(min(log_span, log_scale)) - _GRID_BITS,
        math.floor(log_span) - _MAX_GRID_BITS,
        math.ceil(log_scale) - _MAX_UNITS_SCALE_BITS,
    )


def _discrete_sum(
    values: np.ndarray, lo: float, hi: float, epsilon: float, relation: str, generator: Any
) -> float:
    """Epsilon-DP sum of the values clamped to ``[lo, hi]``, exact on a grid (see private_sum)."""
    # Replace-one: n is public, so the values may be centred (a public shift); add/remove: not.
    mid = 0.0 if relation == "add_remove" else lo / 2 + hi / 2
    a, b = lo - mid, hi - mid  # the same (monotone) float operations as on the values below
    span = max(abs(a), abs(b))
    if span < MIN_SPAN:
        raise ValueError(
            "lower and upper must span at least 2**-1000 around their centre (the grid of "
            f"private_sum would underflow), got lower={lo!r}, upper={hi!r}"
        )
    step = math.ldexp(1.0, grid_exponent(span, epsilon))
    # Every operation below is monotone in the value (clip, subtraction of a constant, division
    # by a power of two, rint), so each person's grid value lies in [k_lo, k_hi]: the integer
    # sensitivity is max(|k_lo|, |k_hi|) (add/remove) or k_hi - k_lo (replace-one), exactly.
    k_lo, k_hi = int(np.rint(a / step)), int(np.rint(b / step))
    units = (
        max(abs(k_lo), abs(k_hi)) if relation == "add_remove" else k_hi - k_lo
    )
    grid_values = np.rint((np.clip(values, lo, hi) - mid) / step).astype(np.int64)
    total = min(max(int(grid_values.sum(dtype=np.int64)), -MAX_TOTAL), MAX_TOTAL)
    noisy = discrete_laplace_mechanism(total, units, epsilon, rng=generator)
    # Post-processing: back to real units and the public shift.
    return _finite_sum(float(noisy) * step + values.size * mid, values.size, lo, hi)


def _finite_sum(total: float, n: int, lo: float, hi: float) -> float:
    """Refuse a sum that overflowed a double rather than return inf."""
    if not math.isfinite(total):
        raise ValueError(
            f"the sum of {n} values clamped to [lower, upper] (plus its noise) overflows a double: "
            f"choose bounds with n * max(|lower|, |upper|) and the noise scale below 1e308, got "
            f"lower={lo!r}, upper={hi!r}"
        )
    return total


def clamp(x: Any, lower: float, upper: float) -> np.ndarray | float:
    """Clip every value of ``x`` into ``[lower, upper]``.

    Clamping is what gives a sum or a mean a finite sensitivity: after it, one person can move a
    sum by at most ``max(|lower|, |upper|)`` (add/remove) or ``upper - lower`` (replace-one).
    The bounds must be chosen without looking at the data, or they leak it.

    Parameters
    ----------
    x : float or array_like
        Values, without NaN.
    lower, upper : float
        Finite bounds with ``lower < upper``.

    Returns
    -------
    float or numpy.ndarray
        ``min(max(x, lower), upper)`` elementwise, with the shape of ``x``.
    """
    lo, hi = check_bounds(lower, upper)
    arr = check_data(x, "x", allow_empty=True)
    out = np.clip(arr, lo, hi)
    return float(out) if out.ndim == 0 else out


def private_count(x: Any, epsilon: float, *, rng: Any = None) -> int:
    """Epsilon-DP count of the records in ``x`` (add/remove neighbours, sensitivity 1).

    Parameters
    ----------
    x : array_like, 1-d
        One entry per person. A boolean array counts its ``True`` entries (a predicate count:
        ``private_count(ages >= 65, ...)``); any other array counts its entries. May be empty.
        A 2-d table is refused (pass one of its columns: a row is one person), and so are
        ``None``, scalars, strings, NaN and infinities.
    epsilon : float
        Privacy loss, finite and > 0.
    rng : None, int or numpy.random.Generator, optional

    Returns
    -------
    int
        ``count + Z`` with ``Z`` discrete Laplace of scale ``1 / epsilon``; may be negative (clip
        it afterwards if you like: post-processing costs no privacy). The output is an integer,
        so the floating-point attack on the Laplace mechanism (Mironov 2012) does not apply.

    Raises
    ------
    TypeError
        If ``x`` is ``None`` or not numbers/booleans.
    ValueError
        If ``x`` is not 1-d, contains NaN or infinity, or ``epsilon`` is not finite and > 0.

    References
    ----------
    Ghosh, Roughgarden & Sundararajan (2012), "Universally utility-maximizing privacy mechanisms"
    (the geometric mechanism). Dwork & Roth (2014), Example 3.1 (counting queries).
    """
    epsilon = check_epsilon(epsilon)
    arr = _column(x)
    is_mask = np.asarray(x).dtype == bool
    count = int(np.count_nonzero(arr)) if is_mask else int(arr.size)
    return int(discrete_laplace_mechanism(count, count_sensitivity(), epsilon, rng=rng))


def private_sum(
    x: Any,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    neighbouring: str = "add_remove",
    mechanism: str = "discrete_laplace",
    rng: Any = None,
) -> float:
    """Epsilon-DP sum of ``x`` clamped to ``[lower, upper]``, safe on IEEE doubles by default.

    The sensitivity is ``max(|lower|, |upper|)`` for add/remove neighbours and ``upper - lower``
    for replace-one neighbours (:func:`dplib.sum_sensitivity`).

    Parameters
    ----------
    x : array_like, 1-d
        One value per person (may be empty: the sum of nothing is 0). A 2-d table is refused.
    lower, upper : float
        Data-independent clamping bounds, ``lower < upper``.
    epsilon : float
        Privacy loss, finite and > 0 (``>= 2**-30`` for the default mechanism).
    neighbouring : {"add_remove", "replace"}
    mechanism : {"discrete_laplace", "laplace"}, keyword-only
        ``"discrete_laplace"`` (the default, and what the course uses for released sums and
        means): the clamped values are rounded onto a fixed grid of step ``g = 2**e`` and summed
        exactly as integers, and discrete Laplace noise is added in units of ``g`` (see Notes).
        ``"laplace"``: the textbook ``sum + Lap(Delta / epsilon)`` computed in floating point
        (:func:`dplib.laplace_mechanism`), which the course uses to teach and which is
        vulnerable to the floating-point attack (Mironov 2012).
    rng : None, int or numpy.random.Generator, optional

    Returns
    -------
    float

    Raises
    ------
    TypeError, ValueError
        For bad arguments (see the checkers in :mod:`dplib._validation`), 2-d input, an unknown
        ``mechanism``, or (default mechanism) ``epsilon < 2**-30``. Nothing is drawn then.

    Notes
    -----
    *Why not textbook Laplace.* Mironov (2012, Section 3) shows that the doubles
    ``f(D) + lambda ln(U)`` can take depend on ``f(D)``: for two neighbouring sums a large
    fraction of the outputs on one dataset is *impossible* on the other, an infinite privacy
    loss. Integer-valued noise has no such hole: the output ``g (k + Z)`` lies on the same lattice
    ``g Z`` whatever the data, and ``P(Z = z) ∝ exp(-epsilon |z| / Delta_g)`` is evaluated by
    the sampler, not by arithmetic on the answer.

    *The default mechanism.* (Replace-one: values are first centred by the public
    ``mid = (lower + upper) / 2``, which is added back as ``n mid``, ``n`` being public.)

    1. The grid step is ``g = 2**e`` with ``e = floor(log2 min(S, S / epsilon)) - 20`` (raised,
       if needed, to ``floor(log2 S) - 30`` and to ``ceil(log2(S / epsilon)) - 39``), where
       ``S = max(|lower - mid|, |upper - mid|)``: it depends on the public bounds and epsilon
       only, never on the data.
    2. Each person's grid value is ``k_i = rint((clamp(x_i) - mid) / g)``. Every step is
       monotone, so ``k_i`` lies in ``[k_lo, k_hi]``, the grid values of the bounds, and the
       integer sum ``K = sum k_i`` (exact in int64, then clamped to ``±2**52``, a 1-Lipschitz
       map) has sensitivity ``Delta_g = max(|k_lo|, |k_hi|)`` (add/remove) or
       ``k_hi - k_lo`` (replace-one), an integer.
    3. The release is ``g (K + Z) + n mid`` with ``Z`` discrete Laplace of scale
       ``Delta_g / epsilon``: epsilon-DP by the geometric mechanism (Ghosh, Roughgarden &
       Sundararajan 2012) and post-processing. No snapping overhead is paid: the stated epsilon
       is the exact one (up to the double-precision probabilities of numpy's geometric sampler,
       see :mod:`dplib.mechanisms.discrete_laplace`), unlike the snapping mechanism, whose
       theorem costs an extra ``2**-49 B / lambda`` (Mironov 2012, Section 5.2).

    Cost of safety: ``g Delta_g <= Delta + g`` (so the noise scale is at most ``1 + 2**-20``
    times the textbook one), and each value moves by at most ``g / 2 <= 2**-21 min(Delta,
    Delta / epsilon)``, a rounding error of at most ``n g / 2`` on the sum (and of mean zero for
    values spread over the grid cells). This is the approach of discretising before adding
    integer noise used by Google's differential privacy library ("Secure noise generation",
    2020) and by Canonne, Kamath & Steinke (2020, Section 1).

    References
    ----------
    Mironov (2012), "On Significance of the Least Significant Bits for Differential Privacy",
    CCS. Ghosh, Roughgarden & Sundararajan (2012), "Universally utility-maximizing privacy
    mechanisms", SIAM J. Comput. Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for
    Differential Privacy", NeurIPS. Dwork & Roth (2014), Section 3.3.
    """
    lo, hi = check_bounds(lower, upper)
    epsilon = check_epsilon(epsilon)
    relation = check_neighbouring(neighbouring)
    method = _check_mechanism(mechanism)
    values = _column(x)
    if method == "laplace":
        sensitivity = sum_sensitivity(lo, hi, neighbouring=relation)
        with np.errstate(over="ignore"):
            total = _finite_sum(float(np.sum(np.clip(values, lo, hi))), values.size, lo, hi)
            out = float(laplace_mechanism(total, sensitivity, epsilon, rng=rng))
        return _finite_sum(out, values.size, lo, hi)
    if epsilon < MIN_DISCRETE_EPSILON:
        raise ValueError(
            f"epsilon must be >= 2**-30 for mechanism='discrete_laplace' (the noise in grid units "
            f"would exceed the sampler's range), got {epsilon!r}"
        )
    return _discrete_sum(values, lo, hi, epsilon, relation, as_generator(rng))


def private_mean(
    x: Any,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    neighbouring: str = "replace",
    mechanism: str = "discrete_laplace",
    rng: Any = None,
) -> float:
    """Epsilon-DP mean of ``x`` clamped to ``[lower, upper]``, safe on IEEE doubles by default.

    Two flavours, by the neighbouring relation:

    ``"replace"`` (default; the dataset size ``n`` is public)
        ``noisy_sum / n`` where the noisy sum has replace-one sensitivity ``upper - lower``:
        noise of scale ``(upper - lower) / (n epsilon)`` on the mean.
    ``"add_remove"`` (``n`` is private too)
        Half the budget on a noisy sum (sensitivity ``max(|lower|, |upper|)``), half on a noisy
        count (sensitivity 1); the ratio is clamped to ``[lower, upper]`` (post-processing).

    Parameters
    ----------
    x : array_like, 1-d
        One value per person: non-empty for ``"replace"``; may be empty for ``"add_remove"``.
        A 2-d table is refused (pass one column).
    lower, upper : float
        Data-independent clamping bounds, ``lower < upper``.
    epsilon : float
        Total privacy loss, finite and > 0.
    neighbouring : {"replace", "add_remove"}
    mechanism : {"discrete_laplace", "laplace"}, keyword-only
        The noisy sum's mechanism (see :func:`private_sum`). ``"discrete_laplace"`` (default,
        what the course uses for releases) is safe from the floating-point attack of Mironov
        (2012); ``"laplace"`` is the textbook ``mean + Lap((upper - lower) / (n epsilon))`` on
        doubles.
    rng : None, int or numpy.random.Generator, optional

    Returns
    -------
    float

    References
    ----------
    Dwork & Roth (2014), Section 3.3; Li, Lyu, Su & Yang (2016), *Differential Privacy: From
    Theory to Practice*, Section 2.5 (noisy sum over noisy count). Mironov (2012), CCS.
    """
    lo, hi = check_bounds(lower, upper)
    epsilon = check_epsilon(epsilon)
    relation = check_neighbouring(neighbouring)
    method = _check_mechanism(mechanism)
    values = _column(x, allow_empty=True)
    if relation == "replace" and values.size == 0:
        # Under replace-one the size n is public (neighbours have the same n): this refusal
        # depends on public information only. Under add/remove an empty x is answered.
        raise ValueError(
            "x must not be empty under neighbouring='replace' (n is public there and the mean of "
            "no values is undefined); neighbouring='add_remove' answers an empty dataset"
        )
    generator = as_generator(rng)
    if relation == "replace":
        if method == "laplace":
            sensitivity = mean_sensitivity(lo, hi, values.size, neighbouring="replace")
            mean = float(np.clip(values, lo, hi).mean())
            return float(laplace_mechanism(mean, sensitivity, epsilon, rng=generator))
        # n is public: dividing the noisy sum (sensitivity upper - lower) by n is post-processing.
        noisy = private_sum(values, lo, hi, epsilon, neighbouring="replace", rng=generator)
        return float(noisy / values.size)
    noisy_sum = private_sum(
        values, lo, hi, epsilon / 2, neighbouring="add_remove", mechanism=method, rng=generator
    )
    noisy_count = private_count(values, epsilon / 2, rng=generator)
    return float(np.clip(noisy_sum / max(noisy_count, 1), lo, hi))


#: Largest int ``bins`` of :func:`private_histogram`: 80 MB of counts, about a second of noise.
_MAX_BINS = 10**7


def _check_range(range_: Any) -> tuple[float, float]:
    """``range`` of :func:`private_histogram`: a pair of finite reals ``(lower, upper)``, lower < upper."""
    if (
        isinstance(range_, str | bytes)
        or not isinstance(range_, tuple | list | np.ndarray)
        or (isinstance(range_, np.ndarray) and range_.ndim != 1)
        or len(range_) != 2
    ):
        raise TypeError(
            f"range must be a pair (lower, upper) of finite numbers with lower < upper, got {range_!r}"
        )
    try:
        return check_bounds(range_[0], range_[1])
    except (TypeError, ValueError) as exc:
        raise type(exc)(
            f"range must be a pair (lower, upper) of finite numbers with lower < upper, got "
            f"{range_!r} ({exc})"
        ) from None


def private_histogram(
    x: Any,
    bins: Any,
    epsilon: float,
    *,
    range: tuple[float, float] | None = None,
    neighbouring: str = "add_remove",
    rng: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Epsilon-DP histogram: exact bin counts plus discrete Laplace noise.

    One person changes one bin by one under add/remove (L1 sensitivity 1) and two bins by one
    under replace-one (sensitivity 2), whatever the number of bins: this is parallel composition
    (Dwork & Roth 2014, Example 3.2 and Section 3.5).

    Parameters
    ----------
    x : array_like, 1-d
        One value per person (may be empty). A 2-d table is refused: pass one column.
    bins : int or array_like
        Bin edges (as for :func:`numpy.histogram`), or a number of bins in ``[1, 10**7]``
        together with ``range``.
        Edges must not be derived from the data: numpy's default range (the data's min and max)
        would leak them, so an int needs an explicit ``range``.
    epsilon : float
        Privacy loss, finite and > 0.
    range : (float, float), optional
        Lower and upper edge when ``bins`` is an int: finite, lower < upper, and far enough apart
        for ``bins`` distinct edges.
    neighbouring : {"add_remove", "replace"}
    rng : None, int or numpy.random.Generator, optional

    Returns
    -------
    counts : numpy.ndarray of int64
        Noisy counts (may be negative; clip them if you need to: post-processing is free).
        Integer-valued, so safe from the floating-point attack (Mironov 2012).
    edges : numpy.ndarray of float
        The bin edges.
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = histogram_sensitivity(neighbouring=neighbouring)
    values = _column(x)
    if np.ndim(bins) == 0:
        if range is None:
            raise ValueError(
                "private_histogram needs explicit bin edges, or an int number of bins together with "
                "range=(lower, upper): numpy's default range is the data's min and max, which leaks them"
            )
        lo, hi = _check_range(range)
        n_bins = check_integer(bins, "bins", minimum=1)
        if n_bins > _MAX_BINS:
            raise ValueError(
                f"bins must be an int in [1, 10**7] or an array of edges, got {bins!r}"
            )
        with np.errstate(over="ignore", invalid="ignore"):  # hi - lo may overflow: refused below
            edges = np.linspace(lo, hi, n_bins + 1)
        if not (np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0)):
            raise ValueError(
                f"range={range!r} cannot be split into bins={n_bins} distinct finite edges: "
                "use a wider range (or fewer bins), or one whose width hi - lo is a finite float"
            )
    else:
        edges = check_data(bins, "bins")
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise ValueError("bins must be at least two strictly increasing edges")
    counts, edges = np.histogram(values, bins=edges)
    noisy = discrete_laplace_mechanism(counts.astype(np.int64), sensitivity, epsilon, rng=rng)
    return np.asarray(noisy, dtype=np.int64), edges
