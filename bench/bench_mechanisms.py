"""Samplers: dplib's noise against numpy's raw samplers, OpenDP and diffprivlib, in ns per value.

Every figure is the median (and spread) of repeated calls, in nanoseconds per released value:

- dplib and numpy release a vector of ``size`` values per call (1e6 in a full run);
- OpenDP releases a vector per call too, but its exact samplers cost microseconds a value, so
  it is timed over fewer values (``opendp_size``, 2e4) and the note says so;
- diffprivlib releases one scalar per ``randomise`` call, so it is timed over a Python loop of
  ``loop_size`` values (2e4), which is how its mechanisms are used.

Tasks and goals (issue 18):

- textbook Laplace (``dplib.laplace_mechanism``): at most 1.5x the time of numpy's raw
  ``Generator.laplace``;
- the floating-point-safe variants (discrete Laplace, snapping, discrete Gaussian, and the
  noise of ``dplib.private_sum``, discrete Laplace on a grid of step 2**e, scale ~2**20 grid
  units): at most 5x the time of the numpy call a user would otherwise write (``laplace``, or
  ``normal`` for the Gaussian) and at least 100x faster than OpenDP's exact sampler of the same
  distribution;
- ``private_sum`` end to end over 1e6 values, against clip + sum + ``laplace`` in numpy and
  against OpenDP's clamp >> sum >> Laplace (no goal: figures for the record).

Scaling: each dplib sampler (and numpy's ``laplace``) from 1e3 to 1e7 values (1e3 to 1e5 with
``--quick``), with the fitted exponent of time against size.

Run: ``python bench/bench_mechanisms.py [--quick]`` (inside .venv-bench to see the peers; a peer
that is not installed gets a row that says so).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    Measurement,
    Row,
    Section,
    Series,
    measure_pair,
    measure_within,
    time_row,
)

import dplib  # noqa: E402
from dplib.mechanisms.discrete_gaussian import calibrated_sigma  # noqa: E402

GROUP = "samplers"
UNIT = "ns/value"
EPSILON = 1.0
DELTA = 1e-5
SNAP_BOUND = 1e3
#: Goals: dplib time / numpy time at most 1.5 (textbook) or 5 (safe); OpenDP time / dplib >= 100.
TEXTBOOK_VS_NUMPY = 1.5
SAFE_VS_NUMPY = 5.0
SAFE_VS_OPENDP = 100.0
#: Issue 38's goals for the exact integer samplers, against numpy's float Generator.laplace per
#: value, at 1e3 to 1e6 values a call: discrete Laplace <= 2x, discrete Gaussian <= 3x.
EXACT_LAPLACE_VS_NUMPY = 2.0
EXACT_GAUSSIAN_VS_NUMPY = 3.0
#: Issue 49: the discrete Gaussian beside numpy's float normal sampler at large sigma.
LARGE_SIGMAS = (1e3, 4e3, 1e4, 1e5, 1e6)
LARGE_SIGMA_COUNTS = (1_000, 100_000)


@dataclass(frozen=True)
class Sizes:
    """How many values each kind of call releases, and how often it is repeated."""

    size: int
    opendp_size: int
    loop_size: int
    repeats: int
    budget: float
    scaling: tuple[int, ...]
    #: the exact samplers' sizes (issue 38's goal holds from 1e3 to 1e6 values a call)
    exact: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000)

    @classmethod
    def for_run(cls, quick: bool) -> Sizes:
        if quick:
            return cls(100_000, 2_000, 2_000, 3, 5.0, (1_000, 10_000, 100_000), (1_000, 100_000))
        return cls(1_000_000, 20_000, 20_000, 7, 20.0, tuple(10**k for k in range(3, 8)))


def private_sum_grid(lower: float, upper: float, epsilon: float) -> tuple[float, int]:
    """(grid step ``g``, integer sensitivity) that ``dplib.private_sum`` uses (add/remove).

    Read from ``dplib.queries.aggregates`` so the benchmark follows the library if its grid changes; the
    noise ``private_sum`` draws is discrete Laplace of scale ``units / epsilon`` grid steps.

    >>> step, units = private_sum_grid(0.0, 1.0, 1.0)
    >>> step == 2.0**-20, units == 2**20
    (True, True)
    """
    from dplib.queries import aggregates as queries

    if not lower < upper:
        raise ValueError(f"lower must be < upper, got lower={lower!r}, upper={upper!r}")
    span = max(abs(lower), abs(upper))
    step = math.ldexp(1.0, queries.grid_exponent(span, epsilon))
    units = max(abs(int(np.rint(lower / step))), abs(int(np.rint(upper / step))))
    return step, units


# ------------------------------------------------------------------------------------- peers


def _opendp_prelude():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def opendp_sampler(kind: str, scale: float, count: int) -> Callable[[], object] | str:
    """OpenDP's measurement releasing ``count`` values of ``kind`` noise, or why there is none.

    ``kind``: "laplace" (floats: OpenDP's float Laplace is itself floating-point safe),
    "discrete_laplace" (integers), "discrete_gaussian" (integers).
    """
    try:
        dp = _opendp_prelude()
    except ImportError as error:
        return f"opendp not installed ({error})"
    if kind == "laplace":
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
        measurement, data = space >> dp.m.then_laplace(scale=scale), [0.0] * count
    elif kind == "discrete_laplace":
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)
        measurement, data = space >> dp.m.then_laplace(scale=scale), [0] * count
    elif kind == "discrete_gaussian":
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int)
        measurement, data = space >> dp.m.then_gaussian(scale=scale), [0] * count
    else:
        raise ValueError(
            f"kind must be laplace, discrete_laplace or discrete_gaussian, got {kind!r}"
        )
    return lambda: measurement(data)


def opendp_private_sum(
    x: np.ndarray, lower: float, upper: float, epsilon: float
) -> Callable[[], object] | str:
    """OpenDP's clamp >> sum >> Laplace on floats (its float sum accounts for rounding)."""
    try:
        dp = _opendp_prelude()
    except ImportError as error:
        return f"opendp not installed ({error})"
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=len(x))
    sum_ = (
        (domain, dp.symmetric_distance())
        >> dp.t.then_clamp(bounds=(lower, upper))
        >> dp.t.then_sum()
    )
    measurement = dp.binary_search_chain(
        lambda s: sum_ >> dp.m.then_laplace(scale=s), d_in=1, d_out=epsilon
    )
    data = x.tolist()
    return lambda: measurement(data)


