"""dplib: the reference differential-privacy library of the course.

Every notebook imports it and every hidden test trusts it. Plain functions over numpy arrays;
every random function takes a keyword ``rng`` (None, an int seed or a ``numpy.random.Generator``).

The public API is listed explicitly below and loaded lazily (PEP 562), so ``import dplib`` is
instant and a notebook pays only for what it uses.

Mechanisms
    randomized_response, rr_estimate, rr_variance, rr_epsilon, rr_truth_probability,
    k_randomized_response, k_rr_estimate, k_rr_variance, laplace_mechanism, laplace_scale,
    laplace_tail_bound, discrete_laplace_mechanism, discrete_laplace_pmf, sample_discrete_laplace,
    snapping_mechanism, snapping_scale, gaussian_mechanism, gaussian_sigma, gaussian_delta,
    gaussian_epsilon, discrete_gaussian_mechanism, discrete_gaussian_sigma, discrete_gaussian_delta,
    discrete_gaussian_pmf, sample_discrete_gaussian, exponential_mechanism,
    exponential_mechanism_probabilities, exponential_utility_bound, report_noisy_max,
    permute_and_flip, above_threshold, sparse_vector (the sparse vector technique)
Local DP and the shuffle model
    unary_encoding, unary_encoding_estimate, count_mean_sketch, count_mean_sketch_estimate,
    shuffle_epsilon_closed_form, shuffle_epsilon_numerical
Synthetic data and range queries
    mwem (multiplicative weights with the exponential mechanism), hierarchical_histogram,
    topdown_consistent, privtree_histogram; dplib.synthesis.marginals
Queries and sensitivities
    clamp, private_count, private_sum, private_mean, private_histogram, private_median,
    private_mode, median_utility, count_sensitivity, sum_sensitivity, mean_sensitivity,
    histogram_sensitivity, linear_query_sensitivity
Many rows per user, keys nobody listed, several quantiles
    bound_contributions, contribution_sensitivity, private_count_by_key, private_sum_by_key,
    gaussian_count_by_key (its rho-zCDP twin),
    private_rows_cap, select_partitions (partition selection), partition_keep_probability,
    partition_selection_delta, partition_threshold, quantile_utility, private_quantiles,
    private_variance
Beyond global sensitivity
    local_sensitivity, local_sensitivity_at_distance, smooth_sensitivity_median,
    smooth_laplace_parameters, smooth_median, distance_to_instability, ptr_median
    (propose-test-release), sample_and_aggregate, marginals_error_lower_bound (the packing bound),
    marginals_laplace_error
Accounting
    PrivacyAccountant, BudgetExceededError, PrivacyLeakWarning, the privacy events PureDpEvent,
    ApproxDpEvent, GaussianEvent and SampledGaussianEvent, sequential_composition, parallel_composition,
    advanced_composition, optimal_composition, rdp_gaussian, rdp_subsampled_gaussian, rdp_to_dp,
    zcdp_to_dp, pld_epsilon_subsampled_gaussian, dpsgd_epsilon, noise_multiplier_for
    PrivacyFilter and ZcdpFilter (budgets for adaptively chosen queries), ZcdpEvent,
    rogers2016_statistic, whitehouse2023_statistic, adaptive_composition_counterexample
Learning and auditing
    DPNaiveBayes, DPSGDClassifier, per_example_gradients, clip_gradients, noisy_gradient,
    poisson_sample, loss_threshold_attack, epsilon_lower_bound, audit_mechanism,
    audit_training_one_run, one_run_epsilon_lower_bound
Subpackages, in the order the course teaches them
    dplib.attacks (00: why anonymization fails), dplib.mechanisms (01-05, 07: the mechanisms;
    dplib.mechanisms.rr_confidence, randomized response's confidence intervals),
    dplib.queries (02-03, 09: private counts, sums, means and histograms, their sensitivities,
    private medians and modes; local and smooth sensitivity, propose-test-release,
    sample-and-aggregate, the packing lower bound), dplib.accounting (04-07), dplib.learning
    and dplib.dpsgd (02, 06: naive Bayes, DP-SGD), dplib.auditing (06), dplib.views (08:
    hierarchies and PrivTree for range queries), dplib.synthesis (08: MWEM and marginal
    synthesis), dplib.testing (statistical assertions) and dplib.datasets (the notebooks'
    seeded data)
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# name -> module that defines it. The single list of the public API.
_EXPORTS: dict[str, str] = {
    # errors
    "BudgetExceededError": "dplib.errors",
    "PrivacyLeakWarning": "dplib.errors",
    # randomized response
    "randomized_response": "dplib.mechanisms.randomized_response",
    "rr_estimate": "dplib.mechanisms.randomized_response",
    "rr_variance": "dplib.mechanisms.randomized_response",
    "rr_epsilon": "dplib.mechanisms.randomized_response",
    "rr_truth_probability": "dplib.mechanisms.randomized_response",
    "k_randomized_response": "dplib.mechanisms.randomized_response",
    "k_rr_estimate": "dplib.mechanisms.randomized_response",
    "k_rr_variance": "dplib.mechanisms.randomized_response",
    # Laplace
    "laplace_mechanism": "dplib.mechanisms.laplace",
    "laplace_scale": "dplib.mechanisms.laplace",
    "laplace_tail_bound": "dplib.mechanisms.laplace",
    # floating-point-safe mechanisms
    "discrete_laplace_mechanism": "dplib.mechanisms.discrete",
    "discrete_gaussian_mechanism": "dplib.mechanisms.discrete",
    "discrete_gaussian_sigma": "dplib.mechanisms.discrete",
    "discrete_gaussian_delta": "dplib.mechanisms.discrete",
    "discrete_laplace_pmf": "dplib.mechanisms.discrete",
    "discrete_gaussian_pmf": "dplib.mechanisms.discrete",
    "sample_discrete_laplace": "dplib.mechanisms.discrete",
    "sample_discrete_gaussian": "dplib.mechanisms.discrete",
    "snapping_mechanism": "dplib.mechanisms.snapping",
    "snapping_scale": "dplib.mechanisms.snapping",
    # Gaussian
    "gaussian_sigma": "dplib.mechanisms.gaussian",
    "gaussian_delta": "dplib.mechanisms.gaussian",
    "gaussian_epsilon": "dplib.mechanisms.gaussian",
    "gaussian_mechanism": "dplib.mechanisms.gaussian",
    # selection
    "exponential_mechanism": "dplib.mechanisms.exponential",
    "exponential_mechanism_probabilities": "dplib.mechanisms.exponential",
    "report_noisy_max": "dplib.mechanisms.exponential",
    "permute_and_flip": "dplib.mechanisms.exponential",
    # private selection built on the exponential mechanism
    "private_median": "dplib.queries.selection",
    "private_mode": "dplib.queries.selection",
    "median_utility": "dplib.queries.selection",
    "exponential_utility_bound": "dplib.queries.selection",
    # many queries, few answers paid for (sparse vector) and synthetic data (MWEM)
    "above_threshold": "dplib.mechanisms.sparse_vector",
    "sparse_vector": "dplib.mechanisms.sparse_vector",
    "mwem": "dplib.synthesis.mwem",
    # releases for many range queries and hierarchies (notebook 08)
    "hierarchical_histogram": "dplib.views.hierarchy",
    "topdown_consistent": "dplib.views.hierarchy",
    "privtree_histogram": "dplib.views.privtree",
    # local DP frequency oracles and amplification by shuffling (notebook 07)
    "unary_encoding": "dplib.mechanisms.frequency_oracles",
    "unary_encoding_estimate": "dplib.mechanisms.frequency_oracles",
    "count_mean_sketch": "dplib.mechanisms.frequency_oracles",
    "count_mean_sketch_estimate": "dplib.mechanisms.frequency_oracles",
    "shuffle_epsilon_closed_form": "dplib.accounting.shuffle",
    "shuffle_epsilon_numerical": "dplib.accounting.shuffle",
    # queries and sensitivities
    "clamp": "dplib.queries.aggregates",
    "private_count": "dplib.queries.aggregates",
    "private_sum": "dplib.queries.aggregates",
    "private_mean": "dplib.queries.aggregates",
    "private_histogram": "dplib.queries.aggregates",
    "count_sensitivity": "dplib.queries.sensitivity",
    "histogram_sensitivity": "dplib.queries.sensitivity",
    "sum_sensitivity": "dplib.queries.sensitivity",
    "mean_sensitivity": "dplib.queries.sensitivity",
    "linear_query_sensitivity": "dplib.queries.sensitivity",
    # many rows per user, keys nobody listed, several quantiles (issue 40)
    "bound_contributions": "dplib.queries.contributions",
    "contribution_sensitivity": "dplib.queries.contributions",
    "private_count_by_key": "dplib.queries.contributions",
    "gaussian_count_by_key": "dplib.queries.contributions",
    "private_sum_by_key": "dplib.queries.contributions",
    "private_rows_cap": "dplib.queries.contributions",
    "select_partitions": "dplib.queries.partition_selection",
    "partition_keep_probability": "dplib.queries.partition_selection",
    "partition_selection_delta": "dplib.queries.partition_selection",
    "partition_threshold": "dplib.queries.partition_selection",
    "quantile_utility": "dplib.queries.quantiles",
    "private_quantiles": "dplib.queries.quantiles",
    "private_variance": "dplib.queries.quantiles",
    # beyond global sensitivity (notebook 09)
    "local_sensitivity": "dplib.queries.local_sensitivity",
    "local_sensitivity_at_distance": "dplib.queries.local_sensitivity",
    "smooth_sensitivity_median": "dplib.queries.smooth_sensitivity",
    "smooth_laplace_parameters": "dplib.queries.smooth_sensitivity",
    "smooth_median": "dplib.queries.smooth_sensitivity",
    "distance_to_instability": "dplib.queries.propose_test_release",
    "ptr_median": "dplib.queries.propose_test_release",
    "sample_and_aggregate": "dplib.queries.sample_aggregate",
    "marginals_error_lower_bound": "dplib.queries.packing",
    "marginals_laplace_error": "dplib.queries.packing",
    # models
    "DPNaiveBayes": "dplib.learning.naive_bayes",
    "DPSGDClassifier": "dplib.dpsgd.classifier",
    # DP-SGD building blocks
    "per_example_gradients": "dplib.dpsgd.gradients",
    "clip_gradients": "dplib.dpsgd.clipping",
    "noisy_gradient": "dplib.dpsgd.optimizer",
    "poisson_sample": "dplib.dpsgd.optimizer",
    # auditing and attacks on models
    "loss_threshold_attack": "dplib.auditing.membership",
    "epsilon_lower_bound": "dplib.auditing.lower_bounds",
    "audit_mechanism": "dplib.auditing.lower_bounds",
    "audit_training_one_run": "dplib.auditing.canaries",
    "one_run_epsilon_lower_bound": "dplib.auditing.canaries",
    # accounting
    "PrivacyAccountant": "dplib.accounting.accountant",
    "PureDpEvent": "dplib.accounting.events",
    "ApproxDpEvent": "dplib.accounting.events",
    "GaussianEvent": "dplib.accounting.events",
    "SampledGaussianEvent": "dplib.accounting.events",
    "sequential_composition": "dplib.accounting.composition",
    "parallel_composition": "dplib.accounting.composition",
    "advanced_composition": "dplib.accounting.composition",
    "optimal_composition": "dplib.accounting.composition",
    "rdp_gaussian": "dplib.accounting.rdp",
    "rdp_subsampled_gaussian": "dplib.accounting.rdp",
    "rdp_to_dp": "dplib.accounting.rdp",
    "zcdp_to_dp": "dplib.accounting.rdp",
    "pld_epsilon_subsampled_gaussian": "dplib.accounting.pld",
    "dpsgd_epsilon": "dplib.accounting.dpsgd",
    "noise_multiplier_for": "dplib.accounting.dpsgd",
    # budgets for adaptively chosen queries and zCDP (issue 40)
    "ZcdpEvent": "dplib.accounting.events",
    "PrivacyFilter": "dplib.accounting.filters",
    "ZcdpFilter": "dplib.accounting.filters",
    "rogers2016_statistic": "dplib.accounting.filters",
    "whitehouse2023_statistic": "dplib.accounting.filters",
    "adaptive_composition_counterexample": "dplib.accounting.filters",
}

_SUBMODULES = (
    "testing",
    "accounting",
    "datasets",
    "attacks",
    "mechanisms",
    "queries",
    "learning",
    "dpsgd",
    "auditing",
    "views",
    "synthesis",
)

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # cache: later look-ups skip this function
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"dplib.{name}")
    raise AttributeError(f"module 'dplib' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))
