"""Privacy accounting and noise calibration for DP-SGD (the Poisson-subsampled Gaussian).

One DP-SGD step (Abadi et al. 2016) samples each example with probability q (the sampling
rate, batch size / dataset size), clips per-example gradients to L2 norm C and adds
N(0, σ² C²) noise to their sum: a Poisson-subsampled Gaussian mechanism with noise multiplier
σ. :func:`dpsgd_epsilon` gives the ε of ``steps`` such steps at a given δ, with either accountant:

- ``"rdp"`` — Rényi DP at dp-accounting's default orders, then the tight conversion
  (:mod:`dplib.accounting.rdp`); what TF Privacy and Opacus report by default;
- ``"pld"`` — privacy-loss-distribution accounting (:mod:`dplib.accounting.pld`); tighter (a
  smaller, still valid ε), what dp-accounting's ``PLDAccountant`` reports.

:func:`noise_multiplier_for` inverts it: the smallest σ that meets a target ε.

References
----------
.. [ACG+16] M. Abadi, A. Chu, I. Goodfellow, H. B. McMahan, I. Mironov, K. Talwar, L. Zhang,
   "Deep Learning with Differential Privacy", CCS 2016, arXiv:1607.00133.
.. [MTZ19] I. Mironov, K. Talwar, L. Zhang, "Rényi Differential Privacy of the Sampled
   Gaussian Mechanism", arXiv:1908.10530, 2019.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize

from dplib._validation import (
    check_delta,
    check_epsilon,
    check_integer,
    check_positive,
    check_probability,
)
from dplib.accounting import pld as _pld
from dplib.accounting.rdp import DEFAULT_RDP_ORDERS, rdp_subsampled_gaussian, rdp_to_dp

__all__ = ["ACCOUNTANTS", "dpsgd_epsilon", "noise_multiplier_for"]

#: The accountants :func:`dpsgd_epsilon` and :func:`noise_multiplier_for` understand.
ACCOUNTANTS: tuple[str, ...] = ("rdp", "pld")

# Search range of noise_multiplier_for. Below 0.1 the PLD grid (loss range ~ 1/σ²) gets huge
# and DP-SGD is no longer private in any useful sense; above 1e4 every ε is ~0.
SIGMA_MIN, SIGMA_MAX = 0.1, 1e4


def _check_dpsgd(sampling_rate: Any, steps: Any, delta: Any, accountant: Any) -> tuple[float, int, float]:
    if not isinstance(accountant, str) or accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")
    q = check_probability(sampling_rate, "sampling_rate", low_open=True)
    steps = check_integer(steps, "steps", minimum=1)
    delta = check_delta(delta, "delta", allow_zero=False)
    return q, steps, delta


def _epsilon(q: float, sigma: float, steps: int, delta: float, accountant: str,
             finest: float = 1e-4) -> float:
    """ε of the validated arguments. PLD uses the finest grid, from ``finest`` up, that fits
    the memory limits (each is a valid upper bound); none fitting is a ValueError."""
    sigma = min(sigma, _pld.SIGMA_MAX)  # more noise never costs more: the bound at 1e100 holds
    if accountant == "rdp":
        orders = np.asarray(DEFAULT_RDP_ORDERS)
        rdp = steps * rdp_subsampled_gaussian(q, sigma, orders)  # [M17] Prop. 1: RDP adds up
        return rdp_to_dp(orders, rdp, delta)[0]
    found = _pld.auto_epsilon(q, sigma, steps, delta, finest=finest)
    if found is None:
        raise ValueError(
            f"PLD accounting of steps={steps} at noise_multiplier={sigma:g}, "
            f"sampling_rate={q:g} needs more grid points than are allowed even on the coarsest "
            f"grid ({_pld.AUTO_DISCRETIZATIONS[-1]:g}); use accountant='rdp'"
        )
    if not math.isfinite(found[0]):
        raise ValueError(
            f"delta={delta:g} is below what PLD accounting can certify for steps={steps} (the "
            "truncated tails, about 1e-15 of the mass, count as infinite loss); use a larger "
            "delta or accountant='rdp'"
        )
    return found[0]


def _check_noise_multiplier(noise_multiplier: Any) -> float:
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    if sigma < _pld.SIGMA_MIN:
        raise ValueError(
            f"noise_multiplier must be >= {_pld.SIGMA_MIN:g} (below it the privacy loss, of "
            f"order 1/noise_multiplier^2, overflows), got {noise_multiplier!r}"
        )
    return sigma


def _solve(gap: Any, start: float, step: float, xtol: float, target: float, describe: str) -> float:
    """Root of the decreasing function ``gap`` of log σ: bracket from ``start``, then brentq.

    Returns a log σ at which ``gap`` was evaluated and found ≤ 0 (the target is met), within
    ``xtol`` of the sign change. The invariant is kept by construction: ``hi`` always holds a
    point with gap ≤ 0, and it is what is returned; brentq only proposes a better ``hi``. (The
    PLD ε is not exactly monotone in σ, grid effects of ~1e-8, so no step past a root is
    trusted without evaluating it.)
    """
    lo_limit, hi_limit = math.log(SIGMA_MIN), math.log(SIGMA_MAX)
    g_start = gap(start)
    if g_start > 0:  # too little noise: raise σ until the target is met
        lo, hi = start, start
        while True:
            hi = min(hi + step, hi_limit)
            g_hi = gap(hi)
            if g_hi <= 0:
                break
            if hi >= hi_limit:
                raise ValueError(
                    f"{describe} is unreachable: even noise_multiplier={SIGMA_MAX:g} gives "
                    f"epsilon={g_hi + target:.3g}"
                )
            lo = hi
    else:  # enough noise: lower σ until the target is exceeded
        hi, g_hi, lo = start, g_start, start
        while True:
            lo = max(lo - step, lo_limit)
            if gap(lo) > 0:
                break
            if lo <= lo_limit:
                raise ValueError(
                    f"{describe} is unreachable: it is so large that noise_multiplier="
                    f"{SIGMA_MIN:g} (the smallest searched) already gives only "
                    f"epsilon={gap(lo) + target:.3g}"
                )
            hi, g_hi = lo, gap(lo)
    if g_hi == 0:
        return hi
    root = optimize.brentq(gap, lo, hi, xtol=xtol, rtol=1e-12)
    if gap(root) <= 0:
        return root
    # brentq's root is on the wrong side: bisect [root, hi], keeping gap(hi) <= 0.
    lo = root
    for _ in range(200):
        if hi - lo <= xtol:
            break
        mid = 0.5 * (lo + hi)
        if gap(mid) <= 0:
            hi = mid
        else:
            lo = mid
    return hi


def dpsgd_epsilon(
    sampling_rate: float,
    noise_multiplier: float,
    steps: int,
    delta: float,
    *,
    accountant: str = "rdp",
) -> float:
    """ε after ``steps`` DP-SGD steps, under add/remove-one neighbouring.

    Parameters
    ----------
    sampling_rate : float
        Poisson sampling probability q in (0, 1] (expected batch size / dataset size).
    noise_multiplier : float
        σ > 0: noise standard deviation divided by the clipping norm.
    steps : int
        Number of noisy gradient steps T ≥ 1 (epochs × 1/q).
    delta : float
        Target δ in (0, 1), customarily below 1/dataset size.
    accountant : {"rdp", "pld"}, keyword-only
        ``"rdp"``: T · ρ_{q,σ}(α) at dp-accounting's ``DEFAULT_RDP_ORDERS``, converted by
        [BBGHS20] Theorem 21, exactly as dp-accounting's ``RdpAccountant``. ``"pld"``: the
        connect-the-dots PLD accountant, as dp-accounting's ``PLDAccountant`` (grid 1e-4).

    Returns
    -------
    float
        ε ≥ 0 (``inf`` if no finite ε is certified).

    Raises
    ------
    ValueError
        If ``sampling_rate`` is outside (0, 1], ``noise_multiplier`` ≤ 0, ``steps`` < 1,
        ``delta`` outside (0, 1), or ``accountant`` unknown (the message lists the allowed ones).
    TypeError
        If ``steps`` is not an integer.

    Notes
    -----
    RDP of one step: [MTZ19] Sections 3.3-3.4; composition: RDP curves add ([M17]
    Proposition 1); PLD: [DGKKM22] Algorithm 1 then FFT convolution. PLD's ε is never larger.

    Examples
    --------
    >>> round(dpsgd_epsilon(256 / 60000, 1.1, 14062, 1e-5), 3)   # MNIST, 60 epochs
    2.597
    """
    q, steps, delta = _check_dpsgd(sampling_rate, steps, delta, accountant)
    sigma = _check_noise_multiplier(noise_multiplier)
    return _epsilon(q, sigma, steps, delta, accountant)


def noise_multiplier_for(
    epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    *,
    accountant: str = "rdp",
) -> float:
    """Smallest noise multiplier σ for which ``steps`` DP-SGD steps are (ε, δ)-DP.

    Parameters
    ----------
    epsilon : float
        Target ε (finite, > 0).
    delta : float
        Target δ in (0, 1).
    sampling_rate : float
        Poisson sampling probability q in (0, 1].
    steps : int
        Number of steps (≥ 1).
    accountant : {"rdp", "pld"}, keyword-only
        Which accountant defines ε (see :func:`dpsgd_epsilon`).

    Returns
    -------
    float
        σ in [0.1, 1e4] with ``dpsgd_epsilon(q, σ, steps, δ, accountant=...) <= epsilon``,
        equal to it to about 1e-8 relative (σ within 1e-12 in log for RDP, 1e-9 for PLD).

    Raises
    ------
    ValueError
        For arguments out of range (as :func:`dpsgd_epsilon`, and ``epsilon`` ≤ 0), or when the
        target is unreachable in σ ∈ [0.1, 1e4]: an ε so large that even σ = 0.1 gives less, or
        so small that σ = 1e4 does not reach it (with the default RDP orders, at most 1024,
        ε below about 0.004 at δ = 1e-5 is out of reach whatever the noise).
    TypeError
        If ``steps`` is not an integer.

    Notes
    -----
    ε(σ) is decreasing in σ. The root of ε(log σ) − ε_target is bracketed by doubling/halving σ
    from σ = 1 within [0.1, 1e4] and found by Brent's method (``scipy.optimize.brentq``). For
    ``"pld"`` the RDP answer is the starting point (an upper end, PLD's ε being smaller); the
    PLD root is found first on a 10× coarser grid (1e-3), bracketed in steps of 1.25, then
    refined on the 1e-4 grid, bracketed in steps of 1.002, so that most PLD evaluations are
    cheap. The returned σ always meets the target: ε(σ) ≤ ε_target.

    Examples
    --------
    >>> sigma = noise_multiplier_for(2.0, 1e-5, 0.01, 1000)
    >>> round(dpsgd_epsilon(0.01, sigma, 1000, 1e-5), 6)
    2.0
    """
    q, steps, delta = _check_dpsgd(sampling_rate, steps, delta, accountant)
    target = check_epsilon(epsilon)

    describe = f"epsilon={target} with delta={delta}, sampling_rate={q}, steps={steps}"

    def make_gap(acc: str, finest: float = 1e-4) -> Any:
        cache: dict[float, float] = {}  # brentq re-evaluates the ends; PLD calls are costly

        def gap(log_sigma: float) -> float:
            # ε at exactly the σ that will be returned, math.exp(log_sigma), and by the same
            # code path as dpsgd_epsilon: gap <= 0 is then the user's check, to the bit.
            if log_sigma not in cache:
                cache[log_sigma] = _epsilon(q, math.exp(log_sigma), steps, delta, acc, finest) - target
            return cache[log_sigma]

        return gap

    log_sigma = _solve(make_gap("rdp"), 0.0, math.log(2.0), 1e-12, target, describe)
    if accountant == "pld":
        # PLD's ε ≤ RDP's ε, so the RDP σ is an upper end. Solve on a 10x coarser grid first
        # (cheap, and close: both grids give pessimistic ε), then refine on the 1e-4 grid.
        log_sigma = _solve(make_gap("pld", 1e-3), log_sigma, math.log(1.25), 1e-6, target, describe)
        log_sigma = _solve(make_gap("pld"), log_sigma, math.log(1.002), 1e-9, target, describe)
    sigma = math.exp(log_sigma)
    # Final check, by the very computation dpsgd_epsilon does (the search already guarantees
    # it; should it ever fail, more noise is added until it holds).
    for _ in range(1000):
        if _epsilon(q, sigma, steps, delta, accountant) <= target:
            return sigma
        sigma = sigma * (1 + 1e-9)  # pragma: no cover
    raise ValueError(f"{describe}: no noise multiplier found that meets it")  # pragma: no cover
