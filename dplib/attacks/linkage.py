"""The linkage attack: join a de-identified table to a public one on the quasi-identifier.

Sweeney (1997) linked the Massachusetts Group Insurance Commission's "anonymous" hospital records
to the Cambridge voter roll on ZIP code, sex and birth date, and found the governor's record.
A record is re-identified when its quasi-identifier occurs exactly once in the released table and
exactly once in the public one: the attacker then pairs the two rows with no ambiguity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dplib.attacks._tables import check_table

__all__ = ["linkage_matches", "linkage_attack"]


def _keys(table: Mapping[str, Any], columns: Sequence[str]) -> list[tuple]:
    arrays = [np.asarray(table[c]).tolist() for c in columns]
    return list(zip(*arrays, strict=True))


def linkage_matches(
    released: Mapping[str, Any], public: Mapping[str, Any], quasi_identifiers: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Row pairs ``(i, j)`` linked unambiguously on the quasi-identifier.

    Row ``i`` of ``released`` and row ``j`` of ``public`` are linked when they agree on every
    quasi-identifier column and that combination of values occurs exactly once in each table.

    Parameters
    ----------
    released : dict of str to 1-d array
        The de-identified table (no names, but the quasi-identifier columns).
    public : dict of str to 1-d array
        The identified table (for example a voter roll) with the same quasi-identifier columns.
    quasi_identifiers : list of str
        Columns to join on, at least one.

    Returns
    -------
    released_rows, public_rows : numpy.ndarray of int
        Matching row indices, sorted by ``released_rows``.
    """
    if len(quasi_identifiers) == 0:
        raise ValueError("quasi_identifiers must name at least one column")
    check_table(released, quasi_identifiers, "released")
    check_table(public, quasi_identifiers, "public")
    left = _keys(released, quasi_identifiers)
    right = _keys(public, quasi_identifiers)
    left_count: dict[tuple, int] = {}
    for key in left:
        left_count[key] = left_count.get(key, 0) + 1
    right_index: dict[tuple, int] = {}
    right_count: dict[tuple, int] = {}
    for j, key in enumerate(right):
        right_count[key] = right_count.get(key, 0) + 1
        right_index[key] = j
    pairs = [
        (i, right_index[key])
        for i, key in enumerate(left)
        if left_count[key] == 1 and right_count.get(key, 0) == 1
    ]
    if not pairs:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    rows = np.asarray(pairs, dtype=int)
    return rows[:, 0], rows[:, 1]


def linkage_attack(
    released: Mapping[str, Any],
    public: Mapping[str, Any],
    quasi_identifiers: Sequence[str],
    *,
    identity: str = "name",
    sensitive: str = "diagnosis",
) -> dict[Any, Any]:
    """Re-identify records: ``{identity from public: sensitive value from released}``.

    Uses :func:`linkage_matches`; only unambiguous links are returned. A link can still be wrong:
    the released person may be missing from the public table while somebody else there shares
    their quasi-identifier. The attacker cannot see this, so the links are returned anyway.

    Parameters
    ----------
    released, public : dict of str to 1-d array
        The de-identified and the identified tables.
    quasi_identifiers : list of str
        Columns to join on.
    identity : str, default "name"
        Column of ``public`` that names the person.
    sensitive : str, default "diagnosis"
        Column of ``released`` to reveal.

    Returns
    -------
    dict
        Name -> sensitive value, one entry per linked record.

    Examples
    --------
    >>> med = {"zip": np.array(["1", "1", "2"]), "diagnosis": np.array(["flu", "HIV", "asthma"])}
    >>> pub = {"zip": np.array(["1", "2", "3"]), "name": np.array(["Ann", "Bob", "Cy"])}
    >>> linkage_attack(med, pub, ["zip"])
    {'Bob': 'asthma'}
    """
    check_table(released, [*quasi_identifiers, sensitive], "released")
    check_table(public, [*quasi_identifiers, identity], "public")
    rows, cols = linkage_matches(released, public, quasi_identifiers)
    names = np.asarray(public[identity])[cols].tolist()
    values = np.asarray(released[sensitive])[rows].tolist()
    return dict(zip(names, values, strict=True))
