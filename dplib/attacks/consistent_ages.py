"""Counting the age tuples of one group that agree with its published statistics.

The attack by hand on a census table (see :mod:`dplib.attacks.reconstruction` for the solver):
a group of ``count`` residents with a published median and mean age. Write the ages in order,
``a_1 <= ... <= a_count``; the median fixes the middle value(s) and the mean fixes the sum, so the
number of sorted tuples left collapses statistic by statistic. For a block of three men with
median age 30 and mean 44 (ages 0 to 125; notebook 00) only 31 triples remain.

:func:`count_consistent_ages` counts them by dynamic programming (exact, any group size up to 12);
:func:`enumerate_consistent_ages` lists them by brute force (small groups).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from dplib._validation import check_integer

__all__ = ["count_consistent_ages", "enumerate_consistent_ages"]


def _multiset_tables(length: int, values: range, max_sum: int) -> np.ndarray:
    """``T[l, s]`` = number of non-decreasing sequences of length l from ``values`` summing to s."""
    table = np.zeros((length + 1, max_sum + 1), dtype=np.int64)
    table[0, 0] = 1
    for v in values:
        for ell in range(1, length + 1):
            if v == 0:
                table[ell] += table[ell - 1]
            elif v <= max_sum:
                table[ell, v:] += table[ell - 1, : max_sum + 1 - v]
    return table


def _check_group_args(count: Any, max_age: Any, median: Any, mean: Any) -> tuple[int, int]:
    count = check_integer(count, "count", minimum=1)
    max_age = check_integer(max_age, "max_age", minimum=0)
    for name, value in (("median", median), ("mean", mean)):
        if value is not None and not math.isfinite(float(value)):
            raise ValueError(f"{name} must be finite or None, got {value!r}")
    return count, max_age


def _target_sum(count: int, mean: float | None, tolerance: float = 1e-6) -> int | None:
    """The integer sum of ages a mean implies, or -1 if no integer sum gives that mean."""
    if mean is None:
        return None
    total = float(mean) * count
    if abs(total - round(total)) > tolerance * max(1.0, count):
        return -1
    return int(round(total))


def count_consistent_ages(
    count: int, *, max_age: int, median: float | None = None, mean: float | None = None
) -> int:
    """Number of sorted integer age tuples that agree with a group's published statistics.

    Counts tuples ``a_1 <= ... <= a_count`` of integers in ``[0, max_age]`` whose median (the
    middle value, or the average of the two middle values for an even count) equals ``median``
    and whose mean equals ``mean``; a statistic given as ``None`` is not constrained.

    Parameters
    ----------
    count : int
        Size of the group, 1 to 12 (counts stay exact in 64-bit integers).
    max_age : int
        Largest possible age, 0 to 200.
    median, mean : float or None
        The published statistics.

    Returns
    -------
    int

    Examples
    --------
    Three men with median age 30 and mean 44 (ages 0 to 125): the two others sum to 102 and the
    youngest is 0 to 30, hence 31 possibilities.

    >>> count_consistent_ages(3, max_age=125, median=30, mean=44)
    31
    """
    count, max_age = _check_group_args(count, max_age, median, mean)
    if count > 12 or max_age > 200:
        raise ValueError(f"count must be <= 12 and max_age <= 200, got {count} and {max_age}")
    max_sum = count * max_age
    target = _target_sum(count, mean)
    if target is not None and not 0 <= target <= max_sum:
        return 0

    def total_of(row: np.ndarray) -> int:
        return int(row.sum()) if target is None else int(row[target])

    if median is None:
        return total_of(_multiset_tables(count, range(max_age + 1), max_sum)[count])

    twice = 2.0 * float(median)
    if abs(twice - round(twice)) > 1e-9:
        return 0
    twice = int(round(twice))
    k = count // 2
    if count % 2 == 1:
        if twice % 2 or not 0 <= twice // 2 <= max_age:
            return 0
        m = twice // 2
        low = _multiset_tables(k, range(0, m + 1), max_sum)[k]
        high = _multiset_tables(k, range(m, max_age + 1), max_sum)[k]
        conv = np.convolve(low, high)[: max_sum + 1]
        shifted = np.zeros(max_sum + 1, dtype=np.int64)
        shifted[m:] = conv[: max_sum + 1 - m]
        return total_of(shifted)
    total = 0
    for lo in range(0, max_age + 1):
        hi = twice - lo
        if hi < lo:
            break
        if hi > max_age:
            continue
        low = _multiset_tables(k - 1, range(0, lo + 1), max_sum)[k - 1]
        high = _multiset_tables(k - 1, range(hi, max_age + 1), max_sum)[k - 1]
        conv = np.convolve(low, high)[: max_sum + 1]
        shifted = np.zeros(max_sum + 1, dtype=np.int64)
        shifted[twice:] = conv[: max_sum + 1 - twice]
        total += total_of(shifted)
    return total


def enumerate_consistent_ages(
    count: int, *, max_age: int, median: float | None = None, mean: float | None = None
) -> np.ndarray:
    """All sorted age tuples counted by :func:`count_consistent_ages`, one per row.

    Brute force over sorted tuples, so only for ``count <= 4``.

    Returns
    -------
    numpy.ndarray of int, shape (n_tuples, count), rows in lexicographic order.
    """
    count, max_age = _check_group_args(count, max_age, median, mean)
    if count > 4:
        raise ValueError(f"count must be <= 4 for enumeration, got {count}")
    target = _target_sum(count, mean)
    rows = []
    free = count - 1 if target is not None else count
    for head in itertools.combinations_with_replacement(range(max_age + 1), free):
        if target is not None:
            last = target - sum(head)
            if last > max_age or (head and last < head[-1]) or last < 0:
                continue
            ages = (*head, last)
        else:
            ages = head
        if median is not None:
            mid = count // 2
            med = ages[mid] if count % 2 else (ages[mid - 1] + ages[mid]) / 2
            if abs(med - float(median)) > 1e-9:
                continue
        rows.append(ages)
    return np.asarray(rows, dtype=int).reshape(-1, count)
