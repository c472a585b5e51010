"""The trusted test runner: runs a notebook's test cells where no student code ever runs.

One job: execute the instructor's test cells (visible and hidden parts) in a process of its own,
started by the grader as ``python -I -m coursetools.grading.trusted.runner``, and decide pass, fail or partial
credit from this process's own exceptions. The student's answers are :class:`Remote` proxies: a
call sends its arguments to the student's kernel as plain data (:mod:`coursetools.grading.bridge`) and
gets plain data back, checked on arrival; objects the student builds stay in the kernel behind
handles. The runner talks only to the grader, over its stdin and stdout, in length-prefixed JSON
frames; the grader relays kernel requests and enforces every time limit (it kills this process if
a test itself runs too long).

The feedback a failed test gets is written here, from the instructor's text only: an assertion's
own message; for an assertion without one, its source line when the line is visible to students,
else "a hidden test failed (line n)"; for an error in the student's code, which answer raised
which *builtin* exception class (never its message, which the student wrote).

No text the kernel chose is ever printed or imported here. The rule, total over every path:

- a proxy is named by the grader (``f``, ``f(...)``, ``f(...).spend``, ``f[...]``), never by the
  class of the object it stands for; handles carry no type name at all;
- an exception of the student's code is named by the first class of its ancestry found *by
  identity* in a fixed table (:func:`known_exceptions`: the exception classes of ``builtins`` and
  of ``dplib.errors`` and ``coursetools.authoring.hidden_tests`` when already imported): a student class deriving from
  ``ValueError`` is reported as ``ValueError``, anything else as "an exception". The names the
  kernel sends are only looked up in that table: nothing is imported;
- the student's strings and bytes (dict keys included) reach the test as :class:`StudentText` /
  :class:`StudentBytes`: they compute as the plain value (equal, hashed, ``str(x)``, ``int(x)``)
  but are *displayed* as a placeholder (``repr``, ``format``: ``<a str of 23 characters>``), so an
  instructor's ``assert x == y, f"got {x!r}"`` shows numbers, booleans and shapes but never the
  student's text. A failure message that still holds :data:`GRAM` consecutive characters (case
  aside) of any string the kernel sent during the test (numpy string arrays included), or that
  was built from a StudentText, or that is longer than :data:`MAX_CHECKED`, or from a test that
  received more than :data:`MAX_REMEMBERED` characters of strings, is replaced by the message the
  test would have without one (its visible line, or "a hidden test failed (line n)"). What can
  still pass: pieces of at most ``GRAM - 1`` characters of the student's strings that the
  instructor's message quotes as plain text (``"%s" % x``, ``", ".join(xs)``); numbers;
  the verdict itself; and the builtin exception class (one of about 60);
- flags in a kernel's error report (timeout, died, ...) choose among the grader's sentences; the
  only number taken from there, the time limit, is the grader's own.
"""

from __future__ import annotations

import ast
import base64
import builtins
import math
import os
import resource
import sys
import traceback
from typing import Any

import numpy as np

from coursetools.grading import bridge, framing

__all__ = ["Remote", "StudentError", "run_test", "main"]

MAX_MESSAGE = 300
MAX_FRAME = bridge.MAX_BYTES * 2  # a frame from the grader: a relayed reply's base64 (4/3 of MAX_MESSAGE_CHARS) fits
GRAM = 4  # a failure message may not hold this many consecutive characters of a kernel string
MAX_REMEMBERED = 256 * 1024  # characters of kernel strings remembered per test (more: no message)
MAX_CHECKED = 4096  # a failure message longer than this is not shown (the line-based one is)
RUNNER_MEMORY_BYTES = 1024**3  # the runner's own memory (cgroup, or RLIMIT_AS above its start)


# ----------------------------------------------------------------------------------- framing


def write_frame(stream, message: dict) -> None:
    stream.write(framing.encode(message))
    stream.flush()


def read_frame(stream) -> dict:
    return framing.read(stream, MAX_FRAME, "the grader")


# ---------------------------------------------------------------------------- student errors


