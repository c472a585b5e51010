"""A differentially private Gaussian naive Bayes classifier (scikit-learn style).

Gaussian naive Bayes needs, for every class ``c`` and feature ``j``, only three statistics of the
training data: the class count ``n_c``, the sum ``S_cj`` and the sum of squares ``Q_cj`` of the
feature over the class. The means ``S_cj / n_c`` and variances ``Q_cj / n_c - mean^2`` follow
from them by post-processing, so releasing the three tables privately makes the whole model
private (Vaidya, Shafiq, Basu & Hong 2013).

Sensitivity: each person touches D features
-------------------------------------------
Each feature is first clamped to its public bounds ``[l_j, u_j]`` and rescaled to the centred
unit interval: ``z_j = (clip(x_j, l_j, u_j) - m_j) / (u_j - l_j)`` with ``m_j = (l_j + u_j) / 2``,
so ``z_j`` lies in ``[-1/2, 1/2]``. Adding or removing one person (the ``add_remove`` relation)
then changes

* one class count by 1 (a histogram over classes: L1 sensitivity 1);
* the D sums ``S_c1, ..., S_cD`` of that person's class by ``|z_j| <= 1/2`` each
  (L1 sensitivity ``D / 2``);
* the D sums of squares by ``z_j^2 <= 1/4`` each (L1 sensitivity ``D / 4``).

The sensitivity grows with the number of features D because one person's record appears in the
statistics of *every* feature: this is the lecture's categorical naive Bayes, whose (class,
feature value) count tables have L1 sensitivity D and need Laplace noise of scale ``D / epsilon``.
Equivalently (basic composition), the D per-feature tables are D queries of sensitivity 1, each
answered with ``epsilon / D``. Centring matters under add/remove: the sensitivity of a sum of
values in ``[a, b]`` is ``max(|a|, |b|)``, which is ``1`` on ``[0, 1]`` but ``1/2`` on
``[-1/2, 1/2]``; it halves the noise for free.

:class:`DPNaiveBayes` spends a fraction ``COUNT_FRACTION`` (10 %) of ``epsilon`` on the class
counts (discrete Laplace, sensitivity 1) and the rest on the sums and squares together (Laplace
mechanism on the concatenated ``K x 2D`` table, L1 sensitivity ``D/2 + D/4 = 3D/4``), which is
epsilon-DP by the Laplace mechanism (Dwork & Roth 2014, Theorem 3.6) and basic composition
(Theorem 3.16). The counts get a share much larger than their ``1 / (1 + 3D/4)`` share of the
sensitivity because every mean and variance is divided by them. Everything after the release
(dividing, clipping the means to the bounds, flooring the variances, computing posteriors) is
post-processing and costs nothing.

References
----------
J. Vaidya, B. Shafiq, A. Basu and Y. Hong, "Differentially private naive Bayes classification",
IEEE/WIC/ACM WI-IAT 2013, pp. 571-576. C. Dwork and A. Roth, *The Algorithmic Foundations of
Differential Privacy*, 2014, Theorems 3.6 and 3.16.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dplib._estimator import ClassifierProtocol
from dplib._validation import as_generator, check_data, check_epsilon, check_real
from dplib.errors import PrivacyLeakWarning
from dplib.mechanisms.discrete import discrete_laplace_mechanism
from dplib.mechanisms.laplace import laplace_mechanism

__all__ = ["DPNaiveBayes", "naive_bayes_sensitivity"]
COUNT_FRACTION = 0.1  # share of epsilon spent on the class counts


def naive_bayes_sensitivity(n_features: int) -> dict[str, float]:
    """L1 sensitivities of the rescaled naive Bayes statistics under add/remove neighbours.

    Parameters
    ----------
    n_features : int
        The number of features D, >= 1.

    Returns
    -------
    dict
        ``{"counts": 1, "sums": D / 2, "squares": D / 4, "total": 1 + 3 D / 4}`` for features
        rescaled to ``[-1/2, 1/2]`` (see the module notes).
    """
    if isinstance(n_features, bool) or not isinstance(n_features, int | np.integer) or n_features < 1:
        raise ValueError(f"n_features must be an integer >= 1, got {n_features!r}")
    d = float(n_features)
    return {"counts": 1.0, "sums": d / 2, "squares": d / 4, "total": 0.75 * d + 1.0}


def _check_bounds_arrays(bounds: Any, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    if bounds is None:
        raise ValueError(
            "bounds=(lower, upper) is required: the clamping bounds must be public, chosen without "
            "looking at the data (taking them from the data would leak its extremes)"
        )
    if not isinstance(bounds, tuple | list | np.ndarray) or len(bounds) != 2:
        raise TypeError(
            "bounds must be a pair (lower, upper) of scalars or arrays of length n_features, got "
            f"{type(bounds).__name__}"
        )
    ends = []
    for i, end in enumerate(bounds):
        arr = check_data(end, f"bounds[{i}]")  # refuses NaN, infinities, complex, strings, None
        if arr.ndim > 1 or arr.size not in (1, n_features):
            raise ValueError(
                f"bounds[{i}] must be a scalar or an array of length n_features={n_features}, got "
                f"shape {arr.shape}"
            )
        ends.append(np.broadcast_to(arr.reshape(-1), (n_features,)).astype(float))
    lower, upper = ends
    if np.any(lower >= upper):
        j = int(np.argmax(lower >= upper))
        raise ValueError(
            "bounds: every lower bound must be < its upper bound; feature "
            f"{j} has [{lower[j]:g}, {upper[j]:g}]"
        )
    return lower, upper


class DPNaiveBayes(ClassifierProtocol):
    """Epsilon-differentially private Gaussian naive Bayes.

    Parameters
    ----------
    epsilon : float, default 1.0
        Total privacy loss of ``fit`` (add/remove neighbours), finite and > 0.
    bounds : (lower, upper), required by ``fit``
        Public clamping bounds for the features: scalars (the same for every feature) or arrays of
        length D. Values outside are clipped. They must not be computed from the training data.
    classes : array_like, optional
        The possible labels. If omitted they are read from ``y`` with a
        :class:`~dplib.errors.PrivacyLeakWarning` (the set of labels present is itself a
        property of the data).
    var_floor : float, default 1e-3
        Lower bound on every variance, as a fraction of ``(upper - lower)^2``, in (0, 1/4]; noisy
        sums of squares can give tiny or negative variances, which would make the classifier absurdly
        confident. A data-independent choice, so flooring is post-processing.
    random_state : None, int or numpy.random.Generator, optional
        Source of the noise.

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
    class_count_ : ndarray of shape (K,)
        Noisy class counts, floored at 1.
    class_prior_ : ndarray of shape (K,)
    theta_ : ndarray of shape (K, D)
        Noisy per-class feature means, in the original units, clipped to the bounds.
    var_ : ndarray of shape (K, D)
        Noisy per-class feature variances, in the original units, floored.
    noise_scale_ : float
        Laplace scale of the noise on every sum and sum of squares (in the rescaled units
        where each feature spans ``[-1/2, 1/2]``).
    n_features_in_ : int

    Notes
    -----
    See the module docstring for the sensitivity analysis (each person touches all D features,
    so the sums have L1 sensitivity ``D / 2`` and the sums of squares ``D / 4``).

    References
    ----------
    J. Vaidya, B. Shafiq, A. Basu and Y. Hong, "Differentially private naive Bayes
    classification", WI-IAT 2013.

    Examples
    --------
    >>> X = np.array([[0.1, 0.2], [0.9, 0.8], [0.2, 0.1], [0.8, 0.9]] * 50)
    >>> y = np.array([0, 1, 0, 1] * 50)
    >>> clf = DPNaiveBayes(epsilon=5.0, bounds=(0.0, 1.0), classes=[0, 1], random_state=0).fit(X, y)
    >>> clf.predict([[0.15, 0.15], [0.85, 0.85]]).tolist()
    [0, 1]
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        bounds: Any = None,
        classes: Any = None,
        var_floor: float = 1e-3,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.classes = classes
        self.var_floor = var_floor
        self.random_state = random_state

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, y: Any) -> DPNaiveBayes:
        """Release the noisy class counts, sums and sums of squares; derive the model.

        Parameters
        ----------
        X : array_like of shape (n, D)
            Training features (finite).
        y : array_like of shape (n,)
            Labels.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For a bad epsilon, missing or inverted bounds, NaN or infinite features, mismatched
            lengths, labels outside ``classes``, or an empty training set.
        """
        epsilon = check_epsilon(self.epsilon)
        X = check_data(X, "X")
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array (n_samples, n_features), got shape {X.shape}")
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must be 1-D with one label per row of X ({X.shape[0]}), got shape {y.shape}")
        # A fraction of (upper - lower)^2, which bounds no variance on [lower, upper] above 1/4.
        floor = check_real(self.var_floor, "var_floor", minimum=0.0, open_minimum=True, maximum=0.25)
        n_features = X.shape[1]
        lower, upper = _check_bounds_arrays(self.bounds, n_features)
        if self.classes is None:
            warnings.warn(
                "classes were not given, so they are read from y; the set of labels present is a "
                "property of the data and is not protected. Pass classes=... to avoid the leak.",
                PrivacyLeakWarning,
                stacklevel=2,
            )
            classes = np.unique(y)
        else:
            classes = np.unique(np.asarray(self.classes))
            unknown = ~np.isin(y, classes)
            if np.any(unknown):
                raise ValueError(f"y contains labels not in classes, e.g. {y[np.argmax(unknown)]!r}")
        generator = as_generator(self.random_state, name="random_state")

        # Clamp and rescale to [0, 1]: each coordinate then moves by at most 1 per person.
        z = (np.clip(X, lower, upper) - (lower + upper) / 2) / (upper - lower)
        index = np.searchsorted(classes, y)
        k = classes.size
        counts = np.bincount(index, minlength=k).astype(np.int64)
        sums = np.zeros((k, n_features))
        squares = np.zeros((k, n_features))
        np.add.at(sums, index, z)
        np.add.at(squares, index, z * z)

        sens = naive_bayes_sensitivity(n_features)
        eps_counts = epsilon * COUNT_FRACTION
        eps_stats = epsilon - eps_counts
        noisy_counts = discrete_laplace_mechanism(counts, 1, eps_counts, rng=generator)
        noisy_stats = laplace_mechanism(
            np.concatenate([sums, squares], axis=1),
            sens["sums"] + sens["squares"],
            eps_stats,
            rng=generator,
        )
        noisy_sums, noisy_squares = noisy_stats[:, :n_features], noisy_stats[:, n_features:]

        # Post-processing only from here on.
        n_c = np.maximum(np.asarray(noisy_counts, dtype=float), 1.0)
        mean_z = np.clip(noisy_sums / n_c[:, None], -0.5, 0.5)
        var_z = np.clip(noisy_squares / n_c[:, None] - mean_z**2, floor, 0.25)
        width = upper - lower

        self.classes_ = classes
        self.class_count_ = n_c
        self.class_prior_ = n_c / n_c.sum()
        self.theta_ = (lower + upper) / 2 + width * mean_z
        self.var_ = var_z * width**2
        self.noise_scale_ = (sens["sums"] + sens["squares"]) / eps_stats
        self.n_features_in_ = n_features
        self.epsilon_ = epsilon
        return self

    # --------------------------------------------------------------- predicting
    def _check_fitted(self) -> None:
        if not hasattr(self, "theta_"):
            raise ValueError("this DPNaiveBayes instance is not fitted yet: call fit(X, y) first")

    def _joint_log_likelihood(self, X: Any) -> np.ndarray:
        self._check_fitted()
        X = check_data(X, "X")
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have shape (n_samples, {self.n_features_in_}), got {X.shape}")
        log_prior = np.log(self.class_prior_)
        # log N(x; mu, var) summed over features, for every (sample, class) pair.
        diff = X[:, None, :] - self.theta_[None, :, :]
        log_lik = -0.5 * np.sum(np.log(2 * np.pi * self.var_)[None] + diff**2 / self.var_[None], axis=2)
        return log_prior[None, :] + log_lik

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log posterior class probabilities, shape (n_samples, K)."""
        jll = self._joint_log_likelihood(X)
        top = jll.max(axis=1, keepdims=True)
        return jll - (top + np.log(np.exp(jll - top).sum(axis=1, keepdims=True)))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Posterior class probabilities, shape (n_samples, K), rows summing to 1."""
        return np.exp(self.predict_log_proba(X))

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class for each row of ``X``."""
        jll = self._joint_log_likelihood(X)
        return self.classes_[np.argmax(jll, axis=1)]

