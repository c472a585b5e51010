"""Tests of dplib.attacks: each attack on hand-made tables with known answers, plus the census
reconstruction on a synthetic block (solved exactly, checked unique) and named reference cases."""

import math

import numpy as np
import pytest

from dplib import attacks, datasets
from dplib.attacks import (
    GroupStatistic,
    block_statistics,
    count_consistent_ages,
    enumerate_consistent_ages,
    reconstruct_block,
    reconstruction_is_unique,
)

# ------------------------------------------------------------------------------------ uniqueness

TOY = {
    "zip": np.array(["02138", "02138", "02139", "02139", "02140"]),
    "sex": np.array(["F", "M", "F", "F", "M"]),
    "born": np.array(
        ["1990-01-01", "1990-01-01", "1985-05-05", "1985-05-05", "1970-01-01"],
        dtype="datetime64[D]",
    ),
}


def test_uniqueness_counts_records_not_combinations():
    assert attacks.uniqueness_fraction({"a": np.array(["x", "x", "y"])}, ["a"]) == pytest.approx(
        1 / 3
    )
    assert attacks.uniqueness_fraction(TOY, ["zip"]) == pytest.approx(1 / 5)
    assert attacks.uniqueness_fraction(TOY, ["zip", "sex"]) == pytest.approx(3 / 5)
    assert attacks.uniqueness_fraction(TOY, ["zip", "sex", "born"]) == pytest.approx(3 / 5)
    assert attacks.uniqueness_fraction(TOY, []) == 0.0
    np.testing.assert_array_equal(attacks.equivalence_class_sizes(TOY, ["zip"]), [2, 2, 2, 2, 1])


def test_uniqueness_refuses_bad_tables():
    with pytest.raises(ValueError, match="no column"):
        attacks.uniqueness_fraction(TOY, ["age"])
    with pytest.raises(ValueError, match="empty"):
        attacks.uniqueness_fraction({"a": np.array([])}, ["a"])
    with pytest.raises(TypeError, match="dict"):
        attacks.uniqueness_fraction([1, 2], ["a"])
    with pytest.raises(ValueError, match="different lengths"):
        attacks.uniqueness_fraction({"a": np.arange(3), "b": np.arange(4)}, ["a", "b"])
    with pytest.raises(TypeError, match="list of column names"):
        attacks.uniqueness_fraction(TOY, "zip")


# --------------------------------------------------------------------------------------- linkage

MEDICAL = {
    "zip": np.array(["a", "a", "b", "c", "d"]),
    "diagnosis": np.array(["x1", "x2", "y", "z", "w"]),
}
VOTERS = {
    "zip": np.array(["a", "b", "b", "c", "e"]),
    "name": np.array(["Al", "Be", "Bea", "Ce", "Ed"]),
}


def test_linkage_requires_uniqueness_on_both_sides():
    # "a" is ambiguous in the release, "b" in the roll, "d" and "e" have no partner: only "c" links.
    assert attacks.linkage_attack(MEDICAL, VOTERS, ["zip"]) == {"Ce": "z"}
    rows, cols = attacks.linkage_matches(MEDICAL, VOTERS, ["zip"])
    np.testing.assert_array_equal(rows, [3])
    np.testing.assert_array_equal(cols, [3])


def test_linkage_on_synthetic_tables_is_mostly_right():
    population = datasets.synthetic_population(20_000, median_zip_population=3000.0, rng=1)
    medical = datasets.medical_release(population, fraction=0.3, rng=2)
    voters = datasets.voter_roll(population, fraction=0.6, rng=3)
    found = attacks.linkage_attack(medical, voters, ["zip", "sex", "birth_date"])
    truth = dict(zip(population["name"].tolist(), population["diagnosis"].tolist(), strict=True))
    assert len(found) > 0.3 * len(medical["zip"])
    assert np.mean([truth[n] == d for n, d in found.items()]) > 0.9


