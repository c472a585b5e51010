"""Frequency oracles for local differential privacy: unary encoding (RAPPOR-style) and Apple's
count-mean sketch, each with its unbiased estimator.

Every user holds one item ``v`` in ``0 .. k-1`` and sends one randomized report; the server
estimates how often each item occurs. Under local DP two users' inputs are neighbours when they
are *any* two items (replacement of the one value a user holds).

**Unary encoding** (Wang, Blocki, Li & Jha 2017, "Locally Differentially Private Protocols for
Frequency Estimation", USENIX Security, Section 4.3). Encode ``v`` as the one-hot bit vector of
length ``k`` and report every bit **independently**: a 1 stays 1 with probability ``p``, a 0
becomes 1 with probability ``q``. Two inputs differ in two bits, so the likelihood ratio of any
report is at most ``(p (1 - q)) / (q (1 - p))``, and the report is epsilon-LDP when this equals
``e^epsilon``:

* *symmetric* unary encoding (SUE, basic one-time RAPPOR, Erlingsson, Pihur & Korolova 2014):
  ``p = e^(eps/2) / (e^(eps/2) + 1)``, ``q = 1 / (e^(eps/2) + 1)``;
* *optimized* unary encoding (OUE, Wang et al. 2017, Section 4.4): ``p = 1/2``,
  ``q = 1 / (e^eps + 1)``, which minimises the estimator's variance for rare items.

The estimate of item ``j``'s frequency is ``(mean of bit j - q) / (p - q)`` (Wang et al. 2017,
Equation (3) divided by ``n``).

**Count-mean sketch** (Apple Differential Privacy Team 2017, "Learning with Privacy at Scale",
Algorithms 1-3). Each user picks one of ``m`` hash functions ``h_l`` at random, encodes ``v`` as the
vector of length ``w`` (the sketch width) that is ``-1`` everywhere and ``+1`` at ``h_l(v)``, flips
every entry independently with probability ``1 / (e^(eps/2) + 1)`` and sends the vector and
``l``. The report is epsilon-LDP (two inputs differ in at most two entries, each costing
``eps/2``) and costs ``w`` bits whatever the domain size ``k``. The hash functions here are a
public random table drawn from ``hash_seed``: a teaching stand-in for Apple's SHA-256 family.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_data,
    check_epsilon,
    check_integer,
    check_representable,
)

__all__ = [
    "unary_encoding_probabilities",
    "unary_encoding",
    "unary_encoding_estimate",
    "unary_encoding_variance",
    "cms_hash_table",
    "count_mean_sketch",
    "count_mean_sketch_estimate",
]

_VARIANTS = ("optimized", "symmetric")
#: Largest domain (and sketch width): a report is one row of that many bits.
_MAX_K = 2**20
#: Largest number of report bits per call (users x k, or users x width): 128 MB of int8 output.
_MAX_BITS = 2**27
#: Report bits drawn per chunk (the uniforms are float64: 32 MB at a time).
_CHUNK_BITS = 2**22
#: Largest number of users n of the variance formulas (they divide by float(n)).
_MAX_USERS = 10**300


def _check_bits(n: int, width: int, name: str) -> None:
    if n * width > _MAX_BITS:
        raise ValueError(
            f"values and {name} ask for too many report bits: len(values) * {name} must be at most "
            f"2**27, got {n} * {width}"
        )


def _flip_bits(
    generator: np.random.Generator, n: int, width: int, below: float, items: Any = None, item_below: float = 0.0
) -> np.ndarray:
    """``U < below`` for ``U = generator.random((n, width))``, drawn in row chunks (the same
    stream as one call); with ``items``, entry ``(i, items[i])`` is ``U < item_below`` instead."""
    out = np.empty((n, width), dtype=bool)
    step = max(1, _CHUNK_BITS // width)
    for start in range(0, n, step):
        stop = min(start + step, n)
        uniforms = generator.random((stop - start, width))
        out[start:stop] = uniforms < below
        if items is not None:
            rows = np.arange(stop - start)
            cols = items[start:stop]
            out[start + rows, cols] = uniforms[rows, cols] < item_below
    return out


def _check_variant(variant: Any) -> str:
    if not isinstance(variant, str):
        raise TypeError(
            f"variant must be a str, 'optimized' (OUE) or 'symmetric' (SUE), got {type(variant).__name__}"
        )
    if variant not in _VARIANTS:
        raise ValueError(f"variant must be 'optimized' (OUE) or 'symmetric' (SUE), got {variant!r}")
    return str(variant)


def _check_k(k: Any, name: str = "k") -> int:
    out = check_integer(k, name, minimum=2)
    if out > _MAX_K:
        raise ValueError(f"{name} must be an integer in [2, 2**20 = {_MAX_K}], got {k!r}")
    return out


def _as_items(values: Any, k: int, name: str = "values") -> np.ndarray:
    arr = check_data(values, name, dtype=float, allow_empty=True)  # no user, no report
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array with one item per user, got shape {arr.shape}")
    if arr.size and (not np.all(arr == np.floor(arr)) or arr.min() < 0 or arr.max() > k - 1):
        raise ValueError(f"{name} must be integers in 0..k-1 = 0..{k - 1}")
    return arr.astype(np.int64)


def unary_encoding_probabilities(epsilon: float, variant: str = "optimized") -> tuple[float, float]:
    """The pair ``(p, q)``: P[report bit = 1] for the user's own bit and for every other bit.

    ``optimized`` (OUE): ``p = 1/2``, ``q = 1 / (e^eps + 1)``; ``symmetric`` (SUE):
    ``p = e^(eps/2) / (e^(eps/2) + 1)``, ``q = 1 - p``. Both satisfy
    ``p (1 - q) / (q (1 - p)) = e^eps`` (Wang et al. 2017, Theorem 3 and Section 4.4).

    Raises
    ------
    ValueError
        If epsilon is not a finite number > 0 or the variant is unknown.
    """
    epsilon = check_epsilon(epsilon)
    variant = _check_variant(variant)
    if variant == "optimized":
        return 0.5, 1.0 / (1.0 + math.exp(epsilon)) if epsilon < 700 else 0.0
    half = epsilon / 2.0
    q = 1.0 / (1.0 + math.exp(half)) if half < 700 else 0.0
    return 1.0 - q, q


def unary_encoding(
    values: Any, k: int, epsilon: float, *, variant: str = "optimized", rng: Any = None
) -> np.ndarray:
    """Unary-encoding reports: one row of ``k`` independently randomized bits per user.

    Parameters
    ----------
    values : array_like of int, shape (n,)
        Each user's item in ``0 .. k-1``.
    k : int
        Domain size, >= 2.
    epsilon : float
        Local privacy loss per user (replacement of the user's item), finite and > 0.
    variant : {"optimized", "symmetric"}
        OUE or SUE probabilities, see :func:`unary_encoding_probabilities`.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int8, shape (n, k)
        ``report[i, j] = 1`` with probability ``p`` if ``j == values[i]``, else ``q``; all
        ``n * k`` bits independent.

    Raises
    ------
    ValueError
        Bad epsilon, k, variant, or values that are not items of the domain (or empty).

    References
    ----------
    Wang, Blocki, Li & Jha (2017), Sections 4.3-4.4; Erlingsson, Pihur & Korolova (2014),
    "RAPPOR", CCS (the symmetric probabilities, one-time response without a Bloom filter).
    """
    k = _check_k(k)
    p, q = unary_encoding_probabilities(epsilon, variant)
    items = _as_items(values, k)
    _check_bits(items.size, k, "k")
    generator = as_generator(rng)

    return _flip_bits(generator, items.size, k, q, items, p).astype(np.int8)


def _as_reports(reports: Any) -> np.ndarray:
    arr = check_data(reports, "reports")
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise ValueError(f"reports must be a 2-d array (users x k bits), got shape {arr.shape}")
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError("reports must contain only 0/1 bits")
    return arr


def unary_encoding_estimate(reports: Any, epsilon: float, *, variant: str = "optimized") -> np.ndarray:
    """Unbiased frequency estimates from unary-encoding reports.

    ``f_hat_j = (mean_i report[i, j] - q) / (p - q)``: since ``E[report[i, j]] = q + 1[v_i = j] (p - q)``,
    the estimate's mean is the true fraction of users holding ``j``. Not clipped to [0, 1] (that
    would bias it); the estimates need not sum to one.

    Returns
    -------
    numpy.ndarray of float, shape (k,)

    Raises
    ------
    ValueError
        Bad epsilon or variant; reports not a non-empty 2-d 0/1 array.

    References
    ----------
    Wang et al. (2017), Equation (3).
    """
    arr = _as_reports(reports)
    p, q = unary_encoding_probabilities(epsilon, variant)
    gap = _check_gap(p - q, epsilon)
    return check_representable((arr.mean(axis=0) - q) / gap, "the estimate", epsilon)


def _check_gap(gap: float, epsilon: float) -> float:
    """``p - q``, refusing an epsilon so small that it rounds to 0 (the estimators divide by it)."""
    if gap <= 0.0:
        check_representable(math.inf, "the estimate (p - q rounds to 0)", epsilon)
    return gap


def unary_encoding_variance(frequencies: Any, n: int, epsilon: float, *, variant: str = "optimized") -> np.ndarray:
    """Variance of :func:`unary_encoding_estimate` for each item, with ``n`` users.

    ``Var_j = q (1 - q) / (n (p - q)^2) + f_j (1 - p - q) / (n (p - q))`` (Wang et al. 2017,
    Equation (4) divided by ``n^2``). For OUE and a rare item (``f_j -> 0``) this is
    ``4 e^eps / (n (e^eps - 1)^2)``, independent of ``k``.

    Raises
    ------
    ValueError
        Bad epsilon, variant or n; frequencies not in [0, 1] or empty.
    """
    f = check_data(frequencies, "frequencies")
    if np.any(f < 0) or np.any(f > 1):
        raise ValueError("frequencies must be in [0, 1]")
    n = check_integer(n, "n", minimum=1)
    if n > _MAX_USERS:
        raise ValueError(f"n must be an integer in [1, 10**300], got a number of {len(str(n))} digits")
    p, q = unary_encoding_probabilities(epsilon, variant)
    gap = _check_gap(p - q, epsilon)
    with np.errstate(over="ignore"):
        variance = q * (1 - q) / (n * gap * gap) + f * (1 - p - q) / (n * gap)
    return check_representable(variance, "the variance", epsilon)


def cms_hash_table(domain_size: int, num_hashes: int, width: int, hash_seed: int = 0) -> np.ndarray:
    """The public hash functions of the count-mean sketch: ``table[l, v] = h_l(v)`` in ``0 .. width-1``.

    A random table drawn from ``hash_seed`` (public, shared by users and server). Items that
    collide under ``h_l`` are confused in that row; the estimator corrects the average effect.

    Raises
    ------
    ValueError
        domain_size or width below 2, num_hashes below 1, a negative hash_seed.
    """
    domain_size = _check_k(domain_size, "domain_size")
    num_hashes = check_integer(num_hashes, "num_hashes", minimum=1)
    width = _check_k(width, "width")
    seed = check_integer(hash_seed, "hash_seed", minimum=0)
    if num_hashes * domain_size > 2**26:
        raise ValueError("num_hashes * domain_size must be at most 2**26")
    return np.random.default_rng(seed).integers(0, width, size=(num_hashes, domain_size))


def count_mean_sketch(
    values: Any,
    domain_size: int,
    epsilon: float,
    *,
    num_hashes: int = 16,
    width: int = 64,
    hash_seed: int = 0,
    rng: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Apple's private count-mean-sketch client (Algorithm 1 of "Learning with Privacy at Scale").

    Each user draws a hash index ``l`` uniformly from ``0 .. num_hashes-1``, encodes its item as
    the ``±1`` vector with ``+1`` only at ``h_l(v)``, and flips each of the ``width`` entries
    independently with probability ``1 / (e^(eps/2) + 1)``.

    Returns
    -------
    (reports, hash_indices) : numpy.ndarray of int8 shape (n, width), numpy.ndarray of int64 shape (n,)

    Notes
    -----
    epsilon-LDP under replacement of the user's item: two items change at most two entries of
    the encoded vector, and each entry's likelihood ratio is at most ``e^(eps/2)``; the hash
    index does not depend on the item.

    Raises
    ------
    ValueError
        Bad epsilon, sizes, or values outside ``0 .. domain_size-1``.
    """
    table = cms_hash_table(domain_size, num_hashes, width, hash_seed)
    epsilon = check_epsilon(epsilon)
    items = _as_items(values, table.shape[1])
    _check_bits(items.size, width, "width")
    generator = as_generator(rng)
    n = items.size
    index = generator.integers(0, num_hashes, size=n)
    encoded = -np.ones((n, width), dtype=np.int8)
    encoded[np.arange(n), table[index, items]] = 1
    flip_probability = 1.0 / (1.0 + math.exp(epsilon / 2.0)) if epsilon < 1400 else 0.0
    flips = _flip_bits(generator, n, width, flip_probability)
    return np.where(flips, -encoded, encoded).astype(np.int8), index.astype(np.int64)


