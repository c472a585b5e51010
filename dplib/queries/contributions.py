"""Tables where one person has many rows: bound each user's contributions, then release per key.

A table of rows ``(user_id, key, value)`` -- purchases ``(customer, product, price)`` -- breaks
the "one row per person" assumption of :mod:`dplib.queries.aggregates`: one customer with 3,000
rows moves a count of rows by 3,000. Under add/remove neighbours *of users* (one user's rows all
appear or all vanish), a release is private only after each user's influence is bounded:

1. **L0 bound** (``max_partitions``): a user keeps rows in at most ``m`` keys, chosen uniformly at
   random among the user's keys (with the release's ``rng``, so the choice is data-independent
   in law);
2. **Linf bound** (``max_rows``): in each kept key, at most ``r`` of the user's rows (uniformly at
   random), each value clamped to ``[lower, upper]``.

After bounding, one user changes at most ``m`` per-key counts, each by at most ``r``, so the vector
of per-key counts has L1 sensitivity ``m r`` and L2 sensitivity ``sqrt(m) r``; per-key sums of
values clamped to ``[lower, upper]`` have ``m r B`` and ``sqrt(m) r B`` with
``B = max(|lower|, |upper|)`` (:func:`contribution_sensitivity`). This is the contribution bounding of
Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo & Gipson (2020), "Differentially Private SQL
with Bounded User Contribution", PoPETs 2020(2) (per-partition and cross-partition bounds;
section and algorithm numbers not checked here), and of Google's, OpenDP's and Tumult's
libraries.

The caps trade bias for noise (Amin, Kulesza, Munoz Medina & Vassilvitskii 2019, "Bounding User
Contributions: A Bias-Variance Trade-off in Differential Privacy", ICML): a small cap drops the
rows of heavy users (bias), a large one needs noise proportional to it. Their advice is to take
the cap near a quantile of the rows per user, found privately: :func:`private_rows_cap`.

The releases add discrete Laplace noise to integers (counts, or sums on a power-of-two grid as
:func:`dplib.private_sum` does), so their outputs lie on a lattice fixed in advance, safe from the
floating-point attack (Mironov 2012). The keys must be public (``partitions``); for keys nobody
listed, select them first with :func:`dplib.select_partitions`.
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
    check_positive,
    check_probability,
    check_sensitivity,
    refuse_masked,
)
from dplib.mechanisms.discrete import discrete_laplace_mechanism, sample_discrete_gaussian
from dplib.queries import aggregates as _aggregates

__all__ = [
    "bound_contributions",
    "contribution_sensitivity",
    "private_count_by_key",
    "gaussian_count_by_key",
    "private_sum_by_key",
    "private_rows_cap",
]

#: Largest ``max_partitions * max_rows``: the integer sensitivity of a per-key sum on its grid
#: (at most 2**30 units per value) then stays below 2**53.
MAX_CONTRIBUTIONS = 2**20
#: Largest number of rows a call accepts (memory: a few int64 arrays of this length).
MAX_ROWS = 10**8


def _check_labels(x: Any, name: str) -> np.ndarray:
    """A 1-d array of labels (integers, finite floats, booleans or strings); may be empty."""
    if x is None or isinstance(x, str | bytes):
        raise TypeError(f"{name} must be a 1-d array of labels (numbers or strings), got {x!r}")
    refuse_masked(x, name)
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-d array of labels, got {type(x).__name__}") from exc
    if arr.dtype.kind in "US" and not isinstance(x, np.ndarray):
        # numpy turns [1, 'a'] into the strings '1' and 'a': the number 1 would then match
        # nothing (issue 49). A sequence must hold only strings, or only numbers.
        flat = np.asarray(x, dtype=object).ravel()
        text = np.fromiter(
            (isinstance(v, str | bytes | np.str_ | np.bytes_) for v in flat), bool, flat.size
        )
        if not text.all():
            raise TypeError(
                f"{name} must hold only numbers or only strings, got a mix (e.g. "
                f"{flat[~text][0]!r} among strings): numpy would turn the numbers into strings "
                "that match no numeric key"
            )
    if arr.dtype.kind not in "biufUS":
        raise TypeError(
            f"{name} must be a 1-d array of labels (integers, floats or strings), got values "
            f"of dtype {arr.dtype}"
        )
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-d array with one label per row, got shape {arr.shape}"
        )
    if arr.size > MAX_ROWS:
        raise ValueError(f"{name} must have at most 10**8 rows, got {arr.size}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must not contain NaN or infinite values")
    return arr


def check_contribution_table(
    user_ids: Any, keys: Any, values: Any = None
) -> tuple[np.ndarray, ...]:
    users = _check_labels(user_ids, "user_ids")
    key_arr = _check_labels(keys, "keys")
    if key_arr.size != users.size:
        raise ValueError(
            f"keys must have one entry per row of user_ids ({users.size}), got {key_arr.size}"
        )
    if values is None:
        return users, key_arr
    vals = check_data(values, "values", allow_empty=True, ndim=1)
    if vals.size != users.size:
        raise ValueError(
            f"values must have one entry per row of user_ids ({users.size}), got {vals.size}"
        )
    return users, key_arr, vals


def _check_caps(max_partitions: Any, max_rows: Any) -> tuple[int, int]:
    m = check_integer(max_partitions, "max_partitions", minimum=1)
    r = check_integer(max_rows, "max_rows", minimum=1)
    if m > MAX_CONTRIBUTIONS:
        raise ValueError(f"max_partitions must be an integer in [1, 2**20], got {max_partitions!r}")
    if r > MAX_CONTRIBUTIONS:
        raise ValueError(f"max_rows must be an integer in [1, 2**20], got {max_rows!r}")
    if m * r > MAX_CONTRIBUTIONS:
        raise ValueError(
            f"max_partitions * max_rows must be at most 2**20 (the sensitivity of a per-key sum on "
            f"its grid must stay an exact integer), got max_partitions={m}, max_rows={r}"
        )
    return m, r


def _check_partitions(partitions: Any) -> np.ndarray:
    arr = _check_labels(partitions, "partitions")
    if arr.size == 0:
        raise ValueError("partitions must list at least one public key")
    if np.unique(arr).size != arr.size:
        raise ValueError("partitions must not repeat a key")
    return arr


def _codes(x: np.ndarray) -> np.ndarray:
    """Integer codes of the labels (equal labels, equal codes)."""
    return np.unique(x, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _random_ranks(groups: np.ndarray, generator: np.random.Generator) -> np.ndarray:
    """For each entry, its rank (0, 1, ...) in a uniformly random order within its group.

    ``generator.permutation`` draws an exactly uniform permutation (bounded integers, no
    floats); a stable sort by group keeps that random order inside each group.
    """
    n = groups.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    perm = generator.permutation(n)
    order = perm[np.argsort(groups[perm], kind="stable")]
    sorted_groups = groups[order]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, n]))
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.arange(n) - first
    return ranks


def bound_mask(
    users: np.ndarray, keys: np.ndarray, m: int, r: int, generator: np.random.Generator
) -> np.ndarray:
    """Boolean mask of the rows kept by the L0 bound ``m`` and the Linf bound ``r``."""
    n = users.size
    if n == 0:
        return np.zeros(0, dtype=bool)
    u, k = _codes(users), _codes(keys)
    pair = u * (int(k.max()) + 1) + k  # one code per (user, key)
    pair_codes, row_pair = np.unique(pair, return_inverse=True)
    row_pair = row_pair.reshape(-1)
    pair_user = pair_codes // (int(k.max()) + 1)
    # L0: each user keeps m of its keys, uniformly at random (Wilson et al. 2020)
    keep_pair = _random_ranks(pair_user, generator) < m
    # Linf: each (user, key) keeps r of its rows, uniformly at random
    keep_row = _random_ranks(row_pair, generator) < r
    return keep_pair[row_pair] & keep_row


def bound_contributions(
    user_ids: Any,
    keys: Any,
    values: Any = None,
    *,
    max_partitions: int = 1,
    max_rows: int = 1,
    rng: Any = None,
) -> tuple[np.ndarray, ...]:
    """Keep at most ``max_partitions`` keys per user and ``max_rows`` rows per (user, key).

    Parameters
    ----------
    user_ids, keys : array_like, 1-d
        One entry per row: who contributed the row and to which key (group). Integers, finite
        floats or strings. May be empty.
    values : array_like, 1-d, optional
        One number per row (returned filtered alongside, not clamped).
    max_partitions : int, keyword-only
        ``m``, the L0 bound: a user keeps rows in at most ``m`` of their keys, chosen uniformly
        at random among them. In ``[1, 2**20]``.
    max_rows : int, keyword-only
        ``r``, the Linf bound: at most ``r`` rows per (user, key), chosen uniformly at random.
        ``max_partitions * max_rows <= 2**20``.
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    tuple of numpy.ndarray
        ``(user_ids, keys)`` or ``(user_ids, keys, values)`` restricted to the kept rows, in
        their original order.

    Raises
    ------
    TypeError, ValueError
        For labels that are not a 1-d array of numbers or strings, NaN, arrays of different
        lengths, caps outside their ranges. Nothing is drawn then.

    Notes
    -----
    The random choice (rather than, say, a user's first keys) makes the kept rows a function of
    the user's own rows and fresh randomness only, so that a user's presence changes at most
    ``m`` keys by at most ``r`` rows each: Wilson et al. (2020); Amin et al. (2019). Bounding alone releases nothing; the sensitivities it gives
    are :func:`contribution_sensitivity`'s.

    Examples
    --------
    >>> users, keys = bound_contributions([1, 1, 1, 2], ["a", "a", "b", "a"], max_rows=1, rng=0)
    >>> len(users)
    2
    """
    checked = check_contribution_table(user_ids, keys, values)
    m, r = _check_caps(max_partitions, max_rows)
    generator = as_generator(rng)
    mask = bound_mask(checked[0], checked[1], m, r, generator)
    return tuple(arr[mask] for arr in checked)


def contribution_sensitivity(
    max_partitions: int, max_rows: int = 1, value_bound: float = 1.0
) -> tuple[float, float]:
    """L1 and L2 sensitivities of per-key counts or sums after contribution bounding.

    Parameters
    ----------
    max_partitions : int
        ``m``, the most keys one user contributes to (L0 bound), in ``[1, 2**20]``.
    max_rows : int
        ``r``, the most rows one user has in one key (Linf bound in rows), in ``[1, 2**20]``.
    value_bound : float
        ``B``, the largest ``|value|`` a row adds to its key: 1 for counts of rows,
        ``max(|lower|, |upper|)`` for sums of values clamped to ``[lower, upper]``. Finite, >= 0.

    Returns
    -------
    (float, float)
        ``(m r B, sqrt(m) r B)``: under add/remove of one user, at most ``m`` coordinates move,
        each by at most ``r B`` (Linf), so the L1 norm of the change is at most ``m r B`` and its
        L2 norm at most ``sqrt(m) r B``.

    References
    ----------
    Wilson et al. (2020), "Differentially Private SQL with Bounded User Contribution", PoPETs,
    (the L0 and Linf bounds and the sensitivity they give). Amin et al. (2019), ICML.

    Examples
    --------
    >>> contribution_sensitivity(4, 3)
    (12.0, 6.0)
    """
    m, r = _check_caps(max_partitions, max_rows)
    bound = check_sensitivity(value_bound, "value_bound")
    l1, l2 = float(m * r * bound), float(math.sqrt(m) * r * bound)
    if not math.isfinite(l1):
        raise ValueError(
            f"value_bound is too large: max_partitions * max_rows * value_bound overflows a double, "
            f"got value_bound={value_bound!r}"
        )
    return l1, l2


def _aligned(keys: np.ndarray, partitions: np.ndarray) -> np.ndarray:
    """Index of each row's key in ``partitions``, or -1 for keys not listed."""
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64)
    if (keys.dtype.kind in "US") != (partitions.dtype.kind in "US"):
        raise TypeError(
            "keys and partitions must both be numbers or both be strings, got keys of dtype "
            f"{keys.dtype} and partitions of dtype {partitions.dtype}: no key could match"
        )
    try:
        order = np.argsort(partitions, kind="stable")
        pos = np.searchsorted(partitions[order], keys)
    except TypeError as exc:  # numbers against strings
        raise TypeError("keys and partitions must both be numbers or both be strings") from exc
    pos = np.minimum(pos, partitions.size - 1)
    found = partitions[order][pos] == keys
    return np.where(found, order[pos], -1).astype(np.int64)


