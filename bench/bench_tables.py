"""Issue 40's releases next to OpenDP's: unknown keys, several quantiles, a variance, filters.

Each row times dplib and OpenDP on the same task back to back (:func:`_harness.measure_pair`:
alternate calls, so load on a busy machine hits both sides of a pair), at the same privacy
parameters, and reports the time ratio (peer time / dplib time: above 1, dplib is faster):

* keys nobody listed, with their counts: :func:`dplib.select_partitions` with the discrete
  Laplace threshold rule and ``return_counts=True`` against OpenDP's
  ``make_count_by >> make_laplace_threshold`` at the same scale and threshold (one row per user);
* three quantiles: :func:`dplib.private_quantiles` (Kaplan, Schnapp & Stemmer 2022's recursion,
  epsilon in all) against three of OpenDP's ``make_private_quantile`` at epsilon / 3 each (it has
  no joint release); a note gives the mean rank error of both at that equal budget;
* a variance of values in [0, 100] with a public size: :func:`dplib.private_variance`
  (replace-one) against OpenDP's ``make_variance >> make_laplace``;
* how many queries of epsilon 0.01 a budget of (1, 1e-6) admits under full adaptivity:
  dplib's :class:`dplib.PrivacyFilter` (basic, Rogers et al. 2016, Whitehouse et al. 2023)
  against OpenDP's ``make_privacy_filter`` on its fully adaptive composition (pure DP, basic
  composition).

Without OpenDP (``make bench`` installs it in ``.venv-bench``) the rows say so and keep dplib's
side. ``python bench/bench_tables.py [--quick]`` prints the section alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Measurement, Row, Section, measure, measure_pair, time_row, versions  # noqa: E402

import dplib  # noqa: E402
from dplib.queries import partition_selection as ps  # noqa: E402

GROUP = "tables (issue 40)"
EPSILON = 1.0
DELTA = 1e-6


def _opendp():
    """OpenDP's prelude with contrib features, or the reason it is unavailable (a str)."""
    try:
        import opendp.prelude as dp
    except ImportError as error:
        return f"opendp not installed ({error})"
    dp.enable_features("contrib")
    return dp


def _timed(
    ours: Callable[[], object], theirs: Callable[[], object] | str, repeats: int
) -> tuple[Measurement, Measurement | None, str]:
    if isinstance(theirs, str):
        return measure(ours, repeats), None, theirs
    first, second = measure_pair(ours, theirs, repeats)
    return first, second, ""


# --------------------------------------------------------------------------- unknown keys


