"""The Dinur-Nissim reconstruction attack: too many accurate answers reveal the whole database.

A database holds one secret bit ``x_j`` per person ``j = 1..n``. A curator answers *subset-sum*
queries ``q_S(x) = sum_{j in S} x_j`` with some error. Dinur & Nissim (2003) proved the
*Fundamental Law of Information Recovery* in its first form: if every answer is within ``E`` of
the truth with ``E = o(sqrt(n))``, an attacker who asks ``m = O(n log^2 n)`` random subsets (``n``
suffices in practice) recovers all but ``o(n)`` of the bits, in polynomial time, by linear
programming. Accuracy and privacy cannot both be had for many queries.

- :func:`subset_sum_queries` draws the ``m`` random subsets (a 0/1 matrix, one row per query).
- :func:`noisy_subset_sums` plays the curator: true subset sums plus independent noise,
  uniform on ``[-E, E]`` (bounded, the model of the theorem) or Laplace of scale ``E``.
- :func:`reconstruct` plays the attacker: it fits ``x`` in ``[0, 1]^n`` to the answers, by least
  squares or by the paper's linear program, and rounds at 1/2.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import linprog

from dplib._validation import as_generator, check_data, check_integer, check_real

__all__ = ["subset_sum_queries", "noisy_subset_sums", "reconstruct"]

#: Largest number of entries of the query matrix (m * n): 50 million (400 MB as float64).
_MAX_ENTRIES = 50_000_000

_NOISES = ("uniform", "laplace")
_METHODS = ("lstsq", "lp")


def _check_str(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if value not in allowed:
        raise ValueError(
            f"{name} must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}"
        )
    return value


def _check_subsets(subsets: Any, name: str = "subsets") -> np.ndarray:
    """A 2-d 0/1 matrix of shape (m, n), m, n >= 1."""
    arr = check_data(subsets, name)
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-d 0/1 array (one row per query, one column per record), "
            f"got shape {arr.shape}"
        )
    if not np.all((arr == 0) | (arr == 1)):
        bad = arr[(arr != 0) & (arr != 1)].flat[0]
        raise ValueError(f"{name} must contain only 0 and 1, got {float(bad):g}")
    if arr.size > _MAX_ENTRIES:
        raise ValueError(
            f"{name} must have at most {_MAX_ENTRIES} entries (m * n), got shape {arr.shape}"
        )
    return arr


def subset_sum_queries(n: int, m: int, *, rng: Any = None) -> np.ndarray:
    """Draw ``m`` uniformly random subsets of ``n`` records, as a 0/1 matrix.

    Parameters
    ----------
    n : int
        Number of records (columns), >= 1.
    m : int
        Number of queries (rows), >= 1. ``m * n`` may not exceed 50 million.
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness, normalised by :func:`dplib._validation.as_generator`.

    Returns
    -------
    numpy.ndarray
        Shape ``(m, n)``, dtype float, entries i.i.d. uniform on ``{0, 1}``: row ``i`` is the
        indicator of the subset ``S_i`` (each record included with probability 1/2).

    Raises
    ------
    TypeError
        If ``n`` or ``m`` is not an integer, or ``rng`` is not a valid source of randomness.
    ValueError
        If ``n < 1``, ``m < 1`` or ``m * n`` exceeds the limit. Nothing is drawn then.

    Notes
    -----
    Dinur & Nissim (2003), the polynomial-time attacker: the queries are random subsets; with ``m`` of order ``n log^2 n`` of them (``m = 4n`` is plenty in practice), every
    candidate far from the secret disagrees with many answers by more than ``2E``.

    References
    ----------
    I. Dinur and K. Nissim, "Revealing information while preserving privacy", PODS 2003.

    Examples
    --------
    >>> subset_sum_queries(4, 2, rng=0).shape
    (2, 4)
    """
    n = check_integer(n, "n", minimum=1)
    m = check_integer(m, "m", minimum=1)
    if m * n > _MAX_ENTRIES:
        raise ValueError(
            f"m * n must be at most {_MAX_ENTRIES} (the query matrix's entries), got m={m}, n={n}"
        )
    generator = as_generator(rng)
    return generator.integers(0, 2, size=(m, n)).astype(float)


def noisy_subset_sums(
    secret_bits: Any,
    subsets: Any,
    noise_bound: float,
    *,
    noise: str = "uniform",
    rng: Any = None,
) -> np.ndarray:
    """Answer subset-sum queries on secret bits, each answer perturbed by independent noise.

    Parameters
    ----------
    secret_bits : array_like, 1-d
        The database: one bit (0 or 1) per record, length ``n`` >= 1.
    subsets : array_like, 2-d
        The 0/1 query matrix, shape ``(m, n)`` (e.g. from :func:`subset_sum_queries`).
    noise_bound : float
        ``E``, finite and >= 0. For ``noise="uniform"`` every answer is within ``E`` of the
        truth (the perturbation bound of Dinur & Nissim); for ``noise="laplace"`` it is the
        Laplace scale (unbounded noise with mean absolute value ``E``).
    noise : {"uniform", "laplace"}, keyword-only
        The noise distribution: ``Uniform[-E, E]`` (default) or ``Laplace(0, E)``.
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness, normalised by :func:`dplib._validation.as_generator`.

    Returns
    -------
    numpy.ndarray
        Shape ``(m,)``: ``subsets @ secret_bits + Z`` with ``Z`` i.i.d. noise.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``secret_bits`` is not a non-empty 1-d 0/1 array, ``subsets`` is not a 2-d 0/1 array
        with ``n`` columns, ``noise_bound`` is negative or not finite, or ``noise`` is unknown.
        Nothing is drawn from ``rng`` then.

    Notes
    -----
    Dinur & Nissim (2003), a mechanism "within ``E`` perturbation": every answer
    ``a_S`` satisfies ``|a_S - sum_{j in S} x_j| <= E``. Uniform noise meets that bound with
    the largest variance among bounded noises of that support (``E^2 / 3``); Laplace noise of
    scale ``E`` (variance ``2 E^2``) is what a differentially private curator would add
    (``E = 1 / epsilon`` per query, before composition).

    Theorem (Dinur & Nissim 2003, the polynomial-time reconstruction result): for ``E = o(sqrt(n))`` the linear
    program of :func:`reconstruct` recovers all but ``o(n)`` bits with high probability; for
    ``E`` of order ``sqrt(n)`` or more the attack loses its guarantee.

    References
    ----------
    I. Dinur and K. Nissim, "Revealing information while preserving privacy", PODS 2003.

    Examples
    --------
    >>> noisy_subset_sums([1, 0, 1], [[1, 1, 1], [1, 0, 0]], 0.0, rng=0)
    array([2., 1.])
    """
    bits = check_data(secret_bits, "secret_bits", ndim=1)
    if not np.all((bits == 0) | (bits == 1)):
        bad = bits[(bits != 0) & (bits != 1)][0]
        raise ValueError(f"secret_bits must contain only 0 and 1, got {float(bad):g}")
    queries = _check_subsets(subsets)
    if queries.shape[1] != bits.size:
        raise ValueError(
            f"subsets must have one column per record ({bits.size} columns), "
            f"got shape {queries.shape}"
        )
    bound = check_real(noise_bound, "noise_bound", minimum=0.0)
    if bound > 1e150:
        raise ValueError(f"noise_bound must be a finite number <= 1e150, got {noise_bound!r}")
    noise = _check_str(noise, "noise", _NOISES)
    generator = as_generator(rng)
    truth = queries @ bits
    m = queries.shape[0]
    if noise == "uniform":
        z = generator.uniform(-bound, bound, size=m)
    else:
        z = generator.laplace(0.0, bound, size=m)
    return truth + z


def _lstsq(queries: np.ndarray, answers: np.ndarray) -> np.ndarray:
    estimate, *_ = np.linalg.lstsq(queries, answers, rcond=None)
    return estimate


def _lp(queries: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """min e over (x, e) s.t. -e <= A x - a <= e, 0 <= x <= 1 (HiGHS)."""
    m, n = queries.shape
    ones = np.ones((m, 1))
    a_ub = np.block([[queries, -ones], [-queries, -ones]])
    b_ub = np.concatenate([answers, -answers])
    cost = np.zeros(n + 1)
    cost[-1] = 1.0
    bounds = [(0.0, 1.0)] * n + [(0.0, None)]
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if result.status != 0 or result.x is None:  # pragma: no cover - the LP is always feasible
        raise RuntimeError(f"the reconstruction LP failed: {result.message}")
    return result.x[:n]


def reconstruct(subsets: Any, answers: Any, *, method: str = "lstsq") -> np.ndarray:
    """Guess the secret bits from noisy subset-sum answers.

    Parameters
    ----------
    subsets : array_like, 2-d
        The 0/1 query matrix ``A``, shape ``(m, n)``.
    answers : array_like, 1-d
        The noisy answers ``a``, length ``m``, finite.
    method : {"lstsq", "lp"}, keyword-only
        ``"lstsq"``: ``x = argmin ||A x - a||_2`` (numpy's least squares, unconstrained).
        ``"lp"``: Dinur & Nissim's linear program, ``x = argmin_{x in [0,1]^n} ||A x - a||_inf``,
        solved by HiGHS through :func:`scipy.optimize.linprog`.

    Returns
    -------
    numpy.ndarray
        Shape ``(n,)``, dtype int64: the guess ``1[x_j > 1/2]`` for every record.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``subsets`` is not a 2-d 0/1 array, ``answers`` is not a finite 1-d array with one
        entry per row of ``subsets``, or ``method`` is unknown.

    Notes
    -----
    Dinur & Nissim (2003), the polynomial-time attack: given answers within ``E`` of the truth, solve the LP
    "find ``x`` in ``[0,1]^n`` with ``|sum_{j in S} x_j - a_S| <= E`` for every query ``S``"
    and round each ``x_j`` at 1/2. The secret itself is feasible, and with random subsets every
    feasible ``x`` rounds to a vector that differs from the secret in ``o(n)`` places when
    ``E = o(sqrt(n))``. Minimising the largest deviation ``e`` instead of fixing
    ``E`` gives an optimum with ``e <= E`` (the secret achieves ``E``), hence a point of the
    paper's feasible set, without knowing ``E``.

    Least squares is the faster decoder used in later expositions (e.g. Dwork & Roth 2014,
    Section 8.1; Dwork, Smith, Steinke & Ullman 2017): with independent noise of variance
    ``sigma^2`` and ``m`` random subsets each coordinate of the estimate has standard error about
    ``2 sigma / sqrt(m)``, so rounding recovers nearly every bit while that is well below 1/2.
    For bounded uniform noise the min-max LP is the maximum-likelihood fit and is the more
    accurate of the two; under heavy-tailed (Laplace) noise the min-max fit chases the largest
    errors and least squares is the better decoder.

    References
    ----------
    I. Dinur and K. Nissim, "Revealing information while preserving privacy", PODS 2003.

    C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014, Section 8.1.

    C. Dwork, A. Smith, T. Steinke and J. Ullman, "Exposed! A Survey of Attacks on Private Data",
    Annual Review of Statistics and Its Application 4, 2017.

    Examples
    --------
    >>> A = subset_sum_queries(8, 32, rng=1)
    >>> secret = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    >>> a = noisy_subset_sums(secret, A, 0.1, rng=2)
    >>> reconstruct(A, a).tolist() == secret.tolist()
    True
    """
    queries = _check_subsets(subsets)
    values = check_data(answers, "answers", ndim=1)
    if values.size != queries.shape[0]:
        raise ValueError(
            f"answers must have one entry per row of subsets ({queries.shape[0]}), "
            f"got {values.size}"
        )
    if np.max(np.abs(values)) > 1e150:
        raise ValueError("answers must be finite numbers of magnitude <= 1e150")
    method = _check_str(method, "method", _METHODS)
    estimate = _lstsq(queries, values) if method == "lstsq" else _lp(queries, values)
    return (estimate > 0.5).astype(np.int64)
