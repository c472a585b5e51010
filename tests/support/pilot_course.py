"""The pilot assignment as a course directory, and its solution's answers.

Shared by the tests that drive nbgrader's clients (gradebook, JupyterHub, real browser): each
builds a course directory like this repository's around ``tests/fixtures/solutions/pilot``.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
PILOT_ROOT = ROOT / "tests" / "fixtures" / "solutions"
PILOT = PILOT_ROOT / "pilot"
PILOT_NOTEBOOK = PILOT / "pilot.ipynb"
#: The grading options of the hostile-class tests: short cell limits, the pilot is quick.
GRADE_OPTIONS = dict(cell_timeout=8.0, notebook_timeout=180.0)


def pilot_course(root: Path) -> Path:
    """``root`` made a course directory: the pilot in solutions/, its release, nbgrader_config.py."""
    from coursetools.authoring.release import release_all

    shutil.copytree(PILOT, root / "solutions" / "pilot")
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    release_all(root / "solutions", root / "notebooks")
    return root


def fill_answers(nb, *, skip: tuple[str, ...] = ()):
    """``nb`` (a release notebook) with the solution's answer in every answer cell but ``skip``."""
    source = nbformat.read(PILOT / "pilot.ipynb", as_version=4)
    answers = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers and gid not in skip and cell.metadata["nbgrader"].get("solution"):
            cell.source = answers[gid]
    return nb


@functools.cache
def hostile_suite():
    """examples/make_class.py (the regular students and :func:`make_hostile`'s attacks on the
    grader): the tests' one loader of it (examples/ is a folder of scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_class", ROOT / "examples" / "make_class.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hostile_notebook(tmp_path: Path, name: str):
    """The pilot as the hostile student ``name`` of examples/make_class.py's adversarial suite
    hands it in (``h_forge``, ``h_patch``, ...), read back from ``tmp_path/hostile``."""
    hostile_suite().make_hostile(PILOT / "pilot.ipynb", tmp_path / "hostile")
    return nbformat.read(tmp_path / "hostile" / name / "pilot" / "pilot.ipynb", as_version=4)