def test_linkage_refuses_missing_columns():
    with pytest.raises(ValueError, match="at least one"):
        attacks.linkage_attack(MEDICAL, VOTERS, [])
    with pytest.raises(ValueError, match="no column 'name'"):
        attacks.linkage_attack(MEDICAL, MEDICAL, ["zip"])


# ---------------------------------------------------------------------------------- k-anonymity

WARD = {
    "zip": np.array(["021**"] * 4 + ["024**"] * 4 + ["021**"] * 4),
    "age": np.array(["20-29"] * 4 + ["40-49"] * 4 + ["30-39"] * 4),
    "diagnosis": np.array(
        ["dep"] * 4 + ["dia", "hyp", "mig", "hyp"] + ["flu", "HIV", "flu", "HIV"]
    ),
}


def test_k_anonymity_and_l_diversity_of_a_hand_made_table():
    assert attacks.k_anonymity(WARD, ["zip", "age"]) == 4
    assert attacks.k_anonymity(WARD, ["zip"]) == 4
    assert attacks.k_anonymity({"a": np.array([1, 1, 2])}, ["a"]) == 1
    assert attacks.is_k_anonymous(WARD, ["zip", "age"], 4)
    assert not attacks.is_k_anonymous(WARD, ["zip", "age"], 5)
    assert attacks.l_diversity(WARD, ["zip", "age"], "diagnosis") == 1
    assert attacks.homogeneous_fraction(WARD, ["zip", "age"], "diagnosis") == pytest.approx(4 / 12)
    np.testing.assert_array_equal(
        attacks.class_diversity(WARD, ["zip", "age"], "diagnosis"), [1] * 4 + [3] * 4 + [2] * 4
    )
    assert attacks.k_anonymity({"a": np.array([])}, ["a"]) == 0


def test_generalisation_helpers():
    np.testing.assert_array_equal(attacks.generalize_zip(["02138", "02459"], 3), ["021**", "024**"])
    np.testing.assert_array_equal(attacks.generalize_zip(["02138"], 0), ["*****"])
    np.testing.assert_array_equal(
        attacks.generalize_age([0, 9, 10, 37, 40], 10), ["0-9", "0-9", "10-19", "30-39", "40-49"]
    )
    with pytest.raises(ValueError, match="keep"):
        attacks.generalize_zip(["02138"], 6)
    with pytest.raises(ValueError, match="width"):
        attacks.generalize_age([1], 0)


def test_suppression_makes_a_table_k_anonymous():
    table = {"a": np.array([1, 1, 1, 2, 2, 3]), "b": np.arange(6)}
    kept = attacks.suppress_small_classes(table, ["a"], 3)
    np.testing.assert_array_equal(kept["b"], [0, 1, 2])
    assert attacks.k_anonymity(kept, ["a"]) >= 3


# ------------------------------------------------------------------------------- sparse linkage


def test_sparse_scores_by_hand():
    ratings = np.array([[5, 0, 3], [4, 2, 0], [0, 2, 3]])
    days = np.array([[10, -1, 40], [12, 50, -1], [-1, 55, 41]])
    np.testing.assert_allclose(attacks.item_weights(ratings), 1 / np.log(3) * np.ones(3))
    scores = attacks.sparse_linkage_scores([0], [5], ratings, aux_days=[10], days=days)
    w = 1 / math.log(3)
    expected = [2 * w, w * (math.exp(-1 / 1.5) + math.exp(-2 / 30)), 0.0]
    np.testing.assert_allclose(scores, expected, rtol=1e-12)
    # without dates only the rating term counts; unweighted gives every film weight 1
    np.testing.assert_allclose(
        attacks.sparse_linkage_scores([0], [5], ratings), [w, w * math.exp(-1 / 1.5), 0]
    )
    np.testing.assert_allclose(
        attacks.sparse_linkage_scores([0], [5], ratings, weighted=False), [1, math.exp(-1 / 1.5), 0]
    )
    # a film nobody rated has weight 0 and contributes nothing
    assert attacks.item_weights(np.array([[1, 0], [2, 0]]))[1] == 0.0


