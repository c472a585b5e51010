"""Sparse linkage (Narayanan & Shmatikov 2008): find a user from a few approximate ratings.

In a sparse table (each user rated a tiny fraction of the films) two users rarely share many
ratings, especially of rarely rated films. An attacker who knows a handful of a person's ratings
with their approximate dates (from public reviews) scores every record of the "anonymous" table
and picks the best one if it stands out from the runner-up.

Score of record ``r`` against the auxiliary information ``aux`` (their "Scoreboard-RH", eq. in
Section 5 of the paper, with a ``log(1 + support)`` weight so that a film rated by a single user
gets a finite weight):

.. math::

    \\mathrm{score}(aux, r) = \\sum_{i \\in aux,\\ r \\text{ rated } i} w_i
        \\left(e^{-|\\rho_{aux,i} - \\rho_{r,i}| / \\rho_0} + e^{-|d_{aux,i} - d_{r,i}| / d_0}\\right),
    \\qquad w_i = \\frac{1}{\\log(1 + |\\mathrm{supp}(i)|)},

where ``supp(i)`` is the set of users who rated film ``i``. The match is accepted when its
*eccentricity* ``(best - second best) / std(scores)`` exceeds a threshold (1.5 in the paper).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dplib._validation import check_positive

__all__ = ["item_weights", "sparse_linkage_scores", "eccentricity", "sparse_linkage"]


def _check_matrices(ratings: Any, days: Any) -> tuple[np.ndarray, np.ndarray]:
    ratings = np.asarray(ratings)
    if ratings.ndim != 2:
        raise ValueError(f"ratings must be a 2-d array (users x items), got shape {ratings.shape}")
    if days is not None:
        days = np.asarray(days)
        if days.shape != ratings.shape:
            raise ValueError(
                f"days must have the shape of ratings {ratings.shape}, got {days.shape}"
            )
    return ratings, days


def item_weights(ratings: Any) -> np.ndarray:
    """``w_i = 1 / log(1 + support_i)`` per film; 0 for a film nobody rated.

    ``ratings`` is users x items with 0 meaning "not rated". Rare films weigh more: sharing a
    rating of an obscure film says far more about who you are than sharing a blockbuster.
    """
    ratings, _ = _check_matrices(ratings, None)
    support = (ratings > 0).sum(axis=0)
    with np.errstate(divide="ignore"):
        return np.where(support > 0, 1.0 / np.log1p(np.maximum(support, 1)), 0.0)


def sparse_linkage_scores(
    aux_items: Any,
    aux_ratings: Any,
    ratings: Any,
    *,
    aux_days: Any = None,
    days: Any = None,
    weighted: bool = True,
    weights: Any = None,
    rating_scale: float = 1.5,
    day_scale: float = 30.0,
) -> np.ndarray:
    """Score every user of ``ratings`` against what the attacker knows (see the module formula).

    Parameters
    ----------
    aux_items : array_like of int, shape (m,)
        Films the attacker knows the target rated (column indices of ``ratings``).
    aux_ratings : array_like, shape (m,)
        The ratings the attacker believes the target gave them.
    ratings : array_like, shape (n_users, n_items)
        The released table, 0 where a user did not rate a film.
    aux_days : array_like, shape (m,), optional
        The dates the attacker believes; with ``days`` adds the date term of the score.
    days : array_like, shape (n_users, n_items), optional
        Dates of the released ratings.
    weighted : bool, default True
        Weight each film by ``1 / log(1 + support)``; ``False`` gives every film weight 1.
    weights : array_like, shape (n_items,), optional
        Precomputed :func:`item_weights` of ``ratings`` (saves time when scoring many targets).
    rating_scale, day_scale : float
        ``rho_0`` and ``d_0`` of the formula (1.5 stars and 30 days, as in the paper).

    Returns
    -------
    numpy.ndarray of float, shape (n_users,)

    References
    ----------
    A. Narayanan and V. Shmatikov (2008), "Robust De-anonymization of Large Sparse Datasets",
    IEEE S&P, Section 5 (algorithm Scoreboard-RH).
    """
    ratings, days = _check_matrices(ratings, days)
    items = np.asarray(aux_items, dtype=int).ravel()
    aux_r = np.asarray(aux_ratings, dtype=float).ravel()
    if items.shape != aux_r.shape:
        raise ValueError("aux_items and aux_ratings must have the same length")
    if items.size and (items.min() < 0 or items.max() >= ratings.shape[1]):
        raise ValueError(f"aux_items must be column indices in [0, {ratings.shape[1]})")
    rho0 = check_positive(rating_scale, "rating_scale")
    d0 = check_positive(day_scale, "day_scale")
    use_days = aux_days is not None and days is not None
    if not weighted:
        weights = np.ones(items.size)
    elif weights is not None:
        weights = np.asarray(weights, dtype=float)
        if weights.shape != (ratings.shape[1],):
            raise ValueError(f"weights must have shape ({ratings.shape[1]},), got {weights.shape}")
        weights = weights[items]
    else:
        weights = item_weights(ratings)[items]
    sub = ratings[:, items].astype(float)
    rated = sub > 0
    sim = np.exp(-np.abs(sub - aux_r[None, :]) / rho0)
    if use_days:
        aux_d = np.asarray(aux_days, dtype=float).ravel()
        if aux_d.shape != items.shape:
            raise ValueError("aux_days must have the length of aux_items")
        sim = sim + np.exp(-np.abs(days[:, items].astype(float) - aux_d[None, :]) / d0)
    return (np.where(rated, sim, 0.0) * weights[None, :]).sum(axis=1)


def eccentricity(scores: Any) -> float:
    """``(best - second best) / std(scores)``: how much the best match stands out (0 if all tie)."""
    scores = np.asarray(scores, dtype=float).ravel()
    if scores.size < 2:
        raise ValueError("scores must hold at least two values")
    top2 = np.sort(scores)[-2:]
    sd = scores.std()
    return float((top2[1] - top2[0]) / sd) if sd > 0 else 0.0


def sparse_linkage(
    aux_items: Any,
    aux_ratings: Any,
    ratings: Any,
    *,
    aux_days: Any = None,
    days: Any = None,
    threshold: float = 1.5,
    **score_options: Any,
) -> int:
    """Index of the user matched to the auxiliary information, or -1 if no match stands out.

    Scores every user with :func:`sparse_linkage_scores` and accepts the best one when its
    :func:`eccentricity` is at least ``threshold``.
    """
    scores = sparse_linkage_scores(
        aux_items, aux_ratings, ratings, aux_days=aux_days, days=days, **score_options
    )
    if eccentricity(scores) < threshold:
        return -1
    return int(np.argmax(scores))
