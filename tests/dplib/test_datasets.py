"""Tests of the seeded synthetic generators in dplib.datasets."""

import numpy as np
import pytest

from dplib import datasets
from dplib.attacks import uniqueness_fraction


@pytest.fixture(scope="module")
def population():
    return datasets.synthetic_population(60_000, rng=2025)


def test_population_columns_and_types(population):
    assert set(population) == {"name", "zip", "sex", "birth_date", "birth_year", "age", "diagnosis"}
    n = 60_000
    assert all(len(v) == n for v in population.values())
    assert population["birth_date"].dtype == np.dtype("datetime64[D]")
    assert set(np.unique(population["sex"])) == {"F", "M"}
    assert all(len(z) == 5 and z.isdigit() for z in np.unique(population["zip"]))
    assert set(np.unique(population["diagnosis"])) <= set(datasets.DIAGNOSES)
    assert len(np.unique(population["name"])) == n, "names are distinct"


def test_population_dates_ages_and_years_agree(population):
    years = population["birth_date"].astype("datetime64[Y]").astype(int) + 1970
    np.testing.assert_array_equal(years, population["birth_year"])
    np.testing.assert_array_equal(population["age"], datasets.REFERENCE_YEAR - 1 - years)
    assert population["age"].min() >= 0 and population["age"].max() <= 100


def test_population_reproduces_sweeneys_87_percent(population):
    # Sweeney (2000): about 87% of the US population is unique on (5-digit ZIP, sex, birth date).
    u = uniqueness_fraction(population, ["zip", "sex", "birth_date"])
    assert 0.82 <= u <= 0.92
    # and nobody is unique on sex and birth year alone (about 160 cells for 60,000 people)
    assert uniqueness_fraction(population, ["sex", "birth_year"]) < 0.01


def test_population_is_reproducible_and_seed_dependent():
    a = datasets.synthetic_population(500, rng=1)
    b = datasets.synthetic_population(500, rng=1)
    c = datasets.synthetic_population(500, rng=2)
    for column in a:
        np.testing.assert_array_equal(a[column], b[column])
    assert not np.array_equal(a["birth_date"], c["birth_date"])


def test_population_refuses_bad_input():
    with pytest.raises(ValueError, match="n must be"):
        datasets.synthetic_population(0, rng=0)
    with pytest.raises(TypeError, match="rng"):
        datasets.synthetic_population(10, rng="seed")
    with pytest.raises(ValueError, match="median_zip_population"):
        datasets.synthetic_population(10, median_zip_population=-1, rng=0)


def test_medical_release_and_voter_roll(population):
    medical = datasets.medical_release(population, fraction=0.3, rng=1)
    voters = datasets.voter_roll(population, fraction=0.6, rng=2)
    assert set(medical) == {"zip", "sex", "birth_date", "diagnosis"}, "no names in the release"
    assert set(voters) == {"name", "zip", "sex", "birth_date"}
    working_age = np.sum((population["age"] >= 20) & (population["age"] <= 67))
    assert len(medical["zip"]) == round(0.3 * working_age)
    adults = population["age"] >= 18
    assert len(voters["name"]) == round(0.6 * adults.sum())
    assert set(voters["name"]) <= set(population["name"][adults])
    with pytest.raises(ValueError, match="fraction"):
        datasets.voter_roll(population, fraction=1.5, rng=0)


def test_synthetic_ratings_shape_sparsity_and_long_tail():
    ratings, days = datasets.synthetic_ratings(500, 300, rng=3)
    assert ratings.shape == days.shape == (500, 300)
    assert set(np.unique(ratings)) <= {0, 1, 2, 3, 4, 5}
    np.testing.assert_array_equal(days == -1, ratings == 0)
    assert (ratings > 0).sum(axis=1).min() >= 1
    assert (ratings > 0).mean() < 0.2, "sparse"
    support = (ratings > 0).sum(axis=0)
    assert support[:10].mean() > 3 * support[-100:].mean(), "popular films first, long tail"


def test_auxiliary_ratings_are_close_to_the_truth():
    ratings, days = datasets.synthetic_ratings(200, 150, rng=4)
    user = int(np.argmax((ratings > 0).sum(axis=1)))
    items, stars, when = datasets.auxiliary_ratings(ratings, days, user, 6, day_error=14, rng=5)
    assert len(items) == len(set(items.tolist())) == 6
    assert np.all(ratings[user, items] > 0)
    assert np.all(np.abs(stars - ratings[user, items]) <= 1)
    assert np.all(np.abs(when - days[user, items]) <= 14)
    with pytest.raises(ValueError, match="fewer than n_known"):
        datasets.auxiliary_ratings(ratings, days, user, 10_000, rng=0)


def test_census_block():
    block = datasets.synthetic_census_block(50, rng=6)
    assert set(block) == {"sex", "marital", "age"}
    assert all(len(v) == 50 for v in block.values())
    assert np.all(block["marital"][block["age"] < 18] == "single")
    again = datasets.synthetic_census_block(50, rng=6)
    np.testing.assert_array_equal(block["age"], again["age"])
