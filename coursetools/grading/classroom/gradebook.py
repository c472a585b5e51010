"""Record ``make grade``'s results in nbgrader's gradebook, for the formgrader and ``nbgrader export``.

One job: after the sandboxed grader has scored a class, put what it found where nbgrader's own
tools look, so the instructor's loop runs in nbgrader's clients:

- the gradebook (``CourseDirectory.db_url``, ``build/gradebook.db``) gets the assignment's cells
  (nbgrader's ``SaveCells`` on the release notebook, as ``nbgrader generate_assignment`` does),
  each student, and one submission per handed-in notebook with an ``auto_score`` per autograded
  cell. A written answer has no ``auto_score`` and ``needs_manual_grade``, so the formgrader's
  *Manual Grading* lists it; a manual score given there survives a re-grade (nbgrader's
  ``SaveAutoGrades`` rule);
- the submitted directory gets the notebook as handed in (the formgrader counts submissions
  there), and the autograded directory (``build/nbgrader/autograded/<student>/<assignment>/<notebook>.ipynb``)
  gets the notebook that was graded (the student's answers in the source's cells, hidden tests
  included), each test cell carrying the grader's verdict as its output: the file the formgrader
  shows beside its score boxes. Both are written inert (:func:`coursetools.grading.classroom.inert.inert_notebook`:
  no raw HTML, script link, rich output or forged metadata a renderer could make live), because
  the formgrader renders them in the instructor's Jupyter origin; a student or assignment name
  that could carry markup is refused with a problem line instead of entering the gradebook;
- for a submission collected through nbgrader's exchange (JupyterHub), the feedback page goes to
  the feedback directory with the exchange's timestamp and secret, so ``nbgrader
  release_feedback`` returns it to the student who handed it in;
- ``nbgrader export`` then writes final grades (autograded + manual) as CSV (``make export``).

nbgrader's own autograder never runs a test: the grades are those of the trusted grader
(``coursetools.grading.grade``); in the course directory nbgrader's Autograde and Generate Feedback are
routed to it too (``coursetools.grading.classroom.nbgrader_autograde``, docs/grading.md).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

from coursetools import cells, paths
from coursetools.grading.classroom.inert import inert_notebook
from coursetools.grading.grade import merge
from coursetools.grading.job import Job

__all__ = [
    "course_directory",
    "record_results",
    "open_gradebook",
    "register_assignment",
    "result_path",
]

ROOT = paths.ROOT
CONFIG = paths.NBGRADER_CONFIG


def course_directory(config_file: Path = CONFIG):
    """nbgrader's ``CourseDirectory`` as the course's ``nbgrader_config.py`` sets it."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config_file = Path(config_file)
    config = PyFileConfigLoader(config_file.name, path=str(config_file.parent)).load_config()
    return CourseDirectory(config=config)


def exchange_inbound(config_file: Path = CONFIG) -> Path:
    """nbgrader's exchange ``inbound`` folder of the course (``Exchange.root/<course_id>/inbound``)."""
    from traitlets.config.loader import PyFileConfigLoader

    config_file = Path(config_file)
    config = PyFileConfigLoader(config_file.name, path=str(config_file.parent)).load_config()
    root = config.Exchange.get("root", "/srv/nbgrader/exchange")  # nbgrader's default root
    return Path(root) / str(course_directory(config_file).course_id) / "inbound"


