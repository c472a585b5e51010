"""A figure's alt text is its author's description, in the book and on the feedback pages."""

from __future__ import annotations

import base64
import copy
import re

import nbformat
from pilot_course import PILOT

from coursetools.authoring.release import release_notebook
from coursetools.book import pages as site
from coursetools.grading.classroom.feedback import render_html
from coursetools.grading.grade import merge, score

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32
OUTPUT = {"output_type": "display_data", "data": {"image/png": base64.b64encode(PNG).decode()}, "metadata": {}}


def test_the_book_uses_the_cells_descriptions_and_reports_a_figure_without_one(tmp_path):
    figures = site.FigureWriter(tmp_path, "ch")
    described = site.outputs_html([OUTPUT, OUTPUT], figures, "# Figure: first, rising.\n# Figure: second, flat.\n")
    assert re.findall(r'alt="([^"]*)"', described) == ["first, rising.", "second, flat."]
    assert figures.undescribed == []
    bare = site.outputs_html([OUTPUT], figures, "plt.plot(x)")
    assert "no description" in bare and figures.undescribed == ["ch: figure 3"]
    quoted = site.outputs_html([OUTPUT], figures, '# Figure: a "quoted" <b>word</b>\n')
    assert 'alt="a &quot;quoted&quot; &lt;b&gt;word&lt;/b&gt;"' in quoted
    table = {"output_type": "display_data", "data": {"text/markdown": "| a |\n|---|\n| 1 |"}, "metadata": {}}
    mixed = site.outputs_html([table, OUTPUT], figures, "# Figure: the figure after a table.\n")
    assert 'alt="the figure after a table."' in mixed  # a table shown first takes no description


def test_a_feedback_figure_takes_the_authors_description_never_the_students():
    source = nbformat.read(PILOT / "pilot.ipynb", as_version=4)
    plot = nbformat.v4.new_code_cell("# Figure: the author's words.\nplot()")
    plot.metadata["nbgrader"] = {"locked": True, "grade": False, "solution": False, "grade_id": "plot_cell",
                                 "schema_version": 3}
    source.cells.insert(1, plot)
    release = release_notebook(copy.deepcopy(source), "pilot")
    student = copy.deepcopy(release)
    for cell in student.cells:  # a student rewrites the read-only cell's caption: it is put back
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "plot_cell":
            cell.source = "# Figure: <b>the student's words</b>\nplot()"
    student.cells.append(nbformat.v4.new_code_cell("# Figure: the student's own cell\nplot()"))
    nb, _ = merge(source, release, student)
    _, feedback = score(nb, None, release)
    for entry in feedback:
        if entry.get("type") == "code":
            entry["outputs"] = [{"kind": "image", "mime": "image/png", "data": base64.b64encode(PNG).decode()}]
    page = render_html({"student": "ada", "assignment": "pilot", "score": 0, "max_score": 7, "cells": [],
                        "problems": [], "notes": [], "feedback": feedback})
    alts = re.findall(r"alt='([^']*)'", page)
    assert "the author&#x27;s words." in alts or "the author's words." in [a.replace("&#x27;", "'") for a in alts]
    assert not any("student" in a for a in alts if "your notebook" not in a)
    assert alts.count("a figure your notebook drew") >= 1  # the student's own cell: a neutral alt
