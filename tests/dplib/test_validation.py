"""The shared checkers: what they accept, and error messages that say what is allowed."""

import math

import numpy as np
import pytest

from dplib._validation import (
    as_generator,
    check_bounds,
    check_data,
    check_delta,
    check_epsilon,
    check_integer,
    check_probability,
    check_sensitivity,
)


def test_as_generator_normalises_seeds():
    assert isinstance(as_generator(None), np.random.Generator)
    assert as_generator(3).random() == np.random.default_rng(3).random()
    generator = np.random.default_rng(1)
    assert as_generator(generator) is generator
    assert as_generator(np.random.SeedSequence(3)).random() == np.random.default_rng(3).random()


@pytest.mark.parametrize("bad", [np.random.RandomState(0), np.random, 1.5, "3", True])
def test_as_generator_refuses_everything_else(bad):
    with pytest.raises(TypeError, match="rng must be None, a non-negative int seed or a numpy.random.Generator"):
        as_generator(bad)


def test_negative_seed_is_refused():
    with pytest.raises(ValueError, match="non-negative"):
        as_generator(-1)


def test_check_epsilon():
    assert check_epsilon(np.float32(0.5)) == 0.5
    assert check_epsilon(np.array(2.0)) == 2.0
    assert check_epsilon(3) == 3.0
    for bad in (0, -1e-300, math.inf, math.nan):
        with pytest.raises(ValueError, match=f"epsilon must be a finite number > 0, got {bad!r}"):
            check_epsilon(bad)
    for bad in (None, "1", True, [1.0]):
        with pytest.raises(TypeError, match="epsilon must be a real number"):
            check_epsilon(bad)


def test_check_delta():
    assert check_delta(0) == 0.0
    assert check_delta(1e-5) == 1e-5
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\), got 1"):
        check_delta(1)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\), got 0"):
        check_delta(0, allow_zero=False)
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        check_delta(math.nan)


def test_check_sensitivity():
    assert check_sensitivity(0) == 0.0
    with pytest.raises(ValueError, match="sensitivity must be a finite number >= 0, got -1"):
        check_sensitivity(-1)
    with pytest.raises(ValueError, match="sensitivity must be a finite number > 0, got 0"):
        check_sensitivity(0, allow_zero=False)
    with pytest.raises(ValueError, match="sensitivity must be a finite number >= 0"):
        check_sensitivity(math.inf)


def test_check_probability_and_integer_and_bounds():
    assert check_probability(1, "q", low_open=True) == 1.0
    with pytest.raises(ValueError, match=r"q must be in \(0, 1\], got 0"):
        check_probability(0, "q", low_open=True)
    assert check_integer(np.int64(4), "k", minimum=2) == 4
    with pytest.raises(TypeError, match="k must be an integer, got float"):
        check_integer(4.0, "k")
    with pytest.raises(ValueError, match="k must be an integer >= 2, got 1"):
        check_integer(1, "k", minimum=2)
    assert check_bounds(0, 1) == (0.0, 1.0)
    with pytest.raises(ValueError, match="lower must be < upper"):
        check_bounds(1, 1)


def test_check_data():
    np.testing.assert_array_equal(check_data([True, False]), [1.0, 0.0])
    with pytest.raises(ValueError, match="data must not be empty"):
        check_data([])
    assert check_data([], allow_empty=True).size == 0
    with pytest.raises(ValueError, match="data must not contain NaN or infinite values"):
        check_data([1.0, math.nan])
    with pytest.raises(TypeError, match="data must be an array of numbers"):
        check_data(["a"])
