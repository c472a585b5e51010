"""Tests of dplib.testing._common: the argument checks every statistical assertion shares.

A bad argument is the caller's mistake, so it raises ``ValueError`` or ``TypeError``, never
``AssertionError`` (which would read as "the implementation under test is wrong").
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dplib.testing._common import (
    DEFAULT_FAILURE_PROB,
    check_bounds_pair,
    check_failure_prob,
    check_method,
    check_real_scalar,
    check_samples,
    check_within_bounds,
    format_figure,
)


def test_the_default_failure_probability_is_one_in_a_billion():
    assert DEFAULT_FAILURE_PROB == 1e-9


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, math.nan, math.inf])
def test_a_failure_probability_is_strictly_between_zero_and_one(bad):
    with pytest.raises(ValueError, match="failure_prob"):
        check_failure_prob(bad)
    assert check_failure_prob(1e-12) == 1e-12


def test_samples_are_flattened_finite_and_at_least_the_minimum():
    assert check_samples([[1.0, 2.0], [3.0, 4.0]]).shape == (4,)
    with pytest.raises(ValueError, match="at least 3"):
        check_samples([1.0, 2.0], minimum=3)
    with pytest.raises(ValueError):
        check_samples([1.0, math.nan])


def test_bounds_are_a_pair_in_order_or_none():
    assert check_bounds_pair(None) is None
    assert check_bounds_pair((0, 1)) == (0.0, 1.0)
    for bad in ("ab", (0, 1, 2), 3):
        with pytest.raises(TypeError, match="pair"):
            check_bounds_pair(bad)
    with pytest.raises(ValueError):
        check_bounds_pair((1, 0))


def test_a_method_is_one_of_the_names_allowed_and_the_message_lists_them():
    assert check_method("exact", ("exact", "normal")) == "exact"
    with pytest.raises(ValueError, match="'exact', 'normal'"):
        check_method("Exact", ("exact", "normal"))


def test_a_real_scalar_is_finite_and_not_a_bool():
    assert check_real_scalar(np.float32(2.5), "x") == 2.5
    assert check_real_scalar(np.array(3.0), "x") == 3.0
    with pytest.raises(TypeError):
        check_real_scalar(True, "x")
    with pytest.raises(ValueError, match="finite"):
        check_real_scalar(math.inf, "x")


def test_a_sample_outside_the_declared_bounds_is_the_implementations_fault():
    check_within_bounds(np.array([0.0, 1.0]), (0.0, 1.0))
    with pytest.raises(AssertionError, match="1 value"):
        check_within_bounds(np.array([0.5, 1.5]), (0.0, 1.0))


def test_figures_in_messages_have_four_significant_digits():
    assert format_figure(math.pi) == "3.142"
    assert format_figure(1e-9) == "1e-09"
