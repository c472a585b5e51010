"""nbgrader's cell kinds, read one way everywhere (grader, authoring, book, examples).

One job: what nbgrader's metadata says a cell is. ``cell.metadata.nbgrader`` is a dict whose
``grade`` (graded), ``solution`` (an answer the student writes), ``task`` (graded by hand, no
answer cell), ``locked`` (read-only), ``grade_id`` and ``points`` keys nbgrader's own
``nbgrader.utils`` reads the same way (``is_grade``, ``is_solution``, ``is_task``, ``is_locked``);
these functions also accept a missing or malformed entry (a student's notebook may hold
anything), which then means "no kind". A leaf every product may import (like
:mod:`coursetools.rendering`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = [
    "BEGIN_HIDDEN",
    "BEGIN_SOLUTION",
    "END_HIDDEN",
    "END_SOLUTION",
    "FIGURE_PREFIX",
    "REGION_WORDS",
    "STUB_TEXTS",
    "answers_by_id",
    "figure_descriptions",
    "grade_id",
    "is_answer",
    "is_manual_cell",
    "is_test_cell",
    "max_points",
    "nbgrader",
]

# nbgrader's marker strings, one spelling everywhere: the regions a release removes (solutions)
# or the grader alone runs (hidden tests), and what no page of the book may show.
BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
#: The region words, with or without the ``###`` (nbgrader's mark scheme's too).
REGION_WORDS = (
    "BEGIN SOLUTION",
    "END SOLUTION",
    "BEGIN HIDDEN TESTS",
    "END HIDDEN TESTS",
    "BEGIN MARK SCHEME",
    "END MARK SCHEME",
)
#: The words of a release's stub (nbgrader's ``code_stub`` and ``text_stub``).
STUB_TEXTS = ("YOUR CODE HERE", "YOUR ANSWER HERE")


def nbgrader(cell: Mapping) -> dict:
    """The cell's nbgrader metadata, ``{}`` when it has none (or has something else there)."""
    meta = cell.get("metadata", {}).get("nbgrader") if isinstance(cell.get("metadata"), Mapping) else None
    return meta if isinstance(meta, dict) else {}


def grade_id(cell: Mapping) -> str | None:
    """The cell's ``grade_id``, or None."""
    gid = nbgrader(cell).get("grade_id")
    return gid if isinstance(gid, str) and gid else None


def is_answer(cell: Mapping) -> bool:
    """A cell the student writes in (nbgrader's ``solution``)."""
    return bool(nbgrader(cell).get("solution"))


def is_test_cell(cell: Mapping) -> bool:
    """An autograder test cell: a graded code cell that is not an answer."""
    meta = nbgrader(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def is_manual_cell(cell: Mapping) -> bool:
    """A cell graded by hand: a graded answer (code or markdown) or a task."""
    meta = nbgrader(cell)
    return bool(meta.get("task")) or (bool(meta.get("grade")) and bool(meta.get("solution")))


def max_points(source) -> tuple[float, float]:
    """(autograded points, points graded by hand) of a source notebook."""
    auto = sum(float(nbgrader(c).get("points", 0)) for c in source.cells if is_test_cell(c))
    manual = sum(float(nbgrader(c).get("points", 0)) for c in source.cells if is_manual_cell(c))
    return auto, manual


def answers_by_id(cells: Iterable[Mapping]) -> dict[str, Mapping]:
    """Each answer cell by its ``grade_id`` (answer cells without one are left out)."""
    return {gid: c for c in cells if is_answer(c) and (gid := grade_id(c)) is not None}


#: The caption line an author writes in a code cell that draws a figure, one per figure, in the
#: order the cell draws them: what is plotted and what the reader should see. The book and the
#: feedback pages use it as the figure's alt text; JupyterLab shows it above the figure.
FIGURE_PREFIX = "# Figure:"


def figure_descriptions(source: str) -> list[str]:
    """The author's description of each figure a code cell draws, from its ``# Figure:`` lines.

    A description may continue on the following comment lines indented further
    (``#   ...``). Returns them in order (empty if the cell has none).

    Examples
    --------
    >>> figure_descriptions("# Figure: accuracy rises from 0.71 at eps 0.25\\n#   to 0.96 at eps 8.\\nplt.plot(x, y)")
    ['accuracy rises from 0.71 at eps 0.25 to 0.96 at eps 8.']
    """
    found: list[str] = []
    current: list[str] | None = None
    for line in str(source).splitlines():
        stripped = line.strip()
        if stripped.startswith(FIGURE_PREFIX):
            current = [stripped[len(FIGURE_PREFIX):].strip()]
            found.append("")
        elif current is not None and stripped.startswith("#  "):
            current.append(stripped[1:].strip())
        else:
            current = None
        if current is not None:
            found[-1] = " ".join(part for part in current if part)
    return [d for d in found if d]
