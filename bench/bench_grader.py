"""The grader: raw ``nbgrader autograde`` against ``make grade`` on a generated class.

A class of N students (default 20) is generated from the real notebooks by cycling
``examples/make_class.py``'s three kinds under different names (``s00_full``, ``s01_partial``,
``s02_blank``, ``s03_full``, ...: every answer right, the first half answered, the untouched
release). It is graded, in a temporary directory (removed afterwards; nothing is written into
``build/``, ``notebooks/`` or the course's gradebook), four ways:

- raw nbgrader: ``nbgrader generate_assignment`` (untimed setup), then ``nbgrader autograde``
  per assignment on an nbgrader course directory (``source/``, ``release/``, ``submitted/``),
  serial, as nbgrader runs it: student cells *and hidden tests* in the student's own kernel, no
  sandbox; cell timeout 120 s as below; empty IPython and Jupyter configuration. The hidden
  tests batch their calls with ``coursetools.authoring.hidden_tests.repeat``/``map_calls``, which loop in a plain
  kernel, so raw nbgrader grades the course as it is (issue 29);
- ``python -m coursetools grade --workers 1`` (what ``make grade`` runs, ``--no-gradebook``):
  sandboxed kernels, hidden tests in a trusted process;
- the same with ``--workers 2`` (one per core here);
- the same with ``--scheduler`` on a Dask ``LocalCluster`` of 2 single-thread worker processes
  (started before the clock, as a cluster would be).

Each is timed end to end (process start to exit) ``repeats`` times: notebooks per minute, median
and spread. The grades (autograded points per submission, and per test cell) of every
configuration are compared with ``--workers 1``'s, and raw nbgrader's too: where raw nbgrader
disagrees, the differing test cells are listed (raw nbgrader runs the hidden tests where the
student's code could interfere, but these students are honest: a difference is a finding about
raw nbgrader, not an attack). Goal: ``make grade`` on 2 cores >= 1.8x raw nbgrader's
throughput.

Every notebook: a second class of ``--survey-students`` students (default 20, kinds cycled
full/partial/blank; 1 with ``--quick``) hands in all nine notebooks, graded once by raw
nbgrader and by ``make grade --workers 2``: the same throughput ratio and grade
comparison over the whole course, whose notebooks cost 3 to 40 s each to grade (about 40
minutes on two cores for 20 students, most of it raw nbgrader's).

Scaling: ``make grade --workers 2`` on classes of 5 to 40 students over one notebook (one run
per size), for the log-log plot, with the fitted exponent.

A notebook takes 3-40 s to grade, so the class timed in every configuration, repeatedly, is
the cheapest notebook (01_randomized_response, about 5 s) for 20 students, and every notebook
is covered by the single-run class above; ``--notebooks all --students 20`` times every
configuration on the whole course (180 submissions per configuration: hours on two cores). Needs the course and grading extras
(``pip install -e '.[course,grading]'``).

Run: ``python bench/bench_grader.py [--quick] [--students N] [--notebooks 01,03|all]
[--repeats N] [--sizes 5,10,20,40] [--survey-students N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Measurement, Row, Section, Series, machine, versions  # noqa: E402
from bench_course import make_class_module, select_notebooks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "solutions"
KINDS = (("full", "ada_full"), ("partial", "bob_partial"), ("blank", "cy_blank"))
DEFAULT_NOTEBOOKS = "01"  # 01_randomized_response: the cheapest to grade (about 8 s)
THROUGHPUT_GOAL = 1.8
RAW = "raw nbgrader autograde (serial)"
CELL_TIMEOUT = 120  # coursetools' default --cell-timeout; raw nbgrader gets the same

__all__ = [
    "GradeComparison",
    "compare_grades",
    "main",
    "notebooks_per_minute",
    "parse_sizes",
    "run",
    "student_names",
]

Grades = Mapping[tuple[str, str], Mapping[str, float]]  # (student, assignment) -> {cell: points}


# ------------------------------------------------------------------------ pure logic (tested)


def student_names(count: int) -> list[tuple[str, str]]:
    """``count`` (student name, example kind) pairs, cycling full, partial, blank.

    >>> student_names(4)
    [('s00_full', 'ada_full'), ('s01_partial', 'bob_partial'), ('s02_blank', 'cy_blank'), ('s03_full', 'ada_full')]
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"the class needs an integer number of students >= 1, got {count!r}")
    width = max(2, len(str(count - 1)))
    return [
        (f"s{i:0{width}d}_{KINDS[i % 3][0]}", KINDS[i % 3][1]) for i in range(count)
    ]


