"""Privacy accounting: budgets, composition theorems, Renyi DP and privacy-loss distributions.

events       privacy events: immutable descriptions of releases
accountant   PrivacyAccountant: a budget that interprets events and refuses to be overspent
composition  sequential, parallel, advanced (DRV 2010) and optimal (KOV 2015) composition
rdp          Renyi DP of the (subsampled) Gaussian and its conversion to (epsilon, delta)
pld          privacy-loss distributions of the Poisson-subsampled Gaussian (tightest)
dpsgd        epsilon of a DP-SGD run, and the noise multiplier for a target epsilon
filters      privacy filters for adaptively chosen queries (basic, Rogers et al. 2016, Whitehouse
             et al. 2023) and a zCDP budget; why composition theorems need a filter then
"""

from dplib.accounting.accountant import PrivacyAccountant, Spend
from dplib.accounting.composition import (
    advanced_composition,
    optimal_composition,
    parallel_composition,
    sequential_composition,
)
from dplib.accounting.dpsgd import dpsgd_epsilon, noise_multiplier_for
from dplib.accounting.events import (
    ApproxDpEvent,
    GaussianEvent,
    PrivacyEvent,
    PureDpEvent,
    SampledGaussianEvent,
    ZcdpEvent,
)
from dplib.accounting.filters import (
    PrivacyFilter,
    ZcdpFilter,
    adaptive_composition_counterexample,
    rogers2016_statistic,
    whitehouse2023_statistic,
)
from dplib.accounting.pld import pld_epsilon_subsampled_gaussian
from dplib.accounting.rdp import rdp_gaussian, rdp_subsampled_gaussian, rdp_to_dp, zcdp_to_dp

__all__ = [
    "PrivacyAccountant",
    "Spend",
    "PrivacyEvent",
    "PureDpEvent",
    "ApproxDpEvent",
    "GaussianEvent",
    "SampledGaussianEvent",
    "ZcdpEvent",
    "PrivacyFilter",
    "ZcdpFilter",
    "rogers2016_statistic",
    "whitehouse2023_statistic",
    "adaptive_composition_counterexample",
    "sequential_composition",
    "parallel_composition",
    "advanced_composition",
    "optimal_composition",
    "rdp_gaussian",
    "rdp_subsampled_gaussian",
    "rdp_to_dp",
    "zcdp_to_dp",
    "pld_epsilon_subsampled_gaussian",
    "dpsgd_epsilon",
    "noise_multiplier_for",
]
