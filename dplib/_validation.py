"""Input validation shared by every public function of dplib.

Each checker returns the cleaned value or raises an error that names the parameter, says what
is allowed and shows what was received (``"epsilon must be a finite number > 0, got -1"``).
Randomness is normalised by :func:`as_generator`, as in Scientific Python's SPEC 7.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = [
    "check_representable",
    "as_generator",
    "check_epsilon",
    "check_delta",
    "check_sensitivity",
    "check_positive",
    "check_probability",
    "check_integer",
    "check_bounds",
    "check_data",
    "check_bool",
    "check_real",
    "check_scores",
    "check_size",
]

RNGLike = None | int | np.random.Generator | np.random.SeedSequence


def as_generator(rng: Any = None, name: str = "rng") -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` from ``None``, an int seed or a Generator.

    Parameters
    ----------
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` draws fresh OS entropy; an int or SeedSequence seeds a new PCG64 generator; a
        Generator is used as it is (so that consecutive calls continue its stream).
    name : str
        The parameter's name in error messages (``"random_state"`` for estimators).

    Raises
    ------
    TypeError
        For anything else, including the legacy ``numpy.random.RandomState`` and the global
        ``numpy.random`` module, which dplib never uses.
    """
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"{name} seed must be a non-negative integer, got {rng}")
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"{name} must be None, a non-negative int seed or a numpy.random.Generator, "
        f"got {type(rng).__name__}"
    )


