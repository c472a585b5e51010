"""Seeded synthetic data sets for the course's notebooks.

Every generator takes a keyword ``rng`` (None, an int seed or a ``numpy.random.Generator``) and
returns plain numpy arrays, so that a notebook is reproducible and needs no download. Tables are
dictionaries mapping a column name to a 1-d array, all of the same length (the course does not
depend on pandas). Each generator is independent of the others.

Generators for notebook 00 (why anonymization fails):

- :func:`synthetic_population` -- people with a name, ZIP code, sex, birth date and a diagnosis,
  living in ZIP codes of realistic sizes, so that about 87% of them are unique on
  (ZIP, sex, birth date), the figure Sweeney (2000) estimated for the United States;
- :func:`medical_release` and :func:`voter_roll` -- the two tables of a linkage attack;
- :func:`synthetic_ratings` and :func:`auxiliary_ratings` -- a sparse Netflix-like table of
  movie ratings and the few public reviews an attacker knows about one user;
- :func:`synthetic_census_block` -- the residents of one census block (sex, marital status, age).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dplib._validation import as_generator, check_integer, check_positive, check_probability

__all__ = [
    "DIAGNOSES",
    "synthetic_population",
    "medical_release",
    "voter_roll",
    "synthetic_ratings",
    "auxiliary_ratings",
    "synthetic_census_block",
]

Table = dict[str, np.ndarray]

#: Year of the snapshot: ages are measured on 1 January of this year.
REFERENCE_YEAR = 2025

_FIRST_NAMES = (
    "Ada Alan Alice Amir Ana Anya Ben Bianca Carlos Chen Chloe Dana David Dmitri Elena Emma "
    "Eric Fatima Felix Grace Hana Hugo Ines Ivan Jamal Jana Jin John Julia Kai Kofi Lara Leo "
    "Lina Luca Maria Marta Mateo Maya Mei Nadia Nina Noah Omar Olga Paul Priya Quinn Rafael "
    "Rosa Sam Sara Sofia Tariq Tom Uma Vera Victor Wei Yara Yusuf Zoe"
).split()
_LAST_NAMES = (
    "Abe Adeyemi Alvarez Baker Bauer Brown Chen Costa Cohen Dang Diaz Dubois Evans Fischer "
    "Garcia Gupta Haddad Hansen Ito Ivanova Jensen Jones Kaur Kim Kowalski Lee Lopez Martin "
    "Meyer Moreau Murphy Nakamura Nguyen Novak Okafor Olsen Patel Pereira Quispe Rossi Sato "
    "Schmidt Silva Singh Smith Sousa Tanaka Taylor Tran Walker Weber Wilson Wong Yilmaz Zhang"
).split()

#: Diagnoses of the synthetic medical records (the sensitive attribute).
DIAGNOSES = (
    "asthma",
    "diabetes",
    "hypertension",
    "depression",
    "influenza",
    "fracture",
    "migraine",
    "HIV",
)
_DIAGNOSIS_YOUNG = np.array([0.18, 0.05, 0.05, 0.17, 0.25, 0.14, 0.13, 0.03])
_DIAGNOSIS_OLD = np.array([0.08, 0.22, 0.35, 0.10, 0.10, 0.07, 0.06, 0.02])


def _age_weights(max_age: int = 100) -> np.ndarray:
    """A plain age pyramid: flat up to 60, then declining linearly to zero at ``max_age``."""
    ages = np.arange(max_age + 1)
    w = np.where(ages < 60, 1.0, np.clip((max_age - ages) / (max_age - 60), 0.0, None))
    return w / w.sum()


def _unique_names(n: int, gen: np.random.Generator) -> np.ndarray:
    """``n`` distinct names "First M. Last" (at most 62 * 56 * 26 of them)."""
    n_first, n_last = len(_FIRST_NAMES), len(_LAST_NAMES)
    capacity = n_first * n_last * 26
    if n > capacity:
        raise ValueError(f"n must be <= {capacity} for distinct names, got {n}")
    codes = gen.choice(capacity, size=n, replace=False)
    first, rest = np.divmod(codes, n_last * 26)
    last, middle = np.divmod(rest, 26)
    firsts = np.asarray(_FIRST_NAMES)[first]
    lasts = np.asarray(_LAST_NAMES)[last]
    middles = np.asarray([chr(ord("A") + i) for i in range(26)])[middle]
    return np.char.add(np.char.add(np.char.add(firsts, " "), np.char.add(middles, ". ")), lasts)


def synthetic_population(
    n: int,
    *,
    median_zip_population: float = 5000.0,
    zip_population_sigma: float = 1.0,
    rng: Any = None,
) -> Table:
    """People with the quasi-identifiers of Sweeney's study, ZIP code, sex and birth date.

    ZIP populations are log-normal (median ``median_zip_population``, log-scale spread
    ``zip_population_sigma``), roughly as in the United States, where a ZIP code holds a few
    thousand to a few tens of thousands of people. Ages follow a simple pyramid (flat to 60, then
    thinning out to 100), birth dates are uniform within the birth year, and sex is a fair coin.
    With the defaults about 87% of people are the only one with their (ZIP, sex, birth date),
    Sweeney's (2000) estimate for the 1990 US census. What drives uniqueness is the number of
    people per ZIP, not ``n``: a ZIP with ``m`` residents spreads them over about
    ``2 * 365 * 80`` (sex, birth date) cells.

    Parameters
    ----------
    n : int
        Number of people, >= 1.
    median_zip_population : float, default 5000
        Median number of residents of a ZIP code, > 0.
    zip_population_sigma : float, default 1.0
        Standard deviation of the log of a ZIP's population, > 0.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness.

    Returns
    -------
    dict of str to numpy.ndarray
        Columns ``name`` (distinct strings), ``zip`` (5-digit strings; ZIPs sharing their first
        three digits are neighbours), ``sex`` ("F" or "M"), ``birth_date`` (``datetime64[D]``),
        ``birth_year`` (int), ``age`` (int, on 1 January 2025) and ``diagnosis`` (one of
        :data:`DIAGNOSES`, more chronic conditions with age).

    References
    ----------
    L. Sweeney (2000), "Simple Demographics Often Identify People Uniquely", Carnegie Mellon
    University, Data Privacy Working Paper 3. P. Golle (2006), "Revisiting the Uniqueness of
    Simple Demographics in the US Population", WPES (63% with the 2000 census).

    Examples
    --------
    >>> people = synthetic_population(1000, rng=0)
    >>> sorted(people)
    ['age', 'birth_date', 'birth_year', 'diagnosis', 'name', 'sex', 'zip']
    """
    n = check_integer(n, "n", minimum=1)
    median = check_positive(median_zip_population, "median_zip_population")
    sigma = check_positive(zip_population_sigma, "zip_population_sigma")
    gen = as_generator(rng)

    # ZIP populations until everybody has a home; the last ZIP takes the remainder.
    sizes: list[int] = []
    total = 0
    while total < n:
        size = max(1, int(np.ceil(gen.lognormal(np.log(median), sigma))))
        sizes.append(size)
        total += size
    sizes[-1] -= total - n
    n_zips = len(sizes)
    # Neighbouring ZIPs share a 3-digit prefix (about four ZIPs per prefix).
    prefixes = gen.choice(np.arange(100, 999), size=max(1, (n_zips + 3) // 4), replace=False)
    zip_codes = []
    for i in range(n_zips):
        prefix = prefixes[i // 4]
        zip_codes.append(f"{prefix:03d}{10 + 17 * (i % 4) + int(gen.integers(0, 17)):02d}")
    zips = np.repeat(np.asarray(zip_codes), sizes)

    age = gen.choice(101, size=n, p=_age_weights(100))
    birth_year = REFERENCE_YEAR - 1 - age
    year_start = (birth_year - 1970).astype("datetime64[Y]").astype("datetime64[D]")
    days_in_year = 365 + (
        (birth_year % 4 == 0) & ((birth_year % 100 != 0) | (birth_year % 400 == 0))
    )
    birth_date = year_start + np.floor(gen.random(n) * days_in_year).astype("timedelta64[D]")
    sex = np.where(gen.random(n) < 0.5, "F", "M")

    old = np.clip((age - 20) / 50.0, 0.0, 1.0)[:, None]
    probs = (1 - old) * _DIAGNOSIS_YOUNG + old * _DIAGNOSIS_OLD
    u = gen.random(n)[:, None]
    diag_index = np.minimum((u > np.cumsum(probs, axis=1)).sum(axis=1), len(DIAGNOSES) - 1)

    order = gen.permutation(n)
    table = {
        "name": _unique_names(n, gen),
        "zip": zips[order],
        "sex": sex,
        "birth_date": birth_date[order],
        "birth_year": birth_year[order].astype(int),
        "age": age[order].astype(int),
        "diagnosis": np.asarray(DIAGNOSES)[diag_index][order],
    }
    return table


def _subset(table: Table, index: np.ndarray, columns: list[str]) -> Table:
    return {c: np.asarray(table[c])[index] for c in columns}


def medical_release(
    population: Table,
    *,
    fraction: float = 0.3,
    min_age: int = 20,
    max_age: int = 67,
    rng: Any = None,
) -> Table:
    """The "de-identified" medical table: a sample of working-age people, names removed.

    Parameters
    ----------
    population : dict
        A table from :func:`synthetic_population`.
    fraction : float, default 0.3
        Fraction of the people aged ``min_age`` to ``max_age`` (the employees) who are in it.
    min_age, max_age : int
        Age range of the employees, inclusive.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness.

    Returns
    -------
    dict of str to numpy.ndarray
        Columns ``zip``, ``sex``, ``birth_date`` and ``diagnosis``, rows in random order.
    """
    fraction = check_probability(fraction, "fraction", low_open=True)
    gen = as_generator(rng)
    age = np.asarray(population["age"])
    eligible = np.flatnonzero((age >= min_age) & (age <= max_age))
    chosen = gen.choice(eligible, size=int(round(fraction * eligible.size)), replace=False)
    return _subset(population, chosen, ["zip", "sex", "birth_date", "diagnosis"])


def voter_roll(population: Table, *, fraction: float = 0.6, rng: Any = None) -> Table:
    """The public voter roll: a sample of the adults, with name, ZIP, sex and birth date.

    Parameters
    ----------
    population : dict
        A table from :func:`synthetic_population`.
    fraction : float, default 0.6
        Fraction of the adults (18 and over) who are registered.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness.

    Returns
    -------
    dict of str to numpy.ndarray
        Columns ``name``, ``zip``, ``sex`` and ``birth_date``, rows in random order.
    """
    fraction = check_probability(fraction, "fraction", low_open=True)
    gen = as_generator(rng)
    adults = np.flatnonzero(np.asarray(population["age"]) >= 18)
    chosen = gen.choice(adults, size=int(round(fraction * adults.size)), replace=False)
    return _subset(population, chosen, ["name", "zip", "sex", "birth_date"])


def synthetic_ratings(
    n_users: int,
    n_items: int,
    *,
    mean_ratings_per_user: float = 40.0,
    popularity_exponent: float = 1.0,
    n_days: int = 2000,
    rng: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A sparse, long-tailed table of movie ratings, like the Netflix Prize data.

    Item popularity follows a Zipf-like law (``p_i`` proportional to
    ``1 / (i + 10) ** popularity_exponent``), so a few blockbusters are rated by many users and
    most films by few. The number of ratings per user is log-normal with the given mean; each user
    rates distinct items drawn by popularity. A rating (1 to 5 stars) is the film's quality plus
    the user's taste plus noise, rounded; the day of a rating lies in the user's active period.

    Parameters
    ----------
    n_users, n_items : int
        Size of the table, >= 1.
    mean_ratings_per_user : float, default 40
        Mean number of films a user rated (capped at ``n_items``).
    popularity_exponent : float, default 1.0
        Exponent of the popularity law, > 0 (larger: a longer tail).
    n_days : int, default 2000
        Length of the observation period in days.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness.

    Returns
    -------
    ratings : numpy.ndarray of int, shape (n_users, n_items)
        Stars from 1 to 5, or 0 where the user did not rate the film.
    days : numpy.ndarray of int, shape (n_users, n_items)
        Day of each rating in ``[0, n_days)``, or -1 where there is none.

    References
    ----------
    A. Narayanan and V. Shmatikov (2008), "Robust De-anonymization of Large Sparse Datasets",
    IEEE Symposium on Security and Privacy.
    """
    n_users = check_integer(n_users, "n_users", minimum=1)
    n_items = check_integer(n_items, "n_items", minimum=1)
    mean_k = check_positive(mean_ratings_per_user, "mean_ratings_per_user")
    exponent = check_positive(popularity_exponent, "popularity_exponent")
    n_days = check_integer(n_days, "n_days", minimum=1)
    gen = as_generator(rng)

    log_pop = -exponent * np.log(np.arange(n_items) + 10.0)
    sigma = 0.8
    k = np.ceil(gen.lognormal(np.log(mean_k) - sigma**2 / 2, sigma, size=n_users)).astype(int)
    k = np.clip(k, 1, n_items)
    # Weighted sampling without replacement, vectorized: the k largest of log p + Gumbel noise.
    keys = log_pop[None, :] + gen.gumbel(size=(n_users, n_items))
    rank = np.argsort(np.argsort(-keys, axis=1), axis=1)
    rated = rank < k[:, None]

    quality = gen.normal(3.4, 0.6, size=n_items)
    taste = gen.normal(0.0, 0.5, size=n_users)
    stars = np.clip(
        np.rint(quality[None, :] + taste[:, None] + gen.normal(0, 0.9, size=(n_users, n_items))),
        1,
        5,
    )
    ratings = np.where(rated, stars, 0).astype(int)

    start = gen.integers(0, n_days, size=n_users)
    span = np.minimum(gen.integers(30, n_days, size=n_users), n_days - start)
    day = start[:, None] + np.floor(gen.random((n_users, n_items)) * np.maximum(span, 1)[:, None])
    days = np.where(rated, day, -1).astype(int)
    return ratings, days


