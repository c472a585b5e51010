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

What is exact and what uses floating point
------------------------------------------
The constructions are exact in distribution: a difference of two i.i.d. geometric variables
*is* a discrete Laplace variable, and Algorithm 3's rejection step *does* produce a discrete
Gaussian. The building blocks, however, are numpy's floating-point samplers: ``Generator.geometric``
(a search over 53-bit uniform doubles for ``p >= 1/3``, otherwise the inversion
``ceil(-E / log1p(-p))`` of an exponential draw ``E``) and a Bernoulli(``exp(-gamma)``) trial
made by comparing a uniform double with ``numpy.exp``. The resulting probabilities are therefore
correct only to within double-precision rounding (errors of order ``2**-53`` per probability, so
values rarer than that may be misrepresented or unreachable), not exactly as with CKS20's
integer-arithmetic samplers (their Algorithms 1 and 2). The *outputs* are integers whatever
the rounding, so there are no low-order bits to leak the input (the floating-point attack); the
rounding only perturbs probabilities by amounts of order ``2**-53``, far below any delta in use.

One job per module:

- :mod:`~dplib.mechanisms.discrete_laplace` -- the discrete Laplace sampler, pmf and mechanism;
- :mod:`~dplib.mechanisms.discrete_gaussian` -- the discrete Gaussian sampler, pmf, exact
  privacy curve, calibration and mechanism;
- :mod:`~dplib.mechanisms._integer` -- the argument checks both share.

This module re-exports their public names.
"""

from dplib.mechanisms._integer import MAX_SCALE as MAX_SCALE
from dplib.mechanisms.discrete_gaussian import _delta_direct as _delta_direct
from dplib.mechanisms.discrete_gaussian import _delta_euler_maclaurin as _delta_euler_maclaurin
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
