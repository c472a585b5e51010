"""DP-SGD from scratch: per-example gradients, clipping, noise, Poisson sampling, the classifier.

Statistical tests take ``rng_seed`` and use dplib.testing's assertions (false-failure probability
at most 1e-9 each); the accuracy goals and reproducibility use fixed seeds.
"""

import warnings

import numpy as np
import pytest
from scipy import stats

from dplib.accounting.dpsgd import dpsgd_epsilon
from dplib.dpsgd import (
    DPSGDClassifier,
    batch_gradient,
    clip_gradients,
    clipped_gradient_sum,
    cross_entropy,
    forward,
    init_params,
    noisy_gradient,
    normalize_rows,
    per_example_gradients,
    per_example_norms,
    poisson_sample,
    privatize_gradient_sum,
    softmax,
)
from dplib.errors import PrivacyLeakWarning
from dplib.testing import assert_frequencies, assert_mean, assert_variance

ARCHITECTURES = [((), "tanh"), ((5,), "tanh"), ((4, 3), "relu"), ((6,), "relu")]


def _problem(hidden, seed=0, n=7, d=5, k=3):
    rng = np.random.default_rng(seed)
    params = init_params(d, k, hidden, rng=rng)
    # perturb every parameter (the output layer starts at 0) so that no gradient is trivial
    params = [p + rng.normal(0.0, 0.5, p.shape) for p in params]
    X = rng.normal(size=(n, d))
    y = rng.integers(0, k, n)
    return params, X, y


def _loss_i(params, X, y, i, activation):
    return cross_entropy(forward(params, X[i : i + 1], activation=activation), y[i : i + 1])[0]


# ------------------------------------------------------------------------------ gradients
@pytest.mark.parametrize(("hidden", "activation"), ARCHITECTURES)
def test_per_example_gradients_match_central_finite_differences(hidden, activation):
    params, X, y = _problem(hidden)
    grads, losses = per_example_gradients(params, X, y, activation=activation)
    h = 1e-6
    for j, p in enumerate(params):
        assert grads[j].shape == (X.shape[0], *p.shape)
        for flat in range(p.size):
            idx = np.unravel_index(flat, p.shape)
            for i in range(X.shape[0]):
                plus = [q.copy() for q in params]
                minus = [q.copy() for q in params]
                plus[j][idx] += h
                minus[j][idx] -= h
                numeric = (_loss_i(plus, X, y, i, activation) - _loss_i(minus, X, y, i, activation)) / (2 * h)
                assert grads[j][(i, *idx)] == pytest.approx(numeric, abs=1e-7, rel=1e-5)
    assert np.allclose(losses, [_loss_i(params, X, y, i, activation) for i in range(X.shape[0])])


@pytest.mark.parametrize(("hidden", "activation"), ARCHITECTURES)
def test_sum_of_per_example_gradients_is_the_batch_gradient(hidden, activation):
    params, X, y = _problem(hidden, seed=1, n=40)
    grads, losses = per_example_gradients(params, X, y, activation=activation)
    total, loss = batch_gradient(params, X, y, activation=activation)
    assert loss == pytest.approx(losses.sum())
    for g, t in zip(grads, total, strict=True):
        np.testing.assert_allclose(g.sum(axis=0), t, rtol=1e-12, atol=1e-12)


def test_cross_entropy_is_minus_log_softmax():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(6, 4)) * 30  # large logits: must stay finite
    y = rng.integers(0, 4, 6)
    expected = -stats.multinomial.logpmf(np.eye(4)[y], 1, softmax(z))
    np.testing.assert_allclose(cross_entropy(z, y), expected, rtol=1e-9)
    np.testing.assert_allclose(softmax(z).sum(axis=1), 1.0)


def test_empty_batch_gives_empty_gradients():
    params, _, _ = _problem((3,))
    grads, losses = per_example_gradients(params, np.zeros((0, 5)), np.zeros(0, dtype=int))
    assert [g.shape for g in grads] == [(0, *p.shape) for p in params]
    assert losses.shape == (0,)