def auxiliary_ratings(
    ratings: np.ndarray,
    days: np.ndarray,
    user: int,
    n_known: int,
    *,
    rating_error: float = 0.25,
    day_error: int = 14,
    rng: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What an attacker knows about one user: a few public reviews, slightly wrong.

    Picks ``n_known`` of the films ``user`` rated; each rating is off by one star with probability
    ``rating_error`` (staying within 1 to 5) and each date is off by up to ``day_error`` days.

    Returns
    -------
    items, item_ratings, item_days : numpy.ndarray of int, shape (n_known,)
        The films, the remembered ratings and the remembered days.

    Raises
    ------
    ValueError
        If the user rated fewer than ``n_known`` films.
    """
    ratings = np.asarray(ratings)
    days = np.asarray(days)
    user = check_integer(user, "user", minimum=0)
    n_known = check_integer(n_known, "n_known", minimum=1)
    rating_error = check_probability(rating_error, "rating_error")
    day_error = check_integer(day_error, "day_error", minimum=0)
    if user >= ratings.shape[0]:
        raise ValueError(f"user must be < {ratings.shape[0]}, got {user}")
    gen = as_generator(rng)
    rated = np.flatnonzero(ratings[user] > 0)
    if rated.size < n_known:
        raise ValueError(f"user {user} rated {rated.size} films, fewer than n_known={n_known}")
    items = np.sort(gen.choice(rated, size=n_known, replace=False))
    shift = np.where(gen.random(n_known) < rating_error, gen.choice([-1, 1], size=n_known), 0)
    item_ratings = np.clip(ratings[user, items] + shift, 1, 5)
    item_days = days[user, items] + gen.integers(-day_error, day_error + 1, size=n_known)
    return items, item_ratings.astype(int), item_days.astype(int)


def synthetic_census_block(n: int, *, rng: Any = None) -> Table:
    """The residents of one census block: sex, marital status and age.

    Children (under 18) are single; adults are married with probability growing with age, and
    married adults come roughly in couples of similar age.

    Parameters
    ----------
    n : int
        Number of residents, >= 1.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness.

    Returns
    -------
    dict of str to numpy.ndarray
        Columns ``sex`` ("F"/"M"), ``marital`` ("single"/"married") and ``age`` (int, 0 to 100).
    """
    n = check_integer(n, "n", minimum=1)
    gen = as_generator(rng)
    age = gen.choice(101, size=n, p=_age_weights(100)).astype(int)
    sex = np.where(gen.random(n) < 0.5, "F", "M")
    p_married = np.where(age < 18, 0.0, np.clip((age - 18) / 25.0, 0.0, 0.65))
    marital = np.where(gen.random(n) < p_married, "married", "single")
    order = np.lexsort((age, marital, sex))
    return {"sex": sex[order], "marital": marital[order], "age": age[order]}
