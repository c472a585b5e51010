"""Tests of dplib.mechanisms.snapping: Mironov's (2012) snapping mechanism.

Statistical assertions have a stated false-failure probability of at most ALPHA = 1e-9 each;
the seeds are fixed (``SEED``) so the suite is deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dplib.mechanisms import snapping as snapping_module
from dplib.mechanisms.snapping import sample_uniform_double, snapping_mechanism, snapping_scale

SEED = 80120
ALPHA = 1e-9  # false-failure probability allowed per statistical assertion


def binomial_interval(n: int, p: np.ndarray | float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] with P(Binomial(n, p) < lo) + P(Binomial(n, p) > hi) <= alpha."""
    return stats.binom.ppf(alpha / 2, n, p), stats.binom.isf(alpha / 2, n, p)


def assert_counts_match(
    counts: np.ndarray, probs: np.ndarray, n: int, alpha: float = ALPHA
) -> None:
    """Each count is Binomial(n, p_i); Bonferroni over the cells (both tails): P(fail) <= alpha."""
    lo, hi = binomial_interval(n, probs, alpha / len(counts))
    bad = (counts < lo) | (counts > hi)
    assert not bad.any(), (
        f"cells {np.flatnonzero(bad)}: counts {counts[bad]} outside [{lo[bad]}, {hi[bad]}]"
    )


def laplace_cdf(x: np.ndarray, scale: float) -> np.ndarray:
    return np.where(
        x < 0, 0.5 * np.exp(np.minimum(x, 0) / scale), 1 - 0.5 * np.exp(-np.maximum(x, 0) / scale)
    )


def ideal_snapped_pmf(
    value: float, lam: float, big_lambda: float, bound: float
) -> tuple[np.ndarray, np.ndarray]:
    """Law of clamp_B(round_Lambda(clamp_B(value) + Lap(lam))) in exact arithmetic, B a multiple
    of Lambda: P(k Lambda) = F(k Lambda + Lambda/2 - c) - F(k Lambda - Lambda/2 - c) inside, and
    the tails beyond +-B piled on +-B."""
    c = min(max(value, -bound), bound)
    k = np.arange(-round(bound / big_lambda), round(bound / big_lambda) + 1)
    grid = k * big_lambda
    upper = laplace_cdf(grid + big_lambda / 2 - c, lam)
    lower = laplace_cdf(grid - big_lambda / 2 - c, lam)
    upper[-1], lower[0] = 1.0, 0.0
    return grid, upper - lower


# --------------------------------------------------------------------------- calibration


def test_scale_reference_value():
    # Mironov (2012), Section 5.2: (1/lambda + 2**-49 B/lambda)-DP. With Delta = 1, eps = 1 and
    # B = 16: lambda = 1 + 2**-45 exactly, so Lambda = 2 (not 1).
    assert snapping_scale(1.0, 1.0, 16.0) == 1.0 + 2.0**-45


