"""Membership inference by loss threshold, and ROC curves to measure any such attack.

A trained model usually has a lower loss on its training examples than on fresh ones. The
attack of Yeom, Giacomelli, Fredrikson and Jha (2018, Section 3.2, "Adversary 2"/the threshold
adversary) predicts "member" when the loss of an example is below a threshold τ (they take τ as
the model's average training loss). Here the attack returns a *score*, the negated loss, so that
every threshold is one point of the ROC curve: larger score = more likely a member.

A DP model bounds every such attack: an (ε, δ)-DP training algorithm gives, for every
threshold, TPR ≤ e^ε FPR + δ (Kairouz, Oh, Viswanath 2015, Theorem 2.1; Wasserman & Zhou
2010). :mod:`dplib.auditing.lower_bounds` turns this inequality around into an empirical
lower bound on ε.

:func:`roc_curve` and :func:`auc` are numpy re-implementations of ``sklearn.metrics.roc_curve``
(without ``drop_intermediate``) and ``sklearn.metrics.auc``, so that dplib needs no scikit-learn.

References
----------
.. [YGFJ18] S. Yeom, I. Giacomelli, M. Fredrikson, S. Jha, "Privacy Risk in Machine Learning:
   Analyzing the Connection to Overfitting", IEEE CSF 2018, arXiv:1709.01604.
.. [KOV15] P. Kairouz, S. Oh, P. Viswanath, "The Composition Theorem for Differential
   Privacy", ICML 2015, Theorem 2.1.
.. [Faw06] T. Fawcett, "An introduction to ROC analysis", Pattern Recognition Letters 27, 2006,
   Algorithm 2 (ROC points with ties) and Section 7 (area by trapezoids).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dplib._validation import check_data

__all__ = ["example_losses", "loss_threshold_attack", "roc_curve", "auc"]


def example_losses(model: Any, X: Any, y: Any) -> np.ndarray:
    """Per-example cross-entropy ``−ln p_model(y_i | x_i)`` of a fitted classifier.

    Parameters
    ----------
    model : classifier
        Anything with ``predict_proba`` and ``classes_`` (scikit-learn's convention), such as
        :class:`~dplib.dpsgd.DPSGDClassifier`.
    X : array_like of shape (n, d)
    y : array_like of shape (n,)
        Labels, each one of ``model.classes_``.

    Returns
    -------
    ndarray of shape (n,)
        Losses ≥ 0 (probabilities are floored at 1e-300, so a loss is at most about 690).

    Raises
    ------
    TypeError
        If ``model`` has no ``predict_proba`` or ``classes_``.
    ValueError
        If a label is not one of the model's classes or the lengths differ.
    """
    if not hasattr(model, "predict_proba") or not hasattr(model, "classes_"):
        raise TypeError(
            "model must be a fitted classifier with predict_proba and classes_, "
            f"got {type(model).__name__}"
        )
    y = np.asarray(y)
    classes = np.asarray(model.classes_)
    proba = np.asarray(model.predict_proba(X), dtype=float)
    if y.ndim != 1 or y.shape[0] != proba.shape[0]:
        raise ValueError(f"y must be 1-d with one label per row of X ({proba.shape[0]}), got shape {y.shape}")
    index = np.searchsorted(classes, y)
    index = np.clip(index, 0, classes.size - 1)
    unknown = classes[index] != y
    if np.any(unknown):
        raise ValueError(f"y contains labels that are not among model.classes_, e.g. {y[np.argmax(unknown)]!r}")
    return -np.log(np.maximum(proba[np.arange(y.size), index], 1e-300))


def loss_threshold_attack(model_or_losses: Any, X: Any = None, y: Any = None) -> np.ndarray:
    """Membership scores of the loss-threshold attack: the negated per-example loss.

    Parameters
    ----------
    model_or_losses : classifier or array_like
        Either a fitted classifier (then ``X`` and ``y`` are required and the losses are
        :func:`example_losses`) or the per-example losses themselves, shape (n,).
    X, y : array_like, optional
        The candidate examples and their labels, when a model is given.

    Returns
    -------
    ndarray of shape (n,)
        ``−ℓ_i``: the higher, the more likely example i was in the training set. Yeom et al.'s
        attack predicts "member" when ``score ≥ −τ``, τ the average training loss
        ([YGFJ18] Section 3.2); sweeping τ gives the ROC curve (:func:`roc_curve`).

    Raises
    ------
    ValueError
        For NaN losses, a model without ``X`` and ``y``, or losses given together with ``X``.

    Examples
    --------
    >>> loss_threshold_attack([0.1, 2.3, 0.7]).tolist()
    [-0.1, -2.3, -0.7]
    """
    if hasattr(model_or_losses, "predict_proba"):
        if X is None or y is None:
            raise ValueError("with a model, loss_threshold_attack needs the examples X and labels y")
        losses = example_losses(model_or_losses, X, y)
    else:
        if X is not None or y is not None:
            raise ValueError("pass either a model with X and y, or precomputed losses alone")
        losses = check_data(model_or_losses, "model_or_losses")
        if losses.ndim != 1:
            raise ValueError(
                "model_or_losses must be a fitted classifier or a 1-d array of per-example "
                f"losses, got an array of shape {losses.shape}"
            )
    return -losses  # [YGFJ18]: low loss ⇒ member


def _check_labels_scores(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray]:
    labels = np.asarray(labels)
    scores = check_data(scores, "scores")
    if scores.ndim != 1 or labels.shape != scores.shape:
        raise ValueError(
            f"labels and scores must be 1-d arrays of the same length, got shapes {labels.shape} "
            f"and {scores.shape}"
        )
    if labels.dtype != bool:
        if not np.all(np.isin(labels, (0, 1))):
            raise ValueError("labels must be booleans or 0/1 (1 = member, the positive class)")
        labels = labels.astype(bool)
    n_pos = int(labels.sum())
    if n_pos == 0 or n_pos == labels.size:
        raise ValueError(
            "labels must contain both members (1) and non-members (0) for an ROC curve, "
            f"got {n_pos} members out of {labels.size}"
        )
    return labels, scores


def roc_curve(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve of the rule "positive when score ≥ threshold", every threshold at once.

    Parameters
    ----------
    labels : array_like of bool or {0, 1}, shape (n,)
        True membership (1 = member = positive); both classes must occur.
    scores : array_like of float, shape (n,)
        Attack scores, larger = more likely positive.

    Returns
    -------
    fpr, tpr : ndarray
        False- and true-positive rates, non-decreasing, from (0, 0) to (1, 1); one point per
        distinct score plus the starting point.
    thresholds : ndarray
        ``thresholds[j]`` gives the point ``(fpr[j], tpr[j])``; ``thresholds[0] = inf``.

    Notes
    -----
    Sort by decreasing score and count positives and negatives above each *distinct* score
    ([Faw06] Algorithm 2), so tied scores move the curve diagonally, as
    ``sklearn.metrics.roc_curve(..., drop_intermediate=False)`` does.

    Examples
    --------
    >>> fpr, tpr, thr = roc_curve([1, 1, 0, 0], [0.9, 0.4, 0.6, 0.1])
    >>> fpr.tolist(), tpr.tolist()
    ([0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0])
    """
    labels, scores = _check_labels_scores(labels, scores)
    order = np.argsort(-scores, kind="mergesort")
    sorted_scores, sorted_labels = scores[order], labels[order]
    last_of_value = np.r_[np.flatnonzero(np.diff(sorted_scores)), sorted_scores.size - 1]
    tps = np.cumsum(sorted_labels)[last_of_value]
    fps = last_of_value + 1 - tps
    tpr = np.r_[0.0, tps / tps[-1]]
    fpr = np.r_[0.0, fps / fps[-1]]
    thresholds = np.r_[np.inf, sorted_scores[last_of_value]]
    return fpr, tpr, thresholds


def auc(x: Any, y: Any) -> float:
    """Area under the curve through the points ``(x_j, y_j)``, by the trapezoidal rule.

    Parameters
    ----------
    x : array_like, shape (k,)
        Monotonic (non-decreasing or non-increasing) abscissae, e.g. the ``fpr`` of
        :func:`roc_curve`; at least 2 points.
    y : array_like, shape (k,)

    Returns
    -------
    float
        For an ROC curve: the probability that a random member scores higher than a random
        non-member, ties counting 1/2 (the Mann-Whitney statistic; [Faw06] Section 7).

    Raises
    ------
    ValueError
        If ``x`` is not monotonic, the lengths differ or there are fewer than 2 points.

    Examples
    --------
    >>> auc([0.0, 0.5, 1.0], [0.0, 1.0, 1.0])
    0.75
    """
    x = check_data(x, "x").ravel()
    y = check_data(y, "y").ravel()
    if x.size != y.size or x.size < 2:
        raise ValueError(f"x and y must have the same length, at least 2, got {x.size} and {y.size}")
    dx = np.diff(x)
    if np.all(dx >= 0):
        direction = 1.0
    elif np.all(dx <= 0):
        direction = -1.0
    else:
        raise ValueError("x must be monotonic (non-decreasing or non-increasing)")
    return float(direction * np.sum(dx * (y[1:] + y[:-1]) / 2.0))