def private_count_by_key(
    user_ids: Any,
    keys: Any,
    partitions: Any,
    epsilon: float,
    *,
    max_partitions: int = 1,
    max_rows: int = 1,
    rng: Any = None,
) -> np.ndarray:
    """Epsilon-DP number of rows per public key, each user's contribution bounded first.

    Parameters
    ----------
    user_ids, keys : array_like, 1-d
        One entry per row (may be empty). Rows whose key is not in ``partitions`` are dropped
        before bounding (a filter on public keys).
    partitions : array_like, 1-d
        The public keys to report, without repeats, chosen without looking at the data (or by
        :func:`dplib.select_partitions`, whose budget is then spent too).
    epsilon : float
        Finite, > 0. Neighbours: add or remove one *user* with all of their rows.
    max_partitions, max_rows : int, keyword-only
        The L0 and Linf bounds ``m`` and ``r`` of :func:`bound_contributions`.
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    numpy.ndarray of int64
        One noisy count per entry of ``partitions``: ``c_k + Z_k`` with ``Z_k`` i.i.d. discrete
        Laplace of scale ``m r / epsilon`` (the L1 sensitivity of :func:`contribution_sensitivity`
        over epsilon). Integers whatever the data: safe from the floating-point attack.

    Notes
    -----
    Epsilon-DP by the geometric mechanism (Ghosh, Roughgarden & Sundararajan 2009) applied to the
    vector of bounded counts, whose L1 sensitivity is ``m r`` (Wilson et al. 2020).
    The random bounding is part of the mechanism; its randomness is independent of the noise.

    Examples
    --------
    >>> counts = private_count_by_key([1, 1, 2], ["a", "b", "a"], ["a", "b"], 1.0, rng=0)
    >>> counts.shape
    (2,)
    """
    users, key_arr = check_contribution_table(user_ids, keys)
    parts = _check_partitions(partitions)
    epsilon = check_epsilon(epsilon)
    m, r = _check_caps(max_partitions, max_rows)
    where = _aligned(key_arr, parts)
    generator = as_generator(rng)
    listed = where >= 0
    mask = bound_mask(users[listed], key_arr[listed], m, r, generator)
    counts = np.bincount(where[listed][mask], minlength=parts.size).astype(np.int64)
    return np.asarray(discrete_laplace_mechanism(counts, m * r, epsilon, rng=generator), np.int64)