@contextlib.contextmanager
def open_gradebook(db_url: str) -> Iterator:
    """nbgrader's ``Gradebook`` on ``db_url``, creating the database and its directory if needed.

    nbgrader stamps a new database with ``alembic heads``, run as a program: the virtualenv's
    ``bin/`` must be on ``PATH`` even when the caller (make, an IDE) did not activate it.
    """
    from nbgrader.api import Gradebook

    if db_url.startswith("sqlite:///"):
        Path(db_url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        os.environ["PATH"] = bindir + (os.pathsep + path if path else "")
    with Gradebook(db_url) as gradebook:
        yield gradebook


def _register_assignment(db_url: str, job: Job) -> None:
    """The assignment, its notebook and its graded cells in the gradebook (nbgrader's SaveCells)."""
    from nbgrader.preprocessors import SaveCells

    release = nbformat.reads(job.release, as_version=4)
    resources = {
        "nbgrader": {"db_url": db_url, "assignment": job.assignment, "notebook": _notebook_id(job)}
    }
    try:
        SaveCells().preprocess(release, resources)
    except RuntimeError as exc:  # the notebook's graded cells changed after submissions exist
        raise RuntimeError(
            f"{exc}. The gradebook ({db_url}) holds submissions of an older version of "
            f"{job.assignment}: grade into a fresh gradebook (move it away) or restore the cells."
        ) from None


def register_assignment(db_url: str, job: Job) -> None:
    """Put ``job``'s assignment, notebook and graded cells in the gradebook, as ``record_results`` does.

    For nbgrader's own Autograde (:mod:`coursetools.grading.classroom.nbgrader_autograde`), which needs them before
    it grades: the course never runs ``nbgrader generate_assignment``.
    """
    with open_gradebook(db_url) as gradebook:
        gradebook.update_or_create_assignment(job.assignment)
    _register_assignment(db_url, job)


def result_path(coursedir, student: str, assignment: str, notebook_id: str) -> Path:
    """Where ``record_results`` keeps the grader's result of one notebook, as JSON.

    Beside the autograded directory (``build/nbgrader/results/<student>/<assignment>/``), so that
    nbgrader's ``generate_feedback`` renders the course's feedback page from it
    (:class:`coursetools.grading.classroom.nbgrader_autograde.CourseFeedbackExporter`).
    """
    parent = os.path.dirname(os.path.normpath(coursedir.autograded_directory))
    step = os.path.join(parent, "results") if parent else "results"
    return Path(coursedir.format_path(step, student, assignment)) / f"{notebook_id}.json"


def _notebook_id(job: Job) -> str:
    return Path(job.notebook_name).stem if job.notebook_name else job.assignment


def _verdict_output(cell: dict) -> NotebookNode:
    points = f"{cell['points']:g}/{cell['max_points']:g}"
    text = f"[grader] {cell['status']} ({points} points)"
    if cell.get("message"):
        text += f": {cell['message']}"
    return nbformat.v4.new_output("stream", name="stdout", text=text + "\n")


def graded_notebook(job: Job, result: dict) -> NotebookNode:
    """The notebook the formgrader shows: answers in the source's cells, verdicts as outputs."""
    source = nbformat.reads(job.source, as_version=4)
    release = nbformat.reads(job.release, as_version=4)
    try:
        submission = nbformat.reads(job.submission.decode("utf-8"), as_version=4)
        nb, _ = merge(source, release, submission)
    except Exception:  # noqa: BLE001 - not a notebook: show the release, the problems say why
        nb = copy.deepcopy(release)
    verdicts = {c["grade_id"]: c for c in result["cells"] if c["kind"] == "auto"}
    for cell in nb.cells:
        gid = cells.grade_id(cell)
        if cell.cell_type == "code" and gid in verdicts:
            cell.outputs = [_verdict_output(verdicts[gid])]
    notes = list(result.get("problems", [])) + list(result.get("notes", []))
    if notes:
        lines = "\n".join(f"- {n}" for n in notes)
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**Grader notes**\n\n{lines}"))
    return inert_notebook(nb)


def _sa_warning() -> type[Warning]:
    from sqlalchemy.exc import SAWarning

    return SAWarning


def _record_one(gradebook, coursedir, job: Job, result: dict) -> Path:
    from nbgrader import utils
    from nbgrader.api import MissingEntry

    notebook_id = _notebook_id(job)
    gradebook.update_or_create_student(job.student)
    stamp = {"timestamp": job.exchange["timestamp"]} if job.exchange.get("timestamp") else {}
    try:
        submission = gradebook.find_submission(job.assignment, job.student)
        if stamp:
            submission.timestamp = utils.parse_utc(stamp["timestamp"])
    except MissingEntry:
        with warnings.catch_warnings():  # nbgrader's own autoflush warning, harmless here
            warnings.simplefilter("ignore", category=_sa_warning())
            gradebook.add_submission(job.assignment, job.student, **stamp)
    release = nbformat.reads(job.release, as_version=4)
    stubs = {gid: c.source for gid, c in cells.answers_by_id(release.cells).items()}
    nb = graded_notebook(job, result)
    answers = {gid: c.source for gid, c in cells.answers_by_id(nb.cells).items()}
    for cell in result["cells"]:
        grade = gradebook.find_grade(cell["grade_id"], notebook_id, job.assignment, job.student)
        grade.auto_score = cell["points"] if cell["kind"] == "auto" else None
        # nbgrader's SaveAutoGrades rule: a human looks again where a human graded before
        grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
    for gid, stub in stubs.items():
        try:
            comment = gradebook.find_comment(gid, notebook_id, job.assignment, job.student)
        except MissingEntry:
            continue
        comment.auto_comment = "No response." if answers.get(gid, stub) == stub else None
    gradebook.db.commit()
    handed_in = Path(
        coursedir.format_path(coursedir.submitted_directory, job.student, job.assignment)
    )
    handed_in.mkdir(parents=True, exist_ok=True)
    _write_handed_in(handed_in / f"{notebook_id}.ipynb", job.submission)
    folder = Path(coursedir.format_path(coursedir.autograded_directory, job.student, job.assignment))
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{notebook_id}.ipynb"
    nbformat.write(nb, str(target))
    kept = result_path(coursedir, job.student, job.assignment, notebook_id)
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(result, sort_keys=True), encoding="utf-8")
    if job.exchange.get("timestamp") and job.exchange.get("secret"):
        _feedback_for_exchange(coursedir, job, result, notebook_id)
    return target


