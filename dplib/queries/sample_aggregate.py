"""Sample-and-aggregate: any statistic made private by running it on disjoint blocks.

Nissim, Raskhodnikova & Smith (2007), "Smooth sensitivity and sampling in private data
analysis", STOC, Section 4 (the sample-and-aggregate framework); in textbook form Dwork & Roth
(2014), Section 7.1. The statistic ``f`` is a black box with no known sensitivity: split the
records into ``k`` **disjoint** blocks, compute ``f`` on each, and release a private aggregate
of the ``k`` block values. One person is in one block, so adding, removing or replacing that
person changes **one block value** (any amount, within the public clamp range): the aggregate
must be private for a *replace-one* change of its ``k`` inputs, whatever the relation on the
records.

This module's version (simpler than the paper's center-of-attention aggregator):

* each record goes to a block drawn uniformly and independently (so that under add/remove the
  other records keep their blocks: conditionally on their blocks, the two neighbours' block
  values differ in one entry);
* each block value is ``f(block)`` clamped to ``[lower, upper]`` (NaN, e.g. ``f`` of an empty
  block, a result that is not a real number, and an exception raised by ``f`` all become the
  midpoint: whether ``f`` fails may depend on one record, so its failure must not escape);
* the aggregate is :func:`dplib.private_median` (exponential mechanism over a public grid,
  replace-one) or :func:`dplib.private_mean` (discrete Laplace on a grid, replace-one, ``k``
  public).

The output is epsilon-DP under add/remove and under replace-one neighbours of the records, and it
lies on a grid fixed in advance (no floating-point leak). It is accurate when ``f`` is stable on
blocks of ``n / k`` records: most block values then agree, and the private median finds them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_bounds,
    check_epsilon,
    check_integer,
    refuse_masked,
)
from dplib.queries.aggregates import private_mean
from dplib.queries.selection import private_median

__all__ = ["SAMPLE_AGGREGATORS", "block_values", "sample_and_aggregate"]

#: The aggregators of :func:`sample_and_aggregate`.
SAMPLE_AGGREGATORS = ("median", "mean")
#: Largest number of blocks.
_MAX_BLOCKS = 10**6


def _records(x: Any) -> np.ndarray:
    refuse_masked(x, "x")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"x must be an array of numbers, got {type(x).__name__}") from exc
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"x must be an array of numbers (one record per row), got dtype {arr.dtype}"
        )
    if arr.ndim not in (1, 2):
        raise ValueError(
            f"x must be 1-d (one value per person) or 2-d (one row per person), got shape {arr.shape}"
        )
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError("x must not contain NaN or infinite values")
    return arr


def block_values(
    x: Any,
    statistic: Callable[[np.ndarray], Any],
    blocks: int,
    lower: float,
    upper: float,
    *,
    rng: Any = None,
) -> np.ndarray:
    """The ``k`` clamped block values of sample-and-aggregate (not private on its own).

    Parameters
    ----------
    x : array_like, 1-d or 2-d
        The records (values or rows), one per person; may be empty.
    statistic : callable
        ``f(block) -> number``, called on each block (a sub-array of ``x``, possibly empty).
    blocks : int
        The number of blocks ``k``, in ``[1, 10**6]``.
    lower, upper : float
        The public clamp range of the block values.
    rng : None, int or numpy.random.Generator, keyword-only
        Draws each record's block, uniformly and independently.

    Returns
    -------
    numpy.ndarray
        ``k`` floats in ``[lower, upper]``: ``clip(f(block_j))``, the midpoint for NaN, a result
        that is not a real number, or an exception raised by ``f`` (never raised here).

    Raises
    ------
    TypeError, ValueError
        For bad records, a ``statistic`` that is not callable, ``blocks`` not an integer in
        ``[1, 10**6]`` or ``lower >= upper``.
    """
    arr = _records(x)
    if not callable(statistic):
        raise TypeError(f"statistic must be callable, got {type(statistic).__name__}")
    k = check_integer(blocks, "blocks", minimum=1)
    if k > _MAX_BLOCKS:
        raise ValueError(f"blocks must be an integer in [1, 10**6], got {blocks!r}")
    lo, hi = check_bounds(lower, upper)
    generator = as_generator(rng)
    return _block_values(arr, statistic, k, lo, hi, generator)


def _block_value(statistic, block: np.ndarray, lo: float, hi: float) -> float:
    """``f(block)`` clamped to ``[lo, hi]``; the midpoint when ``f`` gives NaN, something that is
    not a real number, or raises.

    Whether ``f`` raises may depend on one record (issue 49: a statistic that fails on a block
    holding a value above 9.5 answered 6.09 on one table and raised ``LinAlgError`` on its
    neighbour), so an exception must not escape: like a NaN, it maps to a value fixed in advance,
    and the block values of two neighbours still differ in one entry at most. Only ``Exception``
    is caught (a ``KeyboardInterrupt`` still stops the call).
    """
    midpoint = lo / 2 + hi / 2
    try:
        value = float(statistic(block))
    except Exception:  # noqa: BLE001 - any failure of the black box is one block's fallback
        return midpoint
    return min(max(value, lo), hi) if not math.isnan(value) else midpoint


def _block_values(arr, statistic, k, lo, hi, generator) -> np.ndarray:
    which = generator.integers(0, k, size=arr.shape[0])
    out = np.empty(k)
    for j in range(k):
        out[j] = _block_value(statistic, arr[which == j], lo, hi)
    return out


def sample_and_aggregate(
    x: Any,
    statistic: Callable[[np.ndarray], Any],
    lower: float,
    upper: float,
    epsilon: float,
    *,
    blocks: int,
    aggregator: str = "median",
    grid: Any = None,
    rng: Any = None,
) -> float:
    """An epsilon-DP release of any statistic by sample-and-aggregate.

    Parameters
    ----------
    x : array_like, 1-d or 2-d
        The records (values, or rows of a table), one per person; may be empty.
    statistic : callable
        ``f(block) -> number``, any function of a block of records (an empty block included).
        A NaN result, a result that is not a real number and an exception raised by ``f`` each
        count as the midpoint of ``[lower, upper]`` for that block: the call never raises
        because of what ``f`` does on the data, since whether it fails may depend on one
        record. (``KeyboardInterrupt`` is not caught.)
    lower, upper : float
        The public range of ``f``'s values, ``lower < upper``; block values are clamped to it.
    epsilon : float
        Finite, ``> 0``.
    blocks : int, keyword-only
        The number of disjoint blocks ``k`` (public), in ``[1, 10**6]``.
    aggregator : {"median", "mean"}, keyword-only
        :func:`dplib.private_median` of the block values (replace-one, on ``grid``) or
        :func:`dplib.private_mean` (replace-one, ``k`` public).
    grid : None, int or array_like, keyword-only
        The median's candidates (see :func:`dplib.private_median`); ignored by the mean.
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    float
        The private aggregate of the ``k`` block values.

    Raises
    ------
    TypeError, ValueError
        For bad records, ``statistic`` not callable, ``blocks`` not in ``[1, 10**6]``,
        ``lower >= upper``, ``epsilon`` not finite and ``> 0`` or an unknown aggregator; before
        any randomness is drawn.

    Notes
    -----
    Epsilon-DP under add/remove and under replace-one neighbours of the records: one person is in
    exactly one block, so the ``k`` block values of two neighbours differ in at most one entry
    (conditionally on the other records' blocks), and the aggregate is epsilon-DP for one changed
    entry. Nissim, Raskhodnikova & Smith (2007), Section 4; Dwork & Roth (2014), Section 7.1.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(3.0, 1.0, size=5000)
    >>> out = sample_and_aggregate(x, np.mean, 0.0, 10.0, 1.0, blocks=50, grid=201, rng=0)
    >>> abs(out - 3.0) < 0.5
    True
    """
    arr = _records(x)
    if not callable(statistic):
        raise TypeError(f"statistic must be callable, got {type(statistic).__name__}")
    lo, hi = check_bounds(lower, upper)
    eps = check_epsilon(epsilon)
    k = check_integer(blocks, "blocks", minimum=1)
    if k > _MAX_BLOCKS:
        raise ValueError(f"blocks must be an integer in [1, 10**6], got {blocks!r}")
    if not isinstance(aggregator, str):
        raise TypeError(
            f"aggregator must be one of {SAMPLE_AGGREGATORS}, got {type(aggregator).__name__}"
        )
    if aggregator not in SAMPLE_AGGREGATORS:
        raise ValueError(f"aggregator must be one of {SAMPLE_AGGREGATORS}, got {aggregator!r}")
    if aggregator == "median":
        # validate the grid before drawing: a dry run on the empty table costs nothing
        private_median([], lo, hi, eps, grid=grid, neighbouring="replace", rng=0)
    generator = as_generator(rng)
    values = _block_values(arr, statistic, k, lo, hi, generator)
    if aggregator == "median":
        return float(
            private_median(values, lo, hi, eps, grid=grid, neighbouring="replace", rng=generator)
        )
    return float(private_mean(values, lo, hi, eps, neighbouring="replace", rng=generator))