def gaussian_count_by_key(
    user_ids: Any,
    keys: Any,
    partitions: Any,
    rho: float,
    *,
    max_partitions: int = 1,
    max_rows: int = 1,
    rng: Any = None,
) -> np.ndarray:
    """``rho``-zCDP number of rows per public key: the L2 sensitivity, discrete Gaussian noise.

    Parameters
    ----------
    user_ids, keys, partitions, max_partitions, max_rows, rng
        As :func:`private_count_by_key`.
    rho : float
        The zCDP budget of the release, finite, > 0 (spend it with :class:`dplib.ZcdpFilter`,
        or convert it with :func:`dplib.zcdp_to_dp`).

    Returns
    -------
    numpy.ndarray of int64
        ``c_k + Y_k`` with ``Y_k`` i.i.d. discrete Gaussian of scale
        ``sigma = sqrt(m) r / sqrt(2 rho)`` (at most ``2**26``): integers, safe from the
        floating-point attack.

    Notes
    -----
    One user moves at most ``m`` counts by at most ``r`` each, an L2 change of at most
    ``sqrt(m) r`` (:func:`contribution_sensitivity`), and the multivariate discrete Gaussian of
    scale ``sigma`` is ``Delta_2**2 / (2 sigma**2)``-zCDP for integer vectors whose L2
    sensitivity is ``Delta_2`` (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for
    Differential Privacy", the multivariate discrete Gaussian's concentrated-DP guarantee). The
    noise grows like ``sqrt(m)`` where :func:`private_count_by_key`'s Laplace noise grows like
    ``m``: the gain of L2 accounting for users in many keys (Wilson et al. 2020). ``sigma`` is
    rounded up so that ``m r**2 / (2 sigma**2) <= rho`` holds in floating point.

    Examples
    --------
    >>> gaussian_count_by_key([1, 1, 2], ["a", "b", "a"], ["a", "b"], 0.5, max_partitions=2, rng=0).dtype
    dtype('int64')
    """
    users, key_arr = check_contribution_table(user_ids, keys)
    parts = _check_partitions(partitions)
    budget = check_positive(rho, "rho")
    m, r = _check_caps(max_partitions, max_rows)
    with np.errstate(over="ignore", divide="ignore"):
        sigma = math.sqrt(m) * r / math.sqrt(2 * budget) if budget < math.inf else 0.0
    while sigma > 0 and m * r * r / (2 * sigma * sigma) > budget:
        sigma = math.nextafter(sigma, math.inf)
    if not 0 < sigma <= 2.0**26:
        raise ValueError(
            f"rho must give a noise scale sqrt(m) r / sqrt(2 rho) in (0, 2**26], got rho={rho!r}"
        )
    where = _aligned(key_arr, parts)
    generator = as_generator(rng)
    listed = where >= 0
    mask = bound_mask(users[listed], key_arr[listed], m, r, generator)
    counts = np.bincount(where[listed][mask], minlength=parts.size).astype(np.int64)
    noise = sample_discrete_gaussian(sigma, counts.size, rng=generator)
    return counts + np.asarray(noise, dtype=np.int64)


