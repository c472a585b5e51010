"""Shared helpers of :mod:`dplib.testing`: the default failure probability, argument checks
(bad arguments raise ``ValueError`` or ``TypeError``, never ``AssertionError``) and the number
format used in the messages of failed assertions."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from dplib._validation import check_bounds, check_data, check_probability

__all__ = ["DEFAULT_FAILURE_PROB"]

DEFAULT_FAILURE_PROB = 1e-9


# --------------------------------------------------------------------------------------------
# argument checking and message helpers
# --------------------------------------------------------------------------------------------
def check_failure_prob(failure_prob: Any) -> float:
    return check_probability(failure_prob, "failure_prob", low_open=True, high_open=True)


def check_samples(samples: Any, name: str = "samples", *, minimum: int = 1) -> np.ndarray:
    arr = check_data(samples, name).ravel()
    if arr.size < minimum:
        raise ValueError(f"{name} must contain at least {minimum} values, got {arr.size}")
    return arr


def check_bounds_pair(bounds: Any) -> tuple[float, float] | None:
    if bounds is None:
        return None
    if (
        isinstance(bounds, str | bytes)
        or not isinstance(bounds, Sequence | np.ndarray)
        or len(bounds) != 2
    ):
        raise TypeError(f"bounds must be a pair (lower, upper), got {bounds!r}")
    return check_bounds(bounds[0], bounds[1])


def check_method(method: Any, allowed: tuple[str, ...]) -> str:
    if method not in allowed:
        raise ValueError(f"method must be one of {', '.join(map(repr, allowed))}, got {method!r}")
    return method


def check_real_scalar(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real | np.ndarray):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    out = (
        float(np.asarray(value, dtype=float).item())
        if isinstance(value, np.ndarray)
        else float(value)
    )
    if not math.isfinite(out):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return out


def check_within_bounds(
    arr: np.ndarray, bounds: tuple[float, float], name: str = "samples"
) -> None:
    lo, hi = bounds
    bad = (arr < lo) | (arr > hi)
    if np.any(bad):
        value = arr[np.argmax(bad)]
        raise AssertionError(
            f"{name} contain {np.count_nonzero(bad)} value(s) outside the declared bounds "
            f"[{lo:g}, {hi:g}], e.g. {value:g}; a correct implementation never produces them"
        )


def format_figure(x: float) -> str:
    return f"{x:.4g}"
