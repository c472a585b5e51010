"""Everyday statistics released privately (chapters 02-03): counts, sums, means, medians, modes.

One job per module:

- :mod:`~dplib.queries.sensitivity` -- global sensitivities of the everyday queries under the two
  neighbouring relations (add/remove and replace-one);
- :mod:`~dplib.queries.aggregates` -- ``clamp``, ``private_count``, ``private_sum``,
  ``private_mean`` and ``private_histogram``, noise-safe on IEEE doubles (chapter 02, Laplace);
- :mod:`~dplib.queries.selection` -- private medians, modes and a coin's bias by the exponential
  mechanism, and its utility guarantee (chapter 03).
- :mod:`~dplib.queries.contributions` -- tables with many rows per user: contribution bounding
  and per-key counts and sums (Wilson et al. 2020);
- :mod:`~dplib.queries.partition_selection` -- releasing the keys enough users have when nobody
  listed them (Desfontaines et al. 2022; the Laplace threshold);
- :mod:`~dplib.queries.quantiles` -- several quantiles at once (Kaplan, Schnapp & Stemmer 2022)
  and a variance.
- :mod:`~dplib.queries.local_sensitivity` -- local sensitivity of the median and the mean, and at
  distance k (chapter 09);
- :mod:`~dplib.queries.smooth_sensitivity` -- the smooth sensitivity of the median and the
  (epsilon, delta)-DP median it gives (Nissim, Raskhodnikova & Smith 2007);
- :mod:`~dplib.queries.propose_test_release` -- distance to instability and the
  propose-test-release median (Dwork & Lei 2009);
- :mod:`~dplib.queries.sample_aggregate` -- sample-and-aggregate for any statistic;
- :mod:`~dplib.queries.packing` -- the packing lower bound on the error of k counting queries.

The mechanisms themselves live in :mod:`dplib.mechanisms`.
"""
