"""Auditing: loss-threshold membership inference, ROC/AUC, ε lower bounds, one-run canary audits.

Statistical tests take ``rng_seed`` and hold with probability at least 1 − 1e-9 (stated per test);
the DP-SGD canary audit uses fixed seeds (one training run each) and checks exact figures.
"""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dplib.auditing import (
    MechanismAudit,
    OneRunAudit,
    auc,
    audit_mechanism,
    audit_one_run,
    audit_training_one_run,
    canary_inclusion,
    epsilon_lower_bound,
    example_losses,
    loss_threshold_attack,
    one_run_epsilon_lower_bound,
    one_run_guesses,
    one_run_p_value,
    random_canaries,
    roc_curve,
)
from dplib.dpsgd import DPSGDClassifier
from dplib.errors import PrivacyLeakWarning
from dplib.testing import assert_frequencies

# ------------------------------------------------------------------------------ ROC and AUC


@pytest.mark.parametrize("n_distinct", [3, 50, None])
def test_roc_auc_matches_sklearn_with_and_without_ties(rng_seed, n_distinct):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(rng_seed)
    labels = rng.random(400) < 0.4
    labels[:2] = [True, False]
    scores = rng.normal(size=400) + labels
    if n_distinct is not None:  # many ties
        scores = np.round(scores * n_distinct / 8) * 8 / n_distinct
    fpr, tpr, thresholds = roc_curve(labels, scores)
    ref_fpr, ref_tpr, ref_thr = metrics.roc_curve(labels, scores, drop_intermediate=False)
    np.testing.assert_allclose(fpr, ref_fpr)
    np.testing.assert_allclose(tpr, ref_tpr)
    np.testing.assert_array_equal(thresholds[1:], ref_thr[1:])
    assert auc(fpr, tpr) == pytest.approx(metrics.roc_auc_score(labels, scores), abs=1e-12)


def test_auc_is_the_mann_whitney_probability():
    rng = np.random.default_rng(0)
    pos, neg = rng.integers(0, 5, 30).astype(float), rng.integers(0, 5, 40).astype(float)
    pairs = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    labels = np.r_[np.ones(30), np.zeros(40)]
    fpr, tpr, _ = roc_curve(labels, np.r_[pos, neg])
    assert auc(fpr, tpr) == pytest.approx(pairs.mean(), abs=1e-12)
    assert auc(fpr[::-1], tpr[::-1]) == pytest.approx(pairs.mean())  # decreasing x is fine


