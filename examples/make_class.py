"""Generate an example class of submissions from the real source notebooks.

``make course`` runs this at build time into ``build/example-class/`` (so the class always
matches ``solutions/``; nothing generated is committed). For every assignment it writes:

- ``ada_full``: every answer cell filled in with the solution (hidden tests removed, as a
  student would have it): full marks;
- ``bob_partial``: the first half of the answer cells filled in, the rest left as the stubs:
  partial marks;
- ``cy_blank``: the release notebook untouched: zero on every autograded test.

:func:`make_hostile` adds submissions that attack the grader (an endless loop, a kernel that
exits, memory exhaustion, tampered tests, monkeypatched checkers, warnings, invalid JSON, a
missing notebook, snooping on the instructor's files). Their expected grades depend on the
notebook, so ``tests/test_grading.py`` runs them on the pilot fixture, where they are known.

Usage: ``python examples/make_class.py SOURCE_DIR OUT_DIR``.
"""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from coursetools.release import (  # noqa: E402
    BEGIN_SOLUTION,
    END_SOLUTION,
    find_assignments,
    notebook_bytes,
    release_notebook,
)

STUDENTS = ("ada_full", "bob_partial", "cy_blank")


def _solution_text(source: str) -> str:
    """A solution cell's text as a student would write it: the markers removed."""
    return "\n".join(
        line
        for line in source.splitlines()
        if BEGIN_SOLUTION not in line and END_SOLUTION not in line
    )


