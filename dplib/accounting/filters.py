"""Privacy filters: budgets for analyses whose next query depends on the last answers.

:class:`dplib.PrivacyAccountant` composes releases whose parameters could have been fixed in
advance. An analyst who looks at an answer and *then* chooses the next query and its epsilon is
in the *fully adaptive* setting of Rogers, Roth, Ullman & Vadhan (2016), "Privacy Odometers and
Filters: Pay-as-you-Go Composition", NeurIPS: a composition theorem proved for parameters fixed in
advance need not hold when the parameters depend on the answers
(:func:`adaptive_composition_counterexample` shows it for the tight composition of the realised
mechanisms). A **privacy filter** is a stopping rule on the sequence of requested
``(epsilon_i, delta_i)``: it refuses the first request that would take the run past its budget,
and the whole interaction, stopped there, is (epsilon, delta)-DP however the requests were chosen.

:class:`PrivacyFilter` (rules, each with its theorem):

``"basic"``
    refuse when ``sum epsilon_i > epsilon`` or ``sum delta_i > delta``: valid under full
    adaptivity (Rogers et al. 2016: basic composition holds as a filter with adaptively chosen
    parameters; OpenDP's fully adaptive composition with its privacy filter).
``"rogers2016"``
    Rogers et al. (2016), Theorem 5.1, with its constants: for ``delta in (0, 1/e)``, refuse when
    ``sum delta_i > delta / 2`` or ``K > epsilon`` with
    ``K = sum eps_i (e^eps_i - 1) / 2 + sqrt(2 (sum eps_i^2 + H) (1 + log(sum eps_i^2 / H + 1) / 2)
    log(2 / delta))`` and ``H = epsilon^2 / (28.04 log(1 / delta))``.
``"whitehouse2023"``
    Whitehouse, Ramdas, Rogers & Wu (2023), "Fully-Adaptive Composition in Differential
    Privacy", ICML, the advanced-composition filter (through their approximate-zCDP filter):
    each ``(eps_i, delta_i)``-DP step is ``delta_i``-approximately ``eps_i^2 / 2``-zCDP (Bun &
    Steinke 2016, Proposition 1.4), and with ``delta = delta_conv + delta_steps`` the filter
    refuses when ``sum delta_i > delta_steps`` or
    ``sqrt(2 log(1/delta_conv) sum eps_i^2) + sum eps_i^2 / 2 > epsilon``: the rate, and the
    constants, of advanced composition (Dwork, Rothblum & Vadhan 2010) with adaptively chosen
    epsilons.

:class:`ZcdpFilter` holds a budget ``rho`` of zero-concentrated DP (Bun & Steinke 2016): zCDP
composes by adding the ``rho_i`` (their composition lemma, for mechanisms chosen adaptively with
``rho_i`` fixed), and stopping when ``sum rho_i`` would exceed ``rho`` is valid with the
``rho_i`` themselves chosen adaptively: the Rényi filter of Feldman & Zrnic (2021), "Individual
Privacy Accounting via a Rényi Filter", NeurIPS, at every order ``alpha`` at once
(``rho``-zCDP is RDP ``alpha rho`` for all ``alpha``), and Whitehouse et al. (2023)'s zCDP
filter. What a filter certifies is its **budget**, fixed before the first request: the whole
interaction is ``rho``-zCDP, hence (epsilon, delta)-DP with ``epsilon = zcdp_to_dp(rho, delta)``
(:meth:`ZcdpFilter.epsilon`). The *realised* spend ``sum rho_i`` is random when the requests
depend on the answers, and certifying it is a privacy **odometer**, which costs more (Rogers et
al. 2016; Whitehouse et al. 2023); its conversion (:meth:`ZcdpFilter.spent_epsilon`) is a
guarantee only for a list of requests fixed in advance. A refusal costs nothing: whether a
request is admitted depends on the requested costs only, never on the data (Feldman & Zrnic
2021, whose filter stops the run, or skips the request, before ``sum rho_i`` would pass ``rho``).
The same holds for :class:`PrivacyFilter`: its guarantee is its budget, and
:attr:`PrivacyFilter.spent` is a realised figure.

Both hold a ledger of :mod:`dplib.accounting.events` (a privacy event is data, the filter
interprets it), as :class:`dplib.PrivacyAccountant` does, and both refuse by raising
:class:`dplib.BudgetExceededError` *before* changing anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dplib._validation import (
    check_data,
    check_delta,
    check_epsilon,
    check_positive,
    check_probability,
)
from dplib.accounting._ledger import LedgerBudget
from dplib.accounting.events import (
    ApproxDpEvent,
    GaussianEvent,
    PrivacyEvent,
    PureDpEvent,
    ZcdpEvent,
)
from dplib.accounting.rdp import zcdp_to_dp

__all__ = [
    "FILTER_RULES",
    "PrivacyFilter",
    "ZcdpFilter",
    "rogers2016_statistic",
    "whitehouse2023_statistic",
    "AdaptiveCounterexample",
    "adaptive_composition_counterexample",
]

#: The rules of :class:`PrivacyFilter`.
FILTER_RULES = ("basic", "rogers2016", "whitehouse2023")
#: Relative slack for comparing exact sums with decimal budgets (0.1 + 0.2 against 0.3).
_SLACK = 1e-12
#: Rogers et al. (2016), Theorem 5.1's constant.
_RRUV_CONSTANT = 28.04


#: Largest budget epsilon of the statistics (its square must stay finite).
_MAX_EPSILON = 1e100


def _check_epsilons(epsilons: object) -> np.ndarray:
    eps = check_data(epsilons, "epsilons", allow_empty=True).reshape(-1)
    if np.any(eps < 0):
        raise ValueError("epsilons must be finite numbers >= 0")
    return eps


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(
            "epsilons are too large: the statistic overflows a double (each must be far below "
            "1e150)"
        )
    return value


def rogers2016_statistic(epsilons: object, epsilon: float, delta: float) -> float:
    """The statistic ``K`` of Rogers, Roth, Ullman & Vadhan (2016), Theorem 5.1.

    Parameters
    ----------
    epsilons : array_like
        The epsilons requested so far (finite, >= 0; may be empty).
    epsilon : float
        The filter's budget ``eps_g``, finite, > 0.
    delta : float
        The filter's ``delta_g`` in ``(0, 1/e)``.

    Returns
    -------
    float
        ``K = sum eps_i (e^eps_i - 1) / 2 + sqrt(2 (sum eps_i^2 + H) (1 + log(sum eps_i^2 / H +
        1) / 2) log(2 / delta_g))``, ``H = eps_g^2 / (28.04 log(1 / delta_g))``. The filter
        continues while ``K <= eps_g`` and ``sum delta_i <= delta_g / 2``.

    Notes
    -----
    The constants are those of the theorem as published (NeurIPS 2016; arXiv:1605.08294); no
    other implementation of this filter was found to check them against, so the tests recompute
    the statement rather than an independent figure. :func:`whitehouse2023_statistic`'s filter
    is tighter and rests on the zCDP conversion that :func:`dplib.zcdp_to_dp` checks.

    Examples
    --------
    >>> round(rogers2016_statistic([0.1] * 10, 1.0, 1e-6), 4)
    2.9607
    """
    eps = _check_epsilons(epsilons)
    eps_g = check_epsilon(epsilon)
    if not 1e-100 <= eps_g <= _MAX_EPSILON:
        raise ValueError(f"epsilon must be in [1e-100, 1e100] here, got {epsilon!r}")
    delta_g = check_delta(delta, allow_zero=False)
    if delta_g >= 1 / math.e:
        raise ValueError(f"delta must be in (0, 1/e) for Rogers et al.'s filter, got {delta!r}")
    log_inv = -math.log(delta_g)
    h = eps_g**2 / (_RRUV_CONSTANT * log_inv)
    with np.errstate(over="ignore", invalid="ignore"):
        squares = math.fsum(eps**2)
        drift = math.fsum(eps * np.expm1(eps)) / 2
        spread = 2 * (squares + h) * (1 + 0.5 * math.log1p(squares / h)) * (math.log(2) + log_inv)
        return _finite(drift + math.sqrt(spread))


def whitehouse2023_statistic(epsilons: object, delta: float) -> float:
    """``sqrt(2 log(1/delta) sum eps_i^2) + sum eps_i^2 / 2``: Whitehouse et al. (2023)'s filter.

    Parameters
    ----------
    epsilons : array_like
        The epsilons requested so far (finite, >= 0; may be empty).
    delta : float
        The part ``delta_conv`` of the budget's delta spent on the conversion, in (0, 1).

    Returns
    -------
    float
        The epsilon of ``rho = sum eps_i^2 / 2``-zCDP at ``delta_conv`` by Bun & Steinke (2016),
        Proposition 1.3: ``rho + 2 sqrt(rho log(1/delta))``; the filter continues while it is at
        most the budget's epsilon.

    Examples
    --------
    >>> round(whitehouse2023_statistic([0.1] * 10, 1e-6), 4)
    1.7123
    """
    eps = _check_epsilons(epsilons)
    d = check_delta(delta, allow_zero=False)
    with np.errstate(over="ignore", invalid="ignore"):
        squares = math.fsum(eps**2)
        return _finite(math.sqrt(2 * -math.log(d) * squares) + squares / 2)


class PrivacyFilter(LedgerBudget):
    """A budget (epsilon, delta) for a sequence of adaptively chosen (epsilon_i, delta_i) queries.

    Parameters
    ----------
    epsilon : float
        The budget's epsilon, finite, > 0.
    delta : float, default 0.0
        The budget's delta in [0, 1) (``"basic"``), in (0, 1/e) (``"rogers2016"``) or in (0, 1)
        (``"whitehouse2023"``).
    rule : {"basic", "rogers2016", "whitehouse2023"}, keyword-only
        The stopping rule (see :mod:`dplib.accounting.filters`).
    conversion_share : float, keyword-only
        ``"whitehouse2023"`` only: the share of ``delta`` spent on converting zCDP to (epsilon,
        delta), in (0, 1); the rest bounds ``sum delta_i``. Default 1/2.

    Attributes
    ----------
    budget : (float, float)
    ledger : tuple of Spend
        Every admitted request, in order.

    Examples
    --------
    >>> f = PrivacyFilter(1.0)
    >>> f.spend(0.6)
    >>> f.can_spend(0.5)
    False
    >>> f.spend(0.4)

    With an answer-dependent next query, the filter stays valid where a composition theorem for
    fixed parameters need not (Rogers et al. 2016):

    >>> g = PrivacyFilter(1.0, 1e-6, rule="whitehouse2023")
    >>> admitted = 0
    >>> while g.can_spend(0.01):
    ...     g.spend(0.01)
    ...     admitted += 1
    >>> admitted  # sqrt(2 log(2e6) k) 0.01 + k 0.01**2 / 2 <= 1 (basic composition: 100)
    333
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        rule: str = "basic",
        conversion_share: float = 0.5,
    ) -> None:
        if not isinstance(rule, str):
            raise TypeError(f"rule must be one of {FILTER_RULES}, got {type(rule).__name__}")
        if rule not in FILTER_RULES:
            raise ValueError(f"rule must be one of {FILTER_RULES}, got {rule!r}")
        eps = check_epsilon(epsilon)
        dlt = check_delta(delta, allow_zero=rule == "basic")
        if rule == "rogers2016" and dlt >= 1 / math.e:
            raise ValueError(f"delta must be in (0, 1/e) for rule='rogers2016', got {delta!r}")
        share = check_probability(
            conversion_share, "conversion_share", low_open=True, high_open=True
        )
        if rule == "whitehouse2023" and min(dlt * share, dlt - dlt * share) < 1e-300:
            raise ValueError(
                "delta * conversion_share and delta * (1 - conversion_share) must both be at least "
                f"1e-300 for rule='whitehouse2023', got delta={delta!r}, "
                f"conversion_share={conversion_share!r}"
            )
        super().__init__()
        self._budget = (eps, dlt)
        self._rule = rule
        self._share = share

    @property
    def budget(self) -> tuple[float, float]:
        return self._budget

    @property
    def rule(self) -> str:
        return self._rule

    @property
    def spent(self) -> tuple[float, float]:
        """``(sum epsilon_i, sum delta_i)`` of the admitted requests (what basic composition adds).

        A realised figure: a privacy guarantee only when the list of requests was fixed in
        advance. When each request depends on earlier answers, the guarantee of the run is the
        filter's :attr:`budget` (certifying the realised sum would be a privacy odometer, Rogers,
        Roth, Ullman & Vadhan 2016).
        """
        return self._sums(self.events)

    @staticmethod
    def _sums(events: tuple[PrivacyEvent, ...] | list[PrivacyEvent]) -> tuple[float, float]:
        eps = math.fsum(e.epsilon for e in events)
        dlt = math.fsum(e.delta for e in events if isinstance(e, ApproxDpEvent))
        return eps, dlt

    def _rule_refusal(self, events: list[PrivacyEvent]) -> str | None:
        eps_g, delta_g = self._budget
        eps_sum, delta_sum = self._sums(events)
        epsilons = [e.epsilon for e in events]
        if self._rule == "basic":
            if eps_sum > eps_g * (1 + _SLACK):
                return f"the epsilons would add up to {eps_sum:.6g} > epsilon={eps_g:g}"
            if delta_sum > delta_g * (1 + _SLACK):
                return f"the deltas would add up to {delta_sum:.6g} > delta={delta_g:g}"
            return None
        if self._rule == "rogers2016":
            if delta_sum > delta_g / 2 * (1 + _SLACK):
                return f"the deltas would add up to {delta_sum:.6g} > delta/2={delta_g / 2:g}"
            try:
                k = rogers2016_statistic(epsilons, eps_g, delta_g)
            except ValueError:  # overflow: the request is far beyond any budget
                return f"the requested epsilon={epsilons[-1]:g} is far beyond epsilon={eps_g:g}"
            if k > eps_g * (1 + _SLACK):
                return f"Rogers et al.'s statistic K would be {k:.6g} > epsilon={eps_g:g}"
            return None
        conv = delta_g * self._share
        steps = delta_g - conv
        if delta_sum > steps * (1 + _SLACK):
            return f"the deltas would add up to {delta_sum:.6g} > {steps:g} (the steps' share)"
        try:
            stat = whitehouse2023_statistic(epsilons, conv)
        except ValueError:  # overflow: the request is far beyond any budget
            return f"the requested epsilon={epsilons[-1]:g} is far beyond epsilon={eps_g:g}"
        if stat > eps_g * (1 + _SLACK):
            return (
                f"sqrt(2 log(1/delta_conv) sum eps^2) + sum eps^2 / 2 would be {stat:.6g} > "
                f"epsilon={eps_g:g}"
            )
        return None

    @staticmethod
    def _as_event(epsilon: float, delta: float) -> PrivacyEvent:
        eps, dlt = check_epsilon(epsilon), check_delta(delta)
        return ApproxDpEvent(eps, dlt) if dlt > 0 else PureDpEvent(eps)

    def can_spend(self, epsilon: float, delta: float = 0.0) -> bool:
        """Whether :meth:`spend` would admit this request (validates its arguments)."""
        return self._rule_refusal([*self.events, self._as_event(epsilon, delta)]) is None

    def spend(self, epsilon: float, delta: float = 0.0, *, label: str | None = None) -> None:
        """Admit an ``(epsilon, delta)``-DP request, or raise and change nothing.

        Call it *before* the release it pays for, so that a refusal releases nothing.

        Raises
        ------
        ValueError, TypeError
            For epsilon not finite and > 0, delta outside [0, 1), a label that is not a str.
        BudgetExceededError
            If the filter's rule refuses the request; the ledger is unchanged.
        """
        self.spend_event(self._as_event(epsilon, delta), label=label)

    def _check_event(self, event: object) -> None:
        if not isinstance(event, PureDpEvent | ApproxDpEvent):
            raise TypeError(
                "event must be a PureDpEvent or an ApproxDpEvent (a privacy filter composes "
                f"(epsilon, delta) pairs; use ZcdpFilter for zCDP), got {type(event).__name__}"
            )

    def _judge(self, event: PrivacyEvent) -> tuple[str | None, None]:
        refusal = self._rule_refusal([*self.events, event])
        return (
            None if refusal is None else f"request refused by the {self._rule} filter: {refusal}"
        ), None

    def __repr__(self) -> str:
        eps, dlt = self.spent
        return (
            f"PrivacyFilter(epsilon={self._budget[0]:g}, delta={self._budget[1]:g}, "
            f"rule={self._rule!r}; {len(self._ledger)} requests, sum epsilon={eps:g})"
        )


