"""Exact verdicts on a claimed violation of differential privacy: a neighbouring pair and an event.

A *witness* against the claim "``M`` is ``(epsilon, delta)``-DP" is a pair of neighbouring inputs
``x, x'`` and a set of outputs ``E`` with

    P[M(x) in E] > exp(epsilon) * P[M(x') in E] + delta,

which the definition forbids (Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth 2014,
Definition 2.4). For a mechanism with integer outputs whose law is known, an integer answer plus
discrete Laplace noise (the geometric mechanism of Ghosh, Roughgarden & Sundararajan 2009) or no
noise at all, both probabilities of a finite event are finite sums of closed-form terms.
:func:`discrete_laplace_event_bounds` encloses such a probability between two rationals with
certified error, by decimal interval arithmetic rounded outward at every step, and
:func:`exceeds_dp_bound` decides the inequality from two enclosures, refining them until the
verdict is certain. The verdict is a proof, not an estimate: the course's graders use it to accept
every valid witness and refuse every invalid one, whatever the student's reasoning.

Outward rounding: Python's :mod:`decimal` rounds ``+ - * /`` correctly in the context's rounding
mode (``ROUND_FLOOR`` for lower ends, ``ROUND_CEILING`` for upper ends), and ``Decimal.exp`` is
correctly rounded (half-even, so within half a unit in the last place); every exponential is
therefore widened by one unit in the last place before it is used.
"""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Callable, Iterable
from decimal import Decimal
from fractions import Fraction

__all__ = ["discrete_laplace_event_bounds", "exceeds_dp_bound"]

#: An enclosure ``(low, high)`` of a probability, or a function of the number of decimal digits
#: that returns one (so that :func:`exceeds_dp_bound` can ask for more digits when undecided).
Enclosure = tuple[Fraction, Fraction] | Callable[[int], tuple[Fraction, Fraction]]

_MAX_EVENT = 100_000
_DIGITS = (40, 120, 400, 1200)


def _context(digits: int, rounding: str) -> decimal.Context:
    return decimal.Context(
        prec=digits, rounding=rounding, Emin=-(10**9), Emax=10**9, traps=[decimal.InvalidOperation]
    )


def _rational(value, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, Fraction, Decimal)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if isinstance(value, Decimal) and not value.is_finite():
        raise ValueError(f"{name} must be finite, got {value!r}")
    return Fraction(value)


def _dec(value: Fraction, ctx: decimal.Context) -> Decimal:
    """``value`` rounded in ``ctx``'s direction (the division is the only rounding)."""
    return ctx.divide(Decimal(value.numerator), Decimal(value.denominator))


def _exp_bounds(x: Fraction, digits: int) -> tuple[Decimal, Decimal]:
    """Decimals ``lo <= exp(x) <= hi``."""
    floor, ceil = _context(digits, decimal.ROUND_FLOOR), _context(digits, decimal.ROUND_CEILING)
    lo = _dec(x, floor).exp(_context(digits, decimal.ROUND_HALF_EVEN))
    hi = _dec(x, ceil).exp(_context(digits, decimal.ROUND_HALF_EVEN))
    return floor.next_minus(lo), ceil.next_plus(hi)


def _power(base: Decimal, k: int, ctx: decimal.Context) -> Decimal:
    """``base ** k`` for ``0 <= base`` and integer ``k >= 0``, every product rounded in ``ctx``'s
    direction (square and multiply)."""
    result, square = Decimal(1), base
    while k:
        if k & 1:
            result = ctx.multiply(result, square)
        k >>= 1
        if k:
            square = ctx.multiply(square, square)
    return result


def _check_event(event: Iterable) -> list[int]:
    if isinstance(event, (str, bytes)) or not isinstance(event, Iterable):
        raise TypeError(
            f"event must be a finite collection of integers, got {type(event).__name__}"
        )
    points = []
    for point in event:
        if isinstance(point, bool) or not isinstance(point, numbers.Integral):
            raise TypeError(f"event must hold integers only, got {point!r}")
        points.append(int(point))
        if len(points) > _MAX_EVENT:
            raise ValueError(f"event must hold at most {_MAX_EVENT} integers")
    return sorted(set(points))