def test_eccentricity_and_matching():
    assert attacks.eccentricity([1.0, 1.0, 1.0]) == 0.0
    assert attacks.eccentricity([0.0, 0.0, 0.0, 10.0]) > 1.5
    ratings, days = datasets.synthetic_ratings(1000, 500, rng=11)
    weights = attacks.item_weights(ratings)
    gen = np.random.default_rng(12)
    users = np.flatnonzero((ratings > 0).sum(axis=1) >= 8)[:20]
    hits = 0
    for user in users:
        items, stars, when = datasets.auxiliary_ratings(ratings, days, user, 8, rng=gen)
        hits += (
            attacks.sparse_linkage(items, stars, ratings, aux_days=when, days=days, weights=weights)
            == user
        )
    assert hits >= 19, "8 approximate ratings with dates identify (nearly) everybody"
    # nobody stands out when the attacker knows nothing that distinguishes users
    assert attacks.sparse_linkage([0], [3], np.full((5, 2), 3)) == -1


# ---------------------------------------------------------------------------------- difference


def test_difference_attack():
    # 30 engineers averaging 7.0M, then 29 averaging 6.8M: the one who left earned 12.8M.
    assert attacks.difference_attack(7.0, 30, 6.8, 29) == pytest.approx(12.8)
    assert attacks.difference_attack(84_250, 40, 83_500, 39) == pytest.approx(113_500)
    # two people left: 25 * 52,000 - 23 * 50,000 = 150,000 between them
    assert attacks.difference_attack(52_000, 25, 50_000, 23) == pytest.approx(150_000)
    with pytest.raises(ValueError, match="n_after"):
        attacks.difference_attack(1.0, 3, 1.0, 4)
    with pytest.raises(ValueError, match="finite"):
        attacks.difference_attack(float("nan"), 3, 1.0, 2)


# ------------------------------------------------------------------------------- reconstruction


def test_count_consistent_ages_reference_case():
    # The lecture's three men (median 30, mean 44, ages 0 to 125): A + C = 102, A in 0..30.
    assert count_consistent_ages(3, max_age=125, median=30, mean=44) == 31
    assert count_consistent_ages(3, max_age=115) == math.comb(118, 3)
    assert count_consistent_ages(3, max_age=115, median=41) == 42 * 75
    assert count_consistent_ages(3, max_age=115, median=41, mean=47) == 42


@pytest.mark.parametrize("count", [1, 2, 3, 4])
@pytest.mark.parametrize(
    "median, mean", [(30, 44.0), (30.5, 40.0), (None, 40.0), (30, None), (None, None)]
)
def test_counting_agrees_with_enumeration(count, median, mean):
    max_age = 40 if count == 4 else 90
    counted = count_consistent_ages(count, max_age=max_age, median=median, mean=mean)
    listed = enumerate_consistent_ages(count, max_age=max_age, median=median, mean=mean)
    assert counted == len(listed)
    if len(listed):
        assert np.all(np.diff(listed, axis=1) >= 0)
        if mean is not None:
            np.testing.assert_allclose(listed.mean(axis=1), mean)
        if median is not None:
            np.testing.assert_allclose(np.median(listed, axis=1), median)


def test_counting_refuses_bad_input():
    with pytest.raises(ValueError, match="count"):
        count_consistent_ages(0, max_age=10)
    with pytest.raises(ValueError, match="count must be <= 12"):
        count_consistent_ages(13, max_age=10)
    with pytest.raises(ValueError, match="median"):
        count_consistent_ages(3, max_age=10, median=float("nan"))
    assert count_consistent_ages(3, max_age=10, mean=3.1) == 0, "no integer sum gives this mean"