class ZcdpFilter(LedgerBudget):
    """A zero-concentrated DP budget ``rho`` for adaptively chosen zCDP releases.

    Parameters
    ----------
    rho : float
        The budget, finite, > 0.

    Notes
    -----
    Events it understands, with their zCDP parameter: :class:`ZcdpEvent` (``rho``),
    :class:`GaussianEvent` (``count / (2 sigma^2)``, Bun & Steinke 2016, Proposition 1.6) and
    :class:`PureDpEvent` (``epsilon^2 / 2``, their Proposition 1.4). An (epsilon, delta) event with
    ``delta > 0`` has no zCDP parameter and is refused with a TypeError. Validity under full
    adaptivity: Feldman & Zrnic (2021)'s Rényi filter at every order; Whitehouse et
    al. (2023). A refused request costs nothing (admission depends on the requested costs, never
    on the data).

    What the filter certifies is the budget: however the requests were chosen, the whole run is
    ``rho``-zCDP, and :meth:`epsilon` converts ``rho`` (the budget) to (epsilon, delta).
    :meth:`spent_epsilon` converts the *realised* ``sum rho_i`` instead; that figure is a
    guarantee only when the list of requests was fixed in advance (then the run is plain
    composition). Under adaptive choice the realised sum is random, and certifying it is a
    privacy odometer, not a filter, with a larger cost (Rogers, Roth, Ullman & Vadhan 2016;
    Whitehouse, Ramdas, Rogers & Wu 2023).

    Examples
    --------
    >>> f = ZcdpFilter(0.5)
    >>> f.spend(0.2)
    >>> f.spend_event(GaussianEvent(noise_multiplier=2.0))  # rho = 1 / (2 * 4) = 0.125
    >>> round(f.spent, 3)
    0.325
    >>> round(f.epsilon(1e-5, method="classic"), 3)  # the budget: rho + 2 sqrt(rho log(1/delta))
    5.299
    >>> round(f.epsilon(1e-5), 3)  # the tighter conversion of Canonne, Kamath & Steinke 2020
    4.728
    >>> round(f.spent_epsilon(1e-5, method="classic"), 3)  # requests fixed in advance only
    4.194
    """

    def __init__(self, rho: float) -> None:
        super().__init__()
        self._rho = check_positive(rho, "rho")

    @property
    def budget(self) -> float:
        return self._rho

    @property
    def spent(self) -> float:
        """``sum rho_i`` of the admitted events."""
        return math.fsum(_rho_of(entry.event) for entry in self._ledger)

    @property
    def remaining(self) -> float:
        return max(self._rho - self.spent, 0.0)

    def can_spend(self, rho: float) -> bool:
        """Whether :meth:`spend` would admit ``rho`` (validates it)."""
        value = check_positive(rho, "rho")
        return self.spent + value <= self._rho * (1 + _SLACK)

    def spend(self, rho: float, *, label: str | None = None) -> None:
        """Admit a ``rho``-zCDP release, or raise BudgetExceededError and change nothing."""
        self.spend_event(ZcdpEvent(rho), label=label)

    def _check_event(self, event: object) -> None:
        super()._check_event(event)
        _rho_of(event)  # a TypeError for an event with no zCDP parameter

    def _judge(self, event: PrivacyEvent) -> tuple[str | None, None]:
        rho = _rho_of(event)
        if self.spent + rho > self._rho * (1 + _SLACK):
            return (
                f"spending rho={rho:g} would exceed the zCDP budget: {self.remaining:g} of "
                f"rho={self._rho:g} remains"
            ), None
        return None, None

    def epsilon(self, delta: float, *, method: str = "tight") -> float:
        """The filter's guarantee at ``delta``: its budget ``rho`` converted by :func:`dplib.zcdp_to_dp`.

        Valid however the requests were chosen, also each after seeing the previous answers
        (Feldman & Zrnic 2021; Whitehouse et al. 2023): the whole run is ``rho``-zCDP.
        """
        dlt = check_delta(delta, allow_zero=False)
        return zcdp_to_dp(self._rho, dlt, method=method)

    def spent_epsilon(self, delta: float, *, method: str = "tight") -> float:
        """The realised spend ``sum rho_i`` converted at ``delta`` (0 before any spend).

        Valid **only for a list of requests fixed in advance**, where the run is the composition
        of the admitted releases. When requests depend on earlier answers the realised sum is
        random; certifying it is a privacy odometer, which costs more than this (Rogers, Roth,
        Ullman & Vadhan 2016; Whitehouse et al. 2023), and the run's guarantee is
        :meth:`epsilon` (the budget).
        """
        dlt = check_delta(delta, allow_zero=False)
        spent = self.spent
        return 0.0 if spent == 0 else zcdp_to_dp(spent, dlt, method=method)

    def __repr__(self) -> str:
        return f"ZcdpFilter(rho={self._rho:g}; spent rho={self.spent:g} in {len(self._ledger)} releases)"


