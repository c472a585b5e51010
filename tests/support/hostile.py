"""The one harness of the hostile-input tests: run a call within limits, and judge what it gave back.

dplib's contract (CONTRIBUTING.md): whatever a caller passes, a public function returns a finite
answer or raises a ``ValueError``/``TypeError`` whose message names the argument, within a time
limit, without exhausting memory. Four test files check it on different sets of calls
(``tests/dplib/test_contract.py``'s survey of every public name, the hostile calls of
``test_contract_hostile_calls.py``, and the sweeps of ``mechanisms/test_mechanism_edges.py`` and
``accounting/test_accounting_edges.py``); they all run their calls here.

Two ways to run a call:

- :func:`run_isolated` forks: each call runs in a child under ``RLIMIT_AS`` (a call may hang,
  crash the interpreter or allocate without bound, and the test run goes on);
- :func:`call_within` runs it in this process under an alarm (for sweeps of thousands of cheap
  calls that are known not to crash: no fork per call).

Both count a call's **CPU seconds**, not the wall clock: a machine busy with other work (the other
pytest-xdist worker, a notebook run, a benchmark) slows a call down without making it use more CPU,
and ``make test`` must pass on a busy laptop. The wall clock is only a backstop, at
:data:`WALL_BACKSTOP` times the limit, for a call that sleeps.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import pickle
import re
import resource
import select
import signal
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from coursetools.grading.sandboxed.budget import process_cpu_seconds

TIME_LIMIT = 10.0  # CPU seconds per call: a hang is caught, a slow machine is not a failure
MEMORY_LIMIT = 2 * 1024**3  # bytes of address space a call may add to the process
WALL_BACKSTOP = 4.0  # a call that sleeps is cut at this many times its limit in wall time


class Failure(str):
    """What the harness says of a call that gave no answer: it did not return, or its process died."""


# ------------------------------------------------------------------------------- judging results


def nonfinite(value: Any, path: str = "result", depth: int = 0) -> str | None:
    """Where ``value`` holds NaN, inf or a complex number (None when everything is finite)."""
    if (
        depth > 6
        or value is None
        or isinstance(value, str | bytes | bool | np.bool_ | int | np.integer)
    ):
        return None
    if isinstance(value, float | np.floating):
        return None if math.isfinite(value) else f"{path} = {value!r}"
    if isinstance(value, complex | np.complexfloating):
        return f"{path} is complex ({value!r})"
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "c":
            return f"{path} is a complex array"
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            return f"{path} contains {value[~np.isfinite(value)][:3].tolist()}"
        if value.dtype.kind == "O":
            for i, item in enumerate(value.flat[:50]):
                found = nonfinite(item, f"{path}.flat[{i}]", depth + 1)
                if found:
                    return found
        return None
    if isinstance(value, tuple | list):
        for i, item in enumerate(value[:50]):
            found = nonfinite(item, f"{path}[{i}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in list(value.items())[:50]:
            found = nonfinite(item, f"{path}[{key!r}]", depth + 1)
            if found:
                return found
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    elif type(value).__module__.startswith("dplib") and hasattr(value, "__dict__"):
        items = list(vars(value).items())  # an estimator or accountant: its (fitted) state
    else:
        return None
    for key, item in items:
        found = nonfinite(item, f"{path}.{key}", depth + 1)
        if found:
            return found
    return None


def names(message: str, param: str) -> bool:
    """Whether an error message names ``param`` as a word (``"n"`` is not named by ``"n_samples"``)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(param)}(?![A-Za-z0-9_])", message) is not None