def test_roc_and_auc_refuse_bad_input():
    with pytest.raises(ValueError, match="both members"):
        roc_curve([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="same length"):
        roc_curve([1, 0], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="booleans or 0/1"):
        roc_curve([2, 0], [0.1, 0.2])
    with pytest.raises(ValueError, match="monotonic"):
        auc([0.0, 1.0, 0.5], [0.0, 1.0, 1.0])


# ------------------------------------------------------------------------- loss attack
def test_loss_threshold_attack_scores_are_negated_losses():
    np.testing.assert_array_equal(loss_threshold_attack([0.5, 2.0]), [-0.5, -2.0])

    class Fixed:  # any classifier with predict_proba and classes_
        classes_ = np.array(["a", "b"])

        def predict_proba(self, X):
            return np.tile([0.8, 0.2], (len(X), 1))

    scores = loss_threshold_attack(Fixed(), np.zeros((2, 3)), ["a", "b"])
    np.testing.assert_allclose(scores, [math.log(0.8), math.log(0.2)])
    np.testing.assert_allclose(example_losses(Fixed(), np.zeros((1, 3)), ["b"]), [-math.log(0.2)])
    with pytest.raises(ValueError, match="not among model.classes_"):
        example_losses(Fixed(), np.zeros((1, 3)), ["c"])
    with pytest.raises(ValueError, match="needs the examples X and labels y"):
        loss_threshold_attack(Fixed())
    with pytest.raises(ValueError, match="NaN"):
        loss_threshold_attack([np.nan])


# ------------------------------------------------------------- ε lower bound from FP / FN
def _reference_bound(fp, fn, n_neg, n_pos, delta, alpha):
    """The same bound written independently with scipy's beta quantiles (Clopper-Pearson)."""
    fpr_hi = 1.0 if fp == n_neg else stats.beta.ppf(1 - alpha / 2, fp + 1, n_neg - fp)
    fnr_hi = 1.0 if fn == n_pos else stats.beta.ppf(1 - alpha / 2, fn + 1, n_pos - fn)
    terms = [0.0]
    if 1 - delta - fnr_hi > 0:
        terms.append(math.log((1 - delta - fnr_hi) / fpr_hi))
    if 1 - delta - fpr_hi > 0:
        terms.append(math.log((1 - delta - fpr_hi) / fnr_hi))
    return max(terms)


@pytest.mark.parametrize(
    ("fp", "fn", "n_neg", "n_pos", "delta", "alpha"),
    [(10, 10, 1000, 1000, 0.0, 0.05), (0, 30, 500, 500, 1e-5, 0.05), (5, 900, 1000, 1000, 0.0, 0.01),
     (0, 0, 100, 100, 0.0, 0.05), (250, 250, 1000, 1000, 0.01, 0.05)],
)
def test_epsilon_lower_bound_reference_cases(fp, fn, n_neg, n_pos, delta, alpha):
    got = epsilon_lower_bound(fp, fn, n_neg, n_pos, delta=delta, alpha=alpha)
    assert got == pytest.approx(_reference_bound(fp, fn, n_neg, n_pos, delta, alpha), rel=1e-9)


def test_epsilon_lower_bound_shape():
    # symmetric in (FP, negatives) <-> (FN, positives); 0 for a coin-flipping attack
    assert epsilon_lower_bound(3, 40, 200, 300) == pytest.approx(epsilon_lower_bound(40, 3, 300, 200))
    assert epsilon_lower_bound(500, 500, 1000, 1000) == 0.0
    # a perfect attack on n trials each: ln((1 - u)/u) with u = 1 - (alpha/2)^(1/n)
    u = 1 - 0.025 ** (1 / 100)
    assert epsilon_lower_bound(0, 0, 100, 100) == pytest.approx(math.log((1 - u) / u))
    # more errors, more delta or more confidence: a smaller bound
    assert epsilon_lower_bound(20, 20, 1000, 1000) < epsilon_lower_bound(10, 10, 1000, 1000)
    assert epsilon_lower_bound(10, 10, 1000, 1000, delta=0.1) < epsilon_lower_bound(10, 10, 1000, 1000)
    assert epsilon_lower_bound(10, 10, 1000, 1000, alpha=1e-6) < epsilon_lower_bound(10, 10, 1000, 1000)


def test_epsilon_lower_bound_is_valid_and_tight_for_randomized_response(rng_seed):
    """Randomized response with ε = 1 is the extremal ε-DP test: FPR = FNR = 1/(1 + e).

    At alpha = 1e-9 the bound exceeds 1 with probability at most 1e-9 (Clopper-Pearson); with
    10^6 trials per side it is within 0.05 of 1 unless a > 6-sigma deviation occurs (< 1e-9).
    """
    rng = np.random.default_rng(rng_seed)
    n = 1_000_000
    flip = 1 / (1 + math.e)
    fp, fn = rng.binomial(n, flip), rng.binomial(n, flip)
    bound = epsilon_lower_bound(int(fp), int(fn), n, n, alpha=1e-9)
    assert 0.95 < bound <= 1.0


def test_epsilon_lower_bound_refuses_bad_counts():
    with pytest.raises(ValueError, match=r"false_positives must be in \[0, n_negatives\] = \[0, 10\], got 11"):
        epsilon_lower_bound(11, 0, 10, 10)
    with pytest.raises(ValueError, match="n_positives must be an integer >= 1"):
        epsilon_lower_bound(0, 0, 10, 0)
    with pytest.raises(TypeError, match="false_negatives must be an integer"):
        epsilon_lower_bound(0, 1.5, 10, 10)
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\)"):
        epsilon_lower_bound(0, 0, 10, 10, alpha=1.0)


# ------------------------------------------------------------------- black-box mechanism
def _laplace(scale):
    return lambda x, rng, size: x + rng.laplace(0.0, scale, size)


def test_audit_mechanism_flags_a_laplace_mechanism_with_half_the_noise(rng_seed):
    """Claimed ε = 1 with scale 1/2 (true ε = 2): flagged at confidence 1 − 1e-9.

    With 20,000 samples the certified bound is about 1.8 (dplib.testing.assert_dp's power table:
    a factor-2 error at ε = 1 is caught 200/200 from 1,000 samples).
    """
    audit = audit_mechanism(_laplace(0.5), 0.0, 1.0, 1.0, n_samples=20_000,
                            confidence=1 - 1e-9, vectorized=True, rng=rng_seed)
    assert isinstance(audit, MechanismAudit)
    assert audit.flagged and audit.verdict == "flag"
    assert 1.0 < audit.epsilon_lower_bound <= 2.0  # valid: the true ε is 2
    assert audit.details.failure_prob == pytest.approx(1e-9)


