"""What every benchmark shares: repeated timing, one row format, the machine it ran on.

Every ``bench/bench_*.py`` module exposes ``run(quick: bool = False) -> Section`` and can still be
run on its own (``python bench/bench_x.py [--quick]`` prints its rows). ``bench/run_all.py`` calls
each, prints one table, writes ``bench/results.json`` and draws ``bench/scaling.png``.

A :class:`Row` compares dplib with one peer on one task, as a ratio, next to the goal the project
claims; a :class:`Series` is time against input size for the scaling plot, with its fitted exponent.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata

__all__ = [
    "Measurement",
    "Row",
    "Series",
    "Section",
    "measure",
    "measure_within",
    "measure_pair",
    "machine",
    "fit_exponent",
    "versions",
    "time_row",
    "tightness_row",
    "ratio_goal_met",
    "tightness_goal_met",
]


@dataclass(frozen=True)
class Measurement:
    """Seconds per call over ``repeats`` calls after one warm-up: median and spread (min, max)."""

    median: float
    low: float
    high: float
    repeats: int

    @property
    def spread(self) -> float:
        """Half the range, relative to the median (0.05 means the runs lay within about ±5%)."""
        return (self.high - self.low) / (2 * self.median) if self.median > 0 else 0.0

    def scaled(self, factor: float) -> Measurement:
        """The same measurement in another unit (``factor`` per second per call, > 0).

        >>> Measurement(2.0, 1.0, 3.0, 5).scaled(1e9 / 1e6).median   # s/call of 1e6 values -> ns/value
        2000.0
        """
        if not (factor > 0 and math.isfinite(factor)):
            raise ValueError(f"factor must be a finite number > 0, got {factor!r}")
        return Measurement(self.median * factor, self.low * factor, self.high * factor, self.repeats)


def measure(call: Callable[[], object], repeats: int = 5, *, warmup: bool = True) -> Measurement:
    """Time ``call()`` ``repeats`` times (after one untimed warm-up call unless ``warmup=False``)."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if warmup:
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return Measurement(statistics.median(times), min(times), max(times), repeats)