@pytest.mark.parametrize("seed", range(5))
def test_scale_meets_epsilon(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        sens = float(rng.uniform(0.01, 10))
        eps = float(rng.uniform(0.01, 5))
        lam_min = (sens + 2.0**-49 * 2 * sens) / eps  # so that bound = 2 sens is allowed
        bound = float(rng.uniform(max(lam_min, sens / 2) * 1.01, lam_min * 1e6))
        lam = snapping_scale(sens, eps, bound)
        assert (sens + 2.0**-49 * bound) / lam <= eps  # Mironov's epsilon, in units of Delta
        assert lam == pytest.approx((sens + 2.0**-49 * bound) / eps, rel=1e-15)
        assert lam < bound < 2.0**46 * lam


# --------------------------------------------------------------------------- outputs


@pytest.mark.parametrize(
    ("value", "bound"), [(0.7, 16.0), (3.3, 15.3), (-40.0, 9.5), (2.0, 1024.0)]
)
def test_outputs_are_multiples_of_lambda_within_bound(value, bound):
    lam = snapping_scale(1.0, 1.0, bound)
    big_lambda = 2.0 ** math.ceil(math.log2(lam))  # independent of the library's frexp route
    assert lam <= big_lambda < 2 * lam
    out = snapping_mechanism(np.full(20_000, value), 1.0, 1.0, bound, rng=SEED)
    assert np.all((out >= -bound) & (out <= bound))
    on_grid = np.floor(out / big_lambda) * big_lambda == out
    assert np.all(on_grid | (np.abs(out) == bound))
    assert not np.any(np.signbit(out) & (out == 0))  # no negative zeros


def test_lambda_below_one_gives_fine_grid():
    # eps = 8, Delta = 1: lambda = 0.125 + tiny, Lambda = 0.25
    out = snapping_mechanism(np.full(10_000, 0.3), 1.0, 8.0, 4.0, rng=SEED + 1)
    np.testing.assert_array_equal(np.floor(out * 4) / 4, out)
    # the grid is really 1/4, not 1/2: odd multiples of 1/4 have probability ~ 1/2 each draw, so
    # missing them all in 10000 draws has probability ~ 2**-10000
    assert np.any(out * 4 % 2 == 1)


@pytest.mark.parametrize(("value", "offset"), [(0.7, 0), (2.0, 1), (15.2, 2), (-30.0, 3)])
def test_output_law_matches_rounded_laplace(value, offset):
    # Against the exact law of the ideal (infinite-precision) snapping mechanism: the float
    # effects are of relative size 2**-45 here, far below what 400000 draws can see.
    bound, n = 16.0, 400_000
    lam = snapping_scale(1.0, 1.0, bound)
    grid, pmf = ideal_snapped_pmf(value, lam, 2.0, bound)
    out = snapping_mechanism(np.full(n, value), 1.0, 1.0, bound, rng=SEED + 10 + offset)
    counts = np.array([np.count_nonzero(out == g) for g in grid])
    assert counts.sum() == n
    keep = pmf > 1e-15
    assert np.all(counts[~keep] == 0)
    assert_counts_match(counts[keep], pmf[keep], n)


@pytest.mark.parametrize(("value", "offset"), [(2.0, 0), (-5.0, 1), (0.3, 2)])
def test_mean_close_to_value_hoeffding(value, offset):
    # Outputs lie in [-B, B]: Hoeffding, P(|mean - E| >= t) <= 2 exp(-2 n t² / (2B)²) = ALPHA.
    # E differs from value by the rounding and clamping bias, computed exactly from the ideal
    # law (for a value on the grid only the clamp contributes; off the grid, rounding adds a
    # few hundredths of Lambda = 2).
    bound, n = 16.0, 1_000_000
    lam = snapping_scale(1.0, 1.0, bound)
    grid, pmf = ideal_snapped_pmf(value, lam, 2.0, bound)
    bias = float(grid @ pmf) - value
    t = 2 * bound * math.sqrt(math.log(2 / ALPHA) / (2 * n))
    out = snapping_mechanism(np.full(n, value), 1.0, 1.0, bound, rng=SEED + 20 + offset)
    assert abs(out.mean() - value) <= t + abs(bias)
    assert abs(bias) < 0.05 * 2.0
    if value % 2.0 == 0.0:  # on the grid only the clamping bias ~ e^-(B - |value|) remains
        assert abs(bias) < 1e-5


def test_scalar_and_shapes():
    assert isinstance(snapping_mechanism(1.0, 1.0, 1.0, 16.0, rng=0), float)
    assert isinstance(snapping_mechanism(np.float32(1.0), 1.0, 1.0, 16.0, rng=0), float)
    assert isinstance(snapping_mechanism(3, 1.0, 1.0, 16.0, rng=0), float)
    out = snapping_mechanism([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], 1.0, 1.0, 16.0, rng=0)
    assert out.shape == (3, 2) and out.dtype == np.float64


def test_reproducibility():
    values = np.linspace(-3, 3, 100)
    np.testing.assert_array_equal(
        snapping_mechanism(values, 1.0, 0.5, 50.0, rng=9),
        snapping_mechanism(values, 1.0, 0.5, 50.0, rng=9),
    )
    gen = np.random.default_rng(9)
    first = snapping_mechanism(values, 1.0, 0.5, 50.0, rng=gen)
    second = snapping_mechanism(values, 1.0, 0.5, 50.0, rng=gen)
    assert not np.array_equal(first, second)  # the stream continues
    np.testing.assert_array_equal(
        first, snapping_mechanism(values, 1.0, 0.5, 50.0, rng=np.random.default_rng(9))
    )


# --------------------------------------------------------------------------- uniform doubles


def test_uniform_double_binade_frequencies():
    # P(U < 2**-k) = 2**-k and P(U in [2**-k, 2**(1-k))) = 2**-k. Binomial bounds for each
    # of the 16 binade cells (the last one collects k >= 16), Bonferroni: P(fail) <= ALPHA.
    n = 1_000_000
    u = sample_uniform_double(n, rng=SEED + 30)
    assert np.all((u > 0) & (u < 1))
    _, exponent = np.frexp(u)  # u in [2**(e-1), 2**e): binade k = 1 - e
    k = np.minimum(1 - exponent, 16)
    counts = np.bincount(k, minlength=17)[1:]
    probs = np.append(2.0 ** -np.arange(1, 16), 2.0**-15)
    assert_counts_match(counts, probs, n)
    lo, hi = binomial_interval(n, 0.5, ALPHA)
    assert lo <= np.count_nonzero(u < 0.5) <= hi
    lo, hi = binomial_interval(n, 0.25, ALPHA)
    assert lo <= np.count_nonzero(u < 0.25) <= hi


def test_uniform_double_uses_all_doubles():
    # Generator.random() only returns multiples of 2**-53. All doubles, weighted by their ulp,
    # are multiples of 2**-53 with probability sum_k 2**-k 2**-(k-1) = 2/3: in [1/2, 1) all
    # are, in [1/4, 1/2) half are, in [1/8, 1/4) a quarter are, ...
    n = 300_000
    u = sample_uniform_double(n, rng=SEED + 31)
    multiples = np.count_nonzero(np.floor(u * 2.0**53) == u * 2.0**53)
    lo, hi = binomial_interval(n, 2 / 3, ALPHA)
    assert lo <= multiples <= hi
    # and the lowest significand bit is a fair coin even far below 1/2
    small = u[u < 2.0**-3]
    _, exponent = np.frexp(small)
    odd = np.count_nonzero(np.ldexp(small, 53 - exponent) % 2 == 1)
    lo, hi = binomial_interval(small.size, 0.5, ALPHA)
    assert lo <= odd <= hi


class _ScriptedGenerator:
    """Stands in for a Generator in _binade_index: returns prepared 53-bit words."""

    def __init__(self, batches):
        self.batches = [np.asarray(b, dtype=np.uint64) for b in batches]

    def integers(self, low, high, size, dtype):
        assert (low, high) == (0, 2**53)
        batch = self.batches.pop(0)
        assert batch.size == size
        return batch


def test_binade_index_reads_leading_zeros_across_words():
    # word 2**52 has no leading zero (j = 1); word 1 has 52 (j = 53); word 0 has 53 and a second
    # word 2**51 adds 1 more (j = 55): exponents below 2**-53 come out exactly.
    gen = _ScriptedGenerator([[2**52, 1, 0, 2**53 - 1], [2**51]])
    np.testing.assert_array_equal(snapping_module._binade_index(4, gen), [1, 53, 55, 1])
    assert gen.batches == []


def test_uniform_double_size_and_scalar():
    assert isinstance(sample_uniform_double(rng=0), float)
    assert sample_uniform_double((2, 3), rng=0).shape == (2, 3)
    with pytest.raises(TypeError, match="size must be"):
        sample_uniform_double(-1, rng=0)
    with pytest.raises(TypeError, match="rng must be"):
        sample_uniform_double(3, rng=True)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"bound": 0.0}, ValueError, "bound must be a finite number > 0"),
        ({"bound": -1.0}, ValueError, "bound must be a finite number > 0"),
        ({"bound": math.nan}, ValueError, "bound must be a finite number > 0"),
        ({"bound": math.inf}, ValueError, "bound must be a finite number > 0"),
        ({"bound": "16"}, TypeError, "bound must be a real number"),
        ({"bound": 1.0, "epsilon": 0.5}, ValueError, "bound must be > the noise scale"),
        ({"bound": 2.0**50}, ValueError, "bound must be < 2\\*\\*46 lambda"),
        ({"sensitivity": 40.0}, ValueError, "sensitivity must be <= 2 \\* bound"),
        ({"sensitivity": 0.0}, ValueError, "sensitivity must be a finite number > 0"),
        ({"sensitivity": -1.0}, ValueError, "sensitivity must be a finite number > 0"),
        ({"sensitivity": math.nan}, ValueError, "sensitivity must be a finite number > 0"),
        ({"sensitivity": True}, TypeError, "sensitivity must be a real number"),
        ({"epsilon": 0.0}, ValueError, "epsilon must be a finite number > 0"),
        ({"epsilon": -1.0}, ValueError, "epsilon must be a finite number > 0"),
        ({"epsilon": math.inf}, ValueError, "epsilon must be a finite number > 0"),
        ({"epsilon": math.nan}, ValueError, "epsilon must be a finite number > 0"),
        ({"value": math.nan}, ValueError, "NaN"),
        ({"value": [1.0, math.inf]}, ValueError, "NaN or infinite"),
        ({"value": "abc"}, TypeError, "value must be an array of numbers"),
        ({"value": [1.0, "a"]}, TypeError, "value must be an array of numbers"),
        ({"value": []}, ValueError, "value must not be empty"),
        ({"rng": True}, TypeError, "rng must be"),
        ({"rng": -3}, ValueError, "rng seed must be"),
        ({"rng": np.random.RandomState(0)}, TypeError, "rng must be"),
    ],
)
def test_bad_input(kwargs, error, match):
    args = {"value": 1.0, "sensitivity": 1.0, "epsilon": 1.0, "bound": 16.0, "rng": 0} | kwargs
    with pytest.raises(error, match=match):
        snapping_mechanism(args.pop("value"), **args)


def test_refusal_draws_no_randomness():
    gen = np.random.default_rng(3)
    before = gen.bit_generator.state
    with pytest.raises(ValueError):
        snapping_mechanism(math.nan, 1.0, 1.0, 16.0, rng=gen)
    with pytest.raises(ValueError):
        snapping_mechanism(1.0, 1.0, 1.0, -16.0, rng=gen)
    assert gen.bit_generator.state == before
