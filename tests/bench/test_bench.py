"""The benchmark harness, report, plot and driver (bench/), on fabricated sections.

No real benchmark runs here: timings come from a fake clock or fabricated Measurements, so
these tests are fast and deterministic. `make bench` runs the benchmarks themselves.
"""

from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import _harness  # noqa: E402
import bench_accounting  # noqa: E402
import report  # noqa: E402
import run_all  # noqa: E402
from _harness import (  # noqa: E402
    Measurement,
    Row,
    Section,
    Series,
    fit_exponent,
    measure_pair,
    measure_within,
    ratio_goal_met,
    tightness_goal_met,
    tightness_row,
    time_row,
)


class FakeClock:
    """perf_counter that advances only when a fake call says how long it took."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def call(self, seconds: float, log: list[str], name: str):
        def run() -> None:
            log.append(name)
            self.now += seconds

        return run


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(_harness.time, "perf_counter", fake)
    return fake


# ------------------------------------------------------------------------------ exponents


@pytest.mark.parametrize("exponent", [0.0, 0.5, 1.0, 1.37, 2.0])
def test_fit_exponent_recovers_a_power_law(exponent):
    sizes = [1e2, 1e3, 1e4, 1e5, 1e6]
    seconds = [3e-7 * s**exponent for s in sizes]
    assert fit_exponent(sizes, seconds) == pytest.approx(exponent, abs=1e-9)


def test_fit_exponent_is_least_squares_not_endpoints():
    sizes = [1.0, 10.0, 100.0, 1000.0]
    seconds = [1.0, 10.0, 10.0, 1000.0]  # log10: 0, 1, 1, 3
    # slope = sum((x - 1.5)(y - 1.25)) / sum((x - 1.5)^2) = 4.5 / 5 = 0.9 (endpoints: 1.0)
    assert fit_exponent(sizes, seconds) == pytest.approx(0.9)


@pytest.mark.parametrize("sizes, seconds", [([1.0], [1.0]), ([1.0, 2.0], [1.0]),
                                            ([0.0, 1.0], [1.0, 2.0]), ([5.0, 5.0], [1.0, 2.0])])
def test_fit_exponent_refuses_what_it_cannot_fit(sizes, seconds):
    with pytest.raises(ValueError, match="fit_exponent needs"):
        fit_exponent(sizes, seconds)


def test_series_fits_its_exponent_unless_given():
    assert Series("s", "n", [10, 100, 1000], [1, 4, 16]).exponent == pytest.approx(math.log10(4))
    assert Series("s", "n", [10, 100], [1, 4], exponent=7.0).exponent == 7.0


# ------------------------------------------------------------------------------ timing


def test_measurement_scaled_converts_every_statistic():
    m = Measurement(0.5, 0.25, 1.0, 4).scaled(1e9 / 1e6)  # s per 1e6 values -> ns per value
    assert (m.median, m.low, m.high, m.repeats) == (500.0, 250.0, 1000.0, 4)
    assert m.spread == pytest.approx(0.75)
    with pytest.raises(ValueError, match="factor"):
        Measurement(1, 1, 1, 1).scaled(0.0)


def test_measure_within_takes_the_repeats_that_fit_the_budget(clock):
    log: list[str] = []
    m = measure_within(clock.call(1.0, log, "a"), repeats=10, budget=3.5)
    assert len(log) == 1 + 3  # the warm-up, then floor(3.5 / 1.0) timed calls
    assert (m.median, m.repeats) == (1.0, 3)


def test_measure_within_uses_a_slow_warm_up_as_its_only_sample(clock):
    log: list[str] = []
    m = measure_within(clock.call(10.0, log, "a"), repeats=5, budget=5.0)
    assert log == ["a"] and (m.median, m.repeats) == (10.0, 1)


def test_measure_pair_alternates_and_times_each_side(clock):
    log: list[str] = []
    first, second = measure_pair(clock.call(1.0, log, "a"), clock.call(3.0, log, "b"),
                                 repeats=3, budget=100.0)
    assert log == ["a", "b"] * 4  # warm-up pair, then 3 alternating pairs
    assert (first.median, second.median, first.repeats) == (1.0, 3.0, 3)


@pytest.mark.parametrize("bad", [{"repeats": 0}, {"budget": 0.0}])
def test_measuring_refuses_nonsense(bad):
    args = {"repeats": 2, "budget": 1.0} | bad
    with pytest.raises(ValueError, match="must be"):
        measure_within(lambda: None, **args)
    with pytest.raises(ValueError, match="must be"):
        measure_pair(lambda: None, lambda: None, **args)


# ------------------------------------------------------------------------------ goals


def test_ratio_goal_met_on_both_sides_of_the_line():
    assert ratio_goal_met(100.0, 100.0) is True
    assert ratio_goal_met(99.9, 100.0) is False
    # "dplib at most 1.5x numpy's time": numpy 40 ns, dplib 60 ns is exactly on the line.
    assert ratio_goal_met(40 / 60, 1 / 1.5) is True
    assert ratio_goal_met(40 / 61, 1 / 1.5) is False
    assert ratio_goal_met(None, 1.0) is None and ratio_goal_met(2.0, None) is None


def test_tightness_goal_two_sided_and_one_sided():
    assert tightness_goal_met(0.0099, 0.01, two_sided=True) is True
    assert tightness_goal_met(-0.011, 0.01, two_sided=True) is False  # same algorithm: a bug
    assert tightness_goal_met(-0.30, 0.01, two_sided=False) is True  # a tighter analysis
    assert tightness_goal_met(0.011, 0.01, two_sided=False) is False
    # tighter than the peer's certified lower bound: not a valid epsilon
    assert tightness_goal_met(-0.2, 0.01, two_sided=False, ours=0.8, lower=0.9) is False
    assert tightness_goal_met(-0.05, 0.01, two_sided=False, ours=0.95, lower=0.9) is True
    assert tightness_goal_met(None, 0.01, two_sided=True) is None
    assert tightness_goal_met(math.nan, 0.01, two_sided=True) is None


def test_time_row_ratio_is_peer_over_dplib():
    row = time_row("g", "t", "OpenDP", "ns/value", Measurement(200, 190, 210, 5),
                   Measurement(30_000, 29_000, 33_000, 5), minimum=100, goal=">= 100x")
    assert row.ratio == pytest.approx(150.0) and row.goal_met is True
    assert (row.ours, row.theirs) == (200, 30_000)
    assert row.spread_ours == pytest.approx(0.05)
    slow = time_row("g", "t", "numpy", "ns/value", Measurement(70, 70, 70, 1),
                    Measurement(40, 40, 40, 1), minimum=1 / 1.5, goal="<= 1.5x numpy")
    assert slow.goal_met is False  # 70 / 40 = 1.75x numpy's time


def test_time_row_with_a_missing_peer_keeps_dplib_and_the_reason():
    row = time_row("g", "t", "Opacus PRV", "ms/call", Measurement(5, 5, 5, 1), None,
                   minimum=1.0, goal="faster", note="opacus not importable (no torch)")
    assert row.theirs is None and row.ratio is None and row.goal_met is None
    assert row.ours == 5 and "no torch" in row.note


def test_tightness_row_relative_difference():
    row = tightness_row("g", "t", "p", 2.0, 2.5, tolerance=0.01, two_sided=False, goal="x")
    assert row.ratio == pytest.approx(-0.2) and row.goal_met is True and row.unit == "epsilon"
    assert tightness_row("g", "t", "p", 2.0, 2.5, two_sided=True, goal="x").goal_met is False
    assert tightness_row("g", "t", "p", 2.0, None, goal="x").goal_met is None


# ------------------------------------------------------------------------------ report


def sections() -> list[Section]:
    rows = [
        time_row("samplers", "textbook Laplace", "numpy", "ns/value", Measurement(65, 63, 67, 5),
                 Measurement(40, 40, 41, 5), minimum=1 / 1.5, goal="dplib <= 1.5x numpy time"),
        time_row("samplers", "discrete Laplace", "diffprivlib", "ns/value",
                 Measurement(120, 110, 130, 5), None, note="diffprivlib: not installed (sklearn)"),
        tightness_row("accountants", "MNIST [RDP]", "dp-accounting RDP", 2.5966, 2.5966,
                      goal="|diff| <= 1%"),
    ]
    return [
        Section("samplers", rows=rows[:2], series=[
            Series("dplib laplace", "values per call", [1e3, 1e4, 1e5], [1e-5, 1e-4, 1e-3]),
            Series("numpy laplace", "values per call", [1e3, 1e4], [1e-5, 2e-4]),
        ], notes=["a note"]),
        Section("accountants", rows=rows[2:], series=[
            Series("dplib PLD", "DP-SGD steps", [1e2, 1e3], [0.1, float("inf")], exponent=0.2),
        ]),
        Section("dpsgd", error="bench_dpsgd: ImportError: No module named 'torch'"),
    ]


def test_table_has_every_row_the_missing_reason_and_the_failed_section():
    text = report.format_table(sections())
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["group", "task", "peer"]
    assert "diffprivlib: not installed (sklearn)" in text
    assert "(benchmark failed)" in text and "No module named 'torch'" in text
    laplace = next(line for line in lines if "textbook Laplace" in line)
    assert " NO " in laplace and "0.615x" in laplace  # 40 / 65: dplib 1.63x numpy, missed
    mnist = next(line for line in lines if "MNIST" in line)
    assert "+0.00%" in mnist and " yes " in mnist
    assert lines[-1] == "goals: 1 met, 1 not met, 0 not measured; failed sections: dpsgd"


def test_exponents_are_printed_and_superlinear_ones_flagged():
    text = report.format_exponents([Section("s", series=[
        Series("linear", "n", [1, 10, 100], [1, 10, 100]),
        Series("quadratic", "n", [1, 10, 100], [1, 100, 10_000]),
    ])])
    linear, quadratic = text.splitlines()
    assert "size^1.00" in linear and "superlinear" not in linear
    assert "size^2.00" in quadratic and "superlinear (segment slopes 2.00, 2.00)" in quadratic
    # A fixed cost then a steep tail: the fit says 0.75, the last segment says 1.5.
    tail = report.format_exponents([Section("s", series=[
        Series("tail", "n", [1, 10, 100], [1.0, 1.0, 10**1.5])])])
    assert "size^0.75" in tail and "superlinear segment (slopes 0.00, 1.50)" in tail


def test_results_json_round_trip(tmp_path):
    original = sections()
    document = report.results_document(original, args={"quick": True},
                                       timestamp="2026-01-01T00:00:00+00:00")
    path = tmp_path / "results.json"
    report.write_results(document, path)
    json.loads(path.read_text(encoding="utf-8"))  # strict JSON: no bare Infinity
    assert '"inf"' in path.read_text(encoding="utf-8")
    loaded = report.read_results(path)
    assert loaded["schema"] == report.SCHEMA and loaded["args"] == {"quick": True}
    assert set(loaded["versions"]) == set(report.VERSIONED)
    assert {"dplib", "numpy", "scipy", "opendp", "diffprivlib", "dp-accounting",
            "prv-accountant", "opacus", "torch"} <= set(loaded["versions"])
    assert loaded["machine"]["cores"] >= 1 and loaded["machine"]["cpu"] is not None
    assert loaded["exponents"]["dplib PLD"] == 0.2
    assert report.sections_from_document(loaded) == original


def test_read_results_refuses_another_schema(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": 999, "sections": []}), encoding="utf-8")
    with pytest.raises(ValueError, match="schema"):
        report.read_results(path)


def test_text_that_reads_inf_stays_text(tmp_path):
    section = Section("s", rows=[Row("g", "inf", "p", "u", 1.0, None, note="nan")])
    path = tmp_path / "r.json"
    report.write_results(report.results_document([section]), path)
    assert report.sections_from_document(report.read_results(path)) == [section]


# ------------------------------------------------------------------------------ plot


def test_scaling_plot_is_a_png_with_one_panel_per_size_kind(tmp_path):
    import plot

    series = [s for section in sections() for s in section.series
              if all(math.isfinite(t) for t in s.seconds)]
    assert list(plot.panels(series)) == ["values per call"]
    path = plot.draw_scaling(series, tmp_path / "scaling.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot.label(series[0]) == "dplib laplace (b = 1.00)"
    with pytest.raises(ValueError, match="at least one series"):
        plot.draw_scaling([], tmp_path / "empty.png")


# ------------------------------------------------------------------------------ driver


def test_select_keeps_table_order_and_refuses_unknown_names():
    chosen = run_all.select(run_all.MODULES, "grader, samplers")
    assert chosen == [("samplers", "bench_mechanisms"), ("grader", "bench_grader")]
    assert run_all.select(run_all.MODULES, None) == list(run_all.MODULES)
    with pytest.raises(ValueError, match="samplers, accountants"):
        run_all.select(run_all.MODULES, "samplers,typo")


def test_discover_lists_the_known_modules_first(tmp_path):
    (tmp_path / "bench_zeta.py").write_text("", encoding="utf-8")
    (tmp_path / "bench_mechanisms.py").write_text("", encoding="utf-8")
    found = run_all.discover(tmp_path)
    assert found[: len(run_all.MODULES)] == list(run_all.MODULES)
    assert found[len(run_all.MODULES):] == [("zeta", "bench_zeta")]


def fake_module(name: str, run) -> types.ModuleType:
    module = types.ModuleType(name)
    module.run = run
    return module


def test_run_one_turns_a_failure_into_a_failed_section():
    def boom(quick: bool = False) -> Section:
        raise RuntimeError("disk full\nsecond line")

    modules = {"bench_boom": fake_module("bench_boom", boom),
               "bench_wrong": fake_module("bench_wrong", lambda quick=False: 42)}
    failed = run_all.run_one("boom", "bench_boom", True, importer=modules.__getitem__)
    assert failed.error == "bench_boom: RuntimeError: disk full" and failed.rows == []
    wrong = run_all.run_one("wrong", "bench_wrong", True, importer=modules.__getitem__)
    assert "returned int, not Section" in wrong.error
    missing = run_all.run_one("gone", "bench_gone", True, importer=modules.__getitem__)
    assert missing.error.startswith("bench_gone: KeyError")


def test_main_keeps_the_other_results_when_one_benchmark_fails(tmp_path, monkeypatch, capsys):
    good, = sections()[:1]
    seen: list[bool] = []

    def run_good(quick: bool = False) -> Section:
        seen.append(quick)
        return good

    def run_bad(quick: bool = False) -> Section:
        raise ImportError("No module named 'torch'")

    monkeypatch.setattr(run_all, "discover",
                        lambda directory=None: [("good", "bench_good"), ("bad", "bench_bad")])
    monkeypatch.setitem(sys.modules, "bench_good", fake_module("bench_good", run_good))
    monkeypatch.setitem(sys.modules, "bench_bad", fake_module("bench_bad", run_bad))
    out, png = tmp_path / "results.json", tmp_path / "scaling.png"
    status = run_all.main(["--quick", "--out", str(out), "--plot", str(png)])
    assert status == 1 and seen == [True]
    printed = capsys.readouterr().out
    assert "textbook Laplace" in printed and "No module named 'torch'" in printed
    assert "dplib laplace: time ~ size^1.00" in printed
    loaded = report.sections_from_document(report.read_results(out))
    assert [s.name for s in loaded] == ["samplers", "bad"]
    assert loaded[0].rows == good.rows and loaded[1].error.endswith("No module named 'torch'")
    assert png.read_bytes()[:4] == b"\x89PNG"


# ------------------------------------------------------------------------------ accountants


def test_accountant_rows_for_a_missing_and_a_failing_peer():
    setting = bench_accounting.Setting("Gaussian", 1.0, 1.0, 1)
    budget = bench_accounting.Budget(1, 1.0, (10, 100), 1.0)
    missing = bench_accounting.Peer("Opacus RDP", "rdp", "opacus not importable (no torch)",
                                    two_sided=False)
    eps_row, time_row_ = bench_accounting.compare(setting, missing, budget)
    assert eps_row.theirs is None and eps_row.goal_met is None and eps_row.ours > 0
    assert "no torch" in eps_row.note and "no torch" in time_row_.note

    def broken(q, sigma, steps):
        raise RuntimeError("Discrete mean differs")

    failing = bench_accounting.Peer("prv-accountant", "pld", broken, two_sided=False)
    eps_row, _ = bench_accounting.compare(setting, failing, budget)
    assert "failed: RuntimeError: Discrete mean differs" in eps_row.note


def test_accountant_rows_judge_the_epsilon():
    setting = bench_accounting.Setting("Gaussian", 1.0, 1.0, 1)
    budget = bench_accounting.Budget(1, 1.0, (10, 100), 1.0)
    exact = bench_accounting.dplib_accountant("rdp")
    same = bench_accounting.Peer("twin", "rdp", exact, two_sided=True)
    eps_row, speed = bench_accounting.compare(setting, same, budget)
    assert eps_row.ratio == pytest.approx(0.0) and eps_row.goal_met is True
    assert speed.unit == "ms/call" and speed.ours > 0 and speed.theirs > 0
    looser = bench_accounting.Peer("loose", "rdp", lambda q, s, t: exact(q, s, t) * 0.9,
                                   two_sided=False)
    eps_row, _ = bench_accounting.compare(setting, looser, budget)
    assert eps_row.ratio == pytest.approx(1 / 0.9 - 1) and eps_row.goal_met is False


def test_accountant_scaling_stops_before_a_call_over_the_cap(monkeypatch):
    def fake_measure(call, repeats, budget):  # 1 ms per step, without running anything
        steps = call.__defaults__[1]
        return Measurement(steps * 1e-3, steps * 1e-3, steps * 1e-3, 1)

    monkeypatch.setattr(bench_accounting, "measure_within", fake_measure)
    budget = bench_accounting.Budget(1, 1.0, (10, 100, 1000, 10_000), 0.5)
    series = bench_accounting.scaling(budget, [])
    assert [s.name for s in series] == ["dplib RDP", "dplib PLD"]
    # 10 steps: 0.01 s, 100: 0.1 s; 1000 would be predicted at 1 s > 0.5 s: stopped there.
    assert series[0].sizes == [10.0, 100.0]
    assert series[0].exponent == pytest.approx(1.0)


def test_the_examples_in_the_bench_docstrings_hold():
    import doctest

    import bench_mechanisms
    import plot

    for module in (_harness, report, plot, run_all, bench_mechanisms, bench_accounting):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
