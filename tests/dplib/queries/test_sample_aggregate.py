"""dplib.queries.sample_aggregate: disjoint blocks, the aggregate, a DP audit under add/remove.

Reference: Nissim, Raskhodnikova & Smith (2007), Section 4; Dwork & Roth (2014), Section 7.1.
"""

from __future__ import annotations

import numpy as np
import pytest

import dplib
from dplib.queries.sample_aggregate import block_values
from dplib.testing import assert_dp


def test_blocks_are_disjoint_and_cover_every_record():
    x = np.arange(1000.0)
    sizes = block_values(x, len, 20, 0, 1000, rng=0)
    assert sizes.sum() == 1000  # every record in exactly one block
    sums = block_values(x, np.sum, 20, 0, 1e6, rng=0)
    assert sums.sum() == x.sum()


def test_empty_blocks_and_nan_count_as_the_midpoint_and_values_are_clamped():
    vals = block_values([], np.mean, 4, 0.0, 10.0, rng=0)  # np.mean of empty is nan
    assert np.all(vals == 5.0)
    vals = block_values([1.0, 2.0], lambda b: 1e9, 3, 0.0, 10.0, rng=0)
    assert np.all(vals == 10.0)


def test_accuracy_on_a_stable_statistic():
    x = np.random.default_rng(0).normal(3.0, 1.0, size=20_000)
    outs = [
        dplib.sample_and_aggregate(x, np.mean, 0.0, 10.0, 1.0, blocks=100, grid=1001, rng=s)
        for s in range(20)
    ]
    # block means have sd 1 / sqrt(200) = 0.07; the exponential mechanism over a 0.01 grid with
    # 100 blocks picks within a few block-value quantiles of the median
    assert np.all(np.abs(np.array(outs) - 3.0) < 0.3)


def test_black_box_audit_under_add_remove():
    gen = np.random.default_rng(1)
    x = np.round(gen.uniform(0, 10, size=40))
    y = np.append(x, 10.0)  # one more person
    eps = 1.0

    def mech(data, rng):
        return dplib.sample_and_aggregate(data, np.mean, 0.0, 10.0, eps, blocks=5, grid=11, rng=rng)

    assert_dp(mech, x, y, eps, n_samples=10_000, rng=2)


def _largest(block):
    return float(block.max()) if block.size else 0.0


def test_black_box_audit_with_the_mean_aggregator():
    x = np.array([0.0] * 12)
    y = np.array([0.0] * 11 + [10.0])  # replace-one
    eps = 1.0

    def mech(data, rng):
        return dplib.sample_and_aggregate(
            data, _largest, 0.0, 10.0, eps, blocks=4, aggregator="mean", rng=rng
        )

    assert_dp(mech, x, y, eps, n_samples=10_000, rng=3)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (
            lambda: dplib.sample_and_aggregate([1.0], np.mean, 0, 1, 1.0, blocks=0, rng=0),
            ValueError,
        ),
        (lambda: dplib.sample_and_aggregate([1.0], "mean", 0, 1, 1.0, blocks=2, rng=0), TypeError),
        (
            lambda: dplib.sample_and_aggregate([1.0], np.mean, 0, 1, 0.0, blocks=2, rng=0),
            ValueError,
        ),
        (
            lambda: dplib.sample_and_aggregate([1.0], np.mean, 1, 0, 1.0, blocks=2, rng=0),
            ValueError,
        ),
        (
            lambda: dplib.sample_and_aggregate([np.nan], np.mean, 0, 1, 1.0, blocks=2, rng=0),
            ValueError,
        ),
        (
            lambda: dplib.sample_and_aggregate(
                [1.0], np.mean, 0, 1, 1.0, blocks=2, aggregator="max", rng=0
            ),
            ValueError,
        ),
        (
            lambda: dplib.sample_and_aggregate([1.0], np.mean, 0, 1, 1.0, blocks=2, grid=1, rng=0),
            ValueError,
        ),
    ],
)
def test_bad_input_is_refused(call, error):
    with pytest.raises(error):
        call()


def test_validation_comes_before_any_draw():
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    with pytest.raises(ValueError):
        dplib.sample_and_aggregate([1.0], np.mean, 0, 1, 1.0, blocks=2, grid=1, rng=gen)
    assert gen.bit_generator.state == state


def _fails_above_nine_and_a_half(block):
    """Issue 49's statistic: raises on a block holding a value over 9.5, else the mean."""
    if np.any(np.asarray(block) > 9.5):
        raise np.linalg.LinAlgError("singular on this block")
    return float(np.mean(block)) if len(block) else float("nan")


@pytest.mark.parametrize("aggregator", ["median", "mean"])
def test_a_raising_statistic_gives_an_answer_on_both_neighbours(aggregator):
    # Issue 49: the answer on one table was 6.09 and on its neighbour (one record over 9.5
    # added) LinAlgError: whether the call raised told the two apart. Now the failing block
    # counts as the midpoint (5.0), as NaN does, and both neighbours get an answer on the grid.
    x = np.linspace(0.0, 9.0, 60)
    for table in (x, np.r_[x, 9.9]):
        out = dplib.sample_and_aggregate(
            table,
            _fails_above_nine_and_a_half,
            0.0,
            10.0,
            1.0,
            blocks=6,
            aggregator=aggregator,
            grid=101,
            rng=3,
        )
        assert isinstance(out, float) and 0.0 <= out <= 10.0
    # the block values: the block with 9.9 is the midpoint, the others the clamped means
    gen = np.random.default_rng(5)
    values = block_values(np.r_[x, 9.9], _fails_above_nine_and_a_half, 6, 0.0, 10.0, rng=gen)
    which = np.random.default_rng(5).integers(0, 6, size=61)
    assert values[which[-1]] == 5.0
    for j in set(range(6)) - {int(which[-1])}:
        assert values[j] == pytest.approx(np.mean(np.r_[x, 9.9][which == j]))


def test_a_statistic_that_returns_no_number_counts_as_the_midpoint():
    for bad in (lambda b: "text", lambda b: 1 + 2j, lambda b: [1.0, 2.0], lambda b: 1 / 0):
        assert np.all(block_values([1.0, 2.0, 3.0], bad, 2, 0.0, 4.0, rng=0) == 2.0)
