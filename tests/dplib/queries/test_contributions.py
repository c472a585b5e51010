"""Tests of dplib.queries.contributions: contribution bounding and per-key counts and sums.

Reference: the sensitivities of Wilson et al. (2020), "Differentially Private SQL with Bounded
User Contribution" (a user in at most m partitions with at most r rows each moves the
vector of counts by m r in L1 and sqrt(m) r in L2; with values bounded by B, m r B and
sqrt(m) r B), checked here to be attained (tight) on constructed neighbours. Statistical tests use
dplib.testing (false-failure probability <= 1e-9 each) with the ``rng_seed`` fixture.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dplib.accounting.rdp import zcdp_to_dp
from dplib.mechanisms.discrete import discrete_gaussian_pmf, discrete_laplace_pmf
from dplib.queries import aggregates
from dplib.queries import contributions as cb
from dplib.queries.contributions import (
    bound_contributions,
    contribution_sensitivity,
    gaussian_count_by_key,
    private_count_by_key,
    private_rows_cap,
    private_sum_by_key,
)
from dplib.testing import assert_dp, assert_frequencies

FAIL = 1e-9


# --------------------------------------------------------------------------- bounding


def test_bounding_keeps_at_most_m_keys_and_r_rows_per_user_key():
    gen = np.random.default_rng(1)
    users = gen.integers(0, 30, size=2000)
    keys = gen.integers(0, 12, size=2000)
    values = np.arange(2000.0)
    for m, r in ((1, 1), (2, 3), (5, 2)):
        u, k, v = bound_contributions(users, keys, values, max_partitions=m, max_rows=r, rng=gen)
        for user in np.unique(u):
            assert np.unique(k[u == user]).size <= m
        pairs, counts = np.unique(np.stack([u, k]), axis=1, return_counts=True)
        assert counts.max() <= r
        # rows are kept whole and in order: the values identify them
        assert np.all(np.diff(v) > 0) and set(v) <= set(values)
        assert np.array_equal(users[v.astype(int)], u) and np.array_equal(keys[v.astype(int)], k)


def test_users_within_the_bounds_keep_every_row():
    users = [1, 1, 2, 3, 3, 3]
    keys = ["a", "b", "a", "a", "b", "b"]
    u, k = bound_contributions(users, keys, max_partitions=2, max_rows=2, rng=0)
    assert u.tolist() == users and k.tolist() == keys


def test_the_kept_key_is_uniform_among_a_users_keys(rng_seed):
    # one user with keys a, b, c and m = 1: each key kept with probability 1/3 (exact law)
    gen = np.random.default_rng(rng_seed)
    kept = [
        bound_contributions(
            [1, 1, 1, 1], ["a", "b", "c", "c"], max_partitions=1, max_rows=9, rng=gen
        )[1][0]
        for _ in range(3000)
    ]
    assert_frequencies(kept, {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}, failure_prob=FAIL)


def test_the_kept_rows_are_uniform_within_a_user_key(rng_seed):
    gen = np.random.default_rng(rng_seed)
    kept = [
        int(bound_contributions([1] * 4, ["a"] * 4, [0, 1, 2, 3], max_rows=1, rng=gen)[2][0])
        for _ in range(4000)
    ]
    assert_frequencies(kept, [0.25] * 4, failure_prob=FAIL)


# --------------------------------------------------------------------------- sensitivities


@pytest.mark.parametrize(("m", "r", "bound"), [(1, 1, 1.0), (4, 3, 1.0), (3, 5, 2.5), (16, 1, 0.5)])
def test_sensitivity_is_wilsons_and_it_is_attained(m, r, bound):
    l1, l2 = contribution_sensitivity(m, r, bound)
    assert l1 == m * r * bound and l2 == pytest.approx(math.sqrt(m) * r * bound)
    # a user with r rows of value `bound` in each of m keys, added to data within the bounds
    base_users = [1, 2, 2]
    base_keys = [0, 0, 1]
    new_users = [99] * (m * r)
    new_keys = [j for j in range(m) for _ in range(r)]
    parts = np.arange(max(m, 2))
    before = np.bincount(
        bound_contributions(base_users, base_keys, max_partitions=m, max_rows=r, rng=0)[1],
        minlength=parts.size,
    )
    after_keys = bound_contributions(
        base_users + new_users, base_keys + new_keys, max_partitions=m, max_rows=r, rng=0
    )[1]
    after = np.bincount(after_keys, minlength=parts.size)
    change = (after - before) * bound
    assert np.abs(change).sum() == pytest.approx(l1)
    assert np.sqrt((change**2).sum()) == pytest.approx(l2)


def test_a_heavy_user_is_capped_to_the_sensitivity():
    # 3,000 rows in 40 keys: after bounding, at most m r rows remain
    users = [7] * 3000
    keys = np.arange(3000) % 40
    u, _ = bound_contributions(users, keys, max_partitions=3, max_rows=2, rng=0)
    assert u.size == 6


# --------------------------------------------------------------------------- the releases


def test_count_noise_is_discrete_laplace_of_scale_mr_over_epsilon(rng_seed):
    m, r, eps = 2, 3, 1.5
    gen = np.random.default_rng(rng_seed)
    users = [1, 1, 1, 2]
    keys = ["a", "a", "b", "a"]  # bounded counts: a = 3 (2 + 1), b = 1
    draws = np.array(
        [
            private_count_by_key(
                users, keys, ["a", "b"], eps, max_partitions=m, max_rows=r, rng=gen
            )
            for _ in range(3000)
        ]
    )
    noise = (draws - [3, 1]).ravel()
    support = np.arange(-60, 61)
    pmf = discrete_laplace_pmf(support, m * r / eps)
    pmf = np.append(pmf, 1 - pmf.sum())  # the tails beyond +-60 as one category
    observed = np.where(np.abs(noise) <= 60, noise + 60, 121)
    assert_frequencies(observed, pmf, failure_prob=FAIL)


def test_gaussian_counts_use_the_l2_sensitivity(rng_seed, monkeypatch):
    # sigma = sqrt(m) r / sqrt(2 rho): m = 4 keys, r = 2 rows, rho = 0.5 -> sigma = 4 (the Laplace
    # release's scale would be m r / eps = 8 / eps): and the noise has the discrete Gaussian's law
    seen = []
    real = cb.sample_discrete_gaussian
    monkeypatch.setattr(
        cb, "sample_discrete_gaussian", lambda s, n, rng: seen.append(s) or real(s, n, rng=rng)
    )
    gen = np.random.default_rng(rng_seed)
    users, keys = [1, 1, 2], ["a", "a", "b"]  # bounded counts: a = 2, b = 1
    draws = np.array(
        [
            gaussian_count_by_key(
                users, keys, ["a", "b"], 0.5, max_partitions=4, max_rows=2, rng=gen
            )
            for _ in range(3000)
        ]
    )
    assert set(seen) == {4.0}
    noise = (draws - [2, 1]).ravel()
    support = np.arange(-30, 31)
    pmf = discrete_gaussian_pmf(support, 4.0)
    tail = (1 - pmf.sum()) / 2
    observed = np.clip(noise, -31, 31) + 31
    assert_frequencies(observed, np.concatenate([[tail], pmf, [tail]]), failure_prob=FAIL)


def test_gaussian_counts_pass_a_dp_audit_at_their_converted_epsilon(rng_seed):
    # rho = 0.5 is (zcdp_to_dp(0.5, 1e-3), 1e-3)-DP; D' adds a user with 3 rows in "a" (r = 3)
    rho, delta = 0.5, 1e-3
    eps = zcdp_to_dp(rho, delta)

    def mechanism(data, rng):
        return int(gaussian_count_by_key(*data, ["a"], rho, max_rows=3, rng=rng)[0])

    d = ([1], ["a"])
    assert_dp(
        mechanism, d, ([1, 2, 2, 2], ["a"] * 4), eps, delta=delta, n_samples=10_000, rng=rng_seed
    )


def test_sums_lie_on_the_fixed_grid_and_are_near_the_truth():
    eps, m, r = 2.0, 1, 2
    step = math.ldexp(1.0, aggregates.grid_exponent(5.0, eps / (m * r)))
    users, keys, values = [1, 1, 2], ["a", "a", "b"], [1.25, 2.5, 4.0]
    for seed in range(50):
        out = private_sum_by_key(
            users, keys, values, ["a", "b"], -5.0, 5.0, eps, max_rows=r, rng=seed
        )
        assert np.array_equal(out / step, np.round(out / step))
    # noise scale m r B / eps = 5: |noise| <= 5 * log(2 / 1e-9) with probability >= 1 - 1e-9
    out = private_sum_by_key(users, keys, values, ["a", "b"], -5.0, 5.0, eps, max_rows=r, rng=3)
    assert np.all(np.abs(out - [3.75, 4.0]) <= 5 * math.log(2 / FAIL) + 2 * step)


def test_rows_cap_is_a_private_quantile_of_rows_per_user():
    # 1000 users with 1..10 rows (100 each): the 0.9 quantile is 9-10; at eps = 20 the choice is
    # within 2 of it with probability >= 1 - 100 exp(-20 * 50 / 2) (rank gap 50 per step of 1)
    users = np.repeat(np.arange(1000), np.repeat(np.arange(1, 11), 100))
    cap = private_rows_cap(users, 20.0, quantile=0.9, upper=100, rng=0)
    assert 8 <= cap <= 11


# --------------------------------------------------------------------------- audits


def test_count_by_key_passes_a_dp_audit(rng_seed):
    # D': one more user with 5 rows in "a" (capped at r = 2) and 3 in "b": L1 change m r = 4
    d = ([1, 2], ["a", "b"])
    d_prime = ([1, 2] + [3] * 8, ["a", "b"] + ["a"] * 5 + ["b"] * 3)

    def mechanism(data, rng):
        return int(
            private_count_by_key(*data, ["a", "b"], 1.0, max_partitions=2, max_rows=2, rng=rng)[0]
        )

    assert_dp(mechanism, d, d_prime, 1.0, n_samples=10_000, rng=rng_seed)


def test_the_audit_catches_a_sensitivity_that_ignores_max_rows(rng_seed, monkeypatch):
    real = cb.discrete_laplace_mechanism
    monkeypatch.setattr(
        cb, "discrete_laplace_mechanism", lambda v, s, e, rng: real(v, 1, e, rng=rng)
    )

    def mechanism(data, rng):
        return int(private_count_by_key(*data, ["a"], 1.0, max_rows=4, rng=rng)[0])

    with pytest.raises(AssertionError):
        assert_dp(
            mechanism, ([1], ["a"]), ([1] + [2] * 4, ["a"] * 5), 1.0, n_samples=5_000, rng=rng_seed
        )


def test_sum_by_key_passes_a_dp_audit(rng_seed):
    d = ([1], ["a"], [1.0])
    d_prime = ([1, 2, 2, 2], ["a", "a", "a", "a"], [1.0, 3.0, 3.0, 3.0])

    def mechanism(data, rng):
        return float(private_sum_by_key(*data, ["a"], 0.0, 3.0, 1.0, max_rows=2, rng=rng)[0])

    assert_dp(mechanism, d, d_prime, 1.0, n_samples=10_000, rng=rng_seed)


def test_rows_cap_passes_a_dp_audit(rng_seed):
    def mechanism(users, rng):
        return private_rows_cap(users, 1.0, quantile=0.5, upper=6, rng=rng)

    d = [1, 2, 2, 3, 3, 3]
    assert_dp(mechanism, d, d + [4] * 6, 1.0, n_samples=5_000, rng=rng_seed)


# --------------------------------------------------------------------------- 0 records, refusals


def test_zero_and_one_records_are_answered_alike():
    for rows in (([], [], []), ([1], ["a"], [0.5])):
        counts = private_count_by_key(rows[0], rows[1], ["a", "b"], 1.0, rng=0)
        gaussian = gaussian_count_by_key(rows[0], rows[1], ["a", "b"], 0.5, rng=0)
        assert gaussian.shape == (2,) and gaussian.dtype == np.int64
        sums = private_sum_by_key(*rows, ["a", "b"], 0.0, 1.0, 1.0, rng=0)
        assert counts.shape == (2,) and counts.dtype == np.int64
        assert sums.shape == (2,) and np.all(np.isfinite(sums))
        assert 1 <= private_rows_cap(rows[0], 1.0, upper=5, rng=0) <= 5


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda g: private_count_by_key([1], ["a"], ["a", "a"], 1.0, rng=g), ValueError),
        (lambda g: private_count_by_key([1], ["a"], [], 1.0, rng=g), ValueError),
        (lambda g: private_count_by_key([1, 2], ["a"], ["a"], 1.0, rng=g), ValueError),
        (lambda g: private_count_by_key([1], ["a"], ["a"], 0.0, rng=g), ValueError),
        (lambda g: private_count_by_key([1], ["a"], ["a"], 1.0, max_rows=0, rng=g), ValueError),
        (lambda g: private_count_by_key([1], [None], ["a"], 1.0, rng=g), TypeError),
        (lambda g: private_sum_by_key([1], ["a"], [math.nan], ["a"], 0, 1, 1.0, rng=g), ValueError),
        (lambda g: private_sum_by_key([1], ["a"], [1.0], ["a"], 1, 0, 1.0, rng=g), ValueError),
        (
            lambda g: bound_contributions([1], ["a"], max_partitions=2**20, max_rows=2, rng=g),
            ValueError,
        ),
        (lambda g: private_rows_cap([1], 1.0, quantile=1.5, rng=g), ValueError),
        (lambda g: private_rows_cap([1], 1.0, upper=0, rng=g), ValueError),
        (lambda g: gaussian_count_by_key([1], ["a"], ["a"], 0.0, rng=g), ValueError),
        (lambda g: gaussian_count_by_key([1], ["a"], ["a"], 1e-300, rng=g), ValueError),
        (lambda g: gaussian_count_by_key([1], ["a"], ["a"], "0.5", rng=g), TypeError),
    ],
)
def test_bad_arguments_are_refused_before_any_draw(call, error):
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    with pytest.raises(error):
        call(gen)
    assert gen.bit_generator.state == state


def test_contribution_sensitivity_refuses_bad_bounds():
    with pytest.raises(ValueError, match="value_bound"):
        contribution_sensitivity(2, 2, -1.0)
    with pytest.raises(ValueError, match="max_partitions"):
        contribution_sensitivity(0, 1)


@pytest.mark.parametrize(
    "release",
    [
        lambda u, k, p, g: cb.private_count_by_key(u, k, p, 5.0, rng=g),
        lambda u, k, p, g: cb.gaussian_count_by_key(u, k, p, 5.0, rng=g),
        lambda u, k, p, g: cb.private_sum_by_key(u, k, np.ones(len(u)), p, 0.0, 1.0, 5.0, rng=g),
    ],
    ids=["private_count_by_key", "gaussian_count_by_key", "private_sum_by_key"],
)
def test_mixed_type_partitions_and_masked_keys_are_refused_before_any_draw(release):
    # Issue 49: private_count_by_key(users, keys, [1, 'a'], 5.0) gave [0, 0] where [1] gave [5]:
    # numpy made the partitions the strings '1' and 'a', which match no numeric key. Each case
    # now either answers right or is refused before the generator moves.
    users, keys = np.arange(5), np.ones(5, dtype=int)
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    for partitions, error, message in (
        ([1, "a"], TypeError, "partitions must hold only numbers or only strings"),
        (["1", "a"], TypeError, "keys and partitions must both be numbers or both be strings"),
        (np.ma.array([1, 2], mask=[0, 1]), TypeError, "partitions is a masked array"),
    ):
        with pytest.raises(error, match=message):
            release(users, keys, partitions, gen)
    with pytest.raises(TypeError, match="keys is a masked array"):
        release(users, np.ma.array(keys, mask=[0, 0, 0, 0, 1]), [1], gen)
    assert gen.bit_generator.state == state
    # the number 1 matches the numeric keys: all five rows are counted (noise of scale 1/5)
    got = release(users, keys, [1], np.random.default_rng(1))
    assert abs(float(np.asarray(got)[0]) - 5.0) < 5.0