def notebooks_per_minute(notebooks: int, seconds: float) -> float:
    """Throughput of a grading run: ``60 * notebooks / seconds``.

    >>> notebooks_per_minute(20, 120.0)
    10.0
    """
    if notebooks < 1:
        raise ValueError(f"notebooks must be >= 1, got {notebooks}")
    if not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds}")
    return 60.0 * notebooks / seconds


def parse_sizes(text: str) -> list[int]:
    """Class sizes for the scaling series from "5,10,20,40": distinct, sorted, each >= 1.

    >>> parse_sizes("20, 5,10")
    [5, 10, 20]
    """
    try:
        sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        sizes = []
    if len(sizes) < 2 or sizes[0] < 1:
        raise ValueError(f"--sizes takes at least two class sizes >= 1 such as 5,10,20,40, got {text!r}")
    return sizes


@dataclass
class GradeComparison:
    """How one configuration's grades compare with the reference's."""

    submissions: int
    identical: int
    #: (student, assignment, cell, points here, points in the reference) for every differing
    #: test cell; a cell missing on one side shows None there.
    differences: list[tuple[str, str, str, float | None, float | None]] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)

    @property
    def all_identical(self) -> bool:
        return self.identical == self.submissions and not self.missing

    def summary(self, limit: int = 3) -> str:
        """One line: how many submissions agree, and the first few differing cells."""
        text = f"{self.identical}/{self.submissions} submissions identical"
        if self.missing:
            text += f", {len(self.missing)} missing"
        if self.differences:
            cells = sorted({(a, c, here, ref) for _, a, c, here, ref in self.differences}, key=repr)
            shown = "; ".join(f"{a}:{c} {here} vs {ref}" for a, c, here, ref in cells[:limit])
            text += f"; differing cells ({len(cells)} kinds): {shown}"
        return text


def compare_grades(ours: Grades, reference: Grades, *, tolerance: float = 1e-9) -> GradeComparison:
    """Compare per-cell points of every submission in ``reference`` with ``ours``.

    A submission is identical when it exists on both sides with the same test cells and the
    same points in each (within ``tolerance``).
    """
    result = GradeComparison(submissions=len(reference), identical=0)
    for key in sorted(reference):
        if key not in ours:
            result.missing.append(key)
            continue
        ref_cells, our_cells = reference[key], ours[key]
        same = True
        for cell in sorted(set(ref_cells) | set(our_cells)):
            here, there = our_cells.get(cell), ref_cells.get(cell)
            if here is None or there is None or abs(here - there) > tolerance:
                same = False
                result.differences.append((key[0], key[1], cell, here, there))
        result.identical += same
    return result


def _measurement(seconds: Sequence[float]) -> Measurement:
    return Measurement(statistics.median(seconds), min(seconds), max(seconds), len(seconds))


# ----------------------------------------------------------------------------- the class


def write_class(out: Path, assignments: Sequence[str], students: int, make_class) -> int:
    """``out/<student>/<assignment>/<assignment>.ipynb`` for every student; the count written."""
    books = {
        a: make_class.student_notebooks(SOURCE / a / f"{a}.ipynb") for a in assignments
    }
    written = 0
    for student, kind in student_names(students):
        for a in assignments:
            path = out / student / a / f"{a}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(books[a][kind])
            written += 1
    return written


