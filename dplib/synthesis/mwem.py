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

Safe on IEEE doubles: the noisy total and every measurement are integers (in units of a fixed
power-of-two grid) plus discrete Laplace noise, so no output rules a neighbouring histogram out
(the floating-point attack of Mironov 2012 on textbook Laplace does not apply).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import softmax

from dplib._validation import (
    as_generator,
    check_bool,
    check_data,
    check_epsilon,
    check_integer,
    check_probability,
)
from dplib.mechanisms.discrete_laplace import discrete_laplace_mechanism
from dplib.mechanisms.exponential import exponential_mechanism
from dplib.queries.aggregates import grid_exponent
from dplib.queries.sensitivity import check_neighbouring

__all__ = ["mwem"]

#: Largest number of rounds per call.
_MAX_ITERATIONS = 100_000
#: Largest total arithmetic work per call: rounds x queries x domain elements (the scores) plus
#: multiplicative-weights updates x domain elements. About 1e9 floating-point operations a second
#: on one core: a couple of seconds at the cap.
_MAX_WORK = 2 * 10**9
#: Largest number of multiplicative-weights updates per call (T without replay, 10 T (T + 1) / 2
#: with it); each is a few numpy calls (~20 microseconds), so a few seconds at the cap.
_MAX_UPDATES = 200_000
#: Measurements are clamped to +-2**52 grid units (a 1-Lipschitz map) before their noise; the
#: grid is coarse enough that every answer up to the (public) bound on the total fits inside.
_MAX_UNITS = 2**52
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
    if not (math.isfinite(total) and 0 <= total <= _MAX_TOTAL):
        raise ValueError(
            f"histogram must have a total count n in [0, 2**53], got {total!r}"
        )
    return hist, total


def _noisy_total(total: float, epsilon: float, generator: np.random.Generator) -> float:
    """``max(n + Z, 1)`` with ``Z`` discrete Laplace of scale ``1 / epsilon`` (n has sensitivity 1)."""
    return float(max(discrete_laplace_mechanism(int(total), 1, epsilon, rng=generator), 1))


def _grid_step(epsilon: float, bound: float) -> float:
    """The grid step ``g = 2**e`` of :func:`_measure`, from public quantities only.

    ``e = max(e_eps, ceil(log2 bound) - 52)``: ``e_eps`` (:func:`dplib.queries.aggregates.
    grid_exponent`) makes ``g <= 2**-20 min(1, 1/epsilon)``, so the noise is at most
    ``1 + 2**-20`` times the textbook one; the second term makes every answer up to ``bound``
    (at most ``2**53``) at most ``2**52`` grid units, so the clamp of :func:`_measure` never
    bites below ``bound``. A grid coarser than ``2**-20`` times the noise scale only happens for
    totals above ``2**32`` at ``epsilon / (2T) = 1`` (and above ``2**52`` times the noise scale
    in general), where ``g`` is still below ``2**-20`` times the answer.
    """
    return math.ldexp(1.0, max(grid_exponent(1.0, epsilon), math.ceil(math.log2(max(bound, 1.0))) - 52))


