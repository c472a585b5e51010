"""Statistical assertions for randomized code, with a stated false-failure probability.

Every assertion here compares samples of a randomized function with what a correct
implementation would produce, using a tolerance *derived from a concentration inequality*
(named, with its source, in each docstring). A correct implementation fails with probability at
most ``failure_prob`` (1e-9 by default) whatever seed it uses; a plausibly wrong one (noise scale
off by a factor 2, a biased estimator, a wrong sensitivity) fails with high probability at the
sample sizes a test uses. Failures raise :class:`AssertionError` with a message that states what
was expected, what was observed, the tolerance, the sample size and the bound used.

Bad arguments (``failure_prob`` outside (0, 1), empty samples, NaN, ...) raise :class:`ValueError`
or :class:`TypeError`, as everywhere in dplib; an :class:`AssertionError` always means "the
samples contradict the claim".

The functions are used by dplib's own test suite and by the hidden tests of the course's graded
notebooks::

    samples = student_laplace(np.zeros(10_000), sensitivity=1.0, epsilon=0.5, rng=seed)
    assert_distribution(samples, scipy.stats.laplace(scale=2.0).cdf)
    assert_dp(lambda x, rng: student_laplace(x, 1.0, 1.0, rng=rng), 0.0, 1.0, epsilon=1.0)

One job per module:

- :mod:`~dplib.testing.intervals` -- tolerances and confidence intervals from concentration
  inequalities (:func:`clopper_pearson`, :func:`mean_tolerance`, :func:`dkw_tolerance`);
- :mod:`~dplib.testing.moments` -- :func:`assert_mean` and :func:`assert_variance`;
- :mod:`~dplib.testing.distributions` -- :func:`assert_distribution` and
  :func:`assert_frequencies`;
- :mod:`~dplib.testing.laplace_noise` -- :func:`assert_laplace_scale` (an exact Gamma test of a
  Laplace scale, with the power to catch 10% either way) and :func:`assert_independent_laplace`
  (noise shared between cells that must be independent);
- :mod:`~dplib.testing.dp_audit` -- :class:`DPAuditResult`, :func:`audit_dp` and
  :func:`assert_dp`;
- :mod:`~dplib.testing.witness` -- exact verdicts on a witness against a DP claim (a
  neighbouring pair and an event): :func:`discrete_laplace_event_bounds` (certified event
  probabilities) and :func:`exceeds_dp_bound`;
- :mod:`~dplib.testing._common` -- argument checks and message formatting shared by the others.
"""

from dplib.testing._common import DEFAULT_FAILURE_PROB as DEFAULT_FAILURE_PROB
from dplib.testing.distributions import assert_distribution, assert_frequencies
from dplib.testing.dp_audit import DPAuditResult, assert_dp, audit_dp
from dplib.testing.intervals import clopper_pearson, dkw_tolerance, mean_tolerance
from dplib.testing.laplace_noise import (
    assert_independent_laplace,
    assert_laplace_scale,
    laplace_difference_cdf,
    laplace_scale_tolerance,
)
from dplib.testing.moments import assert_mean, assert_variance
from dplib.testing.witness import discrete_laplace_event_bounds, exceeds_dp_bound

__all__ = [
    "assert_laplace_scale",
    "assert_independent_laplace",
    "laplace_scale_tolerance",
    "laplace_difference_cdf",
    "clopper_pearson",
    "mean_tolerance",
    "assert_mean",
    "assert_variance",
    "dkw_tolerance",
    "assert_distribution",
    "assert_frequencies",
    "DPAuditResult",
    "audit_dp",
    "assert_dp",
    "discrete_laplace_event_bounds",
    "exceeds_dp_bound",
]
