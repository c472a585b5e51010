"""Partition selection: release the keys that enough users have, when nobody listed the keys.

Counting purchases per product needs the list of products. If it comes from the data, a key
that only one user has is itself a secret: releasing it (even with a noisy count) reveals that
someone has it. :func:`select_partitions` releases a key with a probability that depends on its
number of distinct users ``n``, after each user is bounded to ``max_partitions = m`` keys
(:func:`dplib.bound_contributions`), with an (epsilon, delta) guarantee under add/remove of a
user. Two rules:

``"laplace"`` (the simple one)
    keep a key when ``n + Z >= threshold``, ``Z`` discrete Laplace of scale ``m / epsilon``
    (Korolova, Kenthapadi, Mishra & Ntoulas 2009; Google's ``LaplacePartitionSelection``, here
    with integer noise). A key that one user alone creates is released with probability
    ``p = P(1 + Z >= threshold)``; a user creates at most ``m`` such keys, so
    ``delta = 1 - (1 - p)**m`` (:func:`partition_selection_delta`); the threshold is the
    smallest one whose delta is at most the target (:func:`partition_threshold`).
``"gaussian"`` (for users in many keys)
    keep a key when ``n + Y >= threshold``, ``Y`` discrete Gaussian of scale ``sigma``: the
    noisy counts have L2 sensitivity ``sqrt(m)``, so ``sigma`` grows like ``sqrt(m)`` where the
    Laplace scale grows like ``m``; half of ``delta`` goes to the noise (``rho``-zCDP, converted),
    half to the threshold (Google's ``GaussianPartitionSelection`` splits it the same way).
``"optimal"`` (Desfontaines, Voss, Gipson & Mandayam 2022)
    keep a key with ``n`` users with probability ``pi(n)``, the largest function with
    ``pi(0) = 0`` allowed by (epsilon/m, delta')-DP between ``n - 1`` and ``n`` users:
    ``pi(n) = min(e^eps' pi(n-1) + delta', 1 - e^-eps' (1 - pi(n-1) - delta'), 1)``
    (their Theorem 1 and its closed form, :func:`partition_keep_probability`); it dominates
    every other (epsilon, delta)-DP rule that depends on ``n`` only.

Exactness. The Laplace and Gaussian rules add exact integer noise (dplib's exact discrete
Laplace and discrete Gaussian samplers) to integer counts and compare with an integer
threshold; the Gaussian rule's threshold comes from an upper bound on the noise's tail (a sum
of its pmf in doubles, raised by a relative 1e-12). The optimal rule draws Bernoulli(``pi~(n)``) exactly (a uniform 62-bit integer
below an integer numerator), for the dyadic sequence ``pi~`` of :func:`_dyadic_keep_probabilities`:
the recurrence evaluated in rational arithmetic with a rational lower bound on ``e^eps'`` and
an upper bound on ``e^-eps'``, each value rounded *down* to a multiple of ``2**-62``. Every
value then satisfies both DP constraints against its predecessor exactly, for the true
``e^eps'`` (rounding down only tightens them), so the guarantee holds for the probabilities
actually used; they are below the optimal ``pi(n)`` by at most ``n 2**-61`` (the price of
exactness, measured in the tests).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_delta,
    check_epsilon,
    check_integer,
    check_real,
    refuse_masked,
)
from dplib.accounting.rdp import zcdp_to_dp
from dplib.mechanisms._count_noise import noise_scale
from dplib.mechanisms._exact import exp_neg_fixed
from dplib.mechanisms.discrete_gaussian import discrete_gaussian_pmf, sample_discrete_gaussian
from dplib.mechanisms.discrete_laplace import discrete_laplace_noise
from dplib.queries.contributions import MAX_CONTRIBUTIONS, bound_mask, check_contribution_table

__all__ = [
    "PARTITION_RULES",
    "select_partitions",
    "partition_keep_probability",
    "partition_selection_delta",
    "partition_threshold",
]

#: The rules of :func:`select_partitions`.
PARTITION_RULES = ("optimal", "laplace", "gaussian")
_NOISES = ("discrete_laplace", "laplace")
_BITS = 62  # the optimal rule's probabilities are multiples of 2**-62
#: Largest threshold searched by :func:`partition_threshold`.
_MAX_THRESHOLD = 2**53
#: The optimal rule's sequence is computed up to this many users, then held constant.
_MAX_STEPS = 10**6


def _check_m(max_partitions: Any) -> int:
    m = check_integer(max_partitions, "max_partitions", minimum=1)
    if m > MAX_CONTRIBUTIONS:
        raise ValueError(f"max_partitions must be an integer in [1, 2**20], got {max_partitions!r}")
    return m


def _check_rule(rule: Any) -> str:
    if not isinstance(rule, str):
        raise TypeError(f"rule must be one of {PARTITION_RULES}, got {type(rule).__name__}")
    if rule not in PARTITION_RULES:
        raise ValueError(f"rule must be one of {PARTITION_RULES}, got {rule!r}")
    return rule


def _check_noise(noise: Any) -> str:
    if not isinstance(noise, str) or noise not in _NOISES:
        raise ValueError(f"noise must be one of {_NOISES}, got {noise!r}")
    return noise


def _per_partition_delta(delta: float, m: int) -> float:
    """``delta'`` for one key: ``delta`` for ``m = 1``; ``delta / m`` otherwise.

    ``1 - (1 - delta / m)**m <= delta`` (Bernoulli's inequality), so the ``m`` keys one user
    touches compose to (epsilon, delta) (Kairouz, Oh & Viswanath 2015, Theorem 3.3, whose
    ``delta`` term for k mechanisms is ``1 - prod(1 - delta_i)``). Google's library uses the
    exact root ``1 - (1 - delta)**(1/m)``, larger by ``O(delta**2)``; ``delta / m`` is exact in
    rationals.
    """
    return delta if m == 1 else delta / m


# --------------------------------------------------------------------------- the optimal rule


def partition_keep_probability(
    n: Any, epsilon: float, delta: float, *, max_partitions: int = 1
) -> Any:
    """The optimal keep probability ``pi(n)`` of a key with ``n`` distinct users.

    Parameters
    ----------
    n : int or array_like of int
        Numbers of distinct users, ``>= 0``.
    epsilon : float
        Finite, > 0; each key gets ``eps' = epsilon / max_partitions``.
    delta : float
        In [0, 1); each key gets ``delta' = delta`` (``m = 1``) or ``delta / m``.
    max_partitions : int, keyword-only
        ``m``, the most keys one user contributes to (after bounding).

    Returns
    -------
    float or numpy.ndarray
        ``pi(n)`` in [0, 1], in double precision (the release uses the exact dyadic sequence
        below it, see the module's notes).

    Notes
    -----
    Desfontaines, Voss, Gipson & Mandayam (2022), "Differentially Private Partition Selection",
    PoPETs 2022(1), Theorem 1: with ``n1 = 1 + floor(log1p(tanh(eps'/2) (1/delta' - 1)) / eps')``
    and ``n2 = n1 + floor(log1p(expm1(eps') / delta' (1 - pi(n1))) / eps')``,

    * ``pi(n) = expm1(n eps') / expm1(eps') delta'`` for ``1 <= n <= n1``,
    * ``pi(n) = pi(n1) - (1 - pi(n1) + delta' / expm1(eps')) expm1(-(n - n1) eps')`` for
      ``n1 < n <= n2``,
    * ``pi(n) = 1`` beyond, and ``pi(0) = 0``;

    as Google's ``NearTruncatedGeometricPartitionSelection::ProbabilityOfKeep`` computes it.

    Examples
    --------
    >>> round(float(partition_keep_probability(8, 0.5, 0.02)), 8)  # Google's test figure
    0.86807081
    """
    refuse_masked(n, "n")
    counts = np.asarray(n)
    if counts.dtype.kind not in "iuf" or isinstance(n, bool):
        raise TypeError(f"n must be an integer or an array of integers >= 0, got {n!r}")
    if counts.dtype.kind == "f" and (
        not np.all(np.isfinite(counts)) or np.any(counts != np.round(counts))
    ):
        raise ValueError("n must hold integers >= 0 (numbers of users)")
    if np.any(counts < 0):
        raise ValueError("n must hold integers >= 0 (numbers of users)")
    eps = check_epsilon(epsilon)
    m = _check_m(max_partitions)
    d = _per_partition_delta(check_delta(delta), m)
    e = eps / m
    counts = counts.astype(float)
    if e > 700:
        raise ValueError(
            f"epsilon / max_partitions must be at most 700 (e**epsilon overflows a double), got "
            f"epsilon={epsilon!r}"
        )
    if d == 0:
        out = np.zeros_like(counts)
    else:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            # log1p(tanh(e/2) (1/d - 1)) = log(d + tanh(e/2) (1 - d)) - log(d), without 1/d
            ratio = (math.log(d + math.tanh(e / 2) * (1 - d)) - math.log(d)) / e
            n1 = 1 + math.floor(min(ratio, 2.0**62))
            p1 = min(math.expm1(min(n1 * e, 700.0)) / math.expm1(e) * d, 1.0)
            lin = np.minimum(np.expm1(np.minimum(counts * e, 700.0)) / math.expm1(e) * d, 1.0)
            tail = p1 - (1 - p1 + d / math.expm1(e)) * np.expm1(-(counts - n1) * e)
            out = np.where(counts <= n1, lin, np.minimum(tail, 1.0))
        out = np.where(counts == 0, 0.0, out)
        if not np.all(np.isfinite(out)):
            raise ValueError(
                f"epsilon and delta are too extreme for pi(n) in double precision, got "
                f"epsilon={epsilon!r}, delta={delta!r}"
            )
        out = np.clip(out, 0.0, 1.0)
    return float(out) if out.ndim == 0 else out


@functools.lru_cache(maxsize=32)
def _dyadic_keep_probabilities(epsilon: float, delta: float, m: int, n_max: int) -> np.ndarray:
    """Numerators ``k_n`` of ``pi~(n) = k_n / 2**62`` for ``n = 0..n_max`` (see module notes).

    Integer arithmetic in units of ``2**-62``: ``S / 2**80 >= exp(-eps')`` from certified integer
    bounds on ``exp`` (:func:`dplib.mechanisms._exact.exp_neg_fixed`), ``R / 2**80 <= 2**80 / S
    <= exp(eps')``, ``D = floor(delta' 2**62) <= delta' 2**62``. Each step is
    ``k_n = min(floor(R k_{n-1} / 2**80) + D, 2**62 - ceil(S (2**62 - k_{n-1} - D) / 2**80),
    2**62)``: every rounding goes down, so ``pi~(n) <= e^eps' pi~(n-1) + delta'`` and
    ``1 - pi~(n-1) <= e^eps' (1 - pi~(n)) + delta'`` hold exactly for the true ``e^eps'`` and
    ``delta'``; the reverse constraints hold because the sequence is non-decreasing. Past
    ``10**6`` users the value is held constant (still valid: equal neighbours satisfy both).
    """
    one = 1 << _BITS
    prec = 80
    d_int = math.floor(Fraction(_per_partition_delta_fraction(delta, m)) * one)
    _, hi = exp_neg_fixed(Fraction(epsilon) / m, prec)
    s_int = min(max(hi, 1), 1 << prec)  # s = S / 2**80 in [exp(-eps'), 1]
    r_int = (1 << (2 * prec)) // s_int  # R / 2**80 <= 1 / s <= exp(eps')
    steps = min(n_max, _MAX_STEPS)
    out = np.empty(n_max + 1, dtype=np.int64)
    out[0] = 0
    k = 0
    for n in range(1, steps + 1):
        if k < one:
            up = ((r_int * k) >> prec) + d_int
            rest = one - k - d_int
            down = one - (-((-s_int * rest) >> prec)) if rest > 0 else one
            k = min(up, down, one)  # >= k: R >= 2**80 and S <= 2**80
        out[n] = k
    out[steps + 1 :] = k
    out.flags.writeable = False  # cached: shared between calls
    return out


def _per_partition_delta_fraction(delta: float, m: int) -> Fraction:
    return Fraction(delta) if m == 1 else Fraction(delta) / m


# --------------------------------------------------------------------------- the Laplace rule


def _one_user_probability(threshold: float, epsilon: float, m: int, noise: str) -> float:
    """``p = P(1 + Z >= threshold)`` for the noise of the Laplace rule (scale ``m / epsilon``)."""
    if noise == "laplace":
        b = m / epsilon
        t = threshold - 1
        return 0.5 * math.exp(-t / b) if t >= 0 else 1 - 0.5 * math.exp(t / b)
    scale = noise_scale(m, epsilon)  # the scale the release uses (rounded up)
    q = math.exp(-1 / scale)
    k = math.ceil(threshold) - 1  # P(Z >= k), Z discrete Laplace: q**k / (1 + q) for k >= 0
    if k >= 0:
        return math.exp(k * -1 / scale) / (1 + q) if k > 0 else 1 / (1 + q)
    return 1 - math.exp((1 - k) * -1 / scale) / (1 + q)


def partition_selection_delta(
    threshold: float,
    epsilon: float,
    *,
    max_partitions: int = 1,
    noise: str = "discrete_laplace",
) -> float:
    """The delta of the Laplace rule "keep when ``n + Z >= threshold``".

    Parameters
    ----------
    threshold : float
        The threshold on the noisy number of users (finite; an integer is natural for the
        discrete noise, whose values are integers).
    epsilon : float
        Finite, > 0; the noise scale is ``max_partitions / epsilon``.
    max_partitions : int, keyword-only
        ``m``, the most keys one user contributes to.
    noise : {"discrete_laplace", "laplace"}, keyword-only
        The noise of :func:`select_partitions` (discrete, the default), or the continuous Laplace
        of Google's ``LaplacePartitionSelection`` (to compare with its figures).

    Returns
    -------
    float
        ``delta = 1 - (1 - p)**m`` with ``p = P(1 + Z >= threshold)``: the probability that a
        user who alone has ``m`` keys gets at least one of them released. For the discrete
        Laplace of scale ``s`` (``q = e**(-1/s)``), ``P(Z >= k) = q**k / (1 + q)`` for ``k >= 0``
        and ``1 - q**(1 - k) / (1 + q)`` for ``k < 0``, with ``k = ceil(threshold) - 1``; for
        the continuous Laplace, ``p = exp(-(threshold - 1) / s) / 2`` above 1. Exact up to the
        rounding of doubles (relative error ``~1e-15``).

    Notes
    -----
    On neighbours that differ by one user, the keys that user alone has are released with
    probability ``p`` each on one side and never on the other: this is the delta; on every other
    key the noisy counts differ by at most 1 in at most ``m`` keys, which the scale ``m /
    epsilon`` makes epsilon-DP (Korolova et al. 2009; Wilson et al. 2020; Google's
    ``LaplacePartitionSelection::CalculateDelta``, whose ``1 - (1 - p)**m`` this is).

    Examples
    --------
    >>> round(partition_selection_delta(2, math.log(3), noise="laplace"), 8)  # Google's figure
    0.16666667
    """
    t = check_real(threshold, "threshold")
    eps = check_epsilon(epsilon)
    m = _check_m(max_partitions)
    kind = _check_noise(noise)
    p = _one_user_probability(t, eps, m, kind)
    if p >= 1:
        return 1.0
    return float(-math.expm1(m * math.log1p(-p)))


def partition_threshold(epsilon: float, delta: float, *, max_partitions: int = 1) -> int:
    """The smallest integer threshold whose Laplace rule (discrete noise) has delta <= ``delta``.

    Parameters
    ----------
    epsilon : float
        Finite, > 0.
    delta : float
        In (0, 1).
    max_partitions : int, keyword-only

    Returns
    -------
    int
        ``min {t integer >= 1 : partition_selection_delta(t, epsilon, max_partitions) <= delta}``
        (the delta decreases with ``t``), found by bisection on the closed form.

    Examples
    --------
    >>> partition_threshold(1.0, 1e-6)
    15
    """
    eps = check_epsilon(epsilon)
    target = check_delta(delta, allow_zero=False)
    m = _check_m(max_partitions)
    scale = noise_scale(m, eps)
    # delta(t) <= m p and p = q**(t-1)/(1+q) <= e**(-(t-1)/s): t = 1 + s log(m / delta) suffices
    top = 1 + math.ceil(scale * (math.log(m) - math.log(target))) + 1
    if top > _MAX_THRESHOLD:
        raise ValueError(
            f"epsilon is too small for a threshold below 2**53, got epsilon={epsilon!r}, "
            f"delta={delta!r}"
        )
    lo, hi = 1, max(top, 1)
    while lo < hi:
        mid = (lo + hi) // 2
        if partition_selection_delta(mid, eps, max_partitions=m) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


# --------------------------------------------------------------------------- the Gaussian rule


def _gaussian_tail(k: int, sigma: float) -> float:
    """An upper bound on ``P(Y >= k)`` for ``Y`` discrete Gaussian of scale ``sigma``.

    Up to ``sigma = 10**4``: the pmf summed over ``k .. k + 40 sigma + 60`` (the rest is below
    ``e**-800``), raised by a relative ``1e-12`` for rounding. Beyond: for ``k >= 1``,
    ``sum_{y >= k} e^(-y^2 / 2 s^2) <= e^(-k^2 / 2 s^2) + sqrt(2 pi) s Q(k / s)`` (a decreasing
    function's sum against its integral) over the normaliser ``>= sqrt(2 pi) s - 1``.
    """
    if k <= 0:
        return 1.0
    if sigma <= 1e4:
        ys = np.arange(k, k + int(40 * sigma) + 60)
        return min(float(np.sum(discrete_gaussian_pmf(ys, sigma))) * (1 + 1e-12), 1.0)
    root = math.sqrt(2 * math.pi) * sigma
    upper = math.exp(-(k * k) / (2 * sigma * sigma)) + root * 0.5 * math.erfc(
        k / (sigma * math.sqrt(2))
    )
    return min(upper / (root - 1) * (1 + 1e-12), 1.0)


@functools.lru_cache(maxsize=32)
def _gaussian_plan(epsilon: float, delta: float, m: int) -> tuple[float, int]:
    """``(sigma, threshold)`` of the Gaussian rule; half of ``delta`` each to noise and threshold.

    ``rho`` is the largest (to a relative ``1e-9``, rounded down) with
    ``zcdp_to_dp(rho, delta / 2, method="tight") <= epsilon``; ``sigma = sqrt(m / (2 rho))``
    (rounded up), so the counts, of L2 sensitivity ``sqrt(m)``, are ``rho``-zCDP (CKS20) and
    hence (epsilon, delta / 2)-DP. The threshold is the smallest integer ``t >= 1`` with
    ``1 - (1 - P(Y >= t - 1))**m <= delta / 2`` (an upper bound on ``P``, :func:`_gaussian_tail`).
    """
    noise_delta = delta / 2
    lo, hi = 0.0, min(epsilon, 1e300)  # zcdp_to_dp(rho) >= rho, so rho <= epsilon
    for _ in range(200):
        mid = (lo + hi) / 2 if lo > 0 else hi / 2
        if mid <= lo:  # no double between lo and hi (or below a subnormal epsilon)
            break
        if zcdp_to_dp(mid, noise_delta, method="tight") <= epsilon:
            lo = mid
        else:
            hi = mid
        if lo > 0 and hi - lo <= 1e-9 * lo:
            break
    if lo <= 0:
        raise ValueError(f"epsilon is too small for the Gaussian rule, got epsilon={epsilon!r}")
    sigma = math.sqrt(m / (2 * lo))
    while m / (2 * sigma * sigma) > lo:
        sigma = math.nextafter(sigma, math.inf)
    if sigma > 2.0**26:
        raise ValueError(
            f"epsilon is too small for the Gaussian rule (sigma above 2**26), got epsilon={epsilon!r}"
        )
    low, high = 1, 2 + math.ceil(sigma * math.sqrt(2 * math.log(4 * m / delta))) + 60
    while low < high:
        mid = (low + high) // 2
        p = _gaussian_tail(mid - 1, sigma)
        if -math.expm1(m * math.log1p(-p)) <= delta / 2 if p < 1 else False:
            high = mid
        else:
            low = mid + 1
    p = _gaussian_tail(low - 1, sigma)
    if not (p < 1 and -math.expm1(m * math.log1p(-p)) <= delta / 2):
        raise ValueError(
            f"no threshold below 2**53 meets delta / 2 for the Gaussian rule, got delta={delta!r}"
        )
    return sigma, low


# --------------------------------------------------------------------------- the release


def select_partitions(
    user_ids: Any,
    keys: Any,
    epsilon: float,
    delta: float,
    *,
    max_partitions: int = 1,
    rule: str = "optimal",
    return_counts: bool = False,
    rng: Any = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """(epsilon, delta)-DP set of the keys that enough distinct users have.

    Parameters
    ----------
    user_ids, keys : array_like, 1-d
        One entry per row: the user and the key (group) of the row. Integers, finite floats or
        strings; may be empty.
    epsilon : float
        Finite, > 0.
    delta : float
        In (0, 1): the probability budget of releasing a key that one user alone has.
    max_partitions : int, keyword-only
        ``m``: each user keeps at most ``m`` of their keys, chosen uniformly at random
        (:func:`dplib.bound_contributions`), before the users per key are counted.
    rule : {"optimal", "laplace", "gaussian"}, keyword-only
        ``"optimal"``: keep a key with ``n`` users with probability ``pi~(n)``, the exact dyadic
        version of Desfontaines et al.'s optimal ``pi(n)`` (:func:`partition_keep_probability`).
        ``"laplace"``: keep it when ``n + Z >= partition_threshold(epsilon, delta, m)``, ``Z``
        discrete Laplace of scale ``m / epsilon``. ``"gaussian"``: keep it when ``n + Y`` reaches
        the threshold of :func:`_gaussian_plan`, ``Y`` discrete Gaussian (see the module's notes).
    return_counts : bool, keyword-only
        ``rule="laplace"`` or ``"gaussian"``: also return the noisy numbers of distinct users ``n + Z`` of the
        kept keys, at no extra cost (the analysis of the rule covers the noisy count of every
        released key: Wilson et al. 2020; OpenDP's ``make_laplace_threshold``).
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    numpy.ndarray, or (numpy.ndarray, numpy.ndarray of int64)
        The kept keys, sorted, each once (empty when none is kept), of the dtype of ``keys``;
        with ``return_counts``, also their noisy numbers of users (each at least the threshold).

    Raises
    ------
    TypeError, ValueError
        For bad arguments (labels that are not 1-d numbers or strings, NaN, lengths that differ,
        epsilon or delta out of range, an unknown rule); nothing is drawn then.

    Notes
    -----
    (epsilon, delta)-DP under add/remove of one user with all their rows: Desfontaines et al.
    (2022), Theorem 1; for users in several partitions, each key at ``(epsilon / m, delta')``,
    composed over the ``m`` keys a user touches (Kairouz, Oh & Viswanath 2015)); for the
    Laplace rule, :func:`partition_selection_delta`. The outputs are
    subsets of the input's keys chosen by exact integer draws: no floating-point noise is
    released. Release counts for the selected keys with
    :func:`dplib.private_count_by_key` and add its epsilon (sequential composition).

    Examples
    --------
    >>> users = np.arange(1000) % 300
    >>> keys = np.where(np.arange(1000) < 990, "popular", "rare")
    >>> select_partitions(users, keys, 1.0, 1e-6, rng=0).tolist()
    ['popular']
    """
    users, key_arr = check_contribution_table(user_ids, keys)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, allow_zero=False)
    m = _check_m(max_partitions)
    how = _check_rule(rule)
    if not isinstance(return_counts, bool | np.bool_):
        raise TypeError(f"return_counts must be True or False, got {return_counts!r}")
    if return_counts and how == "optimal":
        raise ValueError(
            "return_counts=True needs rule='laplace' or 'gaussian' (the optimal rule releases no "
            "count)"
        )
    threshold = partition_threshold(eps, dlt, max_partitions=m) if how == "laplace" else 0
    if how == "gaussian":
        sigma, threshold = _gaussian_plan(eps, dlt, m)
    scale = noise_scale(m, eps)
    generator = as_generator(rng)
    mask = bound_mask(users, key_arr, m, 1, generator)
    distinct, n_users = np.unique(key_arr[mask], return_counts=True)
    if how in ("laplace", "gaussian"):
        if how == "laplace":
            noise = discrete_laplace_noise(scale, n_users.shape, generator)
        else:
            noise = np.asarray(sample_discrete_gaussian(sigma, n_users.size, rng=generator))
        noisy = n_users.astype(np.int64) + noise.astype(np.int64)
        kept = noisy >= threshold
        return (distinct[kept], noisy[kept]) if return_counts else distinct[kept]
    if distinct.size == 0:
        return distinct
    table = _dyadic_keep_probabilities(eps, dlt, m, int(n_users.max()))
    numerators = table[n_users]
    # Bernoulli(k / 2**62), exactly: a uniform integer in [0, 2**62) below k
    draws = generator.integers(0, 1 << _BITS, size=n_users.size, dtype=np.int64)
    return distinct[draws < numerators]
