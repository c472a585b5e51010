"""Privacy auditing with one training run (Steinke, Nasr, Jagielski 2023).

Classic audits ([JUO20]) train hundreds of models with and without one target example. The
one-run audit inserts *m* canaries at once, each included in the training set independently with
probability 1/2, trains **once**, and lets an attacker guess, from the trained model alone, which
canaries were included ([SNJ23] Algorithm 1):

1. draw S ∈ {−1, +1}^m uniformly (S_i = +1: canary i is included) — :func:`canary_inclusion`;
2. train on the data plus the included canaries;
3. score every canary (here: minus its loss, :func:`~dplib.auditing.membership.loss_threshold_attack`);
4. guess +1 for the ``k_pos`` highest scores, −1 for the ``k_neg`` lowest, abstain on the rest
   (:func:`one_run_guesses`); count the correct guesses v among the r = k_pos + k_neg made;
5. convert v into a lower bound on ε (:func:`one_run_epsilon_lower_bound`).

Step 5 is [SNJ23] Theorem 3 (their main result; Theorem 1 is the informal version): if training
is (ε, δ)-DP, the number of correct guesses W satisfies, for every v,

    P[W ≥ v] ≤ P[Binomial(r, q) ≥ v] + 2 m δ · max_{i = 1..v} P[v > Binomial(r, q) ≥ v − i] / i,

with q = e^ε / (1 + e^ε), the accuracy of ε-DP randomised response: the guesses can be no
better than r independent coin flips biased by e^ε. For δ = 0 the second term vanishes. The
right-hand side is the p-value of the observed v under the hypothesis "(ε, δ)-DP"
(:func:`one_run_p_value`); the lower bound at confidence 1 − β is the largest ε whose p-value is
below β, found by bisection (p increases with ε), as in the paper's reference code
(``p_value_DP_audit`` / ``get_eps_audit``, [SNJ23] Appendix).

k_pos and k_neg must be fixed before looking at the scores (trying several and keeping the best
would invalidate the confidence level). The bound is valid whatever the attack, but loose: with
r guesses it can never exceed about ln(r) (all r correct), and the loss attack sees only the
final model, so DP-SGD's bound is usually far below the accountant's ε — an audit shows a
*violation* when its lower bound exceeds the claimed ε, it never proves privacy.

References
----------
.. [SNJ23] T. Steinke, M. Nasr, M. Jagielski, "Privacy Auditing with One (1) Training Run",
   NeurIPS 2023, arXiv:2305.08846, Algorithm 1 and Theorem 3.
.. [JUO20] M. Jagielski, J. Ullman, A. Oprea, "Auditing Differentially Private Machine Learning:
   How Private is Private SGD?", NeurIPS 2020.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from dplib._validation import (
    as_generator,
    check_data,
    check_delta,
    check_integer,
    check_probability,
    refuse_masked,
)
from dplib.auditing.membership import loss_threshold_attack

__all__ = [
    "canary_inclusion",
    "random_canaries",
    "one_run_guesses",
    "one_run_p_value",
    "one_run_epsilon_lower_bound",
    "OneRunAudit",
    "audit_one_run",
    "audit_training_one_run",
]

# Upper end of the bisection for ε; with r guesses the bound is below ln(r / β) + 1 anyway.
_EPSILON_SEARCH_MAX = 100.0


def canary_inclusion(m: int, *, rng: Any = None) -> np.ndarray:
    """S of [SNJ23] Algorithm 1: a boolean mask, each of the ``m`` canaries included w.p. 1/2."""
    m = check_integer(m, "m", minimum=1)
    return as_generator(rng).random(m) < 0.5


def random_canaries(
    m: int, n_features: int, classes: Any, *, low: float = 0.0, high: float = 1.0, rng: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """``m`` out-of-distribution canaries: uniform features in [low, high], uniform random labels.

    Such points are unlike the real data and their labels are pure noise, so the model can only
    predict them well by memorising them: their loss reveals whether they were trained on.

    Returns
    -------
    X_canary : ndarray of shape (m, n_features)
    y_canary : ndarray of shape (m,), drawn from ``classes``
    """
    m = check_integer(m, "m", minimum=1)
    n_features = check_integer(n_features, "n_features", minimum=1)
    classes = np.unique(np.asarray(classes))
    if classes.size < 2:
        raise ValueError(f"classes must hold at least 2 labels, got {classes.tolist()!r}")
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"low and high must be finite with low < high, got {low!r}, {high!r}")
    gen = as_generator(rng)
    X = gen.uniform(low, high, size=(m, n_features))
    y = classes[gen.integers(0, classes.size, size=m)]
    return X, y


def one_run_guesses(scores: Any, k_pos: int, k_neg: int) -> np.ndarray:
    """Guesses T ∈ {−1, 0, +1}^m: +1 for the ``k_pos`` highest scores, −1 for the ``k_neg``
    lowest, 0 (abstain) otherwise ([SNJ23] Algorithm 1, last step).

    Ties are broken by position (a stable sort), which does not depend on S.
    """
    scores = check_data(scores, "scores")
    if scores.ndim != 1:
        raise ValueError(f"scores must be a 1-d array, got shape {scores.shape}")
    k_pos = check_integer(k_pos, "k_pos", minimum=0)
    k_neg = check_integer(k_neg, "k_neg", minimum=0)
    if k_pos + k_neg > scores.size:
        raise ValueError(
            f"k_pos + k_neg must be at most the number of canaries ({scores.size}), got {k_pos + k_neg}"
        )
    order = np.argsort(-scores, kind="stable")
    guesses = np.zeros(scores.size, dtype=np.int8)
    guesses[order[:k_pos]] = 1
    if k_neg:
        guesses[order[scores.size - k_neg :]] = -1
    return guesses


def _check_counts(m: Any, r: Any, v: Any) -> tuple[int, int, int]:
    m = check_integer(m, "m", minimum=1)
    r = check_integer(r, "r", minimum=0)
    v = check_integer(v, "v", minimum=0)
    if not v <= r <= m:
        raise ValueError(
            f"need 0 <= v <= r <= m (correct <= guesses <= canaries), got v={v}, r={r}, m={m}"
        )
    return m, r, v


def _p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    q = 1.0 / (1.0 + math.exp(-epsilon))  # accuracy of ε-DP randomised response
    p = float(stats.binom.sf(v - 1, r, q))  # P[Binomial(r, q) ≥ v]
    if delta > 0 and v > 0:
        # max_{i=1..v} P[v > Binomial(r, q) ≥ v − i] / i, the δ term of [SNJ23] Theorem 3
        below = np.cumsum(stats.binom.pmf(np.arange(v - 1, -1, -1), r, q))
        p += 2 * m * delta * float(np.max(below / np.arange(1, v + 1)))
    return min(p, 1.0)


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float = 0.0) -> float:
    """P-value of ≥ ``v`` correct guesses out of ``r`` under "training is (ε, δ)-DP".

    Parameters
    ----------
    m : int
        Number of canaries, each included independently with probability 1/2.
    r : int
        Number of guesses made (abstentions excluded), ``0 ≤ r ≤ m``.
    v : int
        Number of correct guesses, ``0 ≤ v ≤ r``.
    epsilon : float
        ε ≥ 0 of the hypothesis.
    delta : float, default 0
        δ in [0, 1) of the hypothesis.

    Returns
    -------
    float
        ``min(1, P[Bin(r, q) ≥ v] + 2mδ max_{i ≤ v} P[v > Bin(r, q) ≥ v − i] / i)``,
        q = e^ε/(1 + e^ε) ([SNJ23] Theorem 3).

    Examples
    --------
    >>> round(one_run_p_value(1000, 100, 100, 0.0), 30)   # 100/100 right by coin flips
    0.0
    >>> one_run_p_value(1000, 100, 50, 0.0) > 0.5
    True
    """
    m, r, v = _check_counts(m, r, v)
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    delta = check_delta(delta)
    return _p_value(m, r, v, epsilon, delta)


def one_run_epsilon_lower_bound(
    m: int, r: int, v: int, *, delta: float = 0.0, confidence: float = 0.95
) -> float:
    """Largest ε refuted at ``confidence`` by ``v`` correct guesses out of ``r`` ([SNJ23]).

    Returns the sup of the ε ≥ 0 with :func:`one_run_p_value` < 1 − ``confidence`` (0 if even
    ε = 0 is not refuted), by bisection to 1e-7, keeping the end that is refuted so that the
    bound errs low.

    Examples
    --------
    >>> round(one_run_epsilon_lower_bound(1000, 100, 100), 3)   # all 100 guesses right
    3.493
    """
    m, r, v = _check_counts(m, r, v)
    delta = check_delta(delta)
    confidence = check_probability(confidence, "confidence", low_open=True, high_open=True)
    beta = 1.0 - confidence
    if _p_value(m, r, v, 0.0, delta) >= beta:
        return 0.0
    lo, hi = 0.0, 1.0
    while _p_value(m, r, v, hi, delta) < beta:
        lo, hi = hi, 2 * hi
        if hi > _EPSILON_SEARCH_MAX:
            return lo
    while hi - lo > 1e-7:
        mid = (lo + hi) / 2
        if _p_value(m, r, v, mid, delta) < beta:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True)
class OneRunAudit:
    """Outcome of a one-run audit ([SNJ23] Algorithm 1).

    Attributes
    ----------
    epsilon_lower_bound : float
        ε refuted at ``confidence`` (the training is *not* (ε', δ)-DP for any ε' below it,
        unless an event of probability 1 − ``confidence`` happened).
    m, k_pos, k_neg : int
        Canaries, positive and negative guesses.
    guesses : int
        r = k_pos + k_neg.
    correct : int
        v, the correct guesses.
    delta, confidence : float
    scores : ndarray of shape (m,)
        The canaries' membership scores (e.g. for :func:`~dplib.auditing.membership.roc_curve`).
    included : ndarray of bool, shape (m,)
        S, the true inclusion of each canary.
    """

    epsilon_lower_bound: float
    m: int
    k_pos: int
    k_neg: int
    guesses: int
    correct: int
    delta: float
    confidence: float
    scores: np.ndarray = field(repr=False)
    included: np.ndarray = field(repr=False)


def audit_one_run(
    scores: Any,
    included: Any,
    *,
    k_pos: int,
    k_neg: int,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> OneRunAudit:
    """ε lower bound from canary scores and the true inclusion mask ([SNJ23] Algorithm 1).

    Parameters
    ----------
    scores : array_like of shape (m,)
        Membership scores of the canaries (higher = more likely included).
    included : array_like of bool, shape (m,)
        S: which canaries were in the training set.
    k_pos, k_neg : int, keyword-only
        Number of +1 and −1 guesses, fixed in advance; ``k_pos + k_neg ≤ m``.
    delta : float, keyword-only
        δ of the guarantee being audited.
    confidence : float, keyword-only
        Confidence of the bound (0.95 in [SNJ23]).
    """
    scores = check_data(scores, "scores")
    included = np.asarray(included)
    if included.dtype != bool or included.shape != scores.shape:
        raise ValueError(
            f"included must be a boolean array shaped like scores {scores.shape}, got "
            f"{included.dtype} of shape {included.shape}"
        )
    guesses = one_run_guesses(scores, k_pos, k_neg)
    truth = np.where(included, 1, -1)
    correct = int(np.count_nonzero(guesses * truth == 1))
    r = int(np.count_nonzero(guesses))
    m = scores.size
    return OneRunAudit(
        epsilon_lower_bound=one_run_epsilon_lower_bound(
            m, r, correct, delta=delta, confidence=confidence
        ),
        m=m,
        k_pos=int(k_pos),
        k_neg=int(k_neg),
        guesses=r,
        correct=correct,
        delta=float(delta),
        confidence=float(confidence),
        scores=scores,
        included=included,
    )


def audit_training_one_run(
    estimator: Any,
    X: Any,
    y: Any,
    canary_X: Any,
    canary_y: Any,
    *,
    k_pos: int,
    k_neg: int,
    delta: float = 0.0,
    confidence: float = 0.95,
    rng: Any = None,
) -> OneRunAudit:
    """Audit a training algorithm with one run: insert canaries w.p. 1/2, fit once, guess.

    Parameters
    ----------
    estimator : classifier
        Unfitted estimator with ``fit``, ``predict_proba`` and ``classes_`` (e.g.
        :class:`~dplib.dpsgd.DPSGDClassifier`); it is fitted **in place** on ``X`` plus the
        included canaries, so it can be inspected afterwards.
    X, y : array_like
        The ordinary training data.
    canary_X, canary_y : array_like
        The m canaries (e.g. from :func:`random_canaries`, or mislabelled held-out points).
    k_pos, k_neg : int, keyword-only
        Numbers of +1 / −1 guesses, fixed in advance.
    delta : float, keyword-only
        δ of the guarantee being audited (the estimator's δ, to compare with its ε).
    confidence : float, keyword-only
        Confidence of the bound.
    rng : None, int or numpy.random.Generator, keyword-only
        Randomness of the inclusion mask S (the estimator's own randomness is its own).

    Returns
    -------
    OneRunAudit

    Raises
    ------
    TypeError
        If ``estimator`` has no ``fit`` or ``predict_proba`` method, or an array holds
        non-numbers.
    ValueError
        For inconsistent shapes, ``k_pos + k_neg > m`` or a bad ``delta`` or ``confidence``.
        Nothing is drawn or fitted when a call is refused.
    """
    missing = [
        method
        for method in ("fit", "predict_proba")
        if not callable(getattr(estimator, method, None))
    ]
    if missing:
        raise TypeError(
            "estimator must be an unfitted classifier with fit and predict_proba methods "
            f"(scikit-learn's convention), got {type(estimator).__name__} without "
            f"{' and '.join(missing)}"
        )
    X = check_data(X, "X")
    canary_X = check_data(canary_X, "canary_X")
    refuse_masked(y, "y")
    refuse_masked(canary_y, "canary_y")
    y, canary_y = np.asarray(y), np.asarray(canary_y)
    if canary_X.ndim != 2 or X.ndim != 2 or canary_X.shape[1] != X.shape[1]:
        raise ValueError(
            f"X and canary_X must be 2-d with the same number of columns, got {X.shape} and {canary_X.shape}"
        )
    if canary_y.shape != (canary_X.shape[0],) or y.shape != (X.shape[0],):
        raise ValueError("y and canary_y must be 1-d with one label per row of X and canary_X")
    m = canary_X.shape[0]
    one_run_guesses(np.zeros(m), k_pos, k_neg)  # validate k_pos, k_neg before any training
    check_delta(delta)
    check_probability(confidence, "confidence", low_open=True, high_open=True)
    included = canary_inclusion(m, rng=rng)  # S of [SNJ23] Algorithm 1
    estimator.fit(np.concatenate([X, canary_X[included]]), np.concatenate([y, canary_y[included]]))
    scores = loss_threshold_attack(estimator, canary_X, canary_y)
    return audit_one_run(
        scores, included, k_pos=k_pos, k_neg=k_neg, delta=delta, confidence=confidence
    )
