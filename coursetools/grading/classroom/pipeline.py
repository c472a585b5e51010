"""Grading a class: the one pipeline every front door calls.

One job: the steps that turn grading jobs into everything a class's grading leaves behind, in
one place, so that ``make grade``, ``make course``, the hand-in service and the formgrader's
*Autograde* button cannot drift apart:

1. **options** (:func:`add_grading_arguments`, :func:`options_from`): the grader's limits and the
   instructor folders hidden from the kernel (:func:`hide_list`);
2. **plan** (:func:`plan`): which jobs can keep last run's result
   (:mod:`~coursetools.grading.classroom.regrade`);
3. **grade** (:func:`grade`): through an executor (local processes or Dask); a result that
   :func:`grade_again` names (lost by the executor, or ``starved``: cut by the wall clock while it
   waited for a CPU) is graded once more, and that result counts;
4. **record** (:func:`record`): the feedback pages, the grades CSV and details merged with what is
   there (:func:`write_outputs`), nbgrader's gradebook, the class page
   (:func:`write_class_overview`).

Who calls what: :func:`run` is steps 2-4 for a collected class (``make grade``; ``make course``
with the plan off); the hand-in service (built by
:func:`coursetools.grading.handin.factory.open_service`) grades one submission at a time through
its own pool, asks :func:`grade_again` of each result, and records through :func:`recorder`; the
formgrader's *Autograde* calls :func:`grade` and nbgrader records. The command line only parses,
calls these and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from coursetools import paths, rendering
from coursetools.grading.classroom import class_page, executors, feedback, regrade
from coursetools.grading.grade import grade_job
from coursetools.grading.job import Job, Options, empty_result, graded_sandbox_mode, resolve_sandbox

__all__ = [
    "Outputs",
    "Recorded",
    "Run",
    "add_grading_arguments",
    "grade",
    "hide_list",
    "options_from",
    "plan",
    "grade_again",
    "record",
    "recorder",
    "run",
    "write_class_overview",
    "write_outputs",
]

ROOT = paths.ROOT


# --------------------------------------------------------------------------------------- options


def hide_list(*extra: Path) -> tuple[str, ...]:
    """Instructor directories covered in the kernel's view (setuid sandbox mode)."""
    covered = [
        paths.SOLUTIONS,
        ROOT / "tests",
        ROOT / "examples",
        paths.BUILD,
        ROOT / ".git",
        Path.home(),
        *extra,
    ]
    return tuple(sorted({str(p.resolve()) for p in covered}))


def add_grading_arguments(p: argparse.ArgumentParser) -> None:
    """The grader's options, as ``grade``, ``course``, ``handin`` and the formgrader take them."""
    p.add_argument(
        "--workers", type=int, default=None, help="parallel graders (default: one per core)"
    )
    p.add_argument("--scheduler", default=None, help="grade on a Dask cluster: tcp://host:port")
    p.add_argument(
        "--cell-timeout",
        type=float,
        default=120.0,
        help="CPU seconds per cell or test (a wall-clock backstop of 3x + 10 s)",
    )
    p.add_argument(
        "--notebook-timeout", type=float, default=900.0, help="CPU seconds per notebook"
    )
    p.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "setuid", "rlimit"])
    p.add_argument(
        "--memory-gb",
        type=float,
        default=3.0,
        help="memory of one submission (cgroup, tmpfs counted) and of each of its processes",
    )
    p.add_argument("--max-pids", type=int, default=256, help="processes and threads per submission")
    p.add_argument("--cpus", type=float, default=1.0, help="CPU share of one submission, in cores")
    p.add_argument(
        "--with-outputs",
        action="store_true",
        help="show each student's own outputs and figures on the feedback page (a second, "
        "ungraded run of every notebook without its hidden tests: about twice the grading time)",
    )