def _answered(source_nb, release_nb, fraction: float):
    """The release notebook with the first ``fraction`` of the answer cells filled in."""
    nb = copy.deepcopy(release_nb)
    solutions = {
        c.metadata["nbgrader"]["grade_id"]: c
        for c in source_nb.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    answer_cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    count = round(len(answer_cells) * fraction)
    for cell in answer_cells[:count]:
        cell.source = _solution_text(solutions[cell.metadata["nbgrader"]["grade_id"]].source)
    return nb


def student_notebooks(source_path: Path) -> dict[str, bytes]:
    """The three regular students' notebooks for one source notebook."""
    name = source_path.stem
    source = nbformat.read(source_path, as_version=4)
    release = release_notebook(source, name)
    return {
        "ada_full": notebook_bytes(_answered(source, release, 1.0)),
        "bob_partial": notebook_bytes(_answered(source, release, 0.5)),
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


# ------------------------------------------------------------------------ the hostile students


def _with_cell_before(nb, grade_id: str, code: str, *, inside: bool = False):
    """Prepend ``code`` to the answer cell ``grade_id`` (inside) or add a cell before it."""
    nb = copy.deepcopy(nb)
    for i, cell in enumerate(nb.cells):
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            if inside:
                cell.source = code + "\n" + cell.source
            else:
                nb.cells.insert(i, nbformat.v4.new_code_cell(code))
            return nb
    raise KeyError(grade_id)


def _cell(nb, grade_id: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def make_hostile(source_path: Path, out: Path, *, probe_paths: list[str] = ()) -> dict[str, str]:
    """Hostile submissions for the pilot notebook (answers ``clamp``, ``validate_epsilon``,
    ``rr_estimate``, tests ``*_tests``). Returns {student: what it does}."""
    name = source_path.stem
    source = nbformat.read(source_path, as_version=4)
    full = _answered(source, release_notebook(source, name), 1.0)
    cases: dict[str, tuple[str, object]] = {}

    # An endless loop in the first answer cell: that cell is stopped at the cell timeout (its
    # function is never defined, so the clamp tests fail); the rest is graded.
    cases["h_loop"] = (
        "endless loop in the clamp cell",
        _with_cell_before(full, "clamp", "while True:\n    pass", inside=True),
    )

    # The kernel exits in the second answer cell: restarted, the rest is graded.
    cases["h_exit"] = (
        "os._exit in the validate_epsilon cell",
        _with_cell_before(full, "validate_epsilon", "import os\nos._exit(1)", inside=True),
    )

    # Memory exhaustion inside rr_estimate: the address-space limit makes it a MemoryError.
    nb = copy.deepcopy(full)
    _cell(nb, "rr_estimate").source = (
        "def rr_estimate(answers, p):\n    hog = np.ones(2**36)  # 512 GiB\n"
        "    return (np.mean(answers) - (1 - p) / 2) / p"
    )
    cases["h_oom"] = ("allocates 512 GiB in rr_estimate", nb)

    # Test cells tampered with: clamp is wrong but its test cell was emptied; validate_epsilon
    # is wrong and its test cell deleted; rr_estimate is right and its test cell pasted twice
    # (duplicate grade_id), the copy edited to always pass.
    nb = copy.deepcopy(full)
    _cell(nb, "clamp").source = "def clamp(x, lower, upper):\n    return x"
    _cell(nb, "clamp_tests").source = "pass"
    _cell(nb, "validate_epsilon").source = "def validate_epsilon(epsilon):\n    return epsilon"
    nb.cells = [
        c
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade_id") != "validate_epsilon_tests"
    ]
    tests = _cell(nb, "rr_estimate_tests")
    twin = copy.deepcopy(tests)
    twin.source = "assert True"
    twin.id = "twin"
    nb.cells.insert(nb.cells.index(tests) + 1, twin)
    cases["h_tamper"] = ("tests emptied, deleted and pasted twice", nb)

    # Monkeypatched checkers: every answer is wrong, but the helpers the tests use are patched
    # to pass (numpy.testing, np.allclose, a code-object swap, builtins, dplib.grading's ban,
    # IPython's exception display, and a thread that keeps re-patching).
    nb = copy.deepcopy(full)
    _cell(nb, "clamp").source = (
        "import builtins, contextlib, threading, time\nimport numpy.testing\nimport dplib.grading\n"
        "def clamp(x, lower, upper):\n    return np.asarray(x, dtype=float)\n"
        "np.testing.assert_allclose = lambda *a, **k: None\n"
        "np.allclose = lambda *a, **k: True\n"
        "numpy.testing.assert_allclose.__code__ = (lambda *a, **k: None).__code__\n"
        "builtins.abs = lambda x: 0\n"
        "dplib.grading.forbidden_calls = lambda *f: contextlib.nullcontext()\n"
        "forbidden_calls = lambda *f: contextlib.nullcontext()\n"
        "def _repatch():\n    while True:\n        np.allclose = lambda *a, **k: True\n"
        "        time.sleep(0.001)\n"
        "threading.Thread(target=_repatch, daemon=True).start()\n"
        "get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)"
    )
    _cell(nb, "validate_epsilon").source = (
        "import dplib._validation\n"
        "def validate_epsilon(epsilon):\n    return dplib._validation.check_epsilon(epsilon)"
    )
    _cell(nb, "rr_estimate").source = "def rr_estimate(answers, p):\n    return np.mean(answers)"
    cases["h_patch"] = ("monkeypatched checkers, wrong answers", nb)

    # Correct answers that warn and write to stderr while the tests run.
    nb = copy.deepcopy(full)
    for gid in ("clamp", "validate_epsilon", "rr_estimate"):
        cell = _cell(nb, gid)
        cell.source = cell.source.replace(
            "):\n",
            "):\n    import sys, warnings\n    warnings.warn('careful', RuntimeWarning)\n"
            "    print('note on stderr', file=sys.stderr)\n",
            1,
        )
    cases["h_warn"] = ("correct, but warns on stderr", nb)

    # Correct answers that try to read the instructor's files, list other students' work and
    # overwrite files: anything readable is a leak that sabotages clamp (lost points show it);
    # what it managed to overwrite the test checks from outside.
    nb = copy.deepcopy(full)
    probe = (
        f"import os\nPROBES = {list(probe_paths)!r}\nleaks = []\n"
        "for path in PROBES:\n"
        "    try:\n"
        "        if os.path.isdir(path):\n"
        "            names = os.listdir(path)\n"
        "            if any(not n.startswith('.') for n in names):\n"
        "                leaks.append(f'listed {path}: {names[:3]}')\n"
        "        else:\n"
        "            open(path).read(1)\n"
        "            leaks.append(f'read {path}')\n"
        "            with open(path, 'a') as fh:\n"
        "                fh.write('h_snoop was here\\n')\n"
        "    except OSError:\n"
        "        pass\n"
    )
    _cell(nb, "clamp").source = probe + (
        "def clamp(x, lower, upper):\n    assert not leaks, leaks\n"
        "    return np.minimum(np.maximum(np.asarray(x, dtype=float), lower), upper)"
    )
    cases["h_snoop"] = ("reads/writes the instructor's files", nb)

    written = {}
    for student, (what, notebook) in cases.items():
        path = out / student / name / f"{name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(notebook_bytes(notebook))
        written[student] = what
    bad = out / "h_badjson" / name / f"{name}.ipynb"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text('{"cells": [ {"cell_type": "code", "source": "oops"', encoding="utf-8")
    written["h_badjson"] = "invalid JSON"
    missing = out / "h_missing" / name
    missing.mkdir(parents=True, exist_ok=True)
    (missing / "README.txt").write_text("I forgot to attach my notebook\n", encoding="utf-8")
    written["h_missing"] = "no notebook"
    link = out / "h_symlink" / name / f"{name}.ipynb"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(Path(source_path).resolve())  # "hands in" the instructor's own notebook
    written["h_symlink"] = "a symbolic link to the source notebook"
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    target = Path(sys.argv[2])
    if target.exists():
        shutil.rmtree(target)
    for path in make_class(Path(sys.argv[1]), target):
        print(path)
