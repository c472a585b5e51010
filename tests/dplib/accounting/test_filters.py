"""Tests of dplib.accounting.filters: privacy filters, the zCDP budget and the counterexample.

References: Rogers, Roth, Ullman & Vadhan (2016), Theorem 5.1 (the statistic K, recomputed here
term by term from the theorem's statement); Whitehouse, Ramdas, Rogers & Wu (2023): their filter
matches advanced composition "including constants", checked against dplib's
``advanced_composition`` (Dwork, Rothblum & Vadhan 2010, Kairouz et al.'s form) at every length;
Bun & Steinke (2016), Propositions 1.3, 1.4 and 1.6 for the zCDP conversions; the counterexample's
deltas are recomputed by enumerating the outputs of the adaptive interaction independently.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dplib
from dplib.accounting import filters
from dplib.accounting.events import ApproxDpEvent, GaussianEvent, PureDpEvent, ZcdpEvent
from dplib.accounting.filters import (
    PrivacyFilter,
    ZcdpFilter,
    adaptive_composition_counterexample,
    rogers2016_statistic,
    whitehouse2023_statistic,
)
from dplib.errors import BudgetExceededError
from dplib.testing import assert_dp


def _admitted(f: PrivacyFilter, eps: float, delta: float = 0.0) -> int:
    count = 0
    while f.can_spend(eps, delta):
        f.spend(eps, delta)
        count += 1
    return count


# --------------------------------------------------------------------------- the basic filter


def test_basic_filter_admits_until_the_sums_reach_the_budget_and_refuses_without_change():
    f = PrivacyFilter(1.0, 1e-5)
    f.spend(0.3, 4e-6, label="first")
    f.spend(0.7, 6e-6)
    assert f.spent == pytest.approx((1.0, 1e-5))
    ledger = f.ledger
    with pytest.raises(BudgetExceededError, match="epsilon"):
        f.spend(1e-9)
    assert f.ledger == ledger
    assert not f.can_spend(1e-9) and f.ledger == ledger


def test_basic_filter_with_adaptively_chosen_epsilons():
    # the analyst halves the next request after each answer: the filter admits the prefix whose
    # sum is within the budget, whatever the choices were
    f = PrivacyFilter(1.0)
    request = 0.6
    while f.can_spend(request):
        f.spend(request)
        request /= 2
    assert [e.epsilon for e in f.events] == [0.6, 0.3]  # 0.15 would pass the budget
    assert f.can_spend(0.1) and not f.can_spend(0.1 + 1e-9)


# --------------------------------------------------------------------------- Rogers et al. 2016


def _rruv_by_hand(epsilons, eps_g, delta_g):
    h = eps_g**2 / (28.04 * math.log(1 / delta_g))
    s2 = sum(e * e for e in epsilons)
    first = sum(e * (math.exp(e) - 1) for e in epsilons) / 2
    second = math.sqrt(2 * (s2 + h) * (1 + 0.5 * math.log(s2 / h + 1)) * math.log(2 / delta_g))
    return first + second


@pytest.mark.parametrize(
    ("epsilons", "eps_g", "delta_g"),
    [
        ([0.1] * 10, 1.0, 1e-6),
        ([0.5, 0.01, 0.2], 2.0, 1e-3),
        ([], 1.0, 0.1),
        ([0.05] * 300, 3.0, 1e-9),
    ],
)
def test_rogers_statistic_is_theorem_5_1(epsilons, eps_g, delta_g):
    assert rogers2016_statistic(epsilons, eps_g, delta_g) == pytest.approx(
        _rruv_by_hand(epsilons, eps_g, delta_g), rel=1e-12
    )


def test_rogers_filter_halts_on_deltas_at_half_the_budget():
    f = PrivacyFilter(10.0, 1e-4, rule="rogers2016")
    f.spend(0.01, 4e-5)
    with pytest.raises(BudgetExceededError, match="delta"):
        f.spend(0.01, 2e-5)  # 6e-5 > 1e-4 / 2


# --------------------------------------------------------------------------- Whitehouse et al. 2023


@pytest.mark.parametrize(
    ("eps", "eps_g", "delta_g"), [(0.01, 1.0, 1e-6), (0.05, 2.0, 1e-8), (0.1, 1.0, 1e-5)]
)
def test_whitehouse_filter_admits_at_least_what_advanced_composition_allows(eps, eps_g, delta_g):
    # the filter (delta split in halves) against DRV's advanced composition at delta_g / 2, whose
    # k-fold epsilon is sqrt(2 k log(1/d)) eps + k eps (e^eps - 1) >= the filter's statistic
    admitted = _admitted(PrivacyFilter(eps_g, delta_g, rule="whitehouse2023"), eps)
    k_drv = 0
    while dplib.advanced_composition(eps, 0.0, k_drv + 1, delta_g / 2)[0] <= eps_g:
        k_drv += 1
    assert admitted >= k_drv
    # and it is the statistic that stops it, exactly
    assert whitehouse2023_statistic([eps] * admitted, delta_g / 2) <= eps_g
    assert whitehouse2023_statistic([eps] * (admitted + 1), delta_g / 2) > eps_g


def test_whitehouse_beats_basic_composition_for_many_small_queries():
    assert _admitted(PrivacyFilter(1.0, 1e-6, rule="whitehouse2023"), 0.01) == 333
    assert _admitted(PrivacyFilter(1.0, 1e-6), 0.01) == 100
    assert _admitted(PrivacyFilter(1.0, 1e-6, rule="rogers2016"), 0.01) == 147


def test_whitehouse_statistic_is_the_zcdp_conversion_of_sum_eps_squared_over_two():
    eps = [0.3, 0.1, 0.2]
    rho = sum(e * e for e in eps) / 2
    assert whitehouse2023_statistic(eps, 1e-6) == pytest.approx(
        dplib.zcdp_to_dp(rho, 1e-6), rel=1e-12
    )


# --------------------------------------------------------------------------- zCDP


def test_zcdp_filter_adds_rhos_and_converts_with_bun_steinke():
    f = ZcdpFilter(1.0)
    f.spend(0.25)
    f.spend_event(GaussianEvent(noise_multiplier=2.0, count=2))  # 2 / (2 * 4) = 0.25 (Prop. 1.6)
    f.spend_event(PureDpEvent(0.5))  # 0.5**2 / 2 = 0.125 (Prop. 1.4)
    assert f.spent == pytest.approx(0.625)
    # the realised spend's conversion: a guarantee for requests fixed in advance only
    assert f.spent_epsilon(1e-6, method="classic") == pytest.approx(
        0.625 + 2 * math.sqrt(0.625 * math.log(1e6))
    )
    # the filter's guarantee is its budget rho = 1, whatever was spent
    assert f.epsilon(1e-6, method="classic") == pytest.approx(1 + 2 * math.sqrt(math.log(1e6)))
    with pytest.raises(BudgetExceededError, match="rho"):
        f.spend(0.4)
    assert f.spent == pytest.approx(0.625) and len(f.ledger) == 3
    with pytest.raises(TypeError, match="zCDP"):
        f.spend_event(ApproxDpEvent(0.1, 1e-6))
    assert len(f.ledger) == 3


def test_zcdp_filter_certifies_its_budget_not_the_realised_spend():
    """Under adaptive choice the realised sum of rho is random (an odometer's figure, Rogers,
    Roth, Ullman & Vadhan 2016): epsilon() converts the budget, before and after any spend, and
    only spent_epsilon() depends on what was admitted."""
    f = ZcdpFilter(0.5)
    before = f.epsilon(1e-5)
    assert before == pytest.approx(dplib.zcdp_to_dp(0.5, 1e-5, method="tight"), rel=1e-12)
    assert f.spent_epsilon(1e-5) == 0.0
    f.spend(0.1)
    assert f.epsilon(1e-5) == before
    assert f.spent_epsilon(1e-5) == pytest.approx(
        dplib.zcdp_to_dp(0.1, 1e-5, method="tight"), rel=1e-12
    )
    assert f.spent_epsilon(1e-5) < f.epsilon(1e-5)
    for doc in (ZcdpFilter.spent_epsilon.__doc__, PrivacyFilter.spent.__doc__):
        assert "fixed in advance" in " ".join(doc.split())
    with pytest.raises(ValueError, match="delta"):
        f.spent_epsilon(0.0)


def test_accountant_holds_zcdp_events():
    acc = dplib.PrivacyAccountant(epsilon=5.0, delta=1e-5, use_pld=False)
    acc.spend_zcdp(0.5)
    # the RDP curve 0.5 alpha, converted on dplib's order grid: at most the classic conversion
    # and at least the tight one over all orders
    eps = acc.spent[0]
    assert dplib.zcdp_to_dp(0.5, 1e-5, method="tight") <= eps + 1e-9
    assert eps <= dplib.zcdp_to_dp(0.5, 1e-5, method="classic")
    with pytest.raises(BudgetExceededError):
        acc.spend_zcdp(5.0)
    assert len(acc.ledger) == 1
    assert acc.events[0] == ZcdpEvent(0.5)


def test_zcdp_event_refuses_bad_rho():
    for bad in (0.0, -1.0, math.inf, math.nan, 1e301):
        with pytest.raises(ValueError, match="rho"):
            ZcdpEvent(bad)


# --------------------------------------------------------------------------- the counterexample


def _rr(eps):
    p = math.exp(eps) / (1 + math.exp(eps))
    return {1: p, 0: 1 - p}, {1: 1 - p, 0: p}


def _profile(p_out, q_out, eps):
    keys = set(p_out) | set(q_out)
    one = sum(max(p_out.get(k, 0) - math.exp(eps) * q_out.get(k, 0), 0) for k in keys)
    two = sum(max(q_out.get(k, 0) - math.exp(eps) * p_out.get(k, 0), 0) for k in keys)
    return max(one, two)


def test_counterexample_deltas_by_independent_enumeration():
    ex = adaptive_composition_counterexample(1.0, 0.05, 0.5)
    first_d, first_dp = _rr(0.5)
    second_d, second_dp = _rr(ex.second_epsilon)
    leak_d = {"1": 0.05, "-": 0.95}
    leak_dp = {"0": 0.05, "-": 0.95}
    both = lambda a, b: {(x, y): a[x] * b[y] for x in a for y in b}  # noqa: E731
    assert _profile(both(first_d, second_d), both(first_dp, second_dp), 1.0) == pytest.approx(
        0.05, abs=1e-12
    )
    assert _profile(both(first_d, leak_d), both(first_dp, leak_dp), 1.0) == pytest.approx(
        0.05, abs=1e-12
    )
    adaptive_d = {(1, y): first_d[1] * second_d[y] for y in (0, 1)} | {
        (0, y): first_d[0] * leak_d[y] for y in leak_d
    }
    adaptive_dp = {(1, y): first_dp[1] * second_dp[y] for y in (0, 1)} | {
        (0, y): first_dp[0] * leak_dp[y] for y in leak_dp
    }
    adaptive = _profile(adaptive_d, adaptive_dp, 1.0)
    p = math.exp(0.5) / (1 + math.exp(0.5))
    assert adaptive == pytest.approx(0.05 * (2 - p), rel=1e-12)
    assert ex.delta_adaptive == pytest.approx(adaptive, rel=1e-12)
    assert ex.delta_rr_then_rr == pytest.approx(0.05, abs=1e-12) and ex.delta_rr_then_leak == 0.05
    assert ex.delta_adaptive > ex.delta


def test_the_valid_filters_refuse_the_costly_branch_of_the_counterexample():
    ex = adaptive_composition_counterexample()
    f = PrivacyFilter(ex.epsilon, ex.delta)
    f.spend(ex.first_epsilon)
    assert not f.can_spend(ex.second_epsilon)  # 0.5 + 0.63 > 1: the RR branch is refused
    assert f.can_spend(1e-12, ex.leak_probability)  # the leak branch fits; alone it is valid
    # the advanced-composition filter is stricter still for one query of this size
    assert not PrivacyFilter(ex.epsilon, 0.1, rule="whitehouse2023").can_spend(ex.first_epsilon)


def _interaction(second_epsilon_after_yes, leak, rr_after_yes: bool):
    """The counterexample's two queries, vectorized: 1 when the transcript is in the set where
    D (bit 1) is likelier than e^1 times D' (bit 0) -- a post-processing, so a violation of
    (1, 0.05) by this bit is a violation by the interaction."""
    p1 = math.exp(0.5) / (1 + math.exp(0.5))
    p2 = math.exp(second_epsilon_after_yes) / (1 + math.exp(second_epsilon_after_yes))

    def mechanism(bit, rng, size):
        first = np.where(rng.random(size) < p1, bit, 1 - bit)  # RR(0.5): the true bit w.p. p1
        second_rr = np.where(rng.random(size) < p2, bit, 1 - bit)
        revealed = rng.random(size) < leak  # the leak: the bit itself, else nothing
        after_yes = (second_rr == 1) if rr_after_yes else (revealed & (bit == 1))
        after_no = revealed & (bit == 1)
        return np.where(first == 1, after_yes, after_no).astype(float)

    return mechanism


def test_an_audit_sees_the_adaptive_interaction_break_its_budget(rng_seed):
    # uniform doubles decide the simulated answers: a test of the law, not a release
    ex = adaptive_composition_counterexample()
    adaptive = _interaction(ex.second_epsilon, ex.leak_probability, rr_after_yes=True)
    # its delta is 0.0689 at epsilon 1: the indicator is 1 with probability 0.4253 on D, 0.1311 on D'
    # at 1.5e6 samples the Clopper-Pearson margins (1e-9 split over the events) take about 0.008
    # of the 0.019 excess, and the sampling noise of P - e Q has sd 0.0009: missed with
    # probability far below 1e-9
    with pytest.raises(AssertionError):
        assert_dp(
            adaptive, 1, 0, 1.0, delta=0.05, n_samples=1_500_000, vectorized=True, rng=rng_seed
        )


def test_with_the_filter_the_same_analyst_stays_within_budget(rng_seed):
    # the analyst asks the filter before the second query: RR(0.63) after RR(0.5) is refused
    # (0.5 + 0.63 > 1), so it asks the leak instead, which fits: the interaction is then exactly
    # (1, 0.05)-DP, and the audit finds nothing
    ex = adaptive_composition_counterexample()
    f = PrivacyFilter(ex.epsilon, ex.delta)
    f.spend(ex.first_epsilon)
    assert not f.can_spend(ex.second_epsilon)
    f.spend(1e-12, ex.leak_probability)  # the leak: (0, delta)-DP, charged a negligible epsilon
    filtered = _interaction(ex.second_epsilon, ex.leak_probability, rr_after_yes=False)
    assert_dp(filtered, 1, 0, 1.0, delta=0.05, n_samples=400_000, vectorized=True, rng=rng_seed)


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: PrivacyFilter(0.0), ValueError),
        (lambda: PrivacyFilter(1.0, 1.0), ValueError),
        (lambda: PrivacyFilter(1.0, 0.0, rule="whitehouse2023"), ValueError),
        (lambda: PrivacyFilter(1.0, 0.5, rule="rogers2016"), ValueError),
        (lambda: PrivacyFilter(1.0, 1e-6, rule="kov"), ValueError),
        (lambda: PrivacyFilter(1.0, 1e-6, rule=3), TypeError),
        (lambda: PrivacyFilter(1.0, 1e-6, rule="whitehouse2023", conversion_share=1.0), ValueError),
        (lambda: ZcdpFilter(-1.0), ValueError),
        (lambda: rogers2016_statistic([-0.1], 1.0, 1e-6), ValueError),
        (lambda: whitehouse2023_statistic([math.nan], 1e-6), ValueError),
        (lambda: adaptive_composition_counterexample(1.0, 0.05, 1.0), ValueError),
    ],
)
def test_bad_arguments_are_refused(make, error):
    with pytest.raises(error):
        make()


def test_a_refused_spend_changes_nothing():
    f = PrivacyFilter(3.0, 1e-6, rule="whitehouse2023")
    f.spend(0.2, label="a")
    before = f.ledger
    for bad in ((-1.0, 0.0), (math.nan, 0.0), (0.1, 1.0), (5.0, 0.0)):
        with pytest.raises(ValueError):
            f.spend(*bad)
        assert f.ledger == before
    with pytest.raises(TypeError, match="label"):
        f.spend(0.1, label=3)
    assert f.ledger == before
    with pytest.raises(TypeError, match="PureDpEvent"):
        f.spend_event(GaussianEvent(1.0))
    assert f.ledger == before
    assert isinstance(filters.FILTER_RULES, tuple)
