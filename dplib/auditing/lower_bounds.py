"""Empirical lower bounds on ε: from an attack's errors, and from a black-box mechanism.

DP as hypothesis testing (Wasserman & Zhou 2010; Kairouz, Oh, Viswanath 2015, Theorem 2.1): a
mechanism is (ε, δ)-DP if and only if every test of "input a" against "input b" (here: "this
example was in the training set" against "it was not") has false-positive and false-negative
rates with

    FPR + e^ε FNR ≥ 1 − δ   and   e^ε FPR + FNR ≥ 1 − δ.

So an attack that achieves small FPR and FNR *proves* that ε is at least

    max( ln((1 − δ − FNR)/FPR), ln((1 − δ − FPR)/FNR) ).

The rates are estimated from finitely many trials, so they are replaced by Clopper-Pearson upper
confidence bounds; the result is then a lower bound on the true ε with the stated confidence
(Jagielski, Ullman, Oprea 2020, Section 4 and Algorithm 2; TF Privacy's
``privacy_tests/epsilon_lower_bound.py``, ``RatioBound._bound_clopper_pearson``, is the δ = 0
case). Each of the two upper bounds is one side of a two-sided Clopper-Pearson interval at level
``alpha``, i.e. fails with probability at most ``alpha / 2``; by the union bound both hold with
probability at least ``1 − alpha``.

:func:`audit_mechanism` does the same for any mechanism run many times on two neighbouring
inputs, by wrapping :func:`dplib.testing.audit_dp` (events chosen on a pilot run, Clopper-Pearson
with a Bonferroni correction over the events).

References
----------
.. [JUO20] M. Jagielski, J. Ullman, A. Oprea, "Auditing Differentially Private Machine Learning:
   How Private is Private SGD?", NeurIPS 2020, arXiv:2006.07709.
.. [KOV15] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential Privacy",
   ICML 2015, Theorem 2.1.
.. [WZ10] L. Wasserman, S. Zhou, "A statistical framework for differential privacy", JASA 2010.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_bool,
    check_data,
    check_delta,
    check_epsilon,
    check_integer,
    check_probability,
)
from dplib.testing import DPAuditResult, audit_dp, clopper_pearson

__all__ = ["epsilon_lower_bound", "MechanismAudit", "audit_mechanism"]

#: Largest ``n_samples`` of :func:`audit_mechanism`: 2 x 1.1 x 10**7 outputs (about 180 MB of
#: float64, about a second for a vectorized Laplace mechanism).
_MAX_SAMPLES = 10**7
#: Largest int ``bins`` (number of pilot quantiles); each event costs Bonferroni power, so more
#: bins than this only weakens the bound.
_MAX_BINS = 10**4


def epsilon_lower_bound(
    false_positives: int,
    false_negatives: int,
    n_negatives: int,
    n_positives: int,
    delta: float = 0.0,
    alpha: float = 0.05,
) -> float:
    """Lower bound on ε, at confidence ``1 − alpha``, from an attack's error counts.

    Parameters
    ----------
    false_positives : int
        Non-members (negatives) that the attack called members, in ``[0, n_negatives]``.
    false_negatives : int
        Members (positives) that the attack missed, in ``[0, n_positives]``.
    n_negatives, n_positives : int
        Numbers of independent trials of each kind, ≥ 1.
    delta : float, default 0
        The δ of the guarantee being audited, in [0, 1).
    alpha : float, default 0.05
        Probability in (0, 1) that the bound is wrong (exceeds the true ε).

    Returns
    -------
    float
        ``max(0, ln((1 − δ − FNR_hi)/FPR_hi), ln((1 − δ − FPR_hi)/FNR_hi))`` with ``FPR_hi``,
        ``FNR_hi`` the upper ends of the two-sided Clopper-Pearson intervals at level ``alpha``
        (a term whose numerator is ≤ 0 counts as 0).

    Raises
    ------
    ValueError
        If a count is outside its range, ``delta`` outside [0, 1) or ``alpha`` outside (0, 1).
    TypeError
        If a count is not an integer.

    Notes
    -----
    [KOV15] Theorem 2.1 for the two inequalities; [JUO20] Section 4 (Algorithm 2) for the
    Clopper-Pearson version, whose code takes ``clopper_pearson(count, trials, alpha)[1]`` for
    both rates exactly as here.

    Examples
    --------
    >>> round(epsilon_lower_bound(10, 10, 1000, 1000), 3)   # 1% errors each way
    3.982
    >>> epsilon_lower_bound(500, 500, 1000, 1000)            # a coin flip proves nothing
    0.0
    """
    n_neg = check_integer(n_negatives, "n_negatives", minimum=1)
    n_pos = check_integer(n_positives, "n_positives", minimum=1)
    fp = check_integer(false_positives, "false_positives", minimum=0)
    fn = check_integer(false_negatives, "false_negatives", minimum=0)
    if fp > n_neg:
        raise ValueError(f"false_positives must be in [0, n_negatives] = [0, {n_neg}], got {fp}")
    if fn > n_pos:
        raise ValueError(f"false_negatives must be in [0, n_positives] = [0, {n_pos}], got {fn}")
    delta = check_delta(delta)
    alpha = check_probability(alpha, "alpha", low_open=True, high_open=True)
    fpr_hi = clopper_pearson(fp, n_neg, alpha)[1]  # one-sided at alpha/2 each ([JUO20])
    fnr_hi = clopper_pearson(fn, n_pos, alpha)[1]
    best = 0.0
    for numerator, denominator in ((1 - delta - fnr_hi, fpr_hi), (1 - delta - fpr_hi, fnr_hi)):
        if numerator > 0 and denominator > 0:  # [KOV15] Theorem 2.1, both orders
            best = max(best, math.log(numerator / denominator))
    return best


@dataclass(frozen=True)
class MechanismAudit:
    """Outcome of :func:`audit_mechanism`.

    Attributes
    ----------
    epsilon_lower_bound : float
        ε certified (at ``confidence``) from the samples; the true ε is at least this.
    claimed_epsilon : float
        The ε the mechanism claims.
    confidence : float
        Probability that the certified bound is correct.
    flagged : bool
        ``epsilon_lower_bound > claimed_epsilon``: the samples *prove*, at this confidence, that
        the claim is false. Not flagged is evidence, not proof, that the claim holds.
    details : DPAuditResult
        The separating event, counts and probability bounds (see :func:`dplib.testing.audit_dp`).
    """

    epsilon_lower_bound: float
    claimed_epsilon: float
    confidence: float
    flagged: bool
    details: DPAuditResult

    @property
    def verdict(self) -> str:
        """``"flag"`` when the claim is refuted, ``"pass"`` otherwise."""
        return "flag" if self.flagged else "pass"


def audit_mechanism(
    mechanism: Callable[..., Any],
    a: Any,
    b: Any,
    claimed_epsilon: float,
    *,
    n_samples: int = 100_000,
    confidence: float = 0.95,
    delta: float = 0.0,
    vectorized: bool = False,
    bins: int | Sequence[float] | None = None,
    rng: Any = None,
) -> MechanismAudit:
    """Black-box DP audit: run ``mechanism`` on neighbours ``a`` and ``b`` and test the claim.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(x, rng=generator)`` returns one output; with ``vectorized=True``,
        ``mechanism(x, rng=generator, size=n)`` returns n outputs (much faster).
    a, b : any
        Two neighbouring inputs.
    claimed_epsilon : float
        The ε the mechanism is supposed to satisfy (> 0).
    n_samples : int, keyword-only
        Outputs drawn per input, in ``[100, 10**7]``, besides a pilot run that places the events.
    confidence : float, keyword-only
        In (0, 1), with ``1 − confidence`` > 0 as a float (so at least about 1.2e-16): the
        probability that the reported lower bound is valid. A correct mechanism is flagged with
        probability at most ``1 − confidence``; use e.g. ``1 − 1e-9`` in tests.
    delta : float, keyword-only
        δ of the claim, in [0, 1).
    vectorized : bool, keyword-only
        Whether ``mechanism`` accepts ``size=``.
    bins : int, sequence of float or None, keyword-only
        Events examined; see :func:`dplib.testing.audit_dp`. An int must be in ``[2, 10**4]``.
    rng : None, int or numpy.random.Generator, keyword-only
        Randomness passed to the mechanism.

    Returns
    -------
    MechanismAudit
        With the certified ``epsilon_lower_bound`` and the verdict (``flagged``).

    Raises
    ------
    ValueError, TypeError
        For bad arguments (see :func:`dplib.testing.audit_dp`). ``a`` and ``b`` are opaque to
        the audit, so they are judged by the mechanism: when ``mechanism`` raises a
        ``TypeError`` (or ``AttributeError``) on one of them, a ``TypeError`` naming that input
        is raised from it; a ``ValueError``, ``ArithmeticError`` or ``LookupError``, or outputs
        that are NaN, infinite, complex or not one per draw, give a ``ValueError`` naming it.

    Notes
    -----
    For every examined event E and both orders of the inputs, ε ≥ ln((P_a(E)_lo − δ) /
    P_b(E)_hi) with Clopper-Pearson bounds, Bonferroni-corrected over the events so that all
    hold together with probability ``confidence`` ([JUO20] Algorithm 2; Ding et al. 2018,
    "Detecting Violations of Differential Privacy", CCS).

    Examples
    --------
    >>> halved = lambda x, rng, size: x + rng.laplace(0.0, 0.5, size)   # claims ε = 1, is 2
    >>> audit_mechanism(halved, 0.0, 1.0, 1.0, n_samples=20_000, vectorized=True, rng=0).verdict
    'flag'
    """
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable, got {type(mechanism).__name__}")
    claimed = check_epsilon(claimed_epsilon, "claimed_epsilon")
    confidence = check_probability(confidence, "confidence", low_open=True, high_open=True)
    if not 0.0 < 1.0 - confidence < 1.0:
        raise ValueError(
            "confidence must be in (0, 1) with 1 - confidence a float in (0, 1) "
            f"(about 1.2e-16 <= confidence <= 1 - 1.2e-16), got {confidence!r}"
        )
    delta = check_delta(delta)
    n = check_integer(n_samples, "n_samples", minimum=100)
    if n > _MAX_SAMPLES:
        raise ValueError(f"n_samples must be an integer in [100, 10**7], got {n_samples!r}")
    vectorized = check_bool(vectorized, "vectorized")
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        if not 2 <= bins <= _MAX_BINS:
            raise ValueError(f"bins must be None, an int in [2, 10**4] or a sequence of thresholds, got {bins!r}")
    elif bins is not None and not isinstance(bins, bool):
        check_data(bins, "bins")
    as_generator(rng)  # refuse a bad rng before the mechanism runs (a Generator is reused as is)
    details = audit_dp(
        _NamedInputs(mechanism, vectorized),
        ("a", a),
        ("b", b),
        delta=delta,
        n_samples=n,
        bins=bins,
        vectorized=vectorized,
        rng=rng,
        failure_prob=1.0 - confidence,
    )
    return MechanismAudit(
        epsilon_lower_bound=details.epsilon_lower_bound,
        claimed_epsilon=claimed,
        confidence=confidence,
        flagged=details.epsilon_lower_bound > claimed,
        details=details,
    )


class _NamedInputs:
    """``mechanism`` called on ``(name, x)``: its failures and bad outputs name the input.

    :func:`audit_mechanism` passes ``("a", a)`` and ``("b", b)`` to :func:`audit_dp` in place of
    the inputs, so that an error raised by the mechanism on ``a`` (or a NaN it returns) says
    which of the user's arguments it came from.
    """

    def __init__(self, mechanism: Callable[..., Any], vectorized: bool) -> None:
        self.mechanism = mechanism
        self.vectorized = vectorized

    def __call__(self, named: tuple[str, Any], **kwargs: Any) -> Any:
        name, x = named
        allowed = f"{name} must be an input on which mechanism returns finite numbers or categories"
        try:
            out = self.mechanism(x, **kwargs)
        except (TypeError, AttributeError) as exc:
            raise TypeError(
                f"{allowed}; mechanism({name}) raised {type(exc).__name__}: {exc} "
                f"({name}={_short(x)})"
            ) from exc
        except (ValueError, ArithmeticError, LookupError) as exc:
            raise ValueError(
                f"{allowed}; mechanism({name}) raised {type(exc).__name__}: {exc} "
                f"({name}={_short(x)})"
            ) from exc
        arr = np.asarray(out)
        expected = (kwargs["size"],) if self.vectorized else ()
        if arr.size != (expected[0] if expected else 1) or (not expected and arr.ndim != 0):
            raise ValueError(
                f"{allowed}, one per draw; mechanism({name}) returned shape {arr.shape} "
                f"({name}={_short(x)})"
            )
        if arr.dtype.kind == "c":
            raise ValueError(f"{allowed}; mechanism({name}) returned complex numbers ({name}={_short(x)})")
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError(
                f"{allowed}; mechanism({name}) returned NaN or infinite outputs ({name}={_short(x)})"
            )
        return out


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."