def _keys_data(rows: int, keys: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One row per user; key popularity Zipf-like, so some keys have a single user."""
    gen = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, keys + 1)
    key = gen.choice(keys, size=rows, p=weights / weights.sum())
    return np.arange(rows), np.array([f"k{k}" for k in key])


def partition_rows(rows: int, repeats: int) -> tuple[list[Row], list[str]]:
    users, keys = _keys_data(rows, 1000)
    threshold = dplib.partition_threshold(EPSILON, DELTA)

    def ours():
        return dplib.select_partitions(
            users, keys, EPSILON, DELTA, rule="laplace", return_counts=True
        )

    dp = _opendp()
    notes = []
    theirs: Callable[[], object] | str
    if isinstance(dp, str):
        theirs = dp
    else:
        space = dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance()
        meas = (
            space
            >> dp.t.then_count_by()
            >> dp.m.then_laplace_threshold(scale=1.0 / EPSILON, threshold=threshold)
        )
        their_eps, their_delta = meas.map(1)
        data = keys.tolist()
        theirs = lambda: meas(data)  # noqa: E731
        ours_delta = dplib.partition_selection_delta(threshold, EPSILON)
        # a lone user's key at threshold 2: how often each library keeps it, against its delta
        lone = space >> dp.t.then_count_by() >> dp.m.then_laplace_threshold(scale=1.0, threshold=2)
        trials = 4000
        kept_theirs = sum("x" in lone(["x"]) for _ in range(trials)) / trials
        # dplib's rule at (1, 0.3) has threshold 2 (partition_threshold), the same mechanism
        kept_ours = (
            sum(
                dplib.select_partitions([0], ["x"], 1.0, 0.3, rule="laplace").size
                for _ in range(trials)
            )
            / trials
        )
        notes.append(
            f"unknown keys: the same mechanism on both sides (integer counts + discrete Laplace "
            f"of scale 1/eps, keep when >= {threshold}); dplib's exact delta is {ours_delta:.3g}, "
            f"OpenDP's map reports ({their_eps:g}, {their_delta:.3g}), leaving out the mass at "
            "the threshold (opendp/opendp#2922, open). Measured at threshold 2, scale 1, a lone "
            f"user's key is kept {kept_theirs:.3f} of {trials} times by OpenDP (its reported "
            f"delta {lone.map(1)[1]:.4f}) and {kept_ours:.3f} by dplib (its delta "
            f"{dplib.partition_selection_delta(2, 1.0):.4f})"
        )
    laplace16 = dplib.partition_threshold(EPSILON, DELTA, max_partitions=16)
    sigma16, gauss16 = ps._gaussian_plan(EPSILON, DELTA, 16)
    notes.append(
        f"users in 16 keys each: the Laplace rule's threshold is {laplace16} (scale 16/eps), the "
        f"Gaussian rule's {gauss16} (sigma {sigma16:.1f}, growing like sqrt(16)), at the same "
        f"({EPSILON:g}, {DELTA:g})"
    )
    first, second, note = _timed(ours, theirs, repeats)
    row = time_row(
        GROUP,
        f"keys + user counts, unknown keys ({rows:g} rows, 1000 keys)",
        "OpenDP",
        "ms/call",
        first.scaled(1e3),
        None if second is None else second.scaled(1e3),
        note=note,
    )
    return [row], notes


# --------------------------------------------------------------------------- quantiles


def _rank_error(values: np.ndarray, estimates: np.ndarray, levels: list[float]) -> float:
    ranks = np.searchsorted(np.sort(values), estimates) / values.size
    return float(np.mean(np.abs(ranks - np.array(levels))))


def quantile_rows(size: int, repeats: int, runs: int) -> tuple[list[Row], list[str]]:
    gen = np.random.default_rng(1)
    x = np.clip(gen.normal(50, 15, size=size), 0, 100)
    levels = [0.25, 0.5, 0.75]
    candidates = np.linspace(0, 100, 1001)

    def ours():
        return dplib.private_quantiles(x, levels, 0.0, 100.0, EPSILON, grid=candidates)

    dp = _opendp()
    theirs: Callable[[], object] | str
    notes = []
    if isinstance(dp, str):
        theirs = dp
    else:
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()

        # epsilon is proportional to 1 / scale; OpenDP's sensitivity depends on alpha, so each
        # call's scale is set from its map at scale 1 to spend exactly epsilon / 3
        def quantile(alpha: float, scale: float):
            return space >> dp.m.then_private_quantile(
                dp.max_divergence(), candidates=candidates.tolist(), alpha=alpha, scale=scale
            )

        measurements = [quantile(a, quantile(a, 1.0).map(1) * 3 / EPSILON) for a in levels]
        spent = sum(m.map(1) for m in measurements)
        data = x.tolist()
        theirs = lambda: [m(data) for m in measurements]  # noqa: E731
        # accuracy where the budget, not the grid, limits it: 1000 values
        small = x[:1000]
        ours_err = np.mean(
            [
                _rank_error(small, dplib.private_quantiles(small, levels, 0, 100, EPSILON), levels)
                for _ in range(runs)
            ]
        )
        small_list = small.tolist()
        their_err = np.mean(
            [
                _rank_error(small, np.array([m(small_list) for m in measurements]), levels)
                for _ in range(runs)
            ]
        )
        notes.append(
            f"3 quantiles at total epsilon {EPSILON:g} (1000 values, 1001 candidates): mean "
            f"|rank error| over {runs} runs: dplib (recursive, KSS22: 2 levels at eps/2) "
            f"{ours_err:.2e}, OpenDP (3 separate exponential mechanisms, epsilon {spent:g} in "
            f"all) {their_err:.2e}"
        )
    first, second, note = _timed(ours, theirs, repeats)
    row = time_row(
        GROUP,
        f"3 quantiles ({size:g} values, 1001 candidates)",
        "OpenDP",
        "ms/call",
        first.scaled(1e3),
        None if second is None else second.scaled(1e3),
        note=note,
    )
    return [row], notes


# --------------------------------------------------------------------------- variance


def variance_rows(size: int, repeats: int) -> tuple[list[Row], list[str]]:
    x = np.random.default_rng(2).uniform(0, 100, size=size)

    def ours():
        return dplib.private_variance(x, 0.0, 100.0, EPSILON, neighbouring="replace")

    dp = _opendp()
    theirs: Callable[[], object] | str
    notes = []
    if isinstance(dp, str):
        theirs = dp
    else:
        domain = dp.vector_domain(dp.atom_domain(bounds=(0.0, 100.0)), size=size)
        variance = (domain, dp.symmetric_distance()) >> dp.t.then_variance()
        sensitivity = variance.map(2)  # replace-one = symmetric distance 2
        meas = variance >> dp.m.then_laplace(scale=sensitivity / EPSILON)
        data = x.tolist()
        theirs = lambda: meas(data)  # noqa: E731
        notes.append(
            f"variance of {size:g} values in [0, 100], n public: true {x.var():.2f}; dplib "
            f"{ours():.2f} (sum and sum of squares at eps/2 each), OpenDP {theirs():.2f} (variance "
            f"+ Laplace, its sensitivity {sensitivity:.4g}, epsilon {meas.map(2):g})"
        )
    first, second, note = _timed(ours, theirs, repeats)
    row = time_row(
        GROUP,
        f"variance ({size:g} values, n public)",
        "OpenDP",
        "ms/call",
        first.scaled(1e3),
        None if second is None else second.scaled(1e3),
        note=note,
    )
    return [row], notes


# --------------------------------------------------------------------------- filters


def _dplib_admitted(rule: str, step: float) -> int:
    budget = dplib.PrivacyFilter(EPSILON, DELTA, rule=rule)
    count = 0
    while budget.can_spend(step):
        budget.spend(step)
        count += 1
    return count


def _opendp_admitted(step: float) -> int | str:
    dp = _opendp()
    if isinstance(dp, str):
        return dp
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    odometer = dp.c.make_fully_adaptive_composition(*space, dp.max_divergence())
    queryable = dp.c.make_privacy_filter(odometer, d_in=1, d_out=EPSILON)([0.5] * 10)
    query = space >> dp.t.then_count() >> dp.m.then_laplace(scale=1.0 / step)
    count = 0
    while count < 10**5:
        try:
            queryable(query)
        except Exception:  # noqa: BLE001 - OpenDP refuses with its own error type
            break
        count += 1
    return count


def filter_rows(step: float = 0.01) -> tuple[list[Row], list[str]]:
    theirs = _opendp_admitted(step)
    rows = []
    for rule in ("basic", "rogers2016", "whitehouse2023"):
        ours = _dplib_admitted(rule, step)
        have = not isinstance(theirs, str)
        rows.append(
            Row(
                group=GROUP,
                task=f"queries of eps {step:g} admitted by ({EPSILON:g}, {DELTA:g}): dplib {rule}",
                peer="OpenDP (pure-DP filter)",
                unit="queries",
                ours=float(ours),
                theirs=float(theirs) if have else None,
                ratio=ours / theirs if have and theirs else None,
                ratio_kind="dplib queries / peer queries",
                note="" if have else str(theirs),
            )
        )
    notes = [
        "filters: OpenDP's filter over max-divergence is basic composition (it stops at 99, "
        "float rounding taking 100 x 0.01 just past 1); dplib's basic filter compares exact "
        "sums with a 1e-12 relative slack (100). Rogers et al. 2016 (Theorem 5.1) and Whitehouse "
        "et al. 2023 (advanced composition's constants, delta split in halves) admit more of "
        "many small queries, at delta 1e-6."
    ]
    return rows, notes


def run(quick: bool = False) -> Section:
    """Every row of the section; ``quick`` uses sizes ten times smaller and fewer repeats."""
    repeats = 2 if quick else 5
    rows_n = 10_000 if quick else 100_000
    runs = 10 if quick else 50
    section = Section(
        "tables",
        notes=[
            f"epsilon {EPSILON:g}, delta {DELTA:g}; times taken back to back with OpenDP's (ratio "
            "= OpenDP time / dplib time), on whatever load the machine has.",
            f"versions: {versions('opendp', 'numpy')}",
        ],
    )
    for rows, notes in (
        partition_rows(rows_n, repeats),
        quantile_rows(rows_n, repeats, runs),
        variance_rows(rows_n, repeats),
        filter_rows(),
    ):
        section.rows.extend(rows)
        section.notes.extend(notes)
    return section


def main(argv: list[str] | None = None) -> None:
    """Run this section alone and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    args = parser.parse_args(argv)
    from report import format_table

    section = run(quick=args.quick)
    print(format_table([section]))
    for note in section.notes:
        print("-", note)


if __name__ == "__main__":
    main()
