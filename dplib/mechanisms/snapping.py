"""The snapping mechanism (Mironov 2012): a Laplace mechanism that is safe on IEEE doubles.

The textbook Laplace mechanism computed in floating point leaks: the set of doubles that
``f(x) + lambda * ln(U)`` can produce depends on ``f(x)``, so seeing the output's low-order bits
can reveal the input (Mironov 2012, Section 3). The snapping mechanism closes the leak by
(Mironov 2012, Section 5.2)

1. clamping the input to ``[-B, B]``,
2. adding ``S * lambda * ln(U*)`` with a random sign ``S`` and ``U*`` uniform over *all* doubles
   in (0, 1), each drawn with probability equal to the length of the interval it stands for
   (not just over multiples of ``2**-53``),
3. rounding the sum to the nearest multiple of ``Lambda``, the smallest power of two
   ``>= lambda`` (exact in binary floating point), and
4. clamping again to ``[-B, B]``.

This is diffprivlib's ``Snapping`` mechanism (v0.6) as a plain vectorized function, written
afresh from the paper.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_data,
    check_epsilon,
    check_positive,
    check_sensitivity,
)
from dplib.mechanisms._integer import check_draws

__all__ = ["snapping_mechanism", "snapping_scale", "sample_uniform_double"]

#: The loss term of Mironov (2012), Section 5.2: the mechanism is (1/lambda + 2**-49 B/lambda)-DP.
_MIRONOV_SLACK = 2.0**-49
#: Largest bound-to-scale ratio the theorem allows: B < 2**46 lambda.
_MAX_RATIO = 2.0**46
#: Exponents below the smallest normal double (probability 2**-1022) are clipped to it.
_MIN_NORMAL_EXP = 1022


def snapping_scale(sensitivity: float, epsilon: float, bound: float) -> float:
    """Noise scale ``lambda`` that makes :func:`snapping_mechanism` epsilon-DP.

    Parameters
    ----------
    sensitivity : float
        Sensitivity ``Delta`` of the query, finite, > 0 and ``<= 2 * bound``.
    epsilon : float
        Target privacy loss, finite and > 0.
    bound : float
        The clamping bound ``B > 0``: inputs and outputs are clamped to ``[-B, B]``.

    Returns
    -------
    float
        ``lambda = (Delta + 2**-49 B) / epsilon``, rounded up by an ulp if float division made
        ``(Delta + 2**-49 B) / lambda`` exceed ``epsilon``.

    Raises
    ------
    TypeError
        If an argument is not a real number.
    ValueError
        If an argument is out of range, or if ``lambda < B < 2**46 lambda`` fails (the condition
        of Mironov's theorem): then increase ``bound`` or ``epsilon`` (first case) or decrease
        ``bound`` (second case).

    Notes
    -----
    Mironov (2012), Section 5.2 (the snapping theorem): for a query of sensitivity 1, the snapping
    mechanism with noise scale ``lambda`` is ``(1/lambda + 2**-49 B/lambda)``-DP when
    ``lambda < B < 2**46 lambda`` (the ``2**-49 B / lambda`` term bounds the rounding errors of
    ``ln``, ``*`` and ``+`` on doubles of magnitude up to ``B``). Measuring the query in units
    of ``Delta`` scales ``B`` and ``lambda`` by ``1/Delta`` and leaves the theorem's relative
    error bounds unchanged, which gives ``epsilon = (Delta + 2**-49 B) / lambda``; solving for
    ``lambda`` gives the formula above. Clamping to ``[-B, B]`` already limits the sensitivity
    to ``2B``, so a larger ``Delta`` is refused as a mistake.

    References
    ----------
    Mironov (2012), "On Significance of the Least Significant Bits for Differential Privacy",
    CCS, Section 5.2 (the theorem on the snapping mechanism).

    Examples
    --------
    >>> snapping_scale(1.0, 1.0, 16.0) == 1.0 + 2.0**-45
    True
    """
    delta_1 = check_sensitivity(sensitivity, allow_zero=False)
    epsilon = check_epsilon(epsilon)
    bound = check_positive(bound, "bound")
    if delta_1 > 2.0 * bound:
        raise ValueError(
            f"sensitivity must be <= 2 * bound = {2.0 * bound!r} (after clamping to [-bound, bound] "
            f"no two answers differ by more), got {sensitivity!r}"
        )
    numerator = delta_1 + _MIRONOV_SLACK * bound  # Mironov 2012, Sec. 5.2, in units of Delta
    lam = numerator / epsilon
    while numerator / lam > epsilon:
        lam = math.nextafter(lam, math.inf)
    if not lam < bound:
        raise ValueError(
            f"bound must be > the noise scale lambda = (sensitivity + 2**-49 bound) / epsilon = {lam!r} "
            f"(Mironov 2012, Section 5.2, needs lambda < bound < 2**46 lambda), got bound={bound!r}; "
            "increase bound or epsilon"
        )
    if not bound < _MAX_RATIO * lam:
        raise ValueError(
            f"bound must be < 2**46 lambda = {_MAX_RATIO * lam!r}, with lambda = (sensitivity + "
            f"2**-49 bound) / epsilon (Mironov 2012, Section 5.2, needs lambda < bound < 2**46 "
            f"lambda), got bound={bound!r}, sensitivity={sensitivity!r} and epsilon={epsilon!r}; "
            "decrease bound or epsilon, or increase sensitivity"
        )
    return lam


def _binade_index(count: int, generator: Any) -> np.ndarray:
    """``count`` i.i.d. integers ``j >= 1`` with ``P(j = k) = 2**-k`` exactly.

    ``j - 1`` is the number of leading zero bits of an infinite stream of fair bits, read 53 at
    a time: a 53-bit word ``w > 0`` contributes ``53 - bit_length(w)`` zeros and stops; ``w = 0``
    (probability ``2**-53``) contributes 53 zeros and draws another word. ``bit_length`` comes
    from ``frexp``, exact because ``w < 2**53`` converts to a double exactly. numpy's own
    ``geometric(0.5)`` would not do: it searches with 53-bit uniform doubles, so its tail stops
    near ``k = 53``.
    """
    zeros = np.zeros(count, dtype=np.int64)
    todo = np.arange(count)
    while todo.size:
        words = generator.integers(0, 2**53, size=todo.size, dtype=np.uint64)
        done = words != 0
        _, bit_length = np.frexp(words[done].astype(np.float64))
        zeros[todo[done]] += 53 - bit_length
        zeros[todo[~done]] += 53
        todo = todo[~done]
    return zeros + 1


def _uniform_doubles(count: int, generator: Any) -> np.ndarray:
    """``count`` draws of Mironov's ``U*``: uniform over the doubles in (0, 1), weighted by ulp."""
    # U* lies in the binade [2**-j, 2**(1-j)) with probability 2**-j, where every double is
    # equally likely: exponent geometric, 52-bit significand uniform (Mironov 2012, Section 5.2).
    j = np.minimum(_binade_index(count, generator), _MIN_NORMAL_EXP)
    significand = generator.integers(0, 2**52, size=count, dtype=np.uint64) | np.uint64(2**52)
    # significand < 2**53 is exact as a double; ldexp by a power of two is exact for normals.
    return np.ldexp(significand.astype(np.float64), -(j + 52))


def sample_uniform_double(size: int | tuple[int, ...] | None = None, *, rng: Any = None) -> Any:
    """Draw uniformly from *all* doubles in (0, 1), each with probability equal to its ulp.

    Parameters
    ----------
    size : None, int or tuple of int, optional
        Output shape; ``None`` returns one float.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness.

    Returns
    -------
    float or numpy.ndarray of float64
        ``U = (1 + M 2**-52) 2**-j`` with ``P(j = k) = 2**-k`` and ``M`` uniform on
        ``{0, ..., 2**52 - 1}``: ``P(U < 2**-k) = 2**-k`` for every ``k``, and values below
        ``2**-53`` carry a full 52-bit significand, unlike ``Generator.random()`` whose
        outputs are multiples of ``2**-53``.

    Notes
    -----
    This is the ``U*`` of Mironov (2012), Section 5.2 ("uniform over D ∩ (0, 1)", sampled by
    drawing the exponent geometrically and the significand uniformly). The exponent is exact
    (see ``_binade_index``) down to ``2**-1022``; the 2**-1022-probability event of a smaller
    exponent is clipped to the smallest normal binade (no subnormals are produced).

    References
    ----------
    Mironov (2012), "On Significance of the Least Significant Bits for Differential Privacy",
    CCS, Section 5.2.
    """
    shape = check_draws(size)
    generator = as_generator(rng)
    out = _uniform_doubles(math.prod(shape or ()), generator).reshape(shape or ())
    return float(out) if shape is None else out


def _power_of_two_at_least(x: float) -> int:
    """The integer ``m`` with ``2**(m - 1) < x <= 2**m`` (exact, via ``frexp``)."""
    mantissa, exponent = math.frexp(x)  # x = mantissa 2**exponent, mantissa in [0.5, 1)
    return exponent - 1 if mantissa == 0.5 else exponent


def snapping_mechanism(
    value: Any, sensitivity: float, epsilon: float, bound: float, *, rng: Any = None
) -> Any:
    """Release ``value`` with the snapping mechanism: epsilon-DP even on IEEE doubles.

    Parameters
    ----------
    value : float or array_like of float
        The true answer(s) ``f(x)``; clamped to ``[-bound, bound]`` first. NaN and infinities
        are refused. Each coordinate gets independent noise; ``sensitivity`` must bound the
        change of a single coordinate, and the guarantee composes over coordinates (a
        ``k``-vector costs ``k epsilon`` unless neighbours change one coordinate only).
    sensitivity : float
        Sensitivity ``Delta`` of the query, finite, > 0 and ``<= 2 * bound``.
    epsilon : float
        Privacy loss, finite and > 0.
    bound : float
        ``B > 0``; the query's answers are assumed (and forced) to lie in ``[-B, B]``. Shift a
        query with range ``[lo, hi]`` by ``(lo + hi) / 2`` first.
    rng : None, int or numpy.random.Generator, optional
        Source of randomness.

    Returns
    -------
    float or numpy.ndarray of float64
        ``clamp_B(round_Lambda(clamp_B(value) + S lambda ln U*))``: a multiple of ``Lambda``
        (the smallest power of two ``>= lambda``) or ``±B`` when the final clamp binds. A float
        for scalar input, otherwise an array of the same shape.

    Raises
    ------
    TypeError
        If ``value`` is not numeric or an argument is not a real number.
    ValueError
        If ``value`` contains NaN or infinity or is empty, or an argument is out of range (see
        :func:`snapping_scale`, which also enforces ``lambda < B < 2**46 lambda``).

    Notes
    -----
    Mironov (2012), Section 5.2, defines
    ``f~(D) = clamp_B(round_Lambda(clamp_B(f(D)) ⊕ S ⊗ lambda ⊗ LN(U*)))`` and proves
    that it is ``(1/lambda + 2**-49 B/lambda)``-DP for sensitivity 1 when
    ``lambda < B < 2**46 lambda``; :func:`snapping_scale` picks
    ``lambda = (Delta + 2**-49 B) / epsilon`` so that the total is ``epsilon``.
    Implementation: ``U*`` by :func:`sample_uniform_double` (geometric exponent, uniform 52-bit
    significand, vectorized); rounding by ``ldexp(rint(ldexp(y, -m)), m)`` with
    ``Lambda = 2**m``, exact because scaling by a power of two is exact (ties go to the even
    multiple). The theorem assumes a correctly rounded logarithm (crlibm in the paper);
    ``numpy.log`` is accurate to about one ulp but not proven correctly rounded, which is the
    one assumption of the proof this implementation does not meet exactly. Outputs are coarse:
    multiples of ``Lambda`` with ``lambda <= Lambda < 2 lambda``.

    References
    ----------
    Mironov (2012), "On Significance of the Least Significant Bits for Differential Privacy",
    CCS, Section 5.2 (the theorem on the snapping mechanism). Holohan et al., diffprivlib v0.6,
    ``diffprivlib.mechanisms.Snapping`` (reference implementation, sensitivity handled by
    rescaling to 1).

    Examples
    --------
    >>> out = snapping_mechanism(3.3, sensitivity=1.0, epsilon=1.0, bound=16.0, rng=0)
    >>> out % 2.0 == 0.0 or abs(out) == 16.0   # Lambda = 2 here, since lambda = 1 + 2**-45
    True
    """
    lam = snapping_scale(sensitivity, epsilon, bound)  # validates sensitivity, epsilon, bound
    bound = check_positive(bound, "bound")
    arr = check_data(value, "value")
    generator = as_generator(rng)
    m = _power_of_two_at_least(lam)  # Lambda = 2**m

    clamped = np.clip(arr, -bound, bound)  # step 1: clamp_B(f(D))
    u = _uniform_doubles(arr.size, generator).reshape(arr.shape)
    sign = np.where(generator.integers(0, 2, size=arr.shape) == 1, 1.0, -1.0)
    noisy = clamped + sign * (lam * np.log(u))  # step 2: ⊕ S ⊗ lambda ⊗ LN(U*)
    snapped = np.ldexp(np.rint(np.ldexp(noisy, -m)), m)  # step 3: nearest multiple of 2**m, exact
    out = np.clip(snapped, -bound, bound) + 0.0  # step 4: clamp_B; + 0.0 turns -0.0 into 0.0
    return float(out) if out.ndim == 0 else out
