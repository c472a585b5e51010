"""A lower bound on the error of any epsilon-DP mechanism: the packing argument.

The queries: the ``k`` one-way marginals of a table whose records are bit vectors in
``{0, 1}^k`` (query ``j`` counts the records whose bit ``j`` is 1). Suppose an epsilon-DP
mechanism ``M`` answers all ``k`` of them with error below ``alpha`` in every coordinate, with
probability at least ``1 - beta``, on every table. Take, for each ``w`` in ``{0, 1}^k``, the table
``D_w`` of ``s = ceil(2 alpha)`` copies of ``w`` (plus, under replace-one, the same ``n - s``
all-zero rows). The answers ``s w`` are ``s >= 2 alpha`` apart in some coordinate, so the
open boxes ``B_w`` of radius ``alpha`` around them are disjoint. Every ``D_w`` is within ``s``
changes of ``D_0`` (add/remove from the empty table, or replace-one from ``n`` zero rows), so by
group privacy ``P[M(D_0) in B_w] >= e^{-epsilon s} (1 - beta)``. Summing over the ``2^k`` disjoint
boxes, ``1 >= 2^k e^{-epsilon s} (1 - beta)``, i.e. ``s >= (k ln 2 + ln(1 - beta)) / epsilon``;
with ``s < 2 alpha + 1``,

    alpha > (k ln 2 + ln(1 - beta)) / (2 epsilon) - 1/2.

That is the packing lower bound, error ``Omega(k / epsilon)`` (Hardt & Talwar 2010, "On the
geometry of differential privacy", STOC, whose volume argument it specialises; Dwork & Roth 2014,
Section 8.2; Vadhan 2017, "The complexity of differential privacy", Section 5.2, where it is
stated for ``beta = 1/2`` as ``n >= (k - 1) ln 2 / epsilon``). The Laplace mechanism, noise
``Lap(k / epsilon)`` on each marginal (one record moves all ``k`` by at most 1: L1 sensitivity
``k``), is within a ``log k`` factor of it: :func:`marginals_laplace_error`.
"""

from __future__ import annotations

import math

from dplib._validation import check_epsilon, check_integer, check_probability

__all__ = ["marginals_error_lower_bound", "marginals_laplace_error"]


def _check(k: int, epsilon: float, beta: float) -> tuple[int, float, float]:
    kk = check_integer(k, "k", minimum=1)
    eps = check_epsilon(epsilon)
    b = check_probability(beta, "beta", low_open=True, high_open=True)
    return kk, eps, b


def _finite(value: float, epsilon: float) -> float:
    if not math.isfinite(value):
        raise ValueError(
            f"epsilon is too small: the error overflows a double, got epsilon={epsilon!r}"
        )
    return value


def marginals_error_lower_bound(k: int, epsilon: float, beta: float = 0.5) -> float:
    """No epsilon-DP mechanism answers ``k`` one-way marginals with error at most this.

    Parameters
    ----------
    k : int
        The number of counting queries (bits per record), ``>= 1``.
    epsilon : float
        Finite, ``> 0``.
    beta : float
        The allowed failure probability, in ``(0, 1)``.

    Returns
    -------
    float
        ``max(0, (k ln 2 + ln(1 - beta)) / (2 epsilon) - 1/2)``: for every epsilon-DP mechanism
        (add/remove, or replace-one with ``n`` at least twice this plus one) there is a table on
        which, with probability more than ``beta``, some marginal's error is at least this value.

    Raises
    ------
    TypeError, ValueError
        If ``k`` is not an integer ``>= 1``, ``epsilon`` not finite and ``> 0`` or ``beta`` not in
        ``(0, 1)``.

    Notes
    -----
    The packing argument of the module docstring (Hardt & Talwar 2010; Dwork & Roth 2014,
    Section 8.2; Vadhan 2017, Section 5.2).

    Examples
    --------
    >>> round(marginals_error_lower_bound(100, 1.0), 3)
    33.811
    """
    kk, eps, b = _check(k, epsilon, beta)
    return _finite(max(0.0, (kk * math.log(2.0) + math.log1p(-b)) / (2.0 * eps) - 0.5), epsilon)


def marginals_laplace_error(k: int, epsilon: float, beta: float = 0.5) -> float:
    """The error the Laplace mechanism achieves on ``k`` one-way marginals, w.p. ``1 - beta``.

    Parameters
    ----------
    k, epsilon, beta
        As in :func:`marginals_error_lower_bound`.

    Returns
    -------
    float
        The ``alpha`` with ``P[max_j |Z_j| < alpha] = 1 - beta`` for ``k`` independent
        ``Z_j ~ Lap(k / epsilon)``: ``-(k / epsilon) ln(1 - (1 - beta)^(1/k))``, about
        ``(k / epsilon) ln(k / beta)`` (epsilon-DP under add/remove: L1 sensitivity ``k``).

    Raises
    ------
    TypeError, ValueError
        As :func:`marginals_error_lower_bound`.

    Examples
    --------
    >>> round(marginals_laplace_error(1, 1.0), 6)  # the median of |Lap(1)|
    0.693147
    """
    kk, eps, b = _check(k, epsilon, beta)
    u = -math.expm1(math.log1p(-b) / kk)  # 1 - (1 - beta)^(1/k)
    # for a beta so small that u underflows, 1 - (1 - beta)^(1/k) = beta / k to double precision
    log_u = math.log(u) if u > 0 else math.log(b) - math.log(kk)
    return _finite(-(kk / eps) * log_u, epsilon)
