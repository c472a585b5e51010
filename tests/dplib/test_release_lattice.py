"""Every release in ``dplib.__all__`` is safe from the floating-point attack, by construction.

The attack (Mironov 2012, "On Significance of the Least Significant Bits for Differential
Privacy", CCS, Section 3): textbook Laplace noise added to a float answer leaves low-order bits
that depend on the answer, so some outputs on a dataset are *impossible* on its neighbour, an
infinite privacy loss. A release is immune when every output lies on a set fixed in advance
(integers, a power-of-two grid ``g Z``, ``k / c`` for public ``c``, a public list of candidates)
whatever the data: then no output of one neighbour is out of reach of the other.

The property test **discovers** the releases: every public callable whose signature takes a
privacy parameter (``epsilon`` or ``noise_multiplier``) and randomness (``rng`` or
``random_state``). Each must either appear in :data:`LATTICES`, with neighbouring inputs and its
data-independent output set, or be listed by name in :data:`TEXTBOOK_FOR_TEACHING` with the
reason. A release added later without either fails :func:`test_every_release_is_checked`.

The exact check (:func:`test_outputs_of_both_neighbours_lie_on_one_fixed_lattice`) draws outputs
on both neighbours and asserts that every one of them lies on the declared set; it fails on the
textbook samplers (:func:`test_the_lattice_check_catches_the_textbook_samplers`), for which the
distinguisher of :mod:`tests.test_query_privacy` (exact, sampler-independent) finds a large share
of outputs impossible on the neighbour. The black-box audits at the end check that the five
releases a review named keep their epsilon under the neighbouring relation their docstrings state
(Clopper-Pearson bounds, failure probability 1e-9 each, :func:`dplib.testing.assert_dp`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from float_attack import (  # tests/support
    impossible_if_true_answer_is_one,
    impossible_on_a_lattice_neighbour,
)
from releases import discovered_releases  # tests/support

import dplib
from dplib.mechanisms.gaussian import _discrete_plan as _gaussian_plan
from dplib.queries import aggregates as queries
from dplib.synthesis import mwem as synthetic
from dplib.synthesis.marginals import measure_marginals
from dplib.testing import assert_dp
from dplib.views.hierarchy import noisy_tree_counts

EPS = 1.0
N_DRAWS = 300  # outputs per neighbour in the lattice check

#: Releases that use floating-point noise on purpose, with the reason. Nothing else may.
TEXTBOOK_FOR_TEACHING = {
    "laplace_mechanism": "the textbook Laplace mechanism, taught in notebook 02 and attacked there; "
    "every count, sum, mean and histogram release uses the discrete Laplace instead",
    "noisy_gradient": "DP-SGD's Gaussian noise on float gradients (Abadi et al. 2016), as in Opacus "
    "and TF Privacy; a model's weights are not a lattice release. Its docstring states the "
    "floating-point caveat; secure_mode=True (Opacus's) narrows it without a proof",
    "DPSGDClassifier": "trains with noisy_gradient (float Gaussian noise, as Opacus does); the "
    "caveat is in its docstring and notebook 06, secure_mode=True as Opacus's",
}


# --------------------------------------------------------------------------- declared lattices


def _integers(y):
    return y == np.round(y)


def _grid(step):
    return lambda y: (y / step) == np.round(y / step)


def _among(values):
    allowed = np.asarray(values, dtype=float)
    return lambda y: np.isin(y, allowed)


def _flat(value) -> np.ndarray:
    return np.asarray(value, dtype=float).ravel()


def _bottom(value):
    """A release that may answer None (propose-test-release's bottom): None as 0.0."""
    return 0.0 if value is None else value


def _levels(release) -> np.ndarray:
    return np.concatenate([lv.ravel() for lv in release.levels])


def _privtree(counts, rng):
    """Each cell's estimate times its block's size: an integer k exactly when the estimate is
    fl(k / c), the set of doubles fixed by the (eps1-DP) partition and not by the counts."""
    est, blocks = dplib.privtree_histogram(counts, EPS, rng=rng)
    out = []
    for box in blocks:
        cells = math.prod(b - a for a, b in box)
        value = float(est[tuple(slice(a, b) for a, b in box)].flat[0])
        k = round(value * cells)
        out.append(float(k) if k / cells == value else 0.5)  # 0.5: off the lattice
    return np.array(out)


#: The sum's grid (private_sum's Notes): S = 1, g = 2**(floor(log2 min(1, 1/eps)) - 20).
_SUM_STEP = math.ldexp(1.0, queries.grid_exponent(1.0, EPS))
_MEAN_STEP = math.ldexp(1.0, queries.grid_exponent(0.5, EPS))
#: gaussian_mechanism's default grid for one value (sensitivity 1, (1, 1e-5)): public parameters.
_GAUSS_STEP = _gaussian_plan(1.0, EPS, 1e-5, 1)[0]

#: the float attack on smooth_median: replace-one neighbours, 9 replaced by 0.5 (median 3.5
#: against 3), lower 0 and upper 10: the grid step 2**(floor(log2 10) - 20) = 2**-17
_SMOOTH_D = [1.0, 2.0, 3.0, 3.5, 4.0, 6.0, 9.0]
_SMOOTH_NEIGHBOUR = [1.0, 2.0, 3.0, 3.5, 4.0, 6.0, 0.5]
_SMOOTH_STEP = 2.0**-17

#: name -> (output on D, output on its neighbour D', is each entry on the fixed set?). Add/remove
#: neighbours unless the release's default relation is replace-one (private_mean).
LATTICES = {
    # per-key counts (integers), per-key sums (the grid of private_sum for the span 1
    # and epsilon / (m r) = EPS), a cap (an integer of 1..5), the kept keys (among the input's),
    # quantiles (grid points); private_variance is post-processing of lattice statistics
    # (tests/dplib/queries/test_quantiles.py::test_variance_releases_only_lattice_statistics)
    "private_count_by_key": (
        lambda g: _flat(dplib.private_count_by_key([], [], ["a"], EPS, rng=g)),
        lambda g: _flat(dplib.private_count_by_key([1], ["a"], ["a"], EPS, rng=g)),
        _integers,
    ),
    "gaussian_count_by_key": (  # rho-zCDP: discrete Gaussian counts, integers
        lambda g: _flat(dplib.gaussian_count_by_key([], [], ["a"], 0.5, rng=g)),
        lambda g: _flat(dplib.gaussian_count_by_key([1], ["a"], ["a"], 0.5, rng=g)),
        _integers,
    ),
    "private_sum_by_key": (
        lambda g: _flat(dplib.private_sum_by_key([], [], [], ["a"], 0.0, 1.0, EPS, rng=g)),
        lambda g: _flat(dplib.private_sum_by_key([1], ["a"], [1.0], ["a"], 0.0, 1.0, EPS, rng=g)),
        _grid(_SUM_STEP),
    ),
    "private_rows_cap": (
        lambda g: _flat(dplib.private_rows_cap([1], EPS, upper=5, rng=g)),
        lambda g: _flat(dplib.private_rows_cap([1, 1, 1], EPS, upper=5, rng=g)),
        _among([1, 2, 3, 4, 5]),
    ),
    "select_partitions": (
        lambda g: _flat(dplib.select_partitions([], [], EPS, 0.1, rng=g)),
        lambda g: _flat(dplib.select_partitions([1], [7], EPS, 0.1, rng=g)),
        _among([7]),
    ),
    "private_quantiles": (
        lambda g: _flat(dplib.private_quantiles([0.2], [0.25, 0.5], 0, 1, EPS, grid=11, rng=g)),
        lambda g: _flat(
            dplib.private_quantiles([0.2, 0.9], [0.25, 0.5], 0, 1, EPS, grid=11, rng=g)
        ),
        _among(np.linspace(0, 1, 11)),
    ),
    "private_variance": (None, None, None),
    "private_count": (
        lambda g: _flat(dplib.private_count([], EPS, rng=g)),
        lambda g: _flat(dplib.private_count([1.0], EPS, rng=g)),
        _integers,
    ),
    "private_histogram": (
        lambda g: _flat(dplib.private_histogram([], [0, 1, 2], EPS, rng=g)[0]),
        lambda g: _flat(dplib.private_histogram([0.5], [0, 1, 2], EPS, rng=g)[0]),
        _integers,
    ),
    "private_sum": (
        lambda g: _flat(dplib.private_sum([], 0.0, 1.0, EPS, rng=g)),
        lambda g: _flat(dplib.private_sum([1.0], 0.0, 1.0, EPS, rng=g)),
        _grid(_SUM_STEP),
    ),
    "private_mean": (  # replace-one (its default): the shift n * 1/2 is on the grid
        lambda g: _flat(dplib.private_mean([0.0], 0.0, 1.0, EPS, rng=g)),
        lambda g: _flat(dplib.private_mean([1.0], 0.0, 1.0, EPS, rng=g)),
        _grid(_MEAN_STEP),
    ),
    "private_median": (
        lambda g: _flat(dplib.private_median([0.2, 0.3], 0, 1, EPS, grid=11, rng=g)),
        lambda g: _flat(dplib.private_median([0.2, 0.3, 0.9], 0, 1, EPS, grid=11, rng=g)),
        _among(np.linspace(0, 1, 11)),
    ),
    # notebook 09: PTR's median on the grid 2**-20 of [0, 1] (None read as 0.0, on it too);
    # sample-and-aggregate's private median of the block values, a grid point
    "ptr_median": (
        lambda g: _flat(_bottom(dplib.ptr_median([0.5] * 61, 0, 1, 0.1, EPS, 1e-5, rng=g))),
        lambda g: _flat(
            _bottom(dplib.ptr_median([0.5] * 60 + [0.6], 0, 1, 0.1, EPS, 1e-5, rng=g))
        ),
        _grid(2.0**-20),
    ),
    # the smooth-sensitivity median on the grid 2**-17 of [0, 10], the audit's tables
    "smooth_median": (
        lambda g: _flat(dplib.smooth_median(_SMOOTH_D, 0, 10, EPS, 1e-6, rng=g)),
        lambda g: _flat(dplib.smooth_median(_SMOOTH_NEIGHBOUR, 0, 10, EPS, 1e-6, rng=g)),
        _grid(_SMOOTH_STEP),
    ),
    "sample_and_aggregate": (
        lambda g: _flat(
            dplib.sample_and_aggregate([0.2] * 9, np.sum, 0, 1, EPS, blocks=3, grid=11, rng=g)
        ),
        lambda g: _flat(
            dplib.sample_and_aggregate([0.2] * 10, np.sum, 0, 1, EPS, blocks=3, grid=11, rng=g)
        ),
        _among(np.linspace(0, 1, 11)),
    ),
    "private_mode": (
        lambda g: _flat(dplib.private_mode([0], 2, EPS, rng=g)),
        lambda g: _flat(dplib.private_mode([0, 1], 2, EPS, rng=g)),
        _among([0, 1]),
    ),
    "discrete_laplace_mechanism": (
        lambda g: _flat(dplib.discrete_laplace_mechanism(0, 1, EPS, rng=g)),
        lambda g: _flat(dplib.discrete_laplace_mechanism(1, 1, EPS, rng=g)),
        _integers,
    ),
    "discrete_gaussian_mechanism": (
        lambda g: _flat(dplib.discrete_gaussian_mechanism(0, 1, EPS, 1e-5, rng=g)),
        lambda g: _flat(dplib.discrete_gaussian_mechanism(1, 1, EPS, 1e-5, rng=g)),
        _integers,
    ),
    "gaussian_mechanism": (  # default: discrete Gaussian on the grid
        lambda g: _flat(dplib.gaussian_mechanism(0.0, 1.0, EPS, 1e-5, rng=g)),
        lambda g: _flat(dplib.gaussian_mechanism(1.0, 1.0, EPS, 1e-5, rng=g)),
        _grid(_GAUSS_STEP),
    ),
    "snapping_mechanism": (  # multiples of Lambda = 1 (the power of two >= lambda = 1), or +-B
        lambda g: _flat(dplib.snapping_mechanism(0.0, 1.0, EPS, 10.0, rng=g)),
        lambda g: _flat(dplib.snapping_mechanism(1.0, 1.0, EPS, 10.0, rng=g)),
        _integers,
    ),
    "exponential_mechanism": (
        lambda g: _flat(dplib.exponential_mechanism([0.0, 1.0], 1, EPS, rng=g)),
        lambda g: _flat(dplib.exponential_mechanism([1.0, 1.0], 1, EPS, rng=g)),
        _among([0, 1]),
    ),
    "report_noisy_max": (
        lambda g: _flat(dplib.report_noisy_max([0.0, 1.0], 1, EPS, rng=g)),
        lambda g: _flat(dplib.report_noisy_max([1.0, 1.0], 1, EPS, rng=g)),
        _among([0, 1]),
    ),
    "permute_and_flip": (
        lambda g: _flat(dplib.permute_and_flip([0.0, 1.0], 1, EPS, rng=g)),
        lambda g: _flat(dplib.permute_and_flip([1.0, 1.0], 1, EPS, rng=g)),
        _among([0, 1]),
    ),
    "above_threshold": (  # the index of the first query above, or None (-1 here)
        lambda g: _flat(_none(dplib.above_threshold([0.0, 0.0], 0.5, EPS, rng=g))),
        lambda g: _flat(_none(dplib.above_threshold([1.0, 0.0], 0.5, EPS, rng=g))),
        _among([-1, 0, 1]),
    ),
    "sparse_vector": (
        lambda g: _flat(dplib.sparse_vector([0.0, 0.0], 0.5, EPS, 1, rng=g)),
        lambda g: _flat(dplib.sparse_vector([1.0, 0.0], 0.5, EPS, 1, rng=g)),
        _among([0, 1]),
    ),
    "randomized_response": (
        lambda g: _flat(dplib.randomized_response([0], EPS, rng=g)),
        lambda g: _flat(dplib.randomized_response([1], EPS, rng=g)),
        _among([0, 1]),
    ),
    "k_randomized_response": (
        lambda g: _flat(dplib.k_randomized_response([0], 3, EPS, rng=g)),
        lambda g: _flat(dplib.k_randomized_response([1], 3, EPS, rng=g)),
        _among([0, 1, 2]),
    ),
    "unary_encoding": (
        lambda g: _flat(dplib.unary_encoding([0], 3, EPS, rng=g)),
        lambda g: _flat(dplib.unary_encoding([1], 3, EPS, rng=g)),
        _among([0, 1]),
    ),
    "count_mean_sketch": (  # +-1 bits and the public hash index
        lambda g: np.concatenate([_flat(a) for a in dplib.count_mean_sketch([0], 4, EPS, rng=g)]),
        lambda g: np.concatenate([_flat(a) for a in dplib.count_mean_sketch([1], 4, EPS, rng=g)]),
        _integers,
    ),
    "hierarchical_histogram": (
        lambda g: _levels(dplib.hierarchical_histogram([0, 0, 0, 0], EPS, rng=g)),
        lambda g: _levels(dplib.hierarchical_histogram([1, 0, 0, 0], EPS, rng=g)),
        _integers,
    ),
    "privtree_histogram": (
        lambda g: _privtree(np.zeros((4, 3)), g),
        lambda g: _privtree(np.eye(4, 3) * [1, 0, 0], g),
        _integers,
    ),
    "mwem": (None, None, None),  # a table after post-processing: see test_mwem_releases_lattice_values
    # a model after post-processing: see test_naive_bayes_releases_lattice_statistics
    "DPNaiveBayes": (None, None, None),
}


def _none(value):
    return -1 if value is None else value


def _draws(release, seed: int, n: int = N_DRAWS) -> np.ndarray:
    gen = np.random.default_rng(seed)
    return np.concatenate([release(gen) for _ in range(n)])


def test_every_release_is_checked():
    found = set(discovered_releases())
    # the discovery is not vacuous: the releases a review named are among those it finds
    assert {"hierarchical_histogram", "privtree_histogram", "mwem", "private_sum"} <= found
    unchecked = found - set(LATTICES) - set(TEXTBOOK_FOR_TEACHING)
    assert not unchecked, (
        f"{sorted(unchecked)} take a privacy parameter and randomness but have no lattice check: "
        "add neighbouring inputs and the data-independent output set to LATTICES (or, for a "
        "textbook floating-point release kept for teaching, a reason to TEXTBOOK_FOR_TEACHING)"
    )
    assert not set(LATTICES) & set(TEXTBOOK_FOR_TEACHING)
    assert set(LATTICES) | set(TEXTBOOK_FOR_TEACHING) <= found, "stale entries"


@pytest.mark.parametrize("name", [n for n, v in LATTICES.items() if v[0] is not None])
def test_outputs_of_both_neighbours_lie_on_one_fixed_lattice(name, rng_seed):
    on_d, on_neighbour, on_lattice = LATTICES[name]
    for release, seed in ((on_d, rng_seed), (on_neighbour, rng_seed + 1)):
        outputs = _draws(release, seed)
        off = ~on_lattice(outputs)
        assert not off.any(), (
            f"{name}: {off.mean():.1%} of the outputs are off its fixed lattice (e.g. "
            f"{outputs[off][0]!r}): the neighbour may be unable to produce them (Mironov 2012)"
        )


# --------------------------------------------------------------------------- the check has teeth

#: The textbook variants of the four count releases a review named, on counts 0 and 1 (one person
#: added): the released root / cell / block on the dataset with 0.
TEXTBOOK_VARIANTS = {
    "hierarchical_histogram": lambda c, g: dplib.hierarchical_histogram(
        [c, 0], EPS, mechanism="laplace", rng=g
    ).levels[0][0],
    "noisy_tree_counts": lambda c, g: noisy_tree_counts(
        [c, 0], [np.zeros(2, int)], EPS, mechanism="laplace", rng=g
    )[0][0],
    "measure_marginals": lambda c, g: measure_marginals(
        np.array([[0]] + [[1]] * c), [2], [(0,)], EPS, mechanism="laplace", rng=g
    )[(0,)][1],
    "privtree_histogram": lambda c, g: dplib.privtree_histogram(
        [c], EPS, mechanism="laplace", rng=g
    )[0][0],
}
SAFE_VARIANTS = {
    "hierarchical_histogram": lambda c, g: dplib.hierarchical_histogram([c, 0], EPS, rng=g).levels[0][0],
    "noisy_tree_counts": lambda c, g: noisy_tree_counts([c, 0], [np.zeros(2, int)], EPS, rng=g)[0][0],
    "measure_marginals": lambda c, g: measure_marginals(
        np.array([[0]] + [[1]] * c), [2], [(0,)], EPS, rng=g
    )[(0,)][1],
    "privtree_histogram": lambda c, g: dplib.privtree_histogram([c], EPS, rng=g)[0][0],
}


def _outputs(variant, count, seed, n=1000):
    gen = np.random.default_rng(seed)
    return np.array([float(variant(count, gen)) for _ in range(n)])


@pytest.mark.parametrize("name", list(TEXTBOOK_VARIANTS))
def test_the_lattice_check_catches_the_textbook_samplers(name, rng_seed):
    # With mechanism="laplace" the released count on the dataset with 0 is 0 + z: an output
    # |z| < 1 that is not a multiple of 2**-53 is impossible with count 1 (test_query_privacy).
    # The scale is L / eps = 2 (two levels; PrivTree: 1 / eps2 = 2) or 1 (one marginal), so
    # |z| < 1/2 with probability >= 1 - e^-1/4 = 0.22; a double in [2**-k-1, 2**-k), k >= 1, is
    # a multiple of 2**-53 for a share 2**-k <= 1/2 of them, so (low bits equidistributed, as
    # Mironov 2012 observes) each output is caught with probability >= 0.11 (measured: 14 %, 14 %,
    # 27 %, 13 %; a review measured 19.8 / 27.0 / 47.7 / 32.3 % at its own scales). Hoeffding
    # over 4000 outputs: P(share < 0.05) <= exp(-8000 * 0.06**2) = 3e-13.
    outputs = _outputs(TEXTBOOK_VARIANTS[name], 0, rng_seed, n=4000)
    assert impossible_if_true_answer_is_one(outputs).mean() >= 0.05
    assert not _integers(outputs).all()
    # soundness of the distinguisher on these releases: the neighbour's outputs are never flagged
    assert not impossible_if_true_answer_is_one(_outputs(TEXTBOOK_VARIANTS[name], 1, rng_seed + 1)).any()


@pytest.mark.parametrize("name", list(SAFE_VARIANTS))
def test_the_safe_defaults_leave_no_output_impossible(name, rng_seed):
    for count, seed in ((0, rng_seed), (1, rng_seed + 1)):
        outputs = _outputs(SAFE_VARIANTS[name], count, seed)
        assert not impossible_if_true_answer_is_one(outputs).any()
        assert _integers(outputs).all()  # one block of one cell: k / 1
        assert np.unique(outputs).size > 3  # the noise is there


# --------------------------------------------------------------------------- smooth_median


def _textbook_smooth_median(data, rng):
    """The float release smooth_median was before median + S*_beta / alpha * Laplace."""
    alpha, beta = dplib.smooth_laplace_parameters(EPS, 1e-6)
    scale = dplib.smooth_sensitivity_median(data, beta, 0, 10) / alpha
    return float(np.sort(data)[3] + scale * rng.laplace())


def test_the_float_attack_finds_no_impossible_output_of_smooth_median(rng_seed):
    # Issue 49: on 1,2,3,3.5,4,6,9 against the same with 9 replaced by 0.5 (eps 1, delta 1e-6),
    # 71.5 % of the float release's outputs on the first were impossible under the second. Now
    # every output of both lies on the grid 2**-17 Z, each point of which the other reaches
    # (the rounded Laplace noise takes every integer): the attack finds 0 %.
    gen = np.random.default_rng(rng_seed)
    for data in (_SMOOTH_D, _SMOOTH_NEIGHBOUR):
        outputs = np.array([dplib.smooth_median(data, 0, 10, EPS, 1e-6, rng=gen) for _ in range(2000)])
        assert impossible_on_a_lattice_neighbour(outputs, _SMOOTH_STEP).mean() == 0.0
        assert np.unique(outputs).size > 1000  # the noise is there (scale about 16)
    # the check has teeth: the float release leaves its outputs off the grid (a Laplace draw of
    # scale 16 lands on a multiple of 2**-17 only when its 53-bit significand ends in zeros: an
    # output is flagged with probability above 0.99; Hoeffding over 2000: P(share < 0.9) < 1e-17)
    float_outputs = np.array([_textbook_smooth_median(_SMOOTH_D, gen) for _ in range(2000)])
    assert impossible_on_a_lattice_neighbour(float_outputs, _SMOOTH_STEP).mean() >= 0.9


# --------------------------------------------------------------------------- mwem


def test_mwem_releases_lattice_values(monkeypatch, rng_seed):
    # mwem's output is a post-processed table; what depends on the data is the chosen queries
    # (exponential mechanism: an index) and the values it releases, recorded here from the real
    # _noisy_total and _measure: integers, and multiples of the fixed grid step of epsilon / (2T).
    totals, measurements = [], []
    real_total, real_measure = synthetic._noisy_total, synthetic._measure

    def total(n, eps, gen):
        totals.append(real_total(n, eps, gen))
        return totals[-1]

    def measure(answer, eps, gen, step):
        measurements.append((real_measure(answer, eps, gen, step), eps, step))
        return measurements[-1][0]

    monkeypatch.setattr(synthetic, "_noisy_total", total)
    monkeypatch.setattr(synthetic, "_measure", measure)
    gen = np.random.default_rng(rng_seed)
    for hist in ([3.0, 0.0, 0.0, 0.0], [4.0, 0.0, 0.0, 0.0]):
        for _ in range(100):
            dplib.mwem(hist, np.eye(4), EPS, 3, rng=gen)
    assert len(totals) == 200 and all(t == round(t) and t >= 1 for t in totals)
    assert len(measurements) == 600
    for value, eps, step in measurements:
        # the grid of epsilon (the totals here are far below 2**52 grid units)
        assert step == math.ldexp(1.0, queries.grid_exponent(1.0, eps))
        assert value / step == round(value / step)
    assert len({t for t in totals}) > 3


# --------------------------------------------------------------------------- naive Bayes


def _naive_bayes_release(rows: int, seed: int):
    # a review's case: 40 rows against 41 at epsilon = 1 (the float version had 4.7 % of its
    # released means impossible under the neighbour)
    X = np.linspace(0.05, 0.95, 41)[:rows, None] * np.ones((1, 2))
    y = np.arange(rows) % 2
    return dplib.DPNaiveBayes(EPS, bounds=(0.0, 1.0), classes=[0, 1], random_state=seed).fit(X, y)


def test_naive_bayes_releases_lattice_statistics(rng_seed):
    # DPNaiveBayes releases noisy class counts (integers) and noisy sums and sums of squares on
    # the grid 2**-k of its Notes, fixed by epsilon and D; theta_ and var_ are post-processing.
    steps = set()
    for rows, seed in ((40, rng_seed), (41, rng_seed + 1)):
        for i in range(100):
            model = _naive_bayes_release(rows, seed * 1000 + i)
            step = model.grid_step_
            steps.add(step)
            for released in (model.noisy_sums_, model.noisy_squares_):
                assert np.array_equal(released / step, np.round(released / step))
            assert _integers(model.class_count_).all()
    assert len(steps) == 1  # the same grid for both neighbours


# --------------------------------------------------------------------------- black-box audits

N_AUDIT = 10_000
# (release of one number, D, D' = D plus one person): add/remove, as every docstring states.
AUDITS = {
    "hierarchical_histogram root": (
        lambda c, rng: dplib.hierarchical_histogram(c, EPS, rng=rng).levels[0][0], [3, 0], [4, 0],
    ),
    "hierarchical_histogram leaf": (
        lambda c, rng: dplib.hierarchical_histogram(c, EPS, rng=rng).levels[1][0], [3, 0], [4, 0],
    ),
    "noisy_tree_counts root": (
        lambda c, rng: noisy_tree_counts(c, [np.zeros(2, int)], EPS, rng=rng)[0][0], [3, 0], [4, 0],
    ),
    "measure_marginals cell": (
        lambda r, rng: measure_marginals(r, [2, 2], [(0,), (0, 1)], EPS, rng=rng)[(0,)][0],
        np.zeros((3, 2), int), np.zeros((4, 2), int),
    ),
    "privtree_histogram block": (
        lambda c, rng: float(dplib.privtree_histogram(c, EPS, rng=rng)[0][0]), [3], [4],
    ),
}


@pytest.mark.parametrize("name", list(AUDITS))
def test_the_count_releases_keep_their_epsilon(name, rng_seed):
    mechanism, a, b = AUDITS[name]
    result = assert_dp(mechanism, a, b, EPS, n_samples=N_AUDIT, rng=rng_seed)
    assert result.epsilon_lower_bound <= EPS


def test_mwem_keeps_its_epsilon_under_add_remove(rng_seed):
    # the total told [3, 0, 0, 0] from [4, 0, 0, 0] with certainty (an infinite epsilon
    # under add/remove). Audited here: the released total, and the first cell.
    def total(h, rng):
        return round(float(dplib.mwem(h, np.eye(4), EPS, 2, rng=rng).sum()))

    def first(h, rng):
        return float(dplib.mwem(h, np.eye(4), EPS, 2, rng=rng)[0])

    for release in (total, first):
        result = assert_dp(release, [3.0, 0, 0, 0], [4.0, 0, 0, 0], EPS, n_samples=3_000, rng=rng_seed)
        assert result.epsilon_lower_bound <= EPS