@pytest.mark.parametrize(("hidden", "activation"), ARCHITECTURES)
def test_ghost_clipping_equals_explicit_per_example_clipping(hidden, activation):
    params, X, y = _problem(hidden, seed=3, n=30)
    grads, _ = per_example_gradients(params, X, y, activation=activation)
    norms = per_example_norms(grads)
    clip = float(np.median(norms))  # half the examples clipped
    total, _, ghost_norms = clipped_gradient_sum(params, X, y, clip, activation=activation)
    np.testing.assert_allclose(ghost_norms, norms, rtol=1e-12)
    for c, t in zip(clip_gradients(grads, clip), total, strict=True):
        np.testing.assert_allclose(c.sum(axis=0), t, rtol=1e-10, atol=1e-12)


def test_gradient_functions_refuse_bad_labels_and_shapes():
    params, X, y = _problem(())
    with pytest.raises(ValueError, match=r"y must hold one class index in \[0, 3\)"):
        per_example_gradients(params, X, np.full(7, 3))
    with pytest.raises(ValueError, match=r"X must have shape \(n, 5\)"):
        per_example_gradients(params, X[:, :4], y)
    with pytest.raises(ValueError, match="activation must be one of"):
        per_example_gradients(params, X, y, activation="sigmoid")


# ------------------------------------------------------------------------------- clipping
def test_clipping_bounds_norms_keeps_small_gradients_and_directions():
    rng = np.random.default_rng(4)
    g = rng.standard_t(2, size=(500, 12)) * rng.choice([0.01, 1.0, 100.0], size=(500, 1))
    clip = 1.0
    out = clip_gradients(g, clip)
    norms, new_norms = np.linalg.norm(g, axis=1), np.linalg.norm(out, axis=1)
    assert np.all(new_norms <= clip * (1 + 1e-12))
    small = norms <= clip
    assert small.any() and (~small).any()
    np.testing.assert_array_equal(out[small], g[small])  # untouched, bit for bit
    np.testing.assert_allclose(new_norms[~small], clip)  # long ones end exactly at C
    cosine = np.einsum("ij,ij->i", out, g) / (new_norms * norms)
    np.testing.assert_allclose(cosine, 1.0)  # same direction, positive factor


def test_clipping_norm_is_joint_over_all_parameters():
    # each block has norm 0.8 < C = 1, jointly 0.8 * sqrt(2) > 1: per-layer clipping would miss it
    w = np.zeros((1, 2, 2))
    w[0, 0, 0] = 0.8
    b = np.array([[0.0, 0.8]])
    cw, cb = clip_gradients([w, b], 1.0)
    assert np.sqrt(np.sum(cw**2) + np.sum(cb**2)) == pytest.approx(1.0)
    assert cw[0, 0, 0] == pytest.approx(0.8 / (0.8 * np.sqrt(2)))


def test_clipping_bounds_each_examples_influence_not_the_average():
    """Removing one example moves the clipped sum by at most C (the sensitivity DP-SGD needs).

    Clipping the sum or the average instead ("clip the average" bug) fails this: one outlier
    then dominates the update.
    """
    clip = 1.0
    g = np.vstack([[100.0, 0.0], np.tile([0.0, 0.01], (9, 1))])  # one outlier, nine small
    total = clip_gradients(g, clip).sum(axis=0)
    np.testing.assert_allclose(total, [1.0, 0.09])  # the outlier counts for C only
    wrong_average = g.mean(axis=0) * min(1.0, clip / np.linalg.norm(g.mean(axis=0))) * len(g)
    assert not np.allclose(wrong_average, total)
    rng = np.random.default_rng(5)
    for _ in range(50):
        batch = rng.standard_cauchy(size=(20, 6))
        full = clip_gradients(batch, clip).sum(axis=0)
        for i in range(20):
            without = clip_gradients(np.delete(batch, i, axis=0), clip).sum(axis=0)
            assert np.linalg.norm(full - without) <= clip * (1 + 1e-12)


def test_clipping_refuses_bad_input():
    with pytest.raises(ValueError, match="max_norm must be a finite number > 0, got 0"):
        clip_gradients(np.ones((2, 2)), 0)
    with pytest.raises(ValueError, match="NaN"):
        clip_gradients(np.array([[np.nan, 1.0]]), 1.0)
    with pytest.raises(ValueError, match="same number of examples"):
        clip_gradients([np.ones((2, 3)), np.ones((3,))], 1.0)


