"""A two-minute tour of dplib: real private releases next to the truth, and the budget they cost.

Run it with ``python -m dplib`` (or ``make tour``). Everything is seeded, so the figures printed are
the same on every machine.
"""

from __future__ import annotations

import math

import numpy as np

import dplib
from dplib.errors import BudgetExceededError

__all__ = ["main"]

_RULE = "-" * 78


def _population(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    ages = np.clip(rng.normal(41, 15, n), 18, 95).round()
    salaries = np.exp(rng.normal(10.8, 0.5, n)).round(-2)
    smoker = rng.random(n) < 0.22
    languages = rng.choice(4, size=n, p=[0.45, 0.3, 0.15, 0.1])
    return {"age": ages, "salary": salaries, "smoker": smoker, "language": languages}


def _row(label: str, truth: float, private: float, cost: str) -> str:
    return f"{label:<34}{truth:>12,.2f}{private:>14,.2f}   {cost}"


def main() -> None:
    rng = np.random.default_rng(2024)
    people = _population(rng, 20_000)
    n = people["age"].size
    print(_RULE)
    print(f"dplib {dplib.__version__} tour: a synthetic town of {n:,} people, one privacy budget")
    print(_RULE)

    accountant = dplib.PrivacyAccountant(epsilon=2.0, delta=1e-6)
    print(f"{'release':<34}{'true value':>12}{'private':>14}   cost")

    accountant.spend(0.1, label="count of smokers")
    noisy = dplib.private_count(people["smoker"], 0.1, rng=rng)
    print(_row("smokers (discrete Laplace)", people["smoker"].sum(), noisy, "eps 0.1"))

    accountant.spend(0.4, label="mean salary")
    noisy = dplib.private_mean(people["salary"], 0, 250_000, 0.4, rng=rng)
    print(_row("mean salary, clamped to [0, 250k]", people["salary"].mean(), noisy, "eps 0.4"))

    accountant.spend(0.5, 1e-6, label="mean age (Gaussian)")
    noisy = dplib.gaussian_mechanism(people["age"].mean(), 77 / n, 0.5, 1e-6, rng=rng)
    sigma = dplib.gaussian_sigma(77 / n, 0.5, 1e-6)
    print(_row("mean age (Gaussian, analytic)", people["age"].mean(), noisy, f"eps 0.5, delta 1e-6, sigma {sigma:.4f}"))

    accountant.spend(0.5, label="age histogram")
    counts, edges = dplib.private_histogram(people["age"], [18, 30, 45, 65, 96], 0.5, rng=rng)
    true_counts, _ = np.histogram(people["age"], bins=edges)
    for lo, hi, truth, private in zip(edges[:-1], edges[1:], true_counts, counts, strict=True):
        print(_row(f"  aged {lo:.0f}-{hi - 1:.0f}", truth, private, "(one eps 0.5 for all bins)"))

    accountant.spend(0.5, label="most common language")
    votes = np.bincount(people["language"], minlength=4).astype(float)
    choice = dplib.exponential_mechanism(votes, 1.0, 0.5, rng=rng)
    print(_row("most common language (index)", float(np.argmax(votes)), float(choice), "eps 0.5"))

    print(_RULE)
    survey_truth = people["smoker"].astype(int)
    reports = dplib.randomized_response(survey_truth, math.log(3), rng=rng)
    estimate = dplib.rr_estimate(reports, math.log(3))
    std = math.sqrt(dplib.rr_variance(survey_truth.mean(), n, math.log(3)))
    print("Local DP survey, each person flips coins (randomized response, eps = ln 3 each):")
    print(f"  true smoker rate {survey_truth.mean():.4f}, estimate {estimate:.4f} (std {std:.4f})")
    print(_RULE)

    eps, delta = accountant.spent
    left_eps, left_delta = accountant.remaining
    print(f"budget spent: eps {eps:.2f}, delta {delta:.0e};  remaining: eps {left_eps:.2f}, delta {left_delta:.0e}")
    try:
        accountant.spend(0.5, label="one query too many")
    except BudgetExceededError as error:
        print(f"a further eps-0.5 query is refused before anything is released: {error}")
    print(_RULE)
    print("Next: `make test` runs the test suite; the notebooks live in notebooks/ (see README.md).")
