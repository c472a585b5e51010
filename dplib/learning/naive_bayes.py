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
statistics of *every* feature: this is the categorical naive Bayes of notebook 02, whose (class,
feature value) count tables have L1 sensitivity D and need Laplace noise of scale ``D / epsilon``.
Equivalently (basic composition), the D per-feature tables are D queries of sensitivity 1, each
answered with ``epsilon / D``. Centring matters under add/remove: the sensitivity of a sum of
values in ``[a, b]`` is ``max(|a|, |b|)``, which is ``1`` on ``[0, 1]`` but ``1/2`` on
``[-1/2, 1/2]``; it halves the noise for free.

:class:`DPNaiveBayes` spends a fraction ``COUNT_FRACTION`` (10 %) of ``epsilon`` on the class
counts (discrete Laplace, sensitivity 1) and the rest on the sums and squares together (the
concatenated ``K x 2D`` table, L1 sensitivity ``D/2 + D/4 = 3D/4``), which is epsilon-DP by the
Laplace mechanism (Dwork & Roth 2014, Theorem 3.6) and basic composition (Theorem 3.16).

Safe on IEEE doubles: fixed-point sums, integer noise
-----------------------------------------------------
Textbook Laplace noise on float sums leaves low-order bits that tell neighbouring datasets
apart (Mironov 2012): with 40 rows against 41 at epsilon = 1, 4.7 % of the released means of
the earlier, float version were impossible under the neighbour. So every rescaled value is
rounded to a fixed grid ``g = 2**-k`` first (``k <= 26``, from public parameters only:
:func:`_grid_bits`), the sums are exact integers in units of ``g`` (``|z / g| <= 2**(k-1)``,
``z² / g <= 2**(k-2)``), and the noise is discrete Laplace of scale ``(3D/4) 2**k /
epsilon_stats`` grid units: integers plus integers, whatever the data, so every released sum
lies on ``g Z`` for both neighbours (the geometric mechanism, Ghosh, Roughgarden &
Sundararajan 2009). In the original units the noise has the textbook scale; the rounding moves
each value by at most ``g / 2``. The released sums are kept as ``noisy_sums_`` and
``noisy_squares_``. The counts get a share much larger than their ``1 / (1 + 3D/4)`` share of the
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

import math
import warnings
from typing import Any

import numpy as np

from dplib._estimator import ClassifierProtocol
from dplib._validation import as_generator, check_data, check_epsilon, check_real, refuse_masked
from dplib.errors import PrivacyLeakWarning
from dplib.mechanisms.discrete import discrete_laplace_mechanism
from dplib.mechanisms.discrete_laplace import discrete_laplace_noise

__all__ = ["DPNaiveBayes", "naive_bayes_sensitivity"]
COUNT_FRACTION = 0.1  # share of epsilon spent on the class counts
#: Largest clamping width ``upper - lower``: the variances are in units of its square, which must
#: be a finite double (``(2e200)**2`` is inf, and then every posterior NaN).
MAX_WIDTH = 1e150
#: Finest fixed-point grid for the rescaled features: 2**-26. Each person adds at most 2**25 grid
#: units to a sum, so the int64 sums cannot overflow below 2**37 rows (a terabyte of one feature).
_GRID_BITS = 26
#: Largest noise scale in grid units (the exact sampler's range).
_MAX_UNITS_SCALE = 2.0**40


