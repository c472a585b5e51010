"""What every budget of dplib shares: a ledger of admitted privacy events and one way to spend.

:class:`LedgerBudget` is the base of :class:`~dplib.accounting.accountant.PrivacyAccountant`,
:class:`~dplib.accounting.filters.PrivacyFilter` and :class:`~dplib.accounting.filters.ZcdpFilter`,
as ``dp_accounting.PrivacyAccountant`` is of Google's accountants: a privacy event is data, and a
budget interprets it. The base keeps the ledger and spends in one order, the same for all three:
check the event's type and the label, ask the subclass's rule, then either raise
:class:`~dplib.errors.BudgetExceededError` with the state untouched or append the event. A
subclass says which events it understands (:meth:`LedgerBudget._check_event`), when it refuses
(:meth:`LedgerBudget._judge`) and what it updates on admission (:meth:`LedgerBudget._admitted`).
"""

from __future__ import annotations

from dataclasses import dataclass

from dplib.accounting.events import PrivacyEvent
from dplib.errors import BudgetExceededError

__all__ = ["Spend", "LedgerBudget", "check_label"]


@dataclass(frozen=True)
class Spend:
    """One entry of the ledger: an event and an optional label."""

    event: PrivacyEvent
    label: str | None = None


def check_label(label: object) -> None:
    """A ledger label is a str or None."""
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a str or None, got {type(label).__name__}")


class LedgerBudget:
    """A budget with a ledger: spend an event, or refuse and change nothing."""

    def __init__(self) -> None:
        self._ledger: list[Spend] = []

    @property
    def ledger(self) -> tuple[Spend, ...]:
        """The admitted events with their labels, in the order they were spent."""
        return tuple(self._ledger)

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        """The admitted events, in the order they were spent."""
        return tuple(entry.event for entry in self._ledger)

    def spend_event(self, event: PrivacyEvent, *, label: str | None = None) -> None:
        """Charge a privacy event to the budget, or raise and change nothing.

        Call it *before* the release it pays for, so that a refusal releases nothing.

        Raises
        ------
        TypeError
            If ``event`` is not an event this budget understands, or ``label`` is neither a str
            nor None.
        BudgetExceededError
            If the budget's rule refuses the event; the ledger is unchanged.
        """
        self._check_event(event)
        check_label(label)
        refusal, outcome = self._judge(event)
        if refusal is not None:
            raise BudgetExceededError(refusal)
        self._ledger.append(Spend(event, label))
        self._admitted(event, outcome)

    def _check_event(self, event: object) -> None:
        """Raise TypeError unless this budget understands ``event``."""
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"event must be a dplib privacy event, got {type(event).__name__}")

    def _judge(self, event: PrivacyEvent) -> tuple[str | None, object]:  # pragma: no cover
        """``(why event would exceed the budget, or None to admit it; what admitting it gives)``:
        the second item is handed to :meth:`_admitted`, so a rule computes its state once."""
        raise NotImplementedError

    def _admitted(self, event: PrivacyEvent, outcome: object) -> None:
        """Update what the subclass keeps beside the ledger, once ``event`` is in it."""
