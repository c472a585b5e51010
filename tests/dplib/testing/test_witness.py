"""dplib.testing.witness: certified event probabilities of discrete Laplace releases, exact verdicts.

Reference values: the discrete Laplace pmf ``(1 - q)/(1 + q) q**|k|``, ``q = exp(-1/s)``
(Inusah & Kozubowski 2006), evaluated independently with ``math`` in double precision (the
enclosure must contain it up to the double's own error) and with exact closed forms (a point mass,
the whole line, a symmetric pair).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dplib.mechanisms.discrete_laplace import discrete_laplace_pmf, sample_discrete_laplace
from dplib.testing import discrete_laplace_event_bounds, exceeds_dp_bound


def _pmf(k, s):
    q = math.exp(-1 / s)
    return (1 - q) / (1 + q) * q ** abs(k)


@pytest.mark.parametrize("scale", [0.3, 1, 2.5, 7, 100, Fraction(10, 3)])
@pytest.mark.parametrize("event", [[0], [1], [-4, 2, 9], list(range(-30, 31))])
def test_enclosure_contains_the_closed_form_and_is_tight(scale, event):
    lo, hi = discrete_laplace_event_bounds(event, 0, scale)
    want = sum(_pmf(k, float(scale)) for k in event)
    assert float(lo) <= want * (1 + 1e-12) and want * (1 - 1e-12) <= float(hi)
    assert hi - lo <= Fraction(1, 10**30) * max(len(event), 1)


def test_agrees_with_dplib_pmf_and_with_the_sampler_law():
    # the law is the one dplib's sampler draws from: pmf in closed form, then a frequency check
    lo, hi = discrete_laplace_event_bounds([4, 5, 6], 5, 2.0, digits=30)
    pmf = float(sum(discrete_laplace_pmf(k, 2.0) for k in (-1, 0, 1)))
    assert float(lo) <= pmf * (1 + 1e-12) and pmf * (1 - 1e-12) <= float(hi)
    draws = sample_discrete_laplace(2.0, size=200_000, rng=np.random.default_rng(3))
    share = np.mean(np.abs(draws) <= 1)
    # Hoeffding: P(|share - p| > t) <= 2 exp(-2 n t^2) = 1e-9 at t = 0.0102 for n = 200 000
    assert abs(share - pmf) < math.sqrt(math.log(2e9) / (2 * 200_000))


def test_the_whole_line_up_to_a_geometric_tail_and_a_point_mass():
    lo, hi = discrete_laplace_event_bounds(range(-200, 201), 0, 1)
    tail = 2 * math.exp(-201) / (1 + math.exp(-1))  # what the event leaves out
    assert 1 - Fraction(tail) - Fraction(1, 10**35) <= lo <= hi <= 1
    assert discrete_laplace_event_bounds([7], 7, 0) == (1, 1)
    assert discrete_laplace_event_bounds([6, 8], 7, 0) == (0, 0)
    assert discrete_laplace_event_bounds([], 7, 3.0) == (0, 0)
    assert discrete_laplace_event_bounds([7, 7, 7], 7, 0.0) == (1, 1)  # a set: repeats count once


def test_far_events_stay_positive():
    # q**100000 underflows a double; the decimal enclosure keeps a positive lower end
    lo, hi = discrete_laplace_event_bounds([100_000], 0, 1)
    assert 0 < lo <= hi < Fraction(1, 10**43000)


def test_verdicts_on_known_pairs():
    # Laplace scale 1 on neighbours 0 and 1 is exactly 1-DP: the point {0} has ratio e exactly
    tight = (
        lambda d: discrete_laplace_event_bounds([0], 0, 1, digits=d),
        lambda d: discrete_laplace_event_bounds([0], 1, 1, digits=d),
    )
    assert not exceeds_dp_bound(*tight, 1.0)  # equal: not a witness
    assert exceeds_dp_bound(*tight, 0.999)  # ... against any smaller claim
    assert not exceeds_dp_bound(*tight, 0.999, delta=0.01)  # ... unless delta absorbs it
    # scale 1/2 (a 2-DP release) against the claim 1
    assert exceeds_dp_bound(
        lambda d: discrete_laplace_event_bounds([0], 0, 0.5, digits=d),
        lambda d: discrete_laplace_event_bounds([0], 1, 0.5, digits=d),
        1.0,
    )
    # an output impossible on one side: infinite ratio one way, zero the other
    point = (Fraction(1), Fraction(1))
    other = lambda d: discrete_laplace_event_bounds([10], 11, 1, digits=d)  # noqa: E731
    assert exceeds_dp_bound(point, (Fraction(0), Fraction(0)), 50.0)
    assert not exceeds_dp_bound((Fraction(0), Fraction(0)), other, 0.0)
    assert not exceeds_dp_bound((Fraction(0), Fraction(0)), (Fraction(0), Fraction(0)), 0.0)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: discrete_laplace_event_bounds([0], 0, -1), ValueError),
        (lambda: discrete_laplace_event_bounds([0], 0, float("nan")), ValueError),
        (lambda: discrete_laplace_event_bounds([0], 0, float("inf")), ValueError),
        (lambda: discrete_laplace_event_bounds([0.5], 0, 1), TypeError),
        (lambda: discrete_laplace_event_bounds([True], 0, 1), TypeError),
        (lambda: discrete_laplace_event_bounds("01", 0, 1), TypeError),
        (lambda: discrete_laplace_event_bounds([0], 0.5, 1), TypeError),
        (lambda: discrete_laplace_event_bounds(range(200_000), 0, 1), ValueError),
        (lambda: discrete_laplace_event_bounds([0], 0, 1, digits=3), ValueError),
        (lambda: exceeds_dp_bound((0, 0), (0, 0), -1.0), ValueError),
        (lambda: exceeds_dp_bound((0, 0), (0, 0), float("nan")), ValueError),
        (lambda: exceeds_dp_bound((0, 0), (0, 0), 1.0, delta=1.0), ValueError),
        (lambda: exceeds_dp_bound((Fraction(1, 2), Fraction(1, 3)), (0, 0), 1.0), ValueError),
        (lambda: exceeds_dp_bound((0, 2), (0, 0), 1.0), ValueError),
        (lambda: exceeds_dp_bound([0, 0], (0, 0), 1.0), TypeError),
        (lambda: exceeds_dp_bound((0, 0), (0, 0), "1"), TypeError),
    ],
)
def test_bad_arguments_are_refused(call, error):
    with pytest.raises(error):
        call()
