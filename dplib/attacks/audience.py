"""Exact audience sizes from an ad platform's rounded, thresholded size estimates.

An advertising platform shows an advertiser how many of its users match an uploaded list of
e-mail addresses or phone numbers, but only approximately: the count is rounded down to a
multiple of ``step``, and nothing is shown for an audience smaller than a threshold. Venkatadri et al. showed that this
does not hide one person: an attacker who adds ``j = 0, 1, 2, ...`` *padding* records (accounts
they control, surely registered and not in the audience) sees the report jump exactly when the
true count ``s + j`` reaches a multiple of ``step``; at that jump the report *is* the true count,
so ``s = report - j``. Two such exact counts that differ by one person reveal whether that person
is on the platform, or whether an e-mail address and a phone number belong to the same account.

References
----------
G. Venkatadri, A. Andreou, Y. Liu, A. Mislove, K. P. Gummadi, P. Loiseau and O. Goga,
"Privacy Risks with Facebook's PII-based Targeting: Auditing a Data Broker's Advertising
Interface", IEEE Symposium on Security and Privacy, 2018 (Section IV: size estimates are rounded
and thresholded, and padding an audience to a rounding boundary recovers exact counts).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dplib._validation import check_integer

#: Largest max_padding of padded_estimates (a list of that many reports; the attack needs step + 1).
_MAX_PADDING = 10**6

__all__ = ["exact_size_from_rounded", "padded_estimates", "rounded_estimate"]


def rounded_estimate(count: int, *, step: int, threshold: int) -> int | None:
    """The platform's report for an audience of ``count`` matched users.

    Parameters
    ----------
    count : int
        True number of matched users, >= 0.
    step : int
        Rounding granularity, >= 1: the count is rounded *down* to a multiple of ``step``.
    threshold : int
        Audiences of fewer than ``threshold`` matched users are not shown (``None``), >= 0.

    Returns
    -------
    int or None
        ``step * floor(count / step)`` if ``count >= threshold``, else ``None``.

    Raises
    ------
    ValueError
        If ``count`` or ``threshold`` is negative or ``step`` is not a positive integer.
    """
    count = check_integer(count, "count", minimum=0)
    step = check_integer(step, "step", minimum=1)
    threshold = check_integer(threshold, "threshold", minimum=0)
    return step * (count // step) if count >= threshold else None


def padded_estimates(count: int, max_padding: int, *, step: int, threshold: int) -> list[int | None]:
    """Reports for an audience of ``count`` users padded with ``j = 0..max_padding`` extra users.

    Parameters
    ----------
    count : int
        True size of the audience, >= 0.
    max_padding : int
        Largest number of padding accounts added, >= 0.
    step, threshold : int
        The reporting rule of :func:`rounded_estimate`.

    Returns
    -------
    list of int or None
        ``[rounded_estimate(count + j) for j in 0..max_padding]``.

    Raises
    ------
    ValueError
        On a negative ``count``, ``max_padding`` or ``threshold``, or ``step < 1``.
    """
    count = check_integer(count, "count", minimum=0)
    max_padding = check_integer(max_padding, "max_padding", minimum=0)
    if max_padding > _MAX_PADDING:
        raise ValueError(
            f"max_padding must be an integer in [0, 10**6] (the attack needs step + 1 reports), "
            f"got {max_padding!r}"
        )
    step = check_integer(step, "step", minimum=1)
    threshold = check_integer(threshold, "threshold", minimum=0)
    return [rounded_estimate(count + j, step=step, threshold=threshold) for j in range(max_padding + 1)]


def exact_size_from_rounded(estimates: Sequence[int | None], *, step: int) -> int:
    """Exact audience size from the reports of the audience padded with 0, 1, 2, ... accounts.

    Parameters
    ----------
    estimates : sequence of int or None
        ``estimates[j]`` is the platform's report for the audience plus ``j`` padding accounts
        (``None``: not shown). Not modified. The first shown report after a ``None`` is not
        necessarily a jump of the rounding (the threshold need not be a multiple of ``step``).
    step : int
        Rounding granularity of the reports, >= 1.

    Returns
    -------
    int
        The number ``s`` of matched users in the unpadded audience: at the first ``j`` where two
        consecutive shown reports differ, ``s + j`` is a multiple of ``step`` equal to the report,
        so ``s = estimates[j] - j`` (Venkatadri et al. 2018, Section IV).

    Raises
    ------
    TypeError
        If ``estimates`` is not a sequence or a shown report is not an int (``20.0`` included).
    ValueError
        If a shown report is negative or not a multiple of ``step``, ``estimates`` is empty, shows no jump between two consecutive shown reports (not enough
        padding: at least ``step + 1`` consecutive shown reports are needed), or is inconsistent
        with the rule (a report going down, or a jump other than ``step``); or ``step < 1``.
    """
    step = check_integer(step, "step", minimum=1)
    if isinstance(estimates, str | bytes) or not isinstance(estimates, Iterable):
        raise TypeError(f"estimates must be a sequence of ints or None, got {type(estimates).__name__}")
    reports = list(estimates)
    if not reports:
        raise ValueError("estimates must not be empty")
    for j, report in enumerate(reports):
        if report is None:
            continue
        value = check_integer(report, f"estimates[{j}]", minimum=0)
        if value % step:
            raise ValueError(
                f"estimates[{j}] must be a report rounded down to a multiple of step = {step}, got {report!r}"
            )
    for j in range(1, len(reports)):
        before, after = reports[j - 1], reports[j]
        if before is None or after is None:
            continue
        if after < before or after - before not in (0, step):
            raise ValueError(
                f"estimates are not reports of a padded audience rounded down to a multiple of "
                f"{step}: {before} then {after} at padding {j}"
            )
        if after > before:
            return int(after - j)
    raise ValueError(
        "no jump between two consecutive shown reports: add more padding (at least step + 1 "
        "consecutive shown reports are needed)"
    )