def discrete_laplace_event_bounds(
    event: Iterable[int], center: int, scale, *, digits: int = 40
) -> tuple[Fraction, Fraction]:
    """Certified bounds on ``P[center + Z in event]``, ``Z`` discrete Laplace of ``scale``.

    Parameters
    ----------
    event : iterable of int
        A finite set of integer outputs (repeats count once), at most 100 000 of them.
    center : int
        The exact (integer) answer the noise is added to.
    scale : int, float, Fraction or Decimal
        The scale ``s >= 0``, read exactly (a float as the rational it is). ``P(Z = z) =
        (1 - q) / (1 + q) * q**|z|`` with ``q = exp(-1 / s)``, the law
        :func:`dplib.mechanisms.discrete_laplace.sample_discrete_laplace` draws from; ``s = 0``
        means no noise (``Z = 0``).
    digits : int, optional
        Decimal digits of the interval arithmetic (at least 10; default 40).

    Returns
    -------
    (Fraction, Fraction)
        ``low <= P <= high``, both exact rationals; ``(0, 0)`` or ``(1, 1)`` exactly when the
        probability is exactly 0 or 1 (no noise), and ``(0, 0)`` for an empty event.

    Raises
    ------
    TypeError
        If ``event`` is not a collection of integers, ``center`` is not an integer or ``scale``
        not a real number.
    ValueError
        If ``scale`` is negative or not finite, ``digits < 10`` or the event is too large.

    Notes
    -----
    ``P = c(q) * sum_{o in event} q**|o - center|`` with ``c(q) = (1 - q)/(1 + q)``
    (Inusah & Kozubowski 2006). ``c`` decreases and every ``q**k`` increases in ``q``, so the
    lower end is ``c(q_hi) * sum q_lo**k`` and the upper end ``c(q_lo) * sum q_hi**k``, for
    ``q_lo <= q <= q_hi`` (every operation rounded outward). The width of the enclosure is of
    the order of ``|event| * 10**-digits``.

    Examples
    --------
    >>> lo, hi = discrete_laplace_event_bounds([0], 0, 1)
    >>> float(lo) <= math.tanh(0.5) <= float(hi)
    True
    >>> discrete_laplace_event_bounds([3, 4], 3, 0)
    (Fraction(1, 1), Fraction(1, 1))
    """
    points = _check_event(event)
    if isinstance(center, bool) or not isinstance(center, numbers.Integral):
        raise TypeError(f"center must be an integer, got {type(center).__name__}")
    s = _rational(scale, "scale")
    if s < 0:
        raise ValueError(f"scale must be >= 0, got {scale!r}")
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or digits < 10:
        raise ValueError(f"digits must be an integer >= 10, got {digits!r}")
    center = int(center)
    if s == 0:
        inside = center in points
        return Fraction(int(inside)), Fraction(int(inside))
    if not points:
        return Fraction(0), Fraction(0)
    floor, ceil = _context(digits, decimal.ROUND_FLOOR), _context(digits, decimal.ROUND_CEILING)
    q_lo, q_hi = _exp_bounds(-1 / s, digits)
    q_hi = min(q_hi, Decimal(1))
    # c(q) = (1 - q)/(1 + q): lower end at q_hi, upper end at q_lo
    c_lo = floor.divide(floor.subtract(Decimal(1), q_hi), ceil.add(Decimal(1), q_hi))
    c_hi = ceil.divide(ceil.subtract(Decimal(1), q_lo), floor.add(Decimal(1), q_lo))
    sum_lo = sum_hi = Decimal(0)
    for point in points:
        k = abs(point - center)
        sum_lo = floor.add(sum_lo, _power(q_lo, k, floor))
        sum_hi = ceil.add(sum_hi, _power(q_hi, k, ceil))
    low = max(Fraction(floor.multiply(c_lo, sum_lo)), Fraction(0))
    high = min(Fraction(ceil.multiply(c_hi, sum_hi)), Fraction(1))
    return low, high


def _enclosure(value: Enclosure, digits: int, name: str) -> tuple[Fraction, Fraction]:
    pair = value(digits) if callable(value) else value
    if not (isinstance(pair, tuple) and len(pair) == 2):
        raise TypeError(f"{name} must be a pair (low, high) or a function of digits returning one")
    low, high = (_rational(v, name) for v in pair)
    if not 0 <= low <= high <= 1:
        raise ValueError(f"{name} must satisfy 0 <= low <= high <= 1, got ({low}, {high})")
    return low, high


def exceeds_dp_bound(prob: Enclosure, prob_prime: Enclosure, epsilon, delta=0.0) -> bool:
    """Whether ``P > exp(epsilon) * P' + delta`` holds, decided with certainty from enclosures.

    Parameters
    ----------
    prob, prob_prime : (low, high) or callable
        Enclosures of ``P = P[M(x) in E]`` and ``P' = P[M(x') in E]``: exact pairs of rationals,
        or functions ``digits -> (low, high)`` such as a :func:`discrete_laplace_event_bounds`
        with its arguments bound, which are asked again with more digits while undecided.
    epsilon : real
        The claimed ``epsilon >= 0``, read exactly.
    delta : real, optional
        The claimed ``delta`` in ``[0, 1)`` (default 0).

    Returns
    -------
    bool
        ``True`` when the enclosures prove ``P > exp(epsilon) P' + delta`` (``(x, x', E)`` is then
        a witness that the claim is false), ``False`` when they prove the opposite. When even
        1 200 digits leave it undecided the two sides agree to about 1 200 digits, in practice
        an equality (an event on which the mechanism is exactly at its bound), and the answer is
        ``False``: not a witness.

    Raises
    ------
    TypeError, ValueError
        For a malformed enclosure, ``epsilon < 0``, ``delta`` outside ``[0, 1)``, or a
        non-finite value.

    Examples
    --------
    >>> exceeds_dp_bound((Fraction(1), Fraction(1)), (Fraction(0), Fraction(0)), 5.0)
    True
    >>> exceeds_dp_bound((Fraction(1, 2), Fraction(1, 2)), (Fraction(1, 4), Fraction(1, 4)), 1.0)
    False
    """
    eps = _rational(epsilon, "epsilon")
    if eps < 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    dlt = _rational(delta, "delta")
    if not 0 <= dlt < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    for digits in _DIGITS:
        p_lo, p_hi = _enclosure(prob, digits, "prob")
        r_lo, r_hi = _enclosure(prob_prime, digits, "prob_prime")
        e_lo, e_hi = (Fraction(v) for v in _exp_bounds(eps, digits))
        if p_lo > e_hi * r_hi + dlt:
            return True
        if p_hi <= e_lo * r_lo + dlt:
            return False
        if not (callable(prob) or callable(prob_prime)) and r_hi == 0 == r_lo and p_lo == p_hi:
            return p_lo > dlt  # exact, only exp(epsilon) * 0 was in doubt
    return False
