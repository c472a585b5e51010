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
clock while the submission was computing (at least :data:`STARVED_SHARE` of a core on average:
the machine would not give it its CPU) is *starved*: the result says so and the class-level
pipeline grades that submission again alone before its result counts (``make grade``'s second
pass, the hand-in service's ``alone`` rows). A notebook that was only sleeping is not starved.

Without a control group (``rlimit`` mode) the kernel's CPU cannot be measured: limits are on the
wall clock there, as the report of that mode says.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

__all__ = ["Budget", "CpuMeter", "STARVED_SHARE", "WALL_SLACK", "process_cpu_seconds"]

#: average share of a core above which a submission cut by the wall clock was computing, not sleeping
STARVED_SHARE = 0.1
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


class CpuMeter:
    """The CPU seconds a submission has used: its control group's and some processes' of its own.

    Parameters
    ----------
    group_seconds : callable or None
        The control group's CPU seconds (None, or a callable returning None: not measurable).
    """

    def __init__(self, group_seconds: Callable[[], float | None] | None = None) -> None:
        self._group = group_seconds
        self.measurable = group_seconds is not None and group_seconds() is not None

    def seconds(self, pids: Iterable[int] = ()) -> float:
        group = self._group() if self._group is not None else None
        return (group or 0.0) + sum(process_cpu_seconds(p) for p in set(pids))


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
        self.ended: str | None = None  # "cpu" | "wall" once expired
        self.share = 0.0  # the share of a core used, when it expired on the wall clock

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
            if self.meter is not None and wall > 0:
                self.share = self.used() / wall
        return self.ended is not None

    def wall_left(self) -> float:
        """Wall seconds until the backstop (an upper bound for one wait)."""
        return self.backstop - (time.monotonic() - self.started)

    def cpu_left(self) -> float:
        return self.seconds - self.used()

    @property
    def starved(self) -> bool:
        """Cut by the wall clock while computing: the machine was too busy to give it its CPU."""
        return self.ended == "wall" and self.meter is not None and self.share >= STARVED_SHARE

    def within(self, seconds: float, pids: Iterable[int] = ()) -> Budget:
        """A budget of ``seconds`` (at most what is left of this one) inside this one: a cell's
        limit within the notebook's; ``pids`` count too (not towards this one)."""
        return Budget(min(seconds, self.cpu_left()), self.meter, wall_factor=self.wall_factor,
                      wall=self.wall_left(), pids=pids)