def _grid_bits(n_features: int, eps_stats: float) -> int:
    """``k`` of the grid ``2**-k``: 26, or fewer when the noise scale in grid units would pass 2**40.

    The noise scale is ``(3D/4) 2**k / eps_stats`` grid units; public parameters only. Raises
    ``ValueError`` (naming epsilon) when not even ``k = 1`` fits.
    """
    with np.errstate(over="ignore"):
        scale = 0.75 * n_features / eps_stats  # inf for a subnormal epsilon
    ratio = _MAX_UNITS_SCALE / scale if math.isfinite(scale) else 0.0  # inf for a huge epsilon
    k = (
        _GRID_BITS
        if ratio >= 2.0**_GRID_BITS
        else (math.floor(math.log2(ratio)) if ratio > 0 else 0)
    )
    if not k >= 1:
        raise ValueError(
            "epsilon is too small for this number of features: the noise scale "
            f"(3 D / 4) / (0.9 epsilon) must be at most 2**39, got epsilon={eps_stats / 0.9!r} "
            f"with D={n_features}"
        )
    return k


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
    if (
        isinstance(n_features, bool)
        or not isinstance(n_features, int | np.integer)
        or n_features < 1
    ):
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
    with np.errstate(over="ignore"):
        width = upper - lower
    if not np.all(width <= MAX_WIDTH):
        j = int(np.argmax(~(width <= MAX_WIDTH)))
        raise ValueError(
            f"bounds: upper - lower must be at most {MAX_WIDTH:g} for every feature (the "
            f"variances are in units of its square, a finite double); feature {j} has "
            f"[{lower[j]:g}, {upper[j]:g}]"
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
    noisy_sums_, noisy_squares_ : ndarray of shape (K, D)
        The released statistics, in the rescaled units (features in ``[-1/2, 1/2]``): the
        fixed-point sums and sums of squares plus discrete Laplace noise, multiples of
        ``grid_step_``.
    grid_step_ : float
        The fixed-point grid ``2**-k`` of the rescaled features (see the module notes).
    class_count_ : ndarray of shape (K,)
        Noisy class counts, floored at 1.
    class_prior_ : ndarray of shape (K,)
    theta_ : ndarray of shape (K, D)
        Noisy per-class feature means, in the original units, clipped to the bounds.
    var_ : ndarray of shape (K, D)
        Noisy per-class feature variances, in the original units, floored.
    noise_scale_ : float
        Scale of the (discrete Laplace) noise on every sum and sum of squares, in the rescaled
        units where each feature spans ``[-1/2, 1/2]``.
    n_features_in_ : int

    Notes
    -----
    See the module docstring for the sensitivity analysis (each person touches all D features,
    so the sums have L1 sensitivity ``D / 2`` and the sums of squares ``D / 4``) and for the
    fixed-point grid that makes the claim hold on IEEE doubles. An empty training set (``X`` of
    shape ``(0, D)``) is data: it is answered like any other (noise only), since under
    add/remove refusing it would tell it from one record; it needs ``classes`` (public).

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
            For a bad epsilon (or one so small that the noise scale passes 2**39), missing,
            inverted or too wide bounds (``upper - lower > 1e150``), NaN or infinite features,
            mismatched lengths, labels outside ``classes``, no feature, or an empty training
            set without ``classes`` (an empty one with ``classes`` is answered).
        """
        epsilon = check_epsilon(self.epsilon)
        X = check_data(X, "X", allow_empty=True)
        if X.ndim != 2 or X.shape[1] < 1:
            raise ValueError(
                "X must be a 2-D array (n_samples, n_features) with n_features >= 1 (an empty "
                f"training set is np.empty((0, n_features))), got shape {X.shape}"
            )
        refuse_masked(y, "y")
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(
                f"y must be 1-D with one label per row of X ({X.shape[0]}), got shape {y.shape}"
            )
        # A fraction of (upper - lower)^2, which bounds no variance on [lower, upper] above 1/4.
        floor = check_real(
            self.var_floor, "var_floor", minimum=0.0, open_minimum=True, maximum=0.25
        )
        n_features = X.shape[1]
        lower, upper = _check_bounds_arrays(self.bounds, n_features)
        if self.classes is None:
            if y.size == 0:
                raise ValueError(
                    "classes must be given to fit on an empty training set (and should be "
                    "anyway: the labels present are a property of the data)"
                )
            warnings.warn(
                "classes were not given, so they are read from y; the set of labels present is a "
                "property of the data and is not protected. Pass classes=... to avoid the leak.",
                PrivacyLeakWarning,
                stacklevel=2,
            )
            classes = np.unique(y)
        else:
            refuse_masked(self.classes, "classes")
            classes = np.unique(np.asarray(self.classes))
            unknown = ~np.isin(y, classes)
            if np.any(unknown):
                raise ValueError(
                    f"y contains labels not in classes, e.g. {y[np.argmax(unknown)]!r}"
                )
        sens = naive_bayes_sensitivity(n_features)
        eps_counts = epsilon * COUNT_FRACTION
        eps_stats = epsilon - eps_counts
        bits = _grid_bits(n_features, eps_stats)
        if 1.0 / eps_counts > _MAX_UNITS_SCALE:
            raise ValueError(
                f"epsilon is too small: the class counts' noise scale 1 / (0.1 epsilon) must be "
                f"at most 2**40, got epsilon={self.epsilon!r}"
            )
        generator = as_generator(self.random_state, name="random_state")

        # Clamp and rescale to [-1/2, 1/2], then round onto the grid 2**-bits: integers in
        # [-2**(bits-1), 2**(bits-1)] (sums) and [0, 2**(bits-2)] (squares), exact in int64.
        mid = lower / 2 + upper / 2
        z = (np.clip(X, lower, upper) - mid) / (upper - lower)
        z = np.clip(z, -0.5, 0.5)  # rounding in the line above cannot leave the interval
        scale = float(2**bits)
        z_units = np.rint(z * scale).astype(np.int64)
        sq_units = np.rint(z * z * scale).astype(np.int64)
        index = np.searchsorted(classes, y)
        k = classes.size
        counts = np.bincount(index, minlength=k).astype(np.int64)
        sums = np.zeros((k, n_features), dtype=np.int64)
        squares = np.zeros((k, n_features), dtype=np.int64)
        np.add.at(sums, index, z_units)
        np.add.at(squares, index, sq_units)

        noisy_counts = discrete_laplace_mechanism(counts, 1, eps_counts, rng=generator)
        # L1 sensitivity in grid units: D 2**(bits-1) + D 2**(bits-2) = (3D/4) 2**bits; the
        # scale is nudged up one ulp if float division rounded it down (epsilon-DP exactly).
        units = 3 * n_features * 2 ** (bits - 2)
        noise_units = units / eps_stats
        if units / noise_units > eps_stats:
            noise_units = float(np.nextafter(noise_units, np.inf))
        noise = discrete_laplace_noise(noise_units, (k, 2 * n_features), generator)
        step = 1.0 / scale
        noisy_sums = (sums + noise[:, :n_features]).astype(np.float64) * step
        noisy_squares = (squares + noise[:, n_features:]).astype(np.float64) * step

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
        self.noisy_sums_ = noisy_sums
        self.noisy_squares_ = noisy_squares
        self.grid_step_ = step
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
        log_lik = -0.5 * np.sum(
            np.log(2 * np.pi * self.var_)[None] + diff**2 / self.var_[None], axis=2
        )
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
