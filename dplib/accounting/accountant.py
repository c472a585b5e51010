"""A privacy budget that refuses to be overspent, and composes as tightly as it can.

:class:`PrivacyAccountant` keeps a ledger of privacy events (:mod:`dplib.accounting.events`) and
answers one question: what (epsilon, delta) guarantee do all of them together give? It raises
:class:`~dplib.errors.BudgetExceededError` *before* a release that would exceed the budget, leaving
its state exactly as it was.

How events compose (the smallest valid epsilon wins):

* pure and (epsilon, delta) events alone: basic sequential composition, epsilons and deltas add
  (Dwork & Roth 2014, Theorem 3.16);
* Gaussian and subsampled-Gaussian events: their Renyi-DP curves add (Mironov 2017, Proposition 1)
  and are converted to (epsilon, delta) with the tight conversion (Balle et al. 2020, Theorem 21);
  when they all share one (sampling rate, noise multiplier), the privacy-loss-distribution
  accountant is tried too (Koskela et al. 2020; dp_accounting's PLD). They are converted at the
  part of the delta budget that explicit (epsilon, delta) spends have not used;
* zCDP events (:class:`~dplib.accounting.events.ZcdpEvent`) join the RDP composition with the
  curve ``alpha rho`` (Bun & Steinke 2016, Definition 1.1; Mironov 2017, Proposition 1);
* pure events either add to that (basic composition) or join the RDP composition as
  ``min(eps, alpha eps^2 / 2)``-RDP (epsilon-DP implies eps^2/2-zCDP, Bun & Steinke 2016,
  Proposition 1.4); whichever is smaller.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dplib._validation import check_bool, check_delta, check_epsilon, check_probability
from dplib.accounting._ledger import LedgerBudget, Spend
from dplib.accounting.events import (
    ApproxDpEvent,
    GaussianEvent,
    PrivacyEvent,
    PureDpEvent,
    SampledGaussianEvent,
    ZcdpEvent,
)
from dplib.accounting.pld import auto_epsilon
from dplib.accounting.rdp import (
    DEFAULT_RDP_ORDERS,
    rdp_gaussian,
    rdp_subsampled_gaussian,
    rdp_to_dp,
)

__all__ = ["Spend", "PrivacyAccountant"]

# Spends are compared with the budget after exact summation (math.fsum); this relative slack only
# absorbs the rounding of the decimal inputs themselves (0.1 + 0.2 against a budget of 0.3).
_RELATIVE_SLACK = 1e-12
_ORDERS = np.asarray(DEFAULT_RDP_ORDERS)


def _gaussian_rdp(event: GaussianEvent | SampledGaussianEvent) -> np.ndarray:
    if isinstance(event, GaussianEvent):
        return event.count * rdp_gaussian(event.noise_multiplier, _ORDERS)
    return event.count * rdp_subsampled_gaussian(
        event.sampling_rate, event.noise_multiplier, _ORDERS
    )


def _pure_rdp(epsilon: float) -> np.ndarray:
    # epsilon-DP => (eps^2 / 2)-zCDP => RDP alpha eps^2 / 2; and trivially RDP <= eps.
    return np.minimum(epsilon, _ORDERS * epsilon**2 / 2)


def _composed_epsilon(
    events: Sequence[PrivacyEvent], delta: float, use_pld: bool
) -> tuple[float, float]:
    """(epsilon, delta) of the sequential composition of ``events`` at a total ``delta``."""
    pure = math.fsum(e.epsilon for e in events if isinstance(e, PureDpEvent))
    approx_eps = math.fsum(e.epsilon for e in events if isinstance(e, ApproxDpEvent))
    approx_delta = math.fsum(e.delta for e in events if isinstance(e, ApproxDpEvent))
    gaussians = [e for e in events if isinstance(e, GaussianEvent | SampledGaussianEvent)]
    # rho-zCDP events join the RDP composition as the curve alpha * rho (Bun & Steinke 2016)
    zcdp = math.fsum(e.rho for e in events if isinstance(e, ZcdpEvent))
    if not gaussians and zcdp == 0:
        return pure + approx_eps, approx_delta
    delta_left = delta - approx_delta
    if delta_left <= 0:
        return math.inf, delta
    gaussian_rdp = sum(_gaussian_rdp(e) for e in gaussians) + zcdp * _ORDERS
    candidates = [pure + rdp_to_dp(_ORDERS, gaussian_rdp, delta_left)[0]]
    pure_events = [e.epsilon for e in events if isinstance(e, PureDpEvent)]
    if pure_events:
        joint = gaussian_rdp + sum(_pure_rdp(eps) for eps in pure_events)
        candidates.append(rdp_to_dp(_ORDERS, joint, delta_left)[0])
    parameters = {
        (1.0, e.noise_multiplier)
        if isinstance(e, GaussianEvent)
        else (e.sampling_rate, e.noise_multiplier)
        for e in gaussians
    }
    if use_pld and len(parameters) == 1 and zcdp == 0:
        (q, sigma), steps = parameters.pop(), sum(e.count for e in gaussians)
        # The grid is chosen here (finest that fits in memory; each gives a valid bound); when
        # none fits, the RDP candidates stand alone.
        found = auto_epsilon(q, min(sigma, 1e100), steps, delta_left)
        if found is not None:
            candidates.append(pure + found[0])
    return approx_eps + min(candidates), delta


class PrivacyAccountant(LedgerBudget):
    """Track the privacy loss of a sequence of releases against a fixed (epsilon, delta) budget.

    Parameters
    ----------
    epsilon : float
        Total epsilon budget, finite and > 0.
    delta : float, default 0.0
        Total delta budget, in [0, 1). With 0, only pure-epsilon spends are accepted.
    use_pld : bool, default True
        Also try the privacy-loss-distribution accountant when every Gaussian event shares one
        (sampling rate, noise multiplier). Tighter than RDP; about a second per evaluation. Its
        grid is the finest of 1e-4, 1e-3, ..., 1 that fits in memory (every grid gives a valid
        upper bound); when none does, RDP alone is used.

    Attributes
    ----------
    budget : tuple of float
        ``(epsilon, delta)`` as given.
    ledger : tuple of Spend
        Every accepted event with its label, in order.

    Examples
    --------
    >>> accountant = PrivacyAccountant(epsilon=1.0)
    >>> accountant.spend(0.4, label="count")
    >>> accountant.remaining
    (0.6, 0.0)
    >>> accountant.spend(0.7)
    Traceback (most recent call last):
    ...
    dplib.errors.BudgetExceededError: spending epsilon=0.7 would exceed the budget: ...

    A DP-SGD run is one event; the accountant reports the tightest epsilon it can prove:

    >>> training = PrivacyAccountant(epsilon=3.0, delta=1e-5)
    >>> training.spend_gaussian(1.1, sampling_rate=256 / 60000, count=14062, label="MNIST")
    >>> round(training.spent[0], 2)
    2.38
    """

    def __init__(self, epsilon: float, delta: float = 0.0, *, use_pld: bool = True) -> None:
        super().__init__()
        self._budget = (check_epsilon(epsilon), check_delta(delta))
        self._use_pld = check_bool(use_pld, "use_pld")
        self._spent = (0.0, 0.0)

    @property
    def budget(self) -> tuple[float, float]:
        return self._budget

    @property
    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` guaranteed so far by the tightest composition available.

        With Gaussian events, ``delta`` is the whole delta budget: the part not taken by explicit
        (epsilon, delta) spends is what their privacy curves are converted at.
        """
        return self._spent

    @property
    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` still available (never negative)."""
        (eps_budget, delta_budget), (eps_spent, delta_spent) = self._budget, self._spent
        return max(eps_budget - eps_spent, 0.0), max(delta_budget - delta_spent, 0.0)

    def get_epsilon(self, delta: float | None = None) -> float:
        """Epsilon of everything spent so far at ``delta`` (default: the budget's delta)."""
        delta = self._budget[1] if delta is None else check_delta(delta)
        return _composed_epsilon(self.events, delta, self._use_pld)[0]

    def can_spend(self, epsilon: float, delta: float = 0.0) -> bool:
        """Whether :meth:`spend` would accept this charge (validates its arguments)."""
        return self._judge(self._as_event(epsilon, delta))[0] is None

    def spend(self, epsilon: float, delta: float = 0.0, *, label: str | None = None) -> None:
        """Charge an ``(epsilon, delta)``-DP release to the budget, or refuse, changing nothing.

        Call it *before* the release it pays for, so that a refusal releases nothing.

        Raises
        ------
        ValueError
            If epsilon is not finite and > 0 or delta is outside [0, 1).
        TypeError
            If label is neither a str nor None.
        BudgetExceededError
            If the charge would take the spent epsilon or delta above the budget. The ledger is
            unchanged.
        """
        self.spend_event(self._as_event(epsilon, delta), label=label)

    def spend_gaussian(
        self,
        noise_multiplier: float,
        *,
        sampling_rate: float = 1.0,
        count: int = 1,
        label: str | None = None,
    ) -> None:
        """Charge ``count`` (Poisson-subsampled) Gaussian releases, e.g. a DP-SGD run, or refuse.

        ``noise_multiplier`` is the noise standard deviation over the L2 sensitivity (the clipping
        norm in DP-SGD). With ``sampling_rate < 1`` each step sees a Poisson sample of the data.
        """
        sampling_rate = check_probability(sampling_rate, "sampling_rate", low_open=True)
        if sampling_rate == 1.0:
            event: PrivacyEvent = GaussianEvent(noise_multiplier, count)
        else:
            event = SampledGaussianEvent(sampling_rate, noise_multiplier, count)
        self.spend_event(event, label=label)

    def spend_zcdp(self, rho: float, *, label: str | None = None) -> None:
        """Charge a ``rho``-zCDP release (its RDP curve ``alpha rho`` joins the Gaussian ones), or refuse."""
        self.spend_event(ZcdpEvent(rho), label=label)

    def _admitted(self, event: PrivacyEvent, outcome: object) -> None:
        self._spent = outcome  # the composition _judge computed for the ledger with ``event``

    @staticmethod
    def _as_event(epsilon: float, delta: float) -> PrivacyEvent:
        epsilon, delta = check_epsilon(epsilon), check_delta(delta)
        return ApproxDpEvent(epsilon, delta) if delta > 0 else PureDpEvent(epsilon)

    def _judge(self, event: PrivacyEvent) -> tuple[str | None, tuple[float, float]]:
        eps_budget, delta_budget = self._budget
        new_eps, new_delta = _composed_epsilon([*self.events, event], delta_budget, self._use_pld)
        eps_left, delta_left = self.remaining
        what = (
            f"epsilon={event.epsilon:g}"
            if isinstance(event, PureDpEvent)
            else f"epsilon={event.epsilon:g}, delta={event.delta:g}"
            if isinstance(event, ApproxDpEvent)
            else repr(event)
        )
        if new_delta > delta_budget * (1 + _RELATIVE_SLACK):
            return (
                f"spending {what} would exceed the budget: {delta_left:g} of delta={delta_budget:g} "
                "remains",
                self._spent,
            )
        if new_eps == math.inf:
            return (
                f"spending {what} is refused: Gaussian releases are converted to (epsilon, delta) "
                f"at the delta budget left after explicit (epsilon, delta) spends, and none is left "
                f"of delta={delta_budget:g}; give the accountant a delta > 0",
                self._spent,
            )
        if new_eps > eps_budget * (1 + _RELATIVE_SLACK):
            return (
                f"spending {what} would exceed the budget: {eps_left:g} of epsilon={eps_budget:g} "
                f"remains (it would bring the total to epsilon={new_eps:.4g})",
                self._spent,
            )
        return None, (new_eps, new_delta)

    def __repr__(self) -> str:
        eps, delta = self._spent
        return (
            f"PrivacyAccountant(epsilon={self._budget[0]:g}, delta={self._budget[1]:g}; "
            f"spent epsilon={eps:g}, delta={delta:g} in {len(self._ledger)} releases)"
        )
