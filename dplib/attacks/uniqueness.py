"""How identifying is a combination of columns? Equivalence classes and uniqueness.

Two records fall in the same *equivalence class* on some columns when they agree on all of them.
A record is *unique* on those columns when its class has size one: anybody who knows these
attributes of the person (a quasi-identifier, such as ZIP code, sex and birth date) can single
out their record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dplib.attacks._tables import check_table, group_codes

__all__ = ["equivalence_class_sizes", "uniqueness_fraction"]


def equivalence_class_sizes(table: Mapping[str, Any], columns: Sequence[str]) -> np.ndarray:
    """For every record, the number of records (itself included) sharing its values on ``columns``.

    Parameters
    ----------
    table : dict of str to 1-d array
        The records, one array per column, all of the same length.
    columns : list of str
        The quasi-identifier. An empty list puts every record in one class.

    Returns
    -------
    numpy.ndarray of int, shape (n_records,)

    Examples
    --------
    >>> t = {"zip": np.array(["02138", "02138", "02139"]), "sex": np.array(["F", "M", "F"])}
    >>> equivalence_class_sizes(t, ["zip"]).tolist()
    [2, 2, 1]
    """
    check_table(table, columns)
    codes = group_codes(table, columns)
    return np.bincount(codes)[codes]


def uniqueness_fraction(table: Mapping[str, Any], columns: Sequence[str]) -> float:
    """Fraction of *records* that no other record matches on ``columns``.

    This counts people, not combinations: a table with combinations {a, a, b} has one unique
    record out of three (1/3), although half of its distinct combinations occur once.

    Parameters
    ----------
    table : dict of str to 1-d array
        The records.
    columns : list of str
        The quasi-identifier.

    Returns
    -------
    float
        ``#{records whose equivalence class has size 1} / #records``, in [0, 1].

    Raises
    ------
    ValueError
        If the table is empty or a column is missing.

    References
    ----------
    L. Sweeney (2000), "Simple Demographics Often Identify People Uniquely".

    Examples
    --------
    >>> t = {"zip": np.array(["02138", "02138", "02139"]), "sex": np.array(["F", "M", "F"])}
    >>> uniqueness_fraction(t, ["zip"])
    0.3333333333333333
    >>> uniqueness_fraction(t, ["zip", "sex"])
    1.0
    """
    n = check_table(table, columns)
    if n == 0:
        raise ValueError("table must not be empty")
    return float(np.mean(equivalence_class_sizes(table, columns) == 1))