class StudentText(str):
    """A string from the student's kernel: computes as itself, is displayed as a placeholder.

    It compares, hashes, converts (``str(x)``, ``int(x)``, ``np.asarray(x)``) and is sliced as the
    plain string, so tests compute with it as before; ``type(x).__name__`` is ``"str"``. Displayed,
    it is ``<a str of n characters>``: ``repr(x)``, ``f"{x}"``, ``f"{x!r}"``, ``"{}".format(x)``
    and the repr of a container holding it. What the test derives from it stays a StudentText
    (``str(x)``, ``x.upper()``, ``x[:5]``, ``x.split()``, ``"got " + x``), so a failure message
    built from it is recognised, and :func:`run_test` shows the line-based message instead; a
    message that quotes it otherwise (``"got %s" % x``, ``", ".join(...)``) is caught by
    :func:`_mentions`.
    """

    __slots__ = ()

    def _placeholder(self) -> str:
        return f"<a str of {len(self)} characters>"

    __repr__ = _placeholder

    def __str__(self) -> str:
        return self  # the text itself, still marked as the student's

    def __format__(self, spec: str) -> str:
        return self._placeholder()

    def __radd__(self, other):
        if isinstance(other, str):
            return StudentText(str.__add__(other, self))
        return NotImplemented


def _still_student(value):
    """``value`` with every plain string in it (a result, a list, a tuple) made a StudentText."""
    if type(value) is str:
        return StudentText(value)
    if type(value) in (list, tuple):
        return type(value)(_still_student(item) for item in value)
    return value


def _derived(method):
    def wrapper(self, *args, **kwargs):
        return _still_student(method(self, *args, **kwargs))

    wrapper.__name__ = method.__name__
    return wrapper


for _name in (
    "__add__", "__getitem__", "__mod__", "__mul__", "__rmul__", "capitalize", "casefold",
    "center", "expandtabs", "format", "format_map", "join", "ljust", "lower", "lstrip",
    "partition", "removeprefix", "removesuffix", "replace", "rjust", "rpartition", "rsplit",
    "rstrip", "split", "splitlines", "strip", "swapcase", "title", "translate", "upper", "zfill",
):  # fmt: skip
    setattr(StudentText, _name, _derived(getattr(str, _name)))
del _name


class StudentBytes(bytes):
    """Bytes from the student's kernel: compare as themselves, displayed as a placeholder."""

    __slots__ = ()

    def _placeholder(self) -> str:
        return f"<{len(self)} bytes>"

    __repr__ = __str__ = _placeholder

    def __format__(self, spec: str) -> str:
        return self._placeholder()


StudentText.__name__ = StudentText.__qualname__ = "str"  # type(x).__name__ in a message
StudentBytes.__name__ = StudentBytes.__qualname__ = "bytes"


class StudentError(AssertionError):
    """A failure of the student's code, seen from the trusted side. Its text is the grader's."""

    feedback = "your code failed"

    def __str__(self) -> str:
        return self.feedback


_raised_classes: dict[type, type] = {}
#: looked up only if already imported (a hidden test that bans imports the helpers' module)
TRUSTED_ERROR_MODULES = ("dplib.errors", "coursetools.authoring.hidden_tests")


def known_exceptions() -> dict[str, type]:
    """The exception classes a student's error may be reported as, by the name the kernel sends.

    The exception classes of :mod:`builtins` (``"ValueError"``) and of the trusted modules in
    :data:`TRUSTED_ERROR_MODULES` that this process has already imported
    (``"dplib.errors.BudgetExceededError"``), keyed by the name the kernel's server sends for a
    class it found there *by identity*. Nothing is imported: a name outside the table
    (``"dplib.__main__.X"``) is simply not found.
    """
    table = {
        name: cls
        for name, cls in vars(builtins).items()
        if isinstance(cls, type) and issubclass(cls, Exception) and cls is not StopIteration
    }
    for module_name in TRUSTED_ERROR_MODULES:
        module = sys.modules.get(module_name)
        for attr, cls in (vars(module).items() if module is not None else ()):
            if isinstance(cls, type) and issubclass(cls, Exception) and cls.__module__ == module_name:
                table[f"{module_name}.{attr}"] = cls
    return table


