"""The shared checkers: what they accept, and error messages that say what is allowed."""

import math

import numpy as np
import pytest

from dplib._validation import (
    NUMPY_BIT_GENERATORS,
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


def test_an_integer_beyond_a_double_names_its_parameter_and_range():
    # Issue 49: 10**400 raised "OverflowError: int too large to convert to float" in 63 places
    # (tests/dplib/test_contract.py now tries it on every parameter of every public name)
    with pytest.raises(ValueError, match=r"epsilon must be a finite number > 0, got an integer of 401 digits"):
        check_epsilon(10**400)
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\), got -an integer of 401 digits"):
        check_delta(-(10**400))
    with pytest.raises(ValueError, match=r"lower and upper must be finite"):
        check_bounds(0, 10**400)
    with pytest.raises(ValueError, match=r"steps must be an integer >= 1 and below 2\*\*1024"):
        check_integer(10**400, "steps", minimum=1)
    assert check_integer(2**1023, "k") == 2**1023


def test_a_masked_array_with_masked_entries_is_refused():
    # Issue 49: local_sensitivity(np.ma.array([1, 2, 99], mask=[0, 0, 1]), 0, 10) was 8.0, the
    # masked 99 counted; np.asarray drops the mask silently, so check_data refuses it.
    masked = np.ma.array([1.0, 2.0, 99.0], mask=[0, 0, 1])
    with pytest.raises(TypeError, match=r"x is a masked array with 1 masked entries.*compressed\(\)"):
        check_data(masked, "x")
    np.testing.assert_array_equal(check_data(np.ma.array([1.0, 2.0], mask=[0, 0])), [1.0, 2.0])
    np.testing.assert_array_equal(check_data(masked.compressed()), [1.0, 2.0])


def test_only_numpy_bit_generators_are_accepted():
    # the bit-generator policy (as_generator's Notes); the hang-or-refuse test over
    # every public name with an rng is tests/dplib/test_contract.py's
    for bits in NUMPY_BIT_GENERATORS:
        gen = np.random.Generator(bits(1))
        assert as_generator(gen) is gen
    subclass = type("Sub", (np.random.PCG64,), {})
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator over one of numpy's own"):
        as_generator(np.random.Generator(subclass(1)))
    generator_subclass = type("SubGenerator", (np.random.Generator,), {})
    with pytest.raises(TypeError, match="random_state must be"):
        as_generator(generator_subclass(np.random.PCG64(1)), "random_state")