def options_from(args: argparse.Namespace, *hidden: Path) -> Options:
    """:class:`Options` from :func:`add_grading_arguments`'s values; ``hidden`` folders (the
    submissions, the outputs) are covered in the kernel's view besides :func:`hide_list`'s."""
    return Options(
        cell_timeout=args.cell_timeout,
        notebook_timeout=args.notebook_timeout,
        sandbox=args.sandbox,
        memory_bytes=int(args.memory_gb * 1024**3),
        max_pids=args.max_pids,
        cpus=args.cpus,
        hide=hide_list(*hidden),
        with_outputs=args.with_outputs,
    )


# ----------------------------------------------------------------------------------------- grade


def grade_again(result: dict) -> str:
    """Why ``result`` must be graded once more before it counts, or ``""``: the one rule.

    ``"lost"``: the grader, not the submission, failed (an executor lost the job, a worker died);
    ``"starved"``: it was cut by the wall clock while its threads waited for a CPU
    (:mod:`coursetools.grading.sandboxed.budget`). Either is graded once more; what the second
    run gives counts (``make grade`` grades them again after the class, one at a time; the hand-in
    service gives a starved one a worker like any other, with the same wall, and a lost one its
    next try).
    """
    if result.get("grader_error"):
        return "lost"
    if result.get("starved"):
        return "starved"
    return ""


def _lost(job: Job, exc: BaseException) -> dict:
    source = nbformat.reads(job.source, as_version=4)
    result = empty_result(job, source, [f"grader error, grade again: {type(exc).__name__}: {exc}"[:300]], "?")
    result["grader_error"] = True
    return result


def grade(jobs: list[Job], *, workers: int | None = None, scheduler=None, stream=None) -> list[dict]:
    """Grade every job through an executor, in the jobs' order.

    A result :func:`grade_again` names (lost by the executor, or starved) is graded again here,
    after the others, one at a time, and that result counts.
    """

    def label(j):
        return f"{rendering.display_name(j.student)}/{rendering.display_name(j.assignment)}"

    def describe(r):
        return f"{r['score']:g}/{r['max_score']:g}" + (" (problems)" if r["problems"] else "")

    with executors.make_executor(workers, scheduler) as executor:
        results = executors.run_all(
            executor, grade_job, jobs, label=label, describe=describe, on_error=_lost, stream=stream
        )
    retry = [i for i, r in enumerate(results) if grade_again(r)]
    if retry:
        print(
            f"grading {len(retry)} submission(s) again, one at a time: lost by the executor, or cut "
            "by the wall clock while waiting for a CPU on a busy machine",
            file=stream or sys.stderr,
        )
        again = executors.run_all(
            executors.SerialExecutor(),
            grade_job,
            [jobs[i] for i in retry],
            label=label,
            describe=describe,
            on_error=_lost,
            stream=stream,
        )
        for i, result in zip(retry, again, strict=True):
            results[i] = result
    return results


def plan(
    jobs: Sequence[Job], grades: Path, feedback_dir: Path, *, regrade_all: bool = False
) -> tuple[list[int], dict[int, dict], list[str]]:
    """``(indices to grade, {index: last run's result kept}, keys)`` (:mod:`regrade`)."""
    mode = resolve_sandbox(jobs[0].options)[0] if jobs else "?"
    keys = [regrade.job_key(job, mode) for job in jobs]
    to_grade, reused = regrade.plan(
        jobs,
        keys,
        regrade.load_results(Path(grades).with_suffix(".json")),
        lambda student, assignment: feedback.feedback_path(feedback_dir, student, assignment).is_file(),
        regrade_all=regrade_all,
    )
    return to_grade, reused, keys


# ---------------------------------------------------------------------------------------- record


@dataclass(frozen=True)
class Outputs:
    """Where a class's grading is recorded."""

    grades: Path  # the grades CSV; the details JSON beside it
    feedback_dir: Path | None = None  # default: ``<grades folder>/feedback``
    gradebook: bool = False  # also nbgrader's gradebook (the course of ``nbgrader_config``)
    nbgrader_config: Path | None = None
    class_page: bool = True
    class_title: str = "Course"
    lms_database: str = ""  # the LMS records (coursetools.lms.store): the class page's LMS section

    @property
    def pages(self) -> Path:
        return Path(self.feedback_dir) if self.feedback_dir else Path(self.grades).parent / "feedback"


