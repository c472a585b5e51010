"""The difference attack: two harmless-looking aggregates, one person apart, reveal that person.

If a company publishes the average salary of its ``n`` engineers, and later of the ``n - 1``
who remain after one of them left, the departed engineer's salary is the difference of the two
totals: ``n * mean_before - (n - 1) * mean_after``. Thresholds ("no statistic on fewer than 10
people") do not help, since both aggregates are over many people.
"""

from __future__ import annotations

import math

from dplib._validation import check_integer

__all__ = ["difference_attack"]


def difference_attack(mean_before: float, n_before: int, mean_after: float, n_after: int) -> float:
    """Sum of the values of the people who left between two published means.

    Parameters
    ----------
    mean_before : float
        Mean over the ``n_before`` people of the first release.
    n_before : int
        Number of people in the first release, >= 1.
    mean_after : float
        Mean over the ``n_after`` people still there at the second release.
    n_after : int
        Number of people in the second release, ``0 <= n_after <= n_before``.

    Returns
    -------
    float
        ``n_before * mean_before - n_after * mean_after``: with one departure, that person's value.

    Examples
    --------
    >>> difference_attack(100.0, 4, 90.0, 3)
    130.0
    """
    n_before = check_integer(n_before, "n_before", minimum=1)
    n_after = check_integer(n_after, "n_after", minimum=0)
    if n_after > n_before:
        raise ValueError(f"n_after must be <= n_before={n_before}, got {n_after}")
    for name, value in (("mean_before", mean_before), ("mean_after", mean_after)):
        if not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
        if not math.isfinite(float(value)):
            raise ValueError(f"{name} must be finite, got {value!r}")
    return float(n_before * float(mean_before) - n_after * float(mean_after))
