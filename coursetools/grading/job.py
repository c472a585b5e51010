"""The grader's data: what to grade (:class:`Job`, run with :class:`Options`) and what came out
(:class:`Result`).

One job: the types every room of the grading pipeline passes along (collect builds jobs, the
grader turns a job into a result, regrade keys them, the hand-in service queues them, the
formgrader's Autograde and the class pipeline record them), so that none of them imports the
grader itself for a type. Also the one place that says which sandbox mode a job runs in
(:func:`resolve_sandbox`) and which one a result was graded in (:func:`graded_sandbox_mode`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nbformat.notebooknode import NotebookNode

from coursetools.cells import is_test_cell, max_points, nbgrader
from coursetools.grading.sandboxed import sandbox as sbx

__all__ = [
    "Options",
    "Job",
    "Result",
    "empty_result",
    "resolve_sandbox",
    "graded_sandbox_mode",
    "sandbox_summary",
    "sandbox_fields",
]


@dataclass(frozen=True)
class Options:
    """How to run one submission."""

    # Limits in the submission's own CPU seconds (its kernel's control group, plus the trusted
    # runner during a test; wall seconds where no group measures CPU): load cannot cost points
    # (coursetools.grading.sandboxed.budget). The wall clock is a backstop, wall_factor times
    # the limit: a cell that sleeps uses no CPU.
    cell_timeout: float = 60.0  # CPU seconds for one cell or test
    notebook_timeout: float = 600.0  # CPU seconds for the whole notebook, restarts included
    wall_factor: float = 3.0
    notebook_wall: float | None = None  # a wall-clock budget for the whole notebook (hand-in)
    startup_timeout: float = 60.0
    max_restarts: int = 3  # kernel deaths/hangs tolerated before the rest is not run
    sandbox: str = "auto"  # auto | bwrap | setuid | rlimit
    memory_bytes: int = sbx.Limits.memory_bytes  # per process (RLIMIT_AS) and per submission
    max_pids: int = 256  # processes per submission (cgroup), threads included
    cpus: float = 1.0  # CPU share per submission (cgroup)
    hide: tuple[str, ...] = ()  # directories to cover in setuid mode (instructor files)
    with_outputs: bool = False  # a second, ungraded run for the student's outputs (display_run)


@dataclass
class Job:
    """Everything needed to grade one (student, assignment): texts and bytes, no paths."""

    student: str
    assignment: str
    source: str  # the source notebook's JSON (solutions + hidden tests)
    release: str  # the release notebook's JSON (what the student got)
    submission: bytes | None  # None: nothing handed in
    notebook_name: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # the assignment's own data files
    problems: list[str] = field(default_factory=list)  # found while collecting
    options: Options = field(default_factory=Options)
    # nbgrader's exchange leaves timestamp.txt and submission_secret.txt beside a collected
    # notebook; kept (validated) so its feedback can be released back through the exchange.
    exchange: dict[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------------- the sandbox


def resolve_sandbox(options: Options) -> tuple[str, str]:
    """``(mode, why)``: the sandbox mode jobs with ``options`` run in, and why that mode.

    The one resolver: ``auto`` is the strongest mode this machine has
    (:func:`coursetools.grading.sandboxed.sandbox.detect`, probed once per process, with the true
    reason a weaker mode is used); any other value is the mode asked for. The grader runs in this
    mode and the regrade key (:mod:`coursetools.grading.classroom.regrade`) names it.
    """
    if options.sandbox == "auto":
        return sbx.detect()
    return options.sandbox, f"asked for (--sandbox {options.sandbox})"


def graded_sandbox_mode(result: dict) -> str:
    """The sandbox mode ``result`` was graded in (``bwrap``, ``setuid``, ``rlimit``) or ``"?"``.

    Reads the result's ``sandbox_mode``, or, for a result of an earlier version, the first word
    of its one-line ``sandbox``.
    """
    mode = result.get("sandbox_mode")
    if mode in sbx.MODES:
        return mode
    match = re.match(r"[a-z]+", str(result.get("sandbox", "")))
    return match.group(0) if match else "?"


def sandbox_summary(mode: str, described: str) -> str:
    """The result's one-line ``sandbox``: the mode, its control group, and what is off if weaker
    than bwrap."""
    off = sbx.guarantees_off(mode) if mode in sbx.MODES else []
    return mode + described + (f" (weaker than bwrap: {'; '.join(off)})" if off else "")


def sandbox_fields(mode: str, why: str = "") -> dict:
    """The structured sandbox fields of a result: the mode, what it does not guarantee, and the
    true reason a mode weaker than bwrap was used (the remedy is derived from it)."""
    known = mode in sbx.MODES
    return {
        "sandbox_mode": mode,
        "sandbox_off": sbx.guarantees_off(mode) if known else [],
        **({"sandbox_why": why} if why and mode != "bwrap" else {}),
    }


# ------------------------------------------------------------------------------------- results


class Result(dict):
    """One graded submission, as every consumer reads it: a ``dict`` (JSON in the details file,
    picklable across a Dask cluster) with these keys, built only by :meth:`empty` and
    :func:`coursetools.grading.grade.grade_job`.

    ``student``, ``assignment``; ``score`` and ``max_score`` (autograded points), ``manual_max``
    (points graded by hand); ``cells`` (one per test or hand-graded cell: ``grade_id``, ``kind``
    auto|manual, ``points``, ``max_points``, ``status``, ``message``, ``hidden`` when a hidden
    line failed, ``cpu_seconds`` the test cost); ``problems`` and ``notes`` (the grader's
    sentences); ``feedback`` (the cells of the page); the sandbox: ``sandbox`` (one line),
    ``sandbox_mode``, ``sandbox_off`` (each guarantee off, :func:`sandbox.guarantees_off`) and
    ``sandbox_why`` (why a weaker mode); ``seconds``, ``restarts``, ``kernel_calls``, ``usage``
    (the control group's figures); ``starved`` (cut by the wall clock while computing: graded
    again alone); ``grader_error`` when the grader, not the submission, failed.
    """

    @classmethod
    def empty(
        cls, job: Job, source: NotebookNode, problems: list[str], mode: str, why: str = ""
    ) -> Result:
        """The result of a submission that was not run (nothing handed in, not a notebook, lost):
        0 points on every test, with the problems."""
        auto, manual = max_points(source)
        cells = [
            {
                "grade_id": nbgrader(c)["grade_id"],
                "kind": "auto",
                "points": 0.0,
                "max_points": float(nbgrader(c).get("points", 0)),
                "status": "not run",
                "message": "",
            }
            for c in source.cells
            if is_test_cell(c)
        ]
        return cls(
            student=job.student,
            assignment=job.assignment,
            score=0.0,
            max_score=auto,
            manual_max=manual,
            cells=cells,
            problems=problems,
            notes=[],
            feedback=[],
            sandbox=sandbox_summary(mode, ""),
            **sandbox_fields(mode, why),
            seconds=0.0,
            restarts=0,
        )


empty_result = Result.empty
