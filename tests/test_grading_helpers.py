"""dplib.grading.forbidden_calls: an exercise that asks to implement X cannot call dplib's X."""

import functools

import pytest

import dplib.mechanisms.laplace as laplace_module
from dplib.grading import ForbiddenCallError, forbidden_calls
from dplib.mechanisms.laplace import laplace_mechanism


def student_solution_by_alias(value):
    # A student who imported the library function under another name.
    from dplib.mechanisms.laplace import laplace_mechanism as noise

    return noise(value, 1.0, 1.0, rng=0)


def test_calls_under_any_name_are_refused_inside_the_block():
    partial = functools.partial(laplace_mechanism, sensitivity=1.0, epsilon=1.0)
    with forbidden_calls(laplace_mechanism):
        with pytest.raises(ForbiddenCallError, match="write laplace_mechanism yourself"):
            student_solution_by_alias(1.0)
        with pytest.raises(ForbiddenCallError):
            laplace_module.laplace_mechanism(1.0, 1.0, 1.0)
        with pytest.raises(AssertionError):  # nbgrader counts it as a failed test
            partial(1.0)


def test_function_is_restored_after_the_block_even_on_error():
    expected = laplace_mechanism(1.0, 1.0, 1.0, rng=0)
    with pytest.raises(RuntimeError):
        with forbidden_calls(laplace_mechanism):
            raise RuntimeError("a failing hidden test")
    assert laplace_mechanism(1.0, 1.0, 1.0, rng=0) == expected
    assert student_solution_by_alias(1.0) == expected


def test_only_python_functions_are_accepted():
    with pytest.raises(TypeError, match="pure-Python functions"):
        with forbidden_calls(len):
            pass