def diffprivlib_sampler(kind: str, count: int) -> Callable[[], object] | str:
    """diffprivlib's scalar mechanism of ``kind`` over a Python loop of ``count`` values."""
    try:
        from diffprivlib import mechanisms
    except ImportError as error:
        return f"diffprivlib not installed ({error})"
    if kind == "laplace":
        mechanism, value = mechanisms.Laplace(epsilon=EPSILON, sensitivity=1.0), 0.0
    elif kind == "discrete_laplace":
        mechanism, value = mechanisms.Geometric(epsilon=EPSILON, sensitivity=1), 0
    elif kind == "snapping":
        mechanism = mechanisms.Snapping(
            epsilon=EPSILON, sensitivity=1.0, lower=-SNAP_BOUND, upper=SNAP_BOUND
        )
        value = 0.0
    elif kind == "discrete_gaussian":
        mechanism = mechanisms.GaussianDiscrete(epsilon=EPSILON, delta=DELTA, sensitivity=1)
        value = 0
    else:
        raise ValueError(
            f"kind must be laplace, discrete_laplace, snapping or discrete_gaussian, got {kind!r}"
        )
    return lambda: [mechanism.randomise(value) for _ in range(count)]


# ------------------------------------------------------------------------------------- timing


def compare(
    ours: Callable[[], object], count: int, theirs: Callable[[], object] | str, their_count: int,
    sizes: Sizes,
) -> tuple[Measurement, Measurement | str]:
    """ns per value of dplib's call (``count`` values) and of the peer's (``their_count``),
    timed alternately (:func:`measure_pair`). A peer given as a string (why it is missing) or
    failing gives that reason instead of its measurement; dplib failing raises."""
    if isinstance(theirs, str):
        return measure_within(ours, sizes.repeats, sizes.budget).scaled(1e9 / count), theirs
    try:
        theirs()
    except Exception as error:  # a peer that fails is a row with the reason, not a lost run
        reason = f"failed: {type(error).__name__}: {error}"
        return measure_within(ours, sizes.repeats, sizes.budget).scaled(1e9 / count), reason
    mine, other = measure_pair(ours, theirs, sizes.repeats, sizes.budget)
    return mine.scaled(1e9 / count), other.scaled(1e9 / their_count)