def _measure(answer: float, epsilon: float, generator: np.random.Generator, step: float) -> float:
    """Epsilon-DP release of a query answer of sensitivity 1, on the grid ``g Z`` (g = ``step``).

    ``k = floor(answer / g)`` clamped to ``+-2**52``: answers 1 apart (plus float rounding far
    below g) give ``k`` at most ``1/g + 1`` apart, so discrete Laplace noise of scale
    ``(round(1/g) + 1) / epsilon`` on ``k`` is epsilon-DP (the noise scale is ``1 + g`` times
    the textbook ``1 / epsilon`` for ``g <= 1``), and ``g (k + Z)`` is post-processing. ``g`` is
    :func:`_grid_step` of public quantities, chosen so that the clamp never bites.
    """
    units = int(round(1.0 / step)) + 1
    k = min(max(math.floor(answer / step), -_MAX_UNITS), _MAX_UNITS)
    return float(discrete_laplace_mechanism(k, units, epsilon, rng=generator)) * step


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
    neighbouring: str = "add_remove",
    count_fraction: float = 0.1,
) -> np.ndarray:
    """Release a differentially private synthetic histogram for a workload of linear queries.

    Parameters
    ----------
    histogram : array_like, 1-d
        The data ``D``: a count ``>= 0`` per domain element, finite, with total
        ``n = sum(D)`` in ``[0, 2**53]``. An empty dataset (all counts 0) is data: under
        add/remove it gets a noisy total and rounds like any other; under ``"replace"`` its
        total 0 is public and the answer is the zero histogram (no budget spent).
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
    neighbouring : {"add_remove", "replace"}, keyword-only
        The neighbouring relation of the guarantee. ``"add_remove"`` (default): the total ``n``
        is private too, so a share ``count_fraction`` of ``epsilon`` releases a noisy total
        ``n_hat = max(n + Z, 1)`` (``Z`` discrete Laplace, sensitivity 1), which replaces ``n``
        everywhere below; the counts must then be integers (counts of people). ``"replace"``:
        replace-one neighbours have the same ``n``, which is public: it is used as it is and the
        whole budget goes to the rounds.
    count_fraction : float, keyword-only, default 0.1
        Share of ``epsilon`` spent on the noisy total under ``"add_remove"``, in (0, 1);
        ignored under ``"replace"``.

    Returns
    -------
    numpy.ndarray
        The synthetic histogram, shape ``(d,)``, float, every entry ``>= 0``, summing to the
        noisy total ``n_hat`` (``"add_remove"``) or to ``n`` (``"replace"``), up to rounding.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``histogram`` has a negative count, a total above ``2**53``, NaN or infinity
        (or, under ``"add_remove"``, a non-integer count); ``queries`` is not 2-d with ``d``
        columns and entries in ``[0, 1]``; ``epsilon`` is not a finite number > 0 (or the budget
        per step underflows); ``iterations`` is out of range or the work
        ``T m d + updates d`` exceeds 2e9 (``updates`` = ``T``, or ``10 T (T + 1) / 2`` with
        ``replay``, at most 200000). Everything is checked before any randomness is drawn.

    Notes
    -----
    Hardt, Ligett & McSherry (2012), Algorithm 1, with the rounds' budget
    ``epsilon_r = epsilon`` (``"replace"``) or ``(1 - count_fraction) epsilon`` (``"add_remove"``,
    the rest pays for ``n_hat``). Start from the uniform histogram ``A_0 = n / d``. For
    ``i = 1..T``:

    1. Exponential mechanism (McSherry & Talwar 2007) with budget ``epsilon_r / (2T)`` and score
       ``s(q) = |q . A_{i-1} - q . D|``: adding or removing (or replacing) one person changes
       ``q . D`` by at most 1, so the score has sensitivity 1 (not monotonic: the factor is
       ``exp(epsilon_r s / (4T))``).
    2. Measurement ``m_i = q_i . D + noise`` with budget ``epsilon_r / (2T)`` and sensitivity 1:
       on the grid ``g Z`` with discrete Laplace noise (:func:`_measure`), whose scale is
       ``1 + g`` times the textbook ``2T / epsilon_r`` (``g <= 2**-20`` unless the total is
       beyond ``2**32``), so the same accuracy. The grid step depends on public quantities
       only: epsilon, and a bound ``B`` on every answer: ``n`` under ``"replace"``,
       ``2 n_hat + 64 / (count_fraction epsilon)`` under add/remove (``n`` exceeds it with
       probability below ``e**-64``). Every answer up to ``B`` is measured on the grid without
       clamping, so answers are measured correctly up to the largest total accepted, ``2**53``.
    3. Multiplicative weights:
       ``A_i(x) ∝ A_{i-1}(x) exp(q_i(x) (m_i - q_i . A_{i-1}) / (2n))``, rescaled to total ``n``.

    By basic composition the ``2T`` steps cost ``epsilon_r``, and the noisy total
    ``count_fraction * epsilon`` (add/remove); the multiplicative-weights step touches only
    ``n`` (public under replace-one, ``n_hat`` otherwise), the released ``q_i`` and ``m_i``.
    The paper's Theorem 2.2 bounds the error of the average output, with probability
    ``1 - 2T/|Q|^c``, by ``max_q |q . A - q . D| <= 2 n sqrt(log|X| / T) + 10 T log|Q| / epsilon``.

    **The total n.** The paper treats ``n`` as public, which holds for replace-one neighbours
    only: under add/remove, a synthetic table that sums to the exact ``n`` tells ``D`` from
    ``D`` plus one person with certainty. Hence the default's noisy total.

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
    average = check_bool(average, "average")
    replay = check_bool(replay, "replay")
    relation = check_neighbouring(neighbouring)
    fraction = check_probability(count_fraction, "count_fraction", low_open=True, high_open=True)
    updates = _REPLAY_PASSES * t * (t + 1) // 2 if replay else t
    if updates > _MAX_UPDATES or t * q.size + updates * hist.size > _MAX_WORK:
        raise ValueError(
            f"iterations (with replay={replay}) and the size of queries allow too much work: "
            f"need iterations * queries.size + updates * d <= {_MAX_WORK:.0e} and updates <= "
            f"{_MAX_UPDATES} (updates = iterations, or 10 iterations (iterations + 1) / 2 with "
            f"replay), got iterations={t} and queries of shape {q.shape}"
        )
    if relation == "add_remove":
        if np.any(hist != np.round(hist)):
            raise ValueError(
                "histogram must hold integer counts of people under neighbouring='add_remove' "
                f"(its noisy total is an integer mechanism), got {float(hist[hist != np.round(hist)][0])!r}"
            )
        count_epsilon, rounds_epsilon = fraction * eps, (1.0 - fraction) * eps
    else:
        count_epsilon, rounds_epsilon = 0.0, eps
    step_epsilon = rounds_epsilon / (2.0 * t)
    if not (step_epsilon > 0 and 1.0 / step_epsilon <= 2.0**38) or (
        relation == "add_remove" and not 1.0 / count_epsilon <= 2.0**40
    ):
        raise ValueError(
            "epsilon is too small: the noise scales 2 * iterations / epsilon (per step) and "
            "1 / (count_fraction * epsilon) must stay below 2**38 and 2**40, got "
            f"epsilon={epsilon!r}, iterations={iterations!r}, count_fraction={count_fraction!r}"
        )
    generator = as_generator(rng)

    d = hist.size
    if relation == "add_remove":
        n = _noisy_total(n, count_epsilon, generator)
        bound = min(2.0 * n + 64.0 / count_epsilon, _MAX_TOTAL)
    elif n == 0:  # replace-one: n = 0 is public and the empty table its only neighbour
        return np.zeros(d)
    else:
        bound = n
    step = _grid_step(step_epsilon, bound)
    true_answers = q @ hist
    log_weights = np.full(d, -math.log(d))  # A_0 = n / d, uniform
    synthetic = np.full(d, n / d)
    total = np.zeros(d)
    chosen: list[int] = []
    measured: list[float] = []
    for _ in range(t):
        # Step 1, exponential mechanism with eps_r/(2T), score |q . A - q . D|, sensitivity 1
        # (Hardt, Ligett & McSherry 2012, Algorithm 1).
        scores = np.abs(q @ synthetic - true_answers)
        i = exponential_mechanism(scores, 1.0, step_epsilon, rng=generator)
        # Step 2, measurement with eps_r/(2T), sensitivity 1, on a fixed grid (integer noise).
        measurement = _measure(float(true_answers[i]), step_epsilon, generator, step)
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
