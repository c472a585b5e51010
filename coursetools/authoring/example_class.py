"""The example class ``make course`` grades: three students built from the real source notebooks.

One job: for every assignment, the notebooks of

- ``ada_full``: every answer cell filled in with the solution (solution markers removed, hidden
  tests as the release has them, as a student would hand it in): full marks;
- ``bob_partial``: the first half of the answer cells filled in, the rest left as the stubs:
  partial marks;
- ``cy_blank``: the release notebook untouched: zero on every autograded test.

``make course`` writes them into ``build/example-class/`` at build time (so the class always
matches ``solutions/``), the book executes ``ada_full`` as each chapter's run, and the tests use
them as submissions. The hostile students that attack the grader are in
``examples/make_class.py`` (test material, beside its command line).
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from coursetools import cells
from coursetools.authoring.release import (
    find_assignments,
    notebook_bytes,
    release_notebook,
)
from coursetools.cells import BEGIN_SOLUTION, END_SOLUTION

__all__ = ["STUDENTS", "answered", "make_class", "solution_text", "student_notebooks"]

STUDENTS = ("ada_full", "bob_partial", "cy_blank")


def solution_text(source: str) -> str:
    """A solution cell's text as a student would write it: the markers removed."""
    return "\n".join(
        line
        for line in source.splitlines()
        if BEGIN_SOLUTION not in line and END_SOLUTION not in line
    )


def answered(source_nb, release_nb, fraction: float):
    """The release notebook with the first ``fraction`` of the answer cells filled in."""
    nb = copy.deepcopy(release_nb)
    solutions = cells.answers_by_id(source_nb.cells)
    answer_cells = [c for c in nb.cells if cells.is_answer(c)]
    count = round(len(answer_cells) * fraction)
    for cell in answer_cells[:count]:
        cell.source = solution_text(solutions[cells.grade_id(cell)].source)
    return nb


def student_notebooks(source_path: Path) -> dict[str, bytes]:
    """The three regular students' notebooks for one source notebook."""
    name = source_path.stem
    source = nbformat.read(source_path, as_version=4)
    release = release_notebook(source, name)
    return {
        "ada_full": notebook_bytes(answered(source, release, 1.0)),
        "bob_partial": notebook_bytes(answered(source, release, 0.5)),
        "cy_blank": notebook_bytes(release),
    }


def make_class(source_root: Path, out: Path, assignments: list[str] | None = None) -> list[Path]:
    """Write ``out/<student>/<assignment>/<assignment>.ipynb`` for the regular students."""
    source_root, out = Path(source_root), Path(out)
    written = []
    for name in assignments or find_assignments(source_root):
        for student, data in student_notebooks(source_root / name / f"{name}.ipynb").items():
            path = out / student / name / f"{name}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            written.append(path)
    return written
