"""Randomized response: the oldest local differential-privacy mechanism.

Binary randomized response (Warner 1965) reports a private bit truthfully with probability
``p = e^epsilon / (1 + e^epsilon)`` and flips it otherwise, which is epsilon-DP for the person
answering. The fair-coin protocol (answer truthfully on heads; on tails, flip again and answer
"yes" on heads) has ``p = 3/4`` and so ``epsilon = ln 3``.

k-ary randomized response (generalised RR, Kairouz, Oh & Viswanath 2016; Wang et al. 2017
"Locally Differentially Private Protocols for Frequency Estimation", Section 4.1) reports the
true category with probability ``p = e^epsilon / (e^epsilon + k - 1)`` and each other category
with probability ``q = 1 / (e^epsilon + k - 1)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_bool,
    check_data,
    check_epsilon,
    check_integer,
    check_probability,
    check_real,
    check_representable,
)

__all__ = [
    "rr_truth_probability",
    "rr_epsilon",
    "randomized_response",
    "rr_estimate",
    "rr_variance",
    "k_randomized_response",
    "k_rr_estimate",
    "k_rr_variance",
]


def rr_truth_probability(epsilon: float) -> float:
    """Probability ``p = e^eps / (1 + e^eps)`` that binary randomized response tells the truth.

    Computed as ``1 / (1 + e^-eps)``, which cannot overflow for large epsilon. As a double,
    ``p`` rounds to exactly 1.0 for ``epsilon > 36.7`` and keeps only ``53 - 1.44 epsilon`` bits
    of ``1 - p`` before that, so the functions of this module that need ``2p - 1`` or ``1 - p``
    take ``epsilon`` and compute them from it (``2p - 1 = tanh(epsilon / 2)``), not from ``p``.
    """
    epsilon = check_epsilon(epsilon)
    return 1.0 / (1.0 + math.exp(-epsilon))


def rr_epsilon(truth_probability: float) -> float:
    """Privacy loss ``epsilon = ln(p / (1 - p))`` of randomized response that is truthful w.p. ``p``.

    Parameters
    ----------
    truth_probability : float
        In (1/2, 1): the probability of reporting the true bit. ``p = 3/4`` (two fair coins)
        gives ``ln 3``.

    Returns
    -------
    float
        ``logit(p) = ln p - ln(1 - p)``, exact for the double ``p`` up to a few ulps.

    Notes
    -----
    Honest domain: the result is exact for the ``p`` it is given, but a double ``p`` near 1
    carries little information about ``epsilon``: ``1 - p ~ e^-epsilon`` is only known to
    ``2**-53`` absolutely, so ``rr_epsilon(rr_truth_probability(e))`` returns ``e`` only to within
    about ``2**-53 e^e`` (1e-8 at ``e = 18``, 1e-3 at ``e = 36``), and for ``e > 36.7``
    :func:`rr_truth_probability` rounds to 1.0, which this function refuses (it would be
    ``epsilon = inf``). Keep ``epsilon`` itself, not ``p``, when it is large.

    References
    ----------
    Dwork & Roth (2014), *The Algorithmic Foundations of Differential Privacy*, Claim 3.5.
    """
    p = check_real(
        truth_probability, "truth_probability", minimum=0.5, maximum=1.0,
        open_minimum=True, open_maximum=True,
    )
    return math.log(p) - math.log1p(-p)


def _as_bits(bits: Any, name: str = "bits", *, allow_empty: bool = False) -> np.ndarray:
    arr = check_data(bits, name, allow_empty=allow_empty)
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must contain only 0/1 (or False/True) values")
    return arr.astype(np.int8)


#: Largest number of categories of k-ary randomized response (the estimates are a length-k array).
_MAX_K = 2**24


def check_k(k: Any) -> int:
    out = check_integer(k, "k", minimum=2)
    if out > _MAX_K:
        raise ValueError(f"k must be an integer in [2, 2**24 = {_MAX_K}], got {k!r}")
    return out


def randomized_response(bits: Any, epsilon: float, *, rng: Any = None) -> np.ndarray | int:
    """Report each private bit truthfully with probability ``e^eps / (1 + e^eps)``, else flipped.

    Parameters
    ----------
    bits : int or array_like of {0, 1}
        The true answers, one per respondent.
    epsilon : float
        Privacy loss per respondent, finite and > 0.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness.

    Returns
    -------
    int or numpy.ndarray of int8
        The noisy reports, with the shape of ``bits``.

    Notes
    -----
    The likelihood ratio of any report under the two possible true bits is at most
    ``p / (1 - p) = e^eps``, so each report is epsilon-DP (local DP).

    References
    ----------
    Warner (1965), "Randomized response: a survey technique for eliminating evasive answer bias".
    Dwork & Roth (2014), Section 3.2.

    Examples
    --------
    >>> reports = randomized_response([1, 0, 1, 1], epsilon=1.0, rng=0)
    >>> reports.shape
    (4,)
    """
    arr = _as_bits(bits, allow_empty=True)  # no respondent, no report (0 records is data)
    p = rr_truth_probability(epsilon)
    generator = as_generator(rng)
    flip = generator.random(arr.shape) >= p
    out = np.where(flip, 1 - arr, arr).astype(np.int8)
    return int(out) if out.ndim == 0 else out


def rr_estimate(reports: Any, epsilon: float) -> float:
    """Unbiased estimate of the true proportion of ones from randomized-response reports.

    ``pi_hat = (mean(reports) - (1 - p)) / (2p - 1)`` with ``p = e^eps / (1 + e^eps)``, because
    ``E[report] = (1 - p) + pi (2p - 1)``. The estimate is not clipped to [0, 1]: clipping would
    bias it. It is computed as ``1/2 + (mean - 1/2) / tanh(eps / 2)`` (``2p - 1 = tanh(eps/2)``),
    which does not cancel for small epsilon (``2p - 1`` computed from ``p`` is exactly 0 for
    ``eps = 1e-17``).

    Parameters
    ----------
    reports : array_like of {0, 1}
        Non-empty noisy reports.
    epsilon : float
        The epsilon the reports were produced with.

    Returns
    -------
    float
        The unbiased estimate (may fall slightly outside [0, 1]).
    """
    arr = _as_bits(reports, "reports")
    epsilon = check_epsilon(epsilon)
    gap = math.tanh(epsilon / 2.0)  # 2p - 1; 0 only when epsilon / 2 underflows
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        estimate = 0.5 + (np.float64(arr.mean()) - 0.5) / np.float64(gap) if gap > 0 else math.inf
    return float(check_representable(estimate, "the estimate", epsilon))


def rr_variance(
    proportion: float, n: int, epsilon: float, *, include_sampling: bool = True
) -> float:
    """Variance of :func:`rr_estimate` over ``n`` respondents whose true proportion is ``proportion``.

    With ``include_sampling=True`` (default) the respondents are a random sample from a population
    in which a fraction ``pi = proportion`` would answer yes, and the variance is (Warner 1965)

    ``Var = pi (1 - pi) / n + p (1 - p) / (n (2p - 1)^2)``:

    the sampling variance of a truthful survey plus the price of privacy. For the fair-coin
    protocol (``p = 3/4``) the second term is ``3 / (4n)``, so the private survey needs at least
    4x the respondents of a truthful one (equality at ``pi = 1/2``).

    With ``include_sampling=False`` the ``n`` respondents and their answers are fixed, and only
    the coins are random: the first term drops, leaving ``p (1 - p) / (n (2p - 1)^2)``.

    Parameters
    ----------
    proportion : float
        True proportion of ones, in [0, 1].
    n : int
        Number of respondents, >= 1.
    epsilon : float
        Privacy loss per respondent, finite and > 0.
    include_sampling : bool, default True
        Whether the respondents are a random sample of the population (a bool; 1 or "yes"
        are refused).

    Raises
    ------
    ValueError
        If an argument is out of range, or epsilon is so small (below about 1e-154) that the
        variance overflows a float.

    Notes
    -----
    The privacy term is computed as ``e^-eps / (n (1 - e^-eps)^2)`` with ``expm1``, which equals
    ``p (1 - p) / (n (2p - 1)^2)`` and does not cancel for small epsilon.
    """
    pi = check_probability(proportion, "proportion")
    n = check_integer(n, "n", minimum=1)
    epsilon = check_epsilon(epsilon)
    include_sampling = check_bool(include_sampling, "include_sampling")
    # p (1 - p) / (2p - 1)^2 = 1 / (4 sinh^2(eps / 2)) = e^-eps / (1 - e^-eps)^2, computed with
    # expm1 so that small epsilon does not cancel (2p - 1 from p loses 27% at eps = 1e-15).
    gap = -math.expm1(-epsilon)
    with np.errstate(over="ignore"):
        privacy_term = float(np.float64(math.exp(-epsilon)) / n / gap / gap)
    privacy_term = check_representable(privacy_term, "the variance", epsilon)
    return pi * (1.0 - pi) / n + privacy_term if include_sampling else privacy_term


def krr_probabilities(k: int, epsilon: float) -> tuple[float, float]:
    # p = e^eps / (e^eps + k - 1), q = 1 / (e^eps + k - 1), computed without overflow.
    log_denominator = np.logaddexp(epsilon, math.log(k - 1))
    return math.exp(epsilon - log_denominator), math.exp(-log_denominator)


def _krr_gap(p: float, epsilon: float) -> float:
    """``p - q = (e^eps - 1) / (e^eps + k - 1) = p (1 - e^-eps)``, exact for small epsilon."""
    return p * -math.expm1(-epsilon)


def _as_categories(values: Any, k: int, name: str, *, allow_empty: bool = False) -> np.ndarray:
    arr = check_data(values, name, dtype=float, allow_empty=allow_empty)
    if arr.size and (not np.all(arr == np.floor(arr)) or arr.min() < 0 or arr.max() > k - 1):
        raise ValueError(f"{name} must be integers in 0..k-1 = 0..{k - 1}")
    return arr.astype(np.int64)


def k_randomized_response(
    values: Any, k: int, epsilon: float, *, rng: Any = None
) -> np.ndarray | int:
    """k-ary randomized response: keep the true category w.p. ``p``, else report another uniformly.

    ``p = e^eps / (e^eps + k - 1)``; each of the ``k - 1`` other categories has probability
    ``q = 1 / (e^eps + k - 1)``, so the likelihood ratio is ``p / q = e^eps``.

    Parameters
    ----------
    values : int or array_like of int
        True categories in ``0 .. k-1``.
    k : int
        Number of categories, >= 2.
    epsilon : float
        Privacy loss per respondent, finite and > 0.
    rng : None, int or numpy.random.Generator, optional

    Returns
    -------
    int or numpy.ndarray of int64
        Reports in ``0 .. k-1`` with the shape of ``values``.

    References
    ----------
    Kairouz, Oh & Viswanath (2016), "Extremal mechanisms for local differential privacy".
    Wang, Blocki, Li & Jha (2017), USENIX Security, Section 4.1 ("direct encoding").
    """
    k = check_k(k)
    epsilon = check_epsilon(epsilon)
    arr = _as_categories(values, k, "values", allow_empty=True)  # no respondent, no report
    p, _ = krr_probabilities(k, epsilon)
    generator = as_generator(rng)
    keep = generator.random(arr.shape) < p
    # A uniform draw from the k - 1 other categories: draw from 0..k-2 and skip the true value.
    other = generator.integers(0, k - 1, size=arr.shape)
    other = other + (other >= arr)
    out = np.where(keep, arr, other).astype(np.int64)
    return int(out) if out.ndim == 0 else out


def k_rr_estimate(reports: Any, k: int, epsilon: float) -> np.ndarray:
    """Unbiased estimate of the category frequencies from k-ary randomized-response reports.

    ``pi_hat_j = (f_j - q) / (p - q)`` where ``f_j`` is the observed fraction of reports equal to
    ``j``, because ``E[f_j] = q + pi_j (p - q)``. The estimates sum to one but are not clipped.

    Returns
    -------
    numpy.ndarray of shape (k,)

    References
    ----------
    Wang, Blocki, Li & Jha (2017), Section 4.1, Equation (2).
    """
    k = check_k(k)
    epsilon = check_epsilon(epsilon)
    arr = _as_categories(reports, k, "reports").ravel()
    p, q = krr_probabilities(k, epsilon)
    observed = np.bincount(arr, minlength=k) / arr.size
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        estimate = (observed - q) / _krr_gap(p, epsilon)
    return check_representable(estimate, "the estimates", epsilon)


def k_rr_variance(frequencies: Any, n: int, k: int, epsilon: float) -> np.ndarray:
    """Variance of each coordinate of :func:`k_rr_estimate` over ``n`` respondents.

    ``Var_j = f_j (1 - f_j) / (n (p - q)^2)`` with ``f_j = q + pi_j (p - q)`` the probability that
    a report equals ``j`` (Wang et al. 2017, Section 4.1).
    """
    k = check_k(k)
    n = check_integer(n, "n", minimum=1)
    epsilon = check_epsilon(epsilon)
    pi = check_data(frequencies, "frequencies", ndim=1)
    if pi.shape != (k,) or np.any(pi < 0) or not math.isclose(pi.sum(), 1.0, abs_tol=1e-9):
        raise ValueError(f"frequencies must be a probability vector of length k={k}")
    p, q = krr_probabilities(k, epsilon)
    gap = _krr_gap(p, epsilon)  # p - q without cancellation (44% off at eps = 1e-15 otherwise)
    f = q + pi * gap
    with np.errstate(over="ignore", divide="ignore"):
        variance = f * (1.0 - f) / n / gap / gap
    return check_representable(variance, "the variance", epsilon)
