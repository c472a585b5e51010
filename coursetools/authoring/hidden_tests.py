"""Helpers for the hidden tests of the course's auto-graded notebooks: bans, batched calls, exact laws.
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
import math
import types
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "ForbiddenCallError",
    "counterexample_verdict",
    "discrete_laplace_cdf",
    "discrete_laplace_pmf",
    "forbid",
    "map_calls",
    "noisy_max_value_probability",
    "repeat",
    "sparse_vector_value_probability",
]

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
        resolve_dplib_function(name)


def resolve_dplib_function(name: str) -> types.FunctionType:
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


# ----------------------------------------------------------- exact laws of broken mechanisms
#
# "Find the counterexample" exercises hand in a witness: two neighbouring inputs and a set of
# outputs whose probabilities differ by more than the claimed factor e^epsilon. The broken
# mechanisms of those exercises draw integer (discrete Laplace) noise with a rational parameter, so
# every probability below is an exact rational number (:class:`fractions.Fraction`) and a witness
# is judged without sampling error: any valid one passes, no invalid one does.


def _rational(q) -> Fraction:
    q = Fraction(q)
    if not 0 < q < 1:
        raise ValueError(f"q must be a rational number in (0, 1), got {q}")
    return q


def discrete_laplace_pmf(z: int, q) -> Fraction:
    """``P[Z = z]`` for the discrete Laplace law ``P[Z = z] = (1 - q) / (1 + q) * q**|z|`` on the
    integers (the two-sided geometric law; Ghosh, Roughgarden & Sundararajan 2009), exactly."""
    q = _rational(q)
    return (1 - q) / (1 + q) * q ** abs(int(z))


def discrete_laplace_cdf(x: int, q) -> Fraction:
    """``P[Z <= x]`` for the discrete Laplace law of :func:`discrete_laplace_pmf`, exactly:
    ``q**|x| / (1 + q)`` for ``x <= 0`` and ``1 - q**(x + 1) / (1 + q)`` for ``x >= 0``."""
    q = _rational(q)
    x = int(x)
    return q ** (-x) / (1 + q) if x <= 0 else 1 - q ** (x + 1) / (1 + q)


def _outputs(event) -> set[tuple[int, int]] | None:
    """The event as a set of (index, integer value) pairs; pairs with a value that is not a whole
    number are dropped (the integer mechanism never outputs them). None when malformed."""
    try:
        pairs = list(event)
    except TypeError:
        return None
    found: set[tuple[int, int]] = set()
    for pair in pairs:
        try:
            index, value = pair
            index, value = float(index), float(value)
        except (TypeError, ValueError, OverflowError):  # an int too large for a double is malformed
            return None
        if not (math.isfinite(index) and math.isfinite(value)) or index != int(index):
            return None
        if value == int(value):
            found.add((int(index), int(value)))
    return found


def noisy_max_value_probability(scores, event, q) -> Fraction:
    """Exact ``P[(i, v) in event]`` for report-noisy-max that releases its noisy maximum as well:
    ``Z_j`` i.i.d. discrete Laplace(q), ``i`` the first index of ``max_j scores_j + Z_j`` (ties go
    to the lowest index) and ``v`` that maximum. ``event`` is an iterable of ``(i, v)`` pairs; an
    output the mechanism never produces (a value that is not a whole number, an index out of range)
    has probability 0.

    ``P[(i, v)] = P[Z_i = v - s_i] * prod_{j < i} P[Z_j <= v - s_j - 1] * prod_{j > i} P[Z_j <= v - s_j]``.
    """
    q = _rational(q)
    s = [int(x) for x in scores]
    total = Fraction(0)
    for i, v in _outputs(event) or ():
        if not 0 <= i < len(s):
            continue
        p = discrete_laplace_pmf(v - s[i], q)
        for j, sj in enumerate(s):
            if j != i:
                p *= discrete_laplace_cdf(v - sj - (1 if j < i else 0), q)
        total += p
    return total


def sparse_vector_value_probability(queries, threshold, event, q_threshold, q_query) -> Fraction:
    """Exact ``P[(k, v) in event]`` for AboveThreshold that releases the noisy answer of the query
    it stops at (Lyu, Su & Li 2017, Algorithm 3 with c = 1): threshold noise ``rho`` ~ discrete
    Laplace(q_threshold) drawn once, query noise ``nu_j`` ~ discrete Laplace(q_query) i.i.d.; the
    output is the first ``k`` with ``queries[k] + nu_k >= threshold + rho`` and ``v = queries[k] +
    nu_k``. ``event`` is an iterable of ``(k, v)`` pairs ("no query above" is not an event here).

    ``P[(k, v)] = P[nu_k = v - f_k] * sum_{rho <= v - T} P[rho] prod_{j < k} P[nu_j <= T + rho - f_j - 1]``;
    below ``L = min(0, min_j f_j - T)`` every factor is ``c * q**(-x)``, so the tail of the sum is
    geometric with ratio ``q_threshold * q_query**k`` and is added in closed form.
    """
    qt, qq = _rational(q_threshold), _rational(q_query)
    f = [int(x) for x in queries]
    t = int(threshold)
    total = Fraction(0)
    tops: dict[int, set[int]] = {}
    wanted = [(k, v) for k, v in _outputs(event) or () if 0 <= k < len(f)]
    for k, v in wanted:
        tops.setdefault(k, set()).add(v - t)
    below: dict[tuple[int, int], Fraction] = {}
    for k, needed in tops.items():
        # running sum over rho <= top of P[rho] * prod_{j<k} P[nu_j <= t + rho - f_j - 1], for
        # every top asked, in one pass from the lowest
        low = min(0, *needed, *(fj - t for fj in f[:k]))  # rho <= low: every cdf argument < 0
        # the tail rho <= low in closed form: P[rho] = c qt**(-rho), each cdf c' qq**(-x); one
        # step down multiplies the term by qt * qq**k
        first = discrete_laplace_pmf(low, qt)
        for fj in f[:k]:
            first *= discrete_laplace_cdf(t + low - fj - 1, qq)
        running = first / (1 - qt * qq**k)
        if low in needed:
            below[(k, low)] = running
        for rho in range(low + 1, max(needed) + 1):
            term = discrete_laplace_pmf(rho, qt)
            for fj in f[:k]:
                term *= discrete_laplace_cdf(t + rho - fj - 1, qq)
            running += term
            if rho in needed:
                below[(k, rho)] = running
    for k, v in wanted:
        total += discrete_laplace_pmf(v - f[k], qq) * below[(k, v - t)]
    return total


def _integer_vector(
    values, what: str, max_length: int, max_abs: int
) -> tuple[list[int] | None, str]:
    try:
        items = [float(x) for x in values]
    except (TypeError, ValueError):
        return None, f"{what} must be a sequence of whole numbers"
    if not 1 <= len(items) <= max_length:
        return None, f"{what} must hold between 1 and {max_length} numbers"
    if not all(math.isfinite(x) and x == int(x) and abs(x) <= max_abs for x in items):
        return None, f"{what} must hold whole numbers between -{max_abs} and {max_abs}"
    return [int(x) for x in items], ""


def counterexample_verdict(
    witness,
    probability,
    e_epsilon,
    *,
    max_length: int = 8,
    max_abs: int = 100,
    max_event: int = 1000,
    max_value: int = 1000,
) -> str | None:
    """None when ``witness = (a, b, event)`` refutes an ``epsilon``-DP claim, else why it does not.

    ``a`` and ``b`` must be neighbours (integer vectors of the same length whose entries differ by
    at most 1: every score or query of sensitivity 1), ``event`` a list of at most ``max_event``
    outputs with values between ``-max_value`` and ``max_value``, and ``probability(x, event)`` the
    exact probability (a Fraction) that the mechanism outputs a member of ``event`` on input ``x``. The witness holds when one probability exceeds
    ``e_epsilon`` (an exact rational) times the other; both are computed here, never taken from the
    student. The messages are fixed text and numbers: nothing of the student's is echoed.
    """
    e_epsilon = Fraction(e_epsilon)
    try:
        a, b, event = witness
    except (TypeError, ValueError):
        return "return a tuple (input, neighbouring input, event) of three items"
    a, why = _integer_vector(a, "the first input", max_length, max_abs)
    if a is None:
        return why
    b, why = _integer_vector(b, "the second input", max_length, max_abs)
    if b is None:
        return why
    if len(a) != len(b):
        return "the two inputs must have the same length (the same queries on two datasets)"
    if max(abs(x - y) for x, y in zip(a, b, strict=True)) > 1:
        return (
            "the two inputs are not neighbours: one person moves every score (every query) by at "
            "most 1, and some entry differs by more"
        )
    outputs = _outputs(event)
    if outputs is None:
        return "the event must be a list of (index, value) pairs of numbers"
    if not 1 <= len(list(event)) <= max_event:
        return f"the event must hold between 1 and {max_event} outputs"
    if any(abs(v) > max_value for _, v in outputs):
        return f"the event's values must lie between -{max_value} and {max_value}"
    pa, pb = probability(a, outputs), probability(b, outputs)
    if pa == 0 and pb == 0:
        return (
            "the event has probability 0 on both inputs: the mechanism outputs a valid index and a "
            "whole-number value, and none of your outputs is one it can produce"
        )
    if pa > e_epsilon * pb or pb > e_epsilon * pa:
        return None
    ratio = float(max(pa, pb) / min(pa, pb))
    return (
        f"on your two inputs the event's probabilities are {float(pa):.6g} and {float(pb):.6g}, "
        f"a ratio of {ratio:.6g}, which does not exceed e^epsilon = {float(e_epsilon):.6g}: the claim "
        "survives this witness"
    )
