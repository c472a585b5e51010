"""Composition theorems for (ε, δ)-differential privacy.

How much privacy is lost when several DP mechanisms run on the same data:

- :func:`sequential_composition` — basic composition, the ε's and δ's add up
  (Dwork, McSherry, Nissim, Smith 2006; Dwork & Roth 2014, Theorem 3.16);
- :func:`parallel_composition` — on disjoint parts of the data the worst one counts
  (McSherry 2009, Theorem 4);
- :func:`advanced_composition` — k-fold (ε, δ) composition costs about sqrt(k) ε
  (Dwork, Rothblum, Vadhan 2010; Dwork & Roth 2014, Theorem 3.20);
- :func:`optimal_composition` — the exact smallest ε for k-fold homogeneous composition
  (Kairouz, Oh, Viswanath 2015, Theorem 3.3).

For DP-SGD, where each step is a subsampled Gaussian, Rényi DP (:mod:`dplib.accounting.rdp`)
and privacy-loss distributions (:mod:`dplib.accounting.pld`) are much tighter than any of these.

References
----------
.. [DR14] C. Dwork, A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014.
.. [DRV10] C. Dwork, G. N. Rothblum, S. Vadhan, "Boosting and Differential Privacy", FOCS 2010.
.. [McS09] F. McSherry, "Privacy Integrated Queries", SIGMOD 2009.
.. [KOV15] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential
   Privacy", ICML 2015 (IEEE Trans. Inf. Theory 2017), arXiv:1311.0776.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from dplib._validation import check_data, check_delta, check_epsilon, check_integer

__all__ = [
    "sequential_composition",
    "parallel_composition",
    "advanced_composition",
    "optimal_composition",
]


def _check_budgets(epsilons: Any, deltas: Any) -> tuple[np.ndarray, np.ndarray]:
    """Return 1-d arrays of ε ≥ 0 and δ in [0, 1], of equal non-zero length."""
    eps = np.atleast_1d(check_data(epsilons, "epsilons"))
    if eps.ndim != 1:
        raise ValueError(f"epsilons must be a 1-d sequence of numbers, got shape {eps.shape}")
    if np.any(eps < 0):
        raise ValueError(f"epsilons must all be finite numbers >= 0, got {eps[eps < 0][0]!r}")
    if deltas is None:
        return eps, np.zeros_like(eps)
    dlt = np.atleast_1d(check_data(deltas, "deltas"))
    if dlt.shape != eps.shape:
        raise ValueError(
            f"deltas must have one entry per epsilon, got {dlt.size} deltas for {eps.size} epsilons"
        )
    if np.any((dlt < 0) | (dlt > 1)):
        raise ValueError(f"deltas must all be in [0, 1], got {dlt[(dlt < 0) | (dlt > 1)][0]!r}")
    return eps, dlt


def sequential_composition(epsilons: Any, deltas: Any = None) -> tuple[float, float]:
    """Basic composition: running mechanisms (ε_i, δ_i) on the same data is (Σ ε_i, Σ δ_i)-DP.

    Parameters
    ----------
    epsilons : array_like
        The ε_i of the mechanisms, each finite and ≥ 0, at least one.
    deltas : array_like, optional
        Their δ_i, each in [0, 1], one per ε; all zero (pure DP) when omitted.

    Returns
    -------
    (epsilon, delta) : tuple of float
        (Σ ε_i, min(1, Σ δ_i)).

    Raises
    ------
    ValueError
        If a value is out of range or the lengths differ.

    Notes
    -----
    [DR14] Theorem 3.16 (also holds for adaptively chosen mechanisms).

    Examples
    --------
    >>> sequential_composition([0.5, 0.25, 0.25], [1e-6, 0, 1e-6])
    (1.0, 2e-06)
    """
    eps, dlt = _check_budgets(epsilons, deltas)
    try:
        total = math.fsum(eps)  # [DR14] Theorem 3.16
    except OverflowError:  # fsum refuses an intermediate sum above the largest float
        total = math.inf
    if not math.isfinite(total):
        raise ValueError("epsilons must have a finite sum (< 1.8e308), got a sum that overflows")
    return total, float(min(1.0, math.fsum(dlt)))


def parallel_composition(epsilons: Any, deltas: Any = None) -> tuple[float, float]:
    """Parallel composition: mechanisms on *disjoint* subsets of the data cost only the worst.

    Parameters
    ----------
    epsilons : array_like
        The ε_i of mechanisms each applied to its own disjoint part of the data (≥ 0).
    deltas : array_like, optional
        Their δ_i in [0, 1]; all zero when omitted.

    Returns
    -------
    (epsilon, delta) : tuple of float
        (max ε_i, max δ_i).

    Raises
    ------
    ValueError
        If a value is out of range or the lengths differ.

    Notes
    -----
    [McS09] Theorem 4: one record changes the input of one mechanism only, so the guarantee
    is the largest of the individual ones (under add/remove-one neighbouring).

    Examples
    --------
    >>> parallel_composition([0.5, 1.0, 0.25])
    (1.0, 0.0)
    """
    eps, dlt = _check_budgets(epsilons, deltas)
    return float(eps.max()), float(dlt.max())  # [McS09] Theorem 4


#: Largest k of :func:`optimal_composition` (k + 1 terms, about a second).
_MAX_OPTIMAL_K = 1_000_000
#: Largest k·ε of :func:`optimal_composition`, whose answer can reach k·ε.
_MAX_TOTAL_EPSILON = 1e300
#: Largest ε of :func:`advanced_composition`: e^ε overflows above about 709.
_MAX_ADVANCED_EPSILON = 700.0


def _check_homogeneous(epsilon: Any, delta: Any, k: Any, delta_prime: Any) -> tuple[float, float, int, float]:
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    k = check_integer(k, "k", minimum=1)
    delta_prime = check_delta(delta_prime, "delta_prime", allow_zero=False)
    return epsilon, delta, k, delta_prime


def advanced_composition(epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    """Advanced composition of k (adaptively chosen) (ε, δ)-DP mechanisms.

    Parameters
    ----------
    epsilon : float
        ε of each mechanism (finite, > 0).
    delta : float
        δ of each mechanism, in [0, 1).
    k : int
        Number of mechanisms (≥ 1).
    delta_prime : float
        The extra failure probability δ' in (0, 1) traded for the sqrt(k) behaviour.

    Returns
    -------
    (epsilon_total, delta_total) : tuple of float
        ε' = sqrt(2k ln(1/δ')) ε + k ε (e^ε − 1) and δ_total = min(1, k δ + δ').

    Raises
    ------
    ValueError
        If an argument is out of range, ``epsilon`` > 700 or the bound overflows.
    TypeError
        If ``k`` is not an integer.

    Notes
    -----
    [DRV10] Theorem III.3; [DR14] Theorem 3.20. It beats basic composition (kε) only for
    large k and small ε; :func:`optimal_composition` is never worse than either.

    Examples
    --------
    >>> eps, dlt = advanced_composition(0.1, 0.0, 100, 1e-5)
    >>> round(eps, 4), dlt
    (5.8502, 1e-05)
    """
    epsilon, delta, k, delta_prime = _check_homogeneous(epsilon, delta, k, delta_prime)
    if epsilon > _MAX_ADVANCED_EPSILON:
        raise ValueError(
            f"epsilon must be <= {_MAX_ADVANCED_EPSILON:g} for advanced composition (its term "
            f"k*epsilon*(e^epsilon - 1) overflows; basic composition k*epsilon is smaller "
            f"anyway), got {epsilon!r}"
        )
    # [DR14] Theorem 3.20: ε' = sqrt(2k ln(1/δ')) ε + k ε (e^ε − 1), in log space for huge k
    log_second = math.log(k) + math.log(epsilon) + math.log(math.expm1(epsilon))
    first = math.sqrt(2 * -math.log(delta_prime)) * math.exp(0.5 * math.log(k) + math.log(epsilon))
    if log_second > 709 or not math.isfinite(first + math.exp(log_second)):
        raise ValueError(
            f"the advanced-composition bound overflows for epsilon={epsilon!r} and k={k}: "
            "k*epsilon*(e^epsilon - 1) must stay below 1e308"
        )
    eps_total = first + math.exp(log_second)
    delta_total = min(1.0, k * delta + delta_prime)
    return eps_total, delta_total


def _log_delta_at(eps_total: float, log_p: np.ndarray, loss: np.ndarray) -> float:
    """log of δ(ε') = Σ_ℓ P(ℓ) (1 − e^{ε' − loss_ℓ})₊ for the k-fold randomized-response pair."""
    above = loss > eps_total
    if not above.any():
        return -math.inf
    return float(special.logsumexp(log_p[above] + np.log(-np.expm1(eps_total - loss[above]))))


def optimal_composition(epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    """Exact (optimal) k-fold composition of (ε, δ)-DP mechanisms.

    Parameters
    ----------
    epsilon : float
        ε of each mechanism (finite, > 0).
    delta : float
        δ of each mechanism, in [0, 1).
    k : int
        Number of mechanisms (≥ 1); k up to 10⁵ takes milliseconds.
    delta_prime : float
        The part δ' in (0, 1) of the total δ not due to the mechanisms' own δ's.

    Returns
    -------
    (epsilon_total, delta_total) : tuple of float
        The smallest ε' such that every k-fold adaptive composition is
        (ε', 1 − (1 − δ)^k (1 − δ'))-DP, and that δ_total (≤ kδ + δ').

    Raises
    ------
    ValueError
        If an argument is out of range, ``k`` > 10⁶ or ``k * epsilon`` > 1e300.
    TypeError
        If ``k`` is not an integer.

    Notes
    -----
    [KOV15] Theorem 3.3: the k-fold composition is ((k − 2i)ε, 1 − (1 − δ)^k (1 − δ_i))-DP for
    i = 0, ..., ⌊k/2⌋, with

        δ_i = Σ_{ℓ=0}^{i−1} C(k, ℓ) (e^{(k−ℓ)ε} − e^{(k−2i+ℓ)ε}) / (1 + e^ε)^k,

    and nothing better holds. δ_i is the hockey-stick divergence at ε' = (k − 2i)ε of k-fold
    randomized response, whose privacy loss is (k − 2ℓ)ε with probability
    P(ℓ) = C(k, ℓ) e^{(k−ℓ)ε} / (1 + e^ε)^k; between the grid points its exact curve is
    δ(ε') = Σ_ℓ P(ℓ) (1 − e^{ε' − (k−2ℓ)ε})₊, which is what is solved here for δ(ε') = δ':
    bisection over i finds the grid interval, then ε' = log((A − δ')/B) with
    A = Σ_{ℓ<i} P(ℓ), B = Σ_{ℓ<i} P(ℓ) e^{−(k−2ℓ)ε}. All sums are taken in log space
    (``gammaln``, ``logsumexp``), so k = 10⁴ does not overflow. The result never exceeds kε
    (i = 0) nor the advanced-composition bound.

    Examples
    --------
    >>> eps, dlt = optimal_composition(0.1, 0.0, 100, 1e-5)
    >>> round(eps, 4)
    4.3068
    """
    epsilon, delta, k, delta_prime = _check_homogeneous(epsilon, delta, k, delta_prime)
    if k > _MAX_OPTIMAL_K:
        raise ValueError(
            f"k must be <= {_MAX_OPTIMAL_K} for optimal_composition (the exact formula sums "
            f"k + 1 terms; use advanced_composition for more), got {k}"
        )
    if k * epsilon > _MAX_TOTAL_EPSILON:
        raise ValueError(
            f"k * epsilon must be <= {_MAX_TOTAL_EPSILON:g} (the composed epsilon can reach "
            f"k * epsilon), got epsilon={epsilon!r}, k={k}"
        )
    delta_total = -math.expm1(k * math.log1p(-delta) + math.log1p(-delta_prime))
    ell = np.arange(k + 1, dtype=float)
    log_binom = special.gammaln(k + 1) - special.gammaln(ell + 1) - special.gammaln(k - ell + 1)
    log_norm = k * np.logaddexp(0.0, epsilon)  # log (1 + e^ε)^k
    log_p = log_binom + (k - ell) * epsilon - log_norm  # P(ℓ) of [KOV15] Theorem 3.3
    loss = (k - 2 * ell) * epsilon  # privacy loss of outcome ℓ
    log_target = math.log(delta_prime)

    if _log_delta_at(0.0, log_p, loss) <= log_target:
        return 0.0, delta_total
    # Grid points ε'_i = (k − 2i)ε decrease in i and δ(ε'_i) increases; find the largest i with
    # ε'_i ≥ 0 and δ(ε'_i) ≤ δ' (i = 0 always qualifies: δ(kε) = 0).
    lo, hi = 0, k // 2
    if (k - 2 * hi) * epsilon >= 0 and _log_delta_at((k - 2 * hi) * epsilon, log_p, loss) <= log_target:
        lo = hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _log_delta_at((k - 2 * mid) * epsilon, log_p, loss) <= log_target:
            lo = mid
        else:
            hi = mid
    # On (ε'_{lo+1}, ε'_lo] only the outcomes ℓ ≤ lo have loss above ε'.
    upper = max((k - 2 * (lo + 1)) * epsilon, 0.0)
    idx = loss > upper
    log_a = float(special.logsumexp(log_p[idx]))
    log_b = float(special.logsumexp(log_p[idx] - loss[idx]))
    eps_total = log_a + math.log1p(-math.exp(log_target - log_a)) - log_b  # solves A − e^ε' B = δ'
    eps_total = min(max(eps_total, upper), (k - 2 * lo) * epsilon)
    return eps_total, delta_total
