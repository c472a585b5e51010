"""Private synthetic data for linear queries: MWEM (multiplicative weights, exponential mechanism).

The data is a histogram ``D`` over a finite domain of ``d`` elements (``D[x]`` people have value
``x``; ``n = sum D``). A workload of ``m`` linear counting queries is a matrix ``Q`` with entries
in ``[0, 1]``: query ``q`` answers ``q . D``. MWEM (Hardt, Ligett & McSherry 2012) releases a
*synthetic histogram* ``A`` whose answers ``q . A`` approximate every ``q . D`` at once: the
small-database idea of Blum, Ligett & Roth (2008) made practical. Each round spends half of its
budget choosing, with the exponential mechanism, the query the current ``A`` answers worst, and
half measuring it with the Laplace mechanism; a multiplicative-weights step then moves ``A``
towards the measurement.

- :func:`mwem` runs ``T`` rounds and returns the average of the ``T`` synthetic histograms.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import softmax

from dplib._validation import as_generator, check_bool, check_data, check_epsilon, check_integer
from dplib.mechanisms.exponential import exponential_mechanism
from dplib.mechanisms.laplace import laplace_mechanism

__all__ = ["mwem"]

#: Largest number of rounds per call.
_MAX_ITERATIONS = 100_000
#: Largest total work (rounds x queries x domain elements) per call.
_MAX_WORK = 10**11
#: Largest number of entries of the query matrix.
_MAX_ENTRIES = 50_000_000
#: Largest total count n: counts of people, exact in float64.
_MAX_TOTAL = 2.0**53
#: Passes over the measurement history per round when ``replay`` is on.
_REPLAY_PASSES = 10


def _check_histogram(histogram: Any) -> tuple[np.ndarray, float]:
    hist = check_data(histogram, "histogram", ndim=1)
    if np.any(hist < 0):
        raise ValueError(
            f"histogram must contain counts >= 0, got {float(hist[hist < 0][0]):g}"
        )
    with np.errstate(over="ignore"):
        total = float(np.sum(hist))
    if not (math.isfinite(total) and 0 < total <= _MAX_TOTAL):
        raise ValueError(
            f"histogram must have a total count n in (0, 2**53], got {total!r}"
        )
    return hist, total


def _check_queries(queries: Any, d: int) -> np.ndarray:
    q = check_data(queries, "queries")
    if q.ndim != 2:
        raise ValueError(
            "queries must be a 2-d array (one row per query, one column per domain element), "
            f"got shape {q.shape}"
        )
    if q.shape[1] != d:
        raise ValueError(
            f"queries must have one column per domain element of histogram ({d} columns), got shape {q.shape}"
        )
    if q.size > _MAX_ENTRIES:
        raise ValueError(f"queries must have at most {_MAX_ENTRIES} entries, got shape {q.shape}")
    outside = (q < 0) | (q > 1)
    if np.any(outside):
        raise ValueError(
            f"queries must have entries in [0, 1] (linear counting queries), got {float(q[outside][0]):g}"
        )
    return q


def mwem(
    histogram: Any,
    queries: Any,
    epsilon: float,
    iterations: int,
    *,
    rng: Any = None,
    average: bool = True,
    replay: bool = False,
) -> np.ndarray:
    """Release a differentially private synthetic histogram for a workload of linear queries.

    Parameters
    ----------
    histogram : array_like, 1-d
        The data ``D``: a count ``>= 0`` per domain element, finite, with total
        ``n = sum(D)`` in ``(0, 2**53]``.
    queries : array_like, 2-d
        The workload ``Q``, shape ``(m, d)`` with ``d = len(histogram)``: one linear counting
        query per row, entries in ``[0, 1]`` (0/1 for predicate counts such as range queries).
    epsilon : float
        Total privacy budget, finite and > 0; each round spends ``epsilon / T``.
    iterations : int
        ``T``, the number of rounds, in ``[1, 100000]`` (and ``T * m * d <= 1e11``).
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness, normalised by :func:`dplib._validation.as_generator`.
    average : bool, keyword-only
        ``True`` (the paper's output): the average ``(A_1 + ... + A_T) / T``; ``False``: the
        last ``A_T``.
    replay : bool, keyword-only
        ``False`` (Algorithm 1): one multiplicative-weights step per round, for that round's
        measurement. ``True``: the paper's practical improvement, after each new measurement
        re-apply the update for every measurement taken so far (10 passes over the history,
        in the order taken). Post-processing only: the privacy cost is the same.

    Returns
    -------
    numpy.ndarray
        The synthetic histogram, shape ``(d,)``, float, every entry ``>= 0``, summing to ``n``.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``histogram`` has a negative count, a total outside ``(0, 2**53]``, NaN or infinity;
        ``queries`` is not 2-d with ``d`` columns and entries in ``[0, 1]``; ``epsilon`` is not a
        finite number > 0 (or ``epsilon / (2T)`` underflows); or ``iterations`` is out of range.
        Everything is checked before any randomness is drawn.

    Notes
    -----
    Hardt, Ligett & McSherry (2012), Algorithm 1. Start from the uniform histogram
    ``A_0 = n / d``. For ``i = 1..T``:

    1. Exponential mechanism (McSherry & Talwar 2007) with budget ``epsilon / (2T)`` and score
       ``s(q) = |q . A_{i-1} - q . D|``: adding or removing one person changes ``q . D`` by a
       single entry of ``q``, at most 1, so the score has sensitivity 1 (not monotonic: the
       factor is ``exp(epsilon s / (4T))``).
    2. Laplace mechanism: ``m_i = q_i . D + Lap(2T / epsilon)`` (sensitivity 1).
    3. Multiplicative weights:
       ``A_i(x) ∝ A_{i-1}(x) exp(q_i(x) (m_i - q_i . A_{i-1}) / (2n))``, rescaled to total ``n``.

    By basic composition the ``2T`` steps cost ``T (epsilon/(2T) + epsilon/(2T)) = epsilon``;
    the multiplicative-weights step touches only the released ``q_i`` and ``m_i``. The paper's
    Theorem 2.2 bounds the error of the average output, with probability ``1 - 2T/|Q|^c``, by
    ``max_q |q . A - q . D| <= 2 n sqrt(log|X| / T) + 10 T log|Q| / epsilon``.

    **n is treated as public**, as in the paper: it scales ``A_0`` and the update, and is
    computed here from ``histogram`` without noise. When the size of the dataset is itself
    secret, release it first (e.g. with :func:`dplib.private_count`, spending part of the
    budget) and pass a histogram rescaled to that count, or account for it separately.

    Computed in log space: ``A_i = n softmax(log A_0 + sum_k q_k (m_k - q_k . A_{k-1}) / (2n))``,
    so that no weight overflows or underflows to 0 over many rounds.

    References
    ----------
    M. Hardt, K. Ligett and F. McSherry, "A simple and practical algorithm for differentially
    private data release", NeurIPS 2012, Algorithm 1 and Theorem 2.2 (arXiv:1012.4763).

    A. Blum, K. Ligett and A. Roth, "A learning theory approach to non-interactive database
    privacy", STOC 2008.

    F. McSherry and K. Talwar, "Mechanism Design via Differential Privacy", FOCS 2007.

    Examples
    --------
    >>> D = np.array([10.0, 0.0, 0.0, 30.0])
    >>> Q = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 0]])
    >>> A = mwem(D, Q, epsilon=50.0, iterations=5, rng=0)
    >>> A.shape, bool(np.isclose(A.sum(), 40.0))
    ((4,), True)
    """
    hist, n = _check_histogram(histogram)
    q = _check_queries(queries, hist.size)
    eps = check_epsilon(epsilon)
    t = check_integer(iterations, "iterations", minimum=1)
    if t > _MAX_ITERATIONS:
        raise ValueError(f"iterations must be an integer in [1, {_MAX_ITERATIONS}], got {iterations!r}")
    if t * q.size > _MAX_WORK:
        raise ValueError(
            f"iterations * queries.size must be at most {_MAX_WORK:.0e}, got "
            f"iterations={t} and queries of shape {q.shape}"
        )
    step_epsilon = eps / (2.0 * t)
    if not (step_epsilon > 0 and math.isfinite(2.0 / step_epsilon)):
        raise ValueError(
            "epsilon / (2 * iterations) must be a positive float whose inverse is finite, got "
            f"epsilon={epsilon!r} and iterations={iterations!r}"
        )
    average = check_bool(average, "average")
    replay = check_bool(replay, "replay")
    generator = as_generator(rng)

    true_answers = q @ hist
    d = hist.size
    log_weights = np.full(d, -math.log(d))  # A_0 = n / d, uniform
    synthetic = np.full(d, n / d)
    total = np.zeros(d)
    chosen: list[int] = []
    measured: list[float] = []
    for _ in range(t):
        # Step 1, exponential mechanism with eps/(2T), score |q . A - q . D|, sensitivity 1
        # (Hardt, Ligett & McSherry 2012, Algorithm 1).
        scores = np.abs(q @ synthetic - true_answers)
        i = exponential_mechanism(scores, 1.0, step_epsilon, rng=generator)
        # Step 2, Laplace measurement with eps/(2T), sensitivity 1.
        measurement = laplace_mechanism(float(true_answers[i]), 1.0, step_epsilon, rng=generator)
        chosen.append(i)
        measured.append(measurement)
        # Step 3, multiplicative weights: A(x) *= exp(q(x) (m - q . A) / (2n)).
        passes = _REPLAY_PASSES if replay else 1
        history = range(len(chosen)) if replay else (len(chosen) - 1,)
        for _pass in range(passes):
            for k in history:
                row = q[chosen[k]]
                log_weights = log_weights + row * (measured[k] - row @ synthetic) / (2.0 * n)
                log_weights -= log_weights.max()
                synthetic = n * softmax(log_weights)
        total += synthetic
    out = total / t if average else synthetic
    # Rescale exactly to n and clip rounding noise (the weights are positive by construction).
    out = np.maximum(out, 0.0)
    return out * (n / out.sum())
