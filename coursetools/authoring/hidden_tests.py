"""Helpers for the hidden tests of the course's auto-graded notebooks: bans and batched calls.
Imported by hidden tests (in the trusted runner and in a plain kernel), rules and the grader's
tests; it imports numpy and the standard library only, nothing of coursetools or of dplib's
internals, so the trusted runner loads it with no code that reaches the student's kernel.

The course's convention, not the DP library's: it lived in ``dplib.grading`` until issue 30,
so that ``dplib`` is a library a reader can use outside the course. Hidden tests run in the grader's trusted process, never in the student's kernel
(``docs/grading.md``). They judge a student's function against dplib or a known figure, never
against the student's own code, and an exercise that asks to implement ``X`` must not be passed
by calling ``dplib.X``. That second rule is enforced by absence: a hidden test declares

>>> from coursetools.authoring.hidden_tests import forbid
>>> forbid("dplib.rr_estimate")

and while the notebook is graded the kernel's copy of dplib holds, in place of each banned
function, a stub that raises :class:`ForbiddenCallError` (``coursetools/grading/sandboxed/bans.py``).
The sandboxed kernel cannot import coursetools, so the stub makes, in the kernel, an
``AssertionError`` subclass of the same name whose ``__module__`` is this module's: the kernel
reports it by that name and the trusted runner maps the name to this class (its fixed table,
``coursetools.grading.trusted.runner.known_exceptions``). In the trusted process :func:`forbid`
only checks that the names exist, so a typo fails the build.

Many calls of an answer go through :func:`repeat` and :func:`map_calls`. In the grader an answer
is a proxy for the student's function (``coursetools/grading/trusted/runner.py``) and every call is a round trip
to the kernel, so these send the whole batch in one; anywhere else (Run All in JupyterLab,
nbclient, raw ``nbgrader autograde``) the answer is the function itself and they loop, with the
same results: the same arguments reach every call (copied as the grader's channel copies them, a
``numpy.random.Generator`` shared and advanced), so a seeded generator gives bit-identical draws
in both. Hidden tests use these, never the proxies' own ``answer.repeat(...)``/``answer.map(...)``
(``coursetools.authoring.rules.lint`` refuses them), so a solution notebook runs top to bottom in a
plain kernel, hidden tests included.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

__all__ = ["ForbiddenCallError", "forbid", "map_calls", "repeat"]

#: A proxy class that batches calls declares this class attribute as ``True`` (read on the type,
#: so asking never reaches the student's kernel).
BATCH_MARKER = "__coursetools_batch__"


class ForbiddenCallError(AssertionError):
    """Raised in a grading kernel by a dplib function that an exercise asks the student to write.

    The kernel's stub raises a class of this name and module made in the kernel (which cannot
    import coursetools); the trusted runner reports it as this class.
    """


def forbid(*names: str) -> None:
    """Declare dplib functions the grading kernel must not have while this notebook is graded.

    The declaration is read from the hidden tests' source before grading starts (a static list,
    the union over the notebook) by ``make grade``, which then grades the notebook with a dplib
    in which each name is a stub raising :class:`ForbiddenCallError`. Calling :func:`forbid`
    itself, wherever it runs, **only validates the names** (each must be a dplib function):

    - in the trusted grader (``make grade``): the ban is enforced, by the grader, as above;
    - in a plain kernel (Run All in JupyterLab, nbclient, ``nbgrader validate`` or raw
      ``nbgrader autograde``): nothing is banned. The banned functions stay callable, so the
      instructor's own solution notebook (whose demonstrations may call them) still runs, and
      an answer that calls a banned function instead of implementing it **passes** there: only
      ``make grade`` gives the grade to trust.

    Parameters
    ----------
    *names : str
        Dotted names of pure-Python dplib functions, e.g. ``"dplib.rr_estimate"`` or
        ``"dplib.mechanisms.rr_confidence.rr_halfwidth"``.

    Raises
    ------
    ValueError
        If a name is not a dplib function.

    Examples
    --------
    >>> forbid("dplib.laplace_mechanism", "dplib.mechanisms.rr_confidence.hoeffding_halfwidth")
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


# ---------------------------------------------------------------------------------- batched calls


def repeat(answer: Callable[..., Any], n: int, *args: Any, **kwargs: Any) -> list:
    """Call ``answer(*args, **kwargs)`` ``n`` times; the list of the ``n`` results.

    In the trusted grader ``answer`` is a proxy for the student's function and the ``n`` calls
    are one round trip to the kernel; in a plain kernel they are a loop. Either way the arguments
    are copied once, as the grader's channel copies them (lists, tuples, dicts, sets and numpy
    arrays; other objects, a student's objects among them, are passed as they are), and the same
    copies reach every call, so a student's function that mutates an argument sees its own
    mutation on the next call but never the test's object. A ``numpy.random.Generator`` among the
    arguments is shared by the calls and advances, as it would in a loop: after the call the
    test's generator is where the student's code left it, and a seeded generator gives
    bit-identical results in the grader and in a plain kernel.

    Parameters
    ----------
    answer : callable
        The student's function, class or bound method (or the grader's proxy for it).
    n : int
        How many calls, ``>= 0``.
    *args, **kwargs
        The arguments of every call.

    Returns
    -------
    list
        The ``n`` results, in call order (each copied as the grader's channel copies them).

    Raises
    ------
    TypeError
        If ``answer`` is not callable or ``n`` is not an int.
    ValueError
        If ``n`` is negative.
    Exception
        The first call that raises stops the batch. In a plain kernel its exception propagates
        as the student's code raised it, with a note saying which call it was; in the grader the
        proxy raises an error that is-a the same builtin (or dplib) class. Draws made before it
        stay drawn in both.

    Examples
    --------
    >>> import numpy as np
    >>> def noisy(x, rng):
    ...     return x + rng.normal()
    >>> a = repeat(noisy, 3, 1.0, np.random.default_rng(5))
    >>> rng = np.random.default_rng(5)
    >>> a == [noisy(1.0, rng) for _ in range(3)]
    True
    """
    _check_answer(answer)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"repeat(): n must be an int, got {type(n).__name__}")
    n = int(n)
    if n < 0:
        raise ValueError(f"repeat(): n must be >= 0, got {n}")
    if _is_batching_proxy(answer):
        return answer.repeat(n, *args, **kwargs)
    args, kwargs = _as_sent(list(args)), _as_sent(dict(kwargs))
    return _run(answer, [(args, kwargs)] * n, "repeat")


