"""PrivacyAccountant: sequential composition and refusal without side effects."""

import math

import pytest
from reference_figures import MNIST as MNIST_SETTING

from dplib.accounting.accountant import PrivacyAccountant, Spend
from dplib.accounting.events import ApproxDpEvent, PureDpEvent
from dplib.errors import BudgetExceededError


def test_spends_add_up_and_remaining_shrinks():
    accountant = PrivacyAccountant(1.0, 1e-5)
    accountant.spend(0.25, label="count")
    accountant.spend(0.5, 4e-6)
    assert accountant.spent == (0.75, 4e-6)
    assert accountant.remaining == pytest.approx((0.25, 6e-6))
    assert accountant.ledger == (Spend(PureDpEvent(0.25), "count"), Spend(ApproxDpEvent(0.5, 4e-6), None))


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
        accountant.ledger[0].event.epsilon = 0.0
    with pytest.raises(AttributeError):
        accountant.ledger[0].label = "renamed"


# --- Gaussian and subsampled-Gaussian events ------------------------------------------------
# Reference figures: dp-accounting 0.6.0 on the MNIST DP-SGD setting (tests/support/reference_figures.py).
MNIST = dict(sampling_rate=MNIST_SETTING.q, count=MNIST_SETTING.steps)


def test_dpsgd_run_is_accounted_with_the_tightest_method():
    accountant = PrivacyAccountant(3.0, 1e-5)
    accountant.spend_gaussian(1.1, **MNIST, label="training")
    assert accountant.spent[0] == pytest.approx(MNIST_SETTING.pld_epsilon, rel=1e-6)
    rdp_only = PrivacyAccountant(3.0, 1e-5, use_pld=False)
    rdp_only.spend_gaussian(1.1, **MNIST)
    assert rdp_only.spent[0] == pytest.approx(MNIST_SETTING.rdp_epsilon, rel=1e-8)
    assert accountant.get_epsilon(1e-5) == pytest.approx(accountant.spent[0])
    assert accountant.get_epsilon(1e-3) < accountant.spent[0]  # more delta, less epsilon


def test_gaussian_composition_beats_splitting_the_budget():
    # 100 Gaussian releases with sigma = 10: RDP gives about eps 4.7 at delta 1e-5, far below
    # basic composition of 100 single-release guarantees at delta 1e-7 each.
    from dplib.mechanisms.gaussian import gaussian_epsilon

    accountant = PrivacyAccountant(10.0, 1e-5)
    accountant.spend_gaussian(10.0, count=100)
    basic = 100 * gaussian_epsilon(10.0, 1.0, 1e-7)
    assert accountant.spent[0] < basic / 5
    # A single Gaussian release: PLD (q = 1) agrees with the exact analytic epsilon to 1%.
    single = PrivacyAccountant(10.0, 1e-5)
    single.spend_gaussian(2.0)
    assert single.spent[0] == pytest.approx(gaussian_epsilon(2.0, 1.0, 1e-5), rel=0.01)
    assert single.spent[0] >= gaussian_epsilon(2.0, 1.0, 1e-5) * (1 - 1e-9)  # never optimistic


def test_pure_spends_join_the_gaussian_composition():
    accountant = PrivacyAccountant(5.0, 1e-5)
    accountant.spend_gaussian(1.1, **MNIST)
    before = accountant.spent[0]
    accountant.spend(0.1, label="a count")
    assert before < accountant.spent[0] <= before + 0.1 + 1e-12


def test_gaussian_overspend_is_refused_without_state_change():
    accountant = PrivacyAccountant(2.0, 1e-5)
    accountant.spend(0.5)
    before = (accountant.spent, accountant.ledger)
    with pytest.raises(BudgetExceededError, match="would exceed the budget"):
        accountant.spend_gaussian(1.1, **MNIST)  # needs about 2.38 + pure part
    assert (accountant.spent, accountant.ledger) == before


def test_gaussian_needs_delta():
    with pytest.raises(BudgetExceededError, match="give the accountant a delta > 0"):
        PrivacyAccountant(5.0).spend_gaussian(3.0)
    accountant = PrivacyAccountant(5.0, 1e-5)
    accountant.spend(0.1, 1e-5)  # all the delta is taken by an explicit spend
    with pytest.raises(BudgetExceededError, match="none is left"):
        accountant.spend_gaussian(3.0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(noise_multiplier=0.0), "noise_multiplier must be a finite number > 0"),
        (dict(noise_multiplier=1.0, sampling_rate=0.0), r"sampling_rate must be in \(0, 1\]"),
        (dict(noise_multiplier=1.0, sampling_rate=1.5), r"sampling_rate must be in \(0, 1\]"),
        (dict(noise_multiplier=1.0, count=0), "count must be an integer >= 1"),
    ],
)
def test_bad_gaussian_events_are_refused(kwargs, message):
    accountant = PrivacyAccountant(5.0, 1e-5)
    with pytest.raises(ValueError, match=message):
        accountant.spend_gaussian(**kwargs)
    assert accountant.ledger == ()


def test_spend_event_refuses_non_events():
    with pytest.raises(TypeError, match="privacy event"):
        PrivacyAccountant(1.0).spend_event((0.1, 0.0))
