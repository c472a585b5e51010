"""PrivacyAccountant: sequential composition and refusal without side effects."""

import math

import pytest

from dplib.accounting.accountant import PrivacyAccountant, Spend
from dplib.errors import BudgetExceededError


def test_spends_add_up_and_remaining_shrinks():
    accountant = PrivacyAccountant(1.0, 1e-5)
    accountant.spend(0.25, label="count")
    accountant.spend(0.5, 4e-6)
    assert accountant.spent == (0.75, 4e-6)
    assert accountant.remaining == pytest.approx((0.25, 6e-6))
    assert accountant.ledger == (Spend(0.25, 0.0, "count"), Spend(0.5, 4e-6, None))


def test_exact_budget_is_spendable_despite_rounding():
    # Ten spends of 0.1 add up to 0.9999999999999999 in naive float arithmetic, and 0.1 + 0.2
    # to 0.30000000000000004: the accountant sums exactly and accepts both exact budgets.
    accountant = PrivacyAccountant(1.0)
    for _ in range(10):
        accountant.spend(0.1)
    assert accountant.remaining[0] == pytest.approx(0.0, abs=1e-15)
    small = PrivacyAccountant(0.3)
    small.spend(0.1)
    small.spend(0.2)
    with pytest.raises(BudgetExceededError):
        small.spend(1e-9)


@pytest.mark.parametrize("epsilon, delta", [(0.6, 0.0), (0.1, 2e-5)])
def test_overspending_is_refused_and_changes_nothing(epsilon, delta):
    accountant = PrivacyAccountant(1.0, 1e-5)
    accountant.spend(0.5)
    before = (accountant.spent, accountant.remaining, accountant.ledger)
    assert not accountant.can_spend(epsilon, delta)
    with pytest.raises(BudgetExceededError, match="would exceed the budget") as info:
        accountant.spend(epsilon, delta)
    assert isinstance(info.value, ValueError)  # callers can catch ValueError
    assert (accountant.spent, accountant.remaining, accountant.ledger) == before
    accountant.spend(0.5)  # what does fit is still accepted afterwards
    assert accountant.remaining[0] == 0.0


def test_pure_budget_refuses_any_delta():
    accountant = PrivacyAccountant(2.0)
    with pytest.raises(BudgetExceededError, match="delta"):
        accountant.spend(0.1, 1e-9)
    assert accountant.spent == (0.0, 0.0)


@pytest.mark.parametrize(
    "args, message",
    [
        ((0.0,), "epsilon must be a finite number > 0"),
        ((math.inf,), "epsilon must be a finite number > 0"),
        ((math.nan,), "epsilon must be a finite number > 0"),
        ((1.0, 1.0), r"delta must be in \[0, 1\)"),
        ((1.0, -0.1), r"delta must be in \[0, 1\)"),
    ],
)
def test_bad_budget_is_refused(args, message):
    with pytest.raises(ValueError, match=message):
        PrivacyAccountant(*args)


@pytest.mark.parametrize(
    "args, message",
    [
        ((-0.1,), "epsilon must be a finite number > 0"),
        ((math.nan,), "epsilon must be a finite number > 0"),
        ((0.1, math.nan), r"delta must be in \[0, 1\)"),
    ],
)
def test_bad_spend_is_refused_without_state_change(args, message):
    accountant = PrivacyAccountant(1.0, 1e-6)
    with pytest.raises(ValueError, match=message):
        accountant.spend(*args)
    assert accountant.ledger == ()


def test_ledger_entries_are_immutable():
    accountant = PrivacyAccountant(1.0)
    accountant.spend(0.5)
    with pytest.raises(AttributeError):
        accountant.ledger[0].epsilon = 0.0
