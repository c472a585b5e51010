"""Reference formulas shared by the tests of the integer (discrete Laplace) count releases.

The discrete Laplace distribution ``P(x) = (1 - q) / (1 + q) q**|x|`` on the integers,
``q = exp(-1 / scale)`` (Inusah & Kozubowski 2006, "A discrete analogue of the Laplace
distribution", J. Statist. Plann. Inference 136(3)): ``P(X >= k) = q**k / (1 + q)`` for ``k >= 1``
and variance ``2 q / (1 - q)**2``, written out here independently of dplib's sampler.
"""

from __future__ import annotations

import math

import numpy as np


def discrete_laplace_cdf(scale: float):
    """``x -> P(X <= x)`` for the discrete Laplace of ``scale`` (vectorised, any real ``x``)."""
    q = math.exp(-1.0 / scale)

    def cdf(x):
        k = np.floor(np.asarray(x, dtype=float))
        return np.where(k < 0, q ** np.abs(k) / (1 + q), 1 - q ** (np.abs(k) + 1) / (1 + q))

    return cdf


def discrete_laplace_variance(scale: float) -> float:
    q = math.exp(-1.0 / scale)
    return 2 * q / (1 - q) ** 2
