"""Time limits counted in the submission's own CPU time, with the wall clock only as a backstop.

One job: say when a cell or a test has used up its time. A busy grading machine (other
submissions, a neighbour's job, a laptop's browser) slows a correct answer down but never makes
it *use* more CPU, so a limit counted in CPU time cannot take points from it. The CPU counted is
the submission's: its kernel's control group (:meth:`SubmissionGroup.cpu_seconds
<coursetools.grading.sandboxed.limits.SubmissionGroup.cpu_seconds>`) and, while a test runs, the
trusted runner's process (``/proc/<pid>/stat``), since a test's own computing counts towards
the test's limit.

The wall clock stays as a backstop, ``wall_factor`` times the limit plus :data:`WALL_SLACK`: a
cell that sleeps, or waits for input that never comes, uses no CPU. A limit reached on the wall
clock is *starved* when the machine, not the notebook, spent the time: its tasks **waited on a
run queue** (runnable, not running) for at least :data:`STARVED_WAIT_SHARE` of the wall time, and
longer than they computed. The waiting is the scheduler's own count, ``run_delay`` in
``/proc/<pid>/task/<tid>/schedstat`` (Linux, Documentation/scheduler/sched-stats.rst), of every
thread of the submission's processes, the largest one: a notebook that sleeps waits for nothing,
whatever share of a core its bursts use, and threads that wait for each other (the submission's
own CPU quota) wait less than they compute. A starved result is graded once more by the class
pipeline (``make grade``'s second pass, the hand-in service's second pass with the same hand-in
wall); starved again, it counts as the timeout it is.

Without a control group (``rlimit`` mode) the kernel's CPU cannot be measured: limits are on the
wall clock there, as the report of that mode says, and nothing is starved.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

__all__ = ["Budget", "CpuMeter", "STARVED_WAIT_SHARE", "WALL_SLACK", "process_cpu_seconds", "task_waits"]

#: share of the wall time a submission's tasks must have waited for a CPU to be called starved
STARVED_WAIT_SHARE = 0.5
#: seconds added to every wall-clock backstop (start-up, a reply in transit)
WALL_SLACK = 10.0
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its waited-for children (0 if gone).

    From ``/proc/<pid>/stat`` (fields 14-17: utime, stime, cutime, cstime, in clock ticks).
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return 0.0
    fields = text[text.rindex(b")") + 2 :].split()
    try:
        return sum(int(v) for v in fields[11:15]) / _TICKS
    except (ValueError, IndexError):
        return 0.0


def task_waits(pids: Iterable[int]) -> dict[tuple[int, int], float]:
    """Seconds each thread of the processes ``pids`` has waited on a run queue, by ``(pid, tid)``.

    ``run_delay``, the second field of ``/proc/<pid>/task/<tid>/schedstat`` (nanoseconds spent
    runnable but not running; Linux, Documentation/scheduler/sched-stats.rst). A process or
    thread that is gone, or unreadable, is left out.
    """
    found: dict[tuple[int, int], float] = {}
    for pid in set(pids):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                    fields = f.read().split()
                found[(pid, int(tid))] = int(fields[1]) / 1e9
            except (OSError, ValueError, IndexError):
                continue
    return found


class CpuMeter:
    """The CPU seconds a submission has used (its control group's and some processes' of its own),
    and how long its threads waited for a CPU.

    Parameters
    ----------
    group_seconds : callable or None
        The control group's CPU seconds (None, or a callable returning None: not measurable).
    group_pids : callable, optional
        The processes in the control group now; without it waiting is not measured (and nothing
        is ever starved).
    cores : float
        The group's CPU quota in cores (threads of a group held to less than one core wait while
        they are throttled: that waiting is their own).
    """

    def __init__(
        self,
        group_seconds: Callable[[], float | None] | None = None,
        group_pids: Callable[[], Iterable[int]] | None = None,
        cores: float = 1.0,
    ) -> None:
        self._group = group_seconds
        self._pids = group_pids
        self.cores = cores
        self.measurable = group_seconds is not None and group_seconds() is not None

    def seconds(self, pids: Iterable[int] = ()) -> float:
        group = self._group() if self._group is not None else None
        return (group or 0.0) + sum(process_cpu_seconds(p) for p in set(pids))

    @property
    def counts_waits(self) -> bool:
        return self._pids is not None

    def waits(self, pids: Iterable[int] = ()) -> dict[tuple[int, int], float]:
        """:func:`task_waits` of the group's processes and ``pids``."""
        if self._pids is None:
            return {}
        try:
            group = list(self._pids())
        except OSError:
            group = []
        return task_waits([*group, *pids])


