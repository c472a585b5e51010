"""What each test cell costs: the grader's CPU seconds per test, the solution of every notebook.

Every solution notebook is graded as a submission (the trusted grader, in the sandbox); each test
cell's cost is what the grader counted against its limit (the kernel's control group plus the
trusted runner, ``coursetools/grading/sandboxed/budget.py``): CPU seconds, so the figures do not
depend on how busy the machine is. The slowest tests are printed first, beside the cell limit,
so an author sees which hidden test to make leaner before a busy grading day.

Not one of run_all.py's sections (no peer grades these notebooks).
Run: ``.venv/bin/python bench/test_cost.py [--top 15] [--workers 2] [--only 08_dp_in_practice]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from coursetools.authoring.release import find_assignments
    from coursetools.grading.classroom.collect import source_texts
    from coursetools.grading.classroom.pipeline import grade as grade_class
    from coursetools.grading.classroom.pipeline import hide_list
    from coursetools.grading.job import Job, Options

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--only", default="", help="comma-separated notebooks (default: all)")
    p.add_argument("--cell-timeout", type=float, default=120.0)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    names = [n for n in find_assignments(ROOT / "solutions") if not args.only or n in args.only.split(",")]
    options = Options(cell_timeout=args.cell_timeout, notebook_timeout=900.0, hide=hide_list())
    jobs = []
    for name in names:
        source, release, files = source_texts(ROOT / "solutions", name)
        jobs.append(Job("solution", name, source, release, source.encode(), f"{name}.ipynb", files, options=options))
    results = grade_class(jobs, workers=args.workers)
    rows = []
    for result in results:
        if result["score"] != result["max_score"]:
            print(f"! {result['assignment']}: {result['score']:g}/{result['max_score']:g} {result['problems'][:2]}")
        for cell in result["cells"]:
            if "cpu_seconds" in cell:
                rows.append((cell["cpu_seconds"], result["assignment"], cell["grade_id"]))
    rows.sort(reverse=True)
    total = {name: sum(c for c, n, _ in rows if n == name) for name in names}
    print(f"slowest test cells (CPU seconds counted by the grader; cell limit {args.cell_timeout:g} s):")
    for cpu, name, gid in rows[: args.top]:
        print(f"  {cpu:7.1f}  {cpu / args.cell_timeout:5.0%}  {name} / {gid}")
    print("per notebook, all tests: " + ", ".join(f"{n} {t:.0f} s" for n, t in total.items()))
    if args.json:
        args.json.write_text(json.dumps([{"cpu_seconds": c, "notebook": n, "test": g} for c, n, g in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
