"""Per-example gradients of the cross-entropy loss for softmax regression and small MLPs.

DP-SGD clips the gradient of *each example's* loss before adding noise (Abadi et al. 2016,
Algorithm 1), so it needs the n per-example gradients, not only their sum. For a dense layer
``z = a W + b`` backpropagation already holds, for every example i, the layer input ``a_i`` and
the error ``δ_i = ∂ℓ_i/∂z_i``; the per-example gradient is their outer product

    ∂ℓ_i/∂W = a_i ⊗ δ_i,     ∂ℓ_i/∂b = δ_i,

one ``einsum`` for the whole batch (Goodfellow 2015, "Efficient per-example gradient
computations"; what Opacus's ``GradSampleModule`` does for ``nn.Linear``). No autograd framework
and no loop over examples. :func:`clipped_gradient_sum` goes further and clips without forming
the per-example gradients at all, from their norms ‖a_i ⊗ δ_i‖ = ‖a_i‖ ‖δ_i‖ ("ghost
clipping", Lee & Kifer 2021); the classifier uses it, and the tests check it against
:func:`~dplib.dpsgd.clipping.clip_gradients` applied to :func:`per_example_gradients`.

Model. Parameters are a list ``[W_1, b_1, ..., W_L, b_L]`` with ``W_l`` of shape
``(d_{l-1}, d_l)``; hidden layers apply ``tanh`` or ``relu``; the last layer gives the logits of
a softmax over K classes. ``hidden_layer_sizes=()`` is multinomial logistic (softmax)
regression. The loss of example i is the cross-entropy ``ℓ_i = logsumexp(z_i) − z_{i, y_i}``,
whose gradient with respect to the logits is ``softmax(z_i) − e_{y_i}``.

References
----------
.. [ACG+16] M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016, Algorithm 1.
.. [Goo15] I. Goodfellow, "Efficient Per-Example Gradient Computations", arXiv:1510.01799, 2015.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dplib._validation import as_generator, check_data, check_integer, check_positive, refuse_masked

__all__ = [
    "ACTIVATIONS",
    "init_params",
    "forward",
    "softmax",
    "cross_entropy",
    "per_example_gradients",
    "batch_gradient",
    "clipped_gradient_sum",
]

#: Hidden-layer activations understood by :func:`forward` and the gradient functions.
ACTIVATIONS: tuple[str, ...] = ("tanh", "relu")
#: Explicit ranges for ``hidden_layer_sizes``: the largest layer, and the most weights between
#: consecutive hidden layers (10**7 doubles are 80 MB, held four times by Adam and the gradient).
MAX_HIDDEN_SIZE = 10_000
MAX_HIDDEN_WEIGHTS = 10**7


def check_activation(activation: Any) -> str:
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return activation


def check_hidden(hidden_layer_sizes: Any) -> tuple[int, ...]:
    if isinstance(hidden_layer_sizes, int | np.integer) and not isinstance(
        hidden_layer_sizes, bool
    ):
        hidden_layer_sizes = (hidden_layer_sizes,)
    if isinstance(hidden_layer_sizes, str) or not isinstance(hidden_layer_sizes, Sequence):
        raise TypeError(
            "hidden_layer_sizes must be a tuple of positive integers (() for softmax regression), "
            f"got {type(hidden_layer_sizes).__name__}"
        )
    sizes = tuple(check_integer(h, "hidden_layer_sizes", minimum=1) for h in hidden_layer_sizes)
    # An explicit range, so that the weights (and Adam's moments) fit in memory.
    weights = sum(a * b for a, b in zip(sizes[:-1], sizes[1:], strict=False))
    if any(h > MAX_HIDDEN_SIZE for h in sizes) or weights > MAX_HIDDEN_WEIGHTS:
        raise ValueError(
            f"hidden_layer_sizes must hold layer sizes <= {MAX_HIDDEN_SIZE} with at most "
            f"{MAX_HIDDEN_WEIGHTS} weights between hidden layers, got {hidden_layer_sizes!r}"
        )
    return sizes


def _check_params(params: Any) -> list[np.ndarray]:
    if (
        isinstance(params, np.ndarray)
        or not isinstance(params, Sequence)
        or len(params) % 2
        or not params
    ):
        raise TypeError("params must be a non-empty list [W_1, b_1, ..., W_L, b_L] of arrays")
    out = [np.asarray(p, dtype=float) for p in params]
    for layer in range(len(out) // 2):
        w, b = out[2 * layer], out[2 * layer + 1]
        if w.ndim != 2 or b.shape != (w.shape[1],):
            raise ValueError(
                f"layer {layer + 1}: W must be 2-d and b of shape (W.shape[1],), got W {w.shape}, "
                f"b {b.shape}"
            )
        if layer and w.shape[0] != out[2 * layer - 2].shape[1]:
            raise ValueError(
                f"layer {layer + 1}: W has {w.shape[0]} rows but the previous layer has "
                f"{out[2 * layer - 2].shape[1]} outputs"
            )
    return out


def _check_xy(params: list[np.ndarray], X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X = check_data(X, "X", allow_empty=True)
    if X.ndim != 2 or X.shape[1] != params[0].shape[0]:
        raise ValueError(f"X must have shape (n, {params[0].shape[0]}), got {X.shape}")
    refuse_masked(y, "y")
    y_arr = np.asarray(y)
    n_classes = params[-1].shape[0]
    if (
        y_arr.shape != (X.shape[0],)
        or (y_arr.size and not np.issubdtype(y_arr.dtype, np.integer))
        or np.any(y_arr < 0)
        or np.any(y_arr >= n_classes)
    ):
        raise ValueError(
            f"y must hold one class index in [0, {n_classes}) per row of X ({X.shape[0]}), "
            f"got shape {y_arr.shape} and dtype {y_arr.dtype}"
        )
    return X, y_arr.astype(np.intp)


def init_params(
    n_features: int,
    n_classes: int,
    hidden_layer_sizes: Sequence[int] = (),
    *,
    rng: Any = None,
) -> list[np.ndarray]:
    """Initial parameters ``[W_1, b_1, ..., W_L, b_L]``.

    Hidden weights are drawn from Glorot & Bengio's (2010, eq. 16) uniform distribution
    U(−√(6/(fan_in + fan_out)), +√(6/(fan_in + fan_out))); biases and the output layer start at
    zero (so softmax regression starts at the uniform prediction, and the MLP's hidden units
    still differ).

    Parameters
    ----------
    n_features, n_classes : int
        Input dimension (≥ 1) and number of classes (≥ 2).
    hidden_layer_sizes : tuple of int
        Widths of the hidden layers; ``()`` gives softmax regression.
    rng : None, int or numpy.random.Generator, keyword-only
        Randomness of the hidden weights.

    Returns
    -------
    list of ndarray
    """
    n_features = check_integer(n_features, "n_features", minimum=1)
    n_classes = check_integer(n_classes, "n_classes", minimum=2)
    sizes = (n_features, *check_hidden(hidden_layer_sizes), n_classes)
    gen = as_generator(rng)
    params: list[np.ndarray] = []
    for layer, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        if layer == len(sizes) - 2:
            params.append(np.zeros((fan_in, fan_out)))
        else:
            limit = math.sqrt(6.0 / (fan_in + fan_out))  # Glorot & Bengio 2010, eq. 16
            params.append(gen.uniform(-limit, limit, size=(fan_in, fan_out)))
        params.append(np.zeros(fan_out))
    return params


def _act(z: np.ndarray, activation: str) -> np.ndarray:
    return np.tanh(z) if activation == "tanh" else np.maximum(z, 0.0)


def _act_derivative(a: np.ndarray, z: np.ndarray, activation: str) -> np.ndarray:
    # tanh'(z) = 1 − tanh(z)², written with the stored output a = tanh(z); relu'(z) = [z > 0].
    return 1.0 - a * a if activation == "tanh" else (z > 0).astype(float)


def forward_pass(params: list[np.ndarray], X: np.ndarray, activation: str):
    """Logits and the (input, pre-activation) of every layer, for backpropagation."""
    inputs, pre = [X], []
    a = X
    n_layers = len(params) // 2
    for layer in range(n_layers):
        z = a @ params[2 * layer] + params[2 * layer + 1]
        pre.append(z)
        if layer < n_layers - 1:
            a = _act(z, activation)
            inputs.append(a)
        else:
            a = z
    return a, inputs, pre


def forward(params: Sequence[np.ndarray], X: Any, *, activation: str = "tanh") -> np.ndarray:
    """Logits ``z`` of shape (n, K) of the network ``params`` on the rows of ``X``."""
    params = _check_params(params)
    activation = check_activation(activation)
    X = check_data(X, "X", allow_empty=True)
    if X.ndim != 2 or X.shape[1] != params[0].shape[0]:
        raise ValueError(f"X must have shape (n, {params[0].shape[0]}), got {X.shape}")
    return forward_pass(params, X, activation)[0]


def softmax(logits: Any) -> np.ndarray:
    """Row-wise softmax ``exp(z_k − logsumexp(z))``, computed stably."""
    z = np.asarray(logits, dtype=float)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def cross_entropy(logits: Any, y: Any) -> np.ndarray:
    """Per-example cross-entropy ``ℓ_i = logsumexp(z_i) − z_{i, y_i}`` (natural log), shape (n,)."""
    z = np.asarray(logits, dtype=float)
    y = np.asarray(y, dtype=np.intp)
    top = z.max(axis=1)
    lse = top + np.log(np.exp(z - top[:, None]).sum(axis=1))
    return lse - z[np.arange(z.shape[0]), y]


def _output_error(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    # ∂ℓ_i/∂z_i = softmax(z_i) − e_{y_i}
    delta = softmax(logits)
    delta[np.arange(y.size), y] -= 1.0
    return delta


def _backprop(params: list[np.ndarray], X: np.ndarray, y: np.ndarray, activation: str):
    """Per layer l: its input a_{l−1} (n, d_{l−1}) and error δ_l = ∂ℓ/∂z_l (n, d_l); losses.

    ``δ_L = softmax(z_L) − e_y`` and ``δ_{l−1} = (δ_l W_lᵀ) ⊙ act'(z_{l−1})``, the batch kept
    apart (no sum over examples).
    """
    logits, inputs, pre = forward_pass(params, X, activation)
    losses = cross_entropy(logits, y)
    n_layers = len(params) // 2
    deltas: list[np.ndarray] = [np.empty(0)] * n_layers
    delta = _output_error(logits, y)
    for layer in range(n_layers - 1, -1, -1):
        deltas[layer] = delta
        if layer:
            delta = (delta @ params[2 * layer].T) * _act_derivative(
                inputs[layer], pre[layer - 1], activation
            )
    return inputs, deltas, losses


def per_example_gradients(
    params: Sequence[np.ndarray],
    X: Any,
    y: Any,
    *,
    activation: str = "tanh",
) -> tuple[list[np.ndarray], np.ndarray]:
    """Gradient of each example's cross-entropy loss with respect to every parameter.

    Parameters
    ----------
    params : list of ndarray
        ``[W_1, b_1, ..., W_L, b_L]`` (see :func:`init_params`).
    X : array_like of shape (n, d)
        Inputs (n may be 0: an empty Poisson batch).
    y : array_like of int, shape (n,)
        Class indices in ``[0, K)``.
    activation : {"tanh", "relu"}, keyword-only
        Hidden-layer activation.

    Returns
    -------
    grads : list of ndarray
        ``grads[j][i]`` is ∂ℓ_i/∂params[j]; ``grads[j]`` has shape ``(n, *params[j].shape)``.
    losses : ndarray of shape (n,)
        ℓ_i, the per-example cross-entropy.

    Raises
    ------
    ValueError, TypeError
        For inconsistent shapes, labels outside ``[0, K)``, NaN inputs or an unknown activation.

    Notes
    -----
    Backpropagation with the batch kept apart: ``δ_L = softmax(z_L) − e_y``,
    ``δ_{l−1} = (δ_l W_lᵀ) ⊙ act'(z_{l−1})``, and per layer ``∂ℓ_i/∂W_l = a_{l−1,i} ⊗ δ_{l,i}``
    (one ``einsum``), ``∂ℓ_i/∂b_l = δ_{l,i}`` ([Goo15]). Summing over i gives
    :func:`batch_gradient`.
    """
    params = _check_params(params)
    activation = check_activation(activation)
    X, y = _check_xy(params, X, y)
    inputs, deltas, losses = _backprop(params, X, y, activation)
    grads: list[np.ndarray] = []
    for a, delta in zip(inputs, deltas, strict=True):
        grads.append(np.einsum("ni,nj->nij", a, delta))  # ∂ℓ_i/∂W_l = a_{l-1,i} ⊗ δ_{l,i}
        grads.append(delta)  # ∂ℓ_i/∂b_l = δ_{l,i}
    return grads, losses


def batch_gradient(
    params: Sequence[np.ndarray],
    X: Any,
    y: Any,
    *,
    activation: str = "tanh",
) -> tuple[list[np.ndarray], float]:
    """Gradient of the *summed* loss Σ_i ℓ_i, by ordinary (matrix-product) backpropagation.

    The non-private computation: ``∂(Σ ℓ_i)/∂W_l = A_{l−1}ᵀ Δ_l``. It equals the sum over i of
    :func:`per_example_gradients` and is what DP-SGD must *not* clip (clipping the sum or the
    average bounds nobody's individual contribution).

    Returns
    -------
    grads : list of ndarray
        Shaped like ``params``.
    loss : float
        Σ_i ℓ_i.
    """
    params = _check_params(params)
    activation = check_activation(activation)
    X, y = _check_xy(params, X, y)
    inputs, deltas, losses = _backprop(params, X, y, activation)
    grads: list[np.ndarray] = []
    for a, delta in zip(inputs, deltas, strict=True):
        grads.append(a.T @ delta)  # A_{l-1}ᵀ Δ_l
        grads.append(delta.sum(axis=0))
    return grads, float(losses.sum())


def clipped_gradient_sum(
    params: Sequence[np.ndarray],
    X: Any,
    y: Any,
    max_norm: float,
    *,
    activation: str = "tanh",
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Σ_i clip(∇ℓ_i, C) without forming the per-example gradients ("ghost clipping").

    The same result as ``clip_gradients(per_example_gradients(...)[0], C)`` summed over the
    examples, in the time of one ordinary backward pass: for a dense layer the per-example
    gradient a_i ⊗ δ_i has squared norm ‖a_i‖² ‖δ_i‖² (Goodfellow 2015; Lee & Kifer 2021,
    Section 4), so the joint norms are

        ‖g_i‖² = Σ_l (‖a_{l−1,i}‖² ‖δ_{l,i}‖² + ‖δ_{l,i}‖²),

    and with c_i = min(1, C/‖g_i‖) ([ACG+16] Algorithm 1) the clipped sum of layer l is
    A_{l−1}ᵀ (c ⊙ Δ_l), one matrix product.

    Parameters
    ----------
    params, X, y, activation
        As in :func:`per_example_gradients`.
    max_norm : float
        Clipping norm C > 0.

    Returns
    -------
    clipped_sum : list of ndarray
        Shaped like ``params``.
    losses : ndarray of shape (n,)
        Per-example losses.
    norms : ndarray of shape (n,)
        Per-example gradient norms before clipping.

    References
    ----------
    J. Lee, D. Kifer, "Scaling up Differentially Private Deep Learning with Fast Per-Example
    Gradient Clipping", PoPETs 2021.
    """
    params = _check_params(params)
    activation = check_activation(activation)
    X, y = _check_xy(params, X, y)
    max_norm = check_positive(max_norm, "max_norm")
    inputs, deltas, losses = _backprop(params, X, y, activation)
    squares = np.zeros(X.shape[0])
    for a, delta in zip(inputs, deltas, strict=True):
        delta_sq = np.einsum("ij,ij->i", delta, delta)
        squares += (np.einsum("ij,ij->i", a, a) + 1.0) * delta_sq  # weights and bias
    norms = np.sqrt(squares)
    factor = max_norm / np.maximum(norms, max_norm)  # min(1, C/‖g_i‖)
    clipped: list[np.ndarray] = []
    for a, delta in zip(inputs, deltas, strict=True):
        scaled = delta * factor[:, None]
        clipped.append(a.T @ scaled)
        clipped.append(scaled.sum(axis=0))
    return clipped, losses, norms