def _rho_of(event: PrivacyEvent) -> float:
    if isinstance(event, ZcdpEvent):
        return event.rho
    if isinstance(event, GaussianEvent):
        return event.count / (2 * event.noise_multiplier**2)
    if isinstance(event, PureDpEvent):
        return event.epsilon**2 / 2
    raise TypeError(
        "event must be a ZcdpEvent, GaussianEvent or PureDpEvent (one with a zCDP parameter), "
        f"got {type(event).__name__}"
    )


# --------------------------------------------------------------------------- the counterexample


@dataclass(frozen=True)
class AdaptiveCounterexample:
    """The numbers of :func:`adaptive_composition_counterexample`.

    Attributes
    ----------
    epsilon, delta : float
        The budget both fixed sequences meet exactly.
    first_epsilon : float
        The first query: randomized response at this epsilon.
    second_epsilon : float
        The second query after a "yes" (the answer that favours D): randomized response here.
    leak_probability : float
        The second query after a "no": reveal the bit with this probability (a
        ``(0, leak)``-DP mechanism), else output nothing.
    delta_rr_then_rr, delta_rr_then_leak : float
        The exact delta at ``epsilon`` of each *fixed* sequence (both equal ``delta``).
    delta_adaptive : float
        The exact delta at ``epsilon`` of the interaction that picks the second query from the
        first answer: ``delta (2 - p)``, ``p = e^eps1 / (1 + e^eps1)``, above the budget.
    """

    epsilon: float
    delta: float
    first_epsilon: float
    second_epsilon: float
    leak_probability: float
    delta_rr_then_rr: float
    delta_rr_then_leak: float
    delta_adaptive: float


