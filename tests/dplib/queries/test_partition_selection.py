"""Tests of dplib.queries.partition_selection: the optimal and the Laplace partition selection.

Reference figures: Google's differential-privacy library, cc/algorithms/partition-selection_test.cc
(``NearTruncatedGeometricPartitionSelection``: eps 0.5, delta 0.02 gives pi(6) = 0.58840484458,
pi(8) = 0.86807080625, crossovers 6 and 11; eps 1e-20 gives pi(6) = 0.12 and pi(40) = 0.8 at
delta 0.02, pi(3) = 0.45 at delta 0.15; ``LaplacePartitionSelection::CalculateDelta`` at eps ln 3
gives 0.5, 1/6, 1/18, 2.5402631e-05 and 4.3019580e-10 for thresholds 1, 2, 3, 10, 20, and its
threshold for eps 0.5, delta 0.02 is 7.43775164974). Statistical tests use dplib.testing's
assertions (false-failure probability <= 1e-9 each) with the ``rng_seed`` fixture.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dplib.accounting.rdp import zcdp_to_dp
from dplib.mechanisms._count_noise import noise_scale
from dplib.mechanisms.discrete import discrete_gaussian_pmf, discrete_laplace_pmf
from dplib.queries import partition_selection as ps
from dplib.queries.partition_selection import (
    partition_keep_probability,
    partition_selection_delta,
    partition_threshold,
    select_partitions,
)
from dplib.testing import assert_dp, clopper_pearson

FAIL = 1e-9


# --------------------------------------------------------------------------- reference figures


@pytest.mark.parametrize(
    ("n", "epsilon", "delta", "expected"),
    [
        (6, 0.5, 0.02, 0.58840484458),  # NumUsersEqFirstCrossover
        (8, 0.5, 0.02, 0.86807080625),  # NumUsersBtwnCrossovers
        (15, 0.5, 0.02, 1.0),  # NumUsersGreaterThanCrossovers
        (6, 1e-20, 0.02, 0.12),  # TinyEpsilon: n delta
        (3, 1e-20, 0.15, 0.45),  # TinyEpsilonLargeDelta
        (40, 1e-20, 0.02, 0.8),  # TinyEpsilonBtwnCrossovers
        (0, 0.5, 0.02, 0.0),
    ],
)
def test_keep_probability_matches_googles_figures(n, epsilon, delta, expected):
    assert partition_keep_probability(n, epsilon, delta) == pytest.approx(expected, abs=1e-10)


def test_keep_probability_crossovers_are_googles_6_and_11():
    pi = partition_keep_probability(np.arange(16), 0.5, 0.02)
    # below the first crossover the first constraint binds: pi(n) = e^eps pi(n-1) + delta
    assert np.allclose(pi[1:7], math.exp(0.5) * pi[:6] + 0.02, rtol=1e-12)
    # between the crossovers the second binds: 1 - pi(n) = e^-eps (1 - pi(n-1) - delta)
    assert np.allclose(1 - pi[7:12], math.exp(-0.5) * (1 - pi[6:11] - 0.02), rtol=1e-12)
    assert pi[11] < 1 and np.all(pi[12:] == 1)


def test_keep_probability_is_the_optimal_recurrence():
    # Desfontaines et al. 2022, Theorem 1: pi(n) = min(e^eps pi + delta, 1 - e^-eps (1 - pi - delta), 1)
    for eps, delta, m in ((1.0, 1e-5, 1), (0.1, 1e-3, 1), (2.0, 1e-6, 4)):
        e, d = eps / m, delta / m if m > 1 else delta
        pi, expected = 0.0, [0.0]
        for _ in range(400):
            pi = min(math.exp(e) * pi + d, 1 - math.exp(-e) * (1 - pi - d), 1.0)
            expected.append(pi)
        got = partition_keep_probability(np.arange(401), eps, delta, max_partitions=m)
        assert np.allclose(got, expected, atol=1e-12)


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [(1, 0.5), (2, 0.16666667), (3, 0.05555555556), (10, 2.5402631e-05), (20, 4.3019580e-10)],
)
def test_continuous_laplace_delta_matches_googles_calculate_delta(threshold, expected):
    got = partition_selection_delta(threshold, math.log(3), noise="laplace")
    assert got == pytest.approx(expected, rel=1e-6)


def test_googles_laplace_threshold_has_the_requested_delta():
    # LaplacePartitionSelectionThreshold: eps 0.5, delta 0.02 -> threshold 7.43775164974
    assert partition_selection_delta(7.43775164974, 0.5, noise="laplace") == pytest.approx(
        0.02, rel=1e-9
    )


# --------------------------------------------------------------------------- exact deltas


def _discrete_tail(threshold: int, scale: float) -> float:
    """P(1 + Z >= threshold), summed from the pmf (an independent computation)."""
    z = np.arange(threshold - 1, threshold - 1 + 4000)
    return float(np.sum(discrete_laplace_pmf(z, scale)))


@pytest.mark.parametrize(
    ("threshold", "epsilon", "m"), [(1, 1.0, 1), (3, 0.5, 1), (12, 1.0, 3), (-2, 2.0, 2)]
)
def test_discrete_delta_is_one_minus_the_product_of_misses(threshold, epsilon, m):
    scale = noise_scale(m, epsilon)
    if threshold >= 1:
        p = _discrete_tail(threshold, scale)
    else:
        z = np.arange(-4000, threshold - 1)
        p = 1 - float(np.sum(discrete_laplace_pmf(z, scale)))
    expected = 1 - (1 - p) ** m
    assert partition_selection_delta(threshold, epsilon, max_partitions=m) == pytest.approx(
        expected, rel=1e-10
    )


@pytest.mark.parametrize(
    ("epsilon", "delta", "m"), [(1.0, 1e-6, 1), (0.5, 1e-9, 4), (3.0, 0.01, 2)]
)
def test_threshold_is_the_smallest_with_delta_below_the_target(epsilon, delta, m):
    t = partition_threshold(epsilon, delta, max_partitions=m)
    assert partition_selection_delta(t, epsilon, max_partitions=m) <= delta
    assert partition_selection_delta(t - 1, epsilon, max_partitions=m) > delta


def test_threshold_reference_value():
    # eps 1, delta 1e-6: p(t) = e^-(t-1) / (1 + e^-1); t = 15 is the first with p <= 1e-6
    assert partition_threshold(1.0, 1e-6) == 15
    assert math.exp(-14) / (1 + math.exp(-1)) <= 1e-6 < math.exp(-13) / (1 + math.exp(-1))


# --------------------------------------------------------------------------- exact sampling


def _exp_lower(x: Fraction, terms: int = 60) -> Fraction:
    """A lower bound on e^x for 0 <= x <= 1: a partial sum of its Taylor series."""
    total, term = Fraction(0), Fraction(1)
    for k in range(terms):
        total += term
        term = term * x / (k + 1)
    return total


@pytest.mark.parametrize(
    ("epsilon", "delta", "m"), [(0.5, 0.02, 1), (1.0, 1e-6, 1), (0.3, 1e-4, 3)]
)
def test_dyadic_sequence_satisfies_both_dp_constraints_exactly(epsilon, delta, m):
    nums = ps._dyadic_keep_probabilities(epsilon, delta, m, 3000)
    pi = [Fraction(int(k), 2**62) for k in nums]
    e_lo = _exp_lower(Fraction(epsilon) / m)  # e^eps' >= e_lo: checking with e_lo is stricter
    d = Fraction(delta) / (1 if m == 1 else m)
    assert pi[0] == 0
    for before, after in zip(pi[:-1], pi[1:], strict=True):
        assert after >= before
        assert after <= e_lo * before + d
        assert 1 - before <= e_lo * (1 - after) + d
    # and it is within n 2**-61 of the optimal pi(n) (the price of exactness)
    optimal = partition_keep_probability(np.arange(3001), epsilon, delta, max_partitions=m)
    gap = optimal - np.array(nums, dtype=float) / 2**62
    assert np.all(gap >= -1e-12) and np.all(gap <= np.arange(3001) * 2.0**-61 + 1e-12)


def test_optimal_rule_keeps_a_key_with_its_probability(rng_seed):
    # 4 users share key "k": kept with probability pi~(4); binomial test (Clopper-Pearson)
    n_runs = 3000
    users, keys = [1, 2, 3, 4], ["k"] * 4
    gen = np.random.default_rng(rng_seed)
    kept = sum(select_partitions(users, keys, 0.5, 0.02, rng=gen).size for _ in range(n_runs))
    p = ps._dyadic_keep_probabilities(0.5, 0.02, 1, 4)[4] / 2**62
    low, high = clopper_pearson(kept, n_runs, alpha=FAIL)
    assert low <= p <= high


def test_laplace_rule_releases_a_lone_users_key_with_probability_delta(rng_seed):
    eps, delta = 1.0, 0.05
    t = partition_threshold(eps, delta)
    p = partition_selection_delta(t, eps)
    n_runs = 4000
    gen = np.random.default_rng(rng_seed)
    kept = sum(
        select_partitions([7], ["only"], eps, delta, rule="laplace", rng=gen).size
        for _ in range(n_runs)
    )
    low, high = clopper_pearson(kept, n_runs, alpha=FAIL)
    assert low <= p <= high


def test_a_user_contributes_to_at_most_max_partitions_keys():
    # one user with 50 keys, bounded to 2: at most 2 keys can come out, even with keep prob 1
    keys = [f"k{i}" for i in range(50)]
    for seed in range(20):
        out = select_partitions([1] * 50, keys, 50.0, 0.4, max_partitions=2, rng=seed)
        assert out.size <= 2


def test_popular_keys_are_released_and_output_is_sorted_unique():
    users = np.arange(2000) % 500
    keys = np.array(["b", "a"] * 1000)
    for rule in ("optimal", "laplace"):
        out = select_partitions(users, keys, 1.0, 1e-6, max_partitions=2, rule=rule, rng=0)
        assert out.tolist() == ["a", "b"]


def test_laplace_rule_releases_the_noisy_user_counts_it_thresholded(rng_seed):
    # 50 users in "a": the count is 50 + Z, Z discrete Laplace of scale 1 / epsilon; the
    # threshold (15 at eps 1, delta 1e-6) cuts mass below 2 e**-35 of it, so the law is Z's
    from dplib.testing import assert_frequencies

    gen = np.random.default_rng(rng_seed)
    noise = []
    for _ in range(3000):
        keys, counts = select_partitions(
            np.arange(50), ["a"] * 50, 1.0, 1e-6, rule="laplace", return_counts=True, rng=gen
        )
        assert keys.tolist() == ["a"] and counts[0] >= 15
        noise.append(int(counts[0]) - 50)
    support = np.arange(-20, 21)
    pmf = discrete_laplace_pmf(support, noise_scale(1, 1.0))
    observed = np.clip(np.array(noise), -21, 21) + 21  # 0: below -20, 42: above 20
    tail = (1 - pmf.sum()) / 2  # the law is symmetric: each tail beyond 20 has half the rest
    assert_frequencies(observed, np.concatenate([[tail], pmf, [tail]]), failure_prob=FAIL)


@pytest.mark.parametrize(
    ("epsilon", "delta", "m"), [(1.0, 1e-6, 1), (1.0, 1e-6, 16), (0.3, 1e-8, 4)]
)
def test_gaussian_plan_spends_epsilon_and_half_delta_on_each_part(epsilon, delta, m):
    sigma, t = ps._gaussian_plan(epsilon, delta, m)
    rho = m / (2 * sigma**2)  # the counts' L2 sensitivity is sqrt(m): rho-zCDP (CKS20)
    assert zcdp_to_dp(rho, delta / 2, method="tight") <= epsilon
    assert zcdp_to_dp(rho * (1 + 1e-6), delta / 2, method="tight") > epsilon * (1 - 1e-6)

    # the threshold: the smallest integer whose lone-user delta is at most delta / 2, with the
    # tail summed here from the pmf independently
    def lone(threshold):
        ys = np.arange(threshold - 1, threshold - 1 + int(60 * sigma) + 60)
        p = float(np.sum(discrete_gaussian_pmf(ys, sigma)))
        return 1 - (1 - p) ** m

    assert lone(t) <= delta / 2 < lone(t - 1)
    # Google's continuous formula at this sigma (CalculateThreshold: 1 + sigma Phi^-1(1 - d'),
    # d' = 1 - (1 - delta / 2)**(1/m)) lands within one of the discrete threshold
    adjusted = -math.expm1(math.log1p(-delta / 2) / m)
    assert abs(t - math.ceil(1 + sigma * stats.norm.isf(adjusted))) <= 1


def test_gaussian_noise_grows_like_the_root_of_max_partitions():
    s1, t1 = ps._gaussian_plan(1.0, 1e-6, 1)
    s16, t16 = ps._gaussian_plan(1.0, 1e-6, 16)
    assert s16 == pytest.approx(4 * s1, rel=1e-6)
    # at m = 16 the Gaussian threshold is far below the Laplace one (scale m / epsilon = 16)
    assert t16 < partition_threshold(1.0, 1e-6, max_partitions=16) / 2


def test_gaussian_rule_releases_a_lone_users_key_with_its_tail_probability(rng_seed):
    eps, delta = 1.0, 0.2
    sigma, t = ps._gaussian_plan(eps, delta, 1)
    ys = np.arange(t - 1, t - 1 + int(60 * sigma) + 60)
    p = float(np.sum(discrete_gaussian_pmf(ys, sigma)))
    gen = np.random.default_rng(rng_seed)
    n_runs = 4000
    kept = sum(
        select_partitions([7], ["x"], eps, delta, rule="gaussian", rng=gen).size
        for _ in range(n_runs)
    )
    low, high = clopper_pearson(kept, n_runs, alpha=FAIL)
    assert low <= p <= high and p <= delta / 2


# --------------------------------------------------------------------------- black-box audits


def _as_text(keys) -> str:
    return ",".join(str(k) for k in keys)


@pytest.mark.parametrize("rule", ["optimal", "laplace", "laplace+counts", "gaussian+counts"])
def test_select_partitions_passes_a_dp_audit(rule, rng_seed):
    # D: three users in "a"; D': plus a fourth user alone in "b" (its own key) and also in "a"
    eps, delta = 1.0, 0.05
    d = ([1, 2, 3], ["a", "a", "a"])
    d_prime = ([1, 2, 3, 4, 4], ["a", "a", "a", "a", "b"])

    def mechanism(data, rng):
        if rule.endswith("+counts"):
            keys, counts = select_partitions(
                *data, eps, delta, max_partitions=2, rule=rule[:-7], return_counts=True, rng=rng
            )
            return _as_text(f"{k}:{c}" for k, c in zip(keys, counts, strict=True))
        return _as_text(select_partitions(*data, eps, delta, max_partitions=2, rule=rule, rng=rng))

    assert_dp(mechanism, d, d_prime, eps, delta=delta, n_samples=10_000, rng=rng_seed)


def test_the_audit_catches_a_threshold_that_ignores_delta(rng_seed, monkeypatch):
    # threshold 1: a lone user's key is released with probability 1 / (1 + q) >> delta
    monkeypatch.setattr(ps, "partition_threshold", lambda *a, **k: 1)

    def mechanism(data, rng):
        return _as_text(select_partitions(*data, 1.0, 0.05, rule="laplace", rng=rng))

    with pytest.raises(AssertionError):
        assert_dp(
            mechanism,
            ([1], ["a"]),
            ([1, 2], ["a", "b"]),
            1.0,
            delta=0.05,
            n_samples=2_000,
            rng=rng_seed,
        )


# --------------------------------------------------------------------------- 0 and 1 records, refusals


def test_zero_and_one_records_are_answered_alike():
    empty = select_partitions([], [], 1.0, 1e-3, rng=0)
    one = select_partitions([5], ["x"], 1.0, 1e-3, rng=0)
    assert isinstance(empty, np.ndarray) and isinstance(one, np.ndarray)
    assert empty.size == 0 and one.size in (0, 1)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"epsilon": 0.0}, ValueError),
        ({"epsilon": math.inf}, ValueError),
        ({"delta": 0.0}, ValueError),
        ({"delta": 1.0}, ValueError),
        ({"max_partitions": 0}, ValueError),
        ({"max_partitions": 1.5}, TypeError),
        ({"rule": "poisson"}, ValueError),
        ({"user_ids": [1, 2]}, ValueError),
        ({"keys": [math.nan, 1.0, 2.0]}, ValueError),
        ({"keys": None}, TypeError),
        ({"user_ids": [[1, 2, 3]]}, ValueError),
        ({"return_counts": True}, ValueError),  # the optimal rule has no count
        ({"return_counts": 1}, TypeError),
    ],
)
def test_bad_arguments_are_refused_before_any_draw(kwargs, error):
    args = {"user_ids": [1, 2, 3], "keys": ["a", "b", "c"], "epsilon": 1.0, "delta": 1e-3}
    args.update(kwargs)
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    with pytest.raises(error):
        select_partitions(
            args.pop("user_ids"),
            args.pop("keys"),
            args.pop("epsilon"),
            args.pop("delta"),
            rng=gen,
            **args,
        )
    assert gen.bit_generator.state == state


def test_delta_functions_refuse_bad_arguments():
    with pytest.raises(ValueError, match="noise"):
        partition_selection_delta(3, 1.0, noise="gaussian")
    with pytest.raises(ValueError, match="threshold"):
        partition_selection_delta(math.nan, 1.0)
    with pytest.raises(ValueError, match="delta"):
        partition_threshold(1.0, 0.0)
    with pytest.raises(ValueError, match="n must"):
        partition_keep_probability([-1], 1.0, 0.1)
