"""Private selection: the exponential mechanism, report-noisy-max and permute-and-flip.

Each mechanism picks the index of one candidate among ``scores`` (utilities ``u_i(D)``, higher
is better) so that the choice is epsilon-DP when every score moves by at most ``sensitivity``
between neighbouring datasets:

* :func:`exponential_mechanism` samples ``i`` with probability proportional to
  ``exp(epsilon u_i / (2 Delta))`` (McSherry & Talwar 2007);
  :func:`exponential_mechanism_probabilities` returns those probabilities.
* :func:`report_noisy_max` adds independent noise to every score and reports the argmax
  (Dwork & Roth 2014, Section 3.3). Gumbel noise gives exactly the exponential mechanism,
  exponential noise gives exactly permute-and-flip (Ding et al. 2021).
* :func:`permute_and_flip` (McKenna & Sheldon 2020) is never worse in expected utility than
  the exponential mechanism at the same epsilon.

All of them draw many selections at once with ``size=``; all are stable for scores in the
millions, because only differences ``u_i - max_j u_j`` are ever exponentiated.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import softmax

from dplib._validation import (
    as_generator,
    as_real,
    check_bool,
    check_epsilon,
    check_integer,
    check_scores,
    check_sensitivity,
)

__all__ = [
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "report_noisy_max",
    "permute_and_flip",
]

_NOISES = ("gumbel", "exponential", "laplace")

# report_noisy_max draws a (rows, n_candidates) block of noise at a time: at most this many
# numbers (80 MB of float64), whatever ``size`` is.
_MAX_BLOCK = 10_000_000


def _check_selection(
    scores: Any, sensitivity: Any, epsilon: Any
) -> tuple[np.ndarray, float, float]:
    """Validate the arguments shared by every selection mechanism."""
    arr = check_scores(scores)
    try:
        delta_u = check_sensitivity(sensitivity, allow_zero=False)
    except ValueError as exc:
        if as_real(sensitivity, "sensitivity") == 0.0:
            raise ValueError(
                f"{exc}: the selection probabilities divide the scores by it, so sensitivity "
                "0 is ill-defined; if the scores truly do not depend on the data, take their "
                "argmax without any noise"
            ) from None
        raise
    eps = check_epsilon(epsilon)
    scale = 2.0 * delta_u / eps
    if not (math.isfinite(eps / delta_u) and math.isfinite(scale) and scale > 0):
        raise ValueError(
            f"epsilon / sensitivity must be representable as a float, got epsilon={epsilon!r} "
            f"and sensitivity={sensitivity!r}; rescale the scores"
        )
    return arr, delta_u, eps


#: Largest number of selections per call (each is an int64; report_noisy_max works in blocks).
_MAX_SELECTIONS = 2**27


def _check_size(size: Any) -> int | None:
    if size is None:
        return None
    n = check_integer(size, "size", minimum=1)
    if n > _MAX_SELECTIONS:
        raise ValueError(
            f"size must be at most 2**27 = {_MAX_SELECTIONS} selections per call, got {size!r}"
        )
    return n


def _check_bool(value: Any, name: str) -> bool:
    return check_bool(value, name)


def _shifted(scores: np.ndarray) -> np.ndarray:
    """``scores - max(scores)``: values <= 0 (possibly -inf for spans beyond float range)."""
    with np.errstate(over="ignore"):
        return scores - scores.max()


def exponential_mechanism_probabilities(
    scores: Any,
    sensitivity: float,
    epsilon: float,
    *,
    monotonic: bool = False,
) -> np.ndarray:
    """Exact selection probabilities of the exponential mechanism.

    Parameters
    ----------
    scores : array_like, 1-d
        Utility ``u_i(D)`` of each candidate (higher is better), finite, non-empty.
    sensitivity : float
        ``Delta``, the largest change of any single score between neighbouring datasets, > 0.
    epsilon : float
        Finite, > 0.
    monotonic : bool, keyword-only
        Set it only when, between any two neighbours, all scores move in the same direction
        (e.g. counts): the exponent may then be ``epsilon u / Delta``, twice as sharp.

    Returns
    -------
    numpy.ndarray
        ``p`` of the same length as ``scores``, ``p >= 0``, summing to 1.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``scores`` is empty, not 1-d or not finite, ``sensitivity <= 0`` or ``epsilon`` is
        not a finite number > 0.

    Notes
    -----
    McSherry & Talwar (2007); Dwork & Roth (2014), Theorem 3.10:

    .. math:: p_i = \\frac{\\exp(\\varepsilon u_i / (2\\Delta))}
                        {\\sum_j \\exp(\\varepsilon u_j / (2\\Delta))},

    or with ``epsilon u_i / Delta`` for monotonic utilities (Dwork & Roth 2014, Remark after
    Theorem 3.10). Computed as ``softmax(c (u - max u))``, so scores in the millions neither
    overflow nor turn into NaN.

    References
    ----------
    F. McSherry and K. Talwar, "Mechanism Design via Differential Privacy", FOCS 2007.

    C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014,
    Section 3.4.

    Examples
    --------
    >>> exponential_mechanism_probabilities([1.0, 1.0], sensitivity=1.0, epsilon=1.0)
    array([0.5, 0.5])
    """
    arr, delta_u, eps = _check_selection(scores, sensitivity, epsilon)
    monotonic = _check_bool(monotonic, "monotonic")
    # McSherry & Talwar 2007: exp(eps u / (2 Delta)); Dwork & Roth 2014, Remark after
    # Theorem 3.10: exp(eps u / Delta) for monotonic utilities.
    coefficient = eps / delta_u if monotonic else eps / (2.0 * delta_u)
    with np.errstate(over="ignore"):
        logits = coefficient * (arr - arr.max())  # <= 0; -inf only beyond the float range
    return softmax(logits)


def exponential_mechanism(
    scores: Any,
    sensitivity: float,
    epsilon: float,
    *,
    rng: Any = None,
    monotonic: bool = False,
    size: int | None = None,
) -> int | np.ndarray:
    """Select a candidate with the exponential mechanism.

    Parameters
    ----------
    scores : array_like, 1-d
        Utility ``u_i(D)`` of each candidate (higher is better), finite, non-empty.
    sensitivity : float
        ``Delta``, the largest change of any single score between neighbouring datasets, > 0.
    epsilon : float
        Finite, > 0.
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness, normalised by :func:`dplib._validation.as_generator`.
    monotonic : bool, keyword-only
        See :func:`exponential_mechanism_probabilities`.
    size : int or None, keyword-only
        ``None`` for one selection, else the number of independent selections (>= 1).

    Returns
    -------
    int or numpy.ndarray
        The index of the selected candidate, or an int array of ``size`` indices.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        As :func:`exponential_mechanism_probabilities`, or if ``size < 1``. Nothing is drawn
        from ``rng`` when a call is refused.

    Notes
    -----
    Draws ``i`` with probability ``p_i ∝ exp(epsilon u_i / (2 Delta))`` (McSherry & Talwar
    2007; Dwork & Roth 2014, Theorem 3.10), or ``exp(epsilon u_i / Delta)`` when
    ``monotonic`` (Dwork & Roth 2014, Remark after Theorem 3.10), by inverse-CDF sampling of
    :func:`exponential_mechanism_probabilities`. Each selection is epsilon-DP; ``size``
    selections on the same data cost ``size * epsilon`` by basic composition.

    References
    ----------
    F. McSherry and K. Talwar, "Mechanism Design via Differential Privacy", FOCS 2007.

    C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014,
    Section 3.4.

    Examples
    --------
    >>> exponential_mechanism([0.0, 1e6, 0.0], sensitivity=1.0, epsilon=1.0, rng=0)
    1
    """
    probabilities = exponential_mechanism_probabilities(
        scores, sensitivity, epsilon, monotonic=monotonic
    )
    n = _check_size(size)
    generator = as_generator(rng)
    # Inverse-CDF sampling from p_i ∝ exp(eps u_i / (2 Delta)) (McSherry & Talwar 2007).
    chosen = generator.choice(probabilities.size, size=n, p=probabilities)
    if n is None:
        return int(chosen)
    return np.asarray(chosen, dtype=np.int64)


def _noisy_argmax(
    scores: np.ndarray, scale: float, noise: str, generator: np.random.Generator, n: int | None
) -> int | np.ndarray:
    """argmax of ``scores + noise`` over candidates, for one or ``n`` independent draws."""
    shifted = _shifted(scores)
    draws = 1 if n is None else n
    rows_per_block = max(1, _MAX_BLOCK // scores.size)
    out = np.empty(draws, dtype=np.int64)
    for start in range(0, draws, rows_per_block):
        shape = (min(rows_per_block, draws - start), scores.size)
        if noise == "gumbel":
            z = generator.gumbel(0.0, scale, size=shape)
        elif noise == "exponential":
            z = generator.exponential(scale, size=shape)
        else:
            z = generator.laplace(0.0, scale, size=shape)
        out[start : start + shape[0]] = np.argmax(shifted + z, axis=1)
    if n is None:
        return int(out[0])
    return out


def report_noisy_max(
    scores: Any,
    sensitivity: float,
    epsilon: float,
    *,
    noise: str = "gumbel",
    rng: Any = None,
    size: int | None = None,
) -> int | np.ndarray:
    """Select a candidate by adding noise to every score and reporting the argmax.

    Parameters
    ----------
    scores : array_like, 1-d
        Utility ``u_i(D)`` of each candidate (higher is better), finite, non-empty.
    sensitivity : float
        ``Delta``, the largest change of any single score between neighbouring datasets, > 0.
        No monotonicity is assumed.
    epsilon : float
        Finite, > 0.
    noise : {"gumbel", "exponential", "laplace"}, keyword-only
        The noise distribution; its scale is always ``2 Delta / epsilon``, which makes every
        variant epsilon-DP for general (not necessarily monotonic) utilities.
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness, normalised by :func:`dplib._validation.as_generator`.
    size : int or None, keyword-only
        ``None`` for one selection, else the number of independent selections (>= 1).

    Returns
    -------
    int or numpy.ndarray
        Index of the noisy maximum, or an int array of ``size`` indices. Only the index is
        released, never the noisy scores.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``noise`` is unknown, or as :func:`exponential_mechanism`. Nothing is drawn from
        ``rng`` when a call is refused.

    Notes
    -----
    Returns ``argmax_i (u_i + Z_i)`` with ``Z_i`` i.i.d. of scale ``b = 2 Delta / epsilon``:

    * ``"gumbel"``: ``Z_i ~ Gumbel(0, b)``. By the Gumbel-max trick,
      ``P(i) ∝ exp(u_i / b) = exp(epsilon u_i / (2 Delta))``: exactly the exponential
      mechanism (McSherry & Talwar 2007), epsilon-DP.
    * ``"exponential"``: ``Z_i ~ Exponential(b)``. Exactly permute-and-flip (Ding et al. 2021),
      epsilon-DP.
    * ``"laplace"``: ``Z_i ~ Laplace(0, b)``. Dwork & Roth (2014), Claim 3.9 proves
      ``Laplace(1/epsilon)`` epsilon-DP for counting queries (monotonic, ``Delta = 1``); for
      general utilities the same argument needs the scale ``2 Delta / epsilon`` used here.

    References
    ----------
    C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014,
    Section 3.3, Claim 3.9.

    Z. Ding, D. Kifer, S. M. Saghaian N. E., T. Steinke, Y. Wang, Y. Xiao and D. Zhang, "The
    Permute-and-Flip Mechanism is Identical to Report-Noisy-Max with Exponential Noise",
    arXiv:2105.07260, 2021.

    F. McSherry and K. Talwar, "Mechanism Design via Differential Privacy", FOCS 2007.

    Examples
    --------
    >>> report_noisy_max([0.0, 1e6, 0.0], sensitivity=1.0, epsilon=1.0, rng=0)
    1
    """
    if not isinstance(noise, str):
        raise TypeError(f"noise must be a str, got {type(noise).__name__}")
    if noise not in _NOISES:
        raise ValueError(
            f"noise must be one of {', '.join(repr(x) for x in _NOISES)}, got {noise!r}"
        )
    arr, delta_u, eps = _check_selection(scores, sensitivity, epsilon)
    n = _check_size(size)
    generator = as_generator(rng)
    # Scale 2 Delta / epsilon: epsilon-DP for general utilities (Dwork & Roth 2014, Claim 3.9
    # with Delta-sensitive scores; Ding et al. 2021; McSherry & Talwar 2007 via Gumbel-max).
    return _noisy_argmax(arr, 2.0 * delta_u / eps, noise, generator, n)


def permute_and_flip(
    scores: Any,
    sensitivity: float,
    epsilon: float,
    *,
    rng: Any = None,
    size: int | None = None,
) -> int | np.ndarray:
    """Select a candidate with the permute-and-flip mechanism.

    Parameters
    ----------
    scores : array_like, 1-d
        Utility ``u_i(D)`` of each candidate (higher is better), finite, non-empty.
    sensitivity : float
        ``Delta``, the largest change of any single score between neighbouring datasets, > 0.
    epsilon : float
        Finite, > 0.
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness, normalised by :func:`dplib._validation.as_generator`.
    size : int or None, keyword-only
        ``None`` for one selection, else the number of independent selections (>= 1).

    Returns
    -------
    int or numpy.ndarray
        The index of the selected candidate, or an int array of ``size`` indices.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        As :func:`exponential_mechanism`. Nothing is drawn from ``rng`` when a call is refused.

    Notes
    -----
    McKenna & Sheldon (2020): with ``u* = max_j u_j``, visit the candidates in a
    uniformly random order and accept candidate ``r`` with probability

    .. math:: \\exp\\left(\\frac{\\varepsilon (u_r - u^*)}{2\\Delta}\\right);

    the first accepted candidate is returned (the best one is always accepted, so one pass
    suffices). It is epsilon-DP and its expected utility is never below the
    exponential mechanism's. This implementation is vectorized through the identity of
    Ding et al. (2021): permute-and-flip has exactly the distribution of
    ``argmax_i (u_i + Z_i)`` with ``Z_i ~ Exponential(2 Delta / epsilon)``, i.e.
    ``report_noisy_max(..., noise="exponential")``.

    References
    ----------
    R. McKenna and D. Sheldon, "Permute-and-Flip: A new mechanism for differentially private
    selection", NeurIPS 2020, arXiv:2010.12603.

    Z. Ding, D. Kifer, S. M. Saghaian N. E., T. Steinke, Y. Wang, Y. Xiao and D. Zhang, "The
    Permute-and-Flip Mechanism is Identical to Report-Noisy-Max with Exponential Noise",
    arXiv:2105.07260, 2021.

    Examples
    --------
    >>> permute_and_flip([0.0, 1e6, 0.0], sensitivity=1.0, epsilon=1.0, rng=0)
    1
    """
    return report_noisy_max(scores, sensitivity, epsilon, noise="exponential", rng=rng, size=size)
