"""The discrete Laplace (two-sided geometric) distribution and its mechanism.

``P(x) ∝ exp(-|x| / s)`` on the integers; adding it to an integer answer with
``s = Delta / epsilon`` is epsilon-DP (Ghosh, Roughgarden & Sundararajan 2009, the geometric
mechanism). A draw is the difference of two i.i.d. geometric variables (Inusah & Kozubowski
2006), which is exact in distribution; numpy's ``Generator.geometric`` works in double
precision, so the probabilities are correct to within rounding of order ``2**-53`` (see
:mod:`dplib.mechanisms.discrete` for what is exact and what uses floating point). The discrete
Gaussian sampler of :mod:`dplib.mechanisms.discrete_gaussian` proposes from this distribution.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import as_generator, check_epsilon
from dplib.mechanisms._integer import (
    _check_draws,
    _check_integer_sensitivity,
    _check_integer_values,
    _check_scale,
    _integer_output,
)

__all__ = [
    "sample_discrete_laplace",
    "discrete_laplace_pmf",
    "discrete_laplace_mechanism",
]


# --------------------------------------------------------------------------- sampler


def _discrete_laplace(
    scale: float, shape: tuple[int, ...], generator: np.random.Generator
) -> np.ndarray:
    """Unvalidated core of :func:`sample_discrete_laplace`; returns an int64 array of ``shape``."""
    # G ~ Geometric(p) on {1, 2, ...} has P(G = k) = (1 - p)^(k - 1) p. With 1 - p = q = e^(-1/s),
    # G1 - G2 has P(x) = (1 - q)/(1 + q) q^|x| (Inusah & Kozubowski 2006).
    p = -math.expm1(-1.0 / scale)  # 1 - e^(-1/s), accurate for large s
    if p >= 1.0:  # q underflowed: the distribution is the point mass at 0 to double precision
        return np.zeros(shape, dtype=np.int64)
    first = generator.geometric(p, size=shape)
    second = generator.geometric(p, size=shape)
    return (first - second).astype(np.int64, copy=False)


def sample_discrete_laplace(
    scale: float, size: int | tuple[int, ...] | None = None, *, rng: Any = None
) -> Any:
    """Draw from the discrete Laplace distribution ``P(x) ∝ exp(-|x| / scale)`` on the integers.

    Parameters
    ----------
    scale : float
        The scale ``s``, a finite number in (0, 2**40]. It need not be an integer.
    size : None, int or tuple of int, optional
        Output shape; ``None`` (the default) returns one Python int. At most 2**27 draws per
        call (``ValueError`` beyond).
    rng : None, int or numpy.random.Generator, optional
        Source of randomness, normalised by :func:`dplib._validation.as_generator`.

    Returns
    -------
    int or numpy.ndarray of int64
        ``P(X = x) = (1 - q) / (1 + q) * q**|x|`` with ``q = exp(-1 / scale)``.

    Raises
    ------
    TypeError
        If ``scale`` is not a real number, ``size`` is not a shape or ``rng`` is not accepted.
    ValueError
        If ``scale`` is not a finite number in (0, 2**40].

    Notes
    -----
    ``X = G1 - G2`` with ``G1, G2`` i.i.d. geometric, ``P(G = k) = (1 - q) q**k``, is discrete
    Laplace (Inusah & Kozubowski 2006): this construction is *exact*. The two
    geometric draws use numpy's ``Generator.geometric``, which works in double precision,
    so the probabilities are correct to within double-precision rounding; CKS20 Algorithm 2 is the
    exact-arithmetic alternative. Variance: ``2 q / (1 - q)**2``.

    References
    ----------
    Inusah & Kozubowski (2006), "A discrete analogue of the Laplace distribution", J. Statist.
    Plann. Inference 136(3). Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for
    Differential Privacy", NeurIPS, Algorithm 2.

    Examples
    --------
    >>> sample_discrete_laplace(2.0, size=3, rng=0).dtype
    dtype('int64')
    """
    scale = _check_scale(scale, "scale")
    shape = _check_draws(size)
    generator = as_generator(rng)
    out = _discrete_laplace(scale, () if shape is None else shape, generator)
    return int(out) if shape is None else out


# --------------------------------------------------------------------------- pmf


def discrete_laplace_pmf(x: Any, scale: float) -> Any:
    """Probability mass of the discrete Laplace distribution, in closed form.

    Parameters
    ----------
    x : int or array_like of int
        Integer point(s); non-integers, NaN, booleans and strings are refused.
    scale : float
        The scale ``s``, a finite number in (0, 2**40].

    Returns
    -------
    float or numpy.ndarray of float64
        ``P(X = x) = tanh(1 / (2 s)) exp(-|x| / s)``, a float for scalar ``x``.

    Raises
    ------
    TypeError, ValueError
        As :func:`sample_discrete_laplace` for ``scale`` and :func:`discrete_laplace_mechanism`
        for ``x``.

    Notes
    -----
    ``(1 - q) / (1 + q) = tanh(1 / (2 s))`` with ``q = exp(-1/s)`` is the normalising constant
    of ``q**|x|`` (Inusah & Kozubowski 2006). The ratio ``P(x) / P(x + Delta)`` is at most
    ``exp(Delta / s)``, which is the epsilon-DP guarantee of :func:`discrete_laplace_mechanism`.

    References
    ----------
    Inusah & Kozubowski (2006), "A discrete analogue of the Laplace distribution", J. Statist.
    Plann. Inference 136(3).
    """
    scale = _check_scale(scale, "scale")
    k = _check_integer_values(x, "x").astype(np.float64)
    with np.errstate(over="ignore"):  # |k| / scale = inf for tiny scale: the mass is then 0
        out = math.tanh(0.5 / scale) * np.exp(-np.abs(k) / scale)
    return float(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------- mechanism


def discrete_laplace_mechanism(
    value: Any, sensitivity: Any, epsilon: float, *, rng: Any = None
) -> Any:
    """Add discrete Laplace noise of scale ``sensitivity / epsilon`` to integer query answer(s).

    Parameters
    ----------
    value : int or array_like of int
        The true answer(s). Integral floats (``3.0``) are accepted; ``2.5``, NaN, infinities,
        booleans and strings are refused. ``|value| <= 2**53``.
    sensitivity : int
        The L1 sensitivity ``Delta = max ||f(x) - f(x')||_1``, an integer >= 1 (an integral
        float such as ``1.0`` is accepted). For an array it is the L1 sensitivity of the vector.
    epsilon : float
        Privacy loss, finite and > 0.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness.

    Returns
    -------
    int or numpy.ndarray of int64
        ``value + X`` with ``X`` discrete Laplace of scale ``sensitivity / epsilon``: an int for
        scalar input, otherwise an int64 array of the same shape.

    Raises
    ------
    TypeError
        If ``value`` is not integer-valued numbers, or ``sensitivity``/``epsilon`` are not
        numbers, or ``rng`` is not accepted.
    ValueError
        If ``value`` has a non-integer, NaN or infinite entry or is empty, if ``sensitivity``
        is not an integer >= 1, if ``epsilon`` is not a finite number > 0, or if
        ``sensitivity / epsilon > 2**40``.

    Notes
    -----
    For neighbouring answers ``v, v'`` with ``||v - v'||_1 <= Delta`` the probability ratio of
    any output ``z`` is ``exp((|z - v'|_1 - |z - v|_1) / s) <= exp(Delta / s) = exp(epsilon)``
    with ``s = Delta / epsilon``: epsilon-DP (Ghosh, Roughgarden & Sundararajan 2009,
    the geometric mechanism). The scale is nudged up by one ulp if float
    division made ``Delta / s`` exceed ``epsilon``.

    References
    ----------
    Ghosh, Roughgarden & Sundararajan (2009), "Universally Utility-Maximizing Privacy
    Mechanisms", STOC. Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential
    Privacy", NeurIPS.

    Examples
    --------
    >>> isinstance(discrete_laplace_mechanism(42, sensitivity=1, epsilon=0.5, rng=0), int)
    True
    """
    arr = _check_integer_values(value)
    delta_1 = _check_integer_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon)
    scale = delta_1 / epsilon
    if delta_1 / scale > epsilon:
        scale = math.nextafter(scale, math.inf)
    scale = _check_scale(scale, "sensitivity / epsilon")
    generator = as_generator(rng)
    return _integer_output(arr + _discrete_laplace(scale, arr.shape, generator))
