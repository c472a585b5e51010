"""Attacks on "anonymized" data: why removing names, aggregating and k-anonymity are not enough.

One job per module:

- :mod:`~dplib.attacks.uniqueness` -- equivalence classes and the fraction of unique records;
- :mod:`~dplib.attacks.linkage` -- joining a de-identified table to a public one (Sweeney);
- :mod:`~dplib.attacks.sparse` -- matching sparse records from a few approximate values
  (Narayanan & Shmatikov's Netflix attack);
- :mod:`~dplib.attacks.kanonymity` -- k-anonymity, generalisation, suppression, l-diversity;
- :mod:`~dplib.attacks.difference` -- recovering one value from two aggregates;
- :mod:`~dplib.attacks.consistent_ages` -- counting the age tuples one published row allows;
- :mod:`~dplib.attacks.reconstruction` -- rebuilding a census block from its published table;
- :mod:`~dplib.attacks.dinur_nissim` -- rebuilding a column of secret bits from too-accurate
  noisy subset sums (the Fundamental Law of Information Recovery).

Tables are dictionaries mapping column names to equal-length 1-d numpy arrays.
"""

from dplib.attacks.consistent_ages import count_consistent_ages, enumerate_consistent_ages
from dplib.attacks.difference import difference_attack
from dplib.attacks.dinur_nissim import noisy_subset_sums, reconstruct, subset_sum_queries
from dplib.attacks.kanonymity import (
    class_diversity,
    generalize_age,
    generalize_zip,
    homogeneous_fraction,
    is_k_anonymous,
    k_anonymity,
    l_diversity,
    suppress_small_classes,
)
from dplib.attacks.linkage import linkage_attack, linkage_matches
from dplib.attacks.reconstruction import (
    GroupStatistic,
    block_statistics,
    reconstruct_block,
    reconstruction_is_unique,
)
from dplib.attacks.sparse import (
    eccentricity,
    item_weights,
    sparse_linkage,
    sparse_linkage_scores,
)
from dplib.attacks.uniqueness import equivalence_class_sizes, uniqueness_fraction

__all__ = [
    "GroupStatistic",
    "block_statistics",
    "class_diversity",
    "count_consistent_ages",
    "difference_attack",
    "eccentricity",
    "enumerate_consistent_ages",
    "equivalence_class_sizes",
    "generalize_age",
    "generalize_zip",
    "homogeneous_fraction",
    "is_k_anonymous",
    "item_weights",
    "k_anonymity",
    "l_diversity",
    "linkage_attack",
    "linkage_matches",
    "noisy_subset_sums",
    "reconstruct",
    "reconstruct_block",
    "reconstruction_is_unique",
    "sparse_linkage",
    "sparse_linkage_scores",
    "subset_sum_queries",
    "suppress_small_classes",
    "uniqueness_fraction",
]
