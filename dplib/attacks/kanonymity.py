"""k-anonymity (Samarati & Sweeney 1998), how to reach it, and how it still leaks.

A table is *k-anonymous* on a quasi-identifier when every record shares its quasi-identifier
values with at least ``k - 1`` other records: no equivalence class is smaller than ``k``.
It is reached by *generalisation* (coarser values: a 3-digit ZIP prefix, an age band) and
*suppression* (dropping the records still in small classes). It does not protect the sensitive
column: if everyone in a class has the same diagnosis, the class reveals it (the homogeneity
attack), and an attacker who can rule out some values of a class by what they already know
narrows it further (the background-knowledge attack). *l-diversity* (Machanavajjhala et al.
2007) asks for at least ``l`` distinct sensitive values per class, which blocks the first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dplib._validation import check_integer
from dplib.attacks._tables import check_table, group_codes

__all__ = [
    "k_anonymity",
    "is_k_anonymous",
    "l_diversity",
    "generalize_zip",
    "generalize_age",
    "suppress_small_classes",
    "homogeneous_fraction",
    "class_diversity",
]


def k_anonymity(table: Mapping[str, Any], quasi_identifiers: Sequence[str]) -> int:
    """The largest ``k`` for which ``table`` is k-anonymous: its smallest equivalence class.

    Parameters
    ----------
    table : dict of str to 1-d array
        The released records.
    quasi_identifiers : list of str
        The columns an attacker may know.

    Returns
    -------
    int
        Size of the smallest group of records that agree on all ``quasi_identifiers``
        (0 for an empty table).

    Examples
    --------
    >>> t = {"zip": np.array(["021**", "021**", "024**"])}
    >>> k_anonymity(t, ["zip"])
    1
    """
    n = check_table(table, quasi_identifiers)
    if n == 0:
        return 0
    counts = np.bincount(group_codes(table, quasi_identifiers))
    return int(counts[counts > 0].min())


def is_k_anonymous(table: Mapping[str, Any], quasi_identifiers: Sequence[str], k: int) -> bool:
    """Whether every equivalence class on ``quasi_identifiers`` has at least ``k`` records."""
    k = check_integer(k, "k", minimum=1)
    return k_anonymity(table, quasi_identifiers) >= k


def l_diversity(table: Mapping[str, Any], quasi_identifiers: Sequence[str], sensitive: str) -> int:
    """Distinct l-diversity: the fewest distinct ``sensitive`` values found in any class.

    ``l = 1`` means some class is homogeneous: knowing that a person is in it reveals their
    sensitive value, however large the class.

    References
    ----------
    A. Machanavajjhala, D. Kifer, J. Gehrke and M. Venkitasubramaniam (2007), "l-Diversity:
    Privacy Beyond k-Anonymity", ACM TKDD 1(1).
    """
    n = check_table(table, [*quasi_identifiers, sensitive])
    if n == 0:
        return 0
    classes = group_codes(table, quasi_identifiers)
    _, values = np.unique(np.asarray(table[sensitive]), return_inverse=True)
    pairs = np.unique(np.stack([classes, values.ravel()], axis=1), axis=0)
    distinct = np.bincount(pairs[:, 0])
    return int(distinct[distinct > 0].min())


def class_diversity(
    table: Mapping[str, Any], quasi_identifiers: Sequence[str], sensitive: str
) -> np.ndarray:
    """For every record, the number of distinct ``sensitive`` values in its equivalence class.

    A record with diversity 1 is exposed to the homogeneity attack; with diversity 2, one piece
    of background knowledge ("she does not have the first one") reveals its value.

    Returns
    -------
    numpy.ndarray of int, shape (n_records,)
    """
    check_table(table, [*quasi_identifiers, sensitive])
    classes = group_codes(table, quasi_identifiers)
    if classes.size == 0:
        return np.zeros(0, dtype=int)
    _, values = np.unique(np.asarray(table[sensitive]), return_inverse=True)
    pairs = np.unique(np.stack([classes, values.ravel()], axis=1), axis=0)
    distinct = np.bincount(pairs[:, 0], minlength=classes.max() + 1)
    return distinct[classes]


def homogeneous_fraction(
    table: Mapping[str, Any], quasi_identifiers: Sequence[str], sensitive: str
) -> float:
    """Fraction of records whose whole equivalence class shares one ``sensitive`` value.

    For those people the homogeneity attack succeeds: anybody who knows their quasi-identifier
    learns their sensitive value, although their record is hidden among ``k`` others.
    """
    n = check_table(table, [*quasi_identifiers, sensitive])
    if n == 0:
        raise ValueError("table must not be empty")
    return float(np.mean(class_diversity(table, quasi_identifiers, sensitive) == 1))


def generalize_zip(zips: Any, keep: int = 3) -> np.ndarray:
    """Keep the first ``keep`` digits of each ZIP code and mask the rest with ``*``.

    >>> generalize_zip(np.array(["02138", "02459"]), keep=3).tolist()
    ['021**', '024**']
    """
    keep = check_integer(keep, "keep", minimum=0)
    zips = np.asarray(zips).astype(str)
    width = int(np.char.str_len(zips).max(initial=0))
    if keep > width:
        raise ValueError(f"keep must be <= the ZIP length {width}, got {keep}")
    return np.asarray([z[:keep] + "*" * (len(z) - keep) for z in zips.tolist()], dtype=f"<U{width}")


def generalize_age(ages: Any, width: int = 10) -> np.ndarray:
    """Replace each age by its band of ``width`` years, as a label ``"lo-hi"``.

    >>> generalize_age(np.array([3, 37, 40]), width=10).tolist()
    ['0-9', '30-39', '40-49']
    """
    width = check_integer(width, "width", minimum=1)
    ages = np.asarray(ages)
    if ages.size and not np.issubdtype(ages.dtype, np.integer):
        if not np.all(np.isfinite(ages)):
            raise ValueError("ages must be finite")
        ages = np.floor(ages).astype(int)
    lo = (ages // width) * width
    return np.char.add(np.char.add(lo.astype(str), "-"), (lo + width - 1).astype(str))


def suppress_small_classes(
    table: Mapping[str, Any], quasi_identifiers: Sequence[str], k: int
) -> dict[str, np.ndarray]:
    """Drop the records whose equivalence class has fewer than ``k`` records.

    The result is k-anonymous on ``quasi_identifiers`` (or empty).
    """
    k = check_integer(k, "k", minimum=1)
    check_table(table, quasi_identifiers)
    codes = group_codes(table, quasi_identifiers)
    keep = np.bincount(codes)[codes] >= k
    return {column: np.asarray(values)[keep] for column, values in table.items()}
