"""Argument checks shared by the integer-valued mechanisms (discrete Laplace and Gaussian).

Integer answers and sensitivities are refused beyond ``2**53`` (not exact as doubles), scales
beyond :data:`MAX_SCALE`; integral floats such as ``3.0`` are accepted as integers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import check_positive, check_sensitivity, check_size, refuse_masked

__all__ = ["MAX_SCALE"]

#: Largest accepted scale / sigma. Draws then stay far below 2**53, so every integer in the
#: bulk of the distribution is exactly representable by numpy's float-based samplers.
MAX_SCALE = 2.0**40
#: Largest accepted |value| and sensitivity: integers beyond 2**53 are not exact as doubles.
_MAX_INT = 2**53


#: Largest number of draws per call of a sampler (the output alone is 8 bytes a draw; the
#: discrete Gaussian's rejection step needs a few times more). Draw in several calls for more.
MAX_DRAWS = 2**27


# --------------------------------------------------------------------------- validation helpers


def check_draws(size: Any) -> tuple[int, ...] | None:
    """``size`` as a shape (``None`` stays ``None``) with at most :data:`MAX_DRAWS` entries."""
    shape = check_size(size)
    if shape is not None and math.prod(shape) > MAX_DRAWS:
        raise ValueError(
            f"size must ask for at most 2**27 = {MAX_DRAWS} draws per call (draw in several "
            f"calls for more), got {size!r}"
        )
    return shape


def check_scale(value: Any, name: str) -> float:
    out = check_positive(value, name)
    if out > MAX_SCALE:
        raise ValueError(f"{name} must be a finite number in (0, 2**40], got {value!r}")
    return out


def check_integer_sensitivity(sensitivity: Any) -> int:
    """Integer sensitivity >= 1; an integral float such as ``2.0`` is accepted."""
    value = check_sensitivity(sensitivity)  # TypeError for non-numbers, ValueError for NaN/inf/< 0
    if not (value.is_integer() and 1 <= value <= _MAX_INT):
        raise ValueError(
            "sensitivity must be an integer >= 1 (an integral float such as 1.0 is accepted), "
            f"got {sensitivity!r}"
        )
    return int(value)


def check_integer_values(value: Any, name: str = "value") -> np.ndarray:
    """Return ``value`` as an int64 array; refuse booleans, non-integers, NaN and huge values."""
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be an integer or an array of integers, got bool")
    refuse_masked(value, name)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise TypeError(
            f"{name} must be an integer or an array of integers, got {type(value).__name__}"
        ) from exc
    if arr.dtype.kind not in "iuf":
        raise TypeError(
            f"{name} must be an integer or an array of integers, got {type(value).__name__}"
            + (f" of dtype {arr.dtype}" if isinstance(value, np.ndarray) else "")
        )
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must not contain NaN or infinite values")
        bad = arr[arr != np.round(arr)]
        if bad.size:
            raise ValueError(
                f"{name} must contain integers only (integer mechanism), got {float(bad.flat[0])!r}"
            )
    if np.any(np.abs(arr.astype(np.float64)) > _MAX_INT):
        raise ValueError(f"{name} must contain integers with |value| <= 2**53")
    return arr.astype(np.int64)


def integer_output(noisy: np.ndarray) -> int | np.ndarray:
    return int(noisy) if noisy.ndim == 0 else noisy
