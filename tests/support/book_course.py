"""A tiny course for the book's tests: the pilot fixture and a chapter with a figure, maths and a link.

Built by ``tests/coursetools/book/test_build.py`` (the site, read back as a browser would) and by
``tests/browser/test_book_page.py`` (the same page in Chromium).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
PILOT = ROOT / "tests" / "fixtures" / "solutions" / "pilot"
MARKERS = (
    "BEGIN SOLUTION",
    "END SOLUTION",
    "BEGIN HIDDEN TESTS",
    "END HIDDEN TESTS",
    "BEGIN MARK SCHEME",
    "END MARK SCHEME",
    "YOUR CODE HERE",
    "raise NotImplementedError",
    "YOUR ANSWER HERE",
)
MARK_SCHEME_TEXT = "Award one point for naming post-processing"
MODEL_ANSWER_TEXT = "Post-processing cannot weaken the guarantee"


def png(width: int = 3, height: int = 2) -> bytes:
    """A valid, tiny RGB PNG (for a markdown image the book must copy)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def notebook_cell(kind: str, source: str, **nbgrader) -> nbformat.NotebookNode:
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    cell = make(source)
    if nbgrader:
        cell.metadata["nbgrader"] = {
            "grade": False,
            "locked": False,
            "schema_version": 3,
            "solution": False,
            "task": False,
            **nbgrader,
        }
    return cell


def figures_chapter() -> nbformat.NotebookNode:
    """A chapter with what the pilot lacks: a figure, display maths, links, an image, a scheme."""
    cells = [
        notebook_cell(
            "markdown",
            "# 01 · Figures and maths\n\nA chapter that draws.\n\n**Learning goals**\n\n"
            "1. plot the privacy loss $\\ln(p/q)$ against $\\varepsilon$;\n"
            "2. read [the pilot](../pilot/pilot.ipynb#Exercise-1:-clamp) first.\n\n"
            "Then the rest.",
        ),
        notebook_cell(
            "code",
            "%matplotlib inline\nimport matplotlib.pyplot as plt\nimport numpy as np\n"
            "print('\\x1b[31mcoloured\\x1b[0m output')",
            grade_id="setup",
            locked=True,
        ),
        notebook_cell(
            "markdown",
            "## The definition\n\n"
            "$$\\Pr[M(D) \\in S] \\le e^{\\varepsilon} \\Pr[M(D') \\in S]$$\n\n"
            "A diagram: ![a red square](diagram.png). The [grading guide](../docs/grading.md).",
        ),
        notebook_cell(
            "code",
            "# Figure: the loss against the step, rising from 0 to 4 over steps 0 to 2.\n"
            "fig, ax = plt.subplots(figsize=(3, 2))\nax.plot([0, 1, 2], [0, 1, 4])\n"
            "ax.set_title('loss')\nplt.show()",
        ),
        notebook_cell("markdown", "## Exercise: double it\n\nWrite `double(x)`."),
        notebook_cell(
            "code",
            "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x  # the solution line\n"
            "    ### END SOLUTION",
            grade_id="double",
            solution=True,
        ),
        notebook_cell(
            "code",
            "assert double(2) == 4\nprint('visible test passed')\n### BEGIN HIDDEN TESTS\n"
            "assert double(-7.25) == -14.5, 'hidden check of negative inputs'\n"
            "### END HIDDEN TESTS",
            grade_id="double_tests",
            grade=True,
            locked=True,
            points=1,
        ),
        notebook_cell("markdown", "## Written\n\nDoes rounding a private count weaken it?"),
        notebook_cell(
            "markdown",
            "### BEGIN SOLUTION\n" + MODEL_ANSWER_TEXT + ": rounding is a function of the output.\n"
            "=== BEGIN MARK SCHEME ===\n" + MARK_SCHEME_TEXT + ".\n=== END MARK SCHEME ===\n"
            "### END SOLUTION",
            grade_id="rounding",
            solution=True,
            grade=True,
            points=1,
        ),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def make_course(root: Path) -> Path:
    """``root/solutions``: the pilot and the figures chapter; ``root`` also has README and docs."""
    import shutil

    source = root / "solutions"
    shutil.copytree(PILOT, source / "pilot")
    folder = source / "01_figures"
    folder.mkdir(parents=True)
    nbformat.write(figures_chapter(), folder / "01_figures.ipynb")
    (folder / "diagram.png").write_bytes(png())
    shutil.copy(ROOT / "README.md", root / "README.md")
    shutil.copytree(ROOT / "docs", root / "docs")
    return source
