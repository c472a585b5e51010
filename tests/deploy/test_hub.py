"""A class on JupyterHub, end to end on 127.0.0.1: release, fetch, submit, collect, grade, feedback.

``deploy/jupyterhub_config.py`` is started as shipped (in its one-machine demo mode: a dummy
authenticator, every server as this test's OS user) with an instructor and two students, and
driven through the same HTTP endpoints JupyterLab's nbgrader panels call:

1. the instructor releases the pilot assignment (formgrader API) into nbgrader's exchange;
2. each student lists and fetches it (assignment list API), answers it through the contents
   API (one fully, one not at all) and submits it;
3. the instructor collects, grades with the project's grader (``python -m coursetools grade``,
   sandboxed, trusted tests) and releases the feedback;
4. each student fetches their feedback, which holds their own score and nobody else's.

Every step asserts what a wrong setup would break: a formgrader that cannot see the course
directory, an exchange students cannot write, a submission under the wrong name, a grade that
does not reach the gradebook, feedback released to the wrong student.
"""

from __future__ import annotations

from hub_harness import class_loop, course, hub  # noqa: F401 - the module's fixtures


def test_a_class_on_jupyterhub_from_release_to_feedback(hub, course):  # noqa: F811 - fixtures
    class_loop(hub, course, shared_exchange=course.parent / "exchange")