def measure_within(call: Callable[[], object], repeats: int = 5, budget: float = 30.0) -> Measurement:
    """Like :func:`measure`, but spend about ``budget`` seconds at most on slow calls.

    The warm-up call is timed. If it alone took longer than ``budget``, it is the only sample
    (``repeats == 1``: a call that slow has paid its first-call costs many times over);
    otherwise ``min(repeats, budget // warm-up time)`` further calls (at least one) are timed.
    ``Measurement.repeats`` says how many samples the median is of.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if not budget > 0:
        raise ValueError(f"budget must be > 0 seconds, got {budget!r}")
    start = time.perf_counter()
    call()
    first = time.perf_counter() - start
    if first > budget:
        return Measurement(first, first, first, 1)
    count = max(1, min(repeats, int(budget // first) if first > 0 else repeats))
    return measure(call, count, warmup=False)


@dataclass
class Row:
    """dplib against one peer on one task.

    ``ours`` and ``theirs`` are in ``unit`` (for example "ns/value", "ms/call", "samples/s",
    "epsilon"); ``ratio`` is how many times better dplib is (peer time / dplib time for a time,
    dplib throughput / peer throughput for a throughput, relative difference for a tightness row:
    say which in ``ratio_kind``). ``goal`` is the project's claim in words ("<= 1.5x numpy") and
    ``goal_met`` whether this run meets it (None when the row has no goal or a side is missing).
    ``note`` says why a side is missing ("opacus: torch not installable: ...").
    """

    group: str
    task: str
    peer: str
    unit: str
    ours: float | None
    theirs: float | None
    ratio: float | None = None
    ratio_kind: str = ""
    goal: str = ""
    goal_met: bool | None = None
    spread_ours: float | None = None
    spread_theirs: float | None = None
    note: str = ""


@dataclass
class Series:
    """Time against input size for the scaling plot (log-log), with its least-squares exponent."""

    name: str
    x_label: str
    sizes: list[float]
    seconds: list[float]
    exponent: float | None = None

    def __post_init__(self) -> None:
        if self.exponent is None and len(self.sizes) >= 2:
            self.exponent = fit_exponent(self.sizes, self.seconds)


@dataclass
class Section:
    """What one benchmark module returns (``error`` is set by run_all.py when the module failed)."""

    name: str
    rows: list[Row] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Section:
        """Inverse of :meth:`as_dict` (what ``bench/results.json`` holds for each section)."""
        return cls(
            name=data["name"],
            rows=[Row(**row) for row in data.get("rows", [])],
            series=[Series(**series) for series in data.get("series", [])],
            notes=list(data.get("notes", [])),
            error=data.get("error", ""),
        )


def ratio_goal_met(ratio: float | None, minimum: float | None) -> bool | None:
    """Whether ``ratio`` (peer time / dplib time) reaches ``minimum``; None when either is missing.

    ">= 100x faster than OpenDP" is ``minimum=100``; "at most 1.5x numpy's time" is
    ``minimum=1 / 1.5``.

    >>> ratio_goal_met(150.0, 100.0), ratio_goal_met(0.6, 1 / 1.5), ratio_goal_met(None, 2.0)
    (True, False, None)
    """
    if ratio is None or minimum is None:
        return None
    return ratio >= minimum


def tightness_goal_met(
    relative: float | None, tolerance: float, *, two_sided: bool, ours: float | None = None,
    lower: float | None = None,
) -> bool | None:
    """Whether a relative epsilon difference ``(dplib - peer) / peer`` meets the goal.

    ``two_sided``: ``|relative| <= tolerance`` (the peer runs the same algorithm, so a large
    difference either way is a bug). Otherwise ``relative <= tolerance``: dplib may be tighter
    (a better analysis), but never below ``lower``, a lower bound on the true epsilon that the
    peer certifies (prv-accountant does), since an epsilon below it cannot be a valid bound.

    >>> tightness_goal_met(-0.3, 0.01, two_sided=False)
    True
    >>> tightness_goal_met(-0.3, 0.01, two_sided=True)
    False
    >>> tightness_goal_met(-0.1, 0.01, two_sided=False, ours=0.9, lower=0.95)
    False
    """
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
    if relative is None or not math.isfinite(relative):
        return None
    if two_sided:
        return abs(relative) <= tolerance
    if lower is not None and ours is not None and ours < lower * (1 - 1e-12):
        return False
    return relative <= tolerance


def measure_pair(
    first: Callable[[], object], second: Callable[[], object], repeats: int = 5,
    budget: float = 30.0,
) -> tuple[Measurement, Measurement]:
    """Time two calls alternately (first, second, first, ...): each pair shares the machine's load.

    On a loaded machine a burst of load hits both sides of a pair rather than one side of the
    comparison, so the ratio of the two medians is steadier than from two separate
    :func:`measure` runs. Each call is warmed up once (timed); the number of pairs is
    ``min(repeats, budget // (warm-up time of the pair))``, at least one; when the warm-up pair
    alone exceeds ``budget`` it is the only sample.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if not budget > 0:
        raise ValueError(f"budget must be > 0 seconds, got {budget!r}")
    warm = []
    for call in (first, second):
        start = time.perf_counter()
        call()
        warm.append(time.perf_counter() - start)
    if sum(warm) > budget:
        return Measurement(warm[0], warm[0], warm[0], 1), Measurement(warm[1], warm[1], warm[1], 1)
    count = max(1, min(repeats, int(budget // sum(warm)) if sum(warm) > 0 else repeats))
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(count):
        for call, bucket in zip((first, second), times, strict=True):
            start = time.perf_counter()
            call()
            bucket.append(time.perf_counter() - start)
    return tuple(  # type: ignore[return-value]
        Measurement(statistics.median(t), min(t), max(t), count) for t in times
    )


def time_row(
    group: str, task: str, peer: str, unit: str, ours: Measurement | None,
    theirs: Measurement | None, *, minimum: float | None = None, goal: str = "", note: str = "",
) -> Row:
    """A speed row: medians in ``unit`` (lower is better), ratio = peer / dplib (> 1: dplib faster).

    ``minimum`` is the ratio the goal asks for (see :func:`ratio_goal_met`); a missing side
    (``None``) leaves ratio and verdict empty and ``note`` should say why it is missing.
    """
    both = ours is not None and theirs is not None and ours.median > 0
    ratio = theirs.median / ours.median if both else None
    return Row(
        group=group, task=task, peer=peer, unit=unit,
        ours=ours.median if ours is not None else None,
        theirs=theirs.median if theirs is not None else None,
        ratio=ratio, ratio_kind=f"{peer} time / dplib time",
        goal=goal, goal_met=ratio_goal_met(ratio, minimum) if goal else None,
        spread_ours=ours.spread if ours is not None else None,
        spread_theirs=theirs.spread if theirs is not None else None,
        note=note,
    )


def tightness_row(
    group: str, task: str, peer: str, ours: float | None, theirs: float | None, *,
    tolerance: float = 0.01, two_sided: bool = True, lower: float | None = None, goal: str = "",
    note: str = "",
) -> Row:
    """An epsilon row: ratio = (dplib - peer) / peer (< 0: dplib tighter); goal per
    :func:`tightness_goal_met`."""
    relative = (ours - theirs) / theirs if ours is not None and theirs not in (None, 0.0) else None
    met = tightness_goal_met(relative, tolerance, two_sided=two_sided, ours=ours, lower=lower)
    return Row(
        group=group, task=task, peer=peer, unit="epsilon", ours=ours, theirs=theirs,
        ratio=relative, ratio_kind="(dplib - peer) / peer epsilon",
        goal=goal, goal_met=met if goal else None, note=note,
    )


def fit_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float:
    """Slope b of log(seconds) = a + b log(size) by least squares: cost grows like size**b.

    >>> round(fit_exponent([1e3, 1e4, 1e5], [1e-3, 1e-2, 1e-1]), 6)
    1.0
    >>> round(fit_exponent([10, 100], [1.0, 100.0]), 6)
    2.0
    """
    if len(sizes) != len(seconds) or len(sizes) < 2:
        raise ValueError("fit_exponent needs at least two (size, seconds) pairs of equal length")
    if min(sizes) <= 0 or min(seconds) <= 0:
        raise ValueError("fit_exponent needs positive sizes and times")
    xs = [math.log(s) for s in sizes]
    ys = [math.log(t) for t in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("fit_exponent needs at least two different sizes")
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


def versions(*packages: str) -> dict[str, str]:
    """Installed version of each distribution, or "not installed"."""
    out = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def machine() -> dict:
    """Cores, CPU model, OS and Python: recorded with every result."""
    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu": model,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
