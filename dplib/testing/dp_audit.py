r"""Empirical differential-privacy audits: a certified lower bound on a mechanism's epsilon
(:func:`audit_dp`, Clopper-Pearson bounds on output events) and the assertion built on it
(:func:`assert_dp`)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_data,
    check_delta,
    check_epsilon,
    check_integer,
)
from dplib.testing._common import DEFAULT_FAILURE_PROB, check_failure_prob, format_figure
from dplib.testing.intervals import cp_one_sided

__all__ = ["DPAuditResult", "audit_dp", "assert_dp"]


@dataclass(frozen=True)
class DPAuditResult:
    """The outcome of :func:`audit_dp`: a certified lower bound on a mechanism's epsilon.

    Attributes
    ----------
    epsilon_lower_bound : float
        With probability at least ``1 - failure_prob``, the mechanism is **not** (ε, δ)-DP for
        any ε below this value (0.0 when nothing is certified).
    event : str
        The output event that certifies it, e.g. ``"output > 0.9871"``.
    direction : str
        ``"a/b"`` when the event is likelier on ``input_a``, ``"b/a"`` otherwise.
    count_a, count_b : int
        How often the event occurred among the ``n_samples`` outputs on each input.
    prob_a, prob_b : (float, float)
        Clopper-Pearson bounds ``(low, high)`` on the event's probability on each input.
    n_samples : int
        Outputs drawn per input (besides the pilot draws that placed the bins).
    n_events : int
        Number of events examined.
    delta : float
        The δ the bound is computed for.
    failure_prob : float
        Probability that the bound is wrong.
    """

    epsilon_lower_bound: float
    event: str
    direction: str
    count_a: int
    count_b: int
    prob_a: tuple[float, float]
    prob_b: tuple[float, float]
    n_samples: int
    n_events: int
    delta: float
    failure_prob: float


def _draw(
    mechanism: Callable[..., Any], x: Any, n: int, gen: np.random.Generator, vectorized: bool
) -> np.ndarray:
    if vectorized:
        out = np.asarray(mechanism(x, rng=gen, size=n))
        if out.size != n:
            raise ValueError(
                f"with vectorized=True, mechanism(x, rng=rng, size={n}) must return {n} outputs, "
                f"got shape {out.shape}"
            )
        out = out.reshape(n)
    else:
        out = np.asarray([mechanism(x, rng=gen) for _ in range(n)])
        if out.shape != (n,):
            raise ValueError(
                "mechanism(x, rng=rng) must return one number (or one category) per call, "
                f"got outputs of shape {out.shape[1:]}"
            )
    if out.dtype == bool:
        out = out.astype(np.int64)
    if out.dtype.kind in "fc" and not np.all(np.isfinite(out)):
        raise ValueError("mechanism returned NaN or infinite outputs")
    if out.dtype.kind == "c":
        raise ValueError("mechanism must return real numbers or categories, got complex numbers")
    return out


def _events_numeric(thresholds: np.ndarray, sa: np.ndarray, sb: np.ndarray):
    """Counts of the events {Y <= t_j}, {Y > t_j} and (t_{j-1}, t_j] for sorted outputs."""
    la = np.searchsorted(sa, thresholds, side="right")
    lb = np.searchsorted(sb, thresholds, side="right")
    n = sa.size
    names = [f"output <= {format_figure(t)}" for t in thresholds]
    ka, kb = [la], [lb]
    # complements {Y > t_j}: their Clopper-Pearson bounds are those of {Y <= t_j}, so they add
    # nothing to the Bonferroni count
    names += [f"output > {format_figure(t)}" for t in thresholds]
    ka.append(n - la)
    kb.append(n - lb)
    names += [
        f"{format_figure(t0)} < output <= {format_figure(t1)}"
        for t0, t1 in zip(thresholds[:-1], thresholds[1:], strict=True)
    ]
    ka.append(np.diff(la))
    kb.append(np.diff(lb))
    n_distinct = 2 * thresholds.size - 1
    return names, np.concatenate(ka), np.concatenate(kb), n_distinct


def audit_dp(
    mechanism: Callable[..., Any],
    input_a: Any,
    input_b: Any,
    *,
    delta: float = 0.0,
    n_samples: int = 100_000,
    bins: int | Sequence[float] | None = None,
    vectorized: bool = False,
    rng: Any = None,
    failure_prob: float = DEFAULT_FAILURE_PROB,
) -> DPAuditResult:
    r"""Certified lower bound on the ε of ``mechanism`` from its outputs on two inputs.

    (ε, δ)-DP requires :math:`P_a(E) \le e^ε P_b(E) + δ` for every event ``E`` and both orders of
    the neighbouring inputs. For each examined event, Clopper-Pearson gives a lower bound
    :math:`\underline{P}_a(E)` and an upper bound :math:`\overline{P}_b(E)`; then
    :math:`ε \ge \ln((\underline{P}_a(E) - δ) / \overline{P}_b(E))`. With a Bonferroni split of
    ``failure_prob`` over all the one-sided bounds, the largest such value is a lower bound on the
    true ε with probability at least ``1 - failure_prob``.

    **Calling convention.** ``mechanism(x, rng=generator)`` returns one output (a number, a bool
    or a category such as a string); it is called ``n_samples`` times per input. With
    ``vectorized=True`` it is called once per input as ``mechanism(x, rng=generator, size=n)``
    and returns ``n`` outputs, which is much faster. The same generator (from ``rng`` via
    :func:`dplib._validation.as_generator`) is passed to every call, so a seed makes the audit
    reproducible. Wrap a mechanism with other parameters in a lambda::

        audit_dp(lambda x, rng: laplace_mechanism(x, 1.0, 1.0, rng=rng), 0.0, 1.0)

    **Events.** Bins are placed from an independent pilot run (``max(n_samples // 10, 100)``
    outputs per input, drawn first) so that the events are fixed before the counted outputs are
    drawn, as Clopper-Pearson requires:

    * ``bins=None`` (default): numeric outputs with at most 64 distinct pilot values (bits,
      counts, integer-valued noise) get a threshold at each distinct value; other numeric outputs
      get thresholds at the quantiles ``j / 20`` (``j = 1, ..., 19``) of the pooled pilot outputs;
    * ``bins=k`` (an int ``>= 2``): thresholds at the pooled pilot quantiles ``j / k``;
    * ``bins=[t1, ..., tm]``: those thresholds, and no pilot run;
    * non-numeric outputs (strings, ...): one event per distinct pilot value.

    For numeric outputs the events are the tails :math:`\{Y \le t\}`, :math:`\{Y > t\}` and the
    bins between consecutive thresholds. Tails are what catch too little Laplace noise: with
    inputs 0 and 1, :math:`\{Y > 1\}` has probability ratio :math:`e^{Δ/b}`.

    Parameters
    ----------
    mechanism : callable
        See the calling convention above.
    input_a, input_b : any
        Two neighbouring inputs, passed to ``mechanism`` as they are.
    delta : float
        δ in [0, 1).
    n_samples : int
        Counted outputs per input, ``>= 100``.
    bins : int, sequence of float or None
        See *Events*.
    vectorized : bool
        Whether ``mechanism`` accepts ``size=``.
    rng : None, int or numpy.random.Generator
        Randomness passed to the mechanism.
    failure_prob : float
        Probability in (0, 1) that the returned bound exceeds the true ε.

    Returns
    -------
    DPAuditResult

    Raises
    ------
    ValueError
        For bad arguments, or outputs that are NaN, infinite or not one per call.
    TypeError
        If ``mechanism`` is not callable.

    References
    ----------
    Clopper and Pearson (1934), see :func:`clopper_pearson`. The hypothesis-testing view of DP
    audits: Z. Ding, Y. Wang, G. Wang, D. Zhang and D. Kifer, "Detecting violations of
    differential privacy", CCS 2018; M. Jagielski, J. Ullman and A. Oprea, "Auditing
    differentially private machine learning: how private is private SGD?", NeurIPS 2020
    (Clopper-Pearson lower bounds on ε, their Algorithm 2).
    """
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable, got {type(mechanism).__name__}")
    delta = check_delta(delta)
    n = check_integer(n_samples, "n_samples", minimum=100)
    p = check_failure_prob(failure_prob)
    if not isinstance(vectorized, bool):
        raise TypeError(f"vectorized must be True or False, got {type(vectorized).__name__}")
    edges: np.ndarray | None = None
    n_bins = 20
    if isinstance(bins, bool):
        raise TypeError("bins must be None, an int or a sequence of thresholds, got bool")
    if isinstance(bins, numbers.Integral):
        n_bins = check_integer(bins, "bins", minimum=2)
    elif bins is not None:
        edges = check_data(bins, "bins").ravel()
        if np.any(np.diff(edges) <= 0):
            raise ValueError("bins must be strictly increasing thresholds")
    gen = as_generator(rng)

    categories: np.ndarray | None = None
    if edges is None:
        n_pilot = max(n // 10, 100)
        pilot = np.concatenate(
            [
                _draw(mechanism, input_a, n_pilot, gen, vectorized),
                _draw(mechanism, input_b, n_pilot, gen, vectorized),
            ]
        )
        distinct = np.unique(pilot)
        if pilot.dtype.kind not in "iuf":
            categories = distinct
        elif distinct.size <= 64 and not isinstance(bins, numbers.Integral):
            edges = distinct[:-1].astype(float) if distinct.size > 1 else distinct.astype(float)
        else:
            edges = np.unique(np.quantile(pilot, np.arange(1, n_bins) / n_bins))
    out_a = _draw(mechanism, input_a, n, gen, vectorized)
    out_b = _draw(mechanism, input_b, n, gen, vectorized)

    if categories is not None:
        names = [f"output == {c!r}" for c in categories.tolist()]
        ka = np.array([np.count_nonzero(out_a == c) for c in categories])
        kb = np.array([np.count_nonzero(out_b == c) for c in categories])
        n_distinct = len(names)
    else:
        if out_a.dtype.kind not in "iuf" or out_b.dtype.kind not in "iuf":
            raise ValueError("mechanism returned non-numeric outputs where numbers were expected")
        names, ka, kb, n_distinct = _events_numeric(
            edges, np.sort(out_a.astype(float)), np.sort(out_b.astype(float))
        )

    # 4 one-sided bounds per distinct event (lower and upper, on each input)
    alpha = p / (4 * n_distinct)
    low_a, high_a = cp_one_sided(ka, n, alpha)
    low_b, high_b = cp_one_sided(kb, n, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps_ab = np.where(low_a > delta, np.log((low_a - delta) / high_b), 0.0)
        eps_ba = np.where(low_b > delta, np.log((low_b - delta) / high_a), 0.0)
    i_ab, i_ba = int(np.argmax(eps_ab)), int(np.argmax(eps_ba))
    i, direction, best = (
        (i_ab, "a/b", eps_ab[i_ab]) if eps_ab[i_ab] >= eps_ba[i_ba] else (i_ba, "b/a", eps_ba[i_ba])
    )
    return DPAuditResult(
        epsilon_lower_bound=max(float(best), 0.0),
        event=names[i],
        direction=direction,
        count_a=int(ka[i]),
        count_b=int(kb[i]),
        prob_a=(float(low_a[i]), float(high_a[i])),
        prob_b=(float(low_b[i]), float(high_b[i])),
        n_samples=n,
        n_events=len(names),
        delta=delta,
        failure_prob=p,
    )


def assert_dp(
    mechanism: Callable[..., Any],
    input_a: Any,
    input_b: Any,
    epsilon: float,
    *,
    delta: float = 0.0,
    n_samples: int = 100_000,
    bins: int | Sequence[float] | None = None,
    vectorized: bool = False,
    rng: Any = None,
    failure_prob: float = DEFAULT_FAILURE_PROB,
) -> DPAuditResult:
    r"""Assert that no event separates ``mechanism(input_a)`` from ``mechanism(input_b)`` by more
    than :math:`e^ε` (plus δ), empirically.

    Fails when :func:`audit_dp` certifies, at confidence ``1 - failure_prob``, an ε larger than
    the claimed one, i.e. when for some event ``E`` and some order of the inputs
    :math:`\underline{P}_a(E) > e^ε\,\overline{P}_b(E) + δ` with Clopper-Pearson bounds. A correct
    mechanism therefore fails with probability at most ``failure_prob``. A passing audit is
    evidence, not proof: only the two given inputs and the examined events are checked.

    Power (measured with ``bins=None``, 200 seeds per cell): Laplace noise of half the correct
    scale (true ε twice the claim) on inputs 0 and 1 is rejected

    ======  =====================  ==============================
    ε       rejected 200/200 at    rejection rate one step below
    ======  =====================  ==============================
    1       ``n_samples=1_000``    --
    0.5     ``3_000``              10% at 1_000
    0.3     ``10_000``             50% at 3_000
    0.1     ``100_000`` (default)  98.5% at 30_000
    0.05    ``300_000``            84.5% at 100_000
    ======  =====================  ==============================

    roughly ``n ≈ 3_000 / ε²``; smaller errors in the noise scale need more samples.

    Parameters
    ----------
    mechanism, input_a, input_b, delta, n_samples, bins, vectorized, rng, failure_prob
        See :func:`audit_dp`.
    epsilon : float
        The claimed ε, ``> 0``.

    Returns
    -------
    DPAuditResult
        The audit, when it passes (its ``epsilon_lower_bound`` is then at most ``epsilon``).

    Raises
    ------
    AssertionError
        Naming the separating event, its counts and probability bounds on both inputs, and the
        certified lower bound on ε.
    ValueError, TypeError
        For bad arguments (see :func:`audit_dp`).

    Examples
    --------
    >>> laplace = lambda x, rng, size: x + rng.laplace(0.0, 1.0 / 0.5, size)
    >>> result = assert_dp(laplace, 0.0, 1.0, epsilon=0.5, vectorized=True, rng=0)
    >>> result.epsilon_lower_bound <= 0.5
    True
    """
    epsilon = check_epsilon(epsilon)
    result = audit_dp(
        mechanism,
        input_a,
        input_b,
        delta=delta,
        n_samples=n_samples,
        bins=bins,
        vectorized=vectorized,
        rng=rng,
        failure_prob=failure_prob,
    )
    if result.epsilon_lower_bound > epsilon:
        first, second = (
            ("input_a", "input_b") if result.direction == "a/b" else ("input_b", "input_a")
        )
        (k1, b1), (k2, b2) = (
            ((result.count_a, result.prob_a), (result.count_b, result.prob_b))
            if result.direction == "a/b"
            else ((result.count_b, result.prob_b), (result.count_a, result.prob_a))
        )
        delta_part = f" + delta ({result.delta:g})" if result.delta > 0 else ""
        raise AssertionError(
            f"the mechanism is not {format_figure(epsilon)}-DP"
            + (f" with delta={result.delta:g}" if result.delta else "")
            + f": the event '{result.event}' has probability at least {format_figure(b1[0])} on {first} "
            f"({k1}/{result.n_samples} outputs) but at most {format_figure(b2[1])} on {second} "
            f"({k2}/{result.n_samples}), more than e^epsilon = {format_figure(math.exp(epsilon))} times "
            f"that{delta_part}; this certifies epsilon >= {format_figure(result.epsilon_lower_bound)} "
            f"(n={result.n_samples} per input, Clopper-Pearson bounds with Bonferroni over "
            f"{result.n_events} events, failure probability {result.failure_prob:g}). "
            "Check the noise scale (sensitivity / epsilon) and the sensitivity."
        )
    return result
