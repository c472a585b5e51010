r"""Privacy amplification by shuffling: the central (epsilon, delta) of shuffled local reports.

``n`` users each apply an ``epsilon0``-LDP randomizer to their own record and a trusted shuffler
sends the server the multiset of reports, in random order. The shuffled output is much more
private, for each user, than ``epsilon0``: Feldman, McMillan & Talwar (2021), "Hiding among the
clones: a simple and nearly optimal analysis of privacy amplification by shuffling", FOCS
(arXiv:2012.12803). Their argument: with probability ``e^{-epsilon0}`` every other user's report
is distributed like a *clone* of user 1's report (half the time as if user 1 held ``x_1``, half as
if ``x_1'``), so the server's view is a post-processing of the pair (Theorem 3.2)

.. math::
    P = (A + \Delta,\; C - A + 1 - \Delta), \qquad Q = (A + 1 - \Delta,\; C - A + \Delta),

with :math:`C \sim \mathrm{Bin}(n - 1, e^{-\varepsilon_0})` clones among the **other** ``n - 1``
users, :math:`A \sim \mathrm{Bin}(C, 1/2)` and :math:`\Delta \sim \mathrm{Bern}(e^{\varepsilon_0} /
(e^{\varepsilon_0} + 1))`. The shuffled mechanism is :math:`(\varepsilon, \delta)`-DP, for
datasets that differ in one user's record (replacement), whenever the hockey-stick divergence of
``P`` and ``Q`` at :math:`e^\varepsilon` is at most :math:`\delta`.

* :func:`shuffle_epsilon_closed_form` -- the closed-form bound of Theorem 3.1, in the form of the
  authors' reference implementation (``closedformanalysis`` in github.com/apple/ml-shuffling-
  amplification, ``computeamplification.py``);
* :func:`clone_pair_delta` -- that divergence, computed exactly (every ``C``, closed-form sums
  over ``A`` with binomial cdfs: the authors' Appendix E with step 1);
* :func:`shuffle_epsilon_numerical` -- the smallest ``epsilon`` with ``clone_pair_delta <= delta``,
  by bisection: the tighter numerical bound.

Both are upper bounds on the true epsilon of a shuffled protocol; neither needs the randomizer to
be anything but ``epsilon0``-LDP, and neither claims more than ``epsilon0``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from dplib._validation import check_delta, check_epsilon, check_integer, check_real

__all__ = [
    "shuffle_closed_form_valid",
    "shuffle_epsilon_closed_form",
    "clone_pair_delta",
    "shuffle_epsilon_numerical",
]

#: Largest n of :func:`shuffle_epsilon_numerical`: its cost grows like sqrt(n) (the clone counts
#: it sums over), about 0.1 to 2 s at 10**6 (the largest n of the course's notebook).
_MAX_N_NUMERICAL = 10**6
#: Beyond this epsilon0 a clone has probability e^-epsilon0 < 4e-44, and e^epsilon0 / (e^epsilon0
#: + 1) rounds to 1: the clone pair is randomized response that always tells the truth, whose
#: divergence is 1 below epsilon0. The numerical bound is epsilon0 itself (the bisection returns it
#: from epsilon0 = 37 on), and is returned without computing e^epsilon, which overflows past 709.
_MAX_EPSILON0_NUMERICAL = 100.0
#: Smallest tol of :func:`shuffle_epsilon_numerical`: finer brackets are below the accuracy of
#: the binomial sums (and, for tol near 0, the bisection would never end).
_MIN_TOL = 1e-10


#: Largest number of users: the formulas divide by float(n), which overflows beyond ~1.8e308.
_MAX_N = 10**300
#: Largest n of :func:`clone_pair_delta`: its window of C values grows like sqrt(n) (0.4 s here).
_MAX_N_CLONE = 10**9


def _check_n(n: Any, maximum: int = _MAX_N, cap: str = "10**300") -> int:
    out = check_integer(n, "n", minimum=1)
    if out > maximum:
        shown = repr(n) if len(str(out)) <= 20 else f"an integer of {len(str(out))} digits"
        raise ValueError(f"n must be an integer in [1, {cap}], got {shown}")
    return out


def shuffle_closed_form_valid(epsilon0: float, n: int, delta: float) -> bool:
    """Whether ``epsilon0 <= ln(n / (16 ln(4 / delta)))``: the range in which Theorem 3.1 applies.

    The paper states the condition with ``ln(2 / delta)``; this is the (slightly stricter) check
    of the authors' implementation, which is the one :func:`shuffle_epsilon_closed_form` uses.
    """
    epsilon0 = check_epsilon(epsilon0, "epsilon0")
    n = _check_n(n)
    delta = check_delta(delta, allow_zero=False)
    ratio = n / (16.0 * math.log(4.0 / delta))
    return ratio > 1.0 and epsilon0 <= math.log(ratio)


def shuffle_epsilon_closed_form(epsilon0: float, n: int, delta: float) -> float:
    r"""Closed-form epsilon of ``n`` shuffled ``epsilon0``-LDP reports (FMT 2021, Theorem 3.1).

    With :math:`a = 8\sqrt{e^{\varepsilon_0}\ln(4/\delta)/n}`, :math:`c = 8 e^{\varepsilon_0}/n` and
    :math:`\varepsilon' = \ln(1 + a + c)`,

    .. math::
        \varepsilon = \ln\Big(1 + \frac{1 - e^{-\varepsilon_0}}{1 + e^{-(\varepsilon_0 + \varepsilon')}}
        \,(a + c)\Big),

    valid when :math:`\varepsilon_0 \le \ln(n / (16 \ln(4/\delta)))` (see
    :func:`shuffle_closed_form_valid`). Outside that range no amplification is claimed and
    ``epsilon0`` is returned: shuffling ``epsilon0``-LDP reports is always ``(epsilon0, 0)``-DP.

    Parameters
    ----------
    epsilon0 : float
        The local randomizer's epsilon, finite and > 0.
    n : int
        Number of users whose reports are shuffled together, >= 1.
    delta : float
        In (0, 1).

    Returns
    -------
    float
        The shuffled mechanism is ``(epsilon, delta)``-DP under replacement of one user's record.

    Raises
    ------
    ValueError
        epsilon0 not finite or <= 0, n < 1 or n > 10**300, delta outside (0, 1).

    References
    ----------
    V. Feldman, A. McMillan, K. Talwar (2021), FOCS, Theorem 3.1; the formula is that of the
    authors' ``closedformanalysis`` (github.com/apple/ml-shuffling-amplification), which gives
    0.5378040242374512 for ``n = 10**5``, ``epsilon0 = 4``, ``delta = 1e-6`` (their README). Its
    factor :math:`(1 - e^{-\varepsilon_0})/(1 + e^{-(\varepsilon_0+\varepsilon')})` is at least the
    paper's displayed :math:`(e^{\varepsilon_0} - 1)/(e^{\varepsilon_0} + 1)`, so it is the more
    conservative of the two.
    """
    if not shuffle_closed_form_valid(epsilon0, n, delta):
        return float(epsilon0)
    e0 = math.exp(epsilon0)
    a = 8.0 * math.sqrt(e0 * math.log(4.0 / delta) / n)
    c = 8.0 * e0 / n
    first = math.log1p(a + c)
    factor = -math.expm1(-epsilon0) / (1.0 + math.exp(-epsilon0 - first))
    return float(math.log1p(factor * (a + c)))


def _window(n: int, epsilon0: float) -> tuple[int, int]:
    """Values of C ~ Bin(n - 1, e^-eps0) summed exactly: mean +- 12 sd + 40 (the rest, whose mass
    is computed exactly and is below 1e-18 or so, counts fully in delta)."""
    p = math.exp(-epsilon0)
    mean = (n - 1) * p
    spread = 12.0 * math.sqrt((n - 1) * p * (1.0 - p)) + 40.0
    return max(int(mean - spread), 0), min(int(math.ceil(mean + spread)), n - 1)


def clone_pair_delta(epsilon0: float, n: int, epsilon: float) -> float:
    r"""Exact hockey-stick divergence of FMT's clone pair ``(P, Q)`` at ``e^epsilon``.

    :math:`\delta(\varepsilon) = \sum_{c} \Pr[C = c] \sum_{a} (P_c(a) - e^\varepsilon Q_c(a))_+`,
    with :math:`P_c(a) = \alpha\,b_c(a - 1) + (1 - \alpha)\,b_c(a)`,
    :math:`Q_c(a) = (1 - \alpha)\,b_c(a - 1) + \alpha\,b_c(a)`, :math:`b_c` the
    :math:`\mathrm{Bin}(c, 1/2)` pmf, :math:`\alpha = e^{\varepsilon_0}/(e^{\varepsilon_0} + 1)` and
    :math:`C \sim \mathrm{Bin}(n - 1, e^{-\varepsilon_0})`. (Here ``a`` counts the first coordinate;
    the second is ``c + 1 - a``.) The pair is symmetric, so both directions agree. Values of ``C``
    more than 12 standard deviations (plus 40) from its mean count fully (their exact probability
    is added), which keeps the result an upper bound.

    By FMT 2021, Theorem 3.2, ``n`` shuffled ``epsilon0``-LDP reports are
    ``(epsilon, clone_pair_delta(epsilon0, n, epsilon))``-DP (replacement of one user's record).
    With ``n = 1`` it is randomized response's own profile: ``(alpha - e^eps (1 - alpha))_+``.

    Raises
    ------
    ValueError
        epsilon0 not finite or <= 0, n < 1 or n > 10**9, epsilon negative or not finite.

    References
    ----------
    Feldman, McMillan & Talwar (2021), Theorem 3.2 and Appendix E (``deltacomp`` with
    ``step = 1`` in the authors' implementation).
    """
    epsilon0 = check_epsilon(epsilon0, "epsilon0")
    n = _check_n(n, _MAX_N_CLONE, "10**9 (the cost grows like sqrt(n))")
    epsilon = check_real(epsilon, "epsilon", minimum=0.0)
    alpha = 1.0 / (1.0 + math.exp(-epsilon0))           # P[Delta = 1] = e^eps0 / (e^eps0 + 1)
    numerator = alpha - math.exp(epsilon) * (1.0 - alpha)
    if numerator <= 0.0:                               # e^eps >= e^eps0: P <= e^eps Q everywhere
        return 0.0
    # Q_c(a) / P_c(a) decreases in a (b_c(a - 1) / b_c(a) = a / (c - a + 1) grows), so for each c
    # {Q > e^eps P} = {a < beta (c + 1)}; the pair is symmetric, so D(Q || P) = D(P || Q).
    rho = numerator / (math.exp(epsilon) * alpha - (1.0 - alpha))
    beta = rho / (1.0 + rho)
    clones = stats.binom(n - 1, math.exp(-epsilon0))
    low, high = _window(n, epsilon0)
    c = np.arange(low, high + 1)
    left_out = float(clones.cdf(low - 1) + clones.sf(high)) if c.size < n else 0.0
    t = np.ceil(beta * (c + 1)) - 1                    # largest a with a < beta (c + 1)
    f_t = stats.binom.cdf(t, c, 0.5)                   # F_c(t) = P[Bin(c, 1/2) <= t]
    f_t1 = stats.binom.cdf(t - 1, c, 0.5)
    # sum_{a <= t} P_c(a) = alpha F_c(t - 1) + (1 - alpha) F_c(t) (first coordinate A + Delta);
    # Q swaps alpha and 1 - alpha
    p_mass = (1.0 - alpha) * f_t + alpha * f_t1
    q_mass = alpha * f_t + (1.0 - alpha) * f_t1
    per_c = np.maximum(q_mass - math.exp(epsilon) * p_mass, 0.0)
    return min(float(np.dot(clones.pmf(c), per_c) + left_out), 1.0)


def shuffle_epsilon_numerical(epsilon0: float, n: int, delta: float, *, tol: float = 1e-7) -> float:
    """Smallest epsilon with ``clone_pair_delta(epsilon0, n, epsilon) <= delta``, by bisection.

    The tighter numerical bound of FMT 2021 (Section 5 and Appendix E): 2 to 4 times
    below :func:`shuffle_epsilon_closed_form`, and valid for every ``n`` and ``epsilon0`` (never
    above ``epsilon0``). The returned value is the upper end of the final bracket, so the
    guarantee holds at it.

    Parameters
    ----------
    epsilon0, n, delta
        As for :func:`shuffle_epsilon_closed_form`, with ``n <= 10**6``.
    tol : float
        Absolute width of the final bracket, >= 1e-10.

    Returns
    -------
    float
        For ``epsilon0 > 100`` no clone is representable and this is ``epsilon0``, the trivial
        bound (shuffled ``epsilon0``-LDP reports are ``(epsilon0, 0)``-DP), as the bisection finds
        from ``epsilon0 = 37`` on.

    Raises
    ------
    ValueError
        epsilon0 not finite or <= 0, n < 1 or n > 10**6 (use :func:`shuffle_epsilon_closed_form`
        for more users), delta outside (0, 1), tol below 1e-10 or not finite.

    References
    ----------
    Feldman, McMillan & Talwar (2021); the authors' ``numericalanalysis`` brackets the value:
    ``n = 10**5, epsilon0 = 4, delta = 1e-6`` gives an epsilon in [0.1675, 0.1728] (their README).
    """
    epsilon0 = check_epsilon(epsilon0, "epsilon0")
    n = _check_n(n)
    if n > _MAX_N_NUMERICAL:
        raise ValueError(
            f"n must be an integer in [1, 10**6] for the numerical bound (its cost grows like "
            f"sqrt(n)), got {n}: use shuffle_epsilon_closed_form for more users"
        )
    delta = check_delta(delta, allow_zero=False)
    tol = check_real(tol, "tol", minimum=_MIN_TOL)
    if epsilon0 > _MAX_EPSILON0_NUMERICAL:
        return float(epsilon0)
    low, high = 0.0, epsilon0
    if clone_pair_delta(epsilon0, n, 0.0) <= delta:
        return 0.0
    if shuffle_closed_form_valid(epsilon0, n, delta):      # a smaller first bracket, if it holds
        start = shuffle_epsilon_closed_form(epsilon0, n, delta)
        if clone_pair_delta(epsilon0, n, start) <= delta:
            high = start
    while high - low > tol:
        mid = 0.5 * (low + high)
        if not low < mid < high:  # the bracket is as fine as floats allow
            break
        if clone_pair_delta(epsilon0, n, mid) <= delta:
            high = mid
        else:
            low = mid
    return float(high)
