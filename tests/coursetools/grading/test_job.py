"""Tests of coursetools.grading.job: the grader's data types and the one sandbox-mode resolver."""

from __future__ import annotations

import dataclasses
import pickle

import nbformat
import pytest

from coursetools.grading.job import (
    Job,
    Options,
    Result,
    empty_result,
    graded_sandbox_mode,
    resolve_sandbox,
    sandbox_fields,
    sandbox_summary,
)
from coursetools.grading.sandboxed import sandbox


def _source() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    answer = nbformat.v4.new_code_cell("x = 1")
    answer.metadata["nbgrader"] = {"grade_id": "a", "solution": True, "grade": False}
    test = nbformat.v4.new_code_cell("assert x == 1")
    test.metadata["nbgrader"] = {
        "grade_id": "a_tests",
        "grade": True,
        "points": 3,
        "solution": False,
    }
    manual = nbformat.v4.new_markdown_cell("why?")
    manual.metadata["nbgrader"] = {"grade_id": "w", "grade": True, "solution": True, "points": 2}
    nb.cells = [answer, test, manual]
    return nb


@pytest.mark.parametrize("mode", ["bwrap", "setuid", "rlimit"])
def test_a_mode_asked_for_is_the_mode_and_says_it_was_asked(mode):
    assert resolve_sandbox(Options(sandbox=mode)) == (mode, f"asked for (--sandbox {mode})")


def test_auto_is_the_machine_probe_and_its_reason():
    assert resolve_sandbox(Options()) == sandbox.detect()
    assert resolve_sandbox(Options())[0] in sandbox.MODES


def test_a_result_tells_its_mode_and_an_earlier_versions_result_by_its_first_word():
    assert graded_sandbox_mode({"sandbox_mode": "setuid"}) == "setuid"
    assert graded_sandbox_mode({"sandbox": "setuid (cgroup) (weaker than bwrap: x)"}) == "setuid"
    assert graded_sandbox_mode({}) == "?"
    # a value outside the modes is not trusted as one
    assert graded_sandbox_mode({"sandbox_mode": "<script>", "sandbox": ""}) == "?"


def test_the_sandbox_fields_name_what_is_off_and_why_only_for_a_weaker_mode():
    assert sandbox_fields("bwrap", "bundled") == {"sandbox_mode": "bwrap", "sandbox_off": []}
    weaker = sandbox_fields("rlimit", "not root")
    assert weaker["sandbox_why"] == "not root" and weaker["sandbox_off"] == sandbox.guarantees_off(
        "rlimit"
    )
    assert weaker["sandbox_off"]  # rlimit lacks guarantees, and says which
    assert sandbox_summary("bwrap", " + cgroup") == "bwrap + cgroup"
    assert sandbox_summary("rlimit", "").startswith("rlimit (weaker than bwrap: ")


def test_an_empty_result_scores_zero_on_every_test_and_keeps_the_maxima():
    job = Job("ada", "a1", "", "", None)
    result = empty_result(job, _source(), ["no notebook handed in"], "rlimit", "not root")
    assert isinstance(result, Result)
    assert result["score"] == 0.0 and result["max_score"] == 3.0 and result["manual_max"] == 2.0
    assert [
        (c["grade_id"], c["points"], c["max_points"], c["status"]) for c in result["cells"]
    ] == [("a_tests", 0.0, 3.0, "not run")]
    assert result["problems"] == ["no notebook handed in"]
    assert result["sandbox_why"] == "not root"


def test_jobs_and_results_cross_a_process_border_intact():
    job = Job("ada", "a1", "{}", "{}", b"x", files={"d.csv": b"1"}, options=Options(cpus=0.5))
    assert pickle.loads(pickle.dumps(job)) == job
    result = empty_result(job, _source(), [], "bwrap")
    assert pickle.loads(pickle.dumps(result)) == result
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.options.cpus = 2.0
