"""The probe harness itself (``tests/support/notebook_probes.py``): a batch grades like separate
submissions, and the trimmed notebook the release's Validator runs keeps every cell a test needs.

A batch (:meth:`Probe.grade_segments`) grades several submissions in one kernel. It must give each
the verdicts a grading of its own gives, and one segment's damage to the kernel's state must not
reach the next: the setup cell runs again at the start of each. Checked on the pilot (three
exercises, a grading under a second).

:func:`without_figures` drops the code cells no answer or test cell needs. The Validator's run of
the filled release (``tests/coursetools/authoring/test_release.py``) relies on it keeping every
test cell and everything a test reads, however far back it was bound.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from notebook_probes import Probe, _concatenated, _segment, _unsegmented, without_figures

ROOT = Path(__file__).resolve().parents[2]
PILOT = ROOT / "tests" / "fixtures" / "solutions" / "pilot" / "pilot.ipynb"


class PilotProbe(Probe):
    @property
    def source(self) -> Path:
        return PILOT


EXERCISES = {
    "clamp": "clamp_tests",
    "validate_epsilon": "validate_epsilon_tests",
    "rr_estimate": "rr_estimate_tests",
}
WRONG_CLAMP = "def clamp(x, lower, upper):\n    return np.maximum(np.asarray(x, dtype=float), lower)"  # no upper
# Breaks the kernel for whatever runs after it: numpy's name rebound, and the module's clip replaced.
SABOTAGE = "np.clip = lambda *a, **k: 0.0\nnp = None\ndef clamp(x, lower, upper):\n    return x"
RIGHT_CLAMP = "def clamp(x, lower, upper):\n    return np.minimum(np.maximum(np.asarray(x, dtype=float), lower), upper)"


def _probe() -> PilotProbe:
    return PilotProbe(
        "pilot",
        EXERCISES,
        wrong={g: [("x", "pass")] * 3 for g in EXERCISES},
        alternatives={g: ["pass", "pass"] for g in EXERCISES},
    )


@pytest.mark.slow
def test_a_batch_gives_each_segment_the_verdicts_of_its_own_grading():
    probe = _probe()
    segments = [
        ({"clamp": WRONG_CLAMP}, frozenset({"clamp"})),
        ({}, None),  # the solution, every exercise graded
        ({"clamp": RIGHT_CLAMP}, frozenset({"clamp", "rr_estimate"})),
    ]
    together = probe.grade_segments(segments)
    alone = [probe.grade(answers, only) for answers, only in segments]
    assert together == alone
    assert together[0] == {"clamp_tests": "failed"}
    assert together[1] == dict.fromkeys(EXERCISES.values(), "passed")
    assert together[2] == {"clamp_tests": "passed", "rr_estimate_tests": "passed"}


@pytest.mark.slow
def test_a_segment_that_wrecks_the_kernel_leaves_the_next_one_whole():
    # Without the setup cell run again, np would be None in the next segment and every test
    # there would fail; with numpy's clip patched, a solution using np.clip would fail too.
    probe = _probe()
    verdicts = probe.grade_segments([({"clamp": SABOTAGE}, None), ({"clamp": RIGHT_CLAMP}, None)])
    assert verdicts[0]["clamp_tests"] == "failed"
    assert verdicts[1] == dict.fromkeys(EXERCISES.values(), "passed")


def test_segments_get_their_own_ids_and_come_apart_again():
    nb = nbformat.read(PILOT, as_version=4)
    batch = _concatenated([_segment(nb, k) for k in range(3)])
    gids = [
        c.metadata.get("nbgrader", {}).get("grade_id") for c in batch.cells if c.cell_type == "code"
    ]
    assert len(set(gids)) == len(gids) == 3 * 7
    assert {_unsegmented(g) for g in gids} == {(g, k) for k in range(3) for g in gids[:7]}
    assert sum(c.cell_type == "markdown" for c in batch.cells) == sum(
        c.cell_type == "markdown" for c in nb.cells
    )  # prose once, in the first segment
    with pytest.raises(AssertionError, match="cell ids"):
        _concatenated([nb, nb])  # the same ids twice


def _code(source: str, **nbgrader):
    cell = nbformat.v4.new_code_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = {"schema_version": 3, **nbgrader}
    return cell


def _kept(nb) -> list[str]:
    return [c.source.splitlines()[0] for c in without_figures(nb).cells if c.cell_type == "code"]


def test_without_figures_keeps_what_a_test_reads_and_drops_the_rest():
    nb = nbformat.v4.new_notebook(
        cells=[
            _code("import numpy as np", grade_id="setup", locked=True, grade=False, solution=False),
            _code("# data\nlimits = (0.0, 1.0)"),  # read by the test, through a later cell
            _code("# derived\nlow, high = limits"),  # read by the test
            _code("# figure\nfig, ax = plt.subplots()\nrng = np.random.default_rng(1)"),
            _code("# shadowed\nscale = 2.0"),  # rebound by a kept cell before any read
            _code("def f(x, rng):\n    return x * rng", grade_id="f", solution=True, grade=False),
            _code(
                "# figure again, read-only\nax.plot(low)",
                grade_id="fig2",
                locked=True,
                grade=False,
                solution=False,
            ),
            _code("# helper\nscale = 3.0"),
            _code(
                "assert f(low, 1) == 0.0\nassert np.isfinite(high * scale)",
                grade_id="f_tests",
                grade=True,
                solution=False,
                locked=True,
                points=1,
            ),
        ]
    )
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("prose"))
    assert _kept(nb) == [
        "import numpy as np",
        "# data",
        "# derived",
        "def f(x, rng):",  # its parameter rng reads no global: the figure's rng is not needed
        "# helper",
        "assert f(low, 1) == 0.0",
    ]
    assert without_figures(nb).cells[1].cell_type == "markdown"


def test_without_figures_keeps_a_cell_that_binds_in_a_loop_or_branch_it_may_not_run():
    # A binding inside a loop or an if does not surely happen: the earlier binding stays needed.
    nb = nbformat.v4.new_notebook(
        cells=[
            _code("# first\nk = 1"),
            _code("# loop\nfor k in []:\n    pass"),
            _code("assert k == 1", grade_id="t", grade=True, solution=False, locked=True, points=1),
        ]
    )
    assert _kept(nb) == ["# first", "# loop", "assert k == 1"]