# ---------------------------------------------------------------------------- noisy step
def test_noise_has_std_sigma_c_over_expected_batch_size(rng_seed):
    sigma, clip, expected_batch = 2.0, 0.5, 50.0
    # 10 examples (not 50): dividing by the realised batch size would give 5x the std
    zeros = np.zeros((10, 40_000))
    noise = noisy_gradient(zeros, clip, sigma, expected_batch, rng=rng_seed)
    std = sigma * clip / expected_batch
    assert noise.shape == (40_000,)
    assert_mean(noise, 0.0, variance=std**2)
    assert_variance(noise, std**2, fourth_moment=3 * std**4)


def test_noisy_gradient_is_clipped_sum_plus_noise_over_expected_batch_size(rng_seed):
    rng = np.random.default_rng(rng_seed)
    g = rng.normal(0.0, 3.0, size=(30, 2_000))  # norms about 134, clipped to C = 1
    clip, sigma, expected_batch = 1.0, 1.5, 25.0
    centre = clip_gradients(g, clip).sum(axis=0) / expected_batch
    noisy = noisy_gradient(g, clip, sigma, expected_batch, rng=rng)
    std = sigma * clip / expected_batch
    assert_mean(noisy - centre, 0.0, variance=std**2)
    assert_variance(noisy - centre, std**2, fourth_moment=3 * std**4)
    # without noise: exactly the clipped sum over q N; list input keeps the structure
    exact = noisy_gradient([g[:, :5].reshape(30, 5, 1), g[:, 5:]], clip, 0.0, expected_batch)
    np.testing.assert_allclose(np.concatenate([exact[0].ravel(), exact[1]]), centre, rtol=1e-9, atol=1e-15)


def test_empty_batch_still_gets_noise(rng_seed):
    out = noisy_gradient(np.zeros((0, 20_000)), 1.0, 1.0, 10.0, rng=rng_seed)
    assert_variance(out, 0.01, fourth_moment=3e-4)
    out = privatize_gradient_sum([np.zeros((100, 200))], 1.0, 1.0, 10.0, rng=rng_seed)
    assert out[0].shape == (100, 200)
    assert_variance(out[0], 0.01, fourth_moment=3e-4)


def test_noisy_gradient_refuses_bad_arguments():
    g = np.zeros((3, 4))
    with pytest.raises(ValueError, match="noise_multiplier must be a finite number >= 0, got -1"):
        noisy_gradient(g, 1.0, -1, 10.0)
    with pytest.raises(ValueError, match="expected_batch_size must be a finite number > 0"):
        noisy_gradient(g, 1.0, 1.0, 0)


def test_poisson_sampling_includes_each_example_with_probability_q(rng_seed):
    n, q, reps = 20, 0.3, 20_000
    gen = np.random.default_rng(rng_seed)
    masks = np.array([poisson_sample(n, q, rng=gen) for _ in range(reps)])
    assert masks.dtype == bool and masks.shape == (reps, n)
    total = int(masks.sum())
    assert_frequencies([masks.size - total, total], [1 - q, q], counts=True)
    # batch sizes are Binomial(n, q): catches fixed-size batches and shuffling
    sizes = masks.sum(axis=1)
    assert_frequencies(np.bincount(sizes, minlength=n + 1), stats.binom.pmf(np.arange(n + 1), n, q), counts=True)
    # given the total, every position is equally likely: catches position bias
    assert_frequencies(masks.sum(axis=0), np.full(n, 1 / n), counts=True)


def test_poisson_sample_edge_cases_and_errors():
    assert poisson_sample(5, 1.0, rng=0).all()
    np.testing.assert_array_equal(poisson_sample(50, 0.5, rng=7), poisson_sample(50, 0.5, rng=7))
    with pytest.raises(ValueError, match=r"sampling_rate must be in \(0, 1\], got 0"):
        poisson_sample(5, 0)
    # 0 examples: an empty batch (under add/remove the empty dataset is answered)
    assert poisson_sample(0, 0.5, rng=0).shape == (0,)
    with pytest.raises(ValueError, match="n must be an integer >= 0"):
        poisson_sample(-1, 0.5)


