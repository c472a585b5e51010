"""Noise on vectors of counts of people, safe on IEEE doubles by default.

The releases of many counts at once (:func:`dplib.views.hierarchy.hierarchical_histogram`,
:func:`dplib.views.hierarchy.noisy_tree_counts`, :func:`dplib.synthesis.marginals.measure_marginals`,
the block counts of :func:`dplib.views.privtree.privtree_histogram`) share one job: add noise of
scale ``sensitivity / epsilon`` to every count. By default the noise is discrete Laplace
(:func:`dplib.discrete_laplace_mechanism`, the geometric mechanism of Ghosh, Roughgarden &
Sundararajan 2009): integer counts plus integer noise are integers, whatever the data, so the
floating-point attack of Mironov (2012) on the textbook Laplace mechanism (outputs that are
impossible under a neighbouring dataset) has nothing to grip on. ``mechanism="laplace"`` keeps
the textbook ``count + Lap(scale)`` on doubles, for teaching only.

Accuracy: the discrete Laplace of scale ``s`` has variance ``2 q / (1 - q)**2`` with
``q = exp(-1 / s)`` (Inusah & Kozubowski 2006), which is *below* the textbook ``2 s**2`` (the
difference tends to ``1/6`` as ``s`` grows: ``2 q / (1 - q)**2 = 1 / (2 sinh(1 / (2 s))**2)``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import check_representable
from dplib.mechanisms._integer import MAX_SCALE
from dplib.mechanisms.discrete_laplace import discrete_laplace_noise

__all__ = [
    "COUNT_MECHANISMS",
    "check_count_mechanism",
    "check_counts",
    "noise_scale",
    "add_count_noise",
    "noise_variance",
]

#: The mechanisms for counts: the floating-point-safe default and the textbook one.
COUNT_MECHANISMS = ("discrete_laplace", "laplace")
#: Largest |count| accepted by the discrete mechanism (integers beyond are not exact as doubles).
MAX_COUNT = 2.0**53


def check_count_mechanism(mechanism: Any) -> str:
    """``mechanism`` as one of :data:`COUNT_MECHANISMS`, else TypeError/ValueError naming it."""
    if not isinstance(mechanism, str):
        raise TypeError(f"mechanism must be one of {COUNT_MECHANISMS}, got {type(mechanism).__name__}")
    if mechanism not in COUNT_MECHANISMS:
        raise ValueError(f"mechanism must be one of {COUNT_MECHANISMS}, got {mechanism!r}")
    return mechanism


def check_counts(arr: np.ndarray, name: str, mechanism: str) -> None:
    """Refuse negative counts, and (discrete mechanism) non-integers and counts beyond 2**53."""
    if np.any(arr < 0):
        raise ValueError(f"{name} must be counts of people, >= 0, got {float(arr[arr < 0].flat[0])!r}")
    if mechanism == "discrete_laplace":
        if np.any(arr != np.round(arr)):
            bad = float(arr[arr != np.round(arr)].flat[0])
            raise ValueError(
                f"{name} must be integer counts of people for mechanism='discrete_laplace', got {bad!r}"
            )
        if np.any(arr > MAX_COUNT):
            raise ValueError(f"{name} must be counts of at most 2**53 (exact as doubles), got {float(arr.max())!r}")


def noise_scale(sensitivity: int, epsilon: float) -> float:
    """``sensitivity / epsilon``, refused (naming epsilon) when it exceeds the sampler's 2**40."""
    with np.errstate(over="ignore"):
        scale = sensitivity / epsilon if epsilon > 0 else math.inf
    if not math.isfinite(scale) or scale > MAX_SCALE:
        raise ValueError(
            f"epsilon is too small: the noise scale {sensitivity} / epsilon must be at most 2**40, "
            f"got epsilon={epsilon!r}"
        )
    if sensitivity / scale > epsilon:  # float division rounded the scale down: nudge it up
        scale = math.nextafter(scale, math.inf)
    return scale


def add_count_noise(
    counts: np.ndarray, scale: float, mechanism: str, generator: np.random.Generator, epsilon: float
) -> np.ndarray:
    """``counts`` plus independent noise of scale ``scale`` on every entry, as a float array.

    ``"discrete_laplace"``: discrete Laplace noise (integers in, integers out, as float64 exactly
    up to 2**53 + noise); ``"laplace"``: textbook ``numpy`` Laplace noise on doubles. Refuses
    (naming epsilon) a result that overflows.
    """
    if mechanism == "discrete_laplace":
        noise = discrete_laplace_noise(scale, counts.shape, generator)
        return (np.rint(counts).astype(np.int64) + noise).astype(np.float64)
    noisy = counts + generator.laplace(0.0, scale, size=counts.shape)
    return check_representable(noisy, "the noisy counts", epsilon)


def noise_variance(scale: float, mechanism: str) -> float:
    """Variance of the noise on one count: ``1 / (2 sinh(1/(2s))**2)`` (discrete) or ``2 s**2``."""
    if mechanism == "laplace":
        return 2.0 * scale**2
    return 1.0 / (2.0 * math.sinh(0.5 / scale) ** 2)
