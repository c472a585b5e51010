"""Grading only what changed since the last run, and keeping every page the grader wrote before.

One job: decide which grading jobs can reuse last run's result, and merge this run's results
into the ones already on disk (``grades.json``, the details file beside ``grades.csv``).

A job's *key* (:func:`job_key`) is a SHA-256 over everything its grade depends on: the student's
notebook bytes, the source and release notebooks (the hidden tests and the version the student
got), the assignment's data files, the problems found while collecting, nbgrader's exchange
metadata, the grader's options, the sandbox mode it will run in, the grader's own code found by
its imports, ``dplib`` and the versions of Python, numpy and scipy (:func:`grader_version`). A job
whose key equals the one stored with last run's result for the same (student, assignment), and
whose feedback page is still there, is not graded again (:func:`plan`); ``--regrade-all`` grades
everything. Results are merged per (student, assignment) (:func:`merge_results`): a second class
or a second week graded into the same place adds and replaces rows and pages, never deletes one.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from coursetools import paths
from coursetools.grading.job import Job

__all__ = [
    "KEY_FIELD",
    "grader_modules",
    "grader_version",
    "imports_in",
    "job_key",
    "load_results",
    "merge_results",
    "plan",
]

KEY_FIELD = "grading_key"  # where a result keeps the key it was graded under
# Where the grader's code starts: the module that grades one submission, the trusted runner and
# the sandbox launcher (each also run as a program of its own), the bridge (its source also runs
# in the kernel). Everything of the course these import, directly or not, at module level or
# inside a function, is in the key (:func:`grader_modules`): a change in any of them grades every
# submission again. A list kept by hand missed ``authoring/rules.py`` (it picks the tests, bans
# and prelude), so an edited ban left grades stale.
GRADER_ROOTS = (
    "coursetools.grading.grade",
    "coursetools.grading.trusted.runner",
    "coursetools.grading.sandboxed.sandbox",
    "coursetools.grading.bridge",
    "coursetools.grading.classroom.inert",  # the autograded notebooks make grade writes
)
ROOT = paths.ROOT


def _module_file(name: str) -> Path | None:
    base = ROOT / Path(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def imports_in(source: str, module: str, *, is_package: bool = False, known=frozenset()) -> list:
    """``(line, imported module)`` for every import statement of ``source``, at any depth.

    The one reader of imports (the regrade key's walk below and the architecture rules of
    ``tests/coursetools/test_architecture.py`` both use it). ``from a.b import c`` counts as
    importing ``a.b.c`` when that is a module in ``known``, else ``a.b``; relative imports are
    resolved against ``module`` (a package, if ``is_package``). Lazy imports inside functions
    count: the code imports them when it runs.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                anchor = package[: len(package) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.append((node.lineno, full if full in known else base))
    return found


def _imported(name: str, path: Path) -> set[str]:
    """The course modules ``path`` (module ``name``) imports anywhere in its code."""
    imports = imports_in(
        path.read_text(encoding="utf-8"),
        name,
        is_package=path.name == "__init__.py",
        known=_Modules(),
    )
    return {
        m for _, m in imports if m.split(".")[0] == "coursetools" and _module_file(m) is not None
    }


class _Modules:
    """``name in _Modules()``: whether ``name`` is a module file of the checkout (for :func:`imports_in`)."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and _module_file(name) is not None


@functools.cache
def grader_modules() -> tuple[str, ...]:
    """Every course module the grader runs: :data:`GRADER_ROOTS` and what they import, as paths
    relative to the repository (packages' ``__init__.py`` included), sorted."""
    seen: set[str] = set()
    todo = list(GRADER_ROOTS)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # importing runs each package
        todo += sorted(_imported(name, _module_file(name)))
    return tuple(sorted(str(_module_file(m).relative_to(ROOT)) for m in seen))


@functools.cache
def grader_version() -> str:
    """SHA-256 of the grader's modules (:func:`grader_modules`), of ``dplib`` (the reference the
    hidden tests trust) and of the versions of Python, numpy and scipy the hidden tests run on,
    read once per process."""
    import platform  # noqa: PLC0415

    import numpy  # noqa: PLC0415
    import scipy  # noqa: PLC0415

    files = [ROOT / name for name in grader_modules()]
    files += sorted((ROOT / "dplib").rglob("*.py"))
    digest = hashlib.sha256()
    digest.update(
        f"python {platform.python_version()} numpy {numpy.__version__} scipy {scipy.__version__}\0".encode()
    )
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
        If ``job`` is not a :class:`~coursetools.grading.job.Job` or ``mode`` is not a str.
    """
    if not isinstance(job, Job):
        raise TypeError(f"job must be a coursetools.grading.job.Job, got {type(job).__name__}")
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
        if isinstance(r, dict)
        and isinstance(r.get("student"), str)
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
