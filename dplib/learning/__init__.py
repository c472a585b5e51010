"""Private models (chapters 02 and 06): naive Bayes from noisy sufficient statistics.

- :mod:`~dplib.learning.naive_bayes` -- :class:`~dplib.DPNaiveBayes`, Gaussian naive Bayes
  from noisy class counts, sums and sums of squares (chapter 02's worked model).

DP-SGD, the other private model of the course (chapter 06), is the subpackage
:mod:`dplib.dpsgd`; both share the scikit-learn estimator protocol of ``dplib._estimator``.
"""
