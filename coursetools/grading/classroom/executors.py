"""Where grading jobs run: a concurrent.futures executor, local or on a Dask cluster.

One job: hand out an object with ``submit(fn, *args) -> Future`` (the
:class:`concurrent.futures.Executor` interface) and run a batch through it with a progress line
per finished job. Grading code never knows which executor it got.

- ``workers=1``: :class:`SerialExecutor`, in this process (for debugging and the serial-equals-
  parallel test);
- ``workers=N``: a :class:`~concurrent.futures.ProcessPoolExecutor` (default: one per core);
- ``scheduler="tcp://host:port"`` (or a ``distributed.LocalCluster``): a Dask client's
  ``get_executor()``, so a class is graded across machines. Dask is imported only then: the
  course works without it (``pip install -e '.[grading]'`` adds it).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["Pool", "SerialExecutor", "default_workers", "make_executor", "run_all"]


class SerialExecutor(cf.Executor):
    """Runs each job when it is submitted, in this process."""

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> cf.Future:
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)
        return future


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def make_executor(workers: int | None = None, scheduler: Any = None) -> Iterator[cf.Executor]:
    """An executor for ``workers`` local processes, or for the Dask ``scheduler`` if given.

    ``scheduler`` is an address (``tcp://host:port``) or anything ``distributed.Client`` accepts
    (e.g. a ``LocalCluster``). The workers must have this package and the course's dependencies
    installed; jobs carry the notebooks' text, so the workers need no shared file system.
    """
    if scheduler is not None:
        try:
            from distributed import Client
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise SystemExit(
                "grading on a Dask cluster needs dask and distributed: pip install -e '.[grading]'"
            ) from exc
        with Client(scheduler) as client:
            yield client.get_executor(pure=False)
        return
    workers = default_workers() if workers is None else workers
    if workers <= 1:
        yield SerialExecutor()
        return
    with cf.ProcessPoolExecutor(max_workers=workers) as pool:
        yield pool


class Pool:
    """A long-lived executor for a service: :func:`make_executor`'s, made anew when it breaks.

    A process pool whose worker died is broken for good (every later ``submit`` raises
    :class:`concurrent.futures.BrokenExecutor`); :meth:`renew` replaces it.
    """

    def __init__(self, workers: int | None = None, scheduler: Any = None) -> None:
        self.workers, self.scheduler = workers, scheduler
        self._stack: contextlib.ExitStack | None = None
        self.executor: cf.Executor | None = None
        self.renew()

    def renew(self) -> None:
        self.close()
        self._stack = contextlib.ExitStack()
        self.executor = self._stack.enter_context(make_executor(self.workers, self.scheduler))

    def submit(self, fn: Callable, /, *args: Any) -> cf.Future:
        return self.executor.submit(fn, *args)

    def close(self) -> None:
        if self._stack is not None:
            stack, self._stack, self.executor = self._stack, None, None
            try:
                stack.close()
            except Exception:  # noqa: BLE001 - a broken pool's shutdown may complain
                pass

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_all(
    executor: cf.Executor,
    fn: Callable[[Any], dict],
    jobs: Sequence[Any],
    *,
    label: Callable[[Any], str] = str,
    describe: Callable[[dict], str] = lambda r: "",
    on_error: Callable[[Any, BaseException], dict] | None = None,
    stream: Any = None,
) -> list[dict]:
    """Run ``fn`` on every job; results in the jobs' order, one progress line per finished job.

    A job whose future raises (a worker lost, a bug) gets ``on_error(job, exc)`` instead, so one
    failure never loses the other results.
    """
    stream = sys.stderr if stream is None else stream
    start = time.monotonic()
    results: list[dict | None] = [None] * len(jobs)
    for done, (i, future) in enumerate(_completed(executor, fn, jobs), start=1):
        try:
            results[i] = future.result()
        except Exception as exc:  # noqa: BLE001 - reported as that submission's problem
            if on_error is None:
                raise
            results[i] = on_error(jobs[i], exc)
        elapsed = time.monotonic() - start
        eta = elapsed / done * (len(jobs) - done)
        print(
            f"[{done:>{len(str(len(jobs)))}}/{len(jobs)}] {label(jobs[i]):<40} "
            f"{describe(results[i]):<24} elapsed {elapsed:5.1f}s  ETA {eta:5.1f}s",
            file=stream,
            flush=True,
        )
    return results  # type: ignore[return-value]


def _completed(
    executor: cf.Executor, fn: Callable, jobs: Sequence[Any]
) -> Iterator[tuple[int, cf.Future]]:
    """(index, future) pairs as they finish; a serial executor runs one job per step."""
    if isinstance(executor, SerialExecutor):
        for i, job in enumerate(jobs):
            yield i, executor.submit(fn, job)
        return
    futures = {executor.submit(fn, job): i for i, job in enumerate(jobs)}
    for future in cf.as_completed(futures):
        yield futures[future], future
