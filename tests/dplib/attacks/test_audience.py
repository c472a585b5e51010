"""Tests of dplib.attacks.audience: exact audience sizes from rounded, thresholded reports.

Reference cases are worked by hand from the reporting rule (floor to a multiple of ``step``,
nothing shown below a threshold), the rule described for Facebook's custom-audience size
estimates by Venkatadri et al., "Privacy Risks with Facebook's PII-based Targeting" (IEEE S&P
2018), Section IV.
"""

import numpy as np
import pytest

from dplib.attacks.audience import exact_size_from_rounded, padded_estimates, rounded_estimate


def test_rounded_estimate_floor_and_threshold():
    assert rounded_estimate(37, step=10, threshold=20) == 30
    assert rounded_estimate(40, step=10, threshold=20) == 40
    assert rounded_estimate(19, step=10, threshold=20) is None
    # threshold 25, step 10: 22 users are too few to be shown; 27 are shown, rounded down to 20
    assert rounded_estimate(22, step=10, threshold=25) is None
    assert rounded_estimate(27, step=10, threshold=25) == 20
    assert rounded_estimate(30, step=10, threshold=25) == 30
    assert rounded_estimate(0, step=1, threshold=0) == 0


def test_padded_estimates_and_attack_hand_case():
    # audience of 3, padding 0..20, step 10, threshold 20:
    # sizes 3..23 -> None until 20, then 20, 20, 20, 20 (sizes 20..23)
    est = padded_estimates(3, 20, step=10, threshold=20)
    assert est[:17] == [None] * 17 and est[17:] == [20, 20, 20, 20]
    # no jump between two shown reports: not enough padding
    with pytest.raises(ValueError, match="padding"):
        exact_size_from_rounded(est, step=10)
    est = padded_estimates(3, 30, step=10, threshold=20)
    assert est[27] == 30 and est[26] == 20
    assert exact_size_from_rounded(est, step=10) == 3


@pytest.mark.parametrize("step,threshold", [(10, 20), (10, 25), (7, 0), (100, 1000), (1, 0)])
def test_attack_recovers_every_size(step, threshold):
    for size in list(range(0, 60)) + [999, 1000, 1234]:
        est = padded_estimates(size, threshold + 2 * step + 1, step=step, threshold=threshold)
        assert exact_size_from_rounded(est, step=step) == size


def test_first_shown_report_is_not_a_jump():
    # size 3, threshold 25: shown from padding 22 on (as 20), the jump to 30 comes at padding 27
    est = padded_estimates(3, 30, step=10, threshold=25)
    assert est[21] is None and est[22] == 20 and est[27] == 30
    assert exact_size_from_rounded(est, step=10) == 3


def test_returns_python_int_and_does_not_modify_input():
    est = padded_estimates(41, 30, step=10, threshold=20)
    copy = list(est)
    got = exact_size_from_rounded(est, step=10)
    assert type(got) is int and got == 41 and est == copy


def test_inconsistent_reports_rejected():
    with pytest.raises(ValueError):
        exact_size_from_rounded([10, 30, 30], step=10)   # a jump of two steps
    with pytest.raises(ValueError):
        exact_size_from_rounded([20, 10], step=10)       # reports going down


@pytest.mark.parametrize("bad", [0, -1, 2.5, np.nan])
def test_bad_step_rejected(bad):
    with pytest.raises((ValueError, TypeError)):
        rounded_estimate(5, step=bad, threshold=0)
    with pytest.raises((ValueError, TypeError)):
        exact_size_from_rounded([0, 0, 10], step=bad)


def test_bad_counts_rejected():
    with pytest.raises(ValueError):
        rounded_estimate(-1, step=10, threshold=0)
    with pytest.raises(ValueError):
        rounded_estimate(5, step=10, threshold=-1)
    with pytest.raises(ValueError):
        padded_estimates(5, -1, step=10, threshold=0)
    with pytest.raises(ValueError):
        exact_size_from_rounded([], step=10)