def _write_handed_in(path: Path, submission: bytes) -> None:
    """The notebook as handed in, made inert; nbgrader's own collected copy is left as it is.

    When the class was graded from nbgrader's submitted directory (the hub), ``path`` already
    holds these very bytes, written by ``nbgrader collect``; the formgrader never renders that
    directory. A file that is not a notebook is kept as bytes (no renderer opens it as HTML).
    """
    try:
        if path.read_bytes() == submission:
            return
    except OSError:
        pass
    try:
        nb = nbformat.reads(submission.decode("utf-8"), as_version=4)
    except Exception:  # noqa: BLE001 - not a notebook: its bytes, for the record
        path.write_bytes(submission)
        return
    nbformat.write(inert_notebook(nb), str(path))


def _unsafe_name(name: str) -> str | None:
    """Why ``name`` cannot be a student or assignment id in the gradebook, or None.

    The formgrader writes ids into its pages and scripts unescaped, so an id may hold no
    character that can open markup, a quoted attribute or a script string.
    """
    if not name or len(name) > 100:
        return "it must be 1 to 100 characters long"
    if any(c in name for c in "<>\"'&`\\") or any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "it may not contain < > \" ' & ` \\ or control characters"
    return None


def _feedback_for_exchange(coursedir, job: Job, result: dict, notebook_id: str) -> None:
    """The feedback page where ``nbgrader release_feedback`` looks, with the files it needs.

    nbgrader names the released file by a hash of the submission's secret and the notebook, so
    only the student who handed in that submission can fetch it (``fetch_feedback``).
    """
    from coursetools.grading.classroom.feedback import render_html

    folder = Path(coursedir.format_path(coursedir.feedback_directory, job.student, job.assignment))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{notebook_id}.html").write_text(
        render_html(result), encoding="utf-8", errors="backslashreplace"
    )
    (folder / "timestamp.txt").write_text(job.exchange["timestamp"], encoding="ascii")
    (folder / "submission_secret.txt").write_text(job.exchange["secret"], encoding="ascii")


def record_results(
    jobs: Sequence[Job], results: Sequence[dict], coursedir=None
) -> tuple[list[Path], list[str]]:
    """Put each graded submission in nbgrader's gradebook and autograded directory.

    Parameters
    ----------
    jobs, results : sequences of the same length
        The grading jobs and ``coursetools.grading.grade.grade_job``'s result for each.
    coursedir : nbgrader.coursedir.CourseDirectory, optional
        Where the gradebook and the autograded notebooks live (default: ``nbgrader_config.py``).

    Returns
    -------
    written : list of Path
        The autograded notebooks written, one per handed-in submission recorded.
    problems : list of str
        The submissions that could not be recorded, and why (the others are recorded).
    """
    if len(jobs) != len(results):
        raise ValueError(f"{len(jobs)} jobs but {len(results)} results: they must pair up")
    coursedir = course_directory() if coursedir is None else coursedir
    db_url = coursedir.db_url
    written, problems = [], []
    with open_gradebook(db_url):  # create the database (and its directory) once
        pass
    registered = set()
    for job in jobs:
        if job.assignment not in registered:
            with open_gradebook(db_url) as gradebook:
                gradebook.update_or_create_assignment(job.assignment)
            _register_assignment(db_url, job)
            registered.add(job.assignment)
    with open_gradebook(db_url) as gradebook:
        for job, result in zip(jobs, results, strict=True):
            if job.submission is None:
                continue  # nothing handed in: nbgrader's export counts it as zero
            try:
                (job.student + job.assignment).encode("utf-8")
            except UnicodeEncodeError:
                problems.append(f"{job.student!a}/{job.assignment!a}: the name is not UTF-8")
                continue
            why = _unsafe_name(job.student) or _unsafe_name(job.assignment)
            if why:
                problems.append(
                    f"{job.student!a}/{job.assignment!a}: not recorded in the gradebook ({why});"
                    " rename the folder and grade again"
                )
                continue
            written.append(_record_one(gradebook, coursedir, job, result))
    return written, problems