def _census_groups():
    categories = [
        ("everyone", {}),
        ("F", {"sex": "F"}),
        ("M", {"sex": "M"}),
        ("single", {"marital": "single"}),
        ("married", {"marital": "married"}),
        ("F single", {"sex": "F", "marital": "single"}),
        ("F married", {"sex": "F", "marital": "married"}),
        ("M single", {"sex": "M", "marital": "single"}),
        ("M married", {"sex": "M", "marital": "married"}),
    ]
    bands = [("", None), (" 0-17", (0, 17)), (" 18-64", (18, 64)), (" 65+", (65, 115))]
    return [(n + b, {**w, **({"age": r} if r else {})}) for n, w in categories for b, r in bands]


def _people(block):
    return sorted(
        zip(block["sex"].tolist(), block["marital"].tolist(), block["age"].tolist(), strict=True)
    )


def test_block_statistics_by_hand():
    block = {"sex": np.array(["F", "F", "M"]), "age": np.array([30, 40, 8])}
    table = block_statistics(
        block,
        [("all", {}), ("F", {"sex": "F"}), ("kids", {"age": (0, 17)}), ("old", {"age": (90, 99)})],
    )
    assert [(r.count, r.median, r.mean) for r in table] == [
        (3, 30.0, 26.0),
        (2, 35.0, 35.0),
        (1, 8.0, 8.0),
        (0, None, None),
    ]
    assert table[1].where == (("sex", "F"),)


def test_milp_recovers_a_known_block_exactly_and_proves_it_unique():
    block = datasets.synthetic_census_block(14, rng=2030)
    table = block_statistics(block, _census_groups())
    solution = reconstruct_block(table, max_age=115)
    assert _people(solution) == _people(block)
    assert reconstruction_is_unique(table, solution, max_age=115)


def test_milp_detects_an_ambiguous_table_and_an_impossible_one():
    block = {"sex": np.array(["F", "F", "M", "M"]), "age": np.array([20, 40, 30, 50])}
    table = block_statistics(block, [("all", {}), ("F", {"sex": "F"}), ("M", {"sex": "M"})])
    solution = reconstruct_block(table, max_age=100)
    assert (
        block_statistics(solution, [("all", {}), ("F", {"sex": "F"}), ("M", {"sex": "M"})]) == table
    )
    assert not reconstruction_is_unique(table, solution, max_age=100), (
        "two people per sex: many blocks fit"
    )
    impossible = [
        GroupStatistic("all", {}, 3, 10, 50.0),
        GroupStatistic("M", {"sex": "M"}, 4, None, None),
    ]
    assert reconstruct_block(impossible, max_age=100) is None
    assert reconstruct_block([GroupStatistic("all", {}, 2.5, None, None)], max_age=10) is None


def test_milp_tolerances_accept_a_slightly_noisy_table():
    block = datasets.synthetic_census_block(8, rng=3)
    table = block_statistics(block, _census_groups())
    shifted = [
        GroupStatistic(
            r.name,
            r.where,
            r.count,
            None if r.median is None else r.median + 0.2,
            None if r.mean is None else r.mean - 0.2,
        )
        for r in table
    ]
    assert reconstruct_block(shifted, max_age=115) is None
    assert (
        reconstruct_block(shifted, max_age=115, mean_tolerance=0.25, median_tolerance=0.25)
        is not None
    )


def test_robust_mode_fits_a_consistent_table():
    block = {"sex": np.array(["F", "M", "M"]), "age": np.array([30, 40, 60])}
    groups = [("all", {}), ("F", {"sex": "F"}), ("M", {"sex": "M"})]
    table = block_statistics(block, groups)
    fit = reconstruct_block(table, max_age=80, robust=True, time_limit=30)
    assert len(fit["age"]) == 3
    assert [r.count for r in block_statistics(fit, groups)] == [3, 1, 2]


def test_reconstruct_refuses_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        reconstruct_block([], max_age=10)
    with pytest.raises(TypeError, match="GroupStatistic"):
        reconstruct_block([("all", 3)], max_age=10)
    with pytest.raises(ValueError, match="median_tolerance"):
        reconstruct_block([GroupStatistic("all", {}, 1, 5, 5.0)], max_age=10, median_tolerance=-1)
