"""Small helpers for tables stored as dictionaries of equal-length numpy arrays."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["check_table", "group_codes"]


def check_table(table: Any, columns: Sequence[str], name: str = "table") -> int:
    """Check that ``table`` maps each of ``columns`` to a 1-d array of one common length.

    Returns the number of rows. Raises ``TypeError`` if ``table`` is not a mapping, and
    ``ValueError`` naming the column if a column is missing, not 1-d or of another length.
    """
    if not isinstance(table, Mapping):
        raise TypeError(
            f"{name} must be a dict of column name -> 1-d array, got {type(table).__name__}"
        )
    if isinstance(columns, str):
        raise TypeError(f"columns must be a list of column names, got the string {columns!r}")
    lengths = set()
    for column in columns:
        if column not in table:
            raise ValueError(f"{name} has no column {column!r}; it has {sorted(table)}")
        values = np.asarray(table[column])
        if values.ndim != 1:
            raise ValueError(f"column {column!r} of {name} must be 1-d, got shape {values.shape}")
        lengths.add(values.shape[0])
    if not lengths:
        lengths = {np.asarray(v).shape[0] for v in table.values()}
    if len(lengths) > 1:
        raise ValueError(f"the columns of {name} have different lengths: {sorted(lengths)}")
    return lengths.pop() if lengths else 0


def group_codes(table: Mapping[str, Any], columns: Sequence[str]) -> np.ndarray:
    """One integer per row, equal for two rows exactly when they agree on every column.

    Each column is coded with ``numpy.unique`` and the codes are combined column by column
    (re-coded after each step so that they never overflow).
    """
    n = check_table(table, columns)
    codes = np.zeros(n, dtype=np.int64)
    for column in columns:
        _, col_codes = np.unique(np.asarray(table[column]), return_inverse=True)
        combined = codes * (int(col_codes.max(initial=0)) + 1) + col_codes.ravel()
        _, codes = np.unique(combined, return_inverse=True)
        codes = codes.ravel().astype(np.int64)
    return codes
