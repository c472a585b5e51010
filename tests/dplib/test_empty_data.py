"""Empty data is data: every release answers 0 records as it answers 1.

Under add/remove neighbours the empty dataset and a dataset of one record are neighbours. A
release that raises on the first and answers the second tells them apart with certainty (an
infinite privacy loss), whatever noise it adds otherwise. So every release in ``dplib.__all__``
(discovered as in tests/dplib/test_release_lattice.py: a privacy parameter and a source of randomness)
is run here on the input it receives from 0 records and from 1 record, and must answer both
with outputs of the same kind. For mechanisms whose input is a query answer (a count, scores,
a gradient sum) the 0-record input is that answer on the empty dataset (0, all-zero scores, an
empty batch of per-example gradients).

A release may refuse an empty dataset only when the size is public, so that the refusal depends
on public information alone: :data:`PUBLIC_SIZE_REFUSALS` lists them with the reason.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from releases import discovered_releases  # tests/support

import dplib
from dplib.synthesis.marginals import measure_marginals
from dplib.views.hierarchy import noisy_tree_counts

EPS = 1.0


def _nb(rows):
    X = np.asarray(rows, dtype=float).reshape(-1, 2)
    model = dplib.DPNaiveBayes(EPS, bounds=(0.0, 1.0), classes=[0, 1], random_state=0)
    return model.fit(X, np.zeros(X.shape[0], dtype=int)).theta_


def _sgd(rows):
    X = np.asarray(rows, dtype=float).reshape(-1, 2)
    model = dplib.DPSGDClassifier(
        EPS, 1e-5, classes=[0, 1], expected_n=100, batch_size=10, epochs=1, random_state=0
    )
    return model.fit(X, np.zeros(X.shape[0], dtype=int)).coefs_[0]


#: name -> (release on 0 records, release on 1 record).
ZERO_AND_ONE = {
    # (select_partitions: whether key 7 is released, a bool of one shape)
    "private_count_by_key": (
        lambda: dplib.private_count_by_key([], [], ["a", "b"], EPS, rng=0),
        lambda: dplib.private_count_by_key([1], ["a"], ["a", "b"], EPS, rng=0),
    ),
    "gaussian_count_by_key": (
        lambda: dplib.gaussian_count_by_key([], [], ["a", "b"], 0.5, rng=0),
        lambda: dplib.gaussian_count_by_key([1], ["a"], ["a", "b"], 0.5, rng=0),
    ),
    "private_sum_by_key": (
        lambda: dplib.private_sum_by_key([], [], [], ["a"], 0.0, 1.0, EPS, rng=0),
        lambda: dplib.private_sum_by_key([1], ["a"], [0.5], ["a"], 0.0, 1.0, EPS, rng=0),
    ),
    "private_rows_cap": (
        lambda: dplib.private_rows_cap([], EPS, upper=5, rng=0),
        lambda: dplib.private_rows_cap([1], EPS, upper=5, rng=0),
    ),
    "select_partitions": (
        lambda: np.isin([7], dplib.select_partitions([], [], EPS, 0.1, rng=0)),
        lambda: np.isin([7], dplib.select_partitions([1], [7], EPS, 0.1, rng=0)),
    ),
    "private_quantiles": (
        lambda: dplib.private_quantiles([], [0.5, 0.9], 0, 1, EPS, grid=11, rng=0),
        lambda: dplib.private_quantiles([0.3], [0.5, 0.9], 0, 1, EPS, grid=11, rng=0),
    ),
    "private_variance": (
        lambda: dplib.private_variance([], 0.0, 1.0, EPS, rng=0),
        lambda: dplib.private_variance([0.3], 0.0, 1.0, EPS, rng=0),
    ),
    "private_count": (
        lambda: dplib.private_count([], EPS, rng=0),
        lambda: dplib.private_count([1.0], EPS, rng=0),
    ),
    "private_histogram": (
        lambda: dplib.private_histogram([], [0, 1, 2], EPS, rng=0)[0],
        lambda: dplib.private_histogram([0.5], [0, 1, 2], EPS, rng=0)[0],
    ),
    "private_sum": (
        lambda: dplib.private_sum([], 0.0, 1.0, EPS, rng=0),
        lambda: dplib.private_sum([1.0], 0.0, 1.0, EPS, rng=0),
    ),
    "private_mean": (  # add/remove: the size is private
        lambda: dplib.private_mean([], 0.0, 1.0, EPS, neighbouring="add_remove", rng=0),
        lambda: dplib.private_mean([1.0], 0.0, 1.0, EPS, neighbouring="add_remove", rng=0),
    ),
    "private_median": (
        lambda: dplib.private_median([], 0, 1, EPS, grid=11, rng=0),
        lambda: dplib.private_median([0.3], 0, 1, EPS, grid=11, rng=0),
    ),
    # notebook 09 (replace-one releases: n = 0 has no neighbour but is answered all the same)
    "smooth_median": (
        lambda: dplib.smooth_median([], 0, 1, EPS, 1e-5, rng=0),
        lambda: dplib.smooth_median([0.3], 0, 1, EPS, 1e-5, rng=0),
    ),
    "ptr_median": (  # both fail the test here: -1 for the bottom answer
        lambda: _none(dplib.ptr_median([], 0, 1, 0.5, EPS, 1e-5, rng=0)),
        lambda: _none(dplib.ptr_median([0.3], 0, 1, 0.5, EPS, 1e-5, rng=0)),
    ),
    "sample_and_aggregate": (  # add/remove: an empty block is a block
        lambda: dplib.sample_and_aggregate([], np.sum, 0, 1, EPS, blocks=3, grid=11, rng=0),
        lambda: dplib.sample_and_aggregate([0.3], np.sum, 0, 1, EPS, blocks=3, grid=11, rng=0),
    ),
    "private_mode": (
        lambda: dplib.private_mode([], 3, EPS, rng=0),
        lambda: dplib.private_mode([1], 3, EPS, rng=0),
    ),
    "mwem": (
        lambda: dplib.mwem([0.0, 0, 0, 0], np.eye(4), EPS, 2, rng=0),
        lambda: dplib.mwem([1.0, 0, 0, 0], np.eye(4), EPS, 2, rng=0),
    ),
    "hierarchical_histogram": (
        lambda: dplib.hierarchical_histogram([0, 0, 0, 0], EPS, rng=0).levels[1],
        lambda: dplib.hierarchical_histogram([1, 0, 0, 0], EPS, rng=0).levels[1],
    ),
    "privtree_histogram": (
        lambda: dplib.privtree_histogram(np.zeros((4, 3)), EPS, rng=0)[0],
        lambda: dplib.privtree_histogram(np.eye(4, 3) * [1, 0, 0], EPS, rng=0)[0],
    ),
    "randomized_response": (
        lambda: dplib.randomized_response(np.zeros(0, int), EPS, rng=0),
        lambda: dplib.randomized_response(np.ones(1, int), EPS, rng=0),
    ),
    "k_randomized_response": (
        lambda: dplib.k_randomized_response(np.zeros(0, int), 3, EPS, rng=0),
        lambda: dplib.k_randomized_response(np.ones(1, int), 3, EPS, rng=0),
    ),
    "unary_encoding": (
        lambda: dplib.unary_encoding(np.zeros(0, int), 3, EPS, rng=0),
        lambda: dplib.unary_encoding(np.ones(1, int), 3, EPS, rng=0),
    ),
    "count_mean_sketch": (
        lambda: dplib.count_mean_sketch(np.zeros(0, int), 4, EPS, rng=0)[0],
        lambda: dplib.count_mean_sketch(np.ones(1, int), 4, EPS, rng=0)[0],
    ),
    "DPNaiveBayes": (lambda: _nb(np.empty((0, 2))), lambda: _nb([[0.5, 0.5]])),
    "DPSGDClassifier": (lambda: _sgd(np.empty((0, 2))), lambda: _sgd([[0.5, 0.5]])),
    # mechanisms on a query answer: the answer of 0 records
    "laplace_mechanism": (
        lambda: dplib.laplace_mechanism(0.0, 1.0, EPS, rng=0),
        lambda: dplib.laplace_mechanism(1.0, 1.0, EPS, rng=0),
    ),
    "discrete_laplace_mechanism": (
        lambda: dplib.discrete_laplace_mechanism(0, 1, EPS, rng=0),
        lambda: dplib.discrete_laplace_mechanism(1, 1, EPS, rng=0),
    ),
    "discrete_gaussian_mechanism": (
        lambda: dplib.discrete_gaussian_mechanism(0, 1, EPS, 1e-5, rng=0),
        lambda: dplib.discrete_gaussian_mechanism(1, 1, EPS, 1e-5, rng=0),
    ),
    "gaussian_mechanism": (
        lambda: dplib.gaussian_mechanism(0.0, 1.0, EPS, 1e-5, rng=0),
        lambda: dplib.gaussian_mechanism(1.0, 1.0, EPS, 1e-5, rng=0),
    ),
    "snapping_mechanism": (
        lambda: dplib.snapping_mechanism(0.0, 1.0, EPS, 10.0, rng=0),
        lambda: dplib.snapping_mechanism(1.0, 1.0, EPS, 10.0, rng=0),
    ),
    "exponential_mechanism": (
        lambda: dplib.exponential_mechanism([0.0, 0.0], 1, EPS, rng=0),
        lambda: dplib.exponential_mechanism([1.0, 0.0], 1, EPS, rng=0),
    ),
    "report_noisy_max": (
        lambda: dplib.report_noisy_max([0.0, 0.0], 1, EPS, rng=0),
        lambda: dplib.report_noisy_max([1.0, 0.0], 1, EPS, rng=0),
    ),
    "permute_and_flip": (
        lambda: dplib.permute_and_flip([0.0, 0.0], 1, EPS, rng=0),
        lambda: dplib.permute_and_flip([1.0, 0.0], 1, EPS, rng=0),
    ),
    "above_threshold": (
        lambda: _none(dplib.above_threshold([0.0, 0.0], 0.5, EPS, rng=0)),
        lambda: _none(dplib.above_threshold([1.0, 0.0], 0.5, EPS, rng=0)),
    ),
    "sparse_vector": (
        lambda: dplib.sparse_vector([0.0, 0.0], 0.5, EPS, 1, rng=0),
        lambda: dplib.sparse_vector([1.0, 0.0], 0.5, EPS, 1, rng=0),
    ),
    "noisy_gradient": (  # an empty Poisson batch: noise only
        lambda: dplib.noisy_gradient(np.zeros((0, 3)), 1.0, 1.0, 10.0, rng=0),
        lambda: dplib.noisy_gradient(np.ones((1, 3)), 1.0, 1.0, 10.0, rng=0),
    ),
}

#: Releases over records that are not in dplib.__all__'s discovery but answer counts of people.
MODULE_RELEASES = {
    "measure_marginals": (
        lambda: measure_marginals(np.zeros((0, 2), int), [2, 2], [(0,), (0, 1)], EPS, rng=0)[
            (0, 1)
        ],
        lambda: measure_marginals(np.zeros((1, 2), int), [2, 2], [(0,), (0, 1)], EPS, rng=0)[
            (0, 1)
        ],
    ),
    "noisy_tree_counts": (
        lambda: noisy_tree_counts([0, 0], [np.zeros(2, int)], EPS, rng=0)[0],
        lambda: noisy_tree_counts([1, 0], [np.zeros(2, int)], EPS, rng=0)[0],
    ),
}

#: Refusals of an empty dataset that depend only on public information, with the reason.
PUBLIC_SIZE_REFUSALS = {
    "private_mean(neighbouring='replace')": (
        lambda: dplib.private_mean([], 0.0, 1.0, EPS, neighbouring="replace", rng=0),
        "under replace-one the size n is public (neighbours have the same n)",
    ),
    "DPSGDClassifier() without expected_n": (
        lambda: dplib.DPSGDClassifier(EPS, 1e-5, classes=[0, 1], batch_size=1, random_state=0).fit(
            np.empty((0, 2)), np.zeros(0, dtype=int)
        ),
        "without expected_n the sampling rate is batch_size / n: n is declared public",
    ),
}


def _none(value):
    return -1 if value is None else value


def _kind(value) -> tuple:
    arr = np.asarray(value)
    return (type(value).__name__, arr.shape)


def test_every_release_is_run_on_zero_and_one_records():
    found = set(discovered_releases())
    missing = found - set(ZERO_AND_ONE)
    assert not missing, f"{sorted(missing)}: add their 0-record and 1-record calls to ZERO_AND_ONE"
    assert set(ZERO_AND_ONE) <= found, "stale entries"
    # the releases a review named are among them
    assert {"mwem", "DPNaiveBayes", "DPSGDClassifier"} <= found


@pytest.mark.parametrize("name", sorted(ZERO_AND_ONE) + sorted(MODULE_RELEASES))
def test_zero_records_are_answered_like_one(name):
    on_zero, on_one = {**ZERO_AND_ONE, **MODULE_RELEASES}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice" either
        zero, one = on_zero(), on_one()
    if name in {
        "randomized_response",
        "k_randomized_response",
        "unary_encoding",
        "count_mean_sketch",
    }:
        # local randomizers: one report per respondent, so 0 respondents give 0 reports of the
        # same kind (the number of reports is public in the local model)
        assert np.asarray(zero).shape[0] == 0 and np.asarray(one).shape[0] == 1
        assert np.asarray(zero).shape[1:] == np.asarray(one).shape[1:]
        assert np.asarray(zero).dtype == np.asarray(one).dtype
    else:
        assert _kind(zero) == _kind(one)
        assert np.all(np.isfinite(np.asarray(zero, dtype=float)))


@pytest.mark.parametrize("name", list(PUBLIC_SIZE_REFUSALS))
def test_refusals_of_empty_data_rest_on_public_sizes(name):
    call, _reason = PUBLIC_SIZE_REFUSALS[name]
    with pytest.raises(ValueError, match="must not be empty|n_samples|batch_size"):
        call()


def test_mwem_answers_an_empty_histogram_with_a_noisy_total():
    # add/remove: the total of the empty table is released as max(0 + Z, 1), like any other
    totals = {
        round(float(dplib.mwem([0.0] * 4, np.eye(4), EPS, 1, rng=s).sum())) for s in range(40)
    }
    assert min(totals) >= 1 and len(totals) > 1
    # replace-one: n = 0 is public; the zero table is the only answer, and no budget is spent
    assert np.array_equal(
        dplib.mwem([0.0] * 4, np.eye(4), EPS, 1, neighbouring="replace", rng=0), np.zeros(4)
    )
