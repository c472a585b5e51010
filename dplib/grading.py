"""Helpers for the hidden tests of the course's auto-graded notebooks.

Hidden tests run in the grader's trusted process, never in the student's kernel
(``docs/grading.md``). They judge a student's function against dplib or a known figure, never
against the student's own code, and an exercise that asks to implement ``X`` must not be passed
by calling ``dplib.X``. That second rule is enforced by absence: a hidden test declares

>>> from dplib.grading import forbid
>>> forbid("dplib.rr_estimate")

and while the notebook is graded the kernel's copy of dplib holds, in place of each banned
function, a stub that raises :class:`ForbiddenCallError` (``coursetools/bans.py``). In the
trusted process :func:`forbid` only checks that the names exist, so a typo fails the build.
"""

from __future__ import annotations

import importlib
import types

__all__ = ["ForbiddenCallError", "forbid"]


class ForbiddenCallError(AssertionError):
    """Raised in a grading kernel by a dplib function that an exercise asks the student to write."""


def forbid(*names: str) -> None:
    """Declare dplib functions the grading kernel must not have while this notebook is graded.

    The declaration is read from the hidden tests' source before grading starts (a static list,
    the union over the notebook); calling it in the trusted process only validates the names.

    Parameters
    ----------
    *names : str
        Dotted names of pure-Python dplib functions, e.g. ``"dplib.rr_estimate"`` or
        ``"dplib.confidence.rr_halfwidth"``.

    Raises
    ------
    ValueError
        If a name is not a dplib function.

    Examples
    --------
    >>> forbid("dplib.laplace_mechanism", "dplib.confidence.hoeffding_halfwidth")
    >>> forbid("numpy.mean")
    Traceback (most recent call last):
    ...
    ValueError: forbid() takes dplib function names such as 'dplib.rr_estimate', got 'numpy.mean'
    """
    for name in names:
        _resolve(name)


def _resolve(name: str) -> types.FunctionType:
    if not isinstance(name, str) or not name.startswith("dplib."):
        raise ValueError(
            f"forbid() takes dplib function names such as 'dplib.rr_estimate', got {name!r}"
        )
    parts = name.split(".")
    obj: object = importlib.import_module("dplib")
    for index, part in enumerate(parts[1:], start=2):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(".".join(parts[:index]))
            except ImportError:
                raise ValueError(f"forbid({name!r}): dplib has no {part!r}") from None
    if not isinstance(obj, types.FunctionType):
        raise ValueError(f"forbid({name!r}) names a {type(obj).__name__}, not a Python function")
    return obj