def _student_raised(label: str, classes: list) -> StudentError:
    """An exception that is-a the builtin (or dplib) class the student's code raised.

    So a test can expect an error (``except ValueError``), and an uncaught one fails the test with
    the grader's sentence, not the student's message.
    """
    base, name = None, "an exception"
    table = known_exceptions()
    for qualified in classes[:8] if isinstance(classes, list) else []:
        candidate = table.get(qualified) if isinstance(qualified, str) else None
        if candidate is not None:
            base, name = candidate, candidate.__name__
            break
    if base is None:
        error = StudentError()
    else:
        cls = _raised_classes.get(base)
        if cls is None:
            cls = type(f"Student{base.__name__}", (StudentError, base), {"__str__": StudentError.__str__})
            _raised_classes[base] = cls
        try:
            error = cls()
        except TypeError:  # exception classes with required arguments
            error = StudentError()
    error.feedback = f"{label} raised {name}"
    error.raised = name
    return error


def _seconds(value) -> str:
    """The time limit in a timeout report (the grader's number; anything else is not shown)."""
    if type(value) is int and 0 <= value <= 10**6:
        return f"{value} s"
    return "its time limit"


def _failure(label: str, error: dict) -> StudentError:
    error = error if isinstance(error, dict) else {}
    if error.get("budget") is True:
        result = StudentError()
        result.feedback = (
            f"{label} was not called: this notebook's answers had already sent the grader "
            f"{bridge.SUBMISSION_BYTES // 1024**2} MiB, the most one submission may send"
        )
        return result
    if error.get("timeout"):
        result = StudentError()
        result.feedback = f"{label} did not finish within the time limit ({_seconds(error.get('seconds'))})"
        return result
    if error.get("died"):
        result = StudentError()
        result.feedback = f"the kernel died while running {label} (os._exit, a crash, or the memory limit)"
        return result
    if error.get("boundary"):
        result = StudentError()
        result.feedback = (
            f"{label} returned something the grader cannot read: return numbers, strings, "
            "lists, tuples, dicts or numpy arrays of numbers"
        )
        return result
    if error.get("missing_kernel"):
        result = StudentError()
        result.feedback = f"{label} could not be reached (the kernel was restarted)"
        return result
    return _student_raised(label, error.get("classes", []))


class MissingAnswer(StudentError, NameError):
    pass


# -------------------------------------------------------------------------------------- proxies


class KernelLink:
    """The runner's side of the channel: one request to the student's kernel, one reply."""

    def __init__(self, rx, tx) -> None:
        self.rx, self.tx = rx, tx
        self.calls = 0
        self.seen: set = set()  # GRAM-character pieces of the kernel's strings in the current test
        self.seen_chars = 0
        self.seen_overflow = False

    def text(self, value):
        """The hook :func:`bridge.decode` applies to the kernel's strings, bytes and string arrays."""
        seen = getattr(self, "seen", None)
        if seen is None:  # a subclass that skipped __init__
            seen = self.seen = set()
        if isinstance(value, np.ndarray):
            if value.size * GRAM > MAX_REMEMBERED:
                self.seen_overflow = True
            else:
                for item in value.ravel().tolist():
                    self.text(item)
            return value
        if isinstance(value, np.generic):
            self.text(value.item())
            return value
        if isinstance(value, (bytes, bytearray)):
            self._remember(bytes(value).decode("latin-1"))
            return StudentBytes(value)
        self._remember(str.__str__(value))
        return StudentText(value)

    def _remember(self, text: str) -> None:
        """Keep every piece of :data:`GRAM` characters of ``text`` (casefolded, and of its repr)."""
        if len(text) < GRAM:
            return
        self.seen_chars = getattr(self, "seen_chars", 0) + 2 * len(text)
        if self.seen_chars > MAX_REMEMBERED:  # too much to check against: no instructor message
            self.seen_overflow = True
            return
        for form in {text.casefold(), str.__repr__(text)[1:-1].casefold()}:
            self.seen.update(form[i : i + GRAM] for i in range(len(form) - GRAM + 1))

    def request(self, request: dict) -> dict:
        self.calls += 1
        write_frame(self.tx, {"op": "kernel", "request": request})
        reply = read_frame(self.rx)
        if reply.get("op") != "reply":
            raise EOFError("unexpected message from the grader")
        if "text" in reply:  # the kernel's own reply, relayed unparsed: the student's data, checked here
            try:  # one copy of a large reply at a time (the runner's memory is capped)
                raw = base64.b64decode(reply.pop("text"), validate=True)
                text = raw.decode("ascii")
                del raw
                tree = bridge.loads(text)
            except (bridge.BoundaryError, ValueError, TypeError):
                return {"ok": False, "error": {"boundary": True}}
            return tree if isinstance(tree, dict) else {"ok": False, "error": {"boundary": True}}
        return reply.get("reply") if isinstance(reply.get("reply"), dict) else {"ok": False}