def map_calls(
    answer: Callable[..., Any],
    arg_tuples: Iterable[Any],
    kwargs: dict | list[dict] | None = None,
) -> list:
    """Call ``answer`` once per item of ``arg_tuples``; the list of results, in order.

    In the trusted grader ``answer`` is a proxy and the calls are one round trip to the kernel;
    in a plain kernel they are a loop with the same results. Each call gets its own copy of its
    arguments, made as the grader's channel copies them (lists, tuples, dicts, sets and numpy
    arrays; other objects are passed as they are), before the first call. A
    ``numpy.random.Generator`` is never copied: one used by several calls is shared by them and
    advances from call to call, exactly as in the grader.

    Parameters
    ----------
    answer : callable
        The student's function, class or bound method (or the grader's proxy for it).
    arg_tuples : iterable
        One item per call: a tuple is the call's positional arguments, anything else (a list
        too) its single argument. ``[(x,) for x in xs]`` passes tuples as single arguments.
    kwargs : dict or list of dict, optional
        Keyword arguments: one dict for every call, or one dict per call.

    Returns
    -------
    list
        One result per call (each copied as the grader's channel copies it).

    Raises
    ------
    TypeError
        If ``answer`` is not callable, ``arg_tuples`` is not iterable or ``kwargs`` is neither a
        dict, a list of dicts nor None.
    ValueError
        If ``kwargs`` is a list whose length is not the number of calls.
    Exception
        The first call that raises stops the batch (as in :func:`repeat`).

    Examples
    --------
    >>> map_calls(pow, [(2, 3), (3, 2)])
    [8, 9]
    >>> map_calls(int, ["7", "10"], kwargs={"base": 8})
    [7, 8]
    """
    _check_answer(answer)
    try:
        items = list(arg_tuples)
    except TypeError:
        raise TypeError(
            f"map_calls(): arg_tuples must be an iterable of argument tuples, "
            f"got {type(arg_tuples).__name__}"
        ) from None
    if kwargs is None:
        per_call = [{}] * len(items)
    elif isinstance(kwargs, dict):
        per_call = [kwargs] * len(items)
    elif isinstance(kwargs, list):
        if len(kwargs) != len(items):
            raise ValueError(
                f"map_calls(): kwargs has {len(kwargs)} dicts for {len(items)} calls"
            )
        per_call = kwargs
    else:
        raise TypeError(
            f"map_calls(): kwargs must be a dict, a list of dicts or None, "
            f"got {type(kwargs).__name__}"
        )
    for index, item in enumerate(per_call):
        if not isinstance(item, dict):
            raise TypeError(
                f"map_calls(): kwargs[{index}] must be a dict, got {type(item).__name__}"
            )
    if _is_batching_proxy(answer):
        return answer.map(items, kwargs) if items else []
    calls = [
        (_as_sent(list(item) if isinstance(item, tuple) else [item]), _as_sent(dict(item_kwargs)))
        for item, item_kwargs in zip(items, per_call, strict=True)
    ]
    return _run(answer, calls, "map_calls")


def _check_answer(answer) -> None:
    if not callable(answer):
        raise TypeError(f"answer must be callable (a function, class or method), got {answer!r}")


def _is_batching_proxy(answer) -> bool:
    """Whether ``answer`` is the grader's proxy, which batches calls itself.

    Read on the type only: a proxy forwards unknown attributes to the student's kernel, and a
    plain function or a student's class is never taken for one.
    """
    return getattr(type(answer), BATCH_MARKER, False) is True


def _run(answer, calls: list, how: str) -> list:
    results = []
    for index, (args, kwargs) in enumerate(calls):
        try:
            results.append(_as_sent(answer(*args, **kwargs)))
        except Exception as exc:
            exc.add_note(f"(call {index + 1} of {len(calls)} made by {how}())")
            raise
    return results


_MAX_DEPTH = 100


def _as_sent(value, depth: int = 0):
    """``value`` as the other side of the grader's channel receives it (``coursetools/grading/bridge.py``).

    Lists, tuples, dicts, sets and numpy arrays are copied (an array as a base ndarray); a
    ``numpy.random.Generator``, a scalar and any other object are the same object.
    """
    if depth > _MAX_DEPTH:
        raise ValueError(f"an argument nested more than {_MAX_DEPTH} levels deep")
    kind = type(value)
    if kind is list:
        return [_as_sent(item, depth + 1) for item in value]
    if kind is tuple:
        return tuple(_as_sent(item, depth + 1) for item in value)
    if kind is dict:
        return {_as_sent(k, depth + 1): _as_sent(v, depth + 1) for k, v in value.items()}
    if kind in (set, frozenset):
        return kind(_as_sent(item, depth + 1) for item in value)
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True, subok=False)
    return value
