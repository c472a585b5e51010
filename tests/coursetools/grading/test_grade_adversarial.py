"""Adversarial grading, second round: one submission never harms the grader, and the
feedback holds only the grader's and the instructor's words.

Each case is a hostile submission graded through the real pipeline (sandboxed kernel, trusted
runner, collection, outputs), next to an honest one, with an oracle a working attack would break:

=================  ==========================================================================
attack             what must hold
=================  ==========================================================================
reply flood        the kernel answers every bridge request with 80 MB of ``[{},{},...]``
                   (the review measured the grader at 2.1 GB, the runner at 2.0 GB, 240 s):
                   those calls score 0 with the grader's reason, the honest student graded
                   after it in the same process gets 7/7, the grader's and the runner's peak
                   RSS stay under 600 MiB, and once the submission's replies pass the byte
                   budget further calls fail at once, with the budget as the reason
200,000 cells      a 10 MiB notebook of markdown cells: refused at collection (0, the reason),
                   never run, its feedback page no bigger than an empty one; the honest
                   student beside it gets 7/7
class names        an answer returns an object whose class is named with a canary, raises an
                   exception class so named, returns the canary as a string that the test's
                   own message formats (directly or derived): the canary is in no feedback
                   page, details JSON, CSV or terminal line, and every test scores 0
``dplib.__main__``  an exception class whose module claims to be ``dplib.__main__``: the test
                   scores 0, reported by its builtin ancestor (that nothing is imported is
                   shown in ``tests/coursetools/grading/trusted/test_runner.py`` with an import spy and a canary module)
=================  ==========================================================================
"""

from __future__ import annotations

import csv
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile

import nbformat
import numpy as np
import pytest
from pilot_course import GRADE_OPTIONS as OPTIONS
from pilot_course import PILOT_NOTEBOOK as PILOT
from pilot_course import PILOT_ROOT
from pilot_course import hostile_suite as _make_class_module

from coursetools import cli
from coursetools.authoring.release import notebook_bytes, release_notebook
from coursetools.grading import bridge
from coursetools.grading.classroom import collect, feedback, pipeline
from coursetools.grading.grade import TrustedRunner, grade_job
from coursetools.grading.job import Job, Options
from coursetools.grading.sandboxed import limits
from coursetools.grading.sandboxed.kernel import _unreadable
from coursetools.grading.trusted import forkserver
from coursetools.grading.trusted import runner as trusted

MiB = 1024**2
MEMORY_BOUND_KIB = 600 * 1024  # grader or runner, measured on the flood
CANARY_PIECES = ("EXFIL", "TRATED", "-26")  # joined only in the kernel: never in a source line
CANARY = "".join(CANARY_PIECES)

# A cell that makes the kernel's bridge server answer every request with a well-formed reply whose
# value is 80 MB of empty dicts: json.loads would turn it into ~2 GB of Python objects in whoever
# parses it (the grader, then the runner it forwards the reply to).
FLOOD_CELL = (
    "import sys\n"
    "_flood = '{\"ok\":true,\"value\":[' + '{},' * 26_666_660 + '{}]}'\n"
    "type(sys.modules['_coursetools_bridge'].server).serve = "
    "lambda self, request: setattr(self, 'last', _flood)\n"
)


def _pilot():
    source = nbformat.read(PILOT, as_version=4)
    return source, release_notebook(source, "pilot")


def _honest_pilot():
    source, release = _pilot()
    return _make_class_module()._answered(source, release, 1.0)


def _job(student: str, source, release, submission, **options) -> Job:
    return Job(
        student=student,
        assignment=source.metadata.get("assignment", "pilot"),
        source=nbformat.writes(source),
        release=notebook_bytes(release).decode(),
        submission=submission if isinstance(submission, bytes) else notebook_bytes(submission),
        options=Options(**{**OPTIONS, **options}),
    )


def _cell(text: str, **meta):
    cell = nbformat.v4.new_code_cell(text)
    cell.metadata["nbgrader"] = {"schema_version": 3, "task": False, **meta}
    return cell