# ------------------------------------------------------------------------------ the graders


def _env(ipython_dir: Path | None = None) -> dict[str, str]:
    """This environment with its bin/ first on PATH (nbgrader runs ``alembic`` by name)."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    if ipython_dir is not None:
        env["IPYTHONDIR"] = str(ipython_dir)
    return env


def _timed(cmd: list[str], cwd: Path, log: Path, ipython_dir: Path | None = None) -> float:
    """Run ``cmd``; its seconds. Output goes to ``log``; a failure raises with the log's tail."""
    start = time.perf_counter()
    with open(log, "ab") as out:
        done = subprocess.run(
            cmd, cwd=cwd, env=_env(ipython_dir), stdout=out, stderr=subprocess.STDOUT
        )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-1500:]
        raise RuntimeError(f"{' '.join(cmd[:5])} ... exited with {done.returncode}:\n{tail}")
    return seconds


def coursetools_grade(klass: Path, out: Path, *, workers: int = 1, scheduler: str | None = None) -> tuple[float, dict]:
    """``python -m coursetools grade`` on ``klass``: (seconds, per-cell grades)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    grades = out / "grades.csv"
    cmd = [sys.executable, "-m", "coursetools", "grade", str(klass), "--grades", str(grades),
           "--no-gradebook", "--cell-timeout", str(CELL_TIMEOUT)]
    cmd += ["--scheduler", scheduler] if scheduler else ["--workers", str(workers)]
    seconds = _timed(cmd, ROOT, out.parent / f"{out.name}.log")
    details = json.loads(grades.with_suffix(".json").read_text(encoding="utf-8"))
    result = {
        (r["student"], r["assignment"]): {
            c["grade_id"]: float(c["points"] or 0.0) for c in r["cells"] if c["kind"] == "auto"
        }
        for r in details
    }
    with open(grades, newline="", encoding="utf-8") as f:  # the CSV agrees with the details
        for row in csv.DictReader(f):
            cells = result[(row["student"], row["assignment"])]
            if abs(sum(cells.values()) - float(row["score"])) > 1e-9:
                raise RuntimeError(f"grades.csv and grades.json disagree on {row}")
    return seconds, result


NBGRADER_CONFIG = """c = get_config()  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.course_id = "bench"
c.CourseDirectory.db_url = "sqlite:///" + {db!r}
c.Execute.timeout = {timeout}
"""


def raw_nbgrader_setup(course: Path, assignments: Sequence[str]) -> None:
    """An nbgrader course directory with ``source/`` and the released assignments (untimed)."""
    course.mkdir(parents=True, exist_ok=True)
    db = course / "gradebook.db"
    (course / "nbgrader_config.py").write_text(
        NBGRADER_CONFIG.format(root=str(course), db=str(db), timeout=CELL_TIMEOUT), encoding="utf-8"
    )
    for a in assignments:
        shutil.copytree(SOURCE / a, course / "source" / a,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        _timed([sys.executable, "-m", "nbgrader", "generate_assignment", a, "--force"],
               course, course / "setup.log")


def raw_nbgrader_autograde(course: Path, klass: Path, assignments: Sequence[str]) -> tuple[float, dict]:
    """``nbgrader autograde`` of every assignment (serial): (seconds, per-cell grades).

    The kernels start with an empty private IPYTHONDIR (no startup files of this machine's).
    """
    from nbgrader.api import Gradebook

    ipython_dir = course / "ipython-plain"
    (ipython_dir / "profile_default" / "startup").mkdir(parents=True, exist_ok=True)

    for name in ("submitted", "autograded", "gradebook.db"):
        path = course / name
        if path.is_dir():
            shutil.rmtree(path)
    # A fresh gradebook with the assignments, as generate_assignment left it.
    shutil.copy2(course / "gradebook.db.setup", course / "gradebook.db")
    shutil.copytree(klass, course / "submitted")
    seconds = 0.0
    for a in assignments:
        seconds += _timed([sys.executable, "-m", "nbgrader", "autograde", a, "--force"],
                          course, course / "autograde.log", ipython_dir=ipython_dir)
    result: dict = {}
    with Gradebook("sqlite:///" + str(course / "gradebook.db")) as gb:
        for a in assignments:
            tests = _test_cells(SOURCE / a / f"{a}.ipynb")
            for submission in gb.assignment_submissions(a):
                cells = {}
                for nb in submission.notebooks:
                    for grade in nb.grades:
                        # autograded test cells only (nbgrader scores an untouched written
                        # answer 0 by itself; make grade leaves written answers to a person)
                        if grade.name in tests and grade.auto_score is not None:
                            cells[grade.name] = float(grade.auto_score)
                result[(submission.student.id, a)] = cells
    return seconds, result


def _test_cells(source: Path) -> set[str]:
    """The grade ids of the autograded test cells (graded, not an answer) of a source notebook."""
    import nbformat

    nb = nbformat.read(source, as_version=4)
    return {
        meta["grade_id"]
        for cell in nb.cells
        if (meta := cell.metadata.get("nbgrader", {})).get("grade") and not meta.get("solution")
    }


@contextlib.contextmanager
def dask_cluster(workers: int = 2) -> Iterator[str | None]:
    """A Dask LocalCluster of ``workers`` single-thread processes: its address (None without dask)."""
    try:
        from distributed import LocalCluster
    except ImportError:
        yield None
        return
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        yield cluster.scheduler_address


# ------------------------------------------------------------------------------------ run


def run(
    quick: bool = False,
    *,
    students: int | None = None,
    notebooks: str = DEFAULT_NOTEBOOKS,
    repeats: int | None = None,
    sizes: Sequence[int] | None = None,
    survey_students: int | None = None,
) -> Section:
    """The four graders on one class, every notebook, then the scaling series (module docstring)."""
    section = Section("grader: raw nbgrader against make grade")
    try:
        import nbgrader  # noqa: F401
    except ImportError as exc:
        section.notes.append(f"skipped: needs the course extra (pip install -e '.[course]'): {exc}")
        return section
    students = students or (6 if quick else 20)
    repeats = repeats or (1 if quick else 3)
    sizes = list(sizes or ((3, 6) if quick else (5, 10, 20, 40)))
    make_class = make_class_module()
    assignments = select_notebooks(make_class.find_assignments(SOURCE), notebooks)
    what = f"{students} students x {len(assignments)} notebook(s) ({', '.join(assignments)})"
    with tempfile.TemporaryDirectory(prefix="bench-grader-") as tmp:
        tmp = Path(tmp)
        klass = tmp / "class"
        count = write_class(klass, assignments, students, make_class)
        course = tmp / "nbgrader-course"
        raw_nbgrader_setup(course, assignments)
        shutil.copy2(course / "gradebook.db", course / "gradebook.db.setup")

        times: dict[str, list[float]] = {}
        grades: dict[str, dict] = {}

        def record(label: str, outcome: tuple[float, dict]) -> None:
            times.setdefault(label, []).append(outcome[0])
            grades[label] = outcome[1]
            print(f"  {label}: {outcome[0]:.1f} s", file=sys.stderr, flush=True)

        with dask_cluster(2) as address:
            for _ in range(repeats):
                record(RAW, raw_nbgrader_autograde(course, klass, assignments))
                record("make grade --workers 1", coursetools_grade(klass, tmp / "w1", workers=1))
                record("make grade --workers 2", coursetools_grade(klass, tmp / "w2", workers=2))
                if address:
                    record("make grade --scheduler (Dask LocalCluster, 2 workers)",
                           coursetools_grade(klass, tmp / "dask", scheduler=address))
        if not address:
            section.notes.append("Dask row skipped: dask/distributed not installed ('.[grading]')")
        _grader_rows(section, times, grades, count, what)

        survey_students = 1 if quick and survey_students is None else survey_students
        survey_students = 20 if survey_students is None else survey_students
        if survey_students > 0 and len(assignments) < len(make_class.find_assignments(SOURCE)):
            _every_notebook(section, tmp, make_class, survey_students)

        series_seconds = []
        for size in sizes:
            if size == students and "make grade --workers 2" in times:
                series_seconds.append(statistics.median(times["make grade --workers 2"]))
                continue
            small = tmp / f"class-{size}"
            write_class(small, assignments[:1], size, make_class)
            series_seconds.append(coursetools_grade(small, tmp / f"s{size}", workers=2)[0])
            print(f"  scaling: {size} students: {series_seconds[-1]:.1f} s", file=sys.stderr, flush=True)
        section.series.append(Series(f"make grade --workers 2, {assignments[0]}", "students",
                                     [float(s) for s in sizes], series_seconds))
        section.notes.append(scaling_note(sizes, series_seconds, students))
    section.notes.append(
        f"class: {what} = {count} submissions, kinds cycled full/partial/blank; {repeats} "
        f"run(s) per configuration; scaling: one run per class size {sizes}"
    )
    section.notes.append(
        f"machine: {machine()}; versions: {versions('nbgrader', 'nbclient', 'dask', 'distributed')}"
    )
    return section


def scaling_note(sizes: Sequence[int], seconds: Sequence[float], timed_size: int) -> str:
    """What the grader's scaling series shows: a fixed cost plus a cost per submission.

    >>> "2.0 s + 2.00 s a submission (least squares over 5..20 students)" in scaling_note(
    ...     [5, 10, 20], [12.0, 22.0, 42.0], 20)
    True
    """
    per_submission, fixed = np.polyfit(np.asarray(sizes, float), np.asarray(seconds, float), 1)
    return (
        "Scaling (make grade --workers 2): a straight line fits it as "
        f"{fixed:.1f} s + {per_submission:.2f} s a submission (least squares over "
        f"{min(sizes)}..{max(sizes)} students). Each submission is graded on its own (its own "
        "kernel, sandbox and trusted runner), so the cost is linear by design; the fixed part "
        "(nbgrader's import, the fork server, scanning the class, the feedback index) flattens "
        "small classes, hence a fitted exponent below 1. Each size is one run (the "
        f"{timed_size}-student point is the median of the timed runs above), and a run varies by "
        "10-15% (the spreads above): a segment slope above 1 between two single runs is that "
        "noise, not a cost that grows with the class."
    )


def _every_notebook(section: Section, tmp: Path, make_class, students: int) -> None:
    """Raw nbgrader against ``make grade --workers 2`` on every notebook, once each."""
    assignments = make_class.find_assignments(SOURCE)
    klass = tmp / "survey-class"
    count = write_class(klass, assignments, students, make_class)
    course = tmp / "survey-nbgrader-course"
    raw_nbgrader_setup(course, assignments)
    shutil.copy2(course / "gradebook.db", course / "gradebook.db.setup")
    raw_seconds, raw_grades = raw_nbgrader_autograde(course, klass, assignments)
    print(f"  every notebook, {RAW}: {raw_seconds:.1f} s", file=sys.stderr, flush=True)
    ours_seconds, ours_grades = coursetools_grade(klass, tmp / "survey-w2", workers=2)
    print(f"  every notebook, make grade --workers 2: {ours_seconds:.1f} s", file=sys.stderr, flush=True)
    raw_tp = notebooks_per_minute(count, raw_seconds)
    tp = notebooks_per_minute(count, ours_seconds)
    cmp = compare_grades(raw_grades, ours_grades)
    section.rows.append(_throughput_row(
        f"make grade --workers 2: {students} students x {len(assignments)} notebooks "
        "(every notebook, one run)",
        tp, raw_tp, judged=True,
        note=f"{raw_seconds:.0f} s against {ours_seconds:.0f} s; raw nbgrader's grades against "
        f"make grade's: {cmp.summary(limit=10)}",
    ))


def _throughput_row(task: str, ours: float, raw: float, *, judged: bool, note: str,
                    spread_ours: float | None = None, spread_raw: float | None = None) -> Row:
    """make grade's throughput against raw nbgrader, judged on the 1.8x goal if asked."""
    return Row(
        group="grader",
        task=task,
        peer="raw nbgrader autograde (serial)",
        unit="notebooks/min",
        ours=ours,
        theirs=raw,
        ratio=ours / raw,
        ratio_kind="make grade / raw nbgrader throughput",
        goal=f">= {THROUGHPUT_GOAL:g}x raw nbgrader on 2 cores" if judged else "",
        goal_met=(ours / raw >= THROUGHPUT_GOAL) if judged else None,
        spread_ours=spread_ours,
        spread_theirs=spread_raw,
        note=note,
    )


def _grader_rows(section: Section, times: dict, grades: dict, count: int, what: str) -> None:
    """One row per make grade configuration against raw nbgrader."""
    reference = grades["make grade --workers 1"]
    m_raw = _measurement(times[RAW])
    raw_tp = notebooks_per_minute(count, m_raw.median)
    raw_cmp = compare_grades(grades[RAW], reference)
    section.notes.append(f"{RAW} against make grade: {raw_cmp.summary(limit=10)}")
    for label, secs in times.items():
        if label == RAW:
            continue
        m = _measurement(secs)
        tp = notebooks_per_minute(count, m.median)
        cmp = compare_grades(grades[label], reference)
        two_cores = label != "make grade --workers 1"
        section.rows.append(_throughput_row(
            f"{label}: {what}", tp, raw_tp, judged=two_cores,
            spread_ours=m.spread, spread_raw=m_raw.spread,
            note=f"grades vs --workers 1: {cmp.summary()}; vs raw nbgrader: "
            f"{raw_cmp.identical}/{raw_cmp.submissions} identical",
        ))


def _print(section: Section) -> None:
    print(f"== {section.name}")
    for r in section.rows:
        verdict = {True: "met", False: "NOT met", None: "n/a"}[r.goal_met]
        ours, theirs = (f"±{s:.0%}" if s is not None else "(one run)"
                        for s in (r.spread_ours, r.spread_theirs))
        print(f"  {r.task}\n      {r.ours:.2f} {ours} vs {r.theirs:.2f} "
              f"{theirs} {r.unit} (x{r.ratio:.2f}); "
              f"goal {r.goal or '-'}: {verdict}\n      {r.note}")
    for s in section.series:
        points = ", ".join(f"{x:g}: {y:.1f} s" for x, y in zip(s.sizes, s.seconds, strict=True))
        print(f"  scaling {s.name}: {points}; exponent {s.exponent:.2f}")
    for note in section.notes:
        print(f"  note: {note}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="6 students, 1 run, sizes 3,6")
    parser.add_argument("--students", type=int, default=None, help="class size (default 20)")
    parser.add_argument("--notebooks", default=DEFAULT_NOTEBOOKS, help="'all' or prefixes: 01,03")
    parser.add_argument("--repeats", type=int, default=None, help="runs per grader (default 3)")
    parser.add_argument("--sizes", type=parse_sizes, default=None, help="scaling: 5,10,20,40")
    parser.add_argument("--survey-students", type=int, default=None,
                        help="students handing in every notebook (default 20; 0: skip)")
    args = parser.parse_args(argv)
    _print(run(args.quick, students=args.students, notebooks=args.notebooks,
               repeats=args.repeats, sizes=args.sizes, survey_students=args.survey_students))


if __name__ == "__main__":
    main()