class Budget:
    """``seconds`` of CPU time from now (of the wall clock without a meter), with a backstop.

    Parameters
    ----------
    seconds : float
        The limit.
    meter : CpuMeter, optional
        What counts CPU time; without one (or one that cannot measure) the limit is wall time.
    wall_factor : float
        The wall-clock backstop is ``wall_factor * seconds + WALL_SLACK``.
    wall : float, optional
        A wall-clock backstop given outright (the smaller one applies).
    pids : iterable of int
        Processes whose CPU counts besides the meter's group (the trusted runner during a test).
    """

    def __init__(
        self,
        seconds: float,
        meter: CpuMeter | None = None,
        *,
        wall_factor: float = 3.0,
        wall: float | None = None,
        pids: Iterable[int] = (),
    ) -> None:
        self.seconds = max(0.0, float(seconds))
        self.pids = tuple(pids)
        self.wall_factor = wall_factor
        self.meter = meter if meter is not None and meter.measurable else None
        self.started = time.monotonic()
        self.cpu_start = self.meter.seconds(self.pids) if self.meter else 0.0
        backstop = self.seconds * wall_factor + WALL_SLACK if self.meter else self.seconds
        self.backstop = backstop if wall is None else min(backstop, max(0.0, wall))
        self.wait_start = self.meter.waits(self.pids) if self.meter else {}
        self.ended: str | None = None  # "cpu" | "wall" once expired
        # when it expired on the wall clock: its wall, CPU and run-queue seconds (see `starved`)
        self.wall_seconds = self.cpu_seconds = self.waited = 0.0

    def used(self) -> float:
        """CPU seconds used since the start (wall seconds without a meter)."""
        if self.meter is None:
            return time.monotonic() - self.started
        return self.meter.seconds(self.pids) - self.cpu_start

    def expired(self) -> bool:
        if self.ended is not None:
            return True
        wall = time.monotonic() - self.started
        if self.meter is not None and self.used() >= self.seconds:
            self.ended = "cpu"
        elif wall >= self.backstop:
            self.ended = "wall"
            if self.meter is not None:
                self.wall_seconds, self.cpu_seconds, self.waited = wall, self.used(), self.waited_now()
        return self.ended is not None

    def waited_now(self) -> float:
        """The longest any one of the submission's threads has waited for a CPU since the start."""
        if self.meter is None:
            return 0.0
        now = self.meter.waits(self.pids)
        return max((seconds - self.wait_start.get(task, 0.0) for task, seconds in now.items()), default=0.0)

    def wall_left(self) -> float:
        """Wall seconds until the backstop (an upper bound for one wait)."""
        return self.backstop - (time.monotonic() - self.started)

    def cpu_left(self) -> float:
        return self.seconds - self.used()

    @property
    def starved(self) -> bool:
        """Cut by the wall clock because the machine would not give it a CPU: its threads waited
        for one at least :data:`STARVED_WAIT_SHARE` of the wall time, and longer than they
        computed (divided by the quota, when it is under one core). A notebook that sleeps, or
        computes in short bursts, waits for nothing and is never starved."""
        if self.ended != "wall" or self.meter is None or self.wall_seconds <= 0:
            return False
        own = self.cpu_seconds / min(1.0, self.meter.cores)
        return self.waited >= STARVED_WAIT_SHARE * self.wall_seconds and self.waited >= own

    def figures(self) -> dict[str, float]:
        """Wall, CPU and waiting seconds when it expired on the wall clock (what `starved` read)."""
        return {"wall": round(self.wall_seconds, 2), "cpu": round(self.cpu_seconds, 2),
                "waited": round(self.waited, 2)}

    def within(self, seconds: float, pids: Iterable[int] = ()) -> Budget:
        """A budget of ``seconds`` (at most what is left of this one) inside this one: a cell's
        limit within the notebook's; ``pids`` count too (not towards this one)."""
        return Budget(min(seconds, self.cpu_left()), self.meter, wall_factor=self.wall_factor,
                      wall=self.wall_left(), pids=pids)
