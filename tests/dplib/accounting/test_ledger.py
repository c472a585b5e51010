"""Tests of dplib.accounting._ledger: the ledger and the one spend order every budget shares."""

from __future__ import annotations

import pytest

from dplib.accounting._ledger import LedgerBudget, Spend, check_label
from dplib.accounting.accountant import PrivacyAccountant
from dplib.accounting.events import ApproxDpEvent, GaussianEvent, PureDpEvent, ZcdpEvent
from dplib.accounting.filters import PrivacyFilter, ZcdpFilter
from dplib.errors import BudgetExceededError


class _AtMostTwo(LedgerBudget):
    """A toy rule: two events at most; counts what it admitted beside the ledger."""

    def __init__(self) -> None:
        super().__init__()
        self.admitted = 0

    def _judge(self, event):
        return ("two already" if len(self._ledger) >= 2 else None), len(self._ledger) + 1

    def _admitted(self, event, outcome):
        self.admitted = outcome


def test_the_base_admits_in_order_hands_the_outcome_over_and_refuses_changing_nothing():
    budget = _AtMostTwo()
    first, second = PureDpEvent(0.1), ZcdpEvent(0.2)
    budget.spend_event(first, label="a")
    budget.spend_event(second)
    assert budget.ledger == (Spend(first, "a"), Spend(second, None))
    assert budget.events == (first, second) and budget.admitted == 2
    with pytest.raises(BudgetExceededError, match="two already"):
        budget.spend_event(PureDpEvent(0.3))
    assert budget.events == (first, second) and budget.admitted == 2


@pytest.mark.parametrize("bad", [3, b"x", ["x"]])
def test_a_label_is_a_str_or_none(bad):
    with pytest.raises(TypeError, match="label"):
        check_label(bad)
    check_label(None)
    check_label("ok")


def _budgets():
    return [PrivacyAccountant(1.0, 1e-6), PrivacyFilter(1.0, 1e-6), ZcdpFilter(0.5)]


@pytest.mark.parametrize("budget", _budgets(), ids=lambda b: type(b).__name__)
def test_every_budget_checks_the_event_and_the_label_before_its_rule_and_keeps_its_ledger(budget):
    with pytest.raises(TypeError, match="event"):
        budget.spend_event("epsilon=1")
    with pytest.raises(TypeError, match="label"):
        budget.spend_event(PureDpEvent(0.1), label=7)
    assert budget.ledger == ()
    budget.spend_event(PureDpEvent(0.1), label="count")
    assert budget.ledger == (Spend(PureDpEvent(0.1), "count"),)
    before = budget.ledger
    with pytest.raises(BudgetExceededError):
        budget.spend_event(PureDpEvent(50.0))
    assert budget.ledger == before


def test_each_budget_says_which_events_it_understands():
    with pytest.raises(TypeError, match="ZcdpFilter"):
        PrivacyFilter(1.0, 1e-6).spend_event(GaussianEvent(1.0))
    with pytest.raises(TypeError):
        ZcdpFilter(1.0).spend_event(ApproxDpEvent(0.1, 1e-7))
    accountant = PrivacyAccountant(5.0, 1e-5)
    accountant.spend_event(GaussianEvent(2.0))
    assert accountant.spent[0] > 0  # the accountant's composition is kept beside the ledger