# ----------------------------------------------------------------------------- classifier
@pytest.fixture(scope="module")
def digits():
    datasets = pytest.importorskip("sklearn.datasets")
    model_selection = pytest.importorskip("sklearn.model_selection")
    X, y = datasets.load_digits(return_X_y=True)
    return model_selection.train_test_split(X / 16, y, test_size=0.25, random_state=0)


def _small(seed=0, n=120):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    return X, y


def test_accuracy_goals_on_digits(digits):
    """>= 0.88 at epsilon=1 and >= 0.93 at epsilon=4 (delta=1e-5); fit times: bench/bench_dpsgd.py."""
    X_train, X_test, y_train, y_test = digits
    for epsilon, goal in ((1.0, 0.88), (4.0, 0.93)):
        clf = DPSGDClassifier(epsilon, 1e-5, classes=range(10), random_state=0).fit(X_train, y_train)
        assert clf.score(X_test, y_test) >= goal, (epsilon, clf.score(X_test, y_test))
        assert clf.epsilon_spent_ <= epsilon


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_spends_exactly_the_target_epsilon(accountant):
    X, y = _small()
    clf = DPSGDClassifier(2.0, 1e-5, batch_size=30, epochs=5, classes=[0, 1, 2], accountant=accountant, random_state=0)
    clf.fit(X, y)
    assert clf.sampling_rate_ == 30 / 120
    assert clf.steps_ == 20  # round(epochs * n / batch_size)
    assert 0.99 * 2.0 <= clf.epsilon_spent_ <= 2.0
    expected = dpsgd_epsilon(0.25, clf.noise_multiplier_, 20, 1e-5, accountant=accountant)
    assert clf.epsilon_spent_ == pytest.approx(expected)


def test_expected_n_fixes_q_and_steps_in_advance():
    # q = B/n and T = round(E n / B) read the private n, so a run on D and on D minus
    # one example differ in q and T (n is public by default, and the docs say so). With
    # expected_n = N both are B/N and round(E N / B) on any data: what the accountant certifies
    # (dpsgd_epsilon(q, sigma, T, delta)) no longer depends on n, so it holds for add/remove.
    X, y = _small()
    runs = []
    for rows in (slice(None), slice(1, None)):       # 120 and 119 examples
        clf = DPSGDClassifier(2.0, 1e-5, batch_size=30, epochs=5, classes=[0, 1, 2], expected_n=150,
                              random_state=0).fit(X[rows], y[rows])
        runs.append((clf.sampling_rate_, clf.steps_, clf.noise_multiplier_, clf.epsilon_spent_))
    assert runs[0] == runs[1]
    assert runs[0][:2] == (30 / 150, 25)             # q = B / N, T = round(5 * 150 / 30)
    default = [DPSGDClassifier(2.0, 1e-5, batch_size=30, epochs=5, classes=[0, 1, 2], random_state=0)
               .fit(X[rows], y[rows]) for rows in (slice(None), slice(1, None))]
    assert default[0].sampling_rate_ != default[1].sampling_rate_   # public n: q = B / n
    with pytest.raises(ValueError, match=r"batch_size must be an integer in \[1, expected_n\]"):
        DPSGDClassifier(2.0, 1e-5, batch_size=30, classes=[0, 1, 2], expected_n=20).fit(X, y)
    with pytest.raises(TypeError, match=r"expected_n must be an integer"):
        DPSGDClassifier(2.0, 1e-5, batch_size=30, classes=[0, 1, 2], expected_n=150.0).fit(X, y)
    with pytest.raises(ValueError, match=r"expected_n"):
        DPSGDClassifier(2.0, 1e-5, batch_size=30, classes=[0, 1, 2], expected_n=2**70).fit(X, y)


def test_estimator_contract_and_clone():
    clf = DPSGDClassifier(-1.0, 7.0, batch_size="anything")  # __init__ stores, never validates
    assert clf.get_params()["epsilon"] == -1.0 and clf.get_params()["batch_size"] == "anything"
    assert set(clf.get_params()) >= {"epsilon", "delta", "hidden_layer_sizes", "max_grad_norm",
                                     "batch_size", "epochs", "learning_rate", "accountant",
                                     "random_state", "verbose"}
    assert clf.set_params(epsilon=2.0, delta=1e-5) is clf and clf.epsilon == 2.0
    with pytest.raises(ValueError, match="invalid parameter 'eps'"):
        clf.set_params(eps=1.0)
    base = pytest.importorskip("sklearn.base")
    original = DPSGDClassifier(1.0, 1e-5, hidden_layer_sizes=(8,), random_state=3)
    copy = base.clone(original)
    assert copy is not original and copy.get_params() == original.get_params()
    X, y = _small()
    fitted = original.set_params(classes=[0, 1, 2], epochs=2, batch_size=30).fit(X, y)
    assert fitted is original
    assert not hasattr(base.clone(fitted), "coefs_")


