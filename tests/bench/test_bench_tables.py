"""bench/bench_tables.py (dplib's table releases next to OpenDP's): its bookkeeping without OpenDP.

No timing is asserted: the rows keep dplib's side and say why OpenDP's is missing, and the filter
rows carry the exact numbers of queries each rule admits.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_tables  # noqa: E402


def test_without_opendp_the_rows_keep_dplibs_side_and_say_why(monkeypatch):
    monkeypatch.setattr(bench_tables, "_opendp", lambda: "opendp not installed (test)")
    rows, _ = bench_tables.variance_rows(2_000, repeats=1)
    (row,) = rows
    assert row.ours is not None and row.ours > 0
    assert row.theirs is None and row.ratio is None
    assert "opendp not installed" in row.note
    filters, notes = bench_tables.filter_rows(0.01)
    assert [r.ours for r in filters] == [100.0, 147.0, 333.0]  # basic, Rogers 2016, Whitehouse
    assert all(r.theirs is None and "not installed" in r.note for r in filters)
    assert notes


def test_rank_error_is_the_mean_distance_in_quantile_levels():
    values = np.arange(100.0)
    # 24.5 has rank 25/100 (level 0.25, error 0); 90.5 has rank 0.91 against level 0.75
    err = bench_tables._rank_error(values, np.array([24.5, 90.5]), [0.25, 0.75])
    assert err == pytest.approx((0.0 + 0.16) / 2, rel=1e-12)