def private_sum_by_key(
    user_ids: Any,
    keys: Any,
    values: Any,
    partitions: Any,
    lower: float,
    upper: float,
    epsilon: float,
    *,
    max_partitions: int = 1,
    max_rows: int = 1,
    rng: Any = None,
) -> np.ndarray:
    """Epsilon-DP sum of clamped values per public key, each user's contribution bounded first.

    Parameters
    ----------
    user_ids, keys, values : array_like, 1-d
        One entry per row (may be empty); ``values`` finite numbers.
    partitions : array_like, 1-d
        The public keys to report (see :func:`private_count_by_key`).
    lower, upper : float
        Data-independent clamping bounds, ``lower < upper``.
    epsilon : float
        Finite, ``>= 2**-30``. Neighbours: add or remove one user with all of their rows.
    max_partitions, max_rows : int, keyword-only
        The L0 and Linf bounds ``m`` and ``r``.
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    numpy.ndarray of float
        One noisy sum per key, on the grid ``g Z`` of :func:`dplib.private_sum` (here with the
        noise scale ``m r B / epsilon``, ``B = max(|lower|, |upper|)``): a lattice fixed by the
        public parameters, whatever the data.

    Notes
    -----
    As :func:`dplib.private_sum` (add/remove), per key: every clamped value is rounded to the grid
    ``g = 2**e`` by monotone operations, so a row adds at most ``k = max(|k_lo|, |k_hi|)`` grid
    units to its key; a user adds at most ``r k`` to each of at most ``m`` keys, an integer L1
    sensitivity ``m r k`` (Wilson et al. 2020), and discrete Laplace noise of scale
    ``m r k / epsilon`` is added to each per-key integer sum (clamped to ``+-2**52``,
    1-Lipschitz). ``e`` is :func:`dplib.private_sum`'s grid exponent for the span ``B`` and the
    budget ``epsilon / (m r)``: the grid step is at most ``2**-20`` of ``B`` and of the noise scale.
    """
    users, key_arr, vals = check_contribution_table(user_ids, keys, values)
    parts = _check_partitions(partitions)
    lo, hi = check_bounds(lower, upper)
    epsilon = check_epsilon(epsilon)
    m, r = _check_caps(max_partitions, max_rows)
    if epsilon < _aggregates.MIN_DISCRETE_EPSILON:
        raise ValueError(f"epsilon must be >= 2**-30 (the grid of the sum), got {epsilon!r}")
    span = max(abs(lo), abs(hi))
    if span < _aggregates.MIN_SPAN:
        raise ValueError(
            f"lower and upper must span at least 2**-1000 around 0, got lower={lo!r}, upper={hi!r}"
        )
    step = math.ldexp(1.0, _aggregates.grid_exponent(span, epsilon / (m * r)))
    k_lo, k_hi = int(np.rint(lo / step)), int(np.rint(hi / step))
    units = max(abs(k_lo), abs(k_hi))
    where = _aligned(key_arr, parts)
    generator = as_generator(rng)
    listed = where >= 0
    mask = bound_mask(users[listed], key_arr[listed], m, r, generator)
    grid = np.rint(np.clip(vals[listed][mask], lo, hi) / step).astype(np.int64)
    totals = np.zeros(parts.size, dtype=np.int64)
    np.add.at(totals, where[listed][mask], grid)
    totals = np.clip(totals, -_aggregates.MAX_TOTAL, _aggregates.MAX_TOTAL)
    noisy = discrete_laplace_mechanism(totals, m * r * units, epsilon, rng=generator)
    out = np.asarray(noisy, dtype=np.float64) * step
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"the noisy sums overflow a double: choose smaller bounds, got lower={lo!r}, "
            f"upper={hi!r}"
        )
    return out