def test_attributes_predictions_and_history(capsys):
    X, y = _small()
    labels = np.array(["a", "b", "c"])[y]
    clf = DPSGDClassifier(4.0, 1e-5, hidden_layer_sizes=(6,), batch_size=40, epochs=3,
                          classes=["a", "b", "c"], random_state=0, verbose=True).fit(X, labels)
    assert clf.classes_.tolist() == ["a", "b", "c"]
    assert [w.shape for w in clf.coefs_] == [(4, 6), (6, 3)]
    assert [b.shape for b in clf.intercepts_] == [(6,), (3,)]
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(clf.predict(X)) <= {"a", "b", "c"}
    assert clf.score(X, labels) == np.mean(clf.predict(X) == labels)
    assert [h["epoch"] for h in clf.history_] == [1, 2, 3]
    assert clf.history_[-1]["step"] == clf.steps_ == 9
    assert all(set(h) == {"epoch", "step", "loss", "train_accuracy"} for h in clf.history_)
    out = capsys.readouterr().out
    assert out.count("epoch") == 3 and "train accuracy" in out


def test_reproducible_with_random_state():
    X, y = _small()
    kw = dict(batch_size=30, epochs=3, classes=[0, 1, 2], hidden_layer_sizes=(5,))
    a = DPSGDClassifier(1.0, 1e-5, random_state=11, **kw).fit(X, y)
    b = DPSGDClassifier(1.0, 1e-5, random_state=11, **kw).fit(X, y)
    c = DPSGDClassifier(1.0, 1e-5, random_state=12, **kw).fit(X, y)
    for wa, wb, wc in zip(a.coefs_, b.coefs_, c.coefs_, strict=True):
        np.testing.assert_array_equal(wa, wb)
        assert not np.array_equal(wa, wc)


def test_noise_turned_off_reports_infinite_epsilon_and_warns():
    X, y = _small()
    with pytest.warns(PrivacyLeakWarning, match="epsilon=inf"):
        clf = DPSGDClassifier(1.0, 1e-5, noise_multiplier=0.0, epochs=2, batch_size=30, classes=[0, 1, 2]).fit(X, y)
    assert clf.epsilon_spent_ == np.inf and clf.noise_multiplier_ == 0.0


def test_reading_classes_from_the_data_warns():
    X, y = _small()
    with pytest.warns(PrivacyLeakWarning, match="classes were not given"):
        DPSGDClassifier(1.0, 1e-5, epochs=1, batch_size=30).fit(X, y)


def test_normalize_rows_is_per_example():
    X = np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    Z = normalize_rows(X)
    np.testing.assert_allclose(Z[0], np.array([-1.0, 0.0, 1.0]) / np.sqrt(2) * 4)
    np.testing.assert_array_equal(Z[1], 0.0)
    np.testing.assert_allclose(normalize_rows(X[:1]), Z[:1])  # independent of the other rows


