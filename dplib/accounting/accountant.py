"""A privacy budget that refuses to be overspent.

:class:`PrivacyAccountant` composes pure-epsilon and (epsilon, delta) spends sequentially
(Dwork & Roth 2014, Theorem 3.16: epsilons and deltas add up) and raises
:class:`~dplib.errors.BudgetExceededError` *before* a release that would exceed the budget,
leaving its state exactly as it was.

Each spend is recorded as a frozen :class:`Spend` (descriptions are data; the accountant holds the
state), in the spirit of Google's dp_accounting ``DpEvent`` / ``PrivacyAccountant`` split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dplib._validation import check_delta, check_epsilon
from dplib.errors import BudgetExceededError

__all__ = ["Spend", "PrivacyAccountant"]

# Spends are compared with the budget after exact summation (math.fsum); this relative slack only
# absorbs the rounding of the decimal inputs themselves (0.1 + 0.2 against a budget of 0.3).
_RELATIVE_SLACK = 1e-12


@dataclass(frozen=True)
class Spend:
    """One (epsilon, delta) charge against a budget, with an optional label for the ledger."""

    epsilon: float
    delta: float = 0.0
    label: str | None = None


class PrivacyAccountant:
    """Track the privacy loss of a sequence of releases against a fixed (epsilon, delta) budget.

    Parameters
    ----------
    epsilon : float
        Total epsilon budget, finite and > 0.
    delta : float, default 0.0
        Total delta budget, in [0, 1). With 0, only pure-epsilon spends are accepted.

    Attributes
    ----------
    budget : tuple of float
        ``(epsilon, delta)`` as given.
    ledger : tuple of Spend
        Every accepted spend, in order.

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
    """

    def __init__(self, epsilon: float, delta: float = 0.0) -> None:
        self._budget = (check_epsilon(epsilon), check_delta(delta))
        self._ledger: list[Spend] = []

    @property
    def budget(self) -> tuple[float, float]:
        return self._budget

    @property
    def ledger(self) -> tuple[Spend, ...]:
        return tuple(self._ledger)

    @property
    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent so far under basic sequential composition."""
        return (
            math.fsum(s.epsilon for s in self._ledger),
            math.fsum(s.delta for s in self._ledger),
        )

    @property
    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` still available (never negative)."""
        (eps_budget, delta_budget), (eps_spent, delta_spent) = self._budget, self.spent
        return max(eps_budget - eps_spent, 0.0), max(delta_budget - delta_spent, 0.0)

    def can_spend(self, epsilon: float, delta: float = 0.0) -> bool:
        """Whether :meth:`spend` would accept this charge (validates its arguments)."""
        charge = Spend(check_epsilon(epsilon), check_delta(delta))
        return self._excess(charge) is None

    def spend(self, epsilon: float, delta: float = 0.0, *, label: str | None = None) -> None:
        """Charge ``(epsilon, delta)`` to the budget, or refuse without changing anything.

        Call it *before* the release it pays for, so that a refusal releases nothing.

        Raises
        ------
        ValueError
            If epsilon is not finite and > 0 or delta is outside [0, 1).
        BudgetExceededError
            If the charge would take the spent epsilon or delta above the budget. The ledger is
            unchanged.
        """
        charge = Spend(check_epsilon(epsilon), check_delta(delta), label)
        excess = self._excess(charge)
        if excess is not None:
            raise BudgetExceededError(excess)
        self._ledger.append(charge)

    def _excess(self, charge: Spend) -> str | None:
        eps_budget, delta_budget = self._budget
        eps_spent, delta_spent = self.spent
        new_eps = math.fsum([eps_spent, charge.epsilon])
        new_delta = math.fsum([delta_spent, charge.delta])
        eps_left, delta_left = self.remaining
        if new_eps > eps_budget * (1 + _RELATIVE_SLACK):
            return (
                f"spending epsilon={charge.epsilon:g} would exceed the budget: "
                f"{eps_left:g} of epsilon={eps_budget:g} remains"
            )
        if new_delta > delta_budget * (1 + _RELATIVE_SLACK):
            return (
                f"spending delta={charge.delta:g} would exceed the budget: "
                f"{delta_left:g} of delta={delta_budget:g} remains"
            )
        return None

    def __repr__(self) -> str:
        eps, delta = self.spent
        return (
            f"PrivacyAccountant(epsilon={self._budget[0]:g}, delta={self._budget[1]:g}; "
            f"spent epsilon={eps:g}, delta={delta:g} in {len(self._ledger)} releases)"
        )
