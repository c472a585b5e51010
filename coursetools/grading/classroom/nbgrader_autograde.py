"""nbgrader's *Autograde* and *Generate Feedback*, done by the course's trusted grader.

One job: plug :mod:`coursetools.grading.grade` into nbgrader's own converters, so that the formgrader's
buttons and ``nbgrader autograde`` / ``nbgrader generate_feedback`` (run from the course
directory) grade exactly as ``make grade`` does. The course's ``nbgrader_config.py`` sets::

    c.Autograde.pre_convert_hook = "coursetools.grading.classroom.nbgrader_autograde.register_assignment"
    c.Autograde.sanitize_preprocessors = ["coursetools.grading.classroom.nbgrader_autograde.TrustedAutograde"]
    c.Autograde.autograde_preprocessors = []
    c.Autograde.exporter_class = "coursetools.grading.classroom.nbgrader_autograde.SubmissionExporter"
    c.GenerateFeedback.preprocessors = []
    c.GenerateFeedback.exporter_class = "coursetools.grading.classroom.nbgrader_autograde.CourseFeedbackExporter"

What then happens for one (student, assignment):

- :func:`register_assignment` puts the assignment's cells in the gradebook when they are not
  there yet (nbgrader's Autograde refuses an assignment it has no cells for, and the course
  never runs ``nbgrader generate_assignment``, which would overwrite ``notebooks/``);
- nbgrader's Autograde keeps its bookkeeping (the student and submission rows, the timestamp,
  ``--force``, the files it copies) but never opens a kernel: its two passes run
  :class:`TrustedAutograde` and nothing else. :class:`SubmissionExporter` hands the sanitising
  pass an empty notebook instead of parsing the student's file;
- :class:`TrustedAutograde` builds the grading job from nbgrader's submitted directory with
  :mod:`coursetools.grading.classroom.collect`'s own reader (no link followed, size and shape capped, nbgrader's
  exchange timestamp and secret kept), grades it with :func:`coursetools.grading.classroom.pipeline.grade` (the
  student's cells in the sandboxed kernel, the tests in the trusted runner, ``make grade``'s
  options), and records it with :func:`coursetools.grading.classroom.gradebook.record_results`: the same gradebook
  rows, the same inert autograded notebook, the same feedback page for an exchange submission,
  and the result kept for Generate Feedback (:func:`coursetools.grading.classroom.gradebook.result_path`);
- :class:`CourseFeedbackExporter` makes nbgrader's Generate Feedback write the course's feedback
  page (:func:`coursetools.grading.classroom.feedback.render_html`) from that kept result, where
  ``nbgrader release_feedback`` finds it.

Collect, release, release_feedback, export and the rest are nbgrader's own, unchanged.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import io
import json
import os
from pathlib import Path

import nbformat
from nbconvert.exporters import Exporter, NotebookExporter
from nbconvert.preprocessors import Preprocessor
from traitlets import List, Unicode, default

from coursetools.grading.classroom import collect, feedback, gradebook, pipeline
from coursetools.grading.job import Job, Options

__all__ = [
    "CourseFeedbackExporter",
    "SubmissionExporter",
    "TrustedAutograde",
    "grading_options",
    "keep_only_course_files",
    "register_assignment",
    "submission_job",
]


# ------------------------------------------------------------------------------------------ jobs


def _directory(coursedir, step: str) -> Path:
    """The root of one of nbgrader's per-student directories (``submitted``, ``source``...)."""
    return Path(coursedir.format_path(step, ".", ".")).resolve()


def grading_options(coursedir, grade_args: list[str] | tuple[str, ...] = ()) -> Options:
    """``python -m coursetools grade``'s options for a course directory.

    Parameters
    ----------
    coursedir : nbgrader.coursedir.CourseDirectory
        The course (its source, submitted and build directories are hidden from the kernel).
    grade_args : sequence of str
        Command-line options of ``python -m coursetools grade`` (``--cell-timeout``,
        ``--with-outputs``...); empty gives ``make grade``'s defaults.

    Raises
    ------
    ValueError
        If ``grade_args`` is not a list of options that command accepts.
    """
    if isinstance(grade_args, str) or not all(isinstance(a, str) for a in grade_args):
        raise TypeError(f"grade_args must be a list of strings, not {grade_args!r}")
    parser = argparse.ArgumentParser(prog="TrustedAutograde.grade_args", add_help=False)

    def refuse(message: str):
        raise ValueError(
            f"grade_args {list(grade_args)!r}: {message} (options of `python -m coursetools grade`)"
        )

    parser.error = refuse
    pipeline.add_grading_arguments(parser)
    args = parser.parse_args(list(grade_args))
    root = Path(coursedir.root).resolve()
    return pipeline.options_from(
        args,
        _directory(coursedir, coursedir.submitted_directory),
        root / "build",
        _directory(coursedir, coursedir.source_directory),
    )