def _assignment(name: str, exercises: list[tuple[str, str, str]]):
    """A source notebook and its release: per exercise an answer cell and a 1-point test cell.

    ``exercises``: (answer grade_id, solution code, test code).
    """
    cells = [
        _cell("import numpy as np", grade_id="setup", locked=True, grade=False, solution=False)
    ]
    for answer, solution, test in exercises:
        cells.append(
            _cell(
                f"### BEGIN SOLUTION\n{solution}\n### END SOLUTION",
                grade_id=answer,
                solution=True,
                grade=False,
                locked=False,
            )
        )
        cells.append(
            _cell(
                test, grade_id=f"{answer}_tests", grade=True, solution=False, locked=True, points=1
            )
        )
    source = nbformat.v4.new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "assignment": name,
        },
    )
    return source, release_notebook(source, name)


def _answer(release, answers: dict[str, str]):
    student = nbformat.from_dict(json.loads(nbformat.writes(release)))
    for cell in student.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    return student


# ---------------------------------------------------------------------------------- reply flood

# Run in a fresh process, so that its peak RSS is the grader's own. The trusted runner's peak
# (VmHWM, read just before the grader stops it) comes from the same process.
MEASURE = r"""
import json, pickle, re, resource, sys, time
from coursetools.grading import grade

peaks = []
stop = grade.TrustedRunner.stop


async def measured_stop(self):
    pid = self.pid if self.pid is not None else (self.proc.pid if self.proc else None)
    try:
        with open(f"/proc/{pid}/status") as fh:
            peaks.append(int(re.search(r"VmHWM:\s+(\d+) kB", fh.read()).group(1)))
    except (OSError, TypeError, AttributeError):
        pass
    await stop(self)


grade.TrustedRunner.stop = measured_stop
results = []
for job in pickle.loads(sys.stdin.buffer.read()):
    started = time.monotonic()
    result = grade.grade_job(job)
    result["wall"] = time.monotonic() - started
    result.pop("feedback")
    results.append(result)
# VmHWM, not ru_maxrss: Linux carries the forking parent's peak into ru_maxrss across exec
# (a 726 MiB pytest process made every child report 726 MiB), VmHWM is this process's own.
with open("/proc/self/status") as fh:
    usage = int(re.search(r"VmHWM:\s+(\d+) kB", fh.read()).group(1))
print(json.dumps({"results": results, "grader_kib": usage, "runner_kib": max(peaks, default=0),
                  "runners": len(peaks)}))
"""


def _budget_assignment():
    """A test that keeps calling an answer that fails (an instructor's retry loop)."""
    test = (
        "for attempt in range(12):\n"
        "    try:\n"
        "        f(attempt)\n"
        "    except AssertionError:\n"
        "        pass\n"
        "assert f(0) == 0, 'f(0) must be 0'\n"
    )
    return _assignment("retry", [("f", "def f(x):\n    return 0 * x", test)])


