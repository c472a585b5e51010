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
    "NUMPY_BIT_GENERATORS",
    "refuse_masked",
    "shown",
]

RNGLike = None | int | np.random.Generator | np.random.SeedSequence


def as_generator(rng: Any = None, name: str = "rng") -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` from ``None``, an int seed or a Generator.

    Parameters
    ----------
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` draws fresh OS entropy; an int or SeedSequence seeds a new PCG64 generator; a
        Generator is used as it is (so that consecutive calls continue its stream), if it is a
        ``numpy.random.Generator`` itself (not a subclass) over one of numpy's own bit
        generators (:data:`NUMPY_BIT_GENERATORS`).
    name : str
        The parameter's name in error messages (``"random_state"`` for estimators).

    Raises
    ------
    TypeError
        For anything else, including the legacy ``numpy.random.RandomState`` and the global
        ``numpy.random`` module, which dplib never uses, a subclass of ``Generator`` and a
        ``Generator`` over any other bit generator (a subclass of numpy's, or a hand-made one
        through ``capsule``): the bit-generator policy below.

    Notes
    -----
    **Bit-generator policy** (issue 49). dplib's exact samplers end every loop with a probability
    bounded away from 0 per round *for random bits*, and numpy's own ``permutation`` and
    ``integers`` (used for contribution bounding and partition selection) rely on the same; a
    stream that is not random (every word all ones, all zeros, ``0x5555...``, a counter) can keep
    a rejection loop going forever. Such a stream can only come from a hand-made bit generator,
    so dplib accepts exactly numpy's own (``PCG64``, ``PCG64DXSM``, ``MT19937``, ``Philox``,
    ``SFC64``, by exact type) and refuses any other with a ``TypeError`` before any draw. A
    release's privacy guarantee assumes uniform random bits in any case; the policy makes the
    assumption checked instead of silent. (The exact samplers of
    :mod:`dplib.mechanisms._exact` still end at once on an all-ones stream: their tests drive
    them directly with such a generator.)
    """
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return _checked_generator(rng, name)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"{name} seed must be a non-negative integer, got {rng}")
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"{name} must be None, a non-negative int seed or a numpy.random.Generator, "
        f"got {type(rng).__name__}"
    )


#: Integers at or beyond this are not representable as a double (float() raises OverflowError).
_DOUBLE_LIMIT = 2**1024

#: The bit generators dplib accepts (by exact type): numpy's own. See :func:`as_generator`.
NUMPY_BIT_GENERATORS = (
    np.random.PCG64,
    np.random.PCG64DXSM,
    np.random.MT19937,
    np.random.Philox,
    np.random.SFC64,
)


def _checked_generator(rng: np.random.Generator, name: str) -> np.random.Generator:
    """``rng`` if it is numpy's ``Generator`` over one of numpy's own bit generators, else TypeError."""
    bits = getattr(rng, "bit_generator", None)
    if type(rng) is not np.random.Generator or type(bits) not in NUMPY_BIT_GENERATORS:
        raise TypeError(
            f"{name} must be a numpy.random.Generator over one of numpy's own bit generators "
            f"(PCG64, PCG64DXSM, MT19937, Philox, SFC64), got a {type(rng).__name__} over "
            f"{type(bits).__name__}: a hand-made bit stream may be far from random, and then "
            "neither the privacy guarantee nor the samplers' termination holds (pass an int seed "
            "or numpy.random.default_rng(...))"
        )
    return rng


def shown(value: Any) -> str:
    """``repr(value)`` for an error message, with a huge integer abbreviated to its size."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        digits = len(str(abs(int(value))))
        if digits > 30:
            sign = "-" if value < 0 else ""
            return f"{sign}an integer of {digits} digits (beyond a double's 1.8e308)"
    return repr(value)


def as_real(value: Any, name: str) -> float:
    """``value`` as a float; an integer too large for a double becomes +-inf (refused by the
    callers' range checks, which then name the parameter and its range)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        # numpy 0-d arrays are accepted too
        if isinstance(value, np.ndarray) and value.ndim == 0 and np.issubdtype(value.dtype, np.number):
            value = value.item()
        else:
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:  # an int beyond 1.8e308: not a double, so not a finite parameter
        return math.inf if value > 0 else -math.inf


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float; it must be finite and strictly positive."""
    value = as_real(epsilon, name)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {shown(epsilon)}")
    return value


