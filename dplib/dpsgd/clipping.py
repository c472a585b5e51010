"""Per-example L2 clipping, the step that bounds each person's influence in DP-SGD.

Abadi et al. (2016), Algorithm 1, "Clip gradient":

    ḡ_i = g_i / max(1, ‖g_i‖₂ / C) = g_i · min(1, C / ‖g_i‖₂),

where ``g_i`` is the gradient of example i's loss with respect to *all* the parameters together
(one flat vector: the norm is taken jointly over every layer, as Opacus's "flat" clipping does).
After clipping, adding or removing one example changes the sum Σ_i ḡ_i by at most C in L2 norm:
C is the sensitivity the Gaussian noise is calibrated to.

The classic mistake is to clip the *average* (or the sum) of the batch: that bounds the norm of
the update but not any one example's contribution, whose gradient may dominate the batch, so the
noise calibrated to C protects nobody. :func:`clip_gradients` takes the per-example gradients
(leading axis = examples) precisely so that this cannot happen.

References
----------
.. [ACG+16] M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016, Algorithm 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dplib._validation import check_data, check_positive

__all__ = ["per_example_norms", "clip_gradients"]

PerExampleGrads = np.ndarray | Sequence[np.ndarray]


def as_blocks(per_example_grads: Any) -> tuple[list[np.ndarray], bool]:
    """The gradient blocks (each with the examples on axis 0) and whether one array was given."""
    single = isinstance(per_example_grads, np.ndarray)
    if not single and not isinstance(per_example_grads, list | tuple):
        raise TypeError(
            "per_example_grads must be an array of shape (n, ...) or a list of such arrays (one "
            f"per parameter), got {type(per_example_grads).__name__}"
        )
    blocks = [per_example_grads] if single else list(per_example_grads)
    if not blocks:
        raise ValueError("per_example_grads must hold at least one array")
    out = []
    for block in blocks:
        # Refuses strings, None, complex numbers, objects (TypeError), NaN and infinities.
        arr = check_data(block, "per_example_grads", allow_empty=True)
        if arr.ndim < 1:
            raise ValueError(
                "per_example_grads must have the examples on axis 0: arrays of shape (n, ...), "
                "got a scalar"
            )
        out.append(arr)
    n = out[0].shape[0]
    if any(b.shape[0] != n for b in out):
        raise ValueError(
            "every block of per_example_grads must have the same number of examples on axis 0, "
            f"got {[b.shape[0] for b in out]}"
        )
    return out, single


def _norms(blocks: list[np.ndarray]) -> np.ndarray:
    n = blocks[0].shape[0]
    flat = [b.reshape(n, int(np.prod(b.shape[1:], dtype=np.int64))) for b in blocks]
    squares = sum(np.einsum("ij,ij->i", f, f) for f in flat)
    return np.sqrt(squares)


def per_example_norms(per_example_grads: PerExampleGrads) -> np.ndarray:
    """‖g_i‖₂ over all parameters jointly, shape (n,).

    Parameters
    ----------
    per_example_grads : ndarray of shape (n, ...) or list of such arrays
        One block per parameter (as returned by
        :func:`~dplib.dpsgd.gradients.per_example_gradients`), examples on axis 0.
    """
    blocks, _ = as_blocks(per_example_grads)
    return _norms(blocks)


def clip_gradients(per_example_grads: PerExampleGrads, max_norm: float) -> Any:
    """Clip each example's gradient to L2 norm at most ``max_norm`` (jointly over all parameters).

    Parameters
    ----------
    per_example_grads : ndarray of shape (n, ...) or list of such arrays
        Per-example gradients, examples on axis 0; a list holds one block per parameter and the
        norm of example i is taken over all blocks together.
    max_norm : float
        The clipping norm C > 0.

    Returns
    -------
    ndarray or list of ndarray
        Same structure and shapes: ``g_i · min(1, C / ‖g_i‖₂)``. Gradients with norm ≤ C are
        returned unchanged; longer ones are scaled down to norm C, keeping their direction.

    Raises
    ------
    ValueError
        If ``max_norm`` is not a finite number > 0, the blocks disagree on the number of examples,
        or a gradient contains NaN or infinities.

    Notes
    -----
    [ACG+16] Algorithm 1, line "Clip gradient": ḡ_i = g_i / max(1, ‖g_i‖₂ / C). The factor is
    computed as ``C / max(‖g_i‖₂, C)``, which is exactly 1 for short gradients and avoids a
    division by zero for zero gradients.

    Examples
    --------
    >>> g = np.array([[3.0, 4.0], [0.3, 0.4]])    # norms 5 and 0.5
    >>> clip_gradients(g, 1.0).tolist()
    [[0.6, 0.8], [0.3, 0.4]]
    """
    max_norm = check_positive(max_norm, "max_norm")
    blocks, single = as_blocks(per_example_grads)
    clipped = clip_blocks(blocks, max_norm)
    return clipped[0] if single else clipped


def clip_blocks(blocks: list[np.ndarray], max_norm: float) -> list[np.ndarray]:
    """Clip validated blocks (see :func:`clip_gradients`)."""
    norms = _norms(blocks)
    factor = max_norm / np.maximum(norms, max_norm)  # min(1, C/‖g_i‖), [ACG+16] Algorithm 1
    return [b * factor.reshape((-1,) + (1,) * (b.ndim - 1)) for b in blocks]