def test_audit_mechanism_passes_the_correct_laplace_mechanism(rng_seed):
    """Scale 1 for ε = 1: flagged with probability at most 1 − confidence = 1e-9."""
    audit = audit_mechanism(_laplace(1.0), 0.0, 1.0, 1.0, n_samples=20_000,
                            confidence=1 - 1e-9, vectorized=True, rng=rng_seed)
    assert not audit.flagged and audit.verdict == "pass"
    assert 0.0 <= audit.epsilon_lower_bound <= 1.0


def test_audit_mechanism_calls_a_scalar_mechanism_and_refuses_bad_arguments():
    audit = audit_mechanism(lambda x, rng: x + rng.laplace(0.0, 1.0), 0.0, 1.0, 1.0,
                            n_samples=500, rng=0)
    assert audit.details.n_samples == 500 and audit.confidence == 0.95
    with pytest.raises(ValueError, match="claimed_epsilon must be a finite number > 0"):
        audit_mechanism(_laplace(1.0), 0.0, 1.0, 0.0, vectorized=True)
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        audit_mechanism(_laplace(1.0), 0.0, 1.0, 1.0, confidence=1.0, vectorized=True)


# ------------------------------------------------------------------------ one-run audit
def _p_value_loop(m, r, v, eps, delta):
    """[SNJ23]'s reference p-value, written as its loop (an independent implementation)."""
    q = 1 / (1 + math.exp(-eps))
    beta = stats.binom.sf(v - 1, r, q)
    alpha, total = 0.0, 0.0
    for i in range(1, v + 1):
        total += stats.binom.pmf(v - i, r, q)
        alpha = max(alpha, total / i)
    return min(beta + alpha * delta * 2 * m, 1.0)


@pytest.mark.parametrize(
    ("m", "r", "v", "eps", "delta"),
    [(1000, 100, 100, 0.0, 0.0), (1000, 100, 80, 1.0, 0.0), (1000, 100, 80, 1.0, 1e-5),
     (500, 60, 45, 0.5, 1e-3), (100, 100, 0, 2.0, 1e-5), (5000, 200, 190, 3.0, 1e-6)],
)
def test_one_run_p_value_matches_the_reference_loop(m, r, v, eps, delta):
    assert one_run_p_value(m, r, v, eps, delta) == pytest.approx(_p_value_loop(m, r, v, eps, delta), rel=1e-10, abs=1e-300)


def test_one_run_bound_is_the_boundary_of_the_p_value():
    for m, r, v, delta in [(1000, 100, 100, 0.0), (1000, 100, 90, 1e-5), (500, 50, 40, 0.0)]:
        eps = one_run_epsilon_lower_bound(m, r, v, delta=delta)
        assert eps > 0
        assert one_run_p_value(m, r, v, eps, delta) < 0.05 <= one_run_p_value(m, r, v, eps + 1e-6, delta)
    # all 100 guesses right: q^100 = 0.05, ε = ln(q / (1 - q))
    q = 0.05 ** (1 / 100)
    assert one_run_epsilon_lower_bound(1000, 100, 100) == pytest.approx(math.log(q / (1 - q)), abs=1e-6)
    assert one_run_epsilon_lower_bound(1000, 100, 50) == 0.0  # no better than chance
    with pytest.raises(ValueError, match="need 0 <= v <= r <= m"):
        one_run_epsilon_lower_bound(10, 20, 5)


