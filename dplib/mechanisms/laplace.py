"""The Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006).

Releasing ``f(x) + Lap(Delta_1 / epsilon)``, where ``Delta_1`` is the L1 sensitivity of ``f``,
is epsilon-DP (Dwork & Roth 2014, Theorem 3.6).

.. warning::
   This is the *textbook* mechanism on IEEE doubles. Mironov (2012) showed that the set of
   doubles it can output depends on the true value, so an attacker who sees the exact output can
   sometimes tell two neighbouring inputs apart with certainty (the floating-point attack). Use
   :func:`dplib.discrete_laplace_mechanism` for integer queries and
   :func:`dplib.snapping_mechanism` for real-valued ones when the output leaves the classroom.
   The course uses this function to teach and to plot, the discrete mechanisms for counts, and
   the snapping mechanism in notebook 08 where the attack is demonstrated.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_data,
    check_epsilon,
    check_probability,
    check_sensitivity,
)

__all__ = ["laplace_scale", "laplace_mechanism", "laplace_tail_bound"]


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Scale ``b = Delta_1 / epsilon`` of the Laplace noise that makes a query epsilon-DP.

    Raises
    ------
    TypeError
        If an argument is not a real number.
    ValueError
        If ``sensitivity`` is not a finite number >= 0, ``epsilon`` not a finite number > 0, or
        the quotient is not a finite positive float (``1 / 5e-324`` overflows to inf; a positive
        sensitivity whose quotient underflows to 0 would add no noise at all).
    """
    delta_1 = check_sensitivity(sensitivity)
    eps = check_epsilon(epsilon)
    scale = delta_1 / eps
    if not math.isfinite(scale) or (delta_1 > 0 and scale == 0.0):
        raise ValueError(
            "sensitivity / epsilon must be a finite positive float (the Laplace scale), got "
            f"sensitivity={sensitivity!r} and epsilon={epsilon!r}; rescale the query"
        )
    return scale


def laplace_mechanism(value: Any, sensitivity: float, epsilon: float, *, rng: Any = None) -> Any:
    """Add Laplace noise of scale ``sensitivity / epsilon`` to a numeric query answer.

    Parameters
    ----------
    value : float or array_like of float
        The true answer(s) ``f(x)``. An array is a vector-valued query: each coordinate gets
        independent noise, and ``sensitivity`` must then be the L1 sensitivity of the whole vector.
    sensitivity : float
        L1 sensitivity ``Delta_1 = max ||f(x) - f(x')||_1`` over neighbouring datasets, >= 0.
    epsilon : float
        Privacy loss, finite and > 0.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness.

    Returns
    -------
    float or numpy.ndarray
        ``value + Lap(sensitivity / epsilon)``, a float for scalar input, otherwise an array of
        the same shape.

    Raises
    ------
    ValueError
        If epsilon is not a finite number > 0, sensitivity is negative or not finite,
        ``sensitivity / epsilon`` is not a finite float, value is empty or contains NaN or
        infinity, or the noisy value overflows a float.
    TypeError
        If value is not numbers (strings, even numeric ones, ``None`` and complex numbers are
        refused) or another argument is not a real number.

    Notes
    -----
    The density ratio at any output ``z`` for neighbouring ``x, x'`` is
    ``exp(eps (|z - f(x')|_1 - |z - f(x)|_1) / Delta_1) <= exp(eps)`` (Dwork & Roth 2014,
    Theorem 3.6). Vulnerable to the floating-point attack of Mironov (2012); see the module notes.

    References
    ----------
    Dwork, McSherry, Nissim & Smith (2006), "Calibrating Noise to Sensitivity in Private Data
    Analysis", TCC. Mironov (2012), "On Significance of the Least Significant Bits for
    Differential Privacy", CCS.

    Examples
    --------
    >>> noisy = laplace_mechanism(42.0, sensitivity=1.0, epsilon=0.5, rng=0)
    >>> isinstance(noisy, float)
    True
    """
    arr = check_data(value, "value")
    scale = laplace_scale(sensitivity, epsilon)
    generator = as_generator(rng)
    noisy = arr + generator.laplace(0.0, scale, size=arr.shape) if scale > 0 else arr.copy()
    if not np.all(np.isfinite(noisy)):  # |value| near 1e308 plus the noise
        raise ValueError(
            "value + noise overflows a float; value must stay well inside the float range "
            f"(|value| + 40 * sensitivity / epsilon < 1.8e308), got scale {scale!r}"
        )
    return float(noisy) if noisy.ndim == 0 else noisy


def laplace_tail_bound(sensitivity: float, epsilon: float, beta: float) -> float:
    """Half-width ``t`` with ``P(|Lap(b)| > t) = beta`` for ``b = sensitivity / epsilon``.

    ``P(|Lap(b)| >= t b) = exp(-t)`` (Dwork & Roth 2014, Fact 3.7), so ``t = b ln(1 / beta)``:
    with probability ``1 - beta`` the Laplace mechanism's answer is within ``t`` of the truth.
    For a vector of ``k`` coordinates, use ``beta / k`` per coordinate (union bound, Theorem 3.8).
    """
    beta = check_probability(beta, "beta", low_open=True, high_open=True)
    bound = laplace_scale(sensitivity, epsilon) * -math.log(beta)  # log(1/beta) without 1/beta
    if not math.isfinite(bound):
        raise ValueError(
            f"the tail bound (sensitivity / epsilon) * ln(1 / beta) overflows a float for "
            f"sensitivity={sensitivity!r}, epsilon={epsilon!r} and beta={beta!r}"
        )
    return bound
