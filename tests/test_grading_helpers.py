"""dplib.grading: the ban declaration hidden tests use (enforced by coursetools/bans.py)."""

from __future__ import annotations

import pytest

from dplib.grading import ForbiddenCallError, forbid


def test_forbid_accepts_dplib_functions_by_dotted_name():
    assert forbid("dplib.rr_estimate", "dplib.confidence.hoeffding_halfwidth") is None
    assert forbid("dplib.attacks.uniqueness.uniqueness_fraction") is None


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("numpy.mean", "dplib function names"),
        ("dplib.no_such_function", "dplib has no 'no_such_function'"),
        ("dplib.PrivacyAccountant", "not a Python function"),
        ("dplib.testing", "not a Python function"),
        (3, "dplib function names"),
    ],
)
def test_forbid_refuses_what_cannot_be_banned(name, message):
    with pytest.raises(ValueError, match=message):
        forbid(name)


def test_the_error_a_banned_stub_raises_fails_a_test():
    assert issubclass(ForbiddenCallError, AssertionError)