@pytest.mark.parametrize(
    ("kwargs", "data", "error", "match"),
    [
        ({"epsilon": 0.0}, None, ValueError, "epsilon must be a finite number > 0, got 0.0"),
        ({"epsilon": -1}, None, ValueError, "epsilon must be a finite number > 0"),
        ({"delta": 0.0}, None, ValueError, r"delta must be in \(0, 1\), got 0.0"),
        ({"delta": 1.0}, None, ValueError, r"delta must be in \(0, 1\)"),
        ({"max_grad_norm": 0.0}, None, ValueError, "max_grad_norm must be a finite number > 0"),
        ({"batch_size": 0}, None, ValueError, "batch_size must be an integer >= 1, got 0"),
        ({"batch_size": 121}, None, ValueError, r"batch_size must be an integer in \[1, n_samples\] = \[1, 120\], got 121"),
        ({"batch_size": 2.5}, None, TypeError, "batch_size must be an integer"),
        ({"accountant": "moments"}, None, ValueError, "accountant must be one of"),
        ({}, "nan", ValueError, "X must not contain NaN"),
        ({}, "lengths", ValueError, r"y must be 1-d with one label per row of X \(120 rows\)"),
        ({"classes": None}, "one class", ValueError, "at least 2 classes"),
        ({"classes": [0]}, None, ValueError, "at least 2 classes|labels not in classes"),
        ({"classes": [0, 1]}, None, ValueError, "y contains labels not in classes"),
    ],
)
def test_bad_input_is_refused_before_anything_happens(kwargs, data, error, match):
    X, y = _small()
    if data == "nan":
        X = X.copy()
        X[3, 1] = np.nan
    elif data == "lengths":
        y = y[:-1]
    elif data == "one class":
        y = np.zeros_like(y)
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    params = dict(epsilon=1.0, delta=1e-5, classes=[0, 1, 2], epochs=1, batch_size=30, random_state=gen)
    params.update(kwargs)
    clf = DPSGDClassifier(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(error, match=match):
            clf.fit(X, y)
    assert gen.bit_generator.state == state  # no randomness drawn
    assert not hasattr(clf, "coefs_")  # nothing set


def test_failed_refit_leaves_a_fitted_model_unchanged():
    X, y = _small()
    clf = DPSGDClassifier(1.0, 1e-5, classes=[0, 1, 2], epochs=1, batch_size=30, random_state=0).fit(X, y)
    coefs = [w.copy() for w in clf.coefs_]
    with pytest.raises(ValueError):
        clf.set_params(max_grad_norm=-1.0).fit(X, y)
    for w, v in zip(coefs, clf.coefs_, strict=True):
        np.testing.assert_array_equal(w, v)


def test_predict_before_fit_and_wrong_width():
    clf = DPSGDClassifier(1.0, 1e-5)
    with pytest.raises(ValueError, match="not fitted yet"):
        clf.predict(np.zeros((1, 4)))
    X, y = _small()
    clf.set_params(classes=[0, 1, 2], epochs=1, batch_size=30).fit(X, y)
    with pytest.raises(ValueError, match=r"X must have shape \(n_samples, 4\)"):
        clf.predict(np.zeros((1, 3)))


# ----------------------------------------------------------------------------- secure mode


def test_secure_mode_noise_has_the_same_law_and_ignores_the_seed():
    # Opacus's secure mode: sum of four N(0, s²) draws / 2 from an OS-seeded generator. Same
    # law N(0, s²) (KS with the DKW bound at 1e-9); not reproducible from rng.
    from scipy import stats

    from dplib.dpsgd.optimizer import privatize_gradient_sum
    from dplib.testing import assert_distribution

    zeros = np.zeros(200_000)
    noisy = privatize_gradient_sum(zeros, 2.0, 1.5, 1.0, rng=0, secure_mode=True)
    assert_distribution(noisy / 3.0, stats.norm.cdf)
    again = privatize_gradient_sum(zeros, 2.0, 1.5, 1.0, rng=0, secure_mode=True)
    assert not np.array_equal(noisy, again)
    plain = privatize_gradient_sum(zeros, 2.0, 1.5, 1.0, rng=0)
    np.testing.assert_array_equal(plain, privatize_gradient_sum(zeros, 2.0, 1.5, 1.0, rng=0))
    with pytest.raises(TypeError, match="secure_mode must be True or False"):
        privatize_gradient_sum(zeros, 2.0, 1.5, 1.0, rng=0, secure_mode="yes")


def test_classifier_secure_mode_trains_and_is_validated():
    gen = np.random.default_rng(0)
    X = gen.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = DPSGDClassifier(2.0, 1e-5, batch_size=100, epochs=10, classes=[0, 1], normalize=False,
                          random_state=0, secure_mode=True).fit(X, y)
    assert clf.score(X, y) > 0.8
    with pytest.raises(TypeError, match="secure_mode must be True or False"):
        DPSGDClassifier(2.0, 1e-5, classes=[0, 1], secure_mode=1).fit(X, y)
