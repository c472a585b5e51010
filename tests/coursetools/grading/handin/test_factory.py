"""The hand-in service assembled in one place (coursetools/grading/handin/factory.py).

The command line only parses and calls :func:`open_service`: the service it gets hides the
exchange, its state and its outputs from the kernel, carries the hand-in wall, refuses bad rules
before anything starts, and records each graded submission through the class pipeline.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from pilot_course import PILOT

from coursetools.grading.handin.factory import open_service
from coursetools.grading.job import Job, Options


def _open(tmp_path: Path, settings_text: str = "[default]\nattempts = 3\n", **kw):
    settings = tmp_path / "handin.toml"
    settings.write_text(settings_text)
    return open_service(
        source=PILOT.parent,
        state=tmp_path / "state",
        grades=tmp_path / "out" / "grades.csv",
        settings=settings,
        options=Options(hide=("/somewhere/hidden",)),
        handin_wall=120.0,
        exchange=tmp_path / "exchange",
        course_id="dp",
        record_gradebook=False,
        check_owner=False,
        workers=1,
        log=lambda line: None,
        **kw,
    )


def test_the_service_hides_what_it_writes_and_carries_the_wall(tmp_path):
    with _open(tmp_path) as service:
        options = service.config.options
        hidden = set(options.hide)
        assert {
            "/somewhere/hidden",
            str((tmp_path / "exchange").resolve()),
            str((tmp_path / "state").resolve()),
            str((tmp_path / "out").resolve()),
        } <= hidden
        assert options.notebook_wall == 120.0
        assert service.config.policies["pilot"].attempts == 3
        assert service.config.inbound == tmp_path / "exchange" / "dp" / "inbound"


def test_bad_rules_are_refused_before_anything_starts(tmp_path):
    with pytest.raises(ValueError, match="attempts must be an integer >= 0"):
        with _open(tmp_path, "[default]\nattempts = -1\n"):
            pass
    assert not (tmp_path / "state").exists()  # no queue made


def test_a_graded_submission_is_recorded_through_the_class_pipeline(tmp_path):
    result = {
        "student": "ada",
        "assignment": "pilot",
        "score": 5.0,
        "max_score": 7.0,
        "manual_max": 1,
        "cells": [],
        "feedback": [],
        "problems": [],
        "notes": [],
        "seconds": 0.1,
    }
    with _open(tmp_path) as service:
        service.on_graded([Job("ada", "pilot", "", "", None, "pilot.ipynb")], [result])
    grades = tmp_path / "out" / "grades.csv"
    rows = list(csv.DictReader(grades.open()))
    assert [(r["student"], float(r["score"])) for r in rows] == [("ada", 5.0)]
    assert json.loads(grades.with_suffix(".json").read_text())[0]["student"] == "ada"