def _as_real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        # numpy 0-d arrays are accepted too
        if isinstance(value, np.ndarray) and value.ndim == 0 and np.issubdtype(value.dtype, np.number):
            value = value.item()
        else:
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float; it must be finite and strictly positive."""
    value = _as_real(epsilon, name)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {epsilon!r}")
    return value


def check_delta(delta: Any, name: str = "delta", *, allow_zero: bool = True) -> float:
    """Return ``delta`` as a float in [0, 1) (or (0, 1) when ``allow_zero`` is False)."""
    value = _as_real(delta, name)
    if allow_zero:
        if not (0.0 <= value < 1.0):
            raise ValueError(f"{name} must be in [0, 1), got {delta!r}")
    elif not (0.0 < value < 1.0):
        raise ValueError(f"{name} must be in (0, 1), got {delta!r}")
    return value


def check_sensitivity(sensitivity: Any, name: str = "sensitivity", *, allow_zero: bool = True) -> float:
    """Return ``sensitivity`` as a float; it must be finite and >= 0 (> 0 if not ``allow_zero``)."""
    value = _as_real(sensitivity, name)
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {sensitivity!r}")
    return value


def check_positive(value: Any, name: str) -> float:
    """Return ``value`` as a float; it must be finite and strictly positive."""
    out = _as_real(value, name)
    if not math.isfinite(out) or out <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return out


def check_probability(value: Any, name: str, *, low_open: bool = False, high_open: bool = False) -> float:
    """Return ``value`` as a float in the interval [0, 1] with the requested ends open."""
    out = _as_real(value, name)
    low_ok = out > 0 if low_open else out >= 0
    high_ok = out < 1 if high_open else out <= 1
    if not (low_ok and high_ok):
        interval = f"{'(' if low_open else '['}0, 1{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return out


def check_integer(value: Any, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int (numpy integers accepted, bools and floats refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    out = int(value)
    if minimum is not None and out < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return out


def check_bounds(lower: Any, upper: Any) -> tuple[float, float]:
    """Return ``(lower, upper)`` as floats; both finite and ``lower < upper``."""
    lo = _as_real(lower, "lower")
    hi = _as_real(upper, "upper")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"lower and upper must be finite, got lower={lower!r}, upper={upper!r}")
    if not lo < hi:
        raise ValueError(f"lower must be < upper, got lower={lower!r}, upper={upper!r}")
    return lo, hi


def check_data(
    data: Any,
    name: str = "data",
    *,
    allow_empty: bool = False,
    dtype: Any = float,
    ndim: int | None = None,
    records: bool = False,
) -> np.ndarray:
    """Return ``data`` as a numpy array, refusing what is not an array of real numbers.

    Refused with a ``TypeError``: strings (even numeric ones: ``"5"`` is not parsed), bytes,
    ``None``, complex numbers (their imaginary part would be lost silently), objects and ragged
    nesting. Refused with a ``ValueError``: NaN, infinities, an empty array (unless
    ``allow_empty``) and, when ``ndim`` is given, any other number of dimensions.

    Parameters
    ----------
    data : array_like
        Numbers. Booleans are accepted and become 0/1.
    name : str
        The parameter name used in error messages.
    allow_empty : bool
        Whether a zero-length array is acceptable.
    dtype : numpy dtype
        The dtype to convert to (float by default).
    ndim : int, optional
        The number of dimensions required.
    records : bool
        With ``ndim=1``: the values are records, one per person, and the message for a table says
        how to pass a column instead of letting it be flattened into more people.
    """
    try:
        raw = np.asarray(data)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise TypeError(f"{name} must be an array of numbers, got {type(data).__name__}") from exc
    if raw.dtype.kind not in "biuf":
        what = {"U": "strings", "S": "bytes", "c": "complex numbers", "O": "objects"}.get(
            raw.dtype.kind, f"values of dtype {raw.dtype}"
        )
        if data is None:
            what = "None"
        raise TypeError(f"{name} must be an array of numbers (real, or booleans), got {what}")
    arr = raw.astype(dtype, copy=False)
    if ndim is not None and arr.ndim != ndim:
        if ndim == 1 and records:  # a record is a row: a table must not be flattened
            hint = (
                "pass one column (table[:, j]), or count rows with len(table)"
                if arr.ndim >= 2
                else "wrap a single value in a list"
            )
            raise ValueError(
                f"{name} must be a 1-d array with one value per person, got shape {arr.shape}: "
                f"{hint}"
            )
        raise ValueError(f"{name} must be a {ndim}-d array, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must not contain NaN or infinite values")
    return arr


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` if it is a bool (or numpy bool); anything else, even 'yes' or 1, is refused."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_real(
    value: Any,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    open_minimum: bool = False,
    open_maximum: bool = False,
) -> float:
    """Return ``value`` as a finite float within the given bounds (an explicit range)."""
    out = _as_real(value, name)
    too_low = minimum is not None and (out <= minimum if open_minimum else out < minimum)
    too_high = maximum is not None and (out >= maximum if open_maximum else out > maximum)
    if not math.isfinite(out) or too_low or too_high:
        low = "" if minimum is None else f"{'>' if open_minimum else '>='} {minimum:g}"
        high = "" if maximum is None else f"{'<' if open_maximum else '<='} {maximum:g}"
        bounds = " and ".join(b for b in (low, high) if b)
        raise ValueError(
            f"{name} must be a finite number{' ' + bounds if bounds else ''}, got {value!r}"
        )
    return out


def check_scores(scores: Any, name: str = "scores") -> np.ndarray:
    """Return a 1-d float array of candidate scores: non-empty, finite."""
    arr = check_data(scores, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array of candidate scores, got shape {arr.shape}")
    return arr


def check_size(size: Any) -> tuple[int, ...] | None:
    """Return a sampler's ``size`` as a shape tuple (``None`` stays ``None``: one draw).

    Accepts a non-negative int or a tuple/list of them, as numpy's samplers do.
    """
    if size is None:
        return None
    dims = (size,) if not isinstance(size, tuple | list) else tuple(size)
    for dim in dims:
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim < 0:
            raise TypeError(f"size must be None, a non-negative int or a tuple of them, got {size!r}")
    return tuple(int(dim) for dim in dims)


def check_representable(value: Any, what: str, epsilon: float) -> Any:
    """Return ``value`` if every entry is finite, else refuse ``epsilon`` as too small.

    For results that grow like ``1 / epsilon`` (noise scales, debiased estimates, variances): a
    subnormal epsilon makes them overflow, and the error says so instead of returning inf.
    """
    if not np.all(np.isfinite(value)):
        raise ValueError(
            f"epsilon is too small for {what} to be representable as a float, got "
            f"epsilon={epsilon!r}"
        )
    return value