class Remote:
    """A student's function, class or object, kept in the kernel; used like the real thing.

    ``f(*args, **kwargs)`` is one round trip. ``f.map(args_list, kwargs=None)`` calls ``f`` once per
    item of ``args_list`` (a tuple of positional arguments each, or a single argument) in one
    round trip and returns the list of results; ``kwargs`` is one dict for every call or a list of
    dicts. ``f.repeat(n, *args, **kwargs)`` makes the same call ``n`` times in one round trip
    (a generator among the arguments is shared by the calls and advances, as it would in a loop).
    Attributes and items of an object are fetched as data, or as further proxies. Hidden tests
    call ``map`` and ``repeat`` through :func:`coursetools.authoring.hidden_tests.map_calls` and
    :func:`coursetools.authoring.hidden_tests.repeat`, which recognise a proxy by :attr:`__coursetools_batch__` (a
    class attribute, read without a round trip) and loop on a plain function instead.
    """

    __slots__ = ("_link", "_id", "_kind", "_label")
    __coursetools_batch__ = True  # coursetools.authoring.hidden_tests.BATCH_MARKER: batch through map/repeat

    def __init__(self, link: KernelLink, id: int, kind: str, label: str) -> None:
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_id", id)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_label", label)

    def __repr__(self) -> str:
        return f"<student's {self._label}>"

    def _exchange(self, request: dict, label: str, generators=None, called: bool = False):
        request = dict(request, id=self._id)
        reply = self._link.request(request)
        if not reply.get("ok"):
            try:  # draws made before the student's code failed still happened
                self._follow(generators, reply.get("generators"))
            except bridge.BoundaryError:
                pass
            raise _failure(label, reply.get("error"))
        try:
            value = bridge.decode(
                reply.get("value"),
                make_handle=self._handle_maker(f"{label}(...)" if called else label),
                text=self._link.text,
            )
            self._follow(generators, reply.get("generators"))
        except bridge.BoundaryError:
            raise _failure(label, {"boundary": True}) from None
        return value

    @staticmethod
    def _follow(generators, states) -> None:
        """Move the grader's generators to the states they reached in the kernel."""
        if not isinstance(states, list):
            return
        for generator, state in zip(generators or [], states, strict=False):
            bridge.set_state(generator, state)

    def _handle_maker(self, label: str):
        """Proxies for the objects in a reply to ``label``: named by the grader, never by the kernel.

        ``label`` is the grader's: ``Budget(...)`` for what a call returned, ``Budget(...).spend``
        for an attribute, ``data[...]`` for an item.
        """

        def make(id: int, kind: str) -> Remote:
            return Remote(self._link, id, kind, label[:80])

        return make

    def _call(self, calls: list, repeat: int = 1) -> list:
        generators: list = []
        references = {}
        _collect_references(calls, references)
        try:
            tree = bridge.encode(calls, references=references, generators=generators)
        except bridge.BoundaryError as exc:
            raise TypeError(f"test error: {exc}") from None
        results = self._exchange(
            {"op": "call", "calls": tree, "repeat": repeat}, self._label, generators, called=True
        )
        if not isinstance(results, list) or len(results) != len(calls) * repeat:
            raise _failure(self._label, {"boundary": True})
        return results

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call([[list(args), kwargs]])[0]

    def map(self, args_list, kwargs=None) -> list:
        calls = []
        args_list = list(args_list)
        for index, args in enumerate(args_list):
            args = list(args) if isinstance(args, tuple) else [args]
            if isinstance(kwargs, list):
                call_kwargs = kwargs[index]
            else:
                call_kwargs = kwargs or {}
            calls.append([args, dict(call_kwargs)])
        return self._call(calls) if calls else []

    def repeat(self, n: int, *args: Any, **kwargs: Any) -> list:
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"repeat needs a count >= 0, got {n!r}")
        return self._call([[list(args), kwargs]], repeat=n) if n else []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._exchange({"op": "getattr", "name": name}, f"{self._label}.{name}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("the student's objects are read-only from the grader")

    def __getitem__(self, key: Any) -> Any:
        try:
            tree = bridge.encode(key, generators=[])
        except bridge.BoundaryError as exc:
            raise TypeError(f"test error: {exc}") from None
        return self._exchange({"op": "getitem", "key": tree}, f"{self._label}[...]")

    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:
        value = self._exchange({"op": "len"}, f"len({self._label})")
        if type(value) is not int or value < 0:
            raise _failure(f"len({self._label})", {"boundary": True})
        return value


def _collect_references(value, references: dict, depth: int = 0) -> None:
    """Proxies among a call's arguments go back as references to the kernel's objects."""
    if depth > bridge.MAX_DEPTH:
        return
    if isinstance(value, Remote):
        references[id(value)] = object.__getattribute__(value, "_id")
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _collect_references(item, references, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect_references(key, references, depth + 1)
            _collect_references(item, references, depth + 1)


# ------------------------------------------------------------------------------------ namespace


class TestNamespace(dict):
    """A test's globals: the prelude, then answers fetched from the kernel on first use."""

    def __init__(self, prelude: dict, answers: set[str], link: KernelLink) -> None:
        super().__init__(prelude)
        self["__builtins__"] = builtins
        self["__name__"] = "__grader__"
        self._answers, self._link = answers, link

    def __missing__(self, name: str) -> Any:
        if name not in self._answers:
            raise KeyError(name)
        reply = self._link.request({"op": "lookup", "name": name})
        if not reply.get("ok"):
            raise _failure(name, reply.get("error"))
        if reply.get("missing"):
            error = MissingAnswer()
            error.feedback = f"your notebook does not define {name}"
            raise error
        try:
            value = bridge.decode(
                reply.get("value"),
                make_handle=lambda id, kind: Remote(self._link, id, kind, name),
                text=self._link.text,
            )
        except bridge.BoundaryError:
            raise _failure(name, {"boundary": True}) from None
        self[name] = value
        return value


def build_prelude(statements: list[str]) -> dict:
    """The names the read-only cells import, imported here (instructor code, trusted)."""
    namespace: dict = {"__builtins__": builtins}
    for statement in statements:
        try:
            exec(compile(statement, "<prelude>", "exec"), namespace)  # noqa: S102 - instructor code
        except Exception:  # noqa: BLE001 - a module missing here fails the tests that use it
            pass
    namespace.pop("__builtins__", None)
    return namespace


# ----------------------------------------------------------------------------------- one test


def _clean(text: str) -> str:
    text = "".join(c if c.isprintable() or c == " " else " " for c in str(text))
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "\u2026"


def _test_line(exc: BaseException, filename: str) -> int | None:
    line = None
    for frame, number in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == filename:
            line = number
    return line


#: assertion messages written for students
TEACHING_MODULES = ("dplib.testing", "coursetools.authoring.hidden_tests")


def _raised_by_test(exc: BaseException, filename: str) -> bool:
    """Whether ``exc``'s message was written for students: raised by the test's own code (an
    ``assert`` or ``raise``) or by the course's assertion library, not by a function such as
    ``numpy.testing.assert_allclose`` that quotes the values it compared."""
    frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]
    if not frames:
        return False
    if frames[-1].f_code.co_filename == filename:
        return True
    return any(
        str(frame.f_globals.get("__name__", "")).startswith(TEACHING_MODULES) for frame in frames
    )


def _mentions(message: str, seen: set) -> bool:
    """Whether ``message`` holds :data:`GRAM` consecutive characters of a kernel string.

    Case aside, and in the string's repr form too: so a message that quotes the student's text
    as written, sliced, re-cased or joined (``"got %s" % x.upper()``) is caught.
    """
    folded = str.__str__(message).casefold()
    return any(folded[i : i + GRAM] in seen for i in range(len(folded) - GRAM + 1))


def _student_message(exc: BaseException) -> bool:
    """Whether an assertion's message is, or holds, text derived from the student's strings."""
    return any(isinstance(arg, (StudentText, StudentBytes)) for arg in exc.args)


def _partial(value: Any, points: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    if math.isnan(value):
        return 0.0
    return max(0.0, min(points, value * points if value <= 1 else value))


def run_test(test: dict, prelude: dict, answers: set[str], link: KernelLink) -> dict:
    """Run one test cell; its result as a dict (status, points, message)."""
    source, points = test["source"], float(test["points"])
    hidden = set(test.get("hidden_lines", []))
    filename = f"<test {test['grade_id']}>"
    lines = source.splitlines()
    link.seen, link.seen_chars, link.seen_overflow = set(), 0, False  # for this test only
    namespace = TestNamespace(prelude, answers, link)
    try:
        tree = ast.parse(source, filename)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, filename, "exec"), namespace)  # noqa: S102 - instructor code
        value = eval(compile(last, filename, "eval"), namespace) if last else None  # noqa: S307
    except StudentError as exc:
        # which answer raised what, timed out or died: on a hidden line that tells what the
        # hidden test called, so the hand-in service's policy applies to it too
        verdict = {"status": "failed", "points": 0.0, "message": _clean(exc.feedback)}
        line = _test_line(exc, filename)
        if line is None or line in hidden:
            verdict["hidden"] = True
        return verdict
    except AssertionError as exc:
        message = str(exc).strip()
        line = _test_line(exc, filename)
        if line is not None and line in hidden and not _raised_by_test(exc, filename):
            # numpy.testing & co. put the values they compared in their message: on a hidden
            # line those are the hidden test's inputs and expected answers.
            message = ""
        if message and (
            _student_message(exc)
            or len(message) > MAX_CHECKED
            or getattr(link, "seen_overflow", False)
            or _mentions(message, link.seen)
        ):
            # the instructor's message carries the student's text (derived, so not a placeholder)
            message = ""
        if not message:
            if line is not None and line not in hidden and 0 < line <= len(lines):
                message = f"failed: {lines[line - 1].strip()}"
            elif line is not None:
                message = f"a hidden test failed (line {line})"
            else:
                message = "a test failed"
        verdict = {"status": "failed", "points": 0.0, "message": _clean(message)}
        if line is None or line in hidden:  # the hand-in service may withhold its message
            verdict["hidden"] = True
        return verdict
    except Exception as exc:  # noqa: BLE001 - the test's own error, e.g. on a value of a wrong type
        line = _test_line(exc, filename)
        where = f" at line {line}" if line is not None else ""
        kind = type(exc).__name__ if type(exc).__module__ == "builtins" else "an error"
        verdict = {
            "status": "failed",
            "points": 0.0,
            "message": _clean(
                f"{kind} in the test{where}: check the type and shape of what your answer returns"
            ),
            "debug": f"{type(exc).__module__}.{type(exc).__qualname__}{where}",
        }
        if line is None or line in hidden:
            verdict["hidden"] = True
        return verdict
    partial = _partial(value, points)
    got = points if partial is None else partial
    status = "passed" if got == points else "partial" if got > 0 else "failed"
    message = "" if status == "passed" else f"partial credit: {got:g} of {points:g} point(s)"
    return {"status": status, "points": got, "message": message}


