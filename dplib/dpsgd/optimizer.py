"""The private part of a DP-SGD step: Poisson sampling and the noisy aggregated gradient.

One step of DP-SGD (Abadi et al. 2016, Algorithm 1, with the Poisson sampling its moments
accountant assumes):

1. :func:`poisson_sample` — every example joins the batch independently with probability q
   (the batch size is random, Binomial(N, q), possibly 0);
2. per-example gradients, clipped to norm C (:func:`~dplib.dpsgd.clipping.clip_gradients`);
3. :func:`noisy_gradient` — ``g̃ = (Σ_{i ∈ batch} ḡ_i + N(0, σ² C² I)) / (q N)``.

The sum has L2 sensitivity C under adding or removing one example, so step 3 is the Gaussian
mechanism with noise multiplier σ, and with step 1 a Poisson-subsampled Gaussian mechanism,
which :func:`dplib.accounting.dpsgd.dpsgd_epsilon` accounts for. Dividing by the *expected*
batch size q N, a public constant, rather than by the realised batch size (which depends on the
data set's size and would need its own privacy analysis) is Opacus's convention for Poisson
sampling (``DPOptimizer(expected_batch_size=...)``). Everything done to g̃ afterwards (momentum,
Adam, learning-rate schedules, averaging of iterates) is post-processing and costs no privacy.

Floating point: a caveat
------------------------
The guarantee above is a theorem about real numbers. Here, as in Opacus and TF Privacy, the
gradients, their clipping and sum, and the Gaussian noise are IEEE doubles, and numpy's normal
sampler is not exact: the floating-point attacks on textbook Laplace and Gaussian noise
(Mironov 2012; Jin, McMurtry, Rubinstein & Ohrimenko 2022) apply in principle, and no proof
covers the float computation. Unlike the count releases, a model's weights cannot simply be put
on a lattice. ``secure_mode=True`` (as Opacus's) narrows two gaps; see :func:`privatize_gradient_sum`.

References
----------
.. [ACG+16] M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016, Algorithm 1.
.. [Opacus] A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in
   PyTorch", arXiv:2109.12298, 2021 (``DPOptimizer``, ``expected_batch_size``, ``secure_mode``).
.. [HB21] N. Holohan and S. Braghin, "Secure Random Sampling in Differential Privacy",
   ESORICS 2021, arXiv:2107.10138.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from dplib._validation import (
    as_generator,
    check_bool,
    check_integer,
    check_positive,
    check_probability,
    check_sensitivity,
)
from dplib.dpsgd.clipping import PerExampleGrads, as_blocks, clip_blocks

__all__ = ["poisson_sample", "noisy_gradient", "privatize_gradient_sum"]


#: Largest dataset poisson_sample draws a mask for (100 MB of booleans).
_MAX_POISSON_N = 10**8
_CHUNK = 2**20


def poisson_sample(n: int, sampling_rate: float, *, rng: Any = None) -> np.ndarray:
    """Poisson sampling: a boolean mask in which each of ``n`` examples is ``True`` w.p. q.

    Parameters
    ----------
    n : int
        Number of examples, ≥ 0 (0 gives an empty mask: under add/remove an empty dataset is
        answered like any other).
    sampling_rate : float
        q in (0, 1]: the probability that each example is in the batch (expected batch size / n).
    rng : None, int or numpy.random.Generator, keyword-only
        Source of randomness.

    Returns
    -------
    ndarray of bool, shape (n,)
        Independent Bernoulli(q) indicators; ``np.flatnonzero(mask)`` gives the indices. The batch
        size ``mask.sum()`` is Binomial(n, q) and may be 0.

    Raises
    ------
    ValueError
        If ``n`` < 0 or > 10⁸, or ``sampling_rate`` is outside (0, 1].
    TypeError
        If ``n`` is not an integer.

    Notes
    -----
    The privacy amplification by subsampling in the RDP and PLD analyses of DP-SGD ([ACG+16]
    Section 3.1; Mironov, Talwar, Zhang 2019) is for this sampling scheme, not for shuffling the
    data into fixed-size batches.

    Examples
    --------
    >>> mask = poisson_sample(1000, 0.25, rng=0)
    >>> mask.dtype, mask.shape
    (dtype('bool'), (1000,))
    """
    n = check_integer(n, "n", minimum=0)  # 0 examples: an empty batch (empty data is data)
    if n > _MAX_POISSON_N:
        raise ValueError(
            f"n must be <= {_MAX_POISSON_N} (the mask holds one byte per example), got {n}"
        )
    q = check_probability(sampling_rate, "sampling_rate", low_open=True)
    gen = as_generator(rng)
    mask = np.empty(n, dtype=bool)
    for start in range(0, n, _CHUNK):  # same stream as gen.random(n), without n doubles at once
        stop = min(n, start + _CHUNK)
        mask[start:stop] = gen.random(stop - start) < q
    return mask


#: Smallest expected batch size q N accepted: dividing by a smaller one overflows (an explicit
#: range; DP-SGD's lots hold at least one example in expectation in practice).
MIN_EXPECTED_BATCH_SIZE = 1e-6


def _check_expected_batch_size(expected_batch_size: Any) -> float:
    out = check_positive(expected_batch_size, "expected_batch_size")
    if out < MIN_EXPECTED_BATCH_SIZE:
        raise ValueError(
            f"expected_batch_size must be a finite number > 0 and >= {MIN_EXPECTED_BATCH_SIZE:g} "
            f"(dividing by less overflows), got {expected_batch_size!r}"
        )
    return out


def noisy_gradient(
    per_example_grads: PerExampleGrads,
    max_norm: float,
    noise_multiplier: float,
    expected_batch_size: float,
    *,
    rng: Any = None,
    secure_mode: bool = False,
) -> Any:
    """The privatised average gradient of one DP-SGD step.

    Parameters
    ----------
    per_example_grads : ndarray of shape (b, ...) or list of such arrays
        The per-example gradients of the sampled batch (b may be 0), examples on axis 0; a list
        holds one block per parameter. They are clipped here (jointly over the blocks), so
        unclipped gradients may be passed.
    max_norm : float
        Clipping norm C > 0.
    noise_multiplier : float
        σ ≥ 0; the noise on the sum has standard deviation σ C per coordinate. σ = 0 turns the
        noise off (no privacy: for baselines and audits only).
    expected_batch_size : float
        q N >= 1e-6 (``MIN_EXPECTED_BATCH_SIZE``), the divisor (not the realised batch size b).
    rng : None, int or numpy.random.Generator, keyword-only
        Source of the noise (not used for the noise when ``secure_mode`` is on).
    secure_mode : bool, keyword-only, default False
        Opacus's secure mode: see :func:`privatize_gradient_sum`.

    Returns
    -------
    ndarray or list of ndarray
        Shaped like one example's gradient (the blocks without their leading axis):
        ``(Σ_i clip(g_i, C) + N(0, σ² C² I)) / (q N)``.

    Raises
    ------
    ValueError
        If ``max_norm`` is not > 0, ``expected_batch_size`` is below 1e-6, ``noise_multiplier``
        < 0, or the gradients are inconsistent or not finite.
    TypeError
        If ``per_example_grads`` is not an array or a list of arrays of real numbers.

    Notes
    -----
    [ACG+16] Algorithm 1: g̃_t = (1/L) (Σ_i ḡ_t(x_i) + N(0, σ² C² I)), with L = q N the expected
    ("lot") size, as Opacus normalises under Poisson sampling. Each coordinate of the result
    has noise standard deviation σ C / (q N). The noise and the arithmetic are floating point:
    see the module notes for what that leaves unproved.

    Examples
    --------
    >>> g = np.array([[3.0, 4.0], [0.3, 0.4]])     # norms 5 and 0.5
    >>> noisy_gradient(g, 1.0, 0.0, 2.0).tolist()  # σ = 0 shows the arithmetic: no noise
    [0.45, 0.6]
    >>> noisy_gradient(np.zeros((0, 2)), 1.0, 1.0, 2.0, rng=0).shape   # empty batch: noise only
    (2,)
    """
    max_norm = check_positive(max_norm, "max_norm")
    check_sensitivity(noise_multiplier, "noise_multiplier")
    _check_expected_batch_size(expected_batch_size)
    blocks, single = as_blocks(per_example_grads)
    clipped = clip_blocks(blocks, max_norm)  # [ACG+16] Algorithm 1, "clip gradient"
    out = privatize_gradient_sum(
        [block.sum(axis=0) for block in clipped],
        max_norm,
        noise_multiplier,
        expected_batch_size,
        rng=rng,
        secure_mode=secure_mode,
    )
    return out[0] if single else out


def privatize_gradient_sum(
    clipped_sum: Any,
    max_norm: float,
    noise_multiplier: float,
    expected_batch_size: float,
    *,
    rng: Any = None,
    secure_mode: bool = False,
) -> Any:
    """``(clipped_sum + N(0, σ² C² I)) / (q N)``: the noise step alone.

    For callers that already hold the sum of *clipped* per-example gradients (e.g. from
    :func:`~dplib.dpsgd.gradients.clipped_gradient_sum`, which never materialises them).
    Passing anything else (an unclipped sum) voids the guarantee: the noise is calibrated to a
    sensitivity of C.

    Parameters
    ----------
    clipped_sum : ndarray or list of ndarray
        Σ_i clip(g_i, C), one array per parameter.
    max_norm, noise_multiplier, expected_batch_size
        C > 0, σ ≥ 0 and q N ≥ 1e-6, as in :func:`noisy_gradient`.
    rng : None, int or numpy.random.Generator, keyword-only
        Source of the noise when ``secure_mode`` is off.
    secure_mode : bool, keyword-only, default False
        As Opacus's ``secure_mode``. What it does: (1) the noise comes from a generator seeded
        with 128 fresh bits of the operating system's entropy (:mod:`secrets`) at every call,
        ignoring ``rng``, so it cannot be reproduced from a seed that was published, guessed or
        reused; (2) each noise coordinate is the sum of four independent ``N(0, σ² C²)`` draws
        divided by 2 (same law, ``N(0, σ² C²)``), after one discarded draw, as Opacus does
        following [HB21]: a sum of normals blurs the low-order-bit patterns that the
        floating-point attack on a single textbook normal exploits. What it does **not** do:
        make the step provably DP on doubles (the normals, the sum and the division still
        round, and no proof covers them); use a cryptographically secure generator (the
        generator is numpy's PCG64, seeded from the OS; Opacus uses torchcsprng's AES-CTR);
        protect anything else (the Poisson sampling and the initialisation still use ``rng``
        or ``random_state``; timing; the non-private ``history_`` of DPSGDClassifier). It
        costs four normals per coordinate and breaks reproducibility.

    Returns
    -------
    ndarray or list of ndarray
        Same structure as ``clipped_sum``.
    """
    max_norm = check_positive(max_norm, "max_norm")
    sigma = check_sensitivity(noise_multiplier, "noise_multiplier")
    divisor = _check_expected_batch_size(expected_batch_size)
    if sigma * max_norm > 1e150:
        raise ValueError(
            "noise_multiplier * max_norm (the noise standard deviation) must be <= 1e150, got "
            f"noise_multiplier={noise_multiplier!r}, max_norm={max_norm!r}"
        )
    secure = check_bool(secure_mode, "secure_mode")
    single = isinstance(clipped_sum, np.ndarray)
    blocks = [np.asarray(b, dtype=float) for b in ([clipped_sum] if single else clipped_sum)]
    gen = as_generator(rng)
    out = []
    for total in blocks:
        if sigma > 0:
            std = sigma * max_norm
            noise = (
                _secure_normal(std, total.shape)
                if secure
                else gen.normal(0.0, std, size=total.shape)
            )
            total = total + noise  # N(0, σ²C²I)
        out.append(total / divisor)  # ÷ expected batch size q N (Opacus's convention)
    return out[0] if single else out


def _secure_normal(std: float, shape: tuple[int, ...]) -> np.ndarray:
    """``N(0, std²)`` per entry as Opacus's secure mode draws it ([HB21]; see privatize_gradient_sum).

    A generator seeded with 128 bits from the OS (``secrets``), one discarded draw, then the
    sum of four independent ``N(0, std²)`` arrays divided by 2: variance ``4 std² / 4 = std²``.
    """
    gen = np.random.Generator(np.random.PCG64(secrets.randbits(128)))
    gen.normal(0.0, std)  # thrown away, as Opacus does
    total = gen.normal(0.0, std, size=shape)
    for _ in range(3):
        total += gen.normal(0.0, std, size=shape)
    return total / 2.0
