"""Grading only what changed since the last run, and keeping every page the grader wrote before.

One job: decide which grading jobs can reuse last run's result, and merge this run's results
into the ones already on disk (``grades.json``, the details file beside ``grades.csv``).

A job's *key* (:func:`job_key`) is a SHA-256 over everything its grade depends on: the student's
notebook bytes, the source and release notebooks (the hidden tests and the version the student
got), the assignment's data files, the problems found while collecting, nbgrader's exchange
metadata, the grader's options, the sandbox mode it will run in, and the grader's own code and
``dplib`` (:func:`grader_version`). A job
whose key equals the one stored with last run's result for the same (student, assignment), and
whose feedback page is still there, is not graded again (:func:`plan`); ``--regrade-all`` grades
everything. Results are merged per (student, assignment) (:func:`merge_results`): a second class
or a second week graded into the same place adds and replaces rows and pages, never deletes one.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from coursetools.grading.grade import Job

__all__ = ["KEY_FIELD", "job_key", "load_results", "merge_results", "plan"]

KEY_FIELD = "grading_key"  # where a result keeps the key it was graded under
# The grader's own code, relative to the repository: a change in any of these grades every
# submission again. ``coursetools/rendering.py`` holds the ANSI pattern and image signatures the
# display run's output capture (``outputs.py``) keeps results by.
GRADER_MODULES = (
    "coursetools/authoring/hidden_tests.py",  # forbid, repeat, map_calls: dplib's until issue 30
    "coursetools/grading/bridge.py",
    "coursetools/grading/grade.py",
    "coursetools/grading/classroom/inert.py",
    "coursetools/grading/sandboxed/bans.py",
    "coursetools/grading/sandboxed/kernel.py",
    "coursetools/grading/sandboxed/limits.py",
    "coursetools/grading/sandboxed/outputs.py",
    "coursetools/grading/sandboxed/sandbox.py",
    "coursetools/grading/trusted/forkserver.py",
    "coursetools/grading/trusted/runner.py",
    "coursetools/rendering.py",
)
ROOT = Path(__file__).resolve().parents[3]


@functools.cache
def grader_version() -> str:
    """SHA-256 of the grader's modules (:data:`GRADER_MODULES`) and of ``dplib`` (the reference
    the hidden tests trust), read once per process."""
    files = [ROOT / name for name in GRADER_MODULES]
    files += sorted((ROOT / "dplib").rglob("*.py"))
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"(missing)")
    return digest.hexdigest()


def _sha(data: bytes | str | None) -> str | None:
    if data is None:
        return None
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    return hashlib.sha256(data).hexdigest()


def job_key(job: Job, mode: str) -> str:
    """The key of ``job`` when graded in sandbox ``mode``: equal keys give equal grades.

    Parameters
    ----------
    job : Job
        A grading job (:func:`coursetools.grading.classroom.collect.collect_jobs`).
    mode : str
        The sandbox mode the job will run in (``bwrap``, ``setuid`` or ``rlimit``): ``auto`` in
        the options is resolved by the caller, so that grading as root after a run without root
        grades again.

    Returns
    -------
    str
        64 hexadecimal digits.

    Raises
    ------
    TypeError
        If ``job`` is not a :class:`~coursetools.grading.grade.Job` or ``mode`` is not a str.
    """
    if not isinstance(job, Job):
        raise TypeError(f"job must be a coursetools.grading.grade.Job, got {type(job).__name__}")
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a str, got {type(mode).__name__}")
    material = {
        "student": job.student,
        "assignment": job.assignment,
        "submission": _sha(job.submission),
        "notebook_name": job.notebook_name,
        "source": _sha(job.source),
        "release": _sha(job.release),
        "files": {name: _sha(data) for name, data in sorted(job.files.items())},
        "problems": list(job.problems),
        "exchange": dict(sorted(job.exchange.items())),
        "options": dataclasses.asdict(job.options),
        "mode": mode,
        "grader": grader_version(),
    }
    text = json.dumps(material, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def load_results(details: Path) -> list[dict]:
    """Last run's results from the details file (``grades.json``); ``[]`` if absent or unreadable.

    Raises
    ------
    TypeError
        If ``details`` is not a path.
    """
    if not isinstance(details, (str, Path)):
        raise TypeError(f"details must be a path, got {type(details).__name__}")
    try:
        data = json.loads(Path(details).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, list):
        return []
    return [
        r
        for r in data
        if isinstance(r, dict) and isinstance(r.get("student"), str)
        and isinstance(r.get("assignment"), str)
    ]


def plan(
    jobs: Sequence[Job],
    keys: Sequence[str],
    previous: Iterable[dict],
    page_exists,
    *,
    regrade_all: bool = False,
) -> tuple[list[int], dict[int, dict]]:
    """Which jobs to grade, and the results reused for the others.

    Parameters
    ----------
    jobs, keys : sequences of the same length
        The jobs and :func:`job_key` of each.
    previous : iterable of dict
        Last run's results (:func:`load_results`).
    page_exists : callable
        ``page_exists(student, assignment) -> bool``: whether that feedback page is still there.
    regrade_all : bool
        Grade every job, reuse nothing.

    Returns
    -------
    to_grade : list of int
        Indices of the jobs to grade.
    reused : dict
        ``index -> last run's result`` for each job not graded again.

    Raises
    ------
    ValueError
        If ``jobs`` and ``keys`` differ in length.
    """
    if len(jobs) != len(keys):
        raise ValueError(f"{len(jobs)} jobs but {len(keys)} keys: they must pair up")
    stored = {(r["student"], r["assignment"]): r for r in previous}
    to_grade, reused = [], {}
    for i, (job, key) in enumerate(zip(jobs, keys, strict=True)):
        old = stored.get((job.student, job.assignment))
        if (
            not regrade_all
            and old is not None
            and old.get(KEY_FIELD) == key
            and not old.get("grader_error")
            and page_exists(job.student, job.assignment)
        ):
            reused[i] = old
        else:
            to_grade.append(i)
    return to_grade, reused


def merge_results(previous: Iterable[dict], current: Iterable[dict]) -> list[dict]:
    """``previous`` with every (student, assignment) of ``current`` added or replaced, sorted."""
    merged = {(r["student"], r["assignment"]): r for r in previous}
    merged.update({(r["student"], r["assignment"]): r for r in current})
    return [merged[k] for k in sorted(merged)]