def _row(task: str, peer: str, ours: Measurement, theirs: Measurement | str, *,
         minimum: float | None = None, goal: str = "", note: str = "") -> Row:
    if isinstance(theirs, str):
        return time_row(GROUP, task, peer, UNIT, ours, None, goal=goal, note=f"{peer}: {theirs}")
    return time_row(GROUP, task, peer, UNIT, ours, theirs, minimum=minimum, goal=goal, note=note)


@dataclass(frozen=True)
class Task:
    """One sampler and its peers, each (peer, call or reason, values a call, goal minimum, goal,
    note)."""

    name: str
    ours: Callable[[], object]
    peers: list[tuple[str, Callable[[], object] | str, int, float | None, str, str]]
    count: int | None = None  # values a call of ``ours``; None: the run's size


def tasks(sizes: Sizes, rng: np.random.Generator) -> tuple[list[Task], list[str]]:
    """The samplers to time, each with its peers and goals, and the notes that explain them."""
    n, n_odp, n_loop = sizes.size, sizes.opendp_size, sizes.loop_size
    zeros, int_zeros = np.zeros(n), np.zeros(n, dtype=np.int64)
    dsigma = dplib.discrete_gaussian_sigma(1, EPSILON, DELTA)
    step, units = private_sum_grid(0.0, 1.0, EPSILON)
    grid_scale = units / EPSILON
    data = rng.random(n)

    def numpy_laplace() -> object:
        return rng.laplace(0.0, 1.0, n)

    def numpy_normal() -> object:
        return rng.normal(0.0, dsigma, n)

    odp_note = f"OpenDP over {n_odp:,} values a call (exact sampler)"
    dpl_note = f"diffprivlib: scalar randomise() in a Python loop of {n_loop:,}"
    safe_np = (1 / SAFE_VS_NUMPY, f"dplib <= {SAFE_VS_NUMPY:g}x numpy time")
    safe_odp = (SAFE_VS_OPENDP, f">= {SAFE_VS_OPENDP:g}x faster than OpenDP")
    unsafe = "numpy Generator.laplace (textbook, not safe)"
    out = [
        Task("textbook Laplace, scale 1",
             lambda: dplib.laplace_mechanism(zeros, 1.0, EPSILON, rng=rng), [
                 ("numpy", numpy_laplace, n, 1 / TEXTBOOK_VS_NUMPY,
                  f"dplib <= {TEXTBOOK_VS_NUMPY:g}x numpy time", "numpy Generator.laplace"),
                 ("OpenDP", opendp_sampler("laplace", 1.0, n_odp), n_odp, None, "",
                  odp_note + "; OpenDP's float Laplace is floating-point safe, dplib's is not"),
                 ("diffprivlib", diffprivlib_sampler("laplace", n_loop), n_loop, None, "",
                  dpl_note)]),
        Task("discrete Laplace, scale 1",
             lambda: dplib.discrete_laplace_mechanism(int_zeros, 1, EPSILON, rng=rng), [
                 ("numpy", numpy_laplace, n, *safe_np, unsafe),
                 ("OpenDP", opendp_sampler("discrete_laplace", 1.0, n_odp), n_odp, *safe_odp,
                  odp_note),
                 ("diffprivlib", diffprivlib_sampler("discrete_laplace", n_loop), n_loop, None,
                  "", dpl_note + " (Geometric)")]),
        Task(f"snapping, B = {SNAP_BOUND:g}",
             lambda: dplib.snapping_mechanism(zeros, 1.0, EPSILON, SNAP_BOUND, rng=rng), [
                 ("numpy", numpy_laplace, n, *safe_np, unsafe),
                 ("OpenDP", opendp_sampler("laplace", 1.0, n_odp), n_odp, *safe_odp,
                  odp_note + " (its float Laplace: OpenDP has no snapping, this is its safe "
                  "float Laplace)"),
                 ("diffprivlib", diffprivlib_sampler("snapping", n_loop), n_loop, None, "",
                  dpl_note + " (Snapping)")]),
        Task(f"discrete Gaussian, sigma {dsigma:.3f}",
             lambda: dplib.discrete_gaussian_mechanism(int_zeros, 1, EPSILON, DELTA, rng=rng), [
                 ("numpy", numpy_normal, n, *safe_np,
                  "numpy Generator.normal (continuous, not safe)"),
                 ("OpenDP", opendp_sampler("discrete_gaussian", dsigma, n_odp), n_odp,
                  *safe_odp, odp_note),
                 ("diffprivlib", diffprivlib_sampler("discrete_gaussian", n_loop), n_loop, None,
                  "", dpl_note + " (GaussianDiscrete)")]),
        Task(f"private_sum noise: discrete Laplace, scale 2^{math.log2(grid_scale):.0f}",
             lambda: dplib.sample_discrete_laplace(grid_scale, n, rng=rng), [
                 ("numpy", numpy_laplace, n, *safe_np, unsafe),
                 ("OpenDP", opendp_sampler("discrete_laplace", grid_scale, n_odp), n_odp,
                  *safe_odp, odp_note + ", same scale")]),
        Task(f"private_sum of {n:,} values in [0, 1]",
             lambda: dplib.private_sum(data, 0.0, 1.0, EPSILON, rng=rng), [
                 ("numpy", lambda: float(np.clip(data, 0.0, 1.0).sum()) + rng.laplace(0.0, 1.0),
                  n, None, "", "numpy clip + sum + one Generator.laplace (textbook, not safe)"),
                 ("OpenDP", opendp_private_sum(data[:n_odp], 0.0, 1.0, EPSILON), n_odp, None, "",
                  f"OpenDP clamp >> sum >> laplace over {n_odp:,} values a call")]),
    ]
    lap_goal = (1 / EXACT_LAPLACE_VS_NUMPY, f"dplib <= {EXACT_LAPLACE_VS_NUMPY:g}x numpy time")
    gau_goal = (1 / EXACT_GAUSSIAN_VS_NUMPY, f"dplib <= {EXACT_GAUSSIAN_VS_NUMPY:g}x numpy time")
    for m in sizes.exact:
        def numpy_m(m: int = m) -> object:
            return rng.laplace(0.0, 1.0, m)

        out.append(Task(
            f"exact discrete Laplace sampler, scale 2, {m:,} values",
            lambda m=m: dplib.sample_discrete_laplace(2.0, m, rng=rng), [
                ("numpy", numpy_m, m, *lap_goal, unsafe + ", same number of values"),
                ("OpenDP", opendp_sampler("discrete_laplace", 2.0, n_odp), n_odp, *safe_odp,
                 odp_note)], count=m))
        out.append(Task(
            f"exact discrete Gaussian sampler, sigma {dsigma:.4f}, {m:,} values",
            lambda m=m: dplib.sample_discrete_gaussian(dsigma, m, rng=rng), [
                ("numpy", numpy_m, m, *gau_goal, unsafe + ", same number of values"),
                ("OpenDP", opendp_sampler("discrete_gaussian", dsigma, n_odp), n_odp,
                 *safe_odp, odp_note)], count=m))
    # issue 49: the discrete Gaussian at large sigma (above 1024 the block sampler), against
    # numpy's float Generator.normal of the same sigma, at 1e3 and 1e5 values a call
    normal_goal = (1 / EXACT_GAUSSIAN_VS_NUMPY, f"dplib <= {EXACT_GAUSSIAN_VS_NUMPY:g}x numpy time")
    for sigma in LARGE_SIGMAS:
        for m in LARGE_SIGMA_COUNTS:
            def numpy_normal_m(m: int = m, sigma: float = sigma) -> object:
                return rng.normal(0.0, sigma, m)

            out.append(Task(
                f"exact discrete Gaussian sampler, sigma {sigma:.0e}, {m:,} values",
                lambda m=m, sigma=sigma: dplib.sample_discrete_gaussian(sigma, m, rng=rng), [
                    ("numpy", numpy_normal_m, m, *normal_goal,
                     "numpy Generator.normal, same sigma and number of values (continuous, "
                     "not safe)")], count=m))
    notes = [
        f"{n:,} values a call for dplib and numpy, dplib and the peer timed alternately, median "
        f"of up to {sizes.repeats} pairs after a warm-up; epsilon {EPSILON:g}, sensitivity 1, "
        f"delta {DELTA:g}. Ratio = peer time / dplib time (above 1: dplib is faster).",
        "The numpy baseline of a safe sampler is the textbook call a user would write instead "
        "(Generator.laplace; Generator.normal for the discrete Gaussian): the ratio is the cost "
        "of safety.",
        f"private_sum (add/remove, bounds [0, 1], epsilon {EPSILON:g}) rounds each value onto a "
        f"grid of step 2^{math.log2(step):.0f} and adds discrete Laplace noise of scale "
        f"{units:,} grid units / epsilon, drawn by dplib.sample_discrete_laplace "
        "(the row 'private_sum noise'); its end-to-end rows are per input value.",
        "Exact samplers (issue 38): dplib.sample_discrete_laplace and sample_discrete_gaussian draw "
        "in integer arithmetic only (at these scales one 64-bit word a value, or a CKS20 "
        "Algorithm 3 round, inverted through a table of certified binary digits), against "
        "numpy's float Generator.laplace at the same number of values a call; goals "
        f"<= {EXACT_LAPLACE_VS_NUMPY:g}x (Laplace) and <= {EXACT_GAUSSIAN_VS_NUMPY:g}x (Gaussian). "
        "Their tables are built on the first call for a scale and kept, so the warm-up call "
        "pays for them.",
        "Discrete Gaussian at large sigma (issue 49): sample_discrete_gaussian at sigma "
        + ", ".join(f"{s:.0e}" for s in LARGE_SIGMAS)
        + " against numpy's float Generator.normal of the same sigma, at "
        + " and ".join(f"{m:,}" for m in LARGE_SIGMA_COUNTS)
        + " values a call, timed alternately in one run; above sigma 1024 the sampler draws a "
        "block of 2**j integers from an exact table, an offset in it and one exact acceptance "
        f"test; goal <= {EXACT_GAUSSIAN_VS_NUMPY:g}x.",
    ]
    return out, notes


