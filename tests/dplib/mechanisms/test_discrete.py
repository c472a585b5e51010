"""Tests of dplib.mechanisms.discrete: the discrete Laplace and discrete Gaussian.

Statistical assertions have a stated false-failure probability of at most ALPHA = 1e-9 each;
the seeds are fixed (``SEED``) so the suite is deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dplib.mechanisms import discrete_gaussian as discrete_gaussian_module
from dplib.mechanisms.discrete import (
    discrete_gaussian_delta,
    discrete_gaussian_mechanism,
    discrete_gaussian_pmf,
    discrete_gaussian_sigma,
    discrete_laplace_mechanism,
    discrete_laplace_pmf,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

SEED = 20260
ALPHA = 1e-9  # false-failure probability allowed per statistical assertion


# --------------------------------------------------------------------------- helpers


def laplace_weights(x: np.ndarray, scale: float) -> np.ndarray:
    return np.exp(-np.abs(x) / scale)


def gaussian_weights(x: np.ndarray, sigma: float) -> np.ndarray:
    return np.exp(-(x.astype(float) ** 2) / (2 * sigma * sigma))


def exact_pmf(weights, scale: float, half_width: int) -> tuple[np.ndarray, np.ndarray]:
    """Support [-W, W] and the pmf there, normalised by summing the weights over [-W, W].

    W is chosen so that the mass outside is below 1e-300 (it underflows)."""
    x = np.arange(-half_width, half_width + 1)
    w = weights(x, scale)
    return x, w / w.sum()


def assert_pmf_matches(
    samples: np.ndarray, support: np.ndarray, pmf: np.ndarray, alpha: float = ALPHA
) -> None:
    """Cell-by-cell binomial test of the empirical pmf, Bonferroni over cells and both tails.

    Cells: each support value with probability >= 1e-12 and one cell for everything else. The
    count of cell i is Binomial(n, p_i); it must lie in [ppf(a), isf(a)] with
    a = alpha / (2 * cells), so P(any count outside) <= alpha (union bound)."""
    n = samples.size
    keep = pmf >= 1e-12
    vals, probs = support[keep], pmf[keep]
    counts = (
        np.array([np.count_nonzero(samples == v) for v in vals])
        if vals.size < 50
        else _counts(samples, vals)
    )
    rest_count = n - counts.sum()
    rest_prob = float(pmf[~keep].sum())  # summed directly: accurate even when tiny
    all_counts = np.append(counts, rest_count)
    all_probs = np.append(probs, rest_prob)
    a = alpha / (2 * all_counts.size)
    lo = stats.binom.ppf(a, n, all_probs)
    hi = stats.binom.isf(a, n, all_probs)
    bad = (all_counts < lo) | (all_counts > hi)
    assert not bad.any(), (
        f"cells {np.append(vals, np.nan)[bad]} counts {all_counts[bad]} outside [{lo[bad]}, {hi[bad]}]"
    )


def _counts(samples: np.ndarray, vals: np.ndarray) -> np.ndarray:
    uniq, cnt = np.unique(samples, return_counts=True)
    lookup = dict(zip(uniq.tolist(), cnt.tolist(), strict=True))
    return np.array([lookup.get(int(v), 0) for v in vals])


def bernstein_halfwidth(n: int, variance: float, radius: float, alpha: float) -> float:
    """t with 2 exp(-n t² / (2 (variance + radius t / 3))) = alpha (Bernstein's inequality).

    Valid for the mean of n i.i.d. variables with |Y - E Y| <= radius and Var Y <= variance."""
    ell = math.log(2.0 / alpha)
    lin = radius * ell / (3.0 * n)
    return lin + math.sqrt(lin * lin + 2.0 * variance * ell / n)


def analytic_gaussian_sigma(sens: float, eps: float, delta: float) -> float:
    """Balle & Wang (2018), Theorem 8: the continuous Gaussian is (eps, delta)-DP iff
    Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D) <= delta; solved for s here."""

    def excess(s: float) -> float:
        return (
            stats.norm.cdf(sens / (2 * s) - eps * s / sens)
            - math.exp(eps) * stats.norm.cdf(-sens / (2 * s) - eps * s / sens)
            - delta
        )

    return optimize.brentq(excess, 1e-3, 1e7, xtol=1e-14, rtol=1e-15)


def hockey_stick(sigma: float, sens: int, eps: float) -> float:
    """sum_z max(0, P[Y = z] - e^eps P[Y = z - sens]) by brute force over a wide lattice."""
    half = int(60 * sigma) + 10 * sens + 50
    z = np.arange(-half, half + 1)
    w = gaussian_weights(z, sigma)
    total = w.sum()
    shifted = gaussian_weights(z - sens, sigma)
    return float(np.maximum(0.0, w / total - math.exp(eps) * shifted / total).sum())


# --------------------------------------------------------------------------- exact pmfs


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5, 40.0])
def test_discrete_laplace_pmf_is_normalised_closed_form(scale):
    x, p = exact_pmf(laplace_weights, scale, int(800 * scale) + 10)
    np.testing.assert_allclose(discrete_laplace_pmf(x, scale), p, rtol=1e-12, atol=1e-300)
    assert discrete_laplace_pmf(x, scale).sum() == pytest.approx(1.0, abs=1e-12)
    assert isinstance(discrete_laplace_pmf(3, scale), float)


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0, 10.0])
def test_discrete_laplace_variance_formula(scale):
    # Var = 2 q / (1 - q)² with q = exp(-1/scale) (Inusah & Kozubowski 2006) against the
    # second moment of the pmf summed over a wide range.
    q = math.exp(-1.0 / scale)
    x, p = exact_pmf(laplace_weights, scale, int(800 * scale) + 10)
    assert (p * x * x).sum() == pytest.approx(2 * q / (1 - q) ** 2, rel=1e-12)


@pytest.mark.parametrize(("sens", "eps"), [(1, 0.1), (1, 1.0), (3, 0.7), (10, 2.0)])
def test_discrete_laplace_ratio_is_exp_epsilon(sens, eps):
    # epsilon-DP: P[x] / P[x + Delta] <= e^eps for every x, with equality for x >= 0.
    scale = sens / eps
    x = np.arange(-200, 201)
    ratio = discrete_laplace_pmf(x, scale) / discrete_laplace_pmf(x + sens, scale)
    assert np.all(ratio <= math.exp(eps) * (1 + 1e-12))
    np.testing.assert_allclose(ratio[x >= 0], math.exp(eps), rtol=1e-12)
    # ... and the worst case is attained, so a smaller noise scale would not be eps-DP.
    assert ratio.max() == pytest.approx(math.exp(eps), rel=1e-12)


@pytest.mark.parametrize("sigma", [0.2, 0.7, 1.0, 1.5, 3.0, 12.5])
def test_discrete_gaussian_pmf_two_normalisers_agree(sigma):
    # The library normalises by Poisson summation for sigma >= 1 and by direct summation below;
    # the test normalises by direct summation over a wide range: independent methods.
    x, p = exact_pmf(gaussian_weights, sigma, int(60 * sigma) + 10)
    np.testing.assert_allclose(discrete_gaussian_pmf(x, sigma), p, rtol=1e-13, atol=1e-300)


def test_discrete_gaussian_variance_below_sigma_squared():
    # CKS20: Var[N_Z(0, sigma²)] < sigma²; the gap is O(sigma² e^(-2 pi² sigma²)), so it is
    # visible in double precision only for sigma up to about 1.
    for sigma in [0.3, 0.5, 1.0]:
        x, p = exact_pmf(gaussian_weights, sigma, int(60 * sigma) + 10)
        assert (p * x * x).sum() < sigma**2 * (1 - 1e-9)
    x, p = exact_pmf(gaussian_weights, 5.0, 310)
    assert (p * x * x).sum() == pytest.approx(25.0, rel=1e-12)


# --------------------------------------------------------------------------- samplers


@pytest.mark.parametrize(("scale", "offset"), [(0.4, 0), (1.0, 1), (3.0, 2), (12.5, 3)])
def test_discrete_laplace_sampler_matches_pmf(scale, offset):
    draws = sample_discrete_laplace(scale, size=400_000, rng=SEED + offset)
    support, pmf = exact_pmf(laplace_weights, scale, int(800 * scale) + 10)
    assert_pmf_matches(draws, support, pmf)


@pytest.mark.parametrize(("sigma", "offset"), [(0.3, 0), (1.0, 1), (2.5, 2), (7.3, 3)])
def test_discrete_gaussian_sampler_matches_pmf(sigma, offset):
    draws = sample_discrete_gaussian(sigma, size=400_000, rng=SEED + 10 + offset)
    support, pmf = exact_pmf(gaussian_weights, sigma, int(60 * sigma) + 10)
    assert_pmf_matches(draws, support, pmf)


def test_discrete_gaussian_large_sigma_dkw():
    # 10**6 draws at sigma = 50 (vectorized batch rejection; well under a second). DKW
    # (Massart 1990): P(sup_x |F_n(x) - F(x)| > t) <= 2 exp(-2 n t²) = ALPHA.
    n, sigma = 1_000_000, 50.0
    draws = sample_discrete_gaussian(sigma, size=n, rng=SEED + 20)
    support, pmf = exact_pmf(gaussian_weights, sigma, int(60 * sigma) + 10)
    cdf = np.cumsum(pmf)
    empirical = np.searchsorted(np.sort(draws), support, side="right") / n
    t = math.sqrt(math.log(2.0 / ALPHA) / (2.0 * n))
    assert np.max(np.abs(empirical - cdf)) <= t
    # a continuous Gaussian rounded to integers is a different law, but too close to tell here;
    # the integer dtype and exactness of the draws is what matters:
    assert draws.dtype == np.int64


@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_discrete_laplace_mean_and_variance(scale):
    # Mean 0 and Var = 2q/(1-q)². Bernstein's inequality on the variables clipped at T, where T
    # makes P(any |X_i| > T) = n * 2 q^(T+1) / (1 + q) <= ALPHA / 2, and ALPHA / 4 for each of
    # the two Bernstein bounds: total false-failure probability <= ALPHA.
    n = 1_000_000
    q = math.exp(-1.0 / scale)
    variance = 2 * q / (1 - q) ** 2
    T = math.ceil(math.log(ALPHA / 2 * (1 + q) / (2 * n)) / math.log(q))
    x, p = exact_pmf(laplace_weights, scale, int(800 * scale) + 10)
    fourth = (p * x.astype(float) ** 4).sum()
    tail_x2 = (p * x * x)[np.abs(x) > T].sum()  # E[X²] - E[min(X², T²)] <= this
    draws = sample_discrete_laplace(scale, size=n, rng=SEED + 30 + int(scale))
    t_mean = bernstein_halfwidth(n, variance, T, ALPHA / 4)
    t_var = bernstein_halfwidth(n, fourth, T * T, ALPHA / 4)
    assert abs(draws.mean()) <= t_mean
    assert abs(np.mean(draws.astype(float) ** 2) - variance) <= t_var + tail_x2
    # the bounds are tight enough to matter: a few percent of the variance
    assert t_var < 0.05 * variance


def test_discrete_gaussian_mean_and_variance():
    # Same construction; the variance is the exact one of the pmf (slightly below sigma²).
    n, sigma = 1_000_000, 4.0
    x, p = exact_pmf(gaussian_weights, sigma, 400)
    variance = (p * x * x).sum()
    fourth = (p * x.astype(float) ** 4).sum()
    tails = np.cumsum(p[::-1])[::-1]  # P(X >= x)
    T = int(x[(x > 0) & (2 * n * tails <= ALPHA / 2)][0])  # n P(|X| >= T) <= ALPHA / 2
    tail_x2 = (p * x * x)[np.abs(x) > T].sum()
    draws = sample_discrete_gaussian(sigma, size=n, rng=SEED + 40)
    assert abs(draws.mean()) <= bernstein_halfwidth(n, variance, T, ALPHA / 4)
    t_var = bernstein_halfwidth(n, fourth, T * T, ALPHA / 4)
    assert abs(np.mean(draws.astype(float) ** 2) - variance) <= t_var + tail_x2


def test_sampler_shapes_and_scalars():
    assert isinstance(sample_discrete_laplace(2.0, rng=0), int)
    assert isinstance(sample_discrete_gaussian(2.0, rng=0), int)
    assert sample_discrete_laplace(2.0, size=(3, 4), rng=0).shape == (3, 4)
    out = sample_discrete_gaussian(2.0, size=(2, 0, 3), rng=0)
    assert out.shape == (2, 0, 3) and out.dtype == np.int64
    # tiny sigma: essentially always 0, and no 0/0 in the acceptance test
    assert np.all(sample_discrete_gaussian(1e-3, size=1000, rng=0) == 0)


# --------------------------------------------------------------------------- mechanisms


def test_discrete_laplace_mechanism_noise_law():
    # value + DLap(Delta / eps): noise scale 2 / 0.5 = 4
    value = np.full((400, 500), 7, dtype=np.int64)
    out = discrete_laplace_mechanism(value, 2, 0.5, rng=SEED + 50)
    assert out.shape == value.shape and out.dtype == np.int64
    support, pmf = exact_pmf(laplace_weights, 4.0, 3300)
    assert_pmf_matches((out - 7).ravel(), support, pmf)


def test_discrete_gaussian_mechanism_noise_law():
    sigma = discrete_gaussian_sigma(1, 1.0, 1e-5)
    value = np.arange(300_000) - 150_000
    out = discrete_gaussian_mechanism(value, 1, 1.0, 1e-5, rng=SEED + 60)
    assert out.dtype == np.int64
    support, pmf = exact_pmf(gaussian_weights, sigma, int(60 * sigma) + 10)
    assert_pmf_matches(out - value, support, pmf)


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_mechanisms_types_and_shapes(mechanism):
    def run(value, **kw):
        if mechanism == "laplace":
            return discrete_laplace_mechanism(value, 1, 1.0, **kw)
        return discrete_gaussian_mechanism(value, 1, 1.0, 1e-5, **kw)

    assert isinstance(run(5, rng=0), int)
    assert isinstance(run(np.int32(5), rng=0), int)
    assert isinstance(run(5.0, rng=0), int)  # integral float accepted
    assert isinstance(run(np.array(5), rng=0), int)  # 0-d array is a scalar
    out = run([[1, 2, 3], [4, 5, 6]], rng=0)
    assert out.shape == (2, 3) and out.dtype == np.int64
    out = run(np.array([1.0, -2.0]), rng=0)
    assert out.dtype == np.int64
    # integral-float sensitivity accepted
    if mechanism == "laplace":
        assert isinstance(discrete_laplace_mechanism(5, 2.0, 1.0, rng=0), int)
    else:
        assert isinstance(discrete_gaussian_mechanism(5, 2.0, 1.0, 1e-5, rng=0), int)


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_reproducibility(mechanism):
    def run(rng):
        if mechanism == "laplace":
            return discrete_laplace_mechanism(np.zeros(50, dtype=int), 1, 0.5, rng=rng)
        return discrete_gaussian_mechanism(np.zeros(50, dtype=int), 1, 0.5, 1e-6, rng=rng)

    np.testing.assert_array_equal(run(123), run(123))
    assert not np.array_equal(run(123), run(124))
    gen = np.random.default_rng(123)
    first, second = run(gen), run(gen)
    assert not np.array_equal(first, second)  # the generator's stream continues
    np.testing.assert_array_equal(first, run(np.random.default_rng(123)))


def test_sampler_reproducibility():
    np.testing.assert_array_equal(
        sample_discrete_gaussian(3.0, size=100, rng=7),
        sample_discrete_gaussian(3.0, size=100, rng=7),
    )
    np.testing.assert_array_equal(
        sample_discrete_laplace(3.0, size=100, rng=7), sample_discrete_laplace(3.0, size=100, rng=7)
    )


# --------------------------------------------------------------------------- calibration


def test_reference_sigma_delta1_eps1_delta1e5():
    # Balle & Wang (2018) analytic Gaussian for Delta = 1, eps = 1, delta = 1e-5: sigma ~ 3.73
    # (the figure of the course brief; computed here from their Theorem 8).
    continuous = analytic_gaussian_sigma(1, 1.0, 1e-5)
    assert continuous == pytest.approx(3.7306, abs=1e-4)
    discrete = discrete_gaussian_sigma(1, 1.0, 1e-5)
    # The discrete Gaussian needs 0.26 % MORE here (3.7405): the lattice point nearest the
    # threshold eps sigma² - 1/2 ~ 13.5 falls unfavourably. Pinned figure from CKS20 Thm 7,
    # checked independently by the brute-force hockey-stick sum below.
    assert discrete == pytest.approx(3.740485, abs=1e-6)
    assert abs(discrete / continuous - 1) < 0.003
    assert hockey_stick(discrete, 1, 1.0) == pytest.approx(1e-5, rel=1e-10)


@pytest.mark.parametrize(
    ("sens", "eps", "delta"), [(1, 0.01, 1e-5), (1, 0.1, 1e-6), (3, 0.5, 1e-8), (10, 2.0, 1e-10)]
)
def test_discrete_sigma_close_to_continuous(sens, eps, delta):
    # As sigma grows the lattice stops mattering (CKS20): the calibrations agree closely.
    discrete = discrete_gaussian_sigma(sens, eps, delta)
    continuous = analytic_gaussian_sigma(sens, eps, delta)
    assert abs(discrete / continuous - 1) < 1e-4
    if sens / eps > 50:
        assert abs(discrete / continuous - 1) < 1e-6


@pytest.mark.parametrize(
    ("sigma", "sens", "eps"),
    [(0.7, 1, 5.0), (2.0, 3, 0.5), (3.7, 1, 1.0), (12.0, 2, 0.3), (30.3, 10, 2.0)],
)
def test_delta_agrees_with_brute_force_hockey_stick(sigma, sens, eps):
    assert discrete_gaussian_delta(sigma, sens, eps) == pytest.approx(
        hockey_stick(sigma, sens, eps), rel=1e-10
    )


@pytest.mark.parametrize(
    ("sigma", "sens", "eps"),
    [
        (200.0, 1, 0.01),
        (2000.0, 1, 1e-3),
        (3e4, 1, 1e-5),
        (1500.0, 100, 0.05),
        (1200.0, 1500, 1e-3),
        (3e5, 1, 1e-8),
    ],
)
def test_delta_direct_sum_agrees_with_euler_maclaurin(sigma, sens, eps):
    # Two independent evaluations of CKS20 Theorem 7: the truncated lattice sum and the
    # Euler-Maclaurin formula the library switches to for large sigma and small eps/Delta.
    direct = discrete_gaussian_module.delta_direct(sigma, sens, eps)
    euler_maclaurin = discrete_gaussian_module.delta_euler_maclaurin(sigma, sens, eps)
    assert euler_maclaurin == pytest.approx(direct, rel=1e-11)


def test_tiny_epsilon_round_trip_uses_euler_maclaurin():
    sigma = discrete_gaussian_sigma(1, 1e-12, 1e-12)  # sigma ~ 2.76e11, far beyond direct summation
    assert discrete_gaussian_delta(sigma, 1, 1e-12) == pytest.approx(1e-12, rel=1e-9)
    # for eps -> 0, delta ~ TV(N(0, s²), N(1, s²)) ~ 1 / (sqrt(2 pi) s) e^(-(eps s)²/2) roughly;
    # the order of magnitude is the sanity check here
    assert 1e11 < sigma < 1e12


@pytest.mark.parametrize(
    ("sens", "eps", "delta"),
    [
        (1, 1.0, 1e-5),
        (1, 0.1, 1e-6),
        (2, 0.5, 1e-3),
        (1, 2.0, 1.15e-5),
        (1, 5.0, 1e-6),
        (5, 3.0, 1e-9),
        (1, 1.0, 0.19),
    ],
)
def test_sigma_delta_round_trip(sens, eps, delta):
    sigma = discrete_gaussian_sigma(sens, eps, delta)
    achieved = discrete_gaussian_delta(sigma, sens, eps)
    assert achieved <= delta
    assert achieved == pytest.approx(delta, rel=1e-9)
    # every larger sigma is private too (the curve is a sawtooth at large eps; see below)
    grid = np.linspace(sigma, 1.5 * sigma, 600)
    assert max(discrete_gaussian_delta(s, sens, eps) for s in grid) <= delta * (1 + 1e-12)


@pytest.mark.parametrize(("sens", "eps"), [(1, 0.1), (1, 0.5), (1, 1.0), (3, 0.5), (4, 1.0)])
def test_delta_decreasing_in_sigma_for_moderate_epsilon(sens, eps):
    sigmas = np.linspace(0.8 * sens, 40.0 * sens, 600)
    deltas = np.array([discrete_gaussian_delta(s, sens, eps) for s in sigmas])
    assert np.all(np.diff(deltas) <= 0)
    assert deltas[0] > 1e-2 and deltas[-1] < 1e-6


def test_delta_sawtooth_at_large_epsilon():
    # The discrete curve is NOT monotone: for Delta = 1, eps = 2 the lattice point y = 7 leaves
    # the sum at sigma = sqrt(3.75) = 1.9365 and delta then rises by about 2 %.
    assert discrete_gaussian_delta(1.958, 1, 2.0) > discrete_gaussian_delta(1.9366, 1, 2.0) * 1.01
    # ... which is why discrete_gaussian_sigma returns the last crossing:
    sigma = discrete_gaussian_sigma(1, 2.0, 1.15e-5)
    assert sigma > 1.96


def test_sigma_monotone_in_parameters():
    assert discrete_gaussian_sigma(1, 1.0, 1e-6) > discrete_gaussian_sigma(1, 1.0, 1e-5)
    assert discrete_gaussian_sigma(1, 0.5, 1e-5) > discrete_gaussian_sigma(1, 1.0, 1e-5)
    assert discrete_gaussian_sigma(2, 1.0, 1e-5) > discrete_gaussian_sigma(1, 1.0, 1e-5)


# --------------------------------------------------------------------------- bad input

BAD_EPSILON = [
    (0, ValueError),
    (-1.0, ValueError),
    (math.inf, ValueError),
    (math.nan, ValueError),
    ("1", TypeError),
]
BAD_DELTA = [0.0, 1.0, -0.1, 1.5, math.nan]
BAD_SENS = [
    (0.5, ValueError, "integer >= 1"),
    (0, ValueError, "integer >= 1"),
    (-1, ValueError, "sensitivity must be"),
    (math.nan, ValueError, "sensitivity must be"),
    (math.inf, ValueError, "sensitivity must be"),
    ("1", TypeError, "sensitivity must be a real number"),
    (True, TypeError, "sensitivity must be a real number"),
]
BAD_VALUE = [
    (2.5, ValueError, "integers only"),
    ([1, 2.5], ValueError, "integers only"),
    ([1.0, math.nan], ValueError, "NaN"),
    (math.inf, ValueError, "NaN or infinite"),
    (True, TypeError, "integer or an array of integers"),
    (np.array([True, False]), TypeError, "integer or an array of integers"),
    ("3", TypeError, "integer or an array of integers"),
    ([], ValueError, "must not be empty"),
    (2.0**60, ValueError, "2\\*\\*53"),
]
BAD_RNG = [
    (True, TypeError),
    ("seed", TypeError),
    (-1, ValueError),
    (np.random.RandomState(0), TypeError),
]


def _laplace(value=3, sens=1, eps=1.0, rng=0):
    return discrete_laplace_mechanism(value, sens, eps, rng=rng)


def _gauss(value=3, sens=1, eps=1.0, delta=1e-5, rng=0):
    return discrete_gaussian_mechanism(value, sens, eps, delta, rng=rng)


@pytest.mark.parametrize("func", [_laplace, _gauss])
@pytest.mark.parametrize(("eps", "error"), BAD_EPSILON)
def test_bad_epsilon(func, eps, error):
    with pytest.raises(error, match="epsilon must be"):
        func(eps=eps)


@pytest.mark.parametrize("delta", BAD_DELTA)
def test_bad_delta(delta):
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        _gauss(delta=delta)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        discrete_gaussian_sigma(1, 1.0, delta)


@pytest.mark.parametrize("func", [_laplace, _gauss])
@pytest.mark.parametrize(("sens", "error", "match"), BAD_SENS)
def test_bad_sensitivity(func, sens, error, match):
    with pytest.raises(error, match=match):
        func(sens=sens)


@pytest.mark.parametrize("func", [_laplace, _gauss])
@pytest.mark.parametrize(("value", "error", "match"), BAD_VALUE)
def test_bad_value(func, value, error, match):
    with pytest.raises(error, match=match):
        func(value=value)


@pytest.mark.parametrize("func", [_laplace, _gauss])
@pytest.mark.parametrize(("rng", "error"), BAD_RNG)
def test_bad_rng(func, rng, error):
    with pytest.raises(error, match="rng"):
        func(rng=rng)


@pytest.mark.parametrize("func", [_laplace, _gauss])
def test_refusal_draws_no_randomness(func):
    gen = np.random.default_rng(5)
    before = gen.bit_generator.state
    with pytest.raises(ValueError):
        func(value=2.5, rng=gen)
    with pytest.raises(ValueError):
        func(eps=-1.0, rng=gen)
    assert gen.bit_generator.state == before


@pytest.mark.parametrize("sampler", [sample_discrete_laplace, sample_discrete_gaussian])
@pytest.mark.parametrize("scale", [0, -1.0, math.inf, math.nan, 2.0**41])
def test_bad_scale(sampler, scale):
    with pytest.raises(ValueError, match="must be a finite number"):
        sampler(scale, rng=0)


@pytest.mark.parametrize("size", [-1, 2.5, (2, -3), "3"])
def test_bad_size(size):
    with pytest.raises(TypeError, match="size must be"):
        sample_discrete_laplace(1.0, size=size, rng=0)
    with pytest.raises(TypeError, match="size must be"):
        sample_discrete_gaussian(1.0, size=size, rng=0)


def test_bad_input_to_delta_and_pmfs():
    with pytest.raises(ValueError, match="sigma must be a finite number"):
        discrete_gaussian_delta(0.0, 1, 1.0)
    with pytest.raises(ValueError, match="integer >= 1"):
        discrete_gaussian_delta(2.0, 1.5, 1.0)
    with pytest.raises(ValueError, match="epsilon must be"):
        discrete_gaussian_delta(2.0, 1, math.nan)
    with pytest.raises(ValueError, match="integers only"):
        discrete_laplace_pmf(0.5, 1.0)
    with pytest.raises(ValueError, match="scale must be a finite number"):
        discrete_laplace_pmf(1, -1.0)
    with pytest.raises(ValueError, match="integers only"):
        discrete_gaussian_pmf([0, 0.5], 1.0)
    with pytest.raises(ValueError, match="epsilon or delta"):
        discrete_gaussian_sigma(1, 1e-13, 1e-13)  # would need sigma > 2**40


@pytest.mark.parametrize(("rng", "error"), BAD_RNG)
def test_bad_rng_samplers(rng, error):
    with pytest.raises(error, match="rng"):
        sample_discrete_laplace(1.0, size=3, rng=rng)
    with pytest.raises(error, match="rng"):
        sample_discrete_gaussian(1.0, size=3, rng=rng)


def test_sigma_is_solved_once_per_parameters(monkeypatch):
    # The search costs milliseconds (bench/bench_mechanisms.py: 2.6 ms on 27 Nov 2026, as much as
    # ~45,000 draws), so a mechanism called again with the same (Delta, eps, delta) must not repeat it;
    # a cache keyed wrongly would hand one parameter set another's sigma.
    from dplib.mechanisms import discrete_gaussian as dg

    dg.calibrated_sigma.cache_clear()
    solves = []
    real_brent = dg._brent
    monkeypatch.setattr(dg, "_brent", lambda *a: solves.append(a) or real_brent(*a))
    first = discrete_gaussian_sigma(3, 0.7, 1e-7)
    searched = len(solves)
    assert searched >= 1
    for _ in range(5):
        discrete_gaussian_mechanism(np.arange(4), 3, 0.7, 1e-7, rng=1)
        assert discrete_gaussian_sigma(3.0, np.float64(0.7), 1e-7) == first
    assert len(solves) == searched
    assert discrete_gaussian_sigma(3, 0.7, 2e-7) < first  # another delta: solved afresh
    assert discrete_gaussian_sigma(2, 0.7, 1e-7) < first
    assert len(solves) > searched
    with pytest.raises(ValueError, match="epsilon"):  # refusals are checked before the cache
        discrete_gaussian_sigma(3, -0.7, 1e-7)


def test_sampler_sigma_beyond_2_26_is_refused_before_any_draw():
    # The exact sampler's int64 path (CKS20 Algorithm 3 on a short dyadic sigma_hat >= sigma,
    # dplib.mechanisms._exact._gaussian_plan) is proved for sigma <= 2**26: beyond it, the
    # sampler and the mechanism refuse with the bound in the message, before any draw.
    assert sample_discrete_gaussian(2.0**26, size=3, rng=0).shape == (3,)  # the bound is allowed
    gen = np.random.default_rng(5)
    before = gen.bit_generator.state
    for sigma in [math.nextafter(2.0**26, math.inf), 2.0**30, 2.0**40]:
        with pytest.raises(ValueError, match=r"sigma must be at most 2\*\*26 = 67108864"):
            sample_discrete_gaussian(sigma, size=3, rng=gen)
    # sensitivity 2**22 at (0.1, 1e-5) calibrates sigma ~ 1.3e8 > 2**26
    with pytest.raises(
        ValueError, match=r"calibrated .* at most 2\*\*26 .* raise epsilon or delta"
    ):
        discrete_gaussian_mechanism(3, 2**22, 0.1, 1e-5, rng=gen)
    assert gen.bit_generator.state == before
