"""The grader: one submission (``grade``, ``bridge``) between a sandboxed and a trusted side.
Imported by :mod:`coursetools.cli` and its own rooms; never by the book, authoring or dplib.

- :mod:`coursetools.grading.grade`: grade one submission: the only module that drives both sides
  (student cells in the sandboxed kernel, test cells in the trusted runner, the score);
- :mod:`coursetools.grading.bridge`: the plain-data codec both sides speak; its source text also
  runs inside the student's kernel, so it imports nothing of the course's;
- :mod:`coursetools.grading.sandboxed`: what launches and talks to the kernel that runs student
  code (launcher, kernel session, control groups, bans, output capture);
- :mod:`coursetools.grading.trusted`: the runner of the instructor's test cells and its fork
  server, where no student code ever runs;
- :mod:`coursetools.grading.classroom`: a whole class (collection, fan-out, regrading, gradebook,
  feedback, nbgrader's buttons, the formgrader's inert pages).
"""
