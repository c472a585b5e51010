"""A student in JupyterLab: open the release notebook, answer, save, press Validate, read the verdict.

The other answers of the pilot are filled in on disk; the browser types the first one into its
cell (CodeMirror), saves, and presses nbgrader's *Validate* button: a right answer gives
nbgrader's success message, a wrong one names the visible test that failed.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest
from conftest import TOKEN, fill_answers

RIGHT = "def clamp(x, lower, upper):\n    return np.clip(np.asarray(x, dtype=float), lower, upper)"
WRONG = "def clamp(x, lower, upper):\n    return x"


def _prepare(course, folder: str) -> str:
    """A copy of the release with every answer but ``clamp`` filled in; its path in the lab."""
    nb = fill_answers(
        nbformat.read(course / "notebooks" / "pilot" / "pilot.ipynb", as_version=4), skip=("clamp",)
    )
    target = course / folder / "pilot"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    nbformat.write(nb, str(target / "pilot.ipynb"))
    return f"{folder}/pilot/pilot.ipynb"


def _answer_and_validate(page, lab, path: str, answer: str) -> str:
    page.goto(f"{lab}/lab/tree/{path}?reset&token={TOKEN}")  # reset: only this notebook open
    editor = page.locator(".jp-CodeCell .cm-content", has_text="def clamp")
    editor.wait_for(timeout=120_000)
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(answer)
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    # JupyterLab compares modification times to the second: a notebook written on disk just
    # before it was opened can look "changed on disk" when saved; what was typed wins.
    overwrite = page.get_by_role("button", name="Overwrite")
    try:
        overwrite.click(timeout=3_000)
    except Exception:  # noqa: BLE001 - no such dialog: the save went through
        pass
    page.locator(".jp-Notebook-toolbar, .jp-Toolbar").get_by_text("Validate", exact=True).click()
    dialog = page.locator(".jp-Dialog-content")
    dialog.wait_for(timeout=180_000)
    return dialog.inner_text()


@pytest.mark.parametrize("answer, expected, absent", [
    (RIGHT, "Success! Your notebook passes all the tests.", "failed"),
    (WRONG, "assert clamp(5.0, 0.0, 1.0) == 1.0", "Success"),
])
def test_validate_says_whether_the_answer_passes(page, lab, course, answer, expected, absent):
    folder = "student_right" if answer == RIGHT else "student_wrong"
    text = _answer_and_validate(page, lab, _prepare(course, folder), answer)
    assert expected in text, text[:1000]
    assert absent not in text, text[:1000]
    saved = nbformat.read(course / folder / "pilot" / "pilot.ipynb", as_version=4)
    assert any(c.source == answer for c in saved.cells)  # what was typed is what was saved