def check_delta(delta: Any, name: str = "delta", *, allow_zero: bool = True) -> float:
    """Return ``delta`` as a float in [0, 1) (or (0, 1) when ``allow_zero`` is False)."""
    value = as_real(delta, name)
    if allow_zero:
        if not (0.0 <= value < 1.0):
            raise ValueError(f"{name} must be in [0, 1), got {shown(delta)}")
    elif not (0.0 < value < 1.0):
        raise ValueError(f"{name} must be in (0, 1), got {shown(delta)}")
    return value


def check_sensitivity(sensitivity: Any, name: str = "sensitivity", *, allow_zero: bool = True) -> float:
    """Return ``sensitivity`` as a float; it must be finite and >= 0 (> 0 if not ``allow_zero``)."""
    value = as_real(sensitivity, name)
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {shown(sensitivity)}")
    return value


def check_positive(value: Any, name: str) -> float:
    """Return ``value`` as a float; it must be finite and strictly positive."""
    out = as_real(value, name)
    if not math.isfinite(out) or out <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {shown(value)}")
    return out


def check_probability(value: Any, name: str, *, low_open: bool = False, high_open: bool = False) -> float:
    """Return ``value`` as a float in the interval [0, 1] with the requested ends open."""
    out = as_real(value, name)
    low_ok = out > 0 if low_open else out >= 0
    high_ok = out < 1 if high_open else out <= 1
    if not (low_ok and high_ok):
        interval = f"{'(' if low_open else '['}0, 1{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {shown(value)}")
    return out


def check_integer(value: Any, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int (numpy integers accepted, bools and floats refused).

    An integer beyond a double's range (``|value| >= 2**1024``, e.g. ``10**400``) is refused with
    a ``ValueError`` naming ``name``: every count, size and step number of dplib enters some
    floating-point formula, where it would raise an ``OverflowError`` that names nothing.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    out = int(value)
    if minimum is not None and out < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {shown(value)}")
    if abs(out) >= _DOUBLE_LIMIT:
        low = "" if minimum is None else f" >= {minimum} and"
        raise ValueError(f"{name} must be an integer{low} below 2**1024, got {shown(value)}")
    return out


def check_bounds(lower: Any, upper: Any) -> tuple[float, float]:
    """Return ``(lower, upper)`` as floats; both finite and ``lower < upper``."""
    lo = as_real(lower, "lower")
    hi = as_real(upper, "upper")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"lower and upper must be finite, got lower={shown(lower)}, upper={shown(upper)}")
    if not lo < hi:
        raise ValueError(f"lower must be < upper, got lower={shown(lower)}, upper={shown(upper)}")
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

    Refused with a ``TypeError``: a masked array with masked entries (:func:`refuse_masked`),
    strings (even numeric ones: ``"5"`` is not parsed), bytes, ``None``, complex numbers (their imaginary part would be lost silently), objects and ragged
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
    refuse_masked(data, name)
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


def refuse_masked(data: Any, name: str) -> None:
    """Refuse a ``numpy.ma.MaskedArray`` (or a list holding one) that masks any entry.

    ``np.asarray`` drops a mask silently, so a masked value would be counted as data (issue 49:
    ``local_sensitivity(np.ma.array([1, 2, 99], mask=[0, 0, 1]), 0, 10)`` was 8.0). dplib does not
    guess whether a masked entry is a missing person or a value to keep: the error says how to
    say which (``x.compressed()`` drops the masked entries, ``x.filled(v)`` keeps them as ``v``).
    A masked array without a masked entry is an ordinary array.
    """
    parts = data if isinstance(data, list | tuple) else (data,)
    for part in parts:
        if isinstance(part, np.ma.MaskedArray) and np.ma.count_masked(part):
            raise TypeError(
                f"{name} is a masked array with {np.ma.count_masked(part)} masked entries; dplib "
                f"does not drop or fill values silently: pass {name}.compressed() to leave the "
                f"masked entries out, or {name}.filled(value) to keep them as a value"
            )


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` if it is a bool (or numpy bool); anything else, even 'yes' or 1, is refused."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {shown(value)}")
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
    out = as_real(value, name)
    too_low = minimum is not None and (out <= minimum if open_minimum else out < minimum)
    too_high = maximum is not None and (out >= maximum if open_maximum else out > maximum)
    if not math.isfinite(out) or too_low or too_high:
        low = "" if minimum is None else f"{'>' if open_minimum else '>='} {minimum:g}"
        high = "" if maximum is None else f"{'<' if open_maximum else '<='} {maximum:g}"
        bounds = " and ".join(b for b in (low, high) if b)
        raise ValueError(
            f"{name} must be a finite number{' ' + bounds if bounds else ''}, got {shown(value)}"
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
            f"epsilon={shown(epsilon)}"
        )
    return value