def count_mean_sketch_estimate(
    reports: Any,
    hash_indices: Any,
    domain_size: int,
    epsilon: float,
    *,
    num_hashes: int = 16,
    width: int = 64,
    hash_seed: int = 0,
) -> np.ndarray:
    """Frequency estimates of every item from count-mean-sketch reports (Apple's Algorithms 2-3).

    Debias each report, ``x = num_hashes (c_eps / 2 * report + 1/2)`` with
    ``c_eps = (e^(eps/2) + 1) / (e^(eps/2) - 1)``, add it to row ``l`` of the sketch ``M``, and read
    ``f_hat(v) = (width / (width - 1)) (mean_l M[l, h_l(v)] - n / width) / n``.

    Unbiased over the draw of the hash functions (each ``h_l(u) = h_l(v)`` with probability
    ``1 / width`` for ``u != v``); for one fixed table, items that collide with frequent ones
    are biased. The estimates are fractions of the ``n`` users, not clipped.

    Returns
    -------
    numpy.ndarray of float, shape (domain_size,)

    Raises
    ------
    ValueError
        Bad epsilon or sizes; reports not ``±1`` of shape ``(n, width)``; hash_indices not
        ``n`` integers in ``0 .. num_hashes-1``.
    """
    table = cms_hash_table(domain_size, num_hashes, width, hash_seed)
    epsilon = check_epsilon(epsilon)
    arr = check_data(reports, "reports")
    if arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError(f"reports must have shape (n, width={width}), got {arr.shape}")
    if not np.all(np.abs(arr) == 1):
        raise ValueError("reports must contain only -1/+1 entries")
    idx = check_data(hash_indices, "hash_indices", dtype=float)
    if idx.shape != (arr.shape[0],) or not np.all(idx == np.floor(idx)) or idx.min() < 0 or idx.max() >= num_hashes:
        raise ValueError(f"hash_indices must be {arr.shape[0]} integers in 0..num_hashes-1")
    idx = idx.astype(np.int64)
    n = arr.shape[0]
    half_gap = math.tanh(epsilon / 4.0)  # (e^(eps/2) - 1) / (e^(eps/2) + 1): 0 for a subnormal epsilon
    if half_gap == 0.0:
        check_representable(math.inf, "the estimate (tanh(epsilon / 4) rounds to 0)", epsilon)
    c_eps = 1.0 / half_gap  # (e^(eps/2) + 1) / (e^(eps/2) - 1)
    with np.errstate(over="ignore", invalid="ignore"):
        debiased = num_hashes * (c_eps / 2.0 * arr + 0.5)
        sketch = np.stack([debiased[idx == row].sum(axis=0) for row in range(num_hashes)])
        mean_row = sketch[np.arange(num_hashes)[:, None], table].mean(axis=0)
        estimate = (width / (width - 1.0)) * (mean_row - n / width) / n
    return check_representable(estimate, "the estimate", epsilon)