def _rr(eps: float) -> tuple[np.ndarray, np.ndarray]:
    p = math.exp(eps) / (1 + math.exp(eps))  # P(report the true bit)
    return np.array([p, 1 - p]), np.array([1 - p, p])  # outputs (1, 0) when D has 1, D' has 0


def _leak(lam: float) -> tuple[np.ndarray, np.ndarray]:
    return np.array([lam, 0.0, 1 - lam]), np.array([0.0, lam, 1 - lam])  # (1, 0, nothing)


def _delta_at(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """Exact privacy profile: max over both orders of ``sum (P(o) - e^eps Q(o))_+``."""
    one = np.clip(p - math.exp(eps) * q, 0, None).sum()
    two = np.clip(q - math.exp(eps) * p, 0, None).sum()
    return float(max(one, two))


def adaptive_composition_counterexample(
    epsilon: float = 1.0, delta: float = 0.05, first_epsilon: float = 0.5
) -> AdaptiveCounterexample:
    """Two fixed query sequences each within (epsilon, delta); choosing between them adaptively is not.

    Parameters
    ----------
    epsilon : float
        The budget's epsilon, finite, > 0.
    delta : float
        The budget's delta, in (0, 1/2).
    first_epsilon : float
        The first query's epsilon, in (0, epsilon).

    Returns
    -------
    AdaptiveCounterexample
        Exact figures (enumeration of every output): each of the two fixed sequences is exactly
        (epsilon, delta)-DP, yet the adaptive interaction has delta ``delta (2 - p)`` at the same
        epsilon.

    Notes
    -----
    One person's bit is 1 in D and 0 in D'. Query 1 is randomized response at ``eps1``
    (``eps1``-DP; the answer "1" has privacy loss ``+eps1``, with probability ``p``). Query 2 is
    one of two mechanisms whose privacy profiles ``delta_M(s)`` cross:

    * ``A``: randomized response at ``eps2``, chosen so that ``p delta_A(epsilon - eps1) =
      delta``; its profile is large at small ``s`` and 0 from ``s >= eps2``;
    * ``B``: reveal the bit with probability ``delta``, a flat profile ``delta_B(s) = delta``.

    Composed in a fixed order, "RR then A" and "RR then B" each have delta exactly ``delta`` at
    ``epsilon`` (the exact profiles, as a tight accountant computes them), so a filter that
    composes the *realised* mechanisms tightly admits both. The analyst who asks A after the
    answer "1" (little budget left: ``s = epsilon - eps1``) and B after "0" (``s = epsilon +
    eps1``, where A would cost nothing) gets, summing over the first answer, ``p delta_A(epsilon
    - eps1) + (1 - p) delta_B(epsilon + eps1) = delta + (1 - p) delta``: the interaction is not
    (epsilon, delta)-DP. Composition theorems are proved for parameters fixed in advance; with
    adaptively chosen parameters only a privacy filter's stopping rule is valid (Rogers, Roth,
    Ullman & Vadhan 2016). The filters of this module (and
    :func:`whitehouse2023_statistic`, advanced composition's rate in filter form) are valid;
    natural filters built on tight, profile-based composition are not in general (Tran, Koskela,
    Räisä & Honkela 2026, "f-Differential Privacy Filters: Validity and Approximate Solutions",
    arXiv:2602.06756), as this two-query example shows exactly.

    Examples
    --------
    >>> ex = adaptive_composition_counterexample()
    >>> round(ex.delta_rr_then_rr, 6), round(ex.delta_rr_then_leak, 6), round(ex.delta_adaptive, 4)
    (0.05, 0.05, 0.0689)
    """
    eps = check_epsilon(epsilon)
    if eps > 50:
        raise ValueError(
            f"epsilon must be at most 50 here (e**epsilon stays exact enough), got {epsilon!r}"
        )
    dlt = check_delta(delta, allow_zero=False)
    if dlt >= 0.5:
        raise ValueError(f"delta must be in (0, 1/2), got {delta!r}")
    eps1 = check_epsilon(first_epsilon, "first_epsilon")
    if eps1 >= eps:
        raise ValueError(f"first_epsilon must be in (0, epsilon={eps:g}), got {first_epsilon!r}")
    first_d, first_dp = _rr(eps1)
    p = float(first_d[0])
    # delta_A(s) = P_A - e^s (1 - P_A) for s < eps2: solve p delta_A(eps - eps1) = delta
    s = eps - eps1
    target = dlt / p
    p_a = (target + math.exp(s)) / (1 + math.exp(s))
    if not p_a < 1:
        raise ValueError(
            f"delta is too large for first_epsilon={eps1:g}: no randomized response reaches it, "
            f"got delta={delta!r}"
        )
    eps2 = math.log(p_a / (1 - p_a))
    second_d, second_dp = _rr(eps2)
    leak_d, leak_dp = _leak(dlt)
    fixed_a = _delta_at(
        np.outer(first_d, second_d).ravel(), np.outer(first_dp, second_dp).ravel(), eps
    )
    fixed_b = _delta_at(np.outer(first_d, leak_d).ravel(), np.outer(first_dp, leak_dp).ravel(), eps)
    # adaptive: after answer 1 (index 0) ask A, after answer 0 (index 1) ask B
    adaptive_d = np.concatenate([first_d[0] * second_d, first_d[1] * leak_d])
    adaptive_dp = np.concatenate([first_dp[0] * second_dp, first_dp[1] * leak_dp])
    return AdaptiveCounterexample(
        epsilon=eps,
        delta=dlt,
        first_epsilon=eps1,
        second_epsilon=eps2,
        leak_probability=dlt,
        delta_rr_then_rr=fixed_a,
        delta_rr_then_leak=fixed_b,
        delta_adaptive=_delta_at(adaptive_d, adaptive_dp, eps),
    )
