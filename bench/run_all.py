"""Run every benchmark, print one table, write bench/results.json and draw bench/scaling.png.

``make bench`` runs this inside ``.venv-bench`` (the peers' environment). Each
``bench/bench_*.py`` module exposes ``run(quick: bool = False) -> Section``; they run in the
order of :data:`MODULES` (then any other ``bench_*.py``, by name). A module that fails to import
or to run becomes a failed section carrying its error: the others' results are still printed,
written and plotted, and the exit status is then 1. Goals not met are findings, not failures
(exit status 0).

Usage::

    python bench/run_all.py [--quick] [--only samplers,accountants] [--out bench/results.json]
                            [--plot bench/scaling.png]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _harness import Section  # noqa: E402
from report import (  # noqa: E402
    format_exponents,
    format_table,
    results_document,
    write_results,
)

#: (section name used by --only, module), in the order the table lists them.
MODULES: tuple[tuple[str, str], ...] = (
    ("samplers", "bench_mechanisms"),
    ("accountants", "bench_accounting"),
    ("dpsgd", "bench_dpsgd"),
    ("course", "bench_course"),
    ("grader", "bench_grader"),
)


def discover(directory: Path = HERE) -> list[tuple[str, str]]:
    """:data:`MODULES`, then every other ``bench_*.py`` of ``directory`` (named after its file)."""
    known = {module for _, module in MODULES}
    extra = sorted(p.stem for p in directory.glob("bench_*.py") if p.stem not in known)
    return list(MODULES) + [(stem.removeprefix("bench_"), stem) for stem in extra]


def select(available: Sequence[tuple[str, str]], only: str | None) -> list[tuple[str, str]]:
    """The benchmarks ``--only`` names (comma-separated), in table order; all when None.

    >>> select(MODULES, "accountants,samplers")
    [('samplers', 'bench_mechanisms'), ('accountants', 'bench_accounting')]
    """
    if only is None:
        return list(available)
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    names = [name for name, _ in available]
    unknown = [name for name in wanted if name not in names]
    if unknown or not wanted:
        raise ValueError(
            f"--only takes a comma-separated list of {', '.join(names)}; got {only!r}"
        )
    return [(name, module) for name, module in available if name in wanted]


def run_one(name: str, module_name: str, quick: bool,
            importer: Callable[[str], object] = importlib.import_module) -> Section:
    """Import ``module_name`` and return its ``run(quick=quick)``; any failure becomes a Section
    with ``error`` set (the traceback goes to stderr)."""
    start = time.perf_counter()
    try:
        module = importer(module_name)
        section = module.run(quick=quick)
        if not isinstance(section, Section):
            raise TypeError(f"{module_name}.run() returned {type(section).__name__}, not Section")
    except BaseException as error:  # noqa: BLE001 - one failure must not lose the other results
        if isinstance(error, KeyboardInterrupt):
            raise
        traceback.print_exc(file=sys.stderr)
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return Section(name, error=f"{module_name}: {type(error).__name__}: {message}".rstrip(": "),
                       notes=[f"failed after {time.perf_counter() - start:.0f} s"])
    section.notes.append(f"{module_name} took {time.perf_counter() - start:.0f} s")
    return section


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected benchmarks; returns the exit status (1 if a section failed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few repeats (smoke run)")
    parser.add_argument("--only", default=None,
                        help="comma-separated subset of: " + ", ".join(n for n, _ in discover()))
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    parser.add_argument("--plot", type=Path, default=HERE / "scaling.png")
    args = parser.parse_args(argv)
    try:
        chosen = select(discover(), args.only)
    except ValueError as error:
        parser.error(str(error))

    sections = []
    for name, module_name in chosen:
        print(f"== {name} ({module_name}{', quick' if args.quick else ''})", flush=True)
        sections.append(run_one(name, module_name, args.quick))

    print()
    print(format_table(sections))
    print("Ratio: for times, peer time / dplib time (above 1: dplib faster); for epsilon, "
          "(dplib - peer) / peer (below 0: dplib tighter). Spread: half the min-max range / "
          "median, dplib/peer.")
    print()
    print("Fitted exponents (time ~ size^b):")
    print(format_exponents(sections))
    for section in sections:
        for note in section.notes:
            print(f"[{section.name}] {note}")

    document = results_document(sections, args={"quick": args.quick, "only": args.only})
    write_results(document, args.out)
    print(f"\nwrote {args.out}")
    series = [item for section in sections for item in section.series]
    if series:
        try:
            from plot import draw_scaling

            draw_scaling(series, args.plot, title="dplib benchmarks: time against input size")
            print(f"drew {args.plot}")
        except ImportError as error:
            print(f"no plot: {error} (pip install matplotlib)")
    else:
        print("no scaling series: no plot drawn")
    return 1 if any(section.error for section in sections) else 0


if __name__ == "__main__":
    sys.exit(main())
