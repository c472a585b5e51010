"""The discrete Laplace (two-sided geometric) distribution and its mechanism.

``P(x) ∝ exp(-|x| / s)`` on the integers; adding it to an integer answer with
``s = Delta / epsilon`` is epsilon-DP (Ghosh, Roughgarden & Sundararajan 2009, the geometric
mechanism). Draws are exact, in integer arithmetic (:mod:`dplib.mechanisms._exact`; see
:mod:`dplib.mechanisms.discrete`).
The discrete Gaussian sampler of :mod:`dplib.mechanisms.discrete_gaussian` proposes from this
distribution.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import NUMPY_BIT_GENERATORS, as_generator, check_epsilon
from dplib.mechanisms._exact import discrete_laplace_of_float
from dplib.mechanisms._integer import (
    MAX_DRAWS,
    MAX_SCALE,
    check_draws,
    check_integer_sensitivity,
    check_integer_values,
    check_scale,
    integer_output,
)

__all__ = [
    "sample_discrete_laplace",
    "discrete_laplace_pmf",
    "discrete_laplace_mechanism",
]


# --------------------------------------------------------------------------- sampler


def discrete_laplace_noise(
    scale: float, shape: tuple[int, ...], generator: np.random.Generator
) -> np.ndarray:
    """Unvalidated core of :func:`sample_discrete_laplace`; returns an int64 array of ``shape``.

    Exact: the double ``scale`` is the rational ``Fraction(scale)`` and the draws are made in
    integer arithmetic (:func:`dplib.mechanisms._exact.sample_discrete_laplace_exact`; its
    tables are built once per scale and kept).
    """
    draws = discrete_laplace_of_float(scale, math.prod(shape), generator)
    return draws.reshape(shape)


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
    Exact, in integer arithmetic, for the double ``scale`` taken as the rational it is
    (``fractions.Fraction(scale)``). ``P(X = 0) = (1 - q)/(1 + q)`` and ``P(|X| >= k) =
    2 q**k / (1 + q)`` for ``k >= 1``, with a fair sign. Up to scale 1024 one uniform 64-bit word
    gives a value by inversion of this distribution function: the word is compared with the
    first 64 binary digits of the interval ends ``2 q**k / (1 + q)`` and ``q**k``, certified by
    integer-arithmetic bounds on ``exp`` (the ends are irrational, and a tie, of chance
    ``2**-64``, reads the next 64 bits: an exact comparison with the real number, Knuth & Yao
    1976); the tail ``|X| >= K`` (chance about ``2**-24``) is ``K`` plus a geometric variable
    drawn the same way. Above scale 1024 the geometric part ``Y = |X| - 1`` is drawn by its
    binary digits, independent Bernoulli(``q**(2**j) / (1 + q**(2**j))``) variables, each from
    16-bit words compared with certified digits (about ``log2(12 scale) + 3`` words a value).
    Below scale 1/40 it runs CKS20 Algorithm 2 instead (U uniform, Bernoulli(exp(-U/t)) by
    Algorithm 1, a geometric count of Bernoulli(e^-1) trials). No float uniform is drawn and no
    float decides an output; every loop ends each round with probability >= 1/2, and an all-ones
    bit stream returns 0. The tables are built once per scale (milliseconds; about 0.2 s at
    scale 1024) and kept. Values with ``|x| >= 2**62`` (the int64 range; probability below
    ``exp(-4 * 10**6)``) are not returned.
    Variance: ``2 q / (1 - q)**2``.

    References
    ----------
    Inusah & Kozubowski (2006), "A discrete analogue of the Laplace distribution", J. Statist.
    Plann. Inference 136(3). Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for
    Differential Privacy", NeurIPS, Algorithms 1 and 2. Knuth & Yao (1976), "The complexity of
    nonuniform random number generation".

    Examples
    --------
    >>> sample_discrete_laplace(2.0, size=3, rng=0).dtype
    dtype('int64')
    """
    if (  # the common call, valid as it is: the checks below would return these same values
        type(scale) is float
        and 0.0 < scale <= MAX_SCALE
        and type(size) is int
        and 0 <= size <= MAX_DRAWS
        and type(rng) is np.random.Generator
        and type(rng.bit_generator) in NUMPY_BIT_GENERATORS  # the policy of as_generator
    ):
        return discrete_laplace_of_float(scale, size, rng)
    scale = check_scale(scale, "scale")
    shape = check_draws(size)
    generator = as_generator(rng)
    out = discrete_laplace_noise(scale, () if shape is None else shape, generator)
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
    scale = check_scale(scale, "scale")
    k = check_integer_values(x, "x").astype(np.float64)
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
    arr = check_integer_values(value)
    delta_1 = check_integer_sensitivity(sensitivity)
    epsilon = check_epsilon(epsilon)
    scale = delta_1 / epsilon
    if delta_1 / scale > epsilon:
        scale = math.nextafter(scale, math.inf)
    scale = check_scale(scale, "sensitivity / epsilon")
    generator = as_generator(rng)
    return integer_output(arr + discrete_laplace_noise(scale, arr.shape, generator))
