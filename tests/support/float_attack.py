"""The floating-point attack's exact test (Mironov 2012): which doubles a neighbour can never output.

Shared by ``tests/dplib/queries/test_query_privacy.py`` and ``tests/dplib/test_release_lattice.py``.
"""

from __future__ import annotations

import numpy as np


def impossible_if_true_answer_is_one(outputs: np.ndarray) -> np.ndarray:
    """Which outputs ``y = fl(1 + z)`` (any double ``z``) can *never* produce.

    Mironov (2012), Section 3: the doubles ``fl(f(D) + z)`` depend on ``f(D)``. For ``f(D') = 1``
    every output in ``(-1, 1)`` is a multiple of ``2**-53``: if ``-2 <= z <= -1/2`` then
    ``1 + z`` is exact (Sterbenz) and a multiple of ``ulp(z) >= 2**-53``; if ``z > -1/2`` then
    ``fl(1 + z) >= 1/2``, a double of spacing ``>= 2**-53``; if ``z < -2`` then ``fl(1 + z) <= -1``.
    Whereas on ``f(D) = 0`` textbook Laplace outputs ``0 + z = z`` exactly, with a full 53-bit
    significand: any ``|y| < 1`` that is not a multiple of ``2**-53`` proves ``f(D) != 1``
    (an infinite privacy loss). The check is exact and does not depend on the sampler.
    """
    y = np.asarray(outputs, dtype=float)
    scaled = np.ldexp(y, 53)  # exact: scaling by a power of two
    return (np.abs(y) < 1.0) & (scaled != np.floor(scaled))


def assert_no_output_rules_out_the_neighbour(outputs_on_zero: np.ndarray) -> None:
    impossible = impossible_if_true_answer_is_one(outputs_on_zero)
    if impossible.any():
        raise AssertionError(
            f"{impossible.mean():.1%} of the outputs on the dataset with answer 0 are impossible "
            f"on its neighbour with answer 1 (e.g. {outputs_on_zero[impossible][0]!r}): the "
            "floating-point attack of Mironov (2012) tells the two apart with certainty"
        )


def impossible_on_a_lattice_neighbour(outputs: np.ndarray, step: float) -> np.ndarray:
    """Which outputs a neighbour whose every output is ``k * step`` (``k`` any integer, each with
    positive probability) can never produce: those off the grid ``step * Z``.

    For a release that puts both neighbours on the public grid (``smooth_median``),
    this is the whole of the floating-point attack: an output on the grid is reachable from the
    neighbour, one off it is proof that the table is not the neighbour. ``step`` must be a power
    of two (the check ``y / step`` is then exact). A float release (the median plus a float
    Laplace draw times a data-dependent scale) leaves nearly every output off any such grid.
    """
    y = np.asarray(outputs, dtype=float)
    mantissa, _ = np.frexp(step)
    if mantissa != 0.5:
        raise ValueError(f"step must be a power of two, got {step!r}")
    scaled = y / step  # exact: a power of two
    return scaled != np.floor(scaled)
