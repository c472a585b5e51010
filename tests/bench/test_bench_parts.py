"""The arithmetic and bookkeeping of bench/bench_dpsgd.py, bench_course.py and bench_grader.py.

Fabricated inputs only: no notebook runs, no torch, no timing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_course  # noqa: E402
import bench_dpsgd  # noqa: E402
import bench_grader  # noqa: E402

# ------------------------------------------------------------------------------ bench_dpsgd


def test_throughput_counts_expected_examples_per_second():
    # 40 epochs over 1,347 examples in 2 s: 26,940 examples a second, whatever the batch size.
    assert bench_dpsgd.throughput(40, 1347, 2.0) == pytest.approx(26_940.0)
    assert bench_dpsgd.throughput(1, 100, 0.5) == pytest.approx(200.0)


@pytest.mark.parametrize("args", [(0, 10, 1.0), (5, 0, 1.0), (5, 10, 0.0), (5, 10, float("inf"))])
def test_throughput_refuses_nonsense(args):
    with pytest.raises(ValueError, match="must be"):
        bench_dpsgd.throughput(*args)


def test_throughput_verdict_needs_both_speed_and_accuracy():
    assert bench_dpsgd.throughput_verdict(30.0, 10.0, True) == (pytest.approx(3.0), True)
    assert bench_dpsgd.throughput_verdict(30.0, 10.0, False)[1] is False  # fast but worse
    assert bench_dpsgd.throughput_verdict(19.9, 10.0, True)[1] is False  # just under 2x
    assert bench_dpsgd.throughput_verdict(20.0, 10.0, True)[1] is True  # exactly 2x
    with pytest.raises(ValueError):
        bench_dpsgd.throughput_verdict(0.0, 10.0, True)


def test_accuracy_verdict_tolerates_seed_noise_not_a_real_loss():
    # Same mean, noisy seeds: equal.
    diff, tol, ok = bench_dpsgd.accuracy_verdict([0.89, 0.93, 0.91], [0.91, 0.91, 0.91])
    assert diff == pytest.approx(0.0, abs=1e-12) and ok
    # Two standard errors: sd 0.02 over 3 seeds on one side -> s.e. 0.01155, tolerance 0.0231.
    assert tol == pytest.approx(2 * 0.02 / 3**0.5)
    # Five points worse with tight seeds: a real loss.
    diff, tol, ok = bench_dpsgd.accuracy_verdict([0.86, 0.861, 0.859], [0.91, 0.911, 0.909])
    assert diff == pytest.approx(-0.05) and not ok
    # Identical seeds on both sides: the floor tolerance applies (half a point).
    assert bench_dpsgd.accuracy_verdict([0.9], [0.904]) == (
        pytest.approx(-0.004), bench_dpsgd.MIN_ACCURACY_TOLERANCE, True
    )
    assert bench_dpsgd.accuracy_verdict([0.9], [0.906])[2] is False
    # Better is always fine.
    assert bench_dpsgd.accuracy_verdict([0.95, 0.96], [0.90, 0.91])[2] is True


def test_accuracy_verdict_refuses_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        bench_dpsgd.accuracy_verdict([], [0.9])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        bench_dpsgd.accuracy_verdict([90.0], [0.9])


def test_measurement_of_times_taken_elsewhere():
    m = bench_dpsgd.measurement_of([3.0, 1.0, 2.0, 10.0])
    assert (m.median, m.low, m.high, m.repeats) == (2.5, 1.0, 10.0, 4)
    with pytest.raises(ValueError):
        bench_dpsgd.measurement_of([])


def test_opacus_and_dplib_see_the_same_setting():
    # One Setting drives both libraries: the two rows compare the same model and budget.
    names = [s.name for s in bench_dpsgd.SETTINGS]
    assert len(set(names)) == len(names) == 2
    assert {s.hidden for s in bench_dpsgd.SETTINGS} == {(), (32,)}
    for s in bench_dpsgd.SETTINGS:
        assert (s.epsilon, s.delta, s.batch_size, s.epochs) == (1.0, 1e-5, 256, 40)


# ----------------------------------------------------------------------------- bench_course


def test_course_total_sums_medians_and_judges_only_the_whole_course():
    nine = {f"{i:02d}": 19.0 for i in range(9)}  # 171 s
    assert bench_course.course_total(nine) == (pytest.approx(171.0), True)
    nine["08"] = 29.0  # 181 s
    assert bench_course.course_total(nine) == (pytest.approx(181.0), False)
    # A subset says nothing about the goal, however fast.
    assert bench_course.course_total({"00": 1.0, "01": 2.0}) == (3.0, None)
    with pytest.raises(ValueError, match=">= 0"):
        bench_course.course_total({"00": -1.0})


def test_select_notebooks_by_prefix():
    names = ["00_a", "01_b", "06_c"]
    assert bench_course.select_notebooks(names, None) == names
    assert bench_course.select_notebooks(names, "all") == names
    assert bench_course.select_notebooks(names, "06, 00") == ["00_a", "06_c"]
    with pytest.raises(ValueError, match="09"):
        bench_course.select_notebooks(names, "00,09")


# ----------------------------------------------------------------------------- bench_grader


def test_student_names_cycle_the_three_kinds_with_unique_names():
    class_ = bench_grader.student_names(40)
    names = [n for n, _ in class_]
    assert len(set(names)) == 40
    assert names == sorted(names)  # zero-padded: a directory listing keeps the order
    kinds = [k for _, k in class_]
    assert kinds[:4] == ["ada_full", "bob_partial", "cy_blank", "ada_full"]
    assert [kinds.count(k) for k in ("ada_full", "bob_partial", "cy_blank")] == [14, 13, 13]
    assert all(name.endswith(kind.split("_")[1]) for name, kind in class_)
    assert bench_grader.student_names(101)[100][0] == "s100_partial"
    for bad in (0, -3, 2.0, True):
        with pytest.raises(ValueError, match="students"):
            bench_grader.student_names(bad)


def test_notebooks_per_minute():
    assert bench_grader.notebooks_per_minute(20, 120.0) == pytest.approx(10.0)
    assert bench_grader.notebooks_per_minute(180, 3600.0) == pytest.approx(3.0)
    with pytest.raises(ValueError):
        bench_grader.notebooks_per_minute(0, 10.0)
    with pytest.raises(ValueError):
        bench_grader.notebooks_per_minute(5, 0.0)


def test_parse_sizes():
    assert bench_grader.parse_sizes("40,5,10,5") == [5, 10, 40]
    for bad in ("5", "a,b", "0,5", ""):
        with pytest.raises(ValueError, match="sizes"):
            bench_grader.parse_sizes(bad)


REFERENCE = {
    ("s00_full", "01"): {"t1": 3.0, "t2": 2.0},
    ("s01_partial", "01"): {"t1": 3.0, "t2": 0.0},
    ("s02_blank", "01"): {"t1": 0.0, "t2": 0.0},
}


def test_compare_grades_identical():
    result = bench_grader.compare_grades({k: dict(v) for k, v in REFERENCE.items()}, REFERENCE)
    assert result.all_identical and result.identical == 3 and not result.differences
    assert result.summary() == "3/3 submissions identical"


def test_compare_grades_names_every_differing_cell_and_missing_submission():
    ours = {k: dict(v) for k, v in REFERENCE.items()}
    ours[("s00_full", "01")]["t2"] = 0.0  # a right answer failed (raw nbgrader fooled or wrong)
    del ours[("s01_partial", "01")]["t2"]  # a test cell the grader never scored
    del ours[("s02_blank", "01")]  # a submission not graded at all
    result = bench_grader.compare_grades(ours, REFERENCE)
    assert not result.all_identical
    assert result.identical == 0 and result.submissions == 3
    assert result.missing == [("s02_blank", "01")]
    assert sorted(result.differences) == [
        ("s00_full", "01", "t2", 0.0, 2.0),
        ("s01_partial", "01", "t2", None, 0.0),
    ]
    assert "0/3 submissions identical, 1 missing" in result.summary()
    assert "01:t2 0.0 vs 2.0" in result.summary()


def test_compare_grades_tolerates_float_noise_only():
    ours = {k: dict(v) for k, v in REFERENCE.items()}
    ours[("s00_full", "01")]["t1"] = 3.0 + 1e-12  # partial credit arithmetic
    assert bench_grader.compare_grades(ours, REFERENCE).all_identical
    ours[("s00_full", "01")]["t1"] = 2.5
    assert bench_grader.compare_grades(ours, REFERENCE).identical == 2


def test_grader_printout_says_when_a_row_was_run_once(capsys):
    # The every-notebook row is one run per grader: no spread to print, and no crash over it.
    from _harness import Row, Section

    section = Section("grader")
    section.rows.append(Row(group="grader", task="every notebook", peer="raw", unit="notebooks/min",
                            ours=6.0, theirs=2.0, ratio=3.0, goal=">= 1.8x", goal_met=True))
    section.rows.append(Row(group="grader", task="one notebook", peer="raw", unit="notebooks/min",
                            ours=4.0, theirs=2.0, ratio=2.0, spread_ours=0.05, spread_theirs=0.1))
    bench_grader._print(section)
    out = capsys.readouterr().out
    assert "6.00 (one run) vs 2.00 (one run) notebooks/min (x3.00); goal >= 1.8x: met" in out
    assert "4.00 ±5% vs 2.00 ±10% notebooks/min (x2.00)" in out


def test_grader_scaling_note_fits_fixed_and_per_submission_cost():
    # 3 s of start-up and 1.5 s a submission, exactly: the fit must recover both.
    note = bench_grader.scaling_note([5, 10, 20, 40], [3 + 1.5 * n for n in (5, 10, 20, 40)], 20)
    assert "3.0 s + 1.50 s a submission (least squares over 5..40 students)" in note
    assert "the 20-student point is the median of the timed runs" in note