@dataclass
class Recorded:
    """What :func:`record` wrote."""

    rows: list[dict]  # every row of the details file, this run's merged with earlier ones
    gradebook_db: str = ""
    gradebook_written: int = 0
    gradebook_trouble: list[str] = field(default_factory=list)
    gradebook_error: str = ""
    class_page: Path | None = None


def write_outputs(results: list[dict], grades: Path, feedback_dir: Path) -> list[dict]:
    """Write this run's pages, and the grades CSV and details merged with what is already there.

    Every (student, assignment) graded now gets its page written or replaced and its row added or
    replaced; pages and rows of anything else (another class, last week) are kept as they are:
    nothing is ever deleted. Returns every row of the details file.
    """
    details = Path(grades).with_suffix(".json")
    feedback.write_feedback(results, feedback_dir)
    slim = [{k: v for k, v in r.items() if k != "feedback"} for r in results]
    for row in slim:
        remedy = feedback.sandbox_remedy(graded_sandbox_mode(row), str(row.get("sandbox_why", "")))
        if remedy:
            row["sandbox_remedy"] = remedy
    merged = regrade.merge_results(regrade.load_results(details), slim)
    feedback.write_grades(merged, grades)
    tmp = details.with_name(f".{details.name}.tmp")
    tmp.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(details)
    return merged


def write_class_overview(
    results: list[dict], directory: Path, *, nbgrader_config=None, use_gradebook: bool = False,
    title: str = "Course", lms_database: str = "",
) -> Path | None:
    """``directory/class.html`` (:mod:`coursetools.grading.classroom.class_page`), with the roster
    and the written answers waiting from the gradebook, the attempts from nbgrader's exchange
    and the scores sent to the LMS when there are; never fails the grading run (says why and
    returns None)."""
    from coursetools.grading.classroom import gradebook  # noqa: PLC0415 - imports nbgrader

    roster = waiting = None
    attempts: dict = {}
    config = nbgrader_config or gradebook.CONFIG
    try:
        attempts = class_page.count_attempts(gradebook.exchange_inbound(config))
        if use_gradebook:
            roster, waiting = class_page.written_waiting_from_gradebook(
                gradebook.course_directory(config).db_url
            )
            roster = sorted(set(roster) | {r["student"] for r in results})
    except Exception as exc:  # noqa: BLE001 - the page is written without what could not be read
        print(f"class page: no roster from the gradebook ({rendering.printable(str(exc))})", file=sys.stderr)
    lms = None
    if lms_database:
        try:
            lms = lms_grades(lms_database)
        except Exception as exc:  # noqa: BLE001 - the LMS records away: the page says nothing of them
            print(f"class page: no LMS records ({rendering.printable(str(exc))})", file=sys.stderr)
    try:
        return class_page.write_class_page(
            results, directory, roster=roster, attempts=attempts, written_waiting=waiting, title=title,
            lms=lms,
        )
    except Exception as exc:  # noqa: BLE001 - grades and feedback are written: say why not this
        print(f"class page not written: {rendering.printable(str(exc))}", file=sys.stderr)
        return None


def lms_grades(database: str) -> list[class_page.LmsGrade]:
    """The latest score of each (student, assignment) in the LMS outbox at ``database``."""
    from coursetools.lms.store import LmsStore  # noqa: PLC0415 - only for a course with an LMS

    store = LmsStore(database)
    try:
        latest = {(g.student, g.assignment): g for g in store.grades() if g.state != "superseded"}
    finally:
        store.close()
    return [
        class_page.LmsGrade(g.student, g.assignment, g.score, g.max_score, g.state, g.reason)
        for _, g in sorted(latest.items())
    ]


