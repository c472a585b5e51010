"""The notebooks read by screen readers too: headings, links, tables and images an author checks.

One job: :func:`readability_problems` lists what in a notebook's markdown a reader with a screen
reader or a keyboard would trip on (WCAG 2.1: 1.3.1 info and relationships, 2.4.4 link purpose,
2.4.6 headings, 1.1.1 text alternatives), as sentences naming the cell:

- **headings without gaps**: the notebook starts at ``#`` and a heading is at most one level
  deeper than the one before it (a screen reader's outline has no holes);
- **links that say where they go**: no "here", "link", "this", "click here" or a bare address as
  a link's text;
- **tables with headers**: a markdown table's header row names its columns (not empty cells);
- **images with text**: ``![...](...)`` has a description in its brackets.

Figures drawn by code are described by their cell's ``# Figure:`` lines
(:func:`coursetools.cells.figure_descriptions`; the book checks each one it draws).
"""

from __future__ import annotations

import re

from nbformat.notebooknode import NotebookNode

__all__ = ["readability_problems"]

_FENCE = re.compile(r"^(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+\S")
_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]*)[^)]*\)")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)]*)\)")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_VAGUE = {"here", "link", "this", "click here", "this link", "more", "read more", "source"}


def _prose_lines(source: str) -> list[str]:
    """The markdown's lines outside fenced code blocks and display maths."""
    lines, fenced, maths = [], False, False
    for line in source.splitlines():
        stripped = line.strip()
        if _FENCE.match(stripped):
            fenced = not fenced
            continue
        if stripped.startswith("$$") and not (stripped.endswith("$$") and len(stripped) > 2):
            maths = not maths
            continue
        if not fenced and not maths:
            lines.append(line)
    return lines


def readability_problems(nb: NotebookNode) -> list[str]:
    """What a screen reader or keyboard user would trip on in ``nb``'s markdown (module docstring)."""
    problems: list[str] = []
    previous = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        where = f"markdown cell {index + 1}"
        lines = _prose_lines(cell.source)
        for number, line in enumerate(lines):
            heading = _HEADING.match(line)
            if heading:
                level = len(heading.group(1))
                if previous == 0 and level != 1:
                    problems.append(f"{where}: the notebook's first heading is level {level}, not # (h1)")
                elif level > previous + 1 and previous:
                    problems.append(
                        f"{where}: heading {line.strip()[:60]!r} jumps from level {previous} to {level}"
                    )
                previous = level
            for text, target in _LINK.findall(line):
                words = re.sub(r"[`*_]", "", text).strip().lower()
                if words in _VAGUE or words == target.lower() or not words:
                    problems.append(f"{where}: a link's text {text!r} does not say where it goes ({target})")
            for alt, target in _IMAGE.findall(line):
                if not alt.strip():
                    problems.append(f"{where}: the image {target!r} has no description in its brackets")
            if _TABLE_RULE.match(line) and number > 0:
                header = [c.strip() for c in lines[number - 1].strip().strip("|").split("|")]
                if not all(header):
                    problems.append(f"{where}: a table's header row leaves a column unnamed")
    return problems
