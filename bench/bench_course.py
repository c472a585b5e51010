"""The course: seconds to execute each solution notebook, against the goal of nine in 3 minutes.

Each notebook is run as a student would hand it in with every answer right: the release with the
answers filled in and no hidden test (``examples/make_class.py``'s ``ada_full``), executed top to
bottom by nbclient in a fresh ``python3`` kernel, with a copy of the notebook's own folder as the
working directory (a temporary directory, removed afterwards: nothing is written into
``solutions/`` or ``notebooks/``). The time includes starting the kernel. The notebooks run one
after another; the total is the sum of the per-notebook medians.

Needs the course extra (nbclient, ipykernel, nbgrader): ``pip install -e '.[course]'``.
Run: ``python bench/bench_course.py [--quick] [--repeats N] [--notebooks 00,02]``.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Measurement, Row, Section, machine, measure, versions  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "solutions"
#: The issue's goal: all nine solution notebooks execute in under 3 minutes.
GOAL_SECONDS = 180.0
GOAL_COUNT = 9
CELL_TIMEOUT = 600

__all__ = ["course_total", "main", "make_class_module", "run", "select_notebooks"]


def make_class_module():
    """The example class (:mod:`coursetools.authoring.example_class`), with ``find_assignments``."""
    import types

    from coursetools.authoring import example_class
    from coursetools.authoring.release import find_assignments

    return types.SimpleNamespace(**vars(example_class), find_assignments=find_assignments)


def select_notebooks(available: Sequence[str], wanted: str | None) -> list[str]:
    """The assignments to run: all of ``available``, or those whose name starts with a prefix
    in the comma-separated ``wanted`` ("00,06" or "all").

    >>> select_notebooks(["00_a", "01_b", "06_c"], "00,06")
    ['00_a', '06_c']
    """
    if wanted is None or wanted.strip().lower() == "all":
        return list(available)
    prefixes = [p.strip() for p in wanted.split(",") if p.strip()]
    chosen = [name for name in available if any(name.startswith(p) for p in prefixes)]
    unknown = [p for p in prefixes if not any(name.startswith(p) for name in available)]
    if unknown or not chosen:
        raise ValueError(
            f"--notebooks takes 'all' or comma-separated prefixes of {list(available)}, "
            f"got {wanted!r} (no notebook starts with {unknown or prefixes})"
        )
    return chosen


def course_total(
    medians: dict[str, float], goal_seconds: float = GOAL_SECONDS, goal_count: int = GOAL_COUNT
) -> tuple[float, bool | None]:
    """Total seconds (sum of the per-notebook medians) and whether the goal is met.

    The goal is about the whole course: it is judged (True or False) only when at least
    ``goal_count`` notebooks were run, and is None for a subset.

    >>> course_total({"a": 100.0, "b": 70.0}, 180.0, 2)
    (170.0, True)
    >>> course_total({"a": 100.0}, 180.0, 2)
    (100.0, None)
    """
    if any(s < 0 for s in medians.values()):
        raise ValueError("notebook times must be >= 0 seconds")
    total = float(sum(medians.values()))
    if len(medians) < goal_count:
        return total, None
    return total, total < goal_seconds


def _execute(notebook: bytes, folder: Path, name: str) -> None:
    """Run one notebook in a fresh kernel with a copy of ``folder`` as its working directory."""
    import nbformat
    from nbclient import NotebookClient
    from traitlets.config import Config

    with tempfile.TemporaryDirectory(prefix="bench-course-") as tmp:
        work = Path(tmp) / name
        shutil.copytree(folder, work, ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints"))
        nb = nbformat.reads(notebook.decode("utf-8"), as_version=4)
        # Unix sockets, not TCP on localhost (as coursetools does): no port, no warning.
        # The client owns (and shuts down) the kernel; its socket files go in the temporary folder.
        config = Config({"KernelManager": {"transport": "ipc", "ip": str(Path(tmp) / "kernel")}})
        client = NotebookClient(
            nb,
            timeout=CELL_TIMEOUT,
            kernel_name="python3",
            resources={"metadata": {"path": str(work)}},
            config=config,
        )
        client.execute()


def run(
    quick: bool = False, *, repeats: int | None = None, notebooks: str | None = None
) -> Section:
    """Execute every solution notebook (``ada_full``) ``repeats`` times: median and spread.

    ``quick`` runs each notebook once; the default is 3 times.
    """
    section = Section("course: executing the solution notebooks")
    try:
        import nbclient  # noqa: F401
        import nbformat  # noqa: F401
    except ImportError as exc:
        section.notes.append(f"skipped: needs the course extra (pip install -e '.[course]'): {exc}")
        return section
    repeats = repeats or (1 if quick else 3)
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    make_class = make_class_module()
    names = select_notebooks(make_class.find_assignments(SOURCE), notebooks)
    medians: dict[str, float] = {}
    for name in names:
        folder = SOURCE / name
        filled = make_class.student_notebooks(folder / f"{name}.ipynb")["ada_full"]
        # No warm-up run: each run starts its own kernel, so there is nothing to warm up but the
        # disk cache, and a notebook takes up to a minute.
        run_once = functools.partial(_execute, filled, folder, name)
        m: Measurement = measure(run_once, repeats, warmup=False)
        medians[name] = m.median
        section.rows.append(
            Row(
                group="course",
                task=f"execute {name}",
                peer="",
                unit="s",
                ours=m.median,
                theirs=None,
                spread_ours=m.spread,
                note=f"ada_full (answers filled, hidden tests removed), nbclient, {repeats} run(s)",
            )
        )
        print(f"  {name}: {m.median:.1f} s (±{100 * m.spread:.0f}%)", file=sys.stderr, flush=True)
    total, met = course_total(medians)
    section.rows.append(
        Row(
            group="course",
            task=f"execute all {len(names)} solution notebooks, one after another",
            peer="",
            unit="s",
            ours=total,
            theirs=None,
            goal=f"all {GOAL_COUNT} < {GOAL_SECONDS:g} s",
            goal_met=met,
            note="sum of the per-notebook medians"
            + ("" if met is not None else f" (a subset: the goal is about all {GOAL_COUNT})"),
        )
    )
    section.notes.append(f"machine: {machine()}; versions: {versions('nbclient', 'ipykernel')}")
    return section


def _print(section: Section) -> None:
    print(f"== {section.name}")
    for r in section.rows:
        spread = f" ±{100 * r.spread_ours:.0f}%" if r.spread_ours is not None else ""
        goal = f"  goal {r.goal}: {'met' if r.goal_met else 'NOT met' if r.goal_met is False else 'n/a'}" if r.goal else ""
        print(f"  {r.task:<58} {r.ours:8.1f} {r.unit}{spread}{goal}  ({r.note})")
    for note in section.notes:
        print(f"  note: {note}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one run per notebook")
    parser.add_argument("--repeats", type=int, default=None, help="runs per notebook (default 3)")
    parser.add_argument("--notebooks", default=None, help="'all' (default) or prefixes: 00,02")
    args = parser.parse_args(argv)
    _print(run(args.quick, repeats=args.repeats, notebooks=args.notebooks))


if __name__ == "__main__":
    main()
