"""DP-SGD from scratch in numpy: per-example gradients, clipping, noise, a private classifier.

One job per module:

- :mod:`~dplib.dpsgd.gradients` -- per-example gradients of softmax regression and small MLPs,
  vectorized (one ``einsum`` per layer, no loop over examples);
- :mod:`~dplib.dpsgd.clipping` -- per-example L2 clipping over all parameters jointly
  (Abadi et al. 2016, Algorithm 1);
- :mod:`~dplib.dpsgd.optimizer` -- Poisson sampling and the noisy aggregated gradient
  ``(Σ clip(g_i) + N(0, σ²C²I)) / (qN)``;
- :mod:`~dplib.dpsgd.classifier` -- :class:`DPSGDClassifier`, scikit-learn style, with σ
  calibrated by :func:`dplib.accounting.dpsgd.noise_multiplier_for`.

The privacy accounting itself lives in :mod:`dplib.accounting.dpsgd`.
"""

from dplib.dpsgd.classifier import DPSGDClassifier, normalize_rows
from dplib.dpsgd.clipping import clip_gradients, per_example_norms
from dplib.dpsgd.gradients import (
    batch_gradient,
    clipped_gradient_sum,
    cross_entropy,
    forward,
    init_params,
    per_example_gradients,
    softmax,
)
from dplib.dpsgd.optimizer import noisy_gradient, poisson_sample, privatize_gradient_sum

__all__ = [
    "DPSGDClassifier",
    "batch_gradient",
    "clip_gradients",
    "clipped_gradient_sum",
    "cross_entropy",
    "forward",
    "init_params",
    "noisy_gradient",
    "normalize_rows",
    "per_example_gradients",
    "per_example_norms",
    "poisson_sample",
    "privatize_gradient_sum",
    "softmax",
]