def submission_job(coursedir, student: str, assignment: str, options: Options) -> Job:
    """The grading job of one submission in nbgrader's submitted directory.

    Read as ``make grade`` reads a class (:mod:`coursetools.grading.classroom.collect`): the notebook
    ``<submitted>/<student>/<assignment>/<assignment>.ipynb`` without following a link, capped
    in size and shape, with the exchange's timestamp and secret when nbgrader's collect left
    them. Anything wrong with it is the job's problem (0 points, said why), never an exception.

    Raises
    ------
    ValueError
        If ``student`` or ``assignment`` is not a single folder name.
    """
    for name, value in (("student", student), ("assignment", assignment)):
        if not isinstance(value, str) or not value or value in (".", "..") or "/" in value:
            raise ValueError(f"{name} must be one folder name, not {value!r}")
    submitted = _directory(coursedir, coursedir.submitted_directory)
    return collect.student_job(
        submitted, student, assignment, _directory(coursedir, coursedir.source_directory), options
    )


def grade(job: Job) -> tuple[dict, str]:
    """``make grade``'s verdict on one job, and its progress line.

    Run on a thread of its own: the grader drives its kernel with :func:`asyncio.run`, which
    cannot run on the Jupyter server's event loop, where the formgrader's buttons call it.
    """
    progress = io.StringIO()
    with cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="trusted-grader") as pool:
        (result,) = pool.submit(pipeline.grade, [job], workers=1, stream=progress).result()
    return result, progress.getvalue().strip()


# ---------------------------------------------------------------------------------- nbgrader hooks


def _coursedir(configurable):
    """The CourseDirectory of the converter that owns ``configurable`` (its parent chain)."""
    node = configurable
    while node is not None:
        if getattr(node, "coursedir", None) is not None:
            return node.coursedir
        node = getattr(node, "parent", None)
    raise RuntimeError(
        f"{type(configurable).__name__} runs only inside nbgrader's converters (no course directory)"
    )


def register_assignment(assignment: str, student: str = "", notebooks=(), **_ignored) -> None:
    """nbgrader's ``Autograde.pre_convert_hook``: the assignment's cells in the gradebook.

    Only when the gradebook has no notebook for ``assignment`` yet (``make grade`` or an earlier
    Autograde registers it); nbgrader calls the hook in the course directory, whose
    ``nbgrader_config.py`` names the gradebook.
    """
    from nbgrader.api import MissingEntry

    if not isinstance(assignment, str) or not assignment:
        raise ValueError(f"assignment must be a non-empty name, not {assignment!r}")
    coursedir = gradebook.course_directory(Path.cwd() / "nbgrader_config.py")
    with gradebook.open_gradebook(coursedir.db_url) as gb:
        try:
            gb.find_notebook(assignment, assignment)
            return
        except MissingEntry:
            pass
    source, release, files = collect.source_texts(
        _directory(coursedir, coursedir.source_directory), assignment
    )
    job = Job(
        student="",
        assignment=assignment,
        source=source,
        release=release,
        submission=None,
        notebook_name=f"{assignment}.ipynb",
        files=files,
    )
    gradebook.register_assignment(coursedir.db_url, job)


class SubmissionExporter(NotebookExporter):
    """nbgrader's Autograde exporter, which leaves the handed-in notebook unparsed.

    Autograde's first pass reads the file from the submitted directory; here that pass gets an
    empty notebook instead, and :class:`TrustedAutograde` reads the file with ``make grade``'s
    care (a notebook that is not JSON, or is built to be costly to parse, is that submission's 0
    with a reason rather than nbgrader's error). Every other file is read as nbgrader reads it.
    """

    def from_filename(self, filename, resources=None, **kw):
        submitted = _directory(_coursedir(self), _coursedir(self).submitted_directory)
        if submitted in Path(os.path.abspath(filename)).parents:
            resources = self._init_resources(resources)
            resources["metadata"]["path"] = os.path.dirname(os.path.abspath(filename))
            resources["metadata"]["name"] = Path(filename).stem
            return self.from_notebook_node(nbformat.v4.new_notebook(), resources, **kw)
        return super().from_filename(filename, resources, **kw)