def run(quick: bool = False, exact_only: bool = False) -> Section:
    """Time every sampler against its peers, then the scaling series; see the module docstring.

    ``exact_only``: only issue 38's rows (the exact samplers at each size), no scaling series.
    """
    sizes = Sizes.for_run(quick)
    rng = np.random.default_rng(2026)
    todo, notes = tasks(sizes, rng)
    if exact_only:
        todo = [task for task in todo if task.name.startswith("exact ")]
    section = Section("samplers", notes=notes)
    for task in todo:
        for peer, theirs, count, minimum, goal, note in task.peers:
            ours, other = compare(task.ours, task.count or sizes.size, theirs, count, sizes)
            section.rows.append(_row(task.name, peer, ours, other, minimum=minimum, goal=goal,
                                     note=note))
    if exact_only:
        return section

    def solve() -> float:
        calibrated_sigma.cache_clear()  # the first call's cost
        return dplib.discrete_gaussian_sigma(1, EPSILON, DELTA)

    first = measure_within(solve, sizes.repeats, sizes.budget)
    again = measure_within(lambda: dplib.discrete_gaussian_sigma(1, EPSILON, DELTA),
                           sizes.repeats, sizes.budget)
    per_value = [r.ours for r in section.rows if r.task.startswith("discrete Gaussian") and r.ours]
    as_long_as = (f" (as long as drawing about {first.median / (per_value[0] * 1e-9):,.0f} values)"
                  if per_value else "")
    section.notes.append(
        "dplib.discrete_gaussian_mechanism solves for sigma (discrete_gaussian_sigma) once per "
        f"(sensitivity, epsilon, delta) and remembers it: {first.median * 1e3:.1f} ms the first "
        f"time{as_long_as}, {again.median * 1e6:.1f} us after that."
    )
    section.notes.append(SCALING_NOTE)
    section.series.extend(scaling(sizes, rng))
    return section


