"""The tour that `make course` runs: its releases are private, accounted, and near the truth."""

import re

from dplib.tour import main


def test_tour_spends_the_budget_exactly_and_refuses_more(capsys):
    main()
    out = capsys.readouterr().out
    assert "budget spent: eps 2.00, delta 1e-06" in out
    assert "refused before anything is released" in out
    # Every released statistic is printed next to its true value; with this seed each private
    # figure is within 0.5% of the truth (the tour's point: privacy at this size is cheap).
    rows = re.findall(r"^(.{34})\s*([\d,.]+)\s+([\d,.]+)\s", out, re.M)
    assert len(rows) >= 7
    for label, truth, private in rows:
        truth, private = float(truth.replace(",", "")), float(private.replace(",", ""))
        assert abs(private - truth) <= 0.005 * max(abs(truth), 1.0), (label, truth, private)
