"""The course's own tools, three products: the grader, the book, and authoring with release.
Imported by the command line (``python -m coursetools``), tests, bench and examples; never by dplib.

- :mod:`coursetools.grading`: grade a class's hand-ins (the sandboxed side, the trusted side, the
  class level; the rules of who may import whom are in ``tests/coursetools/test_architecture.py``);
- :mod:`coursetools.book`: the course as a static site for self-paced readers (pages, API page);
- :mod:`coursetools.authoring`: the rules a hidden test follows and ``solutions/`` -> ``notebooks/``;
- :mod:`coursetools.rendering`: the one markdown and maths renderer the book and the feedback share;
- :mod:`coursetools.cli`: ``python -m coursetools {release,validate,grade,course,book,...}``.

See ``docs/grading.md`` (its design section draws the rooms and the trust boundary).
"""