# ------------------------------------------------------------------------------------------ main


def limit_memory(extra: int = RUNNER_MEMORY_BYTES) -> None:
    """Cap this process's address space at what it maps now plus ``extra`` (``RLIMIT_AS``).

    The backstop where the runner has no control group of its own: an allocation past it is a
    ``MemoryError`` in the test (which fails), never the grading machine's memory.
    """
    try:
        with open("/proc/self/status") as fh:
            size = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):  # pragma: no cover - not Linux
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = size + extra
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def main(limit: bool = True) -> None:
    """Serve the grader: a ``setup`` frame, then ``test`` frames until ``exit``.

    ``limit``: cap this process's memory with :func:`limit_memory` (a runner forked by the fork
    server is in a control group instead).
    """
    if limit:
        limit_memory()
    rx = sys.stdin.buffer
    tx = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # prints in tests go to the log, not the channel
    sys.stdout = sys.stderr
    link = KernelLink(rx, tx)
    setup = read_frame(rx)
    prelude = build_prelude(setup.get("prelude", []))
    answers = set(setup.get("answers", []))
    while True:
        try:
            message = read_frame(rx)
        except EOFError:
            return
        if message.get("op") != "test":
            return
        result = run_test(message["test"], prelude, answers, link)
        result["grade_id"] = message["test"]["grade_id"]
        write_frame(tx, {"op": "result", "result": result})


if __name__ == "__main__":
    main()