#: The samplers of the scaling plot: label -> a call releasing ``m`` values.
SCALED = (
    "numpy Generator.laplace",
    "dplib laplace_mechanism",
    "dplib discrete_laplace_mechanism",
    "dplib snapping_mechanism",
    "dplib discrete_gaussian_mechanism",
    "dplib private_sum",
)


#: What the scaling curves show (measured on 2 loaded cores, November 2026; see the report).
SCALING_NOTE = (
    "Scaling: every sampler is a fixed number of vectorised passes over its values, linear by "
    "algorithm. Below ~1e5 values fixed per-call costs (argument checks, "
    "private_sum's grid set-up) flatten the curves (fitted exponents "
    "below 1). A segment slope above 1 between 1e5 and 1e7 values (up to 1.5 seen) is memory, "
    "not arithmetic: each temporary array (8 MB at 1e6, 80 MB at 1e7 values) outgrows the "
    "caches, and at 1e7 numpy's arrays are fresh mmap allocations that page-fault on every call; "
    "re-measured alone, private_sum's 1e6 -> 1e7 slope was 0.95 to 1.06."
)


def scaled_call(name: str, m: int, rng: np.random.Generator) -> Callable[[], object]:
    """A call of the sampler ``name`` (one of :data:`SCALED`) releasing ``m`` values."""
    if name not in SCALED:
        raise ValueError(f"name must be one of {SCALED}, got {name!r}")
    zeros, int_zeros, data = np.zeros(m), np.zeros(m, dtype=np.int64), rng.random(m)
    calls: dict[str, Callable[[], object]] = {
        "numpy Generator.laplace": lambda: rng.laplace(0.0, 1.0, m),
        "dplib laplace_mechanism": lambda: dplib.laplace_mechanism(zeros, 1.0, EPSILON, rng=rng),
        "dplib discrete_laplace_mechanism": lambda: dplib.discrete_laplace_mechanism(
            int_zeros, 1, EPSILON, rng=rng),
        "dplib snapping_mechanism": lambda: dplib.snapping_mechanism(
            zeros, 1.0, EPSILON, SNAP_BOUND, rng=rng),
        "dplib discrete_gaussian_mechanism": lambda: dplib.discrete_gaussian_mechanism(
            int_zeros, 1, EPSILON, DELTA, rng=rng),
        "dplib private_sum": lambda: dplib.private_sum(data, 0.0, 1.0, EPSILON, rng=rng),
    }
    return calls[name]


def scaling(sizes: Sizes, rng: np.random.Generator) -> list[Series]:
    """Seconds per call against values per call for each dplib sampler and numpy's Laplace."""
    out = []
    for name in SCALED:
        seconds = [
            measure_within(scaled_call(name, m, rng), sizes.repeats, sizes.budget).median
            for m in sizes.scaling
        ]
        out.append(Series(name, "values per call", [float(m) for m in sizes.scaling], seconds))
    return out


def main(argv: list[str] | None = None) -> None:
    """Run the samplers' benchmark alone and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--exact", action="store_true",
                        help="only the exact samplers' rows (issue 38), no scaling series")
    args = parser.parse_args(argv)
    from report import format_exponents, format_table

    section = run(quick=args.quick, exact_only=args.exact)
    print(format_table([section]))
    print(format_exponents([section]))


if __name__ == "__main__":
    main()
