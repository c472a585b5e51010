"""Authoring and release: the rules a hidden test follows, and ``solutions/`` -> ``notebooks/``.
Imported by the grader, the book, the command line and tests; it imports nothing else of coursetools.

- :mod:`~coursetools.authoring.rules`: a source notebook's grading plan, its bans, the linter;
- :mod:`~coursetools.authoring.release`: the student notebooks, with nbgrader's preprocessors.
"""