def refresh_class_page(outputs: Outputs) -> Path | None:
    """The class page written again from the recorded rows (after the LMS answered)."""
    rows = regrade.load_results(Path(outputs.grades).with_suffix(".json"))
    return write_class_overview(
        rows, Path(outputs.grades).parent, nbgrader_config=outputs.nbgrader_config,
        use_gradebook=outputs.gradebook, title=outputs.class_title, lms_database=outputs.lms_database,
    )


def record(jobs: Sequence[Job], results: list[dict], outputs: Outputs) -> Recorded:
    """Pages, grades (merged), the gradebook and the class page for ``results`` of ``jobs``.

    Idempotent (a submission recorded twice replaces its rows and page); the gradebook's and the
    class page's trouble is reported in the :class:`Recorded`, never raised: the grades and pages
    are written first.
    """
    done = Recorded(write_outputs(results, outputs.grades, outputs.pages))
    if outputs.gradebook and jobs:
        from coursetools.grading.classroom import gradebook  # noqa: PLC0415 - imports nbgrader

        try:
            coursedir = gradebook.course_directory(outputs.nbgrader_config or gradebook.CONFIG)
            done.gradebook_db = coursedir.db_url
            written, done.gradebook_trouble = gradebook.record_results(list(jobs), results, coursedir)
            done.gradebook_written = len(written)
        except Exception as exc:  # noqa: BLE001 - the CSV and feedback are written: say why not
            done.gradebook_error = f"{type(exc).__name__}: {exc}"
    if outputs.class_page:
        done.class_page = write_class_overview(
            done.rows, Path(outputs.grades).parent, nbgrader_config=outputs.nbgrader_config,
            use_gradebook=outputs.gradebook, title=outputs.class_title,
            lms_database=outputs.lms_database,
        )
    return done


# ------------------------------------------------------------------------------------------- run


@dataclass
class Run:
    """One grading of a class: every job's result (this run's or last run's kept), and what was
    recorded."""

    results: list[dict]
    graded: list[int]  # indices of the jobs graded now
    reused: dict[int, dict]
    recorded: Recorded


def run(
    jobs: list[Job],
    outputs: Outputs,
    *,
    regrade_all: bool = False,
    workers: int | None = None,
    scheduler: Any = None,
) -> Run:
    """Plan, grade what changed, record: the whole class pipeline (module docstring).

    ``regrade_all``: the plan off, every job graded (``make course``, whose example class is made
    anew each time).
    """
    to_grade, reused, keys = plan(jobs, outputs.grades, outputs.pages, regrade_all=regrade_all)
    graded_jobs = [jobs[i] for i in to_grade]
    fresh = grade(graded_jobs, workers=workers, scheduler=scheduler) if graded_jobs else []
    for i, result in zip(to_grade, fresh, strict=True):
        if not result.get("grader_error"):
            result[regrade.KEY_FIELD] = keys[i]
    recorded = record(graded_jobs, fresh, outputs)  # the class page shows every row, kept ones too
    results: list[dict] = [{}] * len(jobs)
    for i, result in zip(to_grade, fresh, strict=True):
        results[i] = result
    for i, result in reused.items():
        results[i] = result
    return Run(results, to_grade, reused, recorded)


def recorder(outputs: Outputs, warn: Callable[[str], None] = print) -> Callable[[list[Job], list[dict]], None]:
    """``on_graded(jobs, results)`` for the hand-in service: :func:`record` into ``outputs``.

    A gradebook that could not be updated raises (the service gives the submission back and
    tries again later: recording is idempotent); rows the gradebook refused are ``warn``-ed.
    """

    def on_graded(jobs: list[Job], results: list[dict]) -> None:
        recorded = record(jobs, results, outputs)
        for line in recorded.gradebook_trouble:
            warn(f"  not in the gradebook: {line}")
        if recorded.gradebook_error:
            raise RuntimeError(f"gradebook not updated: {recorded.gradebook_error}")

    return on_graded