def test_one_run_audit_of_randomized_response_is_valid_and_tight(rng_seed):
    """Canary scores from ε = 1 randomized response of S, the extremal case of [SNJ23] Thm 3.

    At confidence 1 − 1e-9 (δ = 0) the bound exceeds 1 with probability at most 1e-9; with
    m = 100,000 guesses it is above 0.9 unless a > 6-sigma binomial deviation occurs.
    """
    rng = np.random.default_rng(rng_seed)
    m = 100_000
    included = canary_inclusion(m, rng=rng)
    keep = rng.random(m) < math.e / (1 + math.e)
    scores = np.where(keep, included, ~included).astype(float)
    audit = audit_one_run(scores, included, k_pos=m // 2, k_neg=m // 2, confidence=1 - 1e-9)
    assert isinstance(audit, OneRunAudit) and audit.guesses == m
    assert 0.9 < audit.epsilon_lower_bound <= 1.0


def test_canary_inclusion_is_a_fair_coin(rng_seed):
    assert_frequencies(canary_inclusion(100_000, rng=rng_seed), {True: 0.5, False: 0.5})


def test_one_run_guesses():
    guesses = one_run_guesses([0.5, 3.0, -1.0, 2.0, 0.0], k_pos=2, k_neg=1)
    assert guesses.tolist() == [0, 1, -1, 1, 0]
    assert one_run_guesses([1.0, 2.0], 0, 0).tolist() == [0, 0]
    with pytest.raises(ValueError, match="at most the number of canaries"):
        one_run_guesses([1.0, 2.0], 2, 1)


def test_random_canaries():
    X, y = random_canaries(50, 8, ["x", "y", "z"], rng=0)
    assert X.shape == (50, 8) and X.min() >= 0 and X.max() <= 1
    assert set(y) <= {"x", "y", "z"}
    with pytest.raises(ValueError, match="at least 2 labels"):
        random_canaries(5, 2, [1])


# ------------------------------------------------------- auditing DP-SGD with one run
@pytest.fixture(scope="module")
def digits_train():
    datasets = pytest.importorskip("sklearn.datasets")
    model_selection = pytest.importorskip("sklearn.model_selection")
    X, y = datasets.load_digits(return_X_y=True)
    X_train, _, y_train, _ = model_selection.train_test_split(X / 16, y, test_size=0.25, random_state=0)
    return X_train, y_train


def test_one_run_audit_of_dpsgd_private_versus_non_private(digits_train):
    """[SNJ23] on DPSGDClassifier: 500 random-label canaries, 50 + 50 guesses, 95% confidence.

    Same trainer (MLP with 128 tanh units, defaults otherwise), once with σ calibrated to
    ε = 1 and once with σ = 0. Fixed seeds; measured bounds: 0.0 (56/100 guesses right)
    private, 2.17 (95/100) non-private. The private bound must stay below the accountant's ε
    (a correct DP-SGD exceeds it with probability at most 5% by [SNJ23] Theorem 3); the
    non-private one is over twice as high: the audit proves that training is not 1-DP.
    """
    X, y = digits_train
    canary_X, canary_y = random_canaries(500, X.shape[1], range(10), rng=0)
    results = {}
    for name, sigma in (("private", None), ("non-private", 0.0)):
        clf = DPSGDClassifier(1.0, 1e-5, hidden_layer_sizes=(128,), classes=range(10),
                              noise_multiplier=sigma, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # σ = 0 warns, as it should
            audit = audit_training_one_run(clf, X, y, canary_X, canary_y, k_pos=50, k_neg=50,
                                           delta=1e-5, confidence=0.95, rng=100)
        results[name] = (audit, clf.epsilon_spent_)
    (private, spent), (non_private, infinite) = results["private"], results["non-private"]
    assert spent == pytest.approx(1.0, rel=1e-2) and infinite == math.inf
    assert private.guesses == non_private.guesses == 100
    assert private.epsilon_lower_bound < spent
    assert non_private.correct >= 90
    assert non_private.epsilon_lower_bound > 2.0
    assert non_private.epsilon_lower_bound > private.epsilon_lower_bound + 1.5
    # the loss-threshold attack's AUC on the canaries tells the same story
    auc_private = auc(*roc_curve(private.included, private.scores)[:2])
    auc_non_private = auc(*roc_curve(non_private.included, non_private.scores)[:2])
    assert auc_non_private > 0.9 and auc_private < 0.65  # measured: 0.98 and 0.57


def test_audit_training_one_run_validates_before_training():
    clf = DPSGDClassifier(1.0, 1e-5)
    with pytest.raises(ValueError, match="at most the number of canaries"):
        audit_training_one_run(clf, np.zeros((10, 3)), np.zeros(10), np.zeros((4, 3)), np.zeros(4),
                               k_pos=3, k_neg=3)
    with pytest.raises(ValueError, match="same number of columns"):
        audit_training_one_run(clf, np.zeros((10, 3)), np.zeros(10), np.zeros((4, 2)), np.zeros(4),
                               k_pos=1, k_neg=1)
    assert not hasattr(clf, "coefs_")