# ----------------------------------------------------------------------------- in this process


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one call did: its result or the exception it raised, and the CPU seconds it used."""

    result: Any
    error: BaseException | None
    cpu_seconds: float

    def within(self, time_limit: float = TIME_LIMIT) -> bool:
        return self.cpu_seconds < time_limit


class _Alarm(BaseException):
    """Raised by the wall-clock backstop; a BaseException so that no ``except Exception`` swallows it."""


def call_within(
    func: Callable[..., Any], *args: Any, time_limit: float = TIME_LIMIT, **kwargs: Any
) -> Outcome:
    """``func(*args, **kwargs)`` here, with its CPU seconds; a call still running after
    ``WALL_BACKSTOP * time_limit`` wall seconds fails the test (it hangs)."""
    import pytest

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Alarm

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, WALL_BACKSTOP * time_limit)
    start = time.process_time()
    try:
        try:
            result = func(*args, **kwargs)
            return Outcome(result, None, time.process_time() - start)
        except Exception as exc:  # noqa: BLE001 - the type is what the caller judges
            return Outcome(None, exc, time.process_time() - start)
    except _Alarm:
        pytest.fail(
            f"{getattr(func, '__name__', func)!s} did not return within {WALL_BACKSTOP * time_limit:g} s"
        )
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- in forked children


def _vm_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(calls: Sequence[Callable[[], Any]], write_end: int, memory_limit: int) -> None:
    """In the forked child: run each call, writing ``(index, result)`` frames (4-byte size, pickle)."""
    status = 0
    try:
        limit = _vm_bytes() + memory_limit
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        for index, call in enumerate(calls):
            data = pickle.dumps((index, call()))
            frame = len(data).to_bytes(4, "big") + data
            while frame:
                frame = frame[os.write(write_end, frame) :]
    except BaseException:  # noqa: BLE001 - the parent reports the call it was running
        status = 1
    finally:
        os._exit(status)


def run_isolated(
    calls: Sequence[Callable[[], Any]],
    *,
    time_limit: float = TIME_LIMIT,
    memory_limit: int = MEMORY_LIMIT,
) -> list[Any]:
    """Each call's return value, the calls run in order in forked children.

    A child runs the calls in order under ``RLIMIT_AS`` (``memory_limit`` bytes more than it
    started with). The parent kills it when the running call has used ``time_limit`` CPU seconds
    (or ``WALL_BACKSTOP * time_limit`` wall seconds) without answering, and that call's entry is a
    :class:`Failure` ("does not return within ..."); a child that dies leaves "the process dies
    (...)" for the call it was running. Either way a new child carries on with the next call.
    A call returns something picklable (a verdict, a number); it should catch what it raises.
    """
    outcomes: list[Any] = [None] * len(calls)
    start = 0
    while start < len(calls):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _child(calls[start:], write_end, memory_limit)
        os.close(write_end)
        buffer = b""
        done = start  # the first call without an outcome yet
        timed_out = False
        try:
            began, cpu_at_start = time.monotonic(), process_cpu_seconds(pid)
            while done < len(calls):
                elapsed = time.monotonic() - began
                if elapsed >= time_limit and (
                    process_cpu_seconds(pid) - cpu_at_start >= time_limit
                    or elapsed >= WALL_BACKSTOP * time_limit
                ):
                    timed_out = True
                    break
                wait = time_limit - elapsed if elapsed < time_limit else 0.1
                ready, _, _ = select.select([read_end], [], [], max(wait, 0.01))
                if not ready:
                    continue
                chunk = os.read(read_end, 1 << 16)
                if not chunk:
                    break
                buffer += chunk
                while len(buffer) >= 4 and len(buffer) >= 4 + int.from_bytes(buffer[:4], "big"):
                    size = int.from_bytes(buffer[:4], "big")
                    index, outcome = pickle.loads(buffer[4 : 4 + size])
                    buffer = buffer[4 + size :]
                    outcomes[start + index] = outcome
                    done = start + index + 1
                    began, cpu_at_start = time.monotonic(), process_cpu_seconds(pid)
        finally:
            os.close(read_end)
            if timed_out or done < len(calls):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        if done < len(calls):
            if timed_out:
                outcomes[done] = Failure(f"does not return within {time_limit:g} s")
            else:
                how = (
                    f"signal {os.WTERMSIG(status)}"
                    if os.WIFSIGNALED(status)
                    else f"status {status}"
                )
                outcomes[done] = Failure(
                    f"the process dies ({how}; memory limit {memory_limit >> 20} MiB)"
                )
            done += 1
        start = done
    return outcomes