@pytest.fixture(scope="module")
def flood_run():
    source, release = _pilot()
    module = _make_class_module()
    flooded = module._with_cell_before(_honest_pilot(), "clamp", FLOOD_CELL)
    retry_source, retry_release = _budget_assignment()
    retry = _answer(retry_release, {"f": FLOOD_CELL + "def f(x):\n    return 0 * x"})
    jobs = [
        _job("flood", source, release, flooded),
        _job("honest", source, release, _honest_pilot()),
        _job("retry", retry_source, retry_release, retry, cell_timeout=60.0),
    ]
    done = subprocess.run(
        [sys.executable, "-c", MEASURE], input=pickle.dumps(jobs), capture_output=True, timeout=600
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    report = json.loads(done.stdout.decode().strip().splitlines()[-1])
    report["by"] = {r["student"]: r for r in report["results"]}
    return report


def test_a_reply_flood_scores_zero_for_those_calls_with_the_graders_reason(flood_run):
    flood = flood_run["by"]["flood"]
    assert flood["score"] == 0
    auto = [cell for cell in flood["cells"] if cell["kind"] == "auto"]
    assert len(auto) == 3
    for cell in auto:
        assert "returned something the grader cannot read" in cell["message"], cell
    assert not any("time limit" in p for p in flood["problems"]), flood["problems"]
    assert flood["wall"] < OPTIONS["notebook_timeout"]  # finished on its own, not cut off


def test_the_honest_student_graded_after_a_flood_gets_every_point(flood_run):
    honest = flood_run["by"]["honest"]
    assert honest["score"] == 7 and not honest["problems"], honest


def test_the_graders_and_the_runners_memory_stay_bounded_under_a_flood(flood_run):
    # Before: 2.1 GB (grader) and 2.0 GB (runner), both outside any control group.
    assert flood_run["runners"] >= 3  # one runner per submission, each measured
    assert flood_run["grader_kib"] < MEMORY_BOUND_KIB, (
        f"grader {flood_run['grader_kib'] // 1024} MiB"
    )
    assert flood_run["runner_kib"] < MEMORY_BOUND_KIB, (
        f"runner {flood_run['runner_kib'] // 1024} MiB"
    )


def test_calls_past_the_submissions_reply_budget_fail_at_once_with_the_budget_as_reason(flood_run):
    retry = flood_run["by"]["retry"]
    assert retry["score"] == 0
    (cell,) = retry["cells"]
    # 13 calls of 80 MB each would be 1 GB: after 256 MiB the last ones were never sent
    assert cell["message"].startswith("f was not called: this notebook's answers had already sent")
    assert "256 MiB" in cell["message"]


# ------------------------------------------------------------------- a reply over the cell cap


# Every kernel_info request answered with 5 MiB: each probe's connection is cut too.
HUGE_KERNEL_INFO = """k = get_ipython().kernel
def _huge(stream, ident, parent):
    k.session.send(stream, "kernel_info_reply", {"status": "ok", "x": "y" * (5 * 1024**2)}, parent, ident)
k.shell_handlers["kernel_info_request"] = _huge
"""


@pytest.mark.parametrize("probes", ["answered", "cut every time"])
def test_a_cell_reply_over_the_cap_is_dropped_at_once_and_the_kernel_lives_on(probes):
    # ZeroMQ drops a connection that brings a message over its cap (4 MiB for a cell) and does
    # not reconnect. Before, the grader waited for the lost reply until the cell's wall-clock
    # backstop (3 x 30 s here), called it an endless loop and restarted the kernel. Now the
    # socket's monitor reports the drop, a kernel_info request shows the kernel alive, and the
    # cell counts as run: what it defined before raising stays, no restart, at once. A kernel
    # that cuts every probe's connection as well is alive too: a few probes, then the same.
    source, release = _assignment(
        "big_reply", [("f", "def f(x):\n    return x", "assert f(2) == 2, 'f(2) must be 2'")]
    )
    answer = (
        (HUGE_KERNEL_INFO if probes == "cut every time" else "")
        + "kept = 41\ndef f(x):\n    return x + kept - 41\n"
        + "raise ValueError('x' * (8 * 1024**2))"
    )
    result = grade_job(
        _job("big", source, release, _answer(release, {"f": answer}), cell_timeout=30.0)
    )
    assert result["score"] == 1, result
    assert result["restarts"] == 0
    assert any("was over 4 MiB and was not read" in p for p in result["problems"]), result[
        "problems"
    ]
    assert not any("timed out" in p for p in result["problems"])
    assert result["seconds"] < 30.0  # the backstop alone is 90 s


# ---------------------------------------------------------------------------- 200,000 cells


def _markdown_flood(cells: int) -> bytes:
    cell = {"cell_type": "markdown", "metadata": {}, "source": "x"}
    nb = {"cells": [cell] * cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    return json.dumps(nb, separators=(",", ":")).encode()


def test_200000_markdown_cells_are_a_problem_row_and_cost_nothing_after(tmp_path):
    root = tmp_path / "class"
    for student, data in (
        ("mallory", _markdown_flood(200_000)),
        ("ada", notebook_bytes(_honest_pilot())),
    ):
        (root / student / "pilot").mkdir(parents=True)
        (root / student / "pilot" / "pilot.ipynb").write_bytes(data)
    assert (
        9 * MiB
        < (root / "mallory" / "pilot" / "pilot.ipynb").stat().st_size
        < collect.MAX_NOTEBOOK_BYTES
    )
    jobs, _ = cli.collect_jobs(root, PILOT_ROOT, Options(**OPTIONS))
    results = pipeline.grade(jobs, workers=1, stream=io.StringIO())
    by = {r["student"]: r for r in results}
    assert by["ada"]["score"] == 7 and not by["ada"]["problems"], by["ada"]
    mallory = by["mallory"]
    assert mallory["score"] == 0 and mallory["seconds"] == 0.0  # no kernel was started
    assert any("more than 2,000 cells" in p and "not graded" in p for p in mallory["problems"])
    assert mallory["feedback"] == []
    grades = tmp_path / "out" / "grades.csv"
    pipeline.write_outputs(results, grades, tmp_path / "out" / "feedback")
    page = (tmp_path / "out" / "feedback" / "mallory" / "pilot.html").stat().st_size
    assert page < 64 * 1024  # 200,000 cells would be megabytes of page
    rows = {r["student"]: r for r in csv.DictReader(grades.open())}
    assert float(rows["mallory"]["score"]) == 0 and float(rows["ada"]["score"]) == 7


# ---------------------------------------------------- class names, exceptions, strings: a canary

SECRET_CELL = "SECRET = ''.join([" + ", ".join(repr(p) for p in CANARY_PIECES) + "])\n"
CANARY_EXERCISES = [
    (
        "f",
        "def f(x):\n    return 2 * x",
        "got = f(3)\nassert got == 6, f'f(3) must be 6, got {got!r}'\n"
        "### BEGIN HIDDEN TESTS\ngot = f(4)\nassert got == 8, f'f(4) must be 8, got {got} ({got!r})'\n"
        "### END HIDDEN TESTS",
    ),
    (
        "g",
        "def g(x):\n    return x",
        "try:\n    g(-1)\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('g must refuse -1')\n"
        "assert g(0) == 0, 'g(0) is 0'",
    ),
    (
        "h",
        "def h(x):\n    return 'one'",
        "got = h(1)\nassert got == 'one', f'h(1) must be one, got {got!r}'",
    ),
    (
        "h2",
        "def h2(x):\n    return 'one'",
        "got = h2(1)\n### BEGIN HIDDEN TESTS\nassert got == 'one', 'got ' + got.lower() + '!'\n"
        "### END HIDDEN TESTS",
    ),
    ("k", "def k(x):\n    return x", "assert k(1) == 1, 'k(1) is 1'"),
]
CANARY_ANSWERS = {
    # an object whose class name carries the hidden input and the canary
    "f": SECRET_CELL
    + "def f(x):\n    box = type('HIDDEN:' + repr(x) + ':' + SECRET, (), {})\n    return box()",
    # an exception class named with the canary, deriving from ValueError
    "g": SECRET_CELL
    + "def g(x):\n    raise type(SECRET + repr(x), (ValueError,), {})('m ' + SECRET)",
    # the canary as a string, formatted by the test's own message, directly and derived
    "h": SECRET_CELL + "def h(x):\n    return SECRET + repr(x)",
    "h2": SECRET_CELL + "def h2(x):\n    return SECRET + repr(x)",
    # an exception class that claims to live in dplib.__main__ (the old runner imported it)
    "k": "def k(x):\n    cls = type('X', (Exception,), {'__module__': 'dplib.__main__'})\n    raise cls()",
}


@pytest.fixture(scope="module")
def canary_class(tmp_path_factory):
    source, release = _assignment("canary", CANARY_EXERCISES)
    job = _job("smuggler", source, release, _answer(release, CANARY_ANSWERS))
    stream = io.StringIO()
    results = pipeline.grade([job], workers=1, stream=stream)
    out = tmp_path_factory.mktemp("canary")
    grades = out / "grades.csv"
    pipeline.write_outputs(results, grades, out / "feedback")
    terminal = stream.getvalue() + cli.report(results, grades, out / "feedback")
    return results[0], {
        "feedback page": (out / "feedback" / "smuggler" / "canary.html").read_text(),
        "details JSON": grades.with_suffix(".json").read_text(),
        "CSV": grades.read_text(),
        "terminal": terminal + feedback.summary_table(results) + feedback.problem_report(results),
    }


def test_the_students_class_names_and_strings_reach_no_output(canary_class):
    result, outputs = canary_class
    assert CANARY not in json.dumps(result)  # its code cells hold only the canary's pieces
    for where, text in outputs.items():
        assert CANARY not in text and CANARY.lower() not in text, where
    assert "EXFIL" in outputs["feedback page"]  # the student's code is shown, as written


def test_every_canary_test_scores_zero_with_the_graders_words(canary_class):
    result, _ = canary_class
    assert result["score"] == 0
    messages = {c["grade_id"]: c["message"] for c in result["cells"]}
    assert messages == {
        "f_tests": "f(3) must be 6, got <student's f(...)>",
        "g_tests": "g raised ValueError",  # g(-1) was caught by `except ValueError`
        "h_tests": "h(1) must be one, got <a str of 15 characters>",
        "h2_tests": "a hidden test failed (line 3)",
        "k_tests": "k raised Exception",
    }


# ------------------------------------------------- the grader's reader, on forged raw messages


def _frames(content: dict) -> list[bytes]:
    from jupyter_client.session import Session

    session = Session(key=b"k")
    return session.serialize(session.msg("execute_reply", content))


def test_the_graders_reader_refuses_messages_that_parse_into_far_more_than_their_size():
    array = bridge.encode([np.arange(bridge.MAX_TEXT_BYTES // 6, dtype=float)])
    honest = {
        "status": "ok",
        "user_expressions": {
            "r": {
                "data": {
                    bridge.MIME: bridge.dumps(
                        {
                            "ok": True,
                            "value": array,
                            "note": "caf\u00e9 \u03c0",
                        }  # escaped by dumps: ASCII
                    )
                }
            }
        },
    }
    assert len(_frames(honest)[-1]) > bridge.MAX_TEXT_BYTES
    assert not _unreadable(_frames(honest))  # a large array, with a student's non-ASCII text
    flood = {"status": "ok", "metadata_bulk": [{}] * (bridge.MAX_PARTS // 2 + 1)}
    assert _unreadable(_frames(flood))  # the flood, anywhere in the message
    wide = "a" * (bridge.MAX_TEXT_BYTES + 1)
    assert not _unreadable(_frames({"status": "ok", "x": wide}))
    for other in ("\U0001f600", "\u03c0", "\u00e9"):  # raw UTF-8: never in an honest large reply
        assert _unreadable(_frames({"status": "ok", "x": wide + other}))
    latin = [f.replace(b'"aaaa', b'"\\u00e9aaaa', 1) for f in _frames({"status": "ok", "x": wide})]
    assert not _unreadable(latin)  # an escape within Latin-1 keeps 1 byte a character
    escaped = _frames({"status": "ok", "x": wide})
    escaped = [f.replace(b'"aaaa', b'"\\ud83d\\ude00aaaa', 1) for f in escaped]  # a real \u escape
    assert _unreadable(escaped)
    literal = [
        f.replace(b'"aaaa', b'"\\\\ud83daaaa', 1) for f in _frames({"status": "ok", "x": wide})
    ]
    assert not _unreadable(literal)  # the six characters \ud83d, escaped: no widening


# ------------------------------------------------------ the trusted runner's own memory limit


def _runner_test(stream, source: str) -> dict:
    trusted.write_frame(
        stream,
        {
            "op": "test",
            "test": {"grade_id": "t", "points": 1, "source": source, "hidden_lines": []},
        },
    )
    return trusted.read_frame(stream)


@pytest.mark.skipif(
    os.geteuid() != 0 or limits.cgroup_support() == "none",
    reason="needs root and cgroups: without them the runner caps its address space instead",
)
def test_a_runner_growing_past_its_control_group_is_killed_and_the_next_one_serves():
    server = forkserver.ForkServer(TrustedRunner.environment())
    log = tempfile.TemporaryFile()
    try:
        channel, _pid = server.spawn("/tmp", log.fileno())
        with channel, channel.makefile("rwb") as stream:
            trusted.write_frame(stream, {"prelude": [], "answers": []})
            with pytest.raises(EOFError):  # 1.5 GiB written: past the runner's 1 GiB group
                _runner_test(stream, "x = b'1' * (1536 * 1024**2)")
        channel, _pid = server.spawn("/tmp", log.fileno())
        with channel, channel.makefile("rwb") as stream:
            trusted.write_frame(stream, {"prelude": [], "answers": []})
            result = _runner_test(stream, "x = b'1' * (256 * 1024**2)\nlen(x) == 256 * 1024**2")
            assert result["result"]["status"] == "passed", result  # well under the limit
    finally:
        server.close()


def test_without_a_control_group_the_runner_caps_its_own_address_space():
    script = (
        "from coursetools.grading.trusted import runner as trusted\n"
        "trusted.limit_memory(256 * 1024**2)\n"
        "try:\n    x = b'1' * (512 * 1024**2)\nexcept MemoryError:\n    print('refused')\n"
        "y = b'1' * (64 * 1024**2)\nprint(len(y))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.stdout.decode().split() == ["refused", str(64 * 1024**2)], done.stderr.decode()
