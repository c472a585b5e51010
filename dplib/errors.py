"""Exceptions and warnings raised by dplib.

Privacy errors subclass :class:`ValueError` so that ``except ValueError`` still catches them,
following diffprivlib's ``BudgetError``.
"""

from __future__ import annotations

__all__ = ["BudgetExceededError", "PrivacyLeakWarning"]


class BudgetExceededError(ValueError):
    """Raised *before* a release when it would spend more privacy budget than is left.

    The accountant that raises it is left exactly as it was: nothing is released and nothing
    is recorded as spent.
    """


class PrivacyLeakWarning(RuntimeWarning):
    """Warns that a call leaks more than its stated privacy guarantee.

    For example, data outside the declared bounds, which would make the stated sensitivity
    wrong if it were not clamped.
    """
