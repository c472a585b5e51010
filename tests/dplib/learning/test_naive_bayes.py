"""DPNaiveBayes: privacy accounting, no-noise limit, clamping, accuracy, scikit-learn contract."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

import dplib.learning.naive_bayes as nb_module
from dplib.errors import PrivacyLeakWarning
from dplib.learning.naive_bayes import DPNaiveBayes, naive_bayes_sensitivity


def _blobs(n=400, d=3, seed=0):
    gen = np.random.default_rng(seed)
    y = gen.integers(0, 2, size=n)
    X = gen.normal(loc=np.where(y[:, None] == 1, 2.0, -2.0), scale=1.0, size=(n, d))
    return np.clip(X, -6, 6), y


def test_sensitivity_grows_with_the_number_of_features():
    # Centred features in [-1/2, 1/2]: sums move by <= 1/2, squares by <= 1/4 per feature.
    assert naive_bayes_sensitivity(1) == {"counts": 1.0, "sums": 0.5, "squares": 0.25, "total": 1.75}
    assert naive_bayes_sensitivity(30)["sums"] == 15.0
    assert naive_bayes_sensitivity(30)["squares"] == 7.5
    with pytest.raises(ValueError, match="n_features"):
        naive_bayes_sensitivity(0)


def test_fit_spends_exactly_epsilon_with_the_right_sensitivities(monkeypatch):
    # Record every release: the budgets must add up to epsilon, and the sensitivities must be
    # 1 for the class counts and 3D/4 for the sums and squares (module notes), the latter in
    # grid units of 2**-k: scale (3D/4) 2**k / eps_stats.
    calls = []
    real_noise, real_discrete = nb_module.discrete_laplace_noise, nb_module.discrete_laplace_mechanism

    def spy_noise(scale, shape, generator):
        calls.append(("stats", shape, scale))
        return real_noise(scale, shape, generator)

    def spy_discrete(value, sensitivity, epsilon, *, rng=None):
        calls.append(("discrete", np.shape(value), sensitivity, epsilon))
        return real_discrete(value, sensitivity, epsilon, rng=rng)

    monkeypatch.setattr(nb_module, "discrete_laplace_noise", spy_noise)
    monkeypatch.setattr(nb_module, "discrete_laplace_mechanism", spy_discrete)
    X, y = _blobs(d=4)
    clf = DPNaiveBayes(epsilon=2.0, bounds=(-6, 6), classes=[0, 1], random_state=0).fit(X, y)
    assert len(calls) == 2
    kinds = {c[0]: c for c in calls}
    assert kinds["discrete"][1] == (2,) and kinds["discrete"][2] == 1
    eps_counts = kinds["discrete"][3]
    assert eps_counts == pytest.approx(2.0 * nb_module.COUNT_FRACTION)
    assert kinds["stats"][1] == (2, 8)
    # scale in real units = (3D/4) / eps_stats with D = 4 and eps_stats = 2 - eps_counts
    assert kinds["stats"][2] * clf.grid_step_ == pytest.approx(3.0 / (2.0 - eps_counts), rel=1e-15)
    assert kinds["stats"][2] * clf.grid_step_ >= 3.0 / (2.0 - eps_counts)  # never below


def test_noise_scale_attribute():
    X, y = _blobs(d=4)
    clf = DPNaiveBayes(epsilon=2.0, bounds=(-6, 6), classes=[0, 1], random_state=0).fit(X, y)
    assert clf.noise_scale_ == pytest.approx(3.0 / (2.0 * (1 - nb_module.COUNT_FRACTION)))


def test_huge_epsilon_recovers_gaussian_naive_bayes():
    X, y = _blobs(d=3)
    clf = DPNaiveBayes(epsilon=1e10, bounds=(-6, 6), classes=[0, 1], var_floor=1e-9, random_state=1)
    clf.fit(X, y)
    ref = GaussianNB(var_smoothing=1e-12).fit(X, y)
    np.testing.assert_allclose(clf.theta_, ref.theta_, atol=1e-6)
    np.testing.assert_allclose(clf.var_, ref.var_, rtol=1e-5)
    np.testing.assert_allclose(clf.class_prior_, ref.class_prior_, atol=1e-9)
    np.testing.assert_array_equal(clf.predict(X), ref.predict(X))
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), atol=1e-6)


def test_outliers_are_clamped_to_the_bounds():
    X = np.array([[0.0], [1.0], [1e9], [0.0]])
    y = np.array([0, 0, 0, 1])
    clf = DPNaiveBayes(epsilon=1e10, bounds=(0.0, 10.0), classes=[0, 1], random_state=0).fit(X, y)
    # Class 0 holds 0, 1 and the outlier clamped to 10: mean 11/3, not 3e8.
    assert clf.theta_[0, 0] == pytest.approx(11 / 3, abs=1e-6)
    assert np.all((clf.theta_ >= 0) & (clf.theta_ <= 10))


def test_class_counts_carry_discrete_laplace_noise_of_the_stated_scale():
    from dplib.testing import assert_distribution

    X, y = _blobs(n=2000, d=2)
    eps = 1.0
    true = np.bincount(y)
    residuals = []
    for seed in range(1500):
        clf = DPNaiveBayes(epsilon=eps, bounds=(-6, 6), classes=[0, 1], random_state=seed).fit(X, y)
        residuals.append(clf.class_count_ - true)
    # The counts get eps * COUNT_FRACTION with sensitivity 1: discrete Laplace of scale 10, whose
    # pmf is proportional to exp(-|k| / 10), i.e. the difference of two geometric variables.
    t = eps * nb_module.COUNT_FRACTION
    q = np.exp(-t)

    def cdf(x):
        k = np.floor(x)
        neg = q ** (-k) / (1 + q)  # P(Z <= k) for k < 0
        pos = 1 - q ** (k + 1) / (1 + q)  # P(Z <= k) for k >= 0
        return np.where(k < 0, neg, pos)

    assert_distribution(np.concatenate(residuals), cdf)


def test_same_random_state_same_model_and_different_states_differ():
    X, y = _blobs()
    a = DPNaiveBayes(epsilon=1.0, bounds=(-6, 6), classes=[0, 1], random_state=7).fit(X, y)
    b = DPNaiveBayes(epsilon=1.0, bounds=(-6, 6), classes=[0, 1], random_state=7).fit(X, y)
    c = DPNaiveBayes(epsilon=1.0, bounds=(-6, 6), classes=[0, 1], random_state=8).fit(X, y)
    np.testing.assert_array_equal(a.theta_, b.theta_)
    assert not np.array_equal(a.theta_, c.theta_)


def test_accuracy_on_breast_cancer_improves_with_epsilon():
    data = load_breast_cancer()
    X, y = data.data[:, :10], data.target
    upper = np.array([30, 40, 190, 2600, 0.17, 0.35, 0.43, 0.21, 0.31, 0.1])
    accs = {}
    for eps in (0.1, 100.0):
        scores = []
        for seed in range(10):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
            clf = DPNaiveBayes(eps, bounds=(0.0, upper), classes=[0, 1], random_state=seed).fit(Xtr, ytr)
            scores.append(clf.score(Xte, yte))
        accs[eps] = np.mean(scores)
    assert accs[100.0] > 0.88  # GaussianNB gets about 0.92 on these ten features
    assert accs[100.0] > accs[0.1]


def test_predict_proba_is_a_distribution_over_classes():
    X, y = _blobs()
    clf = DPNaiveBayes(epsilon=1.0, bounds=(-6, 6), classes=[0, 1], random_state=0).fit(X, y)
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])
    assert 0.0 <= clf.score(X, y) <= 1.0


def test_missing_classes_warns_about_the_leak():
    X, y = _blobs()
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        clf = DPNaiveBayes(epsilon=1.0, bounds=(-6, 6), random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPNaiveBayes(epsilon=1.0, bounds=(-6, 6), classes=[0, 1], random_state=0).fit(X, y)


def test_a_class_absent_from_the_data_still_gets_a_model():
    X, y = _blobs()
    clf = DPNaiveBayes(epsilon=1.0, bounds=(-6, 6), classes=[0, 1, 2], random_state=0).fit(X, y)
    assert clf.theta_.shape == (3, 3)
    assert np.all(clf.class_count_ >= 1)


def test_init_only_stores_and_clone_works():
    clf = DPNaiveBayes(epsilon=-5, bounds=None)  # nothing is validated before fit
    assert clf.epsilon == -5 and not hasattr(clf, "theta_")
    fitted = DPNaiveBayes(epsilon=2.0, bounds=(0, 1), random_state=3)
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params()
    assert copy.set_params(epsilon=4.0).epsilon == 4.0
    with pytest.raises(ValueError, match="invalid parameter"):
        copy.set_params(alpha=1.0)


@pytest.mark.parametrize(
    "kwargs, X, y, match",
    [
        ({"epsilon": 0.0, "bounds": (0, 1)}, [[0.5]], [0], "epsilon"),
        ({"epsilon": 1.0, "bounds": None}, [[0.5]], [0], "bounds"),
        ({"epsilon": 1.0, "bounds": (1, 0)}, [[0.5]], [0], "lower bound"),
        ({"epsilon": 1.0, "bounds": (0, 1)}, [[np.nan]], [0], "NaN"),
        ({"epsilon": 1.0, "bounds": (0, 1)}, [0.5, 0.2], [0, 1], "2-D"),
        ({"epsilon": 1.0, "bounds": (0, 1)}, [[0.5], [0.2]], [0], "one label per row"),
        ({"epsilon": 1.0, "bounds": (0, 1), "classes": [0]}, [[0.5], [0.2]], [0, 1], "not in classes"),
        ({"epsilon": 1.0, "bounds": (0, 1), "var_floor": 0}, [[0.5]], [0], "var_floor"),
    ],
)
def test_bad_input_is_refused(kwargs, X, y, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match=match):
            DPNaiveBayes(**kwargs).fit(X, y)


def test_predict_before_fit_and_wrong_width_are_refused():
    with pytest.raises(ValueError, match="not fitted"):
        DPNaiveBayes(epsilon=1.0, bounds=(0, 1)).predict([[0.5]])
    X, y = _blobs(d=3)
    clf = DPNaiveBayes(epsilon=1.0, bounds=(-6, 6), classes=[0, 1], random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="shape"):
        clf.predict(np.zeros((2, 4)))


def test_repr_shows_the_arguments_that_differ_from_their_defaults():
    from dplib.dpsgd import DPSGDClassifier

    assert repr(DPNaiveBayes(epsilon=2.0, random_state=3)) == "DPNaiveBayes(epsilon=2.0, random_state=3)"
    assert repr(DPSGDClassifier(1.0, 1e-5, epochs=5)) == "DPSGDClassifier(epsilon=1.0, delta=1e-05, epochs=5)"


def test_bounds_too_wide_for_a_finite_variance_are_refused_before_any_draw():
    # Issue 38, finding 5: bounds (-1e200, 1e200) were accepted, then var_ was inf and
    # predict_proba NaN ((2e200)**2 overflows). Refused, naming bounds, before any randomness.
    X, y = _blobs(d=2)
    gen = np.random.default_rng(5)
    before = gen.bit_generator.state
    with pytest.raises(ValueError, match=r"bounds: upper - lower must be at most 1e\+150"):
        DPNaiveBayes(1.0, bounds=(-1e200, 1e200), classes=[0, 1], random_state=gen).fit(X, y)
    assert gen.bit_generator.state == before
    # the widest accepted bounds give finite variances and probabilities
    clf = DPNaiveBayes(1.0, bounds=(-5e149, 5e149), classes=[0, 1], random_state=0).fit(X, y)
    assert np.all(np.isfinite(clf.var_)) and np.all(np.isfinite(clf.predict_proba(X)))


def test_empty_training_set_is_answered_and_needs_public_classes():
    clf = DPNaiveBayes(1.0, bounds=(-6, 6), classes=[0, 1], random_state=0).fit(np.empty((0, 3)), [])
    assert clf.theta_.shape == (2, 3) and np.all(np.isfinite(clf.var_))
    with pytest.raises(ValueError, match="classes must be given"):
        DPNaiveBayes(1.0, bounds=(-6, 6)).fit(np.empty((0, 3)), [])


def test_released_sums_carry_discrete_laplace_noise_on_the_grid():
    # All-zero data: the released sums are grid_step * Z with Z discrete Laplace of scale
    # (3D/4) 2**k / eps_stats grid units (D = 1, eps = 1: 0.75 / 0.9 in real units).
    from dplib.testing import assert_distribution

    X, y = np.zeros((10, 1)), np.zeros(10, dtype=int)
    residuals = []
    for seed in range(300):
        clf = DPNaiveBayes(1.0, bounds=(-1, 1), classes=[0, 1], random_state=seed).fit(X, y)
        residuals.append(clf.noisy_sums_.ravel() / clf.grid_step_)
    scale = 0.75 / 0.9 / clf.grid_step_
    q = np.exp(-1.0 / scale)

    def cdf(x):
        k = np.floor(x)
        return np.where(k < 0, q ** (-k) / (1 + q), 1 - q ** (k + 1) / (1 + q))

    draws = np.concatenate(residuals)
    assert np.array_equal(draws, np.round(draws))
    assert_distribution(draws, cdf)