def private_rows_cap(
    user_ids: Any,
    epsilon: float,
    *,
    quantile: float = 0.9,
    upper: int = 100,
    rng: Any = None,
) -> int:
    """An epsilon-DP choice of ``max_rows``: a private quantile of the number of rows per user.

    Parameters
    ----------
    user_ids : array_like, 1-d
        One entry per row (may be empty).
    epsilon : float
        The part of the budget spent on choosing the cap, finite, > 0. The release that then
        uses the cap spends its own epsilon: the total is the sum (sequential composition).
    quantile : float, keyword-only
        The quantile of rows per user to aim at, in ``[0, 1]``; 0.9 keeps every row of 90 % of
        the users (Amin et al. 2019 recommend a cap near a high quantile).
    upper : int, keyword-only
        The largest cap considered, an integer in ``[1, 10**6]``; candidates are ``1, ..., upper``.
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    int
        A cap in ``[1, upper]``.

    Notes
    -----
    The rows per user form a dataset with one value per user, so adding or removing a user adds
    or removes one value: :func:`dplib.private_quantiles` over the integer candidates
    ``1, ..., upper`` (the exponential mechanism with OpenDP's quantile score, sensitivity ``max(q, 1 - q)``; exact
    sampling) is epsilon-DP for it (Amin et al. 2019 choose the bound from a private
    quantile; Smith 2011 and OpenDP's quantile score for the utility).
    """
    from dplib.queries.quantiles import private_quantiles

    users = _check_labels(user_ids, "user_ids")
    epsilon = check_epsilon(epsilon)
    level = check_probability(quantile, "quantile")
    top = check_integer(upper, "upper", minimum=1)
    if top > 10**6:
        raise ValueError(f"upper must be an integer in [1, 10**6], got {upper!r}")
    rows_per_user = np.unique(users, return_counts=True)[1].astype(float)
    if top == 1:
        as_generator(rng)
        return 1
    cap = private_quantiles(
        rows_per_user, [level], 1.0, float(top), epsilon, grid=np.arange(1.0, top + 1.0), rng=rng
    )
    return int(cap[0])
