"""Where the course's folders are: the one place that computes the repository's root.

Every default path of the command line, the book, the gradebook and the grader's hide list is
named here, relative to :data:`ROOT` (the checkout ``coursetools`` is imported from). Shipped code
never reads ``tests/``: the test suite's fixtures are the tests' own.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ROOT",
    "BUILD",
    "SOLUTIONS",
    "NOTEBOOKS",
    "DEPLOY",
    "NBGRADER_CONFIG",
    "BOOK_OUT",
    "BOOK_CACHE",
]

#: The repository: the folder that holds ``coursetools/``, ``dplib/``, ``solutions/``.
ROOT = Path(__file__).resolve().parents[1]
#: Everything the commands write (grades, pages, the example class, the queue).
BUILD = ROOT / "build"
#: The notebooks with their solutions and hidden tests (the only place notebooks are edited).
SOLUTIONS = ROOT / "solutions"
#: The release students get, generated from :data:`SOLUTIONS`.
NOTEBOOKS = ROOT / "notebooks"
#: Deployment settings (the hand-in service's, the LMS mapping, JupyterHub's).
DEPLOY = ROOT / "deploy"
#: nbgrader's configuration of the course (course id, exchange, gradebook).
NBGRADER_CONFIG = ROOT / "nbgrader_config.py"
#: The book's static site and its cache of executed chapters.
BOOK_OUT = ROOT / "_build" / "html"
BOOK_CACHE = BUILD / "book" / "cache"
