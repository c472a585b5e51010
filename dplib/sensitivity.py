"""Global sensitivities of the everyday queries under the two neighbouring relations.

``"add_remove"`` (unbounded DP): neighbours differ by adding or removing one person's record.
``"replace"`` (bounded DP): neighbours have the same size and differ in one person's record.
A replacement is a removal followed by an addition, so replace-one sensitivities are at most twice
the add/remove ones (Dwork & Roth 2014, Definition 2.4 and the remark after it; Kifer &
Machanavajjhala 2011, "No free lunch in data privacy").
"""

from __future__ import annotations

from dplib._validation import check_bounds, check_integer

__all__ = [
    "NEIGHBOURING_RELATIONS",
    "check_neighbouring",
    "count_sensitivity",
    "histogram_sensitivity",
    "sum_sensitivity",
    "mean_sensitivity",
]

NEIGHBOURING_RELATIONS = ("add_remove", "replace")


def check_neighbouring(neighbouring: str) -> str:
    """Return ``neighbouring`` if it is ``"add_remove"`` or ``"replace"``.

    Raises
    ------
    TypeError
        If ``neighbouring`` is not a str.
    ValueError
        If it is another string.
    """
    if not isinstance(neighbouring, str):
        raise TypeError(
            f"neighbouring must be one of {NEIGHBOURING_RELATIONS}, got {type(neighbouring).__name__}"
        )
    if neighbouring not in NEIGHBOURING_RELATIONS:
        raise ValueError(
            f"neighbouring must be one of {NEIGHBOURING_RELATIONS}, got {neighbouring!r}"
        )
    return neighbouring


def count_sensitivity(neighbouring: str = "add_remove") -> float:
    """L1 sensitivity of a counting query ("how many records satisfy P?"): 1 for both relations.

    Adding or removing a record changes the count by at most 1; replacing one record can turn a
    record that satisfies P into one that does not, again by at most 1. (The *size* of the
    dataset has sensitivity 0 under replace-one: it is public there.)
    """
    check_neighbouring(neighbouring)
    return 1.0


def histogram_sensitivity(neighbouring: str = "add_remove") -> float:
    """L1 sensitivity of a histogram with disjoint bins: 1 (add/remove) or 2 (replace-one).

    A replacement moves one record from one bin to another: one count goes down by one and
    another goes up by one (Dwork & Roth 2014, Example 3.2).
    """
    return 1.0 if check_neighbouring(neighbouring) == "add_remove" else 2.0


def sum_sensitivity(lower: float, upper: float, neighbouring: str = "add_remove") -> float:
    """L1 sensitivity of the sum of values clamped to ``[lower, upper]``.

    ``max(|lower|, |upper|)`` under add/remove (one value appears or vanishes) and
    ``upper - lower`` under replace-one (one value moves across the whole range).
    """
    lo, hi = check_bounds(lower, upper)
    if check_neighbouring(neighbouring) == "add_remove":
        return max(abs(lo), abs(hi))
    return hi - lo


def mean_sensitivity(lower: float, upper: float, n: int, neighbouring: str = "replace") -> float:
    """L1 sensitivity of the mean of ``n`` values clamped to ``[lower, upper]``.

    ``(upper - lower) / n`` under replace-one, where ``n`` is public. Under add/remove the same
    bound holds with ``n`` the size of the larger of the two neighbours
    (``|mean(D + x) - mean(D)| = |x - mean(D)| / (n + 1)``), but ``n`` itself is then private, which
    is why :func:`dplib.private_mean` with ``neighbouring="add_remove"`` divides a noisy sum by a
    noisy count instead.
    """
    lo, hi = check_bounds(lower, upper)
    check_neighbouring(neighbouring)
    n = check_integer(n, "n", minimum=1)
    return (hi - lo) / n
