"""nbgrader's configuration for the course (read by `nbgrader ...` and JupyterLab's extensions).

`solutions/` is nbgrader's *source* directory (instructor notebooks: solutions and hidden tests)
and `notebooks/` its *release* directory: one assignment per notebook,
`solutions/01_x/01_x.ipynb` -> `notebooks/01_x/01_x.ipynb`. `solutions/` is the only place a
notebook is edited; `make release` (python -m coursetools release) regenerates `notebooks/` with
nbgrader's own preprocessors, deterministically. Batch grading is `make grade` (docs/grading.md):
it runs each submission in a sandbox. nbgrader's Autograde and Generate Feedback (the formgrader's
buttons, `nbgrader autograde` / `nbgrader generate_feedback` here) are configured below to grade
with the same trusted grader (coursetools/grading/classroom/nbgrader_autograde.py) instead of running the tests in
the student's kernel.
"""

import os

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

ROOT = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.root = ROOT
c.CourseDirectory.course_id = "dp-course"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
# What grading writes: build/ (gitignored), or COURSE_BUILD_DIR where the course's folder is read
# only (the hand-in service's container on Kubernetes, deploy/z2jh/exchange.yaml).
BUILD = os.environ.get("COURSE_BUILD_DIR") or os.path.join(ROOT, "build")
# nbgrader's own working directories (only if someone runs nbgrader by hand): out of the repo.
c.CourseDirectory.submitted_directory = os.path.join(BUILD, "nbgrader", "submitted")
c.CourseDirectory.autograded_directory = os.path.join(BUILD, "nbgrader", "autograded")
c.CourseDirectory.feedback_directory = os.path.join(BUILD, "nbgrader", "feedback")
# The gradebook is an implementation detail: kept in build/ (gitignored), never committed.
# COURSE_GRADEBOOK_URL (an SQLAlchemy URL, postgresql+psycopg://...) puts it in a database that
# several machines share: on Kubernetes the hand-in service's pod and every instructor's server
# (deploy/z2jh/, docs/kubernetes.md).
c.CourseDirectory.db_url = os.environ.get("COURSE_GRADEBOOK_URL") or "sqlite:///" + os.path.join(
    BUILD, "gradebook.db"
)
if c.CourseDirectory.db_url.startswith("sqlite:///"):
    # SQLite makes the file but not its folder: without build/ every nbgrader client (the
    # formgrader, collect, export) fails with "unable to open database file".
    os.makedirs(BUILD, exist_ok=True)
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", ".DS_Store"]

# The markers the course uses (nbgrader's defaults, spelled out).
c.ClearSolutions.begin_solution_delimeter = "BEGIN SOLUTION"
c.ClearSolutions.end_solution_delimeter = "END SOLUTION"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearHiddenTests.begin_test_delimeter = "BEGIN HIDDEN TESTS"
c.ClearHiddenTests.end_test_delimeter = "END HIDDEN TESTS"

# Students' Validate button: a cell gets at most ten minutes. (nbgrader's Validator counts output
# on stderr as a failure; `make grade` counts only errors, see docs/grading.md.)
c.Execute.timeout = 600

# nbgrader's exchange: on one machine a folder in build/ (hand-in is a folder per student, see
# docs/grading.md); on JupyterHub the shared directory deploy/jupyterhub_config.py sets.
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE") or os.path.join(ROOT, "build", "nbgrader", "exchange")

# Autograde and Generate Feedback (the formgrader's buttons, `nbgrader autograde` and `nbgrader
# generate_feedback`) go through the course's trusted grader, as `make grade` does: the student's
# cells in the sandboxed kernel, the tests in the trusted runner, the same gradebook rows and
# feedback pages. nbgrader's own preprocessors (which run the tests in the student's kernel) are
# not used; everything else (collect, release_feedback, export) is nbgrader's own.
# `python -m coursetools grade`'s options for the button: c.TrustedAutograde.grade_args = [...]
c.Autograde.pre_convert_hook = "coursetools.grading.classroom.nbgrader_autograde.register_assignment"
c.Autograde.sanitize_preprocessors = ["coursetools.grading.classroom.nbgrader_autograde.TrustedAutograde"]
c.Autograde.autograde_preprocessors = []
c.Autograde.exporter_class = "coursetools.grading.classroom.nbgrader_autograde.SubmissionExporter"
# 644 in nbgrader's octal digits (its default, 444, would stop `make grade` rewriting the files)
c.Autograde.permissions = 644
c.GenerateFeedback.preprocessors = []
c.GenerateFeedback.exporter_class = "coursetools.grading.classroom.nbgrader_autograde.CourseFeedbackExporter"
