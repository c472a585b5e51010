"""Integer-valued mechanisms: the discrete Laplace and the discrete Gaussian.

Adding *integer* noise to an integer query answer leaves an integer: the set of possible outputs
does not depend on the true answer, so the floating-point attack of Mironov (2012) on the
textbook Laplace mechanism has nothing to grip on. The two noise distributions are

* the discrete Laplace (two-sided geometric) distribution ``P(x) ∝ exp(-|x| / s)`` on the
  integers, whose mechanism is epsilon-DP for ``s = Delta / epsilon`` (Ghosh, Roughgarden &
  Sundararajan 2009);
* the discrete Gaussian ``P(x) ∝ exp(-x² / (2 sigma²))`` on the integers, whose exact
  (epsilon, delta) curve is given by Canonne, Kamath & Steinke (2020), Theorem 7, and which is
  sampled by rejection from the discrete Laplace (their Algorithm 3).

Exact, in integer arithmetic
----------------------------
Both samplers work on numpy integer arrays (:mod:`dplib.mechanisms._exact`): the discrete
Laplace by exact inversion of its geometric part, bit by bit (uniform 16-bit words compared with
the binary expansions of its probabilities, certified by integer-arithmetic bounds on ``exp``),
the discrete Gaussian by CKS20's Algorithm 3 (Canonne, Kamath & Steinke 2020) with an exact table
of its acceptance probabilities or, for sigma >= 255, its Algorithms 1-3 in int64. Every
decision compares uniform integers with integers or with certified binary digits. No float is on the path
that decides an output, and no uniform double is drawn. The scale (or sigma) double is taken as
the exact rational it is (``Fraction(scale)``), so the law is exactly the one of that double.
Every loop draws fresh uniforms each round and ends each round with probability >= 1/2, so no
uniform value can keep it from ending (numpy's float ``Generator.geometric``, used before, loops
forever on an all-ones bit stream). The only truncation is the int64 output: mass beyond
``|x| >= 2**62``, below ``exp(-4 * 10**6)`` for the accepted scales, is never returned.

One job per module:

- :mod:`~dplib.mechanisms.discrete_laplace` -- the discrete Laplace sampler, pmf and mechanism;
- :mod:`~dplib.mechanisms.discrete_gaussian` -- the discrete Gaussian sampler, pmf, exact
  privacy curve, calibration and mechanism;
- :mod:`~dplib.mechanisms._integer` -- the argument checks both share;
- :mod:`~dplib.mechanisms._exact` -- the exact integer samplers.

This module re-exports their public names.
"""

from dplib.mechanisms._integer import MAX_SCALE as MAX_SCALE
from dplib.mechanisms.discrete_gaussian import (
    discrete_gaussian_delta,
    discrete_gaussian_mechanism,
    discrete_gaussian_pmf,
    discrete_gaussian_sigma,
    sample_discrete_gaussian,
)
from dplib.mechanisms.discrete_laplace import (
    discrete_laplace_mechanism,
    discrete_laplace_pmf,
    sample_discrete_laplace,
)

__all__ = [
    "sample_discrete_laplace",
    "sample_discrete_gaussian",
    "discrete_laplace_pmf",
    "discrete_gaussian_pmf",
    "discrete_laplace_mechanism",
    "discrete_gaussian_mechanism",
    "discrete_gaussian_delta",
    "discrete_gaussian_sigma",
]
