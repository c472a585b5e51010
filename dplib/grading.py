"""Helpers for the hidden tests of the course's auto-graded notebooks.

A hidden test must judge a student's function against dplib or a known figure, never against the
student's own code, and an exercise that asks to implement ``X`` must not be passed by calling
``dplib.X``. :func:`forbidden_calls` enforces the second rule.
"""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["ForbiddenCallError", "forbidden_calls"]


class ForbiddenCallError(AssertionError):
    """Raised when an exercise calls the library function it was asked to implement."""


@contextlib.contextmanager
def forbidden_calls(*functions: Callable[..., Any]) -> Iterator[None]:
    """Make calls to the given plain Python functions fail while the block runs.

    The function objects themselves are changed (their ``__code__`` is swapped), so the ban holds
    whatever name a student imported them under (``from dplib import laplace_mechanism as lap``,
    ``dplib.mechanisms.laplace.laplace_mechanism``, a ``functools.partial``...). The original code
    is restored on exit, even when the block raises.

    Parameters
    ----------
    *functions : callable
        Pure-Python functions (``types.FunctionType``), e.g. ``dplib.laplace_mechanism``.

    Raises
    ------
    ForbiddenCallError
        Inside the block, from any call to one of the functions. It is an ``AssertionError``, so
        nbgrader counts the test as failed with a message that says why.
    TypeError
        If an argument is not a pure-Python function.

    Examples
    --------
    >>> import dplib
    >>> from dplib.grading import forbidden_calls
    >>> with forbidden_calls(dplib.clamp):
    ...     dplib.clamp([1.0], 0.0, 0.5)
    Traceback (most recent call last):
    ...
    dplib.grading.ForbiddenCallError: this exercise asks you to write clamp yourself; ...
    """
    for function in functions:
        if not isinstance(function, types.FunctionType):
            raise TypeError(
                f"forbidden_calls takes pure-Python functions, got {type(function).__name__}"
            )
    originals = [(function, function.__code__) for function in functions]
    try:
        for function, code in originals:
            function.__code__ = _refusing_code(function.__name__, code)
        yield
    finally:
        for function, code in originals:
            function.__code__ = code


@functools.cache
def _refusing_template() -> types.CodeType:
    # The code runs with the *banned* function's globals, so it must name nothing of this module:
    # it reaches the exception class through the builtin __import__.
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise __import__("dplib.grading", fromlist=["_"]).ForbiddenCallError("__NAME__")

    return refuse.__code__


def _refusing_code(name: str, original: types.CodeType) -> types.CodeType:
    message = (
        f"this exercise asks you to write {name} yourself; calling dplib's {name} "
        "(directly or under another name) is not allowed here"
    )
    template = _refusing_template()
    consts = tuple(message if c == "__NAME__" else c for c in template.co_consts)
    # The replacement must have no free variables, like the template; keep the original's name.
    return template.replace(co_consts=consts, co_name=original.co_name)