class TrustedAutograde(Preprocessor):
    """nbgrader's Autograde preprocessor that grades the whole notebook with ``make grade``.

    Given the notebook nbgrader is autograding, it grades the submission on disk (see the module
    docstring), records the result in the gradebook, and returns the autograded notebook that
    :func:`coursetools.grading.classroom.gradebook.record_results` wrote, which nbgrader then writes again.
    """

    @default("enabled")
    def _enabled_default(self):
        return True  # nbconvert's preprocessors are off unless enabled

    grade_args = List(
        Unicode(),
        default_value=[],
        help="Options of `python -m coursetools grade` (e.g. ['--with-outputs']).",
    ).tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        student, assignment, notebook = info["student"], info["assignment"], info["notebook"]
        if notebook != assignment:
            raise ValueError(
                f"{assignment}/{notebook}.ipynb: the course grades one notebook per assignment, "
                f"named {assignment}.ipynb"
            )
        coursedir = _coursedir(self)
        job = submission_job(
            coursedir, student, assignment, grading_options(coursedir, self.grade_args)
        )
        result, progress = grade(job)
        self.log.info("trusted grader: %s", progress)
        for problem in result["problems"]:
            self.log.warning("%s/%s: %s", student, assignment, problem)
        written, trouble = gradebook.record_results([job], [result], coursedir)
        if trouble or not written:
            raise RuntimeError("; ".join(trouble) or f"{student}/{assignment}: nothing recorded")
        for name in keep_only_course_files(written[0], job):
            self.log.warning(
                "%s/%s: %s handed in beside the notebook, not kept", student, assignment, name
            )
        return nbformat.read(str(written[0]), as_version=4), resources


def keep_only_course_files(notebook: Path, job: Job) -> list[str]:
    """Remove from ``notebook``'s autograded folder every file the student handed in beside it.

    nbgrader's Autograde copies whatever lay beside the submitted notebook into the autograded
    folder, and Generate Feedback copies it on into the feedback folder, from where *Release
    feedback* sends every ``.html`` file out. ``make grade`` takes only the notebook; so does
    this: kept are the autograded notebook, the assignment's own files (from the source
    directory) and the exchange's timestamp and secret, written again from the values
    :mod:`coursetools.grading.classroom.collect` validated. Links are removed, never followed.

    Returns
    -------
    list of str
        The paths removed, relative to the folder.
    """
    folder = Path(notebook).parent
    keep = {Path(notebook).name} | set(job.files)
    removed = []
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        name = str(path.relative_to(folder))
        if path.is_symlink() or (path.is_file() and name not in keep):
            path.unlink()
            removed.append(name)
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    for key, name in (("timestamp", "timestamp.txt"), ("secret", "submission_secret.txt")):
        if key in job.exchange:
            (folder / name).write_text(job.exchange[key], encoding="ascii")
    return removed


class CourseFeedbackExporter(Exporter):
    """nbgrader's Generate Feedback exporter: the course's feedback page, not nbgrader's.

    The page is :func:`coursetools.grading.classroom.feedback.render_html` of the result the trusted grader kept
    for that notebook (``make grade`` or Autograde), the very page ``make grade`` writes.
    """

    output_mimetype = "text/html"

    @default("file_extension")
    def _file_extension_default(self):
        return ".html"

    def from_notebook_node(self, nb, resources=None, **kw):
        _, resources = super().from_notebook_node(nb, resources, **kw)
        info = resources["nbgrader"]
        student, assignment = info["student"], info["assignment"]
        path = gradebook.result_path(_coursedir(self), student, assignment, info["notebook"])
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(
                f"no result of the trusted grader for {student}/{assignment} ({path}): "
                "autograde it first (the formgrader's Autograde, or make grade)"
            ) from None
        if (result.get("student"), result.get("assignment")) != (student, assignment):
            raise ValueError(f"{path} holds another submission's result: autograde it again")
        return feedback.render_html(result), resources
