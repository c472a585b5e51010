"""The trusted side of the grader: the process that runs the instructor's test cells, and its fork server.
Imported by :mod:`coursetools.grading.grade`; it imports only :mod:`coursetools.grading.bridge` and
the control groups of :mod:`coursetools.grading.sandboxed.limits`, never the code that runs student work.

- :mod:`~coursetools.grading.trusted.runner`: runs test cells against proxies of the student's
  answers (``python -I -m coursetools.grading.trusted.runner``);
- :mod:`~coursetools.grading.trusted.forkserver`: forks warm runners instead of starting cold ones.
"""
